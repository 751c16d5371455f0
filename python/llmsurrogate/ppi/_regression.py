"""Prediction-powered regressions (docs/methods/ppi.md §3): OLS, logistic and Poisson, classical,
PPI and PPI++ with ppi_py's two tuning steps and its classical baselines; the GLMs with ppi_py's
variance, OLS with the variance of the estimate it computes (each of its least-squares fits with
its own sample's Hessian and residuals, §3.2; ppi_py's pooled sandwich overstates it, §7)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from ..exceptions import InvalidArgumentError
from ._glm import NoFiniteFit, fit_rectified, wls
from ._inputs import (
    RegressionInputs,
    check_coord,
    check_lam,
    check_level,
    check_method,
    regression_inputs,
)
from ._results import PPIResult, make_table
from ._small_sample import (
    check_small_sample,
    labelled_clusters,
    lam_variance,
    satterthwaite_df,
    split_sandwich,
    t_quantile,
)
from ._stats import (
    Moments,
    cluster_covariance,
    cluster_lam_hat,
    gradient_moments,
    gradients,
    influence_totals,
    moments_lam_hat,
    moments_sandwich,
)

__all__ = ["classical_covariance", "fit", "logistic", "ols", "ols_influence", "poisson", "ppi_covariance", "tuned_lam"]


def _ols_parts(d: RegressionInputs) -> np.ndarray:
    """The three least-squares fits every OLS estimate combines (§3.1): of ``y`` and ``yhat`` on
    ``X`` and of ``yhat~`` on ``X~`` (weighted), one QR of each design, computed once per inputs."""
    parts = d.cache.get("ols")
    if parts is None:
        lab = wls(d.X, [d.y, d.yhat], d.w)
        unl = wls(d.X_unlabeled, [d.yhat_unlabeled], d.w_unlabeled)
        parts = d.cache["ols"] = np.vstack([lab, unl])
    return parts


def ols_influence(d: RegressionInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The influence rows of OLS's three least-squares fits (§3.2): ``psi_i = H^-1 w_i x_i e_i`` with
    ``e`` the residuals of the fit of ``y`` (labelled rows), of ``yhat`` (labelled rows) and of
    ``yhat~`` (unlabelled rows) on their own sample's regressors, ``H`` that sample's ``X'WX / m``
    (signs as the gradients: ``w x (mu - t)``). The estimate at ``lam`` is ``b_y - lam b_yhat +
    lam b~``, so its covariance is that of ``psi_y - lam psi_yhat`` over ``n`` plus ``lam^2`` that of
    ``psi~`` over ``N``: the sandwich of §3.2 with these rows and an identity Hessian. Computed once
    per inputs.

    >>> from llmsurrogate.ppi._inputs import regression_inputs
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> d = regression_inputs(X, [0.0, 1.0, 1.0, 3.0], [1.0, 1.0, 2.0, 2.0], X, [0.0, 1.0, 2.0, 4.0], None, None,
    ...                       False, "linear")
    >>> py, ph, pu = ols_influence(d)
    >>> np.allclose(py.sum(axis=0), 0), np.allclose(pu.sum(axis=0), 0)  # the normal equations
    (True, True)
    """
    rows = d.cache.get("ols_influence")
    if rows is None:
        (e_y, e_yhat, e_u), (Hi, Hui), _ = _ols_residuals(d)
        zero = np.zeros(d.X.shape[1])
        g, gh = gradients("linear", zero, d.X, [e_y, e_yhat], d.w)   # -w x e: the gradients at each fit
        gu, = gradients("linear", zero, d.X_unlabeled, [e_u], d.w_unlabeled)
        rows = d.cache["ols_influence"] = (g @ Hi.T, gh @ Hi.T, gu @ Hui.T)
    return rows


