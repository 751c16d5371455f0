"""The per-row statistics of prediction-powered inference (docs/methods/ppi.md §2-§5). What grows
with the number of rows runs in the Rust core (``llmsurrogate._core.ppi_*``, ``rust/ppi/``), one
pass each; what is left here is of size ``d x d``:

* :class:`Moments` -- count, mean and centred cross-products of per-row terms, the summary every
  covariance below is a linear combination of; :func:`gradient_moments` reduces the per-row
  gradients ``w x (mu - t)`` of a GLM (linear, logistic or Poisson with canonical link) to it in
  one pass, with the Hessian sum ``sum w v x x'`` (§3.1); :func:`row_moments` reduces rows given as
  a matrix; :func:`gradients` returns the per-row gradients themselves (the clustered variance
  sums them by cluster);
* :func:`moments_lam_hat` -- the power-tuning parameter of PPI++ (§3.3), scalar or per column,
  optionally for one coordinate; :func:`lam_hat` the same from per-row gradients given as matrices;
* :func:`moments_sandwich` -- the PPI++ covariance ``H^-1 [(n/N) Cov(lam g~) + Cov(g - lam g^)]
  H^-1`` (§3.2); :func:`sandwich` from matrices; :func:`row_covariance`, :func:`hessian`;
* :func:`mean_variance` -- the mean's two variance terms (ddof 0, §2.2), from the linearised
  values of the weighted (ratio) means, :func:`ratio_influence`;
* :func:`cdf_sweep` -- the rectified CDF and its variance at every candidate value, by sorting and
  cumulative sums (§4.2; the sort and the sums in Rust, ``ppi_cumulative_at``, one sort per value
  array); with clusters :func:`cluster_sweep` (§8.3).

With clusters (§8) :func:`influence_totals` sums the centred terms of both samples by cluster (one
numbering, so that a cluster with labelled and unlabelled rows is one; the sums in Rust),
:func:`cluster_covariance` applies G/(G-1) and :func:`cluster_lam_hat` minimises the clustered
variance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from .. import _core

__all__ = [
    "FAMILIES",
    "Moments",
    "cdf_sweep",
    "cluster_codes",
    "cluster_covariance",
    "cluster_lam_hat",
    "cluster_sweep",
    "gradient_moments",
    "gradients",
    "hessian",
    "influence_totals",
    "lam_hat",
    "mean_variance",
    "moments_lam_hat",
    "moments_sandwich",
    "ratio_gradients",
    "ratio_influence",
    "row_covariance",
    "row_moments",
    "sandwich",
    "z_p_value",
]

#: the GLM families of the regressions (canonical links): name -> the name the kernels take
FAMILIES = {"linear": "linear", "logistic": "logistic", "poisson": "poisson"}


@dataclass(frozen=True)
class Moments:
    """Per-row terms of width ``k d`` (``k`` blocks of ``d``: the gradients at Y, at Yhat, ...)
    reduced to their ``count``, ``mean`` and centred cross-products ``m2`` = ``sum (r - mean)(r -
    mean)'``."""

    count: int
    mean: np.ndarray
    m2: np.ndarray

    def block(self, i: int, j: int, d: int) -> np.ndarray:
        """The ``(i, j)`` ``d x d`` block of ``m2``."""
        return self.m2[i * d:(i + 1) * d, j * d:(j + 1) * d]


