"""The weighted PPI mean's variance linearises the weights' normalisation (docs/methods/ppi.md §1.2,
§2.2, §7 item 13). The weights are rescaled to sum to each sample's row count, so each sample's part
is a ratio (Hajek) mean ``sum w z / sum w``, whose variance is ``Var(w (z - zbar_w))/n``, not
ppi_py's ``Var(w z)/n``. Checked here against things written out independently of the package:

* a seeded simulation where the weights correlate with y (one stratum over-sampled 4 to 1, the
  coverage study's design): the reported variance matches the Monte Carlo variance of the estimate,
  and ppi_py's formula, computed on the same draws, is measurably too small (this test fails on it);
* the textbook delta-method variance of a ratio estimator, ``sum w^2 (y - ybar_w)^2 / (sum w)^2``,
  for the classical mean and for each part of the PPI mean;
* unit (or constant) weights give exactly the unweighted result;
* with clusters, lambda-hat is the exact minimiser of the corrected clustered variance.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmsurrogate import ppi


def _stratified(rng, m):
    """The coverage study's weighted design: stratum 1 (30% of the population, y 2 higher) sampled 4
    to 1, inverse-probability weights; population mean 1.6."""
    z = rng.random(m) < 0.3 * 4 / (0.3 * 4 + 0.7)
    y = 1.0 + 2.0 * z + rng.normal(0, 1, m)
    return y, y + rng.normal(0, 0.8, m) + 0.4, np.where(z, 0.25, 1.0)


def _old_variance(y, yhat, yu, w, wu, lam):
    """ppi_py's variance: ``Var(lam w~ Yhat~)/N + Var(w (Y - lam Yhat))/n`` (ddof 0), weights normalised."""
    n, N = y.size, yu.size
    w, wu = w * n / w.sum(), wu * N / wu.sum()
    return np.var(lam * wu * yu) / N + np.var(w * (y - lam * yhat)) / n


def test_the_variance_matches_the_monte_carlo_variance_and_ppi_pys_does_not():
    rng = np.random.default_rng(20260536)
    n, N, reps = 100, 1000, 1000
    est = {"classical": [], "ppi": []}
    var = {"classical": [], "ppi": []}
    old = {"classical": [], "ppi": []}
    for _ in range(reps):
        y, yhat, w = _stratified(rng, n)
        _, yu, wu = _stratified(rng, N)
        for method, lam in (("classical", 0.0), ("ppi", 1.0)):
            r = ppi.mean(y, yhat, yu, method=method, weights=w, weights_unlabeled=wu)
            est[method].append(r.estimate)
            var[method].append(r.se ** 2)
            old[method].append(_old_variance(y, yhat, yu, w, wu, lam))
    for method in est:
        mc = np.var(est[method], ddof=1)   # relative s.e. sqrt(2/1000) = 4.5%
        new_ratio, old_ratio = np.mean(var[method]) / mc, np.mean(old[method]) / mc
        assert 0.88 < new_ratio < 1.12, (method, new_ratio)
        assert np.mean(est[method]) == pytest.approx(1.6, abs=0.02)
        if method == "classical":   # ~0.7 here: ppi_py's intervals cover ~0.83 at 0.90
            assert old_ratio < 0.85, (method, old_ratio)
        # PPI with a good prediction: the rectifier y - yhat hardly depends on the stratum, so the
        # two formulas nearly agree (0.95 here), as the study's PPI cells with a good prediction did


def _ratio_variance(z, w):
    """The delta-method variance of the ratio estimator sum w z / sum w (scale-free in w)."""
    zbar = np.sum(w * z) / np.sum(w)
    return np.sum(w ** 2 * (z - zbar) ** 2) / np.sum(w) ** 2


@pytest.mark.parametrize("lam", [0.0, 0.4, 1.0])
def test_the_variance_is_the_delta_method_variance_of_two_ratio_means(lam):
    rng = np.random.default_rng(1)
    y, yhat, w = _stratified(rng, 150)
    _, yu, wu = _stratified(rng, 900)
    w, wu = w * rng.uniform(0.5, 3.0, 150), wu * rng.uniform(0.5, 3.0, 900)   # any scale, any spread
    kw = {"method": "classical"} if lam == 0 else {"method": "ppi"} if lam == 1 else {"lam": lam}
    r = ppi.mean(y, yhat, yu, weights=w, weights_unlabeled=wu, **kw)
    expect = _ratio_variance(y - lam * yhat, w) + _ratio_variance(lam * yu, wu)
    assert r.se ** 2 == pytest.approx(expect, rel=1e-12)
    assert r.estimate == pytest.approx(np.average(y - lam * yhat, weights=w) + lam * np.average(yu, weights=wu),
                                       abs=1e-13)
    if lam == 0:   # the old one is too small here (y correlates with the weights)
        assert r.se ** 2 > _old_variance(y, yhat, yu, w, wu, lam) * 1.05
    # small_sample: the same linearised parts with divisors n - 1 and N - 1
    if lam != 0.4:
        s = ppi.mean(y, yhat, yu, weights=w, weights_unlabeled=wu, small_sample=True, **kw)
        assert s.se ** 2 == pytest.approx(_ratio_variance(y - lam * yhat, w) * 150 / 149
                                          + _ratio_variance(lam * yu, wu) * 900 / 899, rel=1e-12)


def test_unit_and_constant_weights_change_nothing():
    rng = np.random.default_rng(2)
    y, yhat, _ = _stratified(rng, 200)
    _, yu, _ = _stratified(rng, 2000)
    for method in ("classical", "ppi", "ppi++"):
        for small in (False, True):
            base = ppi.mean(y, yhat, yu, method=method, small_sample=small)
            for c in (1.0, 3.7):
                r = ppi.mean(y, yhat, yu, method=method, small_sample=small, weights=np.full(200, c),
                             weights_unlabeled=np.full(2000, 1.0))
                assert r.se == pytest.approx(base.se, rel=1e-12) and r.lam == pytest.approx(base.lam, abs=1e-12)
                assert r.estimate == pytest.approx(base.estimate, abs=1e-13)
    qb = ppi.quantile(y, yhat, yu, 0.5)
    qw = ppi.quantile(y, yhat, yu, 0.5, weights=np.full(200, 2.0), weights_unlabeled=np.ones(2000))
    assert (qw.estimate, qw.ci_low, qw.ci_high) == (qb.estimate, qb.ci_low, qb.ci_high)


def test_clustered_lambda_hat_minimises_the_corrected_clustered_variance():
    rng = np.random.default_rng(3)
    n, N, G = 240, 1200, 30
    y, yhat, w = _stratified(rng, n)
    _, yu, wu = _stratified(rng, N)
    cl, cu = rng.integers(0, G, n), rng.integers(0, G, N)
    kw = {"weights": w, "weights_unlabeled": wu, "cluster": cl, "cluster_unlabeled": cu}
    tuned = ppi.mean(y, yhat, yu, **kw)
    assert 0 < tuned.lam < 1
    grid = np.linspace(0, 1, 201)
    ses = [ppi.mean(y, yhat, yu, lam=float(lam), **kw).se for lam in grid]
    assert tuned.se <= min(ses) + 1e-12
    assert abs(grid[int(np.argmin(ses))] - tuned.lam) <= 0.005