def _ols_residuals(d: RegressionInputs):
    """The residuals of OLS's three fits, the inverses of their samples' Hessians ``X'WX / m`` and
    the moments of their gradients ``-w x e`` (labelled: y and yhat side by side; unlabelled), one
    pass over each sample (Rust); computed once per inputs."""
    out = d.cache.get("ols_residuals")
    if out is None:
        b_y, b_yhat, b_unl = _ols_parts(d)
        e = (d.y - d.X @ b_y, d.yhat - d.X @ b_yhat, d.yhat_unlabeled - d.X_unlabeled @ b_unl)
        zero = np.zeros(d.X.shape[1])
        lab, H = gradient_moments("linear", zero, d.X, [e[0], e[1]], d.w)
        unl, Hu = gradient_moments("linear", zero, d.X_unlabeled, [e[2]], d.w_unlabeled)
        Hi, Hui = np.linalg.inv(H / d.n), np.linalg.inv(Hu / d.N)
        out = d.cache["ols_residuals"] = (e, (Hi, Hui), (lab, unl))
    return out


def _ols_moments(d: RegressionInputs) -> tuple[Moments, Moments]:
    """The :class:`Moments` of :func:`ols_influence`'s rows without making them: the gradients'
    moments with each sample's inverse Hessian applied (a linear map of the rows)."""
    _, (Hi, Hui), (lab, unl) = _ols_residuals(d)
    T = np.kron(np.eye(2), Hi)   # the same map on the y block and the yhat block
    return (Moments(lab.count, T @ lab.mean, T @ lab.m2 @ T.T),
            Moments(unl.count, Hui @ unl.mean, Hui @ unl.m2 @ Hui.T))


def fit(family: str, d: RegressionInputs, lam: float) -> np.ndarray:
    """The point estimate at ``lam`` (§3.1): for OLS the imputed regression of ``lam yhat~`` on
    ``X~`` plus the rectifier regression of ``y - lam yhat`` on ``X`` (weighted least squares, as
    ppi_py; linear in the outcomes, so three fits serve every ``lam``); for the GLMs the minimiser
    of the rectified loss (Newton, started from the fit at the nearest ``lam`` already made on
    these inputs; each fit is kept)."""
    if family == "linear":
        b_y, b_yhat, b_unl = _ols_parts(d)
        theta = b_y - lam * b_yhat
        if lam != 0:
            theta = theta + lam * b_unl
        return theta
    try:
        fits = d.cache.setdefault("glm", {})   # lambda -> theta, fitted on these inputs
        if lam in fits:
            return fits[lam]
        # Newton from the fit at the nearest lambda already made (the minimiser moves little with
        # lambda, so the tuning steps and the final fit take a few steps each, not a dozen)
        start = fits[min(fits, key=lambda v: abs(v - lam))] if fits else None
        theta = fits[lam] = fit_rectified(family, d.X, d.y, d.yhat, d.w, d.X_unlabeled, d.yhat_unlabeled,
                                          d.w_unlabeled, lam, start=start)
        return theta
    except NoFiniteFit as err:
        if lam == 0:
            cause = ("the labelled rows are perfectly separated: a combination of the columns of `X` predicts `y` "
                     "exactly, so the fitted probabilities run to 0 and 1" if family == "logistic" else
                     "a combination of the columns of `X` is nonzero only on rows where `y` is 0")
            raise InvalidArgumentError(f"argument `y`: the {family} regression on the labelled rows has no finite "
                                       f"fit ({err}): {cause}. Drop or merge the column(s) that do this") from None
        raise InvalidArgumentError(
            f"argument `yhat_unlabeled`: the prediction-powered {family} loss at lambda = {lam:.4g} has no finite "
            f"minimiser ({err}); the predictions are separated by the columns of `X_unlabeled` (e.g. 0/1 answers one "
            "column predicts exactly): use probabilities as predictions, or method='classical'") from None


@dataclass
class _Stats:
    labelled: Moments            # the gradients at Y and at Yhat on the labelled rows, side by side
    unlabelled: Moments | None   # the gradients at Yhat~ on the unlabelled rows (None: they do not enter)
    inv_hessian: np.ndarray


def _stats(family: str, d: RegressionInputs, theta: np.ndarray, use_unlabeled: bool) -> _Stats:
    """The gradient moments of both samples at ``theta`` and the inverse Hessian of the rectified
    loss: over all ``n + N`` rows, or over the labelled rows when ``use_unlabeled`` is False
    (lambda = 0: the classical estimator), one pass over each sample (§3.2)."""
    lab, H = gradient_moments(family, theta, d.X, [d.y, d.yhat], d.w)
    if use_unlabeled:
        unl, Hu = gradient_moments(family, theta, d.X_unlabeled, [d.yhat_unlabeled], d.w_unlabeled)
        H = (H + Hu) / (d.n + d.N)
    else:
        unl = None
        H = H / d.n
    return _Stats(lab, unl, np.linalg.inv(H))


