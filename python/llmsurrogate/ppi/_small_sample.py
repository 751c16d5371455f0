"""The small-sample option of the PPI intervals, ``small_sample=True`` (docs/methods/ppi.md §5):
what it adds to the z-interval of §2.2 / §3.2 / §8.1, term by term.

* the labelled rows' (rectifier) covariance with divisor ``n - d`` and the unlabelled rows' with
  ``N - d`` (``d`` coefficients; 1 for a mean): HC1's factor;
* the variance that tuning lambda adds, ``D_k^2 Var(lambda-hat)``, with ``D = d theta / d lambda``
  at lambda-hat and ``Var(lambda-hat)`` by the delta method (:func:`lam_variance`): O(1/n^2), so
  nothing asymptotically, but the main cause of PPI++'s undercoverage at n = 50;
* t quantiles with Welch-Satterthwaite degrees of freedom from the two samples' parts
  (:func:`satterthwaite_df`), or ``G - 1`` with clusters (``G`` the labelled rows' clusters).

With ``small_sample=False`` (the default) nothing here runs, and the intervals stay ppi_py's.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import t as t_dist

from ..exceptions import InvalidArgumentError
from ._stats import cluster_covariance, influence_totals


def row_covariance(rows: np.ndarray) -> np.ndarray:
    """The ddof-1 covariance matrix of the rows of ``rows``."""
    centred = rows - rows.mean(axis=0)
    return centred.T @ centred / (rows.shape[0] - 1)

__all__ = ["check_small_sample", "lam_variance", "satterthwaite_df", "split_sandwich", "t_p_value", "t_quantile"]


def check_small_sample(value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"argument `small_sample` must be True or False; got {value!r}")
    return bool(value)


def t_quantile(alpha: float, df) -> np.ndarray:
    """The ``1 - alpha/2`` quantile of Student's t with ``df`` degrees of freedom (inf: the normal's).

    >>> round(float(t_quantile(0.05, 10)), 4), round(float(t_quantile(0.05, np.inf)), 4)
    (2.2281, 1.96)
    """
    return t_dist.ppf(1.0 - alpha / 2.0, np.asarray(df, dtype=float))


def t_p_value(estimate, se, null, df) -> np.ndarray:
    """Two-sided p-value of the t-test of ``estimate = null`` with ``df`` degrees of freedom.

    >>> round(float(t_p_value(2.2281388519649385, 1.0, 0.0, 10)), 6)
    0.05
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.abs(np.asarray(estimate, dtype=float) - np.asarray(null, dtype=float)) / np.asarray(se, dtype=float)
    return 2.0 * t_dist.sf(stat, np.asarray(df, dtype=float))


def satterthwaite_df(a, b, df_a: float, df_b: float) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of ``a + b``, two independent variance estimates with
    ``df_a`` and ``df_b`` degrees of freedom: ``(a + b)^2 / (a^2/df_a + b^2/df_b)``.

    >>> float(satterthwaite_df(1.0, 0.0, 48, 498)), round(float(satterthwaite_df(1.0, 1.0, 48, 498)), 2)
    (48.0, 175.12)
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = a * a / df_a + b * b / df_b
        return np.where(den > 0, (a + b) ** 2 / np.where(den > 0, den, 1.0), float(df_a))


def split_sandwich(grads, grads_hat, grads_hat_unlabeled, inv_hessian, lam: float, n: int, N: int):
    """The diagonal of the sandwich of §3.2 over ``n`` in its two parts: the labelled rows'
    ``H^-1 Cov(g - lam g^) H^-1 / n`` and the unlabelled rows' ``H^-1 (n/N) Cov(lam g~) H^-1 / n``
    (ddof 1); their sum is ``diag(sandwich(...)) / n``."""
    a = np.diag(inv_hessian @ row_covariance(grads - lam * grads_hat) @ inv_hessian) / n
    if lam == 0:
        return a, np.zeros_like(a)
    b = np.diag(inv_hessian @ ((n / N) * row_covariance(lam * grads_hat_unlabeled)) @ inv_hessian) / n
    return a, b


def _lam_contributions(g, gh, ghu, P):
    """Per-row linear terms of lambda-hat's error (the delta method of lam = num/den, §5.2) for the
    weight matrix ``P`` (``H^-1 H^-1``, or ``v v'`` for one coordinate)."""
    n, N = g.shape[0], ghu.shape[0]
    gc, hc = g - g.mean(axis=0), gh - gh.mean(axis=0)
    a = np.einsum("ij,jk,ik->i", gc, P, hc)          # (g_i - gbar)' P (g^_i - g^bar)
    m = (gh.sum(axis=0) + ghu.sum(axis=0)) / (n + N)
    cl, cu = gh - m, ghu - m
    bl = np.einsum("ij,jk,ik->i", cl, P, cl)
    bu = np.einsum("ij,jk,ik->i", cu, P, cu)
    num = 2.0 * a.mean()
    pv = (bl.sum() + bu.sum()) / (n + N - 1)
    den = 2.0 * (1.0 + n / N) * pv
    if not den > 0:
        return None
    r = num / den
    c_l = (2.0 * (a - a.mean()) / n - 2.0 * r * (bl - pv) / N) / den
    c_u = (-2.0 * r * (bu - pv) / N) / den
    return c_l, c_u


def lam_variance(grads, grads_hat, grads_hat_unlabeled, inv_hessian, coord=None, mode: str = "overall",
                 clusters=None):
    """The delta-method variance of lambda-hat (§3.3 / §2.3's ratio, unclipped): the sum of squares
    of its per-row linear terms, centred in each sample; with clusters, ``G/(G-1)`` times the sum
    of squares of their cluster totals. ``mode="element"``: one per coordinate (an array).

    >>> rng = np.random.default_rng(0); y = rng.normal(size=(400, 1)); yh = y + rng.normal(size=(400, 1))
    >>> v = lam_variance(y, yh, rng.normal(size=(4000, 1)) * 1.4, np.eye(1)); 0.0005 < v < 0.005
    True
    """
    d = inv_hessian.shape[0]
    if mode == "element":
        Ps = [np.outer(inv_hessian[k], inv_hessian[k]) for k in range(d)]
    elif coord is not None:
        Ps = [np.outer(inv_hessian[coord], inv_hessian[coord])]
    else:
        Ps = [inv_hessian @ inv_hessian]
    out = []
    for P in Ps:
        parts = _lam_contributions(grads, grads_hat, grads_hat_unlabeled, P)
        if parts is None:
            out.append(0.0)
            continue
        c_l, c_u = parts
        if clusters is None:
            out.append(float(c_l @ c_l + c_u @ c_u))
        else:
            n, N = c_l.size, c_u.size
            T = influence_totals(n * c_l[:, None], N * c_u[:, None], clusters[0], clusters[1])
            out.append(float(cluster_covariance(T)[0, 0]))
    return np.array(out) if mode == "element" else out[0]


def labelled_clusters(clusters) -> int:
    """G: the number of clusters that hold a labelled row."""
    return int(np.unique(clusters[0]).size)
