"""``ppi.sample_size`` and ``ppi.power``: planning a PPI study from a pilot (docs/methods/ppi.md §12).

* the mean's closed forms: Broska, Howes & van Loon's ``Var(Y)/n (1 - rho^2 N/(n + N))`` and the
  cheapest pair of their mixed subjects design (ppi_py's ``_optimal_pair``, written out here);
* the recommended n fed back into the variance formula reaches the target, n - 1 does not;
* monotonicity in the target, N, rho and the costs;
* a simulation at a fixed seed: ``ppi.mean`` at the recommended (n, N) has the planned half-width
  and power;
* regressions through the pilot's gradients; errors that name the argument.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from llmsurrogate import ppi
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.ppi._power import PPIPlan, pilot_pieces, plan_variance


def _pilot(n=400, noise=0.6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    return y, y + rng.normal(scale=noise, size=n)


def test_the_mean_variance_is_broska_et_al_closed_form():
    y, yhat = _pilot()
    p = pilot_pieces(y, yhat)
    sd2, rho = np.var(y, ddof=1), np.corrcoef(y, yhat)[0, 1]
    assert p["a"] == pytest.approx(sd2) and p["rho"] == pytest.approx(rho)
    for n, N in ((50, 1000), (300, 300), (1000, 100_000)):
        V, lam = plan_variance(p, n, N)
        assert float(V) == pytest.approx(sd2 / n * (1 - rho ** 2 * N / (n + N)), rel=1e-12)
        assert 0 < float(lam) < 1
    V0, lam0 = plan_variance(p, 100, 0)
    assert float(V0) == pytest.approx(sd2 / 100) and float(lam0) == 0.0
    plan = ppi.power(y, yhat, n=300, N=300, effect=0.1)
    assert plan.effective_n == pytest.approx(300 * 600 / (300 + (1 - rho ** 2) * 300), rel=1e-12)


@pytest.mark.parametrize("target", [{"half_width": 0.05}, {"half_width": 0.2}, {"effect": 0.1, "power": 0.9},
                                    {"effect": -0.3, "power": 0.5}])
@pytest.mark.parametrize("N", [500, 20_000])
def test_the_recommended_n_reaches_the_target_and_n_minus_1_does_not(target, N):
    y, yhat = _pilot()
    plan = ppi.sample_size(y, yhat, N=N, **target)
    p = plan.pilot
    z = norm.ppf(0.975)
    if "half_width" in target:
        V_target = (target["half_width"] / z) ** 2
    else:
        V_target = (abs(target["effect"]) / (z + norm.ppf(target["power"]))) ** 2  # nearly: the far tail adds little
    V, _ = plan_variance(p, plan.n, N)
    V_less, _ = plan_variance(p, plan.n - 1, N)
    if "half_width" in target:
        assert float(V) <= V_target * (1 + 1e-12) < float(V_less)
        assert plan.half_width <= target["half_width"]
    else:
        assert plan.power >= target["power"] - 1e-12
        assert ppi.power(y, yhat, n=plan.n - 1, N=N, effect=target["effect"]).power < target["power"]
        assert float(V) <= V_target * (1 + 1e-9)   # the far tail only adds power
    assert plan.n <= plan.classical_n == math.ceil(p["a"] / V_target * (1 - 1e-12)) or plan.n <= plan.classical_n


def test_the_cheapest_pair_is_the_mixed_subjects_design_optimum():
    """The continuous optimum for a target variance a/n0 at cost ratio gamma (Broska et al.;
    ppi_py's ``_optimal_pair``): n = n0 (1 - rho^2 + sqrt(gamma rho^2 (1 - rho^2))),
    N = n (n0 - n) / (n - (1 - rho^2) n0); the integer search lands next to it."""
    y, yhat = _pilot()
    for gamma in (0.001, 0.01, 0.1):
        plan = ppi.sample_size(y, yhat, half_width=0.04, N="optimal", cost_label=1.0, cost_llm=gamma)
        p = plan.pilot
        n0 = p["a"] / (0.04 / norm.ppf(0.975)) ** 2
        r2 = p["rho"] ** 2
        n_star = n0 * (1 - r2 + math.sqrt(gamma * r2 * (1 - r2)))
        N_star = n_star * (n0 - n_star) / (n_star - (1 - r2) * n0)
        assert plan.n == pytest.approx(n_star, rel=0.01)
        assert plan.N == pytest.approx(N_star, rel=0.03)   # cost is flat in N near the optimum
        cost_star = n_star + (n_star + N_star) * gamma
        assert cost_star <= plan.cost <= cost_star * 1.005


def test_monotone_in_target_N_quality_and_costs():
    y, yhat = _pilot()
    ns = [ppi.sample_size(y, yhat, half_width=h, N=10_000).n for h in (0.03, 0.05, 0.08)]
    assert ns[0] > ns[1] > ns[2]
    ns = [ppi.sample_size(y, yhat, half_width=0.05, N=N).n for N in (0, 1000, 10_000, 1_000_000)]
    assert ns[0] > ns[1] > ns[2] > ns[3]
    assert ns[0] == ppi.sample_size(y, yhat, half_width=0.05, N=0).classical_n
    ns = [ppi.sample_size(*_pilot(noise=s), half_width=0.05, N=10_000).n for s in (0.3, 0.6, 1.5)]
    assert ns[0] < ns[1] < ns[2]
    pairs = [ppi.sample_size(y, yhat, half_width=0.05, N="optimal", cost_llm=c) for c in (0.001, 0.01, 0.1)]
    assert pairs[0].N > pairs[1].N > pairs[2].N and pairs[0].n < pairs[1].n < pairs[2].n
    powers = ppi.power(y, yhat, n=[50, 100, 200, 400], N=10_000, effect=0.15).power
    assert np.all(np.diff(powers) > 0)
    # a useless prediction: PPI++ falls back to the classical n
    rng = np.random.default_rng(3)
    useless = ppi.sample_size(y, rng.normal(size=y.size), half_width=0.05, N=10_000)
    assert useless.n >= 0.9 * useless.classical_n


def test_max_rows_bounds_n_plus_N():
    y, yhat = _pilot()
    free = ppi.sample_size(y, yhat, half_width=0.05, N="optimal", cost_llm=0.001)
    capped = ppi.sample_size(y, yhat, half_width=0.05, N="optimal", cost_llm=0.001, max_rows=5000)
    assert free.n + free.N > 5000 >= capped.n + capped.N and capped.n > free.n
    only_rows = ppi.sample_size(y, yhat, half_width=0.05, N="optimal", max_rows=5000)   # cost_llm 0: fewest labels
    assert only_rows.n + only_rows.N <= 5000 and only_rows.n <= capped.n
    with pytest.raises(InvalidArgumentError, match="max_rows"):
        ppi.sample_size(y, yhat, half_width=0.005, N="optimal", cost_llm=0.01, max_rows=100)


def test_a_simulation_at_the_recommended_design_has_the_planned_width_and_power():
    """The plan from a 500-row pilot, then 300 studies of the planned (n, N) drawn from the same
    population and analysed by ``ppi.mean``: their average half-width is within 3% of the target
    and the share rejecting "mean = 0" when the mean is 0.1 is within 0.06 of the planned 0.8."""
    rng = np.random.default_rng(11)

    def draw(m):
        y = rng.normal(0.1, 1.0, m)
        return y, 0.8 * y + 0.3 + rng.normal(scale=0.7, size=m)   # biased and noisy, not useless

    y0, yh0 = draw(500)
    plan = ppi.sample_size(y0, yh0, half_width=0.06, N=8000)
    widths = []
    for _ in range(300):
        y, yh = draw(plan.n)
        _, yu = draw(plan.N)
        res = ppi.mean(y, yh, yu)
        widths.append((res.ci_high - res.ci_low) / 2)
    assert np.mean(widths) == pytest.approx(0.06, rel=0.03)
    test = ppi.sample_size(y0, yh0, effect=0.1, power=0.8, N=8000)
    rejections = 0
    for _ in range(300):
        y, yh = draw(test.n)
        _, yu = draw(test.N)
        rejections += ppi.mean(y, yh, yu).p_value(0.0) < 0.05
    assert abs(rejections / 300 - 0.8) < 0.06, rejections / 300


def test_ols_plan_matches_the_ppi_variance_at_the_planned_sizes():
    """For a regression coefficient the plan's standard error at the pilot's own sizes is the
    standard error ``ppi.ols`` reports on the pilot at that lambda (the same sandwich)."""
    rng = np.random.default_rng(5)
    m = 600 + 6000
    X = np.column_stack([np.ones(m), rng.normal(size=m)])
    y = X @ [1.0, 0.5] + rng.normal(size=m)
    yhat = y + rng.normal(scale=0.7, size=m)
    X_l, y_l, yh_l, X_u, yh_u = X[:600], y[:600], yhat[:600], X[600:], yhat[600:]
    plan = ppi.power(y_l, yh_l, yh_u, X=X_l, X_unlabeled=X_u, estimand="ols", coord=1, n=600, N=6000, effect=0.1)
    assert plan.term == "x1"
    res = ppi.ols(X_l, y_l, yh_l, X_u, yh_u, lam=plan.lam, method="ppi++")
    assert plan.se == pytest.approx(res.se[1], rel=0.02)
    ss = ppi.sample_size(y_l, yh_l, yh_u, X=X_l, X_unlabeled=X_u, estimand="ols", coord="x1", half_width=0.03)
    assert ss.N == 6000 and ss.half_width <= 0.03
    logit = ppi.sample_size((y_l > 1).astype(float), (yh_l > 1).astype(float) * 0.8 + 0.1, X=X_l, N=5000,
                            estimand="logistic", coord=1, half_width=0.1)
    assert logit.n < logit.classical_n


def test_result_prints_tidies_and_round_trips():
    y, yhat = _pilot()
    plan = ppi.sample_size(y, yhat, effect=0.1, N=20_000, cost_llm=0.002)
    text = str(plan)
    assert "PPI study plan: mean" in text and "power 0.8 against an effect of 0.1" in text
    tidy = plan.tidy()
    assert list(tidy.columns[:3]) == ["term", "n", "N"] and len(tidy) == 1
    assert PPIPlan.from_json(plan.to_json()) == plan
    assert plan.cost == pytest.approx(plan.n + (plan.n + 20_000) * 0.002)
    curve = ppi.power(y, yhat, n=100, N=[1000, 10_000], effect=0.2)
    assert isinstance(curve.tidy(), pd.DataFrame) and curve.N.tolist() == [1000, 10_000]


@pytest.mark.parametrize("kwargs, match", [
    ({}, "one target"),
    ({"half_width": 0.1, "effect": 0.2}, "one target"),
    ({"half_width": -0.1, "N": 10}, "`half_width`"),
    ({"effect": 0.0, "N": 10}, "`effect`"),
    ({"effect": 0.1, "power": 0.01, "N": 10}, "`power`"),
    ({"effect": 0.1, "power": 1.0, "N": 10}, "`power`"),
    ({"half_width": 0.1}, "`N` is needed"),
    ({"half_width": 0.1, "N": "best"}, "`N`"),
    ({"half_width": 0.1, "N": -3}, "`N`"),
    ({"half_width": 0.1, "N": "optimal"}, "`cost_llm`"),
    ({"half_width": 0.1, "N": 100, "max_rows": 1000}, "`max_rows`"),
    ({"half_width": 0.1, "N": 100, "cost_label": 0}, "`cost_label`"),
    ({"half_width": 0.1, "N": 100, "cost_llm": -1}, "`cost_llm`"),
    ({"half_width": 0.1, "N": 100, "method": "classical"}, "`method`"),
    ({"half_width": 0.1, "N": 100, "estimand": "median"}, "`estimand`"),
    ({"half_width": 0.1, "N": 100, "estimand": "ols"}, "`X` is needed"),
    ({"half_width": 0.1, "N": 100, "coord": 1}, "`coord` belongs to a regression"),
    ({"half_width": 0.1, "N": 100, "level": 1.5}, "`level`"),
])
def test_bad_arguments_are_named(kwargs, match):
    y, yhat = _pilot(100)
    with pytest.raises(InvalidArgumentError, match=match):
        ppi.sample_size(y, yhat, **kwargs)


def test_bad_power_arguments_and_pilot_are_named():
    y, yhat = _pilot(100)
    with pytest.raises(InvalidArgumentError, match="`n`"):
        ppi.power(y, yhat, n=1, N=10, effect=0.1)
    with pytest.raises(InvalidArgumentError, match="`n` and `N` must broadcast"):
        ppi.power(y, yhat, n=[10, 20], N=[1, 2, 3], effect=0.1)
    with pytest.raises(InvalidArgumentError, match="`effect`"):
        ppi.power(y, yhat, n=10, N=10, effect="big")
    bad = yhat.copy()
    bad[4] = np.nan
    with pytest.raises(InvalidArgumentError, match="`yhat`"):
        ppi.power(y, bad, n=10, N=10, effect=0.1)
    with pytest.raises(InvalidArgumentError, match="`y` and `yhat`"):
        ppi.power(y, yhat[:50], n=10, N=10, effect=0.1)
    X = np.column_stack([np.ones(100), np.arange(100.0)])
    with pytest.raises(InvalidArgumentError, match="`coord` is needed"):
        ppi.sample_size(y, yhat, X=X, estimand="ols", half_width=0.1, N=100)