def _gradient_rows(family: str, d: RegressionInputs, theta: np.ndarray, use_unlabeled: bool):
    """The per-row gradients ``g``, ``g^`` (labelled rows) and ``g~`` (unlabelled rows; zeros when
    they do not enter), for the cluster sums (§8)."""
    g, gh = gradients(family, theta, d.X, [d.y, d.yhat], d.w)
    if use_unlabeled:
        ghu, = gradients(family, theta, d.X_unlabeled, [d.yhat_unlabeled], d.w_unlabeled)
    else:
        ghu = np.zeros_like(d.X_unlabeled)
    return g, gh, ghu


def tuned_lam(family: str, d: RegressionInputs, coord: int | None) -> tuple[float, list[float]]:
    """lambda-hat by ppi_py's two steps (§3.3): theta(1) -> lambda_1 -> theta(lambda_1) -> lambda_2;
    each lambda from the statistics on all n + N rows, for coordinate ``coord`` when given.
    Returns lambda_2 and both steps. Clustered OLS (which ppi_py does not offer): the minimiser
    of the reported clustered variance (§8.2), one step, as its influence rows do not depend on
    lambda."""
    if family == "linear" and d.clusters is not None:
        g, gh, ghu = ols_influence(d)
        lam = float(clustered_lam_hat(g, gh, ghu, np.eye(d.X.shape[1]), d.clusters, coord))
        return lam, [lam]
    steps = []
    lam = 1.0
    for _ in range(2):
        theta = fit(family, d, lam)
        s = _stats(family, d, theta, True)
        if d.clusters is None:
            lam = float(moments_lam_hat(s.labelled, s.unlabelled, s.inv_hessian, coord))
        else:
            g, gh, ghu = _gradient_rows(family, d, theta, True)
            lam = float(clustered_lam_hat(g, gh, ghu, s.inv_hessian, d.clusters, coord))
        steps.append(lam)
    return lam, steps


def clustered_lam_hat(grads, grads_hat, grads_hat_unlabeled, inv_hessian, clusters, coord=None, mode="overall"):
    """lambda-hat with clustered rows (§8.2): ``cluster_lam_hat`` on the cluster totals of the
    gradients at Y (labelled rows) and of the gradients at the predictions (labelled minus
    unlabelled), over the same clusters."""
    codes, codes_u = clusters
    a = influence_totals(grads, np.zeros_like(grads_hat_unlabeled), codes, codes_u)
    b = influence_totals(grads_hat, -grads_hat_unlabeled, codes, codes_u)
    return cluster_lam_hat(a, b, inv_hessian, coord, mode)


def clustered_sandwich(grads, grads_hat, grads_hat_unlabeled, inv_hessian, lam, clusters) -> np.ndarray:
    """The cluster-robust covariance of theta-hat (§8.1): ``H^-1 [G/(G-1) sum_c T_c T_c'] H^-1``
    with ``T_c`` the cluster totals of ``(g - lam g^)/n`` (labelled rows) and ``lam g~/N``
    (unlabelled rows), each centred; G counts the clusters with a row that enters (the labelled
    clusters alone when lambda = 0)."""
    codes, codes_u = clusters
    T = influence_totals(grads - lam * grads_hat, lam * grads_hat_unlabeled if lam != 0 else None, codes, codes_u)
    return inv_hessian @ cluster_covariance(T) @ inv_hessian


def variance_rows(family: str, d: RegressionInputs, theta: np.ndarray, lam: float):
    """``(g, g^, g~, H^-1)``: the per-row terms and the inverse Hessian of the covariance at
    ``lam`` (§3.2). GLMs: the gradients at ``theta`` and the Hessian on all rows, or on the labelled
    rows alone when lambda = 0 (as ppi_py). OLS: :func:`ols_influence`'s rows and the identity."""
    if family == "linear":
        return (*ols_influence(d), np.eye(d.X.shape[1]))
    return (*_gradient_rows(family, d, theta, lam != 0), _stats(family, d, theta, lam != 0).inv_hessian)