def _c(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def _targets(targets: list[np.ndarray], rows: int) -> np.ndarray:
    """The targets as the rows of a ``k x rows`` array (``0 x rows`` for none)."""
    return _c(np.vstack(targets)) if targets else np.empty((0, rows))


def row_moments(*rows: np.ndarray) -> Moments:
    """The :class:`Moments` of the rows of the matrices ``rows`` side by side (one pass, Rust).

    >>> m = row_moments(np.array([[1.0], [3.0]]), np.array([[0.0], [2.0]]))
    >>> m.count, m.mean.tolist(), m.m2.tolist()
    (2, [2.0, 1.0], [[2.0, 2.0], [2.0, 2.0]])
    """
    stacked = rows[0] if len(rows) == 1 else np.hstack(rows)
    count, mean, m2 = _core.ppi_row_moments(_c(stacked))
    return Moments(count, mean, m2)


def gradient_moments(family: str, theta: np.ndarray, X: np.ndarray, targets: list[np.ndarray],
                     w: np.ndarray) -> tuple[Moments, np.ndarray]:
    """One pass over the rows (Rust): the :class:`Moments` of the per-row gradients
    ``w_i x_i (mu_i - t_i)`` at ``theta`` of every target ``t`` side by side (Y and Yhat on the
    labelled rows share ``mu``), and the Hessian sum ``sum w v x x'`` with ``v = 1, mu(1 - mu), mu``
    (not divided by the rows).

    >>> m, H = gradient_moments("linear", np.array([1.0]), np.ones((2, 1)), [np.array([0.0, 3.0])], np.ones(2))
    >>> m.mean.tolist(), m.m2.tolist(), H.tolist()
    ([-0.5], [[4.5]], [[2.0]])
    """
    count, mean, m2, H = _core.ppi_moments(family, _c(X), _c(theta), _targets(targets, X.shape[0]), _c(w))
    return Moments(count, mean, m2), H


def gradients(family: str, theta: np.ndarray, X: np.ndarray, targets: list[np.ndarray],
              w: np.ndarray) -> list[np.ndarray]:
    """Per-row gradients ``w_i x_i (mu_i - t_i)`` at ``theta``, one ``n x d`` matrix per target
    ``t`` (Rust).

    >>> g, = gradients("linear", np.array([1.0]), np.ones((2, 1)), [np.array([0.0, 3.0])], np.ones(2))
    >>> g.ravel().tolist()
    [1.0, -2.0]
    """
    d = X.shape[1]
    g = _core.ppi_gradients(family, _c(X), _c(theta), _targets(targets, X.shape[0]), _c(w))
    return [g[:, k * d:(k + 1) * d] for k in range(len(targets))]


def _pooled_m2(a: Moments, a_block: int, b: Moments, d: int) -> tuple[np.ndarray, int]:
    """The centred cross-products of block ``a_block`` of ``a`` and of ``b`` stacked (Chan's
    merge), and the stacked count."""
    na, nb = a.count, b.count
    delta = b.mean - a.mean[a_block * d:(a_block + 1) * d]
    return a.block(a_block, a_block, d) + b.m2 + np.outer(delta, delta) * (na * nb / (na + nb)), na + nb


def moments_lam_hat(labelled: Moments, unlabelled: Moments, inv_hessian: np.ndarray, coord: int | None = None,
                    mode: str = "overall") -> float | np.ndarray:
    """The power-tuning parameter lambda-hat of PPI++ (§3.3), clipped to [0, 1]:
    ``Tr(H^-1 (C + C') H^-1) / [2 (1 + n/N) Tr(H^-1 V H^-1)]`` with ``C`` the ddof-0 cross-covariance
    of the gradients ``g`` and ``g^`` of the labelled rows (``labelled``: the moments of ``[g, g^]``)
    and ``V`` the ddof-1 covariance of ``g^`` and the unlabelled rows' ``g~`` (``unlabelled``)
    stacked; ``coord=k`` tunes for coordinate ``k`` (the (k, k) entries); ``mode="element"`` one
    lambda per coordinate. A zero denominator (predictions that do not vary) gives 0.

    >>> rng = np.random.default_rng(0); y = rng.normal(size=(200, 1)); yh = y + rng.normal(size=(200, 1))
    >>> round(float(moments_lam_hat(row_moments(y, yh), row_moments(rng.normal(size=(2000, 1)) * 1.4), np.eye(1))), 2)
    0.4
    """
    d = inv_hessian.shape[0]
    n, N = labelled.count, unlabelled.count
    c = labelled.block(0, 1, d)
    cross = (c + c.T) / n
    m2, total = _pooled_m2(labelled, 1, unlabelled, d)
    var = m2 / (total - 1)
    factor = 2.0 * (1.0 + n / N)
    if mode == "element":
        num = np.diag(inv_hessian @ cross @ inv_hessian)
        den = factor * np.diag(inv_hessian @ var @ inv_hessian)
        with np.errstate(invalid="ignore", divide="ignore"):
            lam = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
        return np.clip(lam, 0.0, 1.0)
    if coord is None:
        num = float(np.trace(inv_hessian @ cross @ inv_hessian))
        den = factor * float(np.trace(inv_hessian @ var @ inv_hessian))
    else:
        v = inv_hessian[coord, :]
        num = float(v @ cross @ v)
        den = factor * float(v @ var @ v)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0


def moments_sandwich(labelled: Moments, unlabelled: Moments | None, inv_hessian: np.ndarray, lam: float) -> np.ndarray:
    """The covariance of sqrt(n)(theta-hat - theta) (§3.2):
    ``H^-1 [(n/N) Cov(lam g~) + Cov(g - lam g^)] H^-1`` (ddof 1) from the moments of ``[g, g^]``
    (``labelled``) and of ``g~`` (``unlabelled``; not read when ``lam`` is 0); divide by ``n``
    for the estimator's covariance.

    >>> g = np.array([[1.0], [-1.0]]); moments_sandwich(row_moments(g, 0 * g), None, np.eye(1), 0.0).tolist()
    [[2.0]]
    """
    d = inv_hessian.shape[0]
    n = labelled.count
    gh = labelled.block(0, 1, d)
    meat = (labelled.block(0, 0, d) - lam * (gh + gh.T) + lam * lam * labelled.block(1, 1, d)) / (n - 1)
    if lam != 0:
        N = unlabelled.count
        meat = meat + (n / N) * (lam * lam) * unlabelled.m2 / (N - 1)
    return inv_hessian @ meat @ inv_hessian


def lam_hat(grads: np.ndarray, grads_hat: np.ndarray, grads_hat_unlabeled: np.ndarray, inv_hessian: np.ndarray,
            coord: int | None = None, mode: str = "overall") -> float | np.ndarray:
    """:func:`moments_lam_hat` of per-row gradients given as matrices (``n x d``, ``n x d``,
    ``N x d``).

    >>> rng = np.random.default_rng(0); y = rng.normal(size=(200, 1)); yh = y + rng.normal(size=(200, 1))
    >>> round(float(lam_hat(y, yh, rng.normal(size=(2000, 1)) * 1.4, np.eye(1))), 2)
    0.4
    """
    return moments_lam_hat(row_moments(grads, grads_hat), row_moments(grads_hat_unlabeled), inv_hessian, coord, mode)


def sandwich(grads: np.ndarray, grads_hat: np.ndarray, grads_hat_unlabeled: np.ndarray, inv_hessian: np.ndarray,
             lam: float) -> np.ndarray:
    """:func:`moments_sandwich` of per-row gradients given as matrices.

    >>> g = np.array([[1.0], [-1.0]]); sandwich(g, 0 * g, np.zeros((4, 1)), np.eye(1), 0.0).tolist()
    [[2.0]]
    """
    unl = row_moments(grads_hat_unlabeled) if lam != 0 else None
    return moments_sandwich(row_moments(grads, grads_hat), unl, inv_hessian, lam)


def row_covariance(rows: np.ndarray, ddof: int = 1) -> np.ndarray:
    """Covariance matrix of the rows of ``rows`` (``n x d``), centred, divided by ``n - ddof``
    (:func:`row_moments`).

    >>> row_covariance(np.array([[1.0], [3.0]])).tolist()
    [[2.0]]
    """
    m = row_moments(rows)
    return m.m2 / (m.count - ddof)


def hessian(family: str, theta: np.ndarray, X: np.ndarray, w: np.ndarray, X_unlabeled: np.ndarray,
            w_unlabeled: np.ndarray, use_unlabeled: bool) -> np.ndarray:
    """The Hessian of the rectified loss at ``theta``: ``sum w v x x' / (n + N)`` over all rows, or
    over the labelled rows divided by ``n`` when ``use_unlabeled`` is False (lambda = 0: the
    classical estimator), with ``v = 1, mu(1 - mu), mu`` (§3.2; the sums from
    :func:`gradient_moments`).

    >>> hessian("linear", np.zeros(1), np.ones((2, 1)), np.ones(2), 2 * np.ones((2, 1)), np.ones(2), True)
    array([[2.5]])
    """
    _, H = gradient_moments(family, theta, X, [], w)
    if not use_unlabeled:
        return H / X.shape[0]
    _, Hu = gradient_moments(family, theta, X_unlabeled, [], w_unlabeled)
    return (H + Hu) / (X.shape[0] + X_unlabeled.shape[0])


def ratio_influence(z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The linearised (influence) values of the weighted mean ``sum w z / sum w`` of each column of
    ``z`` (``m x K``), scaled so that their ddof-0 variance over ``m`` is its variance (§1.2, §2.2):
    ``w (z - zbar_w) m / sum w`` with ``zbar_w`` the weighted mean (``m / sum w`` is 1 for the
    package's rescaled weights). Their mean is 0; with unit weights they are ``z - zbar``. The
    weights' normalisation is a ratio estimator, so ``Var(w z)`` (ppi_py's) is not its variance
    unless the weights are constant (§7, item 13).

    >>> ratio_influence(np.array([[0.0], [4.0]]), np.array([1.5, 0.5])).ravel().tolist()
    [-1.5, 1.5]
    """
    total = float(w.sum())
    zbar = (w[:, None] * z).sum(axis=0) / total
    return (w.shape[0] / total) * w[:, None] * (z - zbar)


def ratio_gradients(z: np.ndarray, w: np.ndarray, theta) -> np.ndarray:
    """The mean's per-row gradients ``w (z - theta)`` with the weights' normalisation linearised:
    ``ratio_influence(z, w) + (zbar_w - theta)`` -- the same values with unit weights, the same
    mean (``zbar_w - theta``), and the centred part the ratio's influence (§2.3)."""
    zbar = (w[:, None] * z).sum(axis=0) / float(w.sum())
    return ratio_influence(z, w) + (zbar - theta)


def mean_variance(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, w: np.ndarray, w_unlabeled: np.ndarray,
                  lam: float | np.ndarray) -> np.ndarray:
    """The variance of the PPI++ mean per column (§2.2): ``Var(w~ (lam Yhat~ - m_u))/N +
    Var(w (Y - lam Yhat - m_r))/n`` with ddof 0, ``m_u`` and ``m_r`` the weighted means of
    ``lam Yhat~`` and of ``Y - lam Yhat`` (the linearisation of the two ratio means,
    :func:`ratio_influence`; ppi_py's ``Var(w Z)`` for unit weights). Arrays are ``n x K`` /
    ``N x K``, weights ``n`` / ``N``.

    >>> mean_variance(np.array([[0.0], [2.0]]), np.zeros((2, 1)), np.zeros((3, 1)), np.ones(2), np.ones(3), 0.0)
    array([0.5])
    """
    n, N = y.shape[0], yhat_unlabeled.shape[0]
    return ratio_influence(lam * yhat_unlabeled, w_unlabeled).var(axis=0) / N \
        + ratio_influence(y - lam * yhat, w).var(axis=0) / n


def _cumulative_at(values: np.ndarray, increments: list[np.ndarray], grid: np.ndarray) -> list[np.ndarray]:
    """For each increment array: the sum of the increments of the values <= t, for each t of the
    sorted ``grid``. One call of the Rust sweep (``_core.ppi_cumulative_at``) for all the arrays:
    the values are sorted once (by value, then position: numpy's stable argsort) and each array is
    summed in that order, the same bits for any thread count.

    >>> a, b = _cumulative_at(np.array([2.0, 1.0, 2.0]), [np.array([1.0, 2.0, 4.0]), np.ones(3)],
    ...                       np.array([0.0, 1.0, 2.0]))
    >>> a.tolist(), b.tolist()
    ([0.0, 2.0, 7.0], [0.0, 1.0, 3.0])
    """
    values = _c(values)
    inc = np.empty((len(increments), values.shape[0]))
    for row, x in zip(inc, increments):
        row[:] = x
    return list(_core.ppi_cumulative_at(values, inc, _c(grid)))


def cluster_sweep(values: np.ndarray, deltas: np.ndarray, codes: np.ndarray, centring: list[np.ndarray],
                  means: list[np.ndarray], grid: np.ndarray) -> np.ndarray:
    """``sum_c T_c(t)^2`` at every ``t`` of ``grid`` (sorted) for cluster totals of indicators
    (§8.3): ``T_c(t) = S_c(t) - sum_k a_kc m_k(t)``, where ``S_c(t)`` is the sum of the ``deltas``
    of the events of cluster ``codes`` at ``values <= t`` (an indicator that switches on at its row's
    value, already weighted and divided by its sample's size), ``a_k`` per-cluster centring
    coefficients (length G) and ``m_k`` the sample means at the grid. No ``clusters x grid`` or
    ``rows x grid`` matrix: the events are sorted by cluster, then value (a grouped cumulative sum
    gives each cluster's ``S_c`` after each of its events and so the change of ``S_c^2``), and the
    changes of ``sum S_c^2`` and of ``sum_c a_kc S_c`` are summed in value order (one Rust sweep,
    ``ppi_cumulative_at``); the square is
    expanded, ``sum S^2 - 2 sum_k m_k (a_k . S) + sum_kl m_k m_l (a_k . a_l)``, and clipped at 0.
    ``O(E log E)`` time for ``E`` events, ``O(E + G)`` memory.

    >>> v = cluster_sweep(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, -0.5]), np.array([0, 1, 0]),
    ...                   [np.array([0.5, 0.5])], [np.array([0.25, 0.5, 0.25])], np.array([1.0, 2.0, 3.0]))
    >>> [round(float(x), 12) for x in v]   # T = (0.375, -0.125), (0.25, 0.25), (-0.125, 0.375)
    [0.15625, 0.125, 0.15625]
    """
    values = np.asarray(values, dtype=float)
    deltas = np.asarray(deltas, dtype=float)
    codes = np.asarray(codes, dtype=np.intp)
    e = values.size
    by_cluster = np.lexsort((values, codes))          # cluster, then value (ties in any order: they telescope)
    c, d = codes[by_cluster], deltas[by_cluster]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]]) if e else np.empty(0, dtype=np.intp)
    running = np.zeros(e)
    if e:
        sizes = np.diff(np.r_[starts, e])
        running = np.cumsum(d)
        running -= np.repeat(running[starts] - d[starts], sizes)   # S_c after each of its events
    increments = np.empty((1 + len(centring), e))
    increments[0, by_cluster] = d * (2.0 * running - d)            # S_new^2 - S_old^2
    for k, a in enumerate(centring):
        increments[1 + k, by_cluster] = np.asarray(a, dtype=float)[c] * d
    sums = _core.ppi_cumulative_at(_c(values), increments, _c(grid))   # by value, at the grid (one sort)
    total = sums[0].copy()
    for k, m in enumerate(means):
        total -= 2.0 * m * sums[1 + k]
        for j, m2 in enumerate(means):
            total += m * m2 * float(np.dot(centring[k], centring[j]))
    return np.maximum(total, 0.0)


