"""The prediction-powered quantile (docs/methods/ppi.md §4): the set of candidate values (the
data's own values) where the z-test of the rectified CDF at ``q`` does not reject, found by one
sorted sweep (:func:`llmsurrogate.ppi._stats.cdf_sweep`), never an ``N x grid`` matrix; with
clusters the cluster-robust variance of the same sweep (§8.3)."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from .._validation import check_probability
from ..exceptions import ComputationError
from ._inputs import check_level, check_method, mean_inputs
from ._mean import clustered_mean_variance
from ._results import PPIResult, make_table
from ._stats import _cumulative_at, cdf_sweep, cluster_sweep, z_p_value

__all__ = ["P_VALUE_FLOOR", "quantile"]

#: the quantile's test is kept in the result where its p-value is at least this (and 1 - level)
P_VALUE_FLOOR = 1e-6


def _window(grid, F, se, p, threshold, bottom_se: float = 1e-16) -> dict:
    """The stretch of the test kept in the result (§4.3): every candidate whose p-value is at least
    ``threshold``, one more on each side, the candidate after the last kept one, the smallest
    candidate (below it F = 0, with standard error ``bottom_se``) and the test at the largest (F is
    constant above it)."""
    keep = np.flatnonzero(p >= threshold)
    if keep.size == 0:
        keep = np.array([int(np.argmax(p))])
    lo, hi = max(int(keep[0]) - 1, 0), min(int(keep[-1]) + 1, grid.size - 1)
    return {"t": grid[lo:hi + 1].copy(), "cdf": F[lo:hi + 1].copy(), "se": se[lo:hi + 1].copy(),
            "t_next": float(grid[hi + 1]) if hi + 1 < grid.size else float("inf"), "t_min": float(grid[0]),
            "bottom_se": float(bottom_se),
            "top": [float(grid[-1]), float(F[-1]), float(se[-1])], "threshold": float(threshold)}


def _inverted(grid, F, se, q, alpha, what):
    """Estimate (the first candidate closest to q), interval (the outermost candidates the test keeps)
    and p-values of the test of ``F(t) = q`` at every candidate."""
    p = z_p_value(F, se, q)
    est = grid[int(np.argmin(np.abs(F - q)))]
    kept = np.flatnonzero(p > alpha)
    if kept.size == 0:
        raise ComputationError(f"no candidate value passes the {what} test of F(t) = q at this level: the CDF jumps "
                               "over q by more than its standard error allows (too few rows); lower `level`")
    return est, grid[kept[0]], grid[kept[-1]], p


def _classical(y, w, q, alpha, weighted, clusters=None):
    """The classical interval on the labelled rows (§4.4): ppi_py's binomial interval (order
    statistics at ranks ``q n -+ z sqrt(q (1 - q) n)``) without weights or clusters; with weights,
    the z-test of the weighted CDF inverted over the labelled values; with clusters the same test
    with the cluster-robust variance of the labelled rows' mean of ``w 1{Y <= t}`` (§8.3)."""
    n = y.size
    grid = np.unique(y)
    cs, cs2 = _cumulative_at(y, [w, w * w], grid)
    F = cs / n
    if clusters is not None:
        codes = np.unique(clusters[0], return_inverse=True)[1].ravel()   # the clusters with labelled rows
        G = int(codes.max()) + 1
        ss = cluster_sweep(y, w / n, codes, [np.bincount(codes, weights=w, minlength=G) / n], [F], grid)
        se = np.maximum(np.sqrt(G / (G - 1.0) * ss), 1e-16)
        est, low, high, p = _inverted(grid, F, se, q, alpha, "classical")
        return est, low, high, grid, F, se, p
    if weighted:
        # the weighted CDF's linearised values w (1{Y <= t} - F(t)): mean(w^2 (1{.} - F)^2), expanded
        var = cs2 / n * (1.0 - 2.0 * F) + F * F * float(np.mean(w * w))
        se = np.maximum(np.sqrt(np.maximum(var, 0.0) / n), 1e-16)
        est, low, high, p = _inverted(grid, F, se, q, alpha, "classical")
        return est, low, high, grid, F, se, p
    z = float(norm.ppf(1 - alpha / 2))
    half = z * np.sqrt(q * (1 - q) * n)
    s = np.sort(y)
    low = s[min(max(int(q * n - half), 0), n - 1)]   # int(): ppi_py's truncation; the clip is ours (§4.4)
    high = s[min(max(int(q * n + half), 0), n - 1)]
    se = np.full(grid.size, np.sqrt(q * (1 - q) / n))
    est = grid[int(np.argmin(np.abs(F - q)))]
    return est, low, high, grid, F, se, z_p_value(F, se, q)