def ppi_covariance(family: str, d: RegressionInputs, theta: np.ndarray, lam: float) -> np.ndarray:
    """The covariance of theta-hat at ``lam`` (§3.2): the sandwich over ``n`` of
    :func:`variance_rows`, from their moments without the rows where there are no clusters; with
    clusters, §8.1."""
    if d.clusters is not None:
        return clustered_sandwich(*variance_rows(family, d, theta, lam), lam, d.clusters)
    if family == "linear":
        lab, unl = _ols_moments(d)
        return moments_sandwich(lab, unl, np.eye(d.X.shape[1]), lam) / d.n
    s = _stats(family, d, theta, lam != 0)
    return moments_sandwich(s.labelled, s.unlabelled, s.inv_hessian, lam) / d.n


def classical_covariance(family: str, d: RegressionInputs, theta: np.ndarray) -> np.ndarray:
    """The classical baseline's covariance (§3.4): for OLS statsmodels' HC0 of the weighted least
    squares fit (ppi_py's ``classical_ols_ci``); for the GLMs the sandwich with the ddof-1
    covariance of the gradients (ppi_py's ``classical_logistic_ci`` / ``classical_poisson_ci``;
    with weights, the same with weighted gradients and Hessian)."""
    s = _stats(family, d, theta, False)
    if d.clusters is not None:
        g, gh, ghu = _gradient_rows(family, d, theta, False)
        return clustered_sandwich(g, gh, ghu, s.inv_hessian, 0.0, d.clusters)
    k = d.X.shape[1]
    gg = s.labelled.block(0, 0, k)
    if family == "linear":
        m = s.labelled.mean[:k]
        meat = (gg + d.n * np.outer(m, m)) / d.n   # g'g / n, uncentred (HC0)
    else:
        meat = gg / (d.n - 1)                      # the ddof-1 covariance of the gradients
    return s.inv_hessian @ meat @ s.inv_hessian / d.n


def small_sample_variance(stats, D_stats, lam: float, tuned: bool, coord, clusters, n: int, N: int, d: int,
                          var: np.ndarray):
    """The small-sample option (§5.2) for a regression or a fixed-effects regression: the variances
    and degrees of freedom of the terms. ``stats``: ``(g, g^, g~, H^-1)`` as the covariance used
    them; ``D_stats``: the same on all rows (for ``D = -H^-1 (mean g~ - mean g^)`` and lambda-hat's
    variance); ``d``: the coefficients (fixed effects' levels included); ``var``: the z-interval's
    variances. Without clusters the two parts of the sandwich with divisors n - d and N - d, the
    variance lambda-hat adds (``D_k^2 Var(lambda-hat)``) and Welch-Satterthwaite degrees of freedom;
    with clusters the clustered variance plus that term and G - 1."""
    extra = np.zeros(var.size)
    if tuned:
        g, gh, ghu, Hi = D_stats
        v_lam = lam_variance(g, gh, ghu, Hi, coord, "overall", clusters)
        D = -Hi @ (ghu.mean(axis=0) - gh.mean(axis=0))
        extra = D * D * v_lam
    if clusters is not None:
        return var + extra, np.full(var.size, float(labelled_clusters(clusters) - 1))
    a, b = split_sandwich(*stats, lam, n, N)
    a = a * ((n - 1) / (n - d)) + extra
    b = b * ((N - 1) / (N - d))
    return a + b, satterthwaite_df(a, b, n - d, N - d)


