"""Prediction-powered fixed-effects regressions (docs/methods/ppi.md §9): ``ppi.feols`` on the
package's own fixed-effects machinery (:func:`llmsurrogate.fe.feols` for the two within
regressions and their predictions, :func:`llmsurrogate.fe.demean` for the variance)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from .. import fe
from .._validation import as_float_array
from ..exceptions import InvalidArgumentError
from ._inputs import check_coord, check_lam, check_level, check_method
from ._regression import clustered_lam_hat, clustered_sandwich, small_sample_variance
from ._results import PPIResult, make_table
from ._small_sample import check_small_sample, labelled_clusters, t_quantile
from ._stats import cluster_codes, lam_hat, sandwich

__all__ = ["feols"]


def _frame(data, name: str) -> pd.DataFrame:
    if hasattr(data, "to_pandas") and not isinstance(data, pd.DataFrame):
        data = data.to_pandas()
    if not isinstance(data, pd.DataFrame):
        raise InvalidArgumentError(f"argument `{name}` must be a pandas or polars DataFrame; got {type(data).__name__}")
    if len(data) < 2:
        raise InvalidArgumentError(f"argument `{name}` has {len(data)} rows; PPI needs at least two")
    return data.reset_index(drop=True)


def _column(frame: pd.DataFrame, col: str, name: str, arg: str) -> np.ndarray:
    if not isinstance(col, str) or col not in frame.columns:
        raise InvalidArgumentError(f"argument `{arg}`: {col!r} is not a column of `{name}`")
    return as_float_array(frame[col], f"{name}[{col!r}]", allow_nan=False)


def _fe_codes(form, labeled: pd.DataFrame, unlabeled: pd.DataFrame) -> list[np.ndarray]:
    """The codes of each fixed effect (``a^b``: the combination) over the labelled rows then the
    unlabelled rows, one numbering for both."""
    codes = []
    for group in form.fixef:
        both = pd.concat([labeled[list(group)], unlabeled[list(group)]], ignore_index=True)
        codes.append(both.groupby(list(group), sort=False, dropna=False).ngroup().to_numpy(np.int64))
    return codes


class _Problem:
    def __init__(self, formula, labeled, unlabeled, prediction, weights, vcov):
        self.form = form = fe.parse_formula(formula)
        if not form.fixef:
            raise InvalidArgumentError(f"argument `formula` has no fixed effects ({formula!r}); write them after "
                                       "'|', or use ppi.ols for a model without")
        self.yname = yname = form.outcome_column
        if yname is None:
            raise InvalidArgumentError(f"argument `formula`: the outcome {form.outcome!r} must be a column of "
                                       "`labeled` (transform it in the data frame first)")
        self.formula = formula
        self.labeled, self.unlabeled = _frame(labeled, "labeled"), _frame(unlabeled, "unlabeled")
        self.n, self.N = len(self.labeled), len(self.unlabeled)
        self.y = _column(self.labeled, yname, "labeled", "formula")
        if np.all(self.y == self.y[0]):
            raise InvalidArgumentError(f"argument `labeled`: the outcome {yname!r} has the same value in every row")
        self.yhat = _column(self.labeled, prediction, "labeled", "prediction")
        self.yhat_unlabeled = _column(self.unlabeled, prediction, "unlabeled", "prediction")
        if weights is None:
            self.w, self.w_unlabeled = np.ones(self.n), np.ones(self.N)
        else:
            self.w = _column(self.labeled, weights, "labeled", "weights")
            self.w_unlabeled = _column(self.unlabeled, weights, "unlabeled", "weights")
            for arr, nm in ((self.w, "labeled"), (self.w_unlabeled, "unlabeled")):
                if not np.all(arr > 0):
                    raise InvalidArgumentError(f"argument `weights`: the column {weights!r} of `{nm}` must be positive")
            self.w = self.w * (self.n / self.w.sum())
            self.w_unlabeled = self.w_unlabeled * (self.N / self.w_unlabeled.sum())
        self.weighted = weights is not None
        for col in {c for g in form.fixef for c in g}:
            if col not in self.unlabeled.columns or col not in self.labeled.columns:
                raise InvalidArgumentError(f"argument `formula`: the fixed effect {col!r} must be a column of both "
                                           "`labeled` and `unlabeled`")
        codes = _fe_codes(form, self.labeled, self.unlabeled)
        self.codes_pooled = codes
        self.codes_labeled = [c[:self.n] for c in codes]
        self.clusters, self.vcov_label = None, "heteroskedasticity-robust (the PPI sandwich)"
        self.iid, self._iid_sums = False, None
        if isinstance(vcov, dict) and list(vcov) == ["CRV1"] and isinstance(vcov["CRV1"], str):
            col = vcov["CRV1"]
            for frame, nm in ((self.labeled, "labeled"), (self.unlabeled, "unlabeled")):
                if col not in frame.columns:
                    raise InvalidArgumentError(f"argument `vcov`: the cluster column {col!r} is not in `{nm}`")
            self.clusters = cluster_codes(self.labeled[col].to_numpy(object), self.unlabeled[col].to_numpy(object),
                                          self.n, self.N)
            if np.unique(self.clusters[0]).size < 2:
                raise InvalidArgumentError(f"argument `vcov`: the labelled rows lie in one cluster of {col!r}")
            self.vcov_label = f"CRV1 by {col} (G/(G-1), docs/methods/ppi.md §8)"
        elif isinstance(vcov, str) and vcov == "iid":
            self.iid = True
            self.vcov_label = "iid (homoskedastic residuals in both regressions, docs/methods/ppi.md §9.4)"
        elif not (isinstance(vcov, str) and vcov == "hetero"):
            raise InvalidArgumentError(f"argument `vcov` must be 'hetero', 'iid' or {{'CRV1': column}}; got {vcov!r}")

    def _within(self, frame: pd.DataFrame, target: np.ndarray, w: np.ndarray, what: str):
        data = frame.copy()
        data[self.yname] = target
        fit = fe.feols(self.formula, data, weights=w, fixef_rm="none")
        if fit.nobs != len(frame):
            raise InvalidArgumentError(f"argument `{what}`: {len(frame) - fit.nobs} rows were dropped by the "
                                       "regression (missing regressors); drop them first")
        return fit

    def _predict(self, fit, frame: pd.DataFrame, what: str) -> np.ndarray:
        pred = np.asarray(fit.predict(newdata=frame), dtype=float)
        if not np.all(np.isfinite(pred)):
            raise InvalidArgumentError(
                f"argument `{what}` has a level of a fixed effect (or of a categorical regressor) that the other sample "
                "lacks; prediction-powered fixed-effects regressions need every level in both samples (drop those rows)")
        return pred

    def fit(self, lam: float):
        """theta(lam) for the slopes, the fitted values of the full model on both samples, the
        regressors (model matrices) and their names."""
        fit_l = self._within(self.labeled, self.y - lam * self.yhat, self.w, "labeled")
        beta = fit_l.coef().astype(float)
        mu = np.asarray(fit_l.predict(), dtype=float)
        mu_u = self._predict(fit_l, self.unlabeled, "unlabeled")
        X = fit_l.model_matrix().to_numpy(float)
        if lam != 0:
            fit_u = self._within(self.unlabeled, lam * self.yhat_unlabeled, self.w_unlabeled, "unlabeled")
            if list(fit_u.coef().index) != list(beta.index):
                raise InvalidArgumentError("argument `unlabeled`: its regressors differ from the labelled rows' (a "
                                           "regressor collinear in one sample only); drop it")
            beta = beta + fit_u.coef().astype(float)
            mu = mu + self._predict(fit_u, self.labeled, "labeled")
            mu_u = mu_u + np.asarray(fit_u.predict(), dtype=float)
            X_u = fit_u.model_matrix().to_numpy(float)
        else:
            X_u = None
        return beta, mu, mu_u, X, X_u

    def _design(self, fitted, use_unlabeled: bool):
        """The regressors demeaned over the rows that make the Hessian (both samples jointly, or
        the labelled rows when lambda = 0; zeros for the unlabelled rows then) and that Hessian in
        the slopes' space, the slope block of the explicit-dummy sandwich (§9.2)."""
        X, X_u = fitted[3], fitted[4]
        n = self.n
        if use_unlabeled:
            if X_u is None:
                X_u = self._model_matrix_unlabeled()
            wall = np.concatenate([self.w, self.w_unlabeled])
            Xd = fe.demean(np.vstack([X, X_u]), self.codes_pooled, weights=wall).values
            Xl, Xud = Xd[:n], Xd[n:]
            H = ((Xl * self.w[:, None]).T @ Xl + (Xud * self.w_unlabeled[:, None]).T @ Xud) / (n + self.N)
        else:
            Xl = fe.demean(X, self.codes_labeled, weights=self.w).values
            Xud = np.zeros((self.N, X.shape[1]))
            H = (Xl * self.w[:, None]).T @ Xl / n
        return Xl, Xud, H

    def stats(self, fitted, use_unlabeled: bool):
        """The per-row gradients and inverse Hessian in the slopes' space (:meth:`_design`)."""
        mu, mu_u = fitted[1], fitted[2]
        Xl, Xud, H = self._design(fitted, use_unlabeled)
        g = Xl * (self.w * (mu - self.y))[:, None]
        gh = Xl * (self.w * (mu - self.yhat))[:, None]
        ghu = Xud * (self.w_unlabeled * (mu_u - self.yhat_unlabeled))[:, None]
        return g, gh, ghu, np.linalg.inv(H)

    def _model_matrix_unlabeled(self) -> np.ndarray:
        data = self.unlabeled.copy()
        data[self.yname] = self.yhat_unlabeled
        return fe.feols(self.formula, data, fixef_rm="none").model_matrix().to_numpy(float)

    def lam_hat(self, g, gh, ghu, Hi, coord) -> float:
        if self.clusters is None:
            return float(lam_hat(g, gh, ghu, Hi, coord))
        return float(clustered_lam_hat(g, gh, ghu, Hi, self.clusters, coord))

    def iid_sums(self):
        """The residual variances of vcov="iid" (§9.4), as fe.feols's iid takes them: of the
        within regressions of y and of the prediction on the labelled rows (and their
        covariance), ``sum w e e' / (n - df_k)``, and of the prediction on the unlabelled rows,
        ``sum w~ e~^2 / (N - df_k~)``; ``df_k`` the slopes plus the fixed effects' levels (less one
        per fixed effect after the first). Returns ``(s_yy, s_yh, s_hh, s_uu)``, computed once."""
        if self._iid_sums is None:
            parts = []
            for frame, target, w, what in ((self.labeled, self.y, self.w, "labeled"),
                                           (self.labeled, self.yhat, self.w, "labeled"),
                                           (self.unlabeled, self.yhat_unlabeled, self.w_unlabeled, "unlabeled")):
                fit = self._within(frame, target, w, what)
                if fit.nobs - fit.df_k <= 0:
                    raise InvalidArgumentError(
                        f"argument `{what}`: {fit.nobs} rows leave no residual degrees of freedom for the slopes and "
                        "the fixed effects' levels; vcov='iid' needs some (use 'hetero')")
                e = np.empty(len(frame))
                e[fit.obs_index] = fit.resid()
                parts.append((e, w, fit.nobs - fit.df_k))
            (ey, w, dl), (eh, _, _), (eu, wu, du) = parts
            self._iid_sums = (float(np.sum(w * ey * ey)) / dl, float(np.sum(w * ey * eh)) / dl,
                              float(np.sum(w * eh * eh)) / dl, float(np.sum(wu * eu * eu)) / du)
        return self._iid_sums

    def iid_parts(self, fitted, use_unlabeled: bool):
        """``A = H^-1 S H^-1 / n`` and ``B = H^-1 S~ H^-1 / N`` with ``S``, ``S~`` the weighted
        second moments of the demeaned regressors of each sample (§9.4): the iid covariance at
        lambda is ``A s_r^2(lambda) + B lambda^2 s_uu``."""
        Xl, Xud, H = self._design(fitted, use_unlabeled)
        Hi = np.linalg.inv(H)
        A = Hi @ ((Xl * self.w[:, None]).T @ Xl / self.n) @ Hi / self.n
        B = Hi @ ((Xud * self.w_unlabeled[:, None]).T @ Xud / self.N) @ Hi / self.N
        return A, B

    def iid_lam_hat(self, fitted, coord) -> float:
        """The lambda that minimises the iid variance (summed over the slopes, or of ``coord``),
        with the Hessian on all rows: ``a s_yh / (a s_hh + b s_uu)`` clipped to [0, 1], ``a``,
        ``b`` the traces (or (k, k) entries) of :meth:`iid_parts`; closed form, no step."""
        A, B = self.iid_parts(fitted, True)
        _syy, syh, shh, suu = self.iid_sums()
        a, b = (np.trace(A), np.trace(B)) if coord is None else (A[coord, coord], B[coord, coord])
        den = a * shh + b * suu
        return float(np.clip(a * syh / den, 0.0, 1.0)) if den > 0 else 0.0

    def covariance(self, fitted, lam: float) -> np.ndarray:
        if self.iid:
            A, B = self.iid_parts(fitted, lam != 0)
            syy, syh, shh, suu = self.iid_sums()
            return A * (syy - 2.0 * lam * syh + lam * lam * shh) + B * (lam * lam * suu)
        g, gh, ghu, Hi = self.stats(fitted, lam != 0)
        if self.clusters is not None:
            return clustered_sandwich(g, gh, ghu, Hi, lam, self.clusters)
        return sandwich(g, gh, ghu, Hi, lam) / self.n

    def classical_covariance(self, fitted) -> np.ndarray:
        if self.iid:
            return self.covariance(fitted, 0.0)   # fe.feols's iid on the labelled rows
        g, gh, ghu, Hi = self.stats(fitted, False)
        if self.clusters is not None:
            return clustered_sandwich(g, gh, ghu, Hi, 0.0, self.clusters)
        return Hi @ (g.T @ g / self.n) @ Hi / self.n


