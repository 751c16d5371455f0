"""Cluster-robust PPI quantile (docs/methods/ppi.md §8.3): at every candidate t the test of the
rectified CDF is the PPI mean (lambda = 1) of the indicators 1{y <= t}, 1{yhat <= t},
1{yhat_unlabeled <= t}, so its clustered variance must equal ppi.mean(cluster=...) of those
indicators -- checked at every candidate against ppi.mean and against a loop over clusters written
out here; the interval against the brute-force inversion over all candidates; clusters of size one
against the unclustered sweep times G/(G-1); permuted rows; weights; bad input."""

import numpy as np
import pytest
from llmsurrogate import ppi
from llmsurrogate.exceptions import InvalidArgumentError, NonFiniteError, ShapeError
from llmsurrogate.ppi._quantile import _classical, _inverted
from llmsurrogate.ppi._stats import cdf_sweep, cluster_codes, cluster_sweep, z_p_value

TOL = 1e-12


def _data(seed=0, n=60, N=150, G=9, ties=True):
    """Firms shared by both samples, with a firm effect; values rounded so that ties occur within
    and across the samples."""
    rng = np.random.default_rng(seed)
    firm = rng.integers(0, G, n + N)
    u = rng.normal(size=G)[firm]
    y = rng.normal(size=n + N) + u
    yhat = y + rng.normal(scale=0.6, size=n + N) + 0.3 * u
    if ties:
        y, yhat = np.round(y, 1), np.round(yhat, 1)
    w = rng.uniform(0.3, 3.0, n + N)
    return {"y": y[:n], "yhat": yhat[:n], "yu": yhat[n:], "cl": firm[:n], "cu": firm[n:] + 2, "w": w[:n], "wu": w[n:]}


def _lin(w, x):
    """The linearised values of the weighted mean of ``x`` (weights normalised to mean 1):
    ``w (x - mean(w x))``; ``x - mean(x)`` without weights (docs/methods/ppi.md §1.2, §8.3)."""
    return w * (x - np.mean(w * x))


def _loop_variance(r, u, cl, cu, classical=False):
    """G/(G-1) sum_c T_c^2 written out: T_c = sum_{i in c} (r_i - mean r)/n + sum_{j in c} (u_j - mean u)/N,
    G the clusters with a row that enters (the labelled ones alone when classical)."""
    n, N = r.size, u.size
    rc, uc = r - r.mean(), u - u.mean()
    ids = sorted(set(cl.tolist()) | (set() if classical else set(cu.tolist())))
    T = np.array([rc[cl == c].sum() / n + (0.0 if classical else uc[cu == c].sum() / N) for c in ids])
    G = len(ids)
    return G / (G - 1) * float(T @ T)


def _normalised(d, weighted):
    if not weighted:
        return np.ones(d["y"].size), np.ones(d["yu"].size)
    return d["w"] / d["w"].mean(), d["wu"] / d["wu"].mean()


def _sweep(d, weighted):
    w, wu = _normalised(d, weighted)
    codes = cluster_codes(d["cl"], d["cu"], d["y"].size, d["yu"].size)
    return cdf_sweep(d["y"], d["yhat"], d["yu"], w, wu, clusters=codes)


@pytest.mark.parametrize("weighted", [False, True])
def test_every_candidate_equals_the_clustered_mean_of_the_indicators(weighted):
    d = _data()
    grid, F, se = _sweep(d, weighted)
    assert grid.size > 40
    w, wu = _normalised(d, weighted)
    kw = {"weights": d["w"], "weights_unlabeled": d["wu"]} if weighted else {}
    compared = 0
    for k, t in enumerate(grid):
        a, b, c = (d["y"] <= t) * 1.0, (d["yhat"] <= t) * 1.0, (d["yu"] <= t) * 1.0
        var = _loop_variance(_lin(w, a - b), _lin(wu, c), d["cl"], d["cu"])
        assert abs(F[k] - (np.mean(wu * c) + np.mean(w * (a - b)))) <= TOL
        assert abs(se[k] ** 2 - var) <= TOL * max(var, 1e-3), (t, se[k] ** 2, var)
        if np.all(a == a[0]):
            continue  # ppi.mean refuses a constant y
        m = ppi.mean(a, b, c, method="ppi", cluster=d["cl"], cluster_unlabeled=d["cu"], **kw)
        assert m.clustered
        assert abs(m.estimate - F[k]) <= TOL
        assert abs(m.se - se[k]) <= TOL * m.se, (t, m.se, se[k])
        compared += 1
    assert compared > 30