def _regression(family: str, X, y, yhat, X_unlabeled, yhat_unlabeled, *, method, level, lam, coord, weights,
                weights_unlabeled, intercept, estimand: str, cluster=None, cluster_unlabeled=None,
                small_sample: bool = False) -> PPIResult:
    method = check_method(method)
    alpha = check_level(level)
    small_sample = check_small_sample(small_sample)
    d = regression_inputs(X, y, yhat, X_unlabeled, yhat_unlabeled, weights, weights_unlabeled, intercept,
                          family, cluster, cluster_unlabeled)
    lam_given = check_lam(lam, method)
    tuned = method == "ppi++" and lam_given is None
    k = check_coord(coord, d.terms, tuned)
    z = float(norm.ppf(1 - alpha / 2))
    theta0 = fit(family, d, 0.0)
    cov_classical = classical_covariance(family, d, theta0)
    var_lam0 = np.diag(ppi_covariance(family, d, theta0, 0.0))  # effective_n's yardstick (§6.2)
    notes = []
    if d.clusters is not None:
        notes.append(f"cluster-robust: {int(np.unique(np.concatenate(d.clusters)).size)} clusters over both samples "
                     "(docs/methods/ppi.md §8)")
    if method == "classical":
        lam_used, theta, cov = 0.0, theta0, cov_classical
    else:
        if method == "ppi":
            lam_used = 1.0
        elif lam_given is not None:
            lam_used = float(lam_given)
        else:
            lam_used, steps = tuned_lam(family, d, k)
            if len(steps) == 2:
                notes.append(f"lambda tuned in two steps (ppi_py's): {steps[0]:.4g}, then {steps[1]:.4g}")
            else:
                notes.append(f"lambda tuned to minimise the clustered variance (docs/methods/ppi.md §8.2): "
                             f"{steps[0]:.4g}")
        theta = fit(family, d, lam_used)
        cov = ppi_covariance(family, d, theta, lam_used)
    var, var0 = np.diag(cov), np.diag(cov_classical)
    eff = np.full(var.size, float(d.n)) if method == "classical" else d.n * (var_lam0 / var)
    df, z0 = None, z
    if small_sample:
        p = d.X.shape[1]
        df0 = float(d.n - p) if d.clusters is None else float(labelled_clusters(d.clusters) - 1)
        var0 = var0 * (d.n / (d.n - p) if family == "linear" else (d.n - 1) / (d.n - p)) if d.clusters is None \
            else var0
        if method == "classical":
            var, df = var0, np.full(var.size, df0)
        else:
            # lambda-hat's variance and D from the statistics lambda-hat is computed from (all rows)
            rows = _gradient_rows(family, d, theta, True)
            Hi_all = _stats(family, d, theta, True).inv_hessian
            var, df = small_sample_variance(variance_rows(family, d, theta, lam_used), (*rows, Hi_all), lam_used,
                                            tuned, k, d.clusters, d.n, d.N, p, var)
        z, z0 = t_quantile(alpha, df), t_quantile(alpha, df0)
        df = tuple(float(v) for v in df)
    se, se0 = np.sqrt(var), np.sqrt(var0)
    table = make_table(d.terms, theta, se, theta - z * se, theta + z * se, lam_used, eff, theta0, se0,
                       theta0 - z0 * se0, theta0 + z0 * se0)
    return PPIResult(estimand=estimand, method=method, level=float(level), n=d.n, N=d.N, table=table,
                     lam_mode=None, lam_tuned=tuned, coord=None if k is None else d.terms[k], weighted=d.weighted,
                     intercept=d.intercept, notes=tuple(notes), clustered=d.clusters is not None,
                     small_sample=small_sample, df=df)