def _cluster_share(codes: np.ndarray, G: int, m: int, w: np.ndarray) -> np.ndarray:
    """The share of a sample's ``m`` rows' weights in each of the G clusters (``sum_{i in c} w_i / m``;
    ``n_c / n`` without weights): the coefficient of the weighted mean in the cluster's total of
    the linearised values ``w (1{.} - F_w)`` (§8.3)."""
    return np.bincount(codes, weights=w, minlength=G) / m


def cdf_sweep(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, w: np.ndarray, w_unlabeled: np.ndarray,
              grid: np.ndarray | None = None, clusters: tuple | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rectified CDF ``F(t) = mean(w~ 1{Yhat~ <= t}) + mean(w (1{Y <= t} - 1{Yhat <= t}))`` and
    the standard error of the z-test of ``F(t) = q`` (the ddof-0 variances of the two weighted
    means' linearised values ``w~ (1{Yhat~ <= t} - F~(t))`` and ``w (d - r(t))``, over N and n)
    at every ``t`` of ``grid`` (default: the distinct values of Y, Yhat and Yhat~, sorted), by
    sorting each sample once and cumulative sums (§4.2): ``O((n + N) log(n + N))``, no
    ``rows x grid`` matrix. Returns ``(grid, F, se)``. With ``clusters`` (the codes of
    :func:`cluster_codes`) the variance is the cluster-robust variance of that PPI mean of
    indicators (λ = 1; §8.3), from :func:`cluster_sweep`.

    >>> t, F, se = cdf_sweep(np.array([1.0, 2.0]), np.array([1.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0]),
    ...                      np.ones(2), np.ones(4))
    >>> t.tolist(), F.tolist()
    ([1.0, 2.0, 3.0, 4.0], [0.25, 1.0, 0.75, 1.0])
    """
    n, N = y.shape[0], yhat_unlabeled.shape[0]
    if grid is None:
        grid = np.unique(np.concatenate([y, yhat, yhat_unlabeled]))
    if clusters is not None:
        codes, codes_u = clusters
        G = int(max(codes.max(initial=-1), codes_u.max(initial=-1))) + 1   # every code holds a row (§8.1)
        s1, = _cumulative_at(yhat_unlabeled, [w_unlabeled], grid)
        ry, = _cumulative_at(y, [w], grid)
        ryh, = _cumulative_at(yhat, [w], grid)
        imputed, rectifier = s1 / N, (ry - ryh) / n
        ss = cluster_sweep(np.concatenate([y, yhat, yhat_unlabeled]),
                           np.concatenate([w / n, -w / n, w_unlabeled / N]),
                           np.concatenate([codes, codes, codes_u]),
                           [_cluster_share(codes, G, n, w), _cluster_share(codes_u, G, N, w_unlabeled)], [rectifier, imputed], grid)
        se = np.maximum(np.sqrt(G / (G - 1.0) * ss), 1e-16)
        return grid, imputed + rectifier, se
    s1, s2 = _cumulative_at(yhat_unlabeled, [w_unlabeled, w_unlabeled * w_unlabeled], grid)
    w2 = w * w
    ry, ry2 = _cumulative_at(y, [w, w2], grid)
    ryh, ryh2 = _cumulative_at(yhat, [w, w2], grid)
    rlo, = _cumulative_at(np.minimum(y, yhat), [w2], grid)   # |1{Y <= t} - 1{Yhat <= t}| = 1{min <= t} - 1{max <= t}
    rhi, = _cumulative_at(np.maximum(y, yhat), [w2], grid)
    imputed = s1 / N
    rectifier = (ry - ryh) / n
    # the linearised values of the two weighted means (§4.1): mean(w~^2 (1{.} - F~)^2) and
    # mean(w^2 (d - r)^2), d = 1{Y <= t} - 1{Yhat <= t}, expanded; F~ - F~^2 and mean(d^2) - r^2 for unit weights
    var_imputed = np.maximum(s2 / N * (1.0 - 2.0 * imputed) + imputed * imputed * float(np.mean(w_unlabeled ** 2)),
                             0.0)
    var_rectifier = np.maximum((rlo - rhi) / n - 2.0 * rectifier * (ry2 - ryh2) / n
                               + rectifier * rectifier * float(np.mean(w2)), 0.0)
    se = np.maximum(np.sqrt(var_imputed / N + var_rectifier / n), 1e-16)
    return grid, imputed + rectifier, se


def z_p_value(estimate, se, null) -> np.ndarray:
    """Two-sided p-value of the z-test of ``estimate = null``: ``2 (1 - Phi(|estimate - null| / se))``.

    >>> round(float(z_p_value(1.96, 1.0, 0.0)), 4)
    0.05
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(np.asarray(estimate, dtype=float) - np.asarray(null, dtype=float)) / np.asarray(se, dtype=float)
    return 2.0 * norm.sf(z)


# -- clusters (docs/methods/ppi.md §8) ------------------------------------------------------------
def cluster_codes(cluster, cluster_unlabeled, n: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the cluster ids of the labelled and the unlabelled rows, one numbering for
    both: the same id in ``cluster`` and ``cluster_unlabeled`` is the same cluster (a firm with
    labelled and unlabelled rows). A sample without ids (None) puts each of its rows in its own
    cluster.

    >>> [c.tolist() for c in cluster_codes(["a", "b", "a"], ["b", "c"], 3, 2)]
    [[0, 1, 0], [1, 2]]
    """
    import pandas as pd

    parts = []
    for ids, m, tag in ((cluster, n, "l"), (cluster_unlabeled, N, "u")):
        if ids is None:
            parts.append(pd.Series([(f"\0{tag}", i) for i in range(m)], dtype=object))
        else:
            parts.append(pd.Series(np.asarray(ids, dtype=object).ravel(), dtype=object))
    codes, _ = pd.factorize(pd.concat(parts, ignore_index=True), sort=False)
    return codes[:n].astype(np.intp), codes[n:].astype(np.intp)


def cluster_totals(rows: np.ndarray, codes: np.ndarray, G: int) -> np.ndarray:
    """``G x d``: the sums of the rows of each cluster (Rust)."""
    return _core.ppi_cluster_sums(_c(rows), np.ascontiguousarray(codes, dtype=np.int64), G)


def influence_totals(rows: np.ndarray, rows_unlabeled: np.ndarray | None, codes: np.ndarray,
                     codes_unlabeled: np.ndarray) -> np.ndarray:
    """The cluster totals ``T_c = sum_{i in c} (r_i - rbar)/n + sum_{j in c} (u_j - ubar)/N`` of the
    centred per-row terms of the labelled rows (``rows``) and the unlabelled rows
    (``rows_unlabeled``; None: they do not enter), one row per cluster that holds a row that
    enters (``G x d``).

    >>> influence_totals(np.array([[1.0], [3.0]]), None, np.array([0, 0]), np.array([1])).tolist()
    [[0.0]]
    """
    n = rows.shape[0]
    G = int(max(codes.max(initial=-1), codes_unlabeled.max(initial=-1))) + 1
    T = cluster_totals((rows - rows.mean(axis=0)) / n, codes, G)
    present = np.bincount(codes, minlength=G) > 0
    if rows_unlabeled is not None:
        N = rows_unlabeled.shape[0]
        T += cluster_totals((rows_unlabeled - rows_unlabeled.mean(axis=0)) / N, codes_unlabeled, G)
        present |= np.bincount(codes_unlabeled, minlength=G) > 0
    return T[present]


def cluster_covariance(totals: np.ndarray) -> np.ndarray:
    """``G/(G-1) sum_c T_c T_c'``: the cluster-robust covariance of the estimating equations' mean
    from the cluster totals of :func:`influence_totals` (CRV1's G/(G-1); no (n-1)/(n-k)).

    >>> cluster_covariance(np.array([[1.0], [-1.0]])).tolist()
    [[4.0]]
    """
    G = totals.shape[0]
    if G < 2:
        raise ValueError("one cluster")
    return (G / (G - 1.0)) * (totals.T @ totals)


def cluster_lam_hat(a: np.ndarray, b: np.ndarray, inv_hessian: np.ndarray, coord: int | None = None,
                    mode: str = "overall") -> float | np.ndarray:
    """lambda-hat from cluster totals: the estimating equations' mean is ``A - lam B`` (``a``:
    totals of the gradients at Y on the labelled rows; ``b``: totals of the gradients at the
    predictions, labelled minus unlabelled), so the trace of ``H^-1 Var H^-1`` is minimised at
    ``Tr(H^-1 (A'B + B'A) H^-1) / (2 Tr(H^-1 B'B H^-1))`` (the (k, k) entries with ``coord``, per
    coordinate with ``mode="element"``), clipped to [0, 1]; the factor G/(G-1) cancels.

    >>> round(float(cluster_lam_hat(np.array([[1.0], [-1.0]]), np.array([[2.0], [-2.0]]), np.eye(1))), 3)
    0.5
    """
    cross = a.T @ b
    cross = cross + cross.T
    var = b.T @ b
    if mode == "element":
        num = np.diag(inv_hessian @ cross @ inv_hessian)
        den = 2.0 * np.diag(inv_hessian @ var @ inv_hessian)
        with np.errstate(invalid="ignore", divide="ignore"):
            lam = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
        return np.clip(lam, 0.0, 1.0)
    if coord is None:
        num = float(np.trace(inv_hessian @ cross @ inv_hessian))
        den = 2.0 * float(np.trace(inv_hessian @ var @ inv_hessian))
    else:
        v = inv_hessian[coord, :]
        num = float(v @ cross @ v)
        den = 2.0 * float(v @ var @ v)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0