@pytest.mark.parametrize("weighted", [False, True])
def test_the_classical_test_equals_the_clustered_classical_mean(weighted):
    d = _data(seed=1)
    w, _ = _normalised(d, weighted)
    codes = cluster_codes(d["cl"], d["cu"], d["y"].size, d["yu"].size)
    _, _, _, grid, F, se, _ = _classical(d["y"], w, 0.5, 0.05, weighted, codes)
    np.testing.assert_array_equal(grid, np.unique(d["y"]))
    kw = {"weights": d["w"], "weights_unlabeled": d["wu"]} if weighted else {}
    for k, t in enumerate(grid):
        a = (d["y"] <= t) * 1.0
        var = _loop_variance(_lin(w, a), np.zeros(d["yu"].size), d["cl"], d["cu"], classical=True)
        assert abs(se[k] ** 2 - var) <= TOL * max(var, 1e-3)
        if np.all(a == a[0]):
            continue
        m = ppi.mean(a, a, (d["yu"] <= t) * 1.0, method="classical", cluster=d["cl"], cluster_unlabeled=d["cu"], **kw)
        assert abs(m.estimate - F[k]) <= TOL and abs(m.se - se[k]) <= TOL * m.se


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("q, level", [(0.5, 0.95), (0.2, 0.9), (0.85, 0.99)])
def test_the_interval_is_the_brute_force_inversion_over_all_candidates(weighted, q, level):
    d = _data(seed=2)
    w, wu = _normalised(d, weighted)
    grid = np.unique(np.concatenate([d["y"], d["yhat"], d["yu"]]))
    F = np.empty(grid.size)
    se = np.empty(grid.size)
    for k, t in enumerate(grid):
        a, b, c = (d["y"] <= t) * 1.0, (d["yhat"] <= t) * 1.0, (d["yu"] <= t) * 1.0
        F[k] = np.mean(wu * c) + np.mean(w * (a - b))
        se[k] = max(np.sqrt(_loop_variance(_lin(w, a - b), _lin(wu, c), d["cl"], d["cu"])), 1e-16)
    p = z_p_value(F, se, q)
    kept = grid[p > 1 - level]
    kw = {"weights": d["w"], "weights_unlabeled": d["wu"]} if weighted else {}
    res = ppi.quantile(d["y"], d["yhat"], d["yu"], q, level=level, cluster=d["cl"], cluster_unlabeled=d["cu"], **kw)
    assert res.clustered and res.lam == 1.0
    assert (res.ci_low, res.ci_high) == (kept[0], kept[-1])
    assert res.estimate == grid[int(np.argmin(np.abs(F - q)))]
    # the estimate is the unclustered one; p_value is the clustered test
    assert res.estimate == ppi.quantile(d["y"], d["yhat"], d["yu"], q, level=level, **kw).estimate
    for t in (res.ci_low, res.estimate, res.ci_high):
        k = int(np.searchsorted(grid, t))
        assert res.p_value(t) == pytest.approx(p[k], rel=1e-9, abs=1e-12)
    # the classical interval: the same inversion on the labelled values alone
    lgrid = np.unique(d["y"])
    lF = np.array([np.mean(w * (d["y"] <= t)) for t in lgrid])
    lse = np.array([max(np.sqrt(_loop_variance(_lin(w, d["y"] <= t), np.zeros(d["yu"].size), d["cl"], d["cu"],
                                               classical=True)), 1e-16) for t in lgrid])
    lkept = lgrid[z_p_value(lF, lse, q) > 1 - level]
    assert (res.table["classical_ci_low"][0], res.table["classical_ci_high"][0]) == (lkept[0], lkept[-1])
    c = ppi.quantile(d["y"], d["yhat"], d["yu"], q, level=level, method="classical", cluster=d["cl"],
                     cluster_unlabeled=d["cu"], **kw)
    assert (c.ci_low, c.ci_high) == (lkept[0], lkept[-1]) and c.effective_n == d["y"].size


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("unlabelled_ids", [True, False])
def test_clusters_of_size_one_are_the_unclustered_test_times_g_over_g_minus_one(weighted, unlabelled_ids):
    """What holds exactly: F is unchanged and s(t)^2 is the unclustered (ddof-0) s(t)^2 times
    G/(G-1), G = n + N, at every candidate; so the interval is the unclustered test's inversion
    with s(t) scaled by sqrt(G/(G-1)), and contains the unclustered interval (a larger s keeps
    every candidate the unclustered test keeps). Leaving the unlabelled ids out puts each of those
    rows in its own cluster: the same numbers. The classical test: the weighted-path z-test with
    s(t)^2 times n/(n-1)."""
    d = _data(seed=3)
    n, N = d["y"].size, d["yu"].size
    w, wu = _normalised(d, weighted)
    cl, cu = np.arange(n), (np.arange(n, n + N) if unlabelled_ids else None)
    grid, F, se = cdf_sweep(d["y"], d["yhat"], d["yu"], w, wu, clusters=cluster_codes(cl, cu, n, N))
    grid0, F0, se0 = cdf_sweep(d["y"], d["yhat"], d["yu"], w, wu)
    np.testing.assert_array_equal(grid, grid0)
    np.testing.assert_allclose(F, F0, rtol=0, atol=TOL)
    g = n + N
    # variances to 1e-12 relative, 1e-15 absolute: where s(t) is 0 (every indicator 1 at the largest
    # candidate) the expanded sum of squares leaves rounding of order 1e-17
    np.testing.assert_allclose(se ** 2, se0 ** 2 * (g / (g - 1)), rtol=TOL, atol=1e-15)
    kw = {"weights": d["w"], "weights_unlabeled": d["wu"]} if weighted else {}
    for q in (0.3, 0.5, 0.9):
        res = ppi.quantile(d["y"], d["yhat"], d["yu"], q, cluster=cl, cluster_unlabeled=cu, **kw)
        plain = ppi.quantile(d["y"], d["yhat"], d["yu"], q, **kw)
        _, low, high, _ = _inverted(grid0, F0, se0 * np.sqrt(g / (g - 1)), q, 0.05, "test")
        assert (res.ci_low, res.ci_high) == (low, high)
        assert res.ci_low <= plain.ci_low and res.ci_high >= plain.ci_high
        assert res.estimate == plain.estimate
        # effective_n: both variances carry their own G/(G-1): n/(n-1) over (n+N)/(n+N-1)
        assert res.effective_n == pytest.approx(plain.effective_n * (n / (n - 1)) / (g / (g - 1)), rel=1e-10)
    codes = cluster_codes(cl, cu, n, N)
    _, _, _, lgrid, _, lse, _ = _classical(d["y"], w, 0.5, 0.05, weighted, codes)
    _, _, _, lgrid0, _, lse0, _ = _classical(d["y"], w, 0.5, 0.05, True)
    np.testing.assert_array_equal(lgrid, lgrid0)
    np.testing.assert_allclose(lse ** 2, lse0 ** 2 * (n / (n - 1)), rtol=TOL, atol=1e-15)