def ols(X, y, yhat, X_unlabeled, yhat_unlabeled, *, method: str = "ppi++", level: float = 0.95, lam=None,
        coord=None, weights=None, weights_unlabeled=None, intercept: bool | None = None, cluster=None,
        cluster_unlabeled=None, small_sample: bool = False) -> PPIResult:
    """Prediction-powered linear regression of ``y`` on ``X``: the regression of ``lam * yhat_unlabeled``
    on ``X_unlabeled`` plus the rectifier regression of ``y - lam * yhat`` on ``X`` (weighted least
    squares; Angelopoulos, Duchi & Zrnic 2023; docs/methods/ppi.md §3), with the variance of those
    two fits, each from its own sample's influence rows (§3.2). The estimate and lambda-hat equal
    ppi_py 0.2.3's ``ppi_ols_ci``; its interval does at lambda = 0, and at lambda > 0 ppi_py's
    pooled sandwich is wider, most with a useless prediction (§7, item 14); the classical baseline
    is its ``classical_ols_ci`` (HC0).

    ``X`` / ``X_unlabeled``: the regressors of the ``n`` labelled and ``N`` unlabelled rows (a
    DataFrame keeps its column names; columns are paired by name). No intercept is added silently:
    ``intercept=None`` (default) requires a constant column in ``X`` (or dummies that sum to one),
    ``intercept=True`` adds one named ``Intercept``, ``intercept=False`` fits the columns as given.
    ``method``: ``"ppi++"`` (lambda tuned by ppi_py's two steps, or ``lam`` in [0, 1] given),
    ``"ppi"`` (lambda = 1) or ``"classical"`` (the labelled rows alone). ``coord``: the coefficient
    (name or 0-based position) lambda is tuned for; default: the summed variance of all. ``weights``
    / ``weights_unlabeled``: positive weights, rescaled to sum to n and N. ``cluster`` /
    ``cluster_unlabeled``: cluster ids of the labelled and unlabelled rows (the same id in both is
    one cluster; a sample left out has one cluster per row) for the cluster-robust variance and
    lambda-hat of docs/methods/ppi.md §8. ``small_sample=True``: t-intervals with a small-sample
    variance (divisor n - d, the variance lambda-hat adds, Welch-Satterthwaite degrees of freedom; G - 1
    with clusters; docs/methods/ppi.md §5); the default False keeps ppi_py's z-intervals. pandas
    inputs that share rows are paired by their row labels.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> def rows(m):
    ...     x = rng.normal(size=m); y = 1 + 2 * x + rng.normal(size=m)
    ...     return pd.DataFrame({"x": x}), y, y + rng.normal(scale=0.5, size=m)
    >>> X, y, yhat = rows(200); X_u, _, yhat_u = rows(10_000)
    >>> res = ppi.ols(X, y, yhat, X_u, yhat_u, intercept=True)
    >>> res.terms, res.estimate.round(2).tolist(), round(res.lam, 2)
    (['Intercept', 'x'], [0.99, 1.96], 0.81)
    """
    return _regression("linear", X, y, yhat, X_unlabeled, yhat_unlabeled, method=method, level=level, lam=lam,
                       coord=coord, weights=weights, weights_unlabeled=weights_unlabeled, intercept=intercept,
                       cluster=cluster, cluster_unlabeled=cluster_unlabeled, small_sample=small_sample,
                       estimand="ols")


def logistic(X, y, yhat, X_unlabeled, yhat_unlabeled, *, method: str = "ppi++", level: float = 0.95, lam=None,
             coord=None, weights=None, weights_unlabeled=None, intercept: bool | None = None, cluster=None,
        cluster_unlabeled=None, small_sample: bool = False) -> PPIResult:
    """Prediction-powered logistic regression of ``y`` (0/1, or probabilities) on ``X``: the
    minimiser of the rectified log loss, found by Newton's method, with the PPI++ sandwich variance
    (docs/methods/ppi.md §3). ``yhat`` and ``yhat_unlabeled`` are the predictions (probabilities or
    0/1 answers). Equal to ppi_py 0.2.3's ``ppi_logistic_ci``, except that ``coord`` is honoured
    when lambda is tuned (ppi_py ignores it, §3.5); perfectly separated labelled rows are an error
    naming ``y``.

    ``X`` / ``X_unlabeled``: the regressors of the ``n`` labelled and ``N`` unlabelled rows (a
    DataFrame keeps its column names; columns are paired by name). No intercept is added silently:
    ``intercept=None`` (default) requires a constant column in ``X`` (or dummies that sum to one),
    ``intercept=True`` adds one named ``Intercept``, ``intercept=False`` fits the columns as given.
    ``method``: ``"ppi++"`` (lambda tuned by ppi_py's two steps, or ``lam`` in [0, 1] given),
    ``"ppi"`` (lambda = 1) or ``"classical"`` (the labelled rows alone). ``coord``: the coefficient
    (name or 0-based position) lambda is tuned for; default: the summed variance of all. ``weights``
    / ``weights_unlabeled``: positive weights, rescaled to sum to n and N. ``cluster`` /
    ``cluster_unlabeled``: cluster ids of the labelled and unlabelled rows (the same id in both is
    one cluster; a sample left out has one cluster per row) for the cluster-robust variance and
    lambda-hat of docs/methods/ppi.md §8. ``small_sample=True``: t-intervals with a small-sample
    variance (divisor n - d, the variance lambda-hat adds, Welch-Satterthwaite degrees of freedom; G - 1
    with clusters; docs/methods/ppi.md §5); the default False keeps ppi_py's z-intervals. pandas
    inputs that share rows are paired by their row labels.

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> def rows(m):
    ...     X = np.column_stack([np.ones(m), rng.normal(size=m)])
    ...     y = rng.binomial(1, 1 / (1 + np.exp(-X @ [-0.5, 1.0]))).astype(float)
    ...     return X, y, 1 / (1 + np.exp(-(0.5 * X @ [-0.5, 1.0] + (y - 0.5) + rng.normal(0, 1.5, m))))
    >>> X, y, yhat = rows(300); X_u, _, yhat_u = rows(5_000)
    >>> res = ppi.logistic(X, y, yhat, X_u, yhat_u)
    >>> res.estimate.round(2).tolist(), res.se.round(3).tolist(), round(res.lam, 2)
    ([-0.53, 1.09], [0.126, 0.147], 0.53)
    """
    return _regression("logistic", X, y, yhat, X_unlabeled, yhat_unlabeled, method=method, level=level, lam=lam,
                       coord=coord, weights=weights, weights_unlabeled=weights_unlabeled, intercept=intercept,
                       cluster=cluster, cluster_unlabeled=cluster_unlabeled, small_sample=small_sample,
                       estimand="logistic")