def feols(formula, labeled, unlabeled, *, prediction: str, method: str = "ppi++", vcov="hetero",
          level: float = 0.95, lam=None, coord=None, weights=None, small_sample: bool = False) -> PPIResult:
    """Prediction-powered fixed-effects regression ``"y ~ x1 + x2 | firm + year"`` (fixest /
    pyfixest syntax, :func:`llmsurrogate.fe.feols`'s): the within regression of
    ``lam * prediction`` on the unlabelled rows plus the within regression of
    ``y - lam * prediction`` on the labelled rows, with the PPI++ sandwich (docs/methods/ppi.md §9).
    It equals :func:`ols` on the explicit design with one dummy per level of each fixed effect
    (same slopes, lambda-hat for a ``coord`` and standard errors), and with ``lam=0``
    :func:`llmsurrogate.fe.feols` on the labelled rows (the same coefficients).

    ``labeled``: the rows with the human answer (the formula's outcome) and the LLM's
    (``prediction``, a column name); ``unlabeled``: rows with the prediction only (the outcome
    column may be missing). ``method``: ``"ppi++"`` (lambda tuned by ppi_py's two steps for the
    slopes' summed variance, or for the coefficient ``coord``; or ``lam`` given), ``"ppi"``
    (lambda = 1) or ``"classical"``. ``vcov``: ``"hetero"`` (the PPI sandwich, default),
    ``{"CRV1": column}`` (cluster ids from that column of both frames; §8) or ``"iid"``
    (homoskedastic residuals in both regressions, fe.feols's iid at lambda = 0, lambda-hat minimising
    that variance; §9.4). ``weights``: a column
    name of both frames (positive; rescaled to sum to n and N). Every level of a fixed effect
    must appear in both samples. The fixed effects themselves are not reported. ``small_sample=True``:
    t-intervals with a small-sample variance (divisor n - d with d the slopes plus the fixed
    effects' levels, the variance lambda-hat adds, Welch-Satterthwaite degrees of freedom; G - 1
    with CRV1; docs/methods/ppi.md §5); the default False keeps the z-intervals.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> def rows(m):
    ...     df = pd.DataFrame({"firm": rng.integers(0, 20, m), "x": rng.normal(size=m)})
    ...     df["y"] = 1.5 * df["x"] + 0.2 * df["firm"] + rng.normal(size=m)
    ...     df["llm_y"] = df["y"] + rng.normal(scale=0.7, size=m)
    ...     return df
    >>> res = ppi.feols("y ~ x | firm", rows(300), rows(5_000).drop(columns="y"), prediction="llm_y",
    ...                 vcov={"CRV1": "firm"})
    >>> res.terms, round(res.estimate, 2), round(res.se, 3), round(res.lam, 2)
    (['x'], 1.46, 0.03, 0.89)
    """
    method = check_method(method)
    alpha = check_level(level)
    small_sample = check_small_sample(small_sample)
    p = _Problem(formula, labeled, unlabeled, prediction, weights, vcov)
    if small_sample and p.iid:
        raise InvalidArgumentError("argument `small_sample`: not offered with vcov='iid' (its residual variances "
                                   "already divide by n - df_k, fixest's iid); use vcov='hetero' or a cluster")
    lam_given = check_lam(lam, method)
    tuned = method == "ppi++" and lam_given is None
    fitted0 = p.fit(0.0)
    terms = [str(t) for t in fitted0[0].index]
    k = check_coord(coord, terms, tuned)
    z = float(norm.ppf(1 - alpha / 2))
    theta0 = fitted0[0].to_numpy(float)
    cov0 = p.classical_covariance(fitted0)
    var_lam0 = np.diag(p.covariance(fitted0, 0.0))
    notes = []
    if method == "classical":
        lam_used, theta, cov = 0.0, theta0, cov0
    else:
        if method == "ppi":
            lam_used = 1.0
        elif lam_given is not None:
            lam_used = float(lam_given)
        elif p.iid:
            lam_used = p.iid_lam_hat(fitted0, k)
            notes.append(f"lambda tuned for the iid variance (closed form, docs/methods/ppi.md §9.4): {lam_used:.4g}")
        else:
            steps, lam_used = [], 1.0
            for _ in range(2):
                lam_used = p.lam_hat(*p.stats(p.fit(lam_used), True), k)
                steps.append(lam_used)
            notes.append(f"lambda tuned in two steps (ppi_py's): {steps[0]:.4g}, then {steps[1]:.4g}")
        fitted = p.fit(lam_used)
        theta = fitted[0].to_numpy(float)
        cov = p.covariance(fitted, lam_used)
    var, var0 = np.diag(cov), np.diag(cov0)
    eff = np.full(var.size, float(p.n)) if method == "classical" else p.n * (var_lam0 / var)
    df, z0 = None, z
    if small_sample:
        # d: the slopes plus the levels of the fixed effects among the labelled rows, less one per
        # fixed effect after the first (the dummy design's rank when the fixed effects are connected)
        dd = len(terms) + sum(int(np.unique(c).size) for c in p.codes_labeled) - (len(p.codes_labeled) - 1)
        if p.clusters is None:
            df0 = float(p.n - dd)
            var0 = var0 * (p.n / (p.n - dd))
        else:
            df0 = float(labelled_clusters(p.clusters) - 1)
        if method == "classical":
            var, df = var0, np.full(var.size, df0)
        else:
            st = p.stats(fitted, lam_used != 0)
            st_all = st if lam_used != 0 else p.stats(fitted, True)
            var, df = small_sample_variance(st, st_all, lam_used, tuned, k, p.clusters, p.n, p.N, dd, var)
        z, z0 = t_quantile(alpha, df), t_quantile(alpha, df0)
        df = tuple(float(v) for v in df)
    se, se0 = np.sqrt(var), np.sqrt(var0)
    table = make_table(terms, theta, se, theta - z * se, theta + z * se, lam_used, eff, theta0, se0, theta0 - z0 * se0,
                       theta0 + z0 * se0)
    return PPIResult(estimand="feols", method=method, level=float(level), n=p.n, N=p.N, table=table, lam_tuned=tuned,
                     coord=None if k is None else terms[k], weighted=p.weighted, intercept=None, notes=tuple(notes),
                     clustered=p.clusters is not None, vcov=p.vcov_label, small_sample=small_sample, df=df)