@pytest.mark.parametrize("method", ["ppi", "classical"])
def test_a_permuted_row_order_gives_the_same_result(method):
    d = _data(seed=4)
    rng = np.random.default_rng(9)
    pl, pu = rng.permutation(d["y"].size), rng.permutation(d["yu"].size)
    kw = {"method": method, "q": 0.4}
    a = ppi.quantile(d["y"], d["yhat"], d["yu"], weights=d["w"], weights_unlabeled=d["wu"], cluster=d["cl"],
                     cluster_unlabeled=d["cu"], **kw)
    b = ppi.quantile(d["y"][pl], d["yhat"][pl], d["yu"][pu], weights=d["w"][pl], weights_unlabeled=d["wu"][pu],
                     cluster=d["cl"][pl], cluster_unlabeled=d["cu"][pu], **kw)
    # string ids, numbered in another order: the same clusters
    c = ppi.quantile(d["y"], d["yhat"], d["yu"], weights=d["w"], weights_unlabeled=d["wu"],
                     cluster=np.array([f"firm{v}" for v in d["cl"]]),
                     cluster_unlabeled=np.array([f"firm{v}" for v in d["cu"]]), **kw)
    for r in (b, c):
        assert (r.estimate, r.ci_low, r.ci_high) == (a.estimate, a.ci_low, a.ci_high)
        assert r.effective_n == pytest.approx(a.effective_n, rel=1e-12)
        np.testing.assert_allclose(r.test["se"], a.test["se"], rtol=1e-12)


