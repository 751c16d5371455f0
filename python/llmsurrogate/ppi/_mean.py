"""The prediction-powered mean (docs/methods/ppi.md §2): classical, PPI and PPI++ with lambda
tuned over all K columns at once or per column."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from .._validation import check_choice
from ..exceptions import InvalidArgumentError
from ._inputs import check_lam, check_level, check_method, mean_inputs
from ._results import PPIResult, make_table
from ._small_sample import check_small_sample, labelled_clusters, lam_variance, satterthwaite_df, t_quantile
from ._stats import (
    cluster_covariance,
    cluster_lam_hat,
    influence_totals,
    lam_hat,
    mean_variance,
    ratio_gradients,
    ratio_influence,
)

__all__ = ["mean", "mean_estimate", "mean_lam_hat"]


def mean_estimate(y, yhat, yhat_unlabeled, w, w_unlabeled, lam) -> np.ndarray:
    """``mean(w~ lam Yhat~) + mean(w (Y - lam Yhat))`` per column (§2.1)."""
    return (w_unlabeled[:, None] * (lam * yhat_unlabeled)).mean(axis=0) + (w[:, None] * (y - lam * yhat)).mean(axis=0)


def mean_lam_hat(y, yhat, yhat_unlabeled, w, w_unlabeled, mode: str, clusters=None):
    """lambda-hat of the mean (§2.3): one step from the PPI (lambda = 1) estimate, the GLM formula
    with the identity as inverse Hessian and the per-row gradients ``w (Y - theta)`` with the
    weights' normalisation linearised (:func:`ratio_gradients`: the centred part is the weighted
    mean's influence ``w (Y - Ybar_w)``, so that lambda-hat minimises the variance of §2.2; ppi_py's
    gradients for unit weights); with clusters the minimiser of the clustered variance (§8.2)."""
    if clusters is not None:
        codes, codes_u = clusters
        iu = ratio_influence(yhat_unlabeled, w_unlabeled)
        a = influence_totals(ratio_influence(y, w), np.zeros_like(iu), codes, codes_u)
        b = influence_totals(ratio_influence(yhat, w), -iu, codes, codes_u)
        return cluster_lam_hat(a, b, np.eye(y.shape[1]), None, mode)
    theta = mean_estimate(y, yhat, yhat_unlabeled, w, w_unlabeled, 1.0)
    grads = ratio_gradients(y, w, theta)
    grads_hat = ratio_gradients(yhat, w, theta)
    grads_hat_unlabeled = ratio_gradients(yhat_unlabeled, w_unlabeled, theta)
    return lam_hat(grads, grads_hat, grads_hat_unlabeled, np.eye(y.shape[1]), None, mode)


def clustered_mean_variance(y, yhat, yhat_unlabeled, w, w_unlabeled, lam, clusters) -> np.ndarray:
    """The cluster-robust variance of the mean per column (§8.1): ``G/(G-1) sum_c T_c^2`` with
    ``T_c`` the cluster totals of the linearised values of the two weighted means,
    ``w (Y - lam Yhat - m_r)/n`` and ``w~ (lam Yhat~ - m_u)/N`` (:func:`ratio_influence`)."""
    codes, codes_u = clusters
    lam_arr = np.broadcast_to(np.asarray(lam, dtype=float), (y.shape[1],))
    rows_u = None if np.all(lam_arr == 0) else ratio_influence(lam_arr * yhat_unlabeled, w_unlabeled)
    T = influence_totals(ratio_influence(y - lam_arr * yhat, w), rows_u, codes, codes_u)
    return np.diag(cluster_covariance(T)).copy()


def small_sample_mean(y, yhat, yhat_unlabeled, w, w_unlabeled, lam, var, var0, tuned, lam_mode, clusters):
    """The small-sample option (§5.1): the variances and degrees of freedom of the estimate and of
    the classical baseline. Without clusters the two parts of §2.2 with divisors n - 1 and N - 1,
    the variance of lambda-hat times ``D^2`` when lambda is tuned (``D = mean(w~ Yhat~) - mean(w Yhat)``,
    the derivative of the estimate in lambda) and Welch-Satterthwaite degrees of freedom; with
    clusters the clustered variance plus the same term, and G - 1 degrees of freedom."""
    n, N = y.shape[0], yhat_unlabeled.shape[0]
    lam_arr = np.broadcast_to(np.asarray(lam, dtype=float), (y.shape[1],))
    extra = np.zeros(y.shape[1])
    if tuned:
        theta = mean_estimate(y, yhat, yhat_unlabeled, w, w_unlabeled, 1.0)
        v_lam = lam_variance(ratio_gradients(y, w, theta), ratio_gradients(yhat, w, theta),
                             ratio_gradients(yhat_unlabeled, w_unlabeled, theta), np.eye(y.shape[1]), None, lam_mode,
                             clusters)
        D = (w_unlabeled[:, None] * yhat_unlabeled).mean(axis=0) - (w[:, None] * yhat).mean(axis=0)
        extra = D * D * v_lam
    if clusters is not None:
        g = float(labelled_clusters(clusters) - 1)
        return var + extra, np.full(y.shape[1], g), var0, np.full(y.shape[1], g)
    a = ratio_influence(y - lam_arr * yhat, w).var(axis=0) / (n - 1) + extra
    b = ratio_influence(lam_arr * yhat_unlabeled, w_unlabeled).var(axis=0) / (N - 1)
    var0_s = ratio_influence(y, w).var(axis=0) / (n - 1)
    return a + b, satterthwaite_df(a, b, n - 1, N - 1), var0_s, np.full(y.shape[1], float(n - 1))


def mean(y, yhat, yhat_unlabeled, *, method: str = "ppi++", level: float = 0.95, lam=None,
         lam_mode: str = "overall", weights=None, weights_unlabeled=None, cluster=None,
         cluster_unlabeled=None, small_sample: bool = False) -> PPIResult:
    """Prediction-powered mean of ``y`` (or of each of its K columns: the answer shares of a K-option
    question), from ``n`` labelled rows (``y`` and the prediction ``yhat``) and ``N`` unlabelled rows
    (``yhat_unlabeled``): ``lam * mean(yhat_unlabeled) + mean(y - lam * yhat)`` with its z-interval
    (Angelopoulos et al. 2023; PPI++: Angelopoulos, Duchi & Zrnic 2023; docs/methods/ppi.md §2).

    ``method``: ``"ppi++"`` (lambda tuned to minimise the variance, clipped to [0, 1], or ``lam``
    given), ``"ppi"`` (lambda = 1), ``"classical"`` (the labelled rows alone, lambda = 0).
    ``lam_mode``: ``"overall"`` (one lambda for all K columns, minimising the summed variance) or
    ``"element"`` (one per column). ``weights`` / ``weights_unlabeled``: positive survey weights of
    the two samples, rescaled to sum to n and N (ppi_py's convention); the variance linearises
    that normalisation (a ratio mean; ppi_py's does not, docs/methods/ppi.md §7 item 13). ``cluster`` /
    ``cluster_unlabeled``: cluster ids of the labelled and unlabelled rows (schools, firms; the
    same id in both is one cluster) for the cluster-robust variance and lambda-hat of
    docs/methods/ppi.md §8. ``small_sample=True``: t-intervals with a small-sample variance
    (divisors n - 1 and N - 1, the variance lambda-hat adds, Welch-Satterthwaite degrees of
    freedom; G - 1 with clusters; docs/methods/ppi.md §5), for n below a few hundred; the default
    False keeps ppi_py's z-intervals. pandas inputs that share rows
    (``y``, ``yhat``, ``weights``) are paired by their row labels; K columns with names by name.
    The definitions are ppi_py 0.2.3's (``ppi_mean_ci``), except that :meth:`PPIResult.p_value`
    uses the interval's clipped lambda (§2.4) and, with weights, the variance and lambda-hat (§2.2,
    §2.3).

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> y = rng.binomial(1, 0.3, 300).astype(float)               # 300 human answers
    >>> yhat = np.clip(0.7 * y + 0.15 + rng.normal(0, 0.4, 300), 0, 1)   # the LLM's on the same rows
    >>> y_u = rng.binomial(1, 0.3, 20_000)                         # 20,000 rows only the LLM answered
    >>> yhat_unlabeled = np.clip(0.7 * y_u + 0.15 + rng.normal(0, 0.4, 20_000), 0, 1)
    >>> res = ppi.mean(y, yhat, yhat_unlabeled)
    >>> round(res.estimate, 3), [round(v, 3) for v in (res.ci_low, res.ci_high)], round(res.lam, 2)
    (0.332, [0.291, 0.373], 0.91)
    >>> classical = ppi.mean(y, yhat, yhat_unlabeled, method="classical")
    >>> round(classical.ci_high - classical.ci_low, 3), round(res.ci_high - res.ci_low, 3)
    (0.109, 0.081)
    """
    method = check_method(method)
    alpha = check_level(level)
    small_sample = check_small_sample(small_sample)
    lam_mode = check_choice(lam_mode, "lam_mode", ["overall", "element"])
    data = mean_inputs(y, yhat, yhat_unlabeled, weights, weights_unlabeled, columns=True, default_term="mean",
                       cluster=cluster, cluster_unlabeled=cluster_unlabeled)
    cl = data.clusters
    k = data.y.shape[1]
    lam_given = check_lam(lam, method, k)
    tuned = method == "ppi++" and lam_given is None
    if lam_mode != "overall" and not tuned:
        raise InvalidArgumentError("argument `lam_mode` chooses how lambda is tuned; it has no effect with a fixed "
                                   "lambda (method='classical', 'ppi' or `lam` given): leave it out")
    y_, yh, yu, w, wu = data.y, data.yhat, data.yhat_unlabeled, data.w, data.w_unlabeled
    z = float(norm.ppf(1 - alpha / 2))
    est0 = mean_estimate(y_, yh, yu, w, wu, 0.0)
    var0 = mean_variance(y_, yh, yu, w, wu, 0.0) if cl is None else clustered_mean_variance(y_, yh, yu, w, wu, 0.0, cl)
    if method == "classical":
        lam_used = 0.0
    elif method == "ppi":
        lam_used = 1.0
    elif lam_given is not None:
        lam_used = lam_given
    else:
        lam_used = mean_lam_hat(y_, yh, yu, w, wu, lam_mode, cl)
    est = mean_estimate(y_, yh, yu, w, wu, lam_used)
    var = mean_variance(y_, yh, yu, w, wu, lam_used) if cl is None else \
        clustered_mean_variance(y_, yh, yu, w, wu, lam_used, cl)
    with np.errstate(divide="ignore", invalid="ignore"):
        eff = np.where((var > 0) & (var0 > 0), data.n * (var0 / np.where(var > 0, var, 1.0)), np.nan)
    if method == "classical":
        eff = np.where(var0 > 0, float(data.n), np.nan)
    df = None
    z0 = z
    if small_sample:
        var, df, var0, df0 = small_sample_mean(y_, yh, yu, w, wu, lam_used, var, var0, tuned, lam_mode, cl)
        if method == "classical":
            var, df = var0, df0
        z, z0 = t_quantile(alpha, df), t_quantile(alpha, df0)
        df = tuple(float(v) for v in df)
    se, se0 = np.sqrt(var), np.sqrt(var0)
    table = make_table(data.terms, est, se, est - z * se, est + z * se, lam_used, eff, est0, se0, est0 - z0 * se0,
                       est0 + z0 * se0)
    return PPIResult(estimand="mean", method=method, level=float(level), n=data.n, N=data.N, table=table,
                     lam_mode=lam_mode if method == "ppi++" else None, lam_tuned=tuned, weighted=data.weighted,
                     clustered=cl is not None, small_sample=small_sample, df=df)