def poisson(X, y, yhat, X_unlabeled, yhat_unlabeled, *, method: str = "ppi++", level: float = 0.95, lam=None,
            coord=None, weights=None, weights_unlabeled=None, intercept: bool | None = None, cluster=None,
        cluster_unlabeled=None, small_sample: bool = False) -> PPIResult:
    """Prediction-powered Poisson regression of the counts ``y`` on ``X`` (log link): the minimiser
    of the rectified Poisson loss, found by Newton's method, with the PPI++ sandwich variance
    (docs/methods/ppi.md §3). Equal to ppi_py 0.2.3's ``ppi_poisson_ci``, except that ``coord`` is
    honoured when lambda is tuned (§3.5).

    ``X`` / ``X_unlabeled``: the regressors of the ``n`` labelled and ``N`` unlabelled rows (a
    DataFrame keeps its column names; columns are paired by name). No intercept is added silently:
    ``intercept=None`` (default) requires a constant column in ``X`` (or dummies that sum to one),
    ``intercept=True`` adds one named ``Intercept``, ``intercept=False`` fits the columns as given.
    ``method``: ``"ppi++"`` (lambda tuned by ppi_py's two steps, or ``lam`` in [0, 1] given),
    ``"ppi"`` (lambda = 1) or ``"classical"`` (the labelled rows alone). ``coord``: the coefficient
    (name or 0-based position) lambda is tuned for; default: the summed variance of all. ``weights``
    / ``weights_unlabeled``: positive weights, rescaled to sum to n and N. ``cluster`` /
    ``cluster_unlabeled``: cluster ids of the labelled and unlabelled rows (the same id in both is
    one cluster; a sample left out has one cluster per row) for the cluster-robust variance and
    lambda-hat of docs/methods/ppi.md §8. ``small_sample=True``: t-intervals with a small-sample
    variance (divisor n - d, the variance lambda-hat adds, Welch-Satterthwaite degrees of freedom; G - 1
    with clusters; docs/methods/ppi.md §5); the default False keeps ppi_py's z-intervals. pandas
    inputs that share rows are paired by their row labels.

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> def rows(m):
    ...     X = np.column_stack([np.ones(m), rng.normal(size=m)])
    ...     y = rng.poisson(np.exp(X @ [0.5, 0.3])).astype(float)
    ...     return X, y, np.maximum(y + rng.normal(0, 1.5, m), 0)
    >>> X, y, yhat = rows(300); X_u, _, yhat_u = rows(5_000)
    >>> res = ppi.poisson(X, y, yhat, X_u, yhat_u, coord=1)
    >>> res.coord, res.estimate.round(2).tolist()
    ('x1', [0.47, 0.35])
    """
    return _regression("poisson", X, y, yhat, X_unlabeled, yhat_unlabeled, method=method, level=level, lam=lam,
                       coord=coord, weights=weights, weights_unlabeled=weights_unlabeled, intercept=intercept,
                       cluster=cluster, cluster_unlabeled=cluster_unlabeled, small_sample=small_sample,
                       estimand="poisson")