def test_clusters_widen_the_interval_when_firms_matter():
    d = _data(seed=5, n=400, N=3000, G=12, ties=False)
    res = ppi.quantile(d["y"], d["yhat"], d["yu"], 0.5, cluster=d["cl"], cluster_unlabeled=d["cu"])
    plain = ppi.quantile(d["y"], d["yhat"], d["yu"], 0.5)
    assert res.ci_high - res.ci_low > 1.5 * (plain.ci_high - plain.ci_low)
    assert res.effective_n < res.n * 10 and "cluster" in res.summary().as_text().lower()


def test_json_round_trip_keeps_the_clusters():
    d = _data(seed=6)
    res = ppi.quantile(d["y"], d["yhat"], d["yu"], 0.5, cluster=d["cl"], cluster_unlabeled=d["cu"])
    back = ppi.PPIResult.from_json(res.to_json())
    assert back.clustered and back.ci_low == res.ci_low and back.ci_high == res.ci_high
    assert back.p_value(res.estimate) == res.p_value(res.estimate)


def test_cluster_sweep_matches_a_dense_computation_on_random_events():
    rng = np.random.default_rng(11)
    e, G = 300, 17
    values = np.round(rng.normal(size=e), 1)
    deltas = rng.normal(size=e) / e
    codes = rng.integers(0, G, e)
    a1, a2 = rng.uniform(size=G), rng.uniform(size=G)
    grid = np.unique(values)
    m1, m2 = rng.normal(size=grid.size), rng.normal(size=grid.size)
    got = cluster_sweep(values, deltas, codes, [a1, a2], [m1, m2], grid)
    S = np.array([[deltas[(codes == c) & (values <= t)].sum() for c in range(G)] for t in grid])
    T = S - m1[:, None] * a1 - m2[:, None] * a2
    np.testing.assert_allclose(got, (T * T).sum(axis=1), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kw, exc, words", [
    ({"cluster": np.arange(59)}, ShapeError, ["`cluster`", "59 ids for 60"]),
    ({"cluster_unlabeled": np.arange(10)}, ShapeError, ["`cluster_unlabeled`", "10 ids for 150"]),
    ({"cluster": np.r_[np.nan, np.arange(59.0)]}, NonFiniteError, ["`cluster`", "missing cluster id"]),
    ({"cluster": list(range(60)), "cluster_unlabeled": [None, *range(149)]},
     NonFiniteError, ["`cluster_unlabeled`", "missing cluster id"]),
    ({"cluster": np.zeros(60)}, InvalidArgumentError, ["`cluster`", "one cluster"]),
    ({"cluster": np.ones(60), "cluster_unlabeled": np.arange(150)}, InvalidArgumentError,
     ["`cluster`", "one cluster"]),
])
@pytest.mark.parametrize("method", ["ppi", "classical"])
def test_bad_cluster_input_names_the_argument_like_the_mean(kw, exc, words, method):
    d = _data()
    with pytest.raises(exc) as q_err:
        ppi.quantile(d["y"], d["yhat"], d["yu"], 0.5, method=method, **kw)
    with pytest.raises(exc) as m_err:
        ppi.mean(d["y"], d["yhat"], d["yu"], **kw)
    assert str(q_err.value) == str(m_err.value)
    for w in words:
        assert w in str(q_err.value)