def quantile(y, yhat, yhat_unlabeled, q: float, *, method: str = "ppi", level: float = 0.95, weights=None,
             weights_unlabeled=None, cluster=None, cluster_unlabeled=None) -> PPIResult:
    """Prediction-powered ``q``-quantile of ``y`` with an exact interval: the smallest and largest of
    the data's own values (``y``, ``yhat``, ``yhat_unlabeled``) at which the z-test of the rectified
    CDF ``F(t) = mean(w~ 1{yhat_unlabeled <= t}) + mean(w (1{y <= t} - 1{yhat <= t}))`` against
    ``q`` does not reject (Angelopoulos et al. 2023; docs/methods/ppi.md §4). Equal to ppi_py 0.2.3's
    ``ppi_quantile_ci(..., exact_grid=True)``, found by sorting and one sweep in
    ``O((n + N) log(n + N))`` time and ``O(n + N)`` memory.

    ``method``: ``"ppi"`` (the rectified CDF; no power tuning exists for quantiles, as in ppi_py) or
    ``"classical"`` (ppi_py's binomial interval on the labelled rows; with weights the z-test of the
    weighted CDF, §4.4). The estimate is the first candidate whose CDF is closest to ``q``;
    :meth:`PPIResult.p_value` gives the test at any value.

    ``cluster`` / ``cluster_unlabeled``: cluster ids of the labelled and unlabelled rows (the same
    id in both is one cluster; a sample without ids puts each row in its own cluster), as in
    :func:`llmsurrogate.ppi.mean`. The test at each ``t`` then uses the cluster-robust variance of
    the PPI mean (λ = 1) of the indicators ``1{y <= t}``, ``1{yhat <= t}``, ``1{yhat_unlabeled <= t}``
    -- exactly ``ppi.mean(..., method="ppi", cluster=...)`` of those indicators, ``G/(G-1)``
    included -- computed for every candidate in the same sweep (docs/methods/ppi.md §8.3); the
    classical interval becomes the z-test of the labelled rows' CDF with its clustered variance
    (``G`` = the clusters holding labelled rows) inverted over their values. The estimate does not
    change.

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> y = rng.lognormal(size=400); yhat = y * rng.lognormal(0, 0.2, 400)
    >>> yhat_unlabeled = rng.lognormal(size=20_000) * rng.lognormal(0, 0.2, 20_000)
    >>> res = ppi.quantile(y, yhat, yhat_unlabeled, 0.5)
    >>> round(res.estimate, 3), round(res.ci_low, 3), round(res.ci_high, 3)
    (0.979, 0.951, 1.081)
    """
    method = check_method(method, ("classical", "ppi"))
    alpha = check_level(level)
    q = check_probability(q, "q")
    data = mean_inputs(y, yhat, yhat_unlabeled, weights, weights_unlabeled, columns=False, default_term="quantile",
                       cluster=cluster, cluster_unlabeled=cluster_unlabeled)
    y_, yh, yu = data.y[:, 0], data.yhat[:, 0], data.yhat_unlabeled[:, 0]
    w, wu = data.w, data.w_unlabeled
    cl = data.clusters
    threshold = min(P_VALUE_FLOOR, alpha / 10)
    est0, low0, high0, grid0, F0, se0, p0 = _classical(y_, w, q, alpha, weights is not None, cl)
    if method == "classical":
        est, low, high, lam = est0, low0, high0, 0.0
        eff = float(data.n)
        binomial = weights is None and cl is None
        test = _window(grid0, F0, se0, p0, threshold, bottom_se=float(se0[0]) if binomial else 1e-16)
    else:
        grid, F, se = cdf_sweep(y_, yh, yu, w, wu, clusters=cl)
        est, low, high, p = _inverted(grid, F, se, q, alpha, "prediction-powered")
        lam = 1.0
        j = int(np.searchsorted(grid, est))
        below = (y_ <= est)
        if cl is None:
            F_est = float(np.mean(w * below))   # the weighted CDF's linearised variance at the estimate
            var_classical = float(np.mean(w * w * (below - F_est) ** 2))
            eff = var_classical / float(se[j]) ** 2
        else:   # n times the clustered classical variance of the CDF at the estimate over the clustered s(t)^2
            ind = below.astype(float)[:, None]
            var_classical = float(clustered_mean_variance(ind, ind, np.zeros((data.N, 1)), w, wu, 0.0, cl)[0])
            eff = data.n * var_classical / float(se[j]) ** 2
        test = _window(grid, F, se, p, threshold)
    table = make_table(data.terms, est, np.nan, low, high, lam, eff, est0, np.nan, low0, high0)
    return PPIResult(estimand="quantile", method=method, level=float(level), n=data.n, N=data.N, table=table,
                     weighted=data.weighted, q=q, test=test, clustered=cl is not None)
