"""Inference on transfer-error tables (docs/methods/transfer.md §2–5, §8) against independent references:
hand-computed known answers, brute force over weight vertices, scipy's HiGHS LP solver and scipy
distributions, and the paper's Tables 5, 6 and 2 from the published matrices."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import transfer as tr
from llmsurrogate.datasets import load_transfer_errors
from llmsurrogate.exceptions import InvalidArgumentError, NonFiniteError, ShapeError
from llmsurrogate.transfer import ErrorTable

import reference as ref

NAN = np.nan
E3 = np.array([[NAN, 1, 2], [3, NAN, 4], [5, 6, NAN]])


# ---- reference implementations written from the definitions (no shared code) -----------------------

def brute_weighted_upper(M, w, tau):
    """ē^ω_τ straight from Definition 5: atoms e[i,j] (i != j) with weight w[j]."""
    n = M.shape[0]
    vals, wts = [], []
    for i in range(n):
        for j in range(n):
            if i != j:
                vals.append(M[i, j])
                wts.append(w[j])
    return ref.upper_quantile(vals, wts, tau)


def brute_worst_upper(M, gamma, tau):
    """max over the 2^n vertices w ∈ {1/Γ, Γ}^n of ē^ω_τ (docs/methods/transfer.md T3 brute force)."""
    n = M.shape[0]
    return max(brute_weighted_upper(M, np.array(v), tau) for v in itertools.product([1 / gamma, gamma], repeat=n))


def random_matrix(rng, n, ties=False):
    M = rng.normal(size=(n, n))
    if ties:
        M = np.round(M, 0)
    np.fill_diagonal(M, NAN)
    return M


# ---- forecast intervals (A2, T1) ------------------------------------------------------------------

@pytest.mark.parametrize("tau,want", [(0.7, (2, 5)), (0.75, (2, 5)), (0.8, (2, 5)), (0.9, (1, 6)), (1.0, (1, 6))])
def test_t1_known_answers_all_conventions(tau, want):
    long = ErrorTable.from_matrix(E3).tidy()
    garbage = E3.copy()
    np.fill_diagonal(garbage, 1e9)
    for err in (E3, long, ErrorTable.from_matrix(E3), garbage, pd.DataFrame(E3)):
        assert tr.forecast_interval(err, tau=tau) == want


def test_t1_two_sided_level_at_or_below_half_is_refused():
    with pytest.raises(InvalidArgumentError, match=r"tau in \(0.5, 1\]"):
        tr.forecast_interval(E3, tau=0.5)
    assert tr.forecast_interval(E3, tau=0.5, side="upper") == (-math.inf, 3.0)


def test_coverage_sides_and_correction_follow_transferUQ():
    rng = np.random.default_rng(1)
    M = random_matrix(rng, 20)
    vals = np.sort(M[~np.isnan(M)])
    N = vals.size
    q = lambda t: vals[math.ceil(t * N - 1e-9) - 1]  # noqa: E731  R's quantile(type = 1)
    assert tr.forecast_interval(M, 0.9) == (-q(0.95) if False else vals[N - math.ceil(0.95 * N)], q(0.95))
    assert tr.forecast_interval(M, 0.9, side="right") == (-math.inf, q(0.9))
    assert tr.forecast_interval(M, 0.9, side="upper") == (-math.inf, q(0.9))
    assert tr.forecast_interval(M, 0.9, side="left") == (vals[N - math.ceil(0.9 * N)], math.inf)
    c = min(0.8 * 21 / 19, 1)
    assert tr.forecast_interval(M, 0.8, correction=True) == tr.forecast_interval(M, tau=(1 + c) / 2)
    with pytest.warns(UserWarning, match="cannot be guaranteed"):
        assert tr.forecast_interval(M, 0.95, correction=True) == (vals[0], vals[-1])
    # the guarantee of the corrected level is the requested coverage (Proposition 1)
    assert tr.coverage_bound(20, 1, (1 + c) / 2) == pytest.approx(0.8)
    assert tr.tau_for_coverage(20, 1, 0.8) == pytest.approx((1 + c) / 2)


def test_coverage_helpers_match_the_paper():
    assert round(tr.coverage_bound(44, 1, 0.95), 3) == 0.860
    assert round(tr.coverage_bound(44, 1, 1.0), 3) == 0.956
    assert round(tr.coverage_bound(44, 1, 0.95, side="upper"), 3) == 0.908
    assert round(tr.coverage_bound(24, 5, 0.95), 3) == 0.684
    assert tr.coverage_bound(10, 1, 0.9, Gamma=2) == pytest.approx(0.8 * 9 / 14)
    assert tr.coverage_upper_bound(44, 1, 0.95, side="upper") == pytest.approx(0.95 * 43 / 45 + 2 / 45 + math.factorial(43) / math.factorial(45))
    tp, g = tr.robust_level(0.9, 1.5, 44, 1, mode="paper")
    assert tp == pytest.approx(1 - 0.1 / 1.5) and g == pytest.approx(0.8 * (1 - 3 / 45))
    tps, _ = tr.robust_level(0.9, 1.5, 44, 1)
    assert tps > tp  # the safe level is more conservative
    with pytest.raises(InvalidArgumentError):
        tr.tau_for_coverage(44, 1, 0.99)


# ---- weighted intervals (A3, T2) ------------------------------------------------------------------

@pytest.mark.parametrize("tau,want", [(0.7, (2, 5)), (0.75, (2, 5)), (0.76, (1, 6)), (0.8, (1, 6))])
def test_t2_weighted_known_answers(tau, want):
    assert tr.weighted_forecast_interval(E3, [1, 2, 1], tau=tau) == want
    assert tr.weighted_forecast_interval(E3, {0: 5, 1: 10, 2: 5}, tau=tau) == want


def test_t2_constant_weights_reproduce_unweighted_and_random_weights_match_definition():
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(3, 7))
        M = random_matrix(rng, n, ties=bool(rng.integers(2)))
        w = rng.exponential(size=n) * (rng.random(n) > 0.2)
        w[0] += 0.1
        for tau in (0.55, 0.8, 0.95):
            assert tr.weighted_forecast_interval(M, np.full(n, 3.3), tau=tau) == tr.forecast_interval(M, tau=tau)
            assert tr.weighted_forecast_interval(M, w, tau=tau)[1] == brute_weighted_upper(M, w, tau)
            assert tr.weighted_forecast_interval(M, w, tau=tau)[0] == -brute_weighted_upper(-M, w, tau)


# ---- worst case over Γ (A4, T3, T4) ----------------------------------------------------------------

def test_t3_worst_case_by_hand():
    assert tr.worst_case_interval(E3, tau=0.6, Gamma=2, side="upper")[1] == 5
    assert tr.worst_case_interval(E3, tau=0.6, Gamma=2) == (2, 5)
    assert tr.worst_case_interval(E3, tau=0.8, Gamma=1.2) == (1, 6)
    assert tr.worst_case_interval(E3, tau=0.7, Gamma=2) == (1, 6)
    assert tr.worst_case_interval(E3, tau=0.6, Gamma=math.inf, side="upper")[1] == 6
    p = tr.worst_case_tau_curve(E3, 2)["prob"].to_numpy() * 2
    assert p[3] == pytest.approx(10 / 9) and p[4] == pytest.approx(4 / 3) and p[5] == 2


def test_t3_worst_case_equals_brute_force_over_vertices():
    rng = np.random.default_rng(3)
    mismatches = 0
    for case in range(40):
        n = int(rng.integers(3, 6))
        M = random_matrix(rng, n, ties=case % 2 == 0)
        for gamma in (1.0, 1.3, 2.0, 5.0):
            for tau in (0.62, 0.75, 0.9):
                lo, hi = tr.worst_case_interval(M, tau=tau, Gamma=gamma)
                mismatches += hi != brute_worst_upper(M, gamma, tau)
                mismatches += lo != -brute_worst_upper(-M, gamma, tau)
    assert mismatches == 0


def test_t4_step_function_properties_and_gamma_infinity():
    rng = np.random.default_rng(4)
    M = random_matrix(rng, 12)
    curve = tr.worst_case_curve(M, tau=[0.6, 0.9])
    for tau in (0.6, 0.9):
        up = curve.steps[(curve.steps.tau == tau) & (curve.steps.bound == "upper")]
        lo = curve.steps[(curve.steps.tau == tau) & (curve.steps.bound == "lower")]
        assert np.all(np.diff(up.value) > 0) and np.all(np.diff(lo.value) < 0)
        assert up.value.iloc[0] == tr.forecast_interval(M, tau=tau)[1]
        per_col = max(np.sort(np.delete(M[:, d], d))[math.ceil(tau * 11 - 1e-9) - 1] for d in range(12))
        assert up.value.iloc[-1] == per_col and np.isinf(up.gamma_to.iloc[-1])
        # the step function agrees with direct evaluation at random Γ values
        for g in np.exp(rng.uniform(0, 3, 10)):
            assert curve.value(tau, g) == tr.worst_case_interval(M, tau=tau, Gamma=g, side="upper")[1]
    # monotone in τ
    assert tr.worst_case_interval(M, tau=0.9, Gamma=2)[1] >= tr.worst_case_interval(M, tau=0.6, Gamma=2)[1]


# ---- LP closed form (A7, T5) vs HiGHS -----------------------------------------------------------

def test_t5_lp_closed_form_known_answers():
    obj, sup = tr.lp2_simplex([0, 1], [0.2, 1], 0.6)
    assert obj == pytest.approx(0.5) and sup == pytest.approx({1: 0.5, 0: 0.5})
    assert math.isinf(tr.lp2_simplex([0, 1], [0.1, 0.2], 0.5)[0])


def test_t5_lp_closed_form_matches_highs():
    from scipy.optimize import linprog

    rng = np.random.default_rng(5)
    bad = 0
    for i in range(600):
        n = int(rng.integers(2, 9))
        a, b = rng.random(n), rng.random(n)
        if i % 3 == 0:
            a, b = np.round(a, 1), np.round(b, 1)
        tau = float(np.round(rng.random(), 2 if i % 2 else 6))
        obj, _ = tr.lp2_simplex(a, b, tau)
        res = linprog(a, A_ub=-b[None, :], b_ub=[-tau], A_eq=np.ones((1, n)), b_eq=[1], bounds=[(0, None)] * n,
                      method="highs")
        if res.status == 2:
            bad += not math.isinf(obj)
        else:
            bad += abs(obj - res.fun) > 1e-9
    assert bad == 0


# ---- everywhere dominance (A6, T6) --------------------------------------------------------------

M2_CE = np.array([[NAN, 5, 7], [0.1, NAN, 8], [0.2, 6, NAN]])
M1_CE = np.array([[NAN, 4.9, 6.9], [3.0, NAN, 7.9], [4.0, 5.9, NAN]])


def test_t6_shifted_method_dominates():
    rng = np.random.default_rng(6)
    M1 = random_matrix(rng, 10)
    taus = [0.5, 0.7, 0.9, 1.0]
    for mode in ("exact", "paper", "transferUQ"):
        assert tr.check_everywhere_dominance(M1, M1 + 0.1, taus, mode=mode).res.all()
    assert not tr.check_everywhere_dominance(M1 + 0.1, M1, taus).res.any()


def test_t6_counterexample_of_section_4_4():
    taus = [0.55, 0.75, 0.9]
    res = tr.everywhere_dominance(M1_CE, M2_CE, taus)
    assert not res.table.dominates.any()
    assert list(res.table.j) == [2, 2, 2]
    assert all(w == {"0": 1.0} for w in res.table.witness)
    assert res.table.verified.all()
    for mode in ("paper", "transferUQ"):
        assert tr.check_everywhere_dominance(M1_CE, M2_CE, taus, mode=mode).res.all()


def test_t6_exact_mode_against_random_weight_search():
    """Every reported witness verifies; where the exact check claims dominance, no random weight
    vector (log-uniform over many orders of magnitude) breaks it."""
    rng = np.random.default_rng(7)
    for _ in range(25):
        n = int(rng.integers(3, 7))
        M1, M2 = random_matrix(rng, n), random_matrix(rng, n) + rng.uniform(0, 1.5)
        taus = [0.55, 0.8, 0.95]
        res = tr.everywhere_dominance(M1, M2, taus)
        for row in res.table.itertuples():
            if not row.dominates:
                assert row.verified, row
            else:
                for _ in range(60):
                    w = np.exp(rng.uniform(-25, 0, n))
                    u1 = tr.weighted_forecast_interval(M1, w, tau=row.tau, side="upper")[1]
                    u2 = tr.weighted_forecast_interval(M2, w, tau=row.tau, side="upper")[1]
                    assert u1 <= u2


def test_worstcase_dominance_modes_and_critical_gamma():
    rng = np.random.default_rng(8)
    M1 = random_matrix(rng, 8)
    assert tr.check_worstcase_dominance(M1, M1 + 0.1).res.all()
    assert not tr.check_worstcase_dominance(M1 + 0.1, M1).res.any()
    assert np.all(np.isinf(tr.critical_gamma(M1, M1 + 0.1, [0.6, 0.9], kind="worstcase")))
    assert math.isnan(tr.critical_gamma(M1 + 0.1, M1, 0.9, kind="worstcase"))
    assert np.all(np.isinf(tr.critical_gamma(M1, M1 + 0.1, [0.6, 0.9])))
    assert math.isnan(tr.critical_gamma(M1 + 0.1, M1, 0.9))
    # transferUQ mode: index J - 1 of the Γ = Gamma curve with strict '<', from a pure-numpy
    # re-implementation of Corollary R.1 (O(N n) loop).
    M2 = random_matrix(rng, 8)
    for gamma in (math.inf, 2.0):
        got = tr.check_worstcase_dominance(M1, M2, [0.6, 0.8, 0.95], Gamma=gamma, mode="transferUQ").res.tolist()
        want = []
        for tau in (0.6, 0.8, 0.95):
            vals = []
            for M in (M1, M2):
                t = ErrorTable.from_matrix(M)
                order = np.argsort(t.values, kind="stable")
                f, d = t.values[order], t.test[order]
                p = []
                for j in range(1, t.N + 1):
                    psi = np.sort(np.bincount(d[:j], minlength=t.n)).astype(float)
                    if math.isinf(gamma):
                        q = psi[0]
                    else:
                        k = np.arange(1, t.n + 1)
                        q = j / t.n + min(0.0, np.min((np.cumsum(psi) / k - j / t.n) / (1 + t.n / (gamma**2 - 1) / k)))
                    p.append(q / t.K)
                vals.append(f[np.flatnonzero(np.array(p) < tau)[-1]])
            want.append(bool(vals[0] < vals[1]))
        assert got == want


# ---- U-statistic bounds (A8, T7) vs direct numerical evaluation --------------------------------------

@pytest.mark.parametrize("x,y,n,k", [(0.3, 0.5, 44, 2), (0.4, 0.5, 44, 2), (0.3, 0.5, 44, 1), (0.2, 0.3, 100, 3),
                                     (0.05, 0.2, 1000, 2), (0.45, 0.5, 1000, 2), (0.1, 0.6, 20, 2)])
def test_t7_ustat_bound_matches_scipy(x, y, n, k):
    from scipy.optimize import minimize_scalar
    from scipy.stats import binom

    m = n // k
    got = tr.ustat_tail_bound(x, y, n, k)
    h1 = x * math.log(x / y) + (1 - x) * math.log((1 - x) / (1 - y))
    assert got["hoeffding"] == pytest.approx(math.exp(-m * h1), rel=1e-10)
    assert got["bentkus"] == pytest.approx(math.e * binom.cdf(math.ceil(m * x - 1e-12), m, y), rel=1e-9)

    def obj(ll):
        lam = math.exp(ll)
        return (n * lam / k) * (x - y / (1 + k * (math.expm1(lam) - lam) / lam))

    best = minimize_scalar(obj, bounds=(-20, 6), method="bounded", options={"xatol": 1e-12}).fun
    assert got["maurer"] == pytest.approx(math.exp(min(best, 0.0)), rel=1e-6)
    assert got["B"] == pytest.approx(min(got["hoeffding"], got["bentkus"], got["maurer"], 1.0))


def test_t7_properties():
    assert tr.ustat_tail_bound(0.6, 0.5, 44, 2)["B"] == 1.0
    assert tr.ustat_tail_bound(0.0, 0.3, 44, 2)["B"] <= 0.7**22 + 1e-15


# ---- replication from the published matrices (docs/methods/transfer.md §6.9, R1–R5, R7) ----------------------------------

MODELS = ["g", "ab", "dg", "abg", "abdg", "EU_iso", "RF"]
TABLE5 = {  # raw, shortfall, deterioration at τ = 0.95
    "g": [(2.50, 15.83), (1.03, 2.54), (1.00, 1.47)], "ab": [(2.56, 16.13), (1.04, 2.35), (1.00, 1.30)],
    "dg": [(2.48, 17.19), (1.02, 2.47), (1.00, 1.53)], "abg": [(2.47, 15.91), (1.02, 2.60), (1.00, 1.85)],
    "abdg": [(2.46, 15.99), (1.02, 2.62), (1.00, 1.82)], "EU_iso": [(2.56, 16.41), (1.04, 2.14), (1.00, 1.30)],
    "RF": [(2.71, 31.39), (1.02, 6.42), (1.02, 6.42)],
}
TABLE6 = {
    "g": [(0.81, 23104.96), (1.01, 7.31), (1.00, 7.22)], "ab": [(0.71, 19999.41), (1.00, 5.28), (1.00, 5.27)],
    "dg": [(0.71, 23052.76), (1.00, 7.25), (1.00, 7.18)], "abg": [(0.71, 28122.26), (1.00, 5.65), (1.00, 5.60)],
    "abdg": [(0.71, 27959.10), (1.00, 6.01), (1.00, 5.95)], "EU_iso": [(0.72, 22787.99), (1.00, 4.44), (1.00, 1.75)],
    "RF": [(0.96, 42520.49), (1.01, 33.17), (1.01, 33.17)],
}
EXCEPTIONS = {("g", 1, 0): 1.02, ("dg", 0, 0): 2.47}  # the two 0.01 differences of docs/methods/transfer.md §6.9


def metrics(model):
    raw = load_transfer_errors(model, "unnormalized")
    return [raw, load_transfer_errors(model, "normalized"), raw / np.diag(raw.to_numpy())[None, :]]


@pytest.mark.parametrize("model", MODELS)
def test_tables_5_and_6(model):
    for mi, err in enumerate(metrics(model)):
        lo5, hi5 = tr.forecast_interval(err, 0.9)  # coverage 0.9 -> τ = 0.95
        want = TABLE5[model][mi]
        assert round(lo5, 2) == pytest.approx(EXCEPTIONS.get((model, mi, 0), want[0]), abs=1e-9)
        assert round(hi5, 2) == pytest.approx(want[1], abs=1e-9)
        lo6, hi6 = tr.forecast_interval(err, tau=1.0)
        assert abs(lo6 - TABLE6[model][mi][0]) <= 0.01 and abs(hi6 - TABLE6[model][mi][1]) <= 0.01  # docs/methods/transfer.md §6.9: to <= 0.01


def test_s5_ratio_interval():
    ratio = load_transfer_errors("RF") / load_transfer_errors("abdg")
    lo, hi = tr.forecast_interval(ratio, tau=0.95)
    assert (round(lo, 3), round(hi, 3)) == (0.887, 4.222)


def test_table_2_dominance():
    cpt, rf = metrics("abdg"), metrics("RF")
    taus = np.round(np.arange(0.5, 1.0 + 1e-9, 0.001), 6)
    thresholds = []
    for c, r in zip(cpt, rf):
        # worst case: dominance for every τ in 0.50:0.01:1 and every Γ (exactly, not on a grid)
        assert tr.check_worstcase_dominance(c, r).res.all()
        assert tr.check_worstcase_dominance(c, r, mode="transferUQ").res.all()
        # everywhere: the paper's pruned check gives [threshold, 1]; the exact check never dominates
        paper = tr.check_everywhere_dominance(c, r, taus, mode="paper")
        dom = paper.tau[paper.res].to_numpy()
        assert np.array_equal(dom, taus[taus >= dom.min() - 1e-12])
        thresholds.append(round(float(dom.min()), 3))
        assert not tr.check_everywhere_dominance(c, r, taus).res.any()
    assert thresholds == [0.954, 0.851, 0.648]
    w = tr.everywhere_dominance(cpt[0], rf[0], [0.96]).table.iloc[0]
    assert w.witness == pytest.approx({"34": 0.76, "39": 0.24}, abs=0.005)
    assert (round(w.upper1, 2), round(w.upper2, 2)) == (12.41, 10.53) and w.verified


def test_appendix_q_regression_values():
    cpt, rf, eu = (load_transfer_errors(m) for m in ("abdg", "RF", "EU_iso"))
    med = lambda e, **kw: tuple(np.round(tr.qte_interval(e, 0.8, betas=[0.5], **kw).iloc[0][["lb", "ub"]], 3))  # noqa: E731
    assert med(cpt) == (3.246, 4.973)
    assert med(cpt, order="transferUQ") == (3.392, 4.668)
    assert med(rf) == (3.565, 9.549)
    assert med(rf, order="transferUQ") == (3.822, 6.628)
    assert med(eu) == (3.202, 4.886)
    assert med(cpt, betas=None) if False else tuple(np.round(tr.qte_interval(cpt, 0.81, betas=[0.5]).iloc[0][["lb", "ub"]], 3)) == (3.238, 4.987)
    inv = {m: 1 / load_transfer_errors(m, "normalized") for m in ("abdg", "RF", "EU_iso")}
    assert np.round(tr.ete_interval(inv["abdg"], 0.8), 4).tolist() == [0.6360, 0.9595]
    assert np.round(tr.ete_interval(inv["RF"], 0.8), 4).tolist() == [0.4486, 0.8500]
    assert np.round(tr.ete_interval(inv["EU_iso"], 0.8), 4).tolist() == [0.6464, 0.9635]
    assert np.round(tr.ete_interval(inv["abdg"], 0.8, order="transferUQ"), 4).tolist() == [0.7116, 0.9353]
    q = tr.qte_interval(cpt, 0.8, side="upper")
    assert len(q) == 61 and np.all(np.isinf(q.lb)) and np.all(np.diff(q.ub) >= 0)


# ---- bad input --------------------------------------------------------------------------------------

def test_bad_input():
    M = E3.copy()
    M[0, 1] = NAN
    with pytest.raises(NonFiniteError):
        tr.forecast_interval(M, 0.9)
    M[0, 1] = np.inf
    with pytest.raises(NonFiniteError):
        tr.forecast_interval(M, 0.9)
    long = ErrorTable.from_matrix(E3).tidy()
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        tr.forecast_interval(pd.concat([long, long.iloc[:1]]), 0.9)
    with pytest.raises(ShapeError):
        tr.forecast_interval(long.iloc[1:], 0.9)
    with pytest.raises(InvalidArgumentError):
        tr.forecast_interval(np.array([[NAN]]), 0.9)
    for bad in (0, 1.2, -0.1, NAN):
        with pytest.raises(InvalidArgumentError):
            tr.forecast_interval(E3, bad)
    with pytest.raises(InvalidArgumentError):
        tr.forecast_interval(E3, 0.9, side="both")
    for w in ([1, -1, 1], [0, 0, 0], [1, 1], [1, NAN, 1]):
        with pytest.raises(InvalidArgumentError):
            tr.weighted_forecast_interval(E3, w, 0.9)
    other = pd.DataFrame(E3, index=list("abc"), columns=list("abc"))
    with pytest.raises(ShapeError):
        tr.check_everywhere_dominance(E3, other)
    with pytest.raises(ShapeError):
        tr.check_worstcase_dominance(E3, np.ones((4, 4)))
    with pytest.raises(InvalidArgumentError):
        tr.worst_case_interval(E3, 0.9, Gamma=0.5)
    with pytest.raises(InvalidArgumentError):
        tr.check_everywhere_dominance(E3, E3, [0.5, 1.5])
    with pytest.raises(InvalidArgumentError, match="bd"):
        tr.ete_interval(E3, 0.9)
    with pytest.raises(InvalidArgumentError):
        tr.qte_interval(E3, 0.9, r=2)


def test_results_print_tidy_and_plot():
    import matplotlib

    matplotlib.use("Agg")
    tabs = {m: load_transfer_errors(m) for m in ("EU_iso", "abdg", "RF")}
    fi = tr.forecast_intervals(tabs, level=[0.8, 0.9], sides=["two", "upper"])
    assert len(fi.tidy()) == 12 and "Transfer-error forecast intervals" in repr(fi)
    fi.plot()
    wc = tr.worst_case_curve(tabs["abdg"], tau=[0.5, 0.9], Gamma_max=100)
    assert set(wc.tidy().bound) == {"upper", "lower"}
    wc.plot()
    tr.plot_quantile_ci({m: tr.qte_interval(e, 0.8) for m, e in tabs.items()}, log=True)
    ed = tr.everywhere_dominance(tabs["abdg"], tabs["RF"], [0.9])
    assert "Everywhere dominance" in repr(ed)
    assert type(fi).from_json(fi.to_json()) == fi


def test_application_of_the_demo():
    import matplotlib

    matplotlib.use("Agg")
    from llmsurrogate.transfer.demo import run_transfer_application

    res = run_transfer_application()
    d = res.dominance
    cr = d[(d.model == "CPT") & (d.other == "RF")]
    assert cr.worst_case.all() and not cr.everywhere.any()
    raw = cr[cr.metric == "raw transfer error"]
    assert raw[raw.everywhere_paper].tau.min() == pytest.approx(0.96)
    row = res.intervals.query("model == 'RF' and metric == 'raw transfer error' and coverage == 0.9").iloc[0]
    assert (round(row.lower, 2), round(row.upper, 2)) == (2.71, 31.39)
    assert "Transfer performance of EU, CPT" in repr(res)
    res.plot()


# ---- Γ-bounded everywhere dominance (docs/methods/transfer.md §4.3) and its critical Γ (R6) -------------------------------

def _box_reference(M1, M2, tau, gamma):
    """Spec §4.3 by brute force: every j, the Charnes–Cooper LP of the box solved by HiGHS."""
    from scipy.optimize import linprog

    t1, t2 = ErrorTable.from_matrix(M1), ErrorTable.from_matrix(M2)
    o1, o2 = np.argsort(t1.values, kind="stable"), np.argsort(t2.values, kind="stable")
    f1, d1, f2, d2 = t1.values[o1], t1.test[o1], t2.values[o2], t2.test[o2]
    n, K, N = t1.n, t1.K, t1.N
    for j in range(1, N + 1):
        m1 = int(np.sum(f1 <= f2[j - 1]))
        if m1 == N:
            break
        a = np.bincount(d1[:m1], minlength=n) / K
        b = np.bincount(d2[:j], minlength=n) / K
        # variables (y_1..y_n, t): min a.y  s.t. b.y >= tau, sum y = 1, y - t*Gamma <= 0, t/Gamma - y <= 0
        A_ub = np.vstack([np.append(-b, 0.0), np.hstack([np.eye(n), -gamma * np.ones((n, 1))]),
                          np.hstack([-np.eye(n), np.ones((n, 1)) / gamma])])
        b_ub = np.concatenate([[-tau], np.zeros(2 * n)])
        res = linprog(np.append(a, 0.0), A_ub=A_ub, b_ub=b_ub, A_eq=np.append(np.ones(n), 0.0)[None, :], b_eq=[1],
                      bounds=[(0, None)] * (n + 1), method="highs")
        if res.status == 0 and res.fun < tau - 1e-9:
            return False
    return True


def test_box_dominance_matches_highs_and_limits():
    rng = np.random.default_rng(9)
    mismatches = 0
    for _ in range(10):
        n = int(rng.integers(3, 6))
        M1, M2 = random_matrix(rng, n), random_matrix(rng, n) + rng.uniform(0, 1)
        for gamma in (1.0, 1.5, 4.0):
            got = tr.everywhere_dominance_box(M1, M2, [0.6, 0.85], Gamma=gamma).res.tolist()
            mismatches += got != [_box_reference(M1, M2, tau, gamma) for tau in (0.6, 0.85)]
        # Γ = 1 is the plain comparison of the upper ends; dominance shrinks as Γ grows
        for tau in (0.6, 0.85):
            plain = tr.forecast_interval(M1, tau=tau)[1] <= tr.forecast_interval(M2, tau=tau)[1]
            assert tr.everywhere_dominance_box(M1, M2, [tau], Gamma=1).res[0] == plain
            res = [tr.everywhere_dominance_box(M1, M2, [tau], Gamma=g).res[0] for g in (1, 1.2, 2, 10, 1e4)]
            assert res == sorted(res, reverse=True)
    assert mismatches == 0


def test_critical_gamma_on_the_fixture():
    cpt, rf = metrics("abdg"), metrics("RF")
    want = [(1.537, 1.414), (9.08, 9.38), (10.07, 10.16)]
    for c, r, w in zip(cpt, rf, want):
        assert tr.critical_gamma(c, r, [0.9, 0.95]) == pytest.approx(w, abs=0.01)
    assert tr.everywhere_dominance_box(cpt[0], rf[0], [0.99], Gamma=2).res[0]
    assert not tr.everywhere_dominance_box(cpt[0], rf[0], [0.99], Gamma=3).res[0]
    g = tr.critical_gamma(cpt[0], rf[0], 0.9)
    assert tr.everywhere_dominance_box(cpt[0], rf[0], [0.9], Gamma=g * 0.999).res[0]
    assert not tr.everywhere_dominance_box(cpt[0], rf[0], [0.9], Gamma=g * 1.001).res[0]


# ---- issue 11, defect 1: silent wrong answers --------------------------------------------------------

E3Z = np.array([[0.0, 1, 2], [3, 0, 4], [5, 6, 0]])


def test_matrix_rows_are_paired_with_columns_by_label():
    ref_interval = tr.forecast_interval(E3Z, tau=0.8)
    permuted = pd.DataFrame(E3Z).iloc[[2, 0, 1]]      # rows permuted, columns keep their RangeIndex
    assert tr.forecast_interval(permuted, tau=0.8) == ref_interval
    assert tr.worst_case_interval(permuted, tau=0.8, Gamma=2.0) == tr.worst_case_interval(E3Z, tau=0.8, Gamma=2.0)
    assert tr.weighted_forecast_interval(permuted, {0: 1, 1: 2, 2: 3}, tau=0.8) == \
        tr.weighted_forecast_interval(E3Z, [1, 2, 3], tau=0.8)
    labelled = pd.DataFrame(E3Z, index=list("abc"), columns=list("abc"))
    assert tr.forecast_interval(labelled.iloc[[1, 2, 0]], tau=0.8) == ref_interval


def test_series_weights_are_paired_with_domains_by_label():
    labelled = pd.DataFrame(E3Z, index=list("abc"), columns=list("abc"))
    w = pd.Series([3.0, 1.0, 2.0], index=list("cab"))
    assert tr.weighted_forecast_interval(labelled, w, tau=0.8) == tr.weighted_forecast_interval(E3Z, [1, 2, 3], tau=0.8)
    with pytest.raises(InvalidArgumentError, match=r"`err` and `weights`.*to_numpy"):
        tr.weighted_forecast_interval(labelled, pd.Series([1.0, 2.0, 3.0]), tau=0.8)


def test_weights_near_the_float_maximum_do_not_overflow():
    lo, hi = tr.weighted_forecast_interval(E3Z, [1e308] * 3, tau=0.8)
    assert (lo, hi) == tr.weighted_forecast_interval(E3Z, [1.0] * 3, tau=0.8)
    assert lo < hi
    assert tr.weighted_coverage_diagnostic(3, 1, 0.9, [1e308] * 3, 1e308) == \
        pytest.approx(tr.weighted_coverage_diagnostic(3, 1, 0.9, [1.0] * 3, 1.0))


@pytest.mark.parametrize("call, arg", [
    (lambda: tr.weighted_coverage_diagnostic(3, 1, 0.9, [1, -1, 1], 1), "weights"),
    (lambda: tr.weighted_coverage_diagnostic(3, 1, 0.9, [1, np.nan, 1], 1), "weights"),
    (lambda: tr.weighted_coverage_diagnostic(3, 1, 0.9, [], 1), "weights"),
    (lambda: tr.weighted_coverage_diagnostic(3, 1, 1.5, [1, 1, 1], 1), "tau"),
    (lambda: tr.weighted_coverage_diagnostic(3, 1, 0.9, [1, 1, 1], -1), "w_target"),
    (lambda: tr.weighted_coverage_diagnostic(1, 1, 0.9, [1, 1, 1], 1), "n"),
    (lambda: tr.weighted_coverage_diagnostic(30, 1, 0.9, [1, 1, 1], 1), "weights"),   # one per domain
    (lambda: tr.tau_for_coverage(2, 5, 0.8), "n"),
    (lambda: tr.coverage_upper_bound(3, 3, 0.9), "n"),
    (lambda: tr.robust_level(0.9, 1.5, 3, 5), "n"),
    (lambda: tr.robust_level(0.9, "x", 30, 1), "Gamma"),
    (lambda: tr.coverage_bound(10, 1, 0.9, Gamma="x"), "Gamma"),
    (lambda: tr.lp2_simplex([1, 2], [0.1, 0.9], 1.5), "tau"),
    (lambda: tr.lp2_simplex([1, 2], [0.1, 0.9], np.nan), "tau"),
    (lambda: tr.lp2_simplex([1, 2], [0.1], 0.5), "a"),
    (lambda: tr.lp2_simplex([1, np.nan], [0.1, 0.9], 0.5), "a"),
    (lambda: tr.worst_case_curve(E3Z, tau=[]), "tau"),
    (lambda: tr.worst_case_curve(E3Z, tau=[0.5 + 0j]), "tau"),
    (lambda: tr.forecast_intervals({"m": E3Z}, level=[]), "level"),
    (lambda: tr.forecast_intervals({"m": E3Z}, sides=[]), "sides"),
    (lambda: tr.check_worstcase_dominance(E3Z, E3Z, taulist=[]), "taulist"),
    (lambda: tr.qte_interval(E3Z, 0.9, betas=["0.5"]), "betas"),
    (lambda: tr.ete_interval(E3Z / 10, 0.9, bd=np.nan), "bd"),
    (lambda: tr.ustat_tail_bound(0.3, 1.5, 10, 1), "y"),
    (lambda: tr.ustat_tail_bound(0.3, 0.5, 10, 11), "k"),
    (lambda: tr.ustat_tail_bound(0.3, 0.5, 2**63, 1), "n"),
    (lambda: tr.ustat_tail_bound(0.3, 0.5, 10**12, 1), "n"),
    (lambda: tr.forecast_interval(E3Z.astype(complex), tau=0.8), "err"),
    (lambda: tr.forecast_interval(pd.DataFrame(E3Z).astype("datetime64[ns]"), tau=0.8), "err"),
])
def test_invalid_parameters_are_rejected(call, arg):
    with pytest.raises(InvalidArgumentError, match=rf"`{arg}`"):
        call()


def test_two_tables_are_paired_by_domain_label():
    rng = np.random.default_rng(5)
    m1, m2 = rng.random((4, 4)), rng.random((4, 4))
    a, b = pd.DataFrame(m1).iloc[[2, 0, 3, 1]], pd.DataFrame(m2).iloc[[1, 3, 0, 2]]
    taus = [0.6, 0.75, 0.9]
    pd.testing.assert_frame_equal(tr.check_everywhere_dominance(a, b, taus), tr.check_everywhere_dominance(m1, m2, taus))
    pd.testing.assert_frame_equal(tr.check_worstcase_dominance(a, b, taus), tr.check_worstcase_dominance(m1, m2, taus))
    np.testing.assert_array_equal(tr.critical_gamma(a, b, taus), tr.critical_gamma(m1, m2, taus))
    with pytest.raises(InvalidArgumentError, match="`weights`"):
        tr.weighted_forecast_interval(m1, np.ones((1, 4)), tau=0.8)   # 2-d weights are not flattened


@pytest.mark.parametrize("bad", ["yes", 1.5, None, np.nan])
def test_correction_must_be_a_flag(bad):
    with pytest.raises(InvalidArgumentError, match="`correction`"):
        tr.forecast_interval(E3Z, 0.5, correction=bad)
    with pytest.raises(InvalidArgumentError, match="`correction`"):
        tr.forecast_intervals({"m": E3Z}, 0.5, correction=bad)


def test_worst_case_tau_curve_does_not_depend_on_row_order_with_tied_errors():
    # tied errors used to give a row each, with probabilities that depended on which tied error the table
    # listed first (found by the hostile-input run); one row per distinct value is order-free
    rng = np.random.default_rng(11)
    labels = [f"d{i}" for i in range(6)]
    for _ in range(20):
        m = rng.integers(1, 5, size=(6, 6)).astype(float)  # many ties
        np.fill_diagonal(m, 0.0)
        a = pd.DataFrame(m, index=labels, columns=labels)
        order = rng.permutation(6)
        b = a.iloc[order]
        for gamma in (1.0, 2.0, math.inf):
            ca, cb = tr.worst_case_tau_curve(a, gamma), tr.worst_case_tau_curve(b, gamma)
            pd.testing.assert_frame_equal(ca, cb)
            assert ca["val"].is_unique and ca["prob"].is_monotonic_increasing
            for tau in (0.3, 0.6, 0.9):  # the curve still reads off ē_τ(Γ)
                assert ca["val"][ca["prob"] >= tau - 1e-12].iloc[0] == tr.worst_case_interval(a, tau, Gamma=gamma, side="upper")[1]


# ---- old argument spellings (issue 20: `coverage` -> `level`, keyword-only after the first few) -------

_E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
_E2 = np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]])
_W = [1.0, 1.0, 4.0]


def _same_result(a, b):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    elif hasattr(a, "table"):
        pd.testing.assert_frame_equal(a.table, b.table)
    else:
        np.testing.assert_array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


@pytest.mark.parametrize("old, new", [
    # renamed: coverage -> level
    (lambda: tr.forecast_interval(_E, coverage=0.6), lambda: tr.forecast_interval(_E, level=0.6)),
    (lambda: tr.weighted_forecast_interval(_E, _W, coverage=0.6), lambda: tr.weighted_forecast_interval(_E, _W, level=0.6)),
    (lambda: tr.worst_case_interval(_E, coverage=0.6, Gamma=2.0), lambda: tr.worst_case_interval(_E, level=0.6, Gamma=2.0)),
    (lambda: tr.forecast_intervals({"A": _E}, coverage=0.6), lambda: tr.forecast_intervals({"A": _E}, level=0.6)),
    (lambda: tr.qte_interval(_E, coverage=0.6, betas=[0.5]), lambda: tr.qte_interval(_E, level=0.6, betas=[0.5])),
    (lambda: tr.ete_interval(_E, coverage=0.6, bd=10.0), lambda: tr.ete_interval(_E, level=0.6, bd=10.0)),
    (lambda: tr.tau_for_coverage(44, 1, coverage=0.8), lambda: tr.tau_for_coverage(44, 1, level=0.8)),
    # positional arguments after the first few: by name now
    (lambda: tr.forecast_interval(_E, 0.6, "upper", False), lambda: tr.forecast_interval(_E, 0.6, side="upper")),
    (lambda: tr.weighted_forecast_interval(_E, _W, 0.6, "lower"), lambda: tr.weighted_forecast_interval(_E, _W, 0.6, side="lower")),
    (lambda: tr.worst_case_interval(_E, 0.6, 2.0, "upper"), lambda: tr.worst_case_interval(_E, 0.6, Gamma=2.0, side="upper")),
    (lambda: tr.forecast_intervals({"A": _E}, 0.6, ("two", "upper")),
     lambda: tr.forecast_intervals({"A": _E}, 0.6, sides=("two", "upper"))),
    (lambda: tr.qte_interval(_E, 0.6, "upper", [0.5]), lambda: tr.qte_interval(_E, 0.6, side="upper", betas=[0.5])),
    (lambda: tr.ete_interval(_E, 0.6, "two", 10.0), lambda: tr.ete_interval(_E, 0.6, side="two", bd=10.0)),
    (lambda: tr.coverage_bound(44, 1, 0.95, "upper", 2.0), lambda: tr.coverage_bound(44, 1, 0.95, side="upper", Gamma=2.0)),
    (lambda: tr.coverage_upper_bound(44, 1, 0.95, "two", True),
     lambda: tr.coverage_upper_bound(44, 1, 0.95, side="two", conservative=True)),
    (lambda: tr.tau_for_coverage(44, 1, 0.8, "upper"), lambda: tr.tau_for_coverage(44, 1, 0.8, side="upper")),
    (lambda: tr.weighted_coverage_diagnostic(3, 1, 0.9, _W, 1.0, "upper"),
     lambda: tr.weighted_coverage_diagnostic(3, 1, 0.9, _W, 1.0, side="upper")),
    (lambda: tr.robust_level(0.9, 1.5, 44, 1, "two", "paper"), lambda: tr.robust_level(0.9, 1.5, 44, 1, mode="paper")),
    (lambda: tr.check_worstcase_dominance(_E, _E2, [0.7, 0.9], 2.0),
     lambda: tr.check_worstcase_dominance(_E, _E2, [0.7, 0.9], Gamma=2.0)),
    (lambda: tr.check_everywhere_dominance(_E, _E2, [0.7, 0.9], "paper"),
     lambda: tr.check_everywhere_dominance(_E, _E2, [0.7, 0.9], mode="paper")),
    (lambda: tr.everywhere_dominance(_E, _E2, [0.7, 0.9], "exact", False),
     lambda: tr.everywhere_dominance(_E, _E2, [0.7, 0.9], mode="exact", verify=False)),
    (lambda: tr.everywhere_dominance_box(_E, _E2, [0.9], 1.2), lambda: tr.everywhere_dominance_box(_E, _E2, [0.9], Gamma=1.2)),
    (lambda: tr.critical_gamma(_E, _E2, [0.7, 0.9], "worstcase"), lambda: tr.critical_gamma(_E, _E2, [0.7, 0.9], kind="worstcase")),
])
def test_old_argument_spellings_warn_and_give_the_same_result(old, new):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # CoverageWarning on the 3-domain table: not the point here
        want = new()
        with pytest.warns(FutureWarning, match="llmsurrogate 0.3"):
            got = old()
    _same_result(got, want)


def test_run_transfer_application_old_coverage_argument_warns():
    from llmsurrogate.transfer.demo import run_transfer_application

    with pytest.warns(FutureWarning, match="`coverage` is now called `level`"):
        old = run_transfer_application(coverage=(0.9,), taus=[0.9])
    new = run_transfer_application(level=(0.9,), taus=[0.9])
    pd.testing.assert_frame_equal(old.intervals, new.intervals)


def test_plot_quantile_ci_log_by_position_warns():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ci = {"A": tr.qte_interval(load_transfer_errors("abdg"), 0.9, betas=[0.25, 0.5, 0.75])}
    with pytest.warns(FutureWarning, match="pass `log` by name"):
        fig = tr.plot_quantile_ci(ci, None, True)
    assert fig.axes[0].get_yscale() == "log"  # plot_quantile_ci returns the Figure (issue 25, item 4)
    plt.close(fig)
