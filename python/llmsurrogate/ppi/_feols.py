"""Prediction-powered fixed-effects regressions (docs/methods/ppi.md §9): ``ppi.feols`` on the
package's own fixed-effects machinery (:func:`llmsurrogate.fe.feols` for the two within
regressions, :func:`llmsurrogate.fe.demean` for the variance: each sample's within regression and
its influence rows, §9.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from .. import fe
from .._positions import at, located
from .._validation import as_float_array, fixest_df_k, level_key, levels_nested_in
from ..exceptions import InvalidArgumentError
from ._inputs import check_coord, check_lam, check_level, check_method
from ._results import PPIResult, make_table
from ._small_sample import check_small_sample, labelled_clusters, satterthwaite_df, t_quantile
from ._stats import cluster_codes, cluster_totals

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


def _level_codes(values: pd.Series) -> tuple[np.ndarray, list]:
    """Integer codes of ``values`` (first appearance first; -1 where missing) with levels matched as
    ``fe`` matches them (``level_key``: by value within a dtype family): a ``datetime.date`` and the
    Timestamp of that day are one level, as are ``3`` and ``3.0``; a Categorical's categories are
    its values (their order and unused categories play no part). Also each code's family."""
    codes, uniques = pd.factorize(values.astype(object), use_na_sentinel=True)
    index: dict = {}
    remap = [index.setdefault(level_key(u.item() if isinstance(u, np.generic) else u), len(index)) for u in uniques]
    out = np.append(np.asarray(remap, dtype=np.int64), -1)[codes]
    return out, [k[0] for k in index]


def _families(fams) -> str:
    words = {"number": "numbers", "date": "dates", "duration": "durations"}
    return " and ".join(sorted(words.get(f, f) for f in fams))


def _check_missing(frame: pd.DataFrame, col: str, name: str, what: str) -> None:
    bad = np.flatnonzero(frame[col].isna().to_numpy())
    if bad.size:
        raise InvalidArgumentError(located(f"argument `{name}`: {what} {col!r} has a missing value (NaN, NaT or None) "
                                           "at ", at(bad[0], "row", marked=True), "; drop those rows first"))


def _fe_codes(form, labeled: pd.DataFrame, unlabeled: pd.DataFrame) -> list[np.ndarray]:
    """The codes of each fixed effect (``a^b``: the combination) over the labelled rows then the
    unlabelled rows, one numbering for both (levels matched by value, :func:`_level_codes`)."""
    codes = []
    for group in form.fixef:
        parts = pd.DataFrame({j: _level_codes(pd.concat([labeled[c], unlabeled[c]], ignore_index=True))[0]
                              for j, c in enumerate(group)})
        codes.append(parts.groupby(list(parts.columns), sort=False).ngroup().to_numpy(np.int64))
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
            for frame, nm in ((self.labeled, "labeled"), (self.unlabeled, "unlabeled")):
                _check_missing(frame, col, nm, "the fixed effect")
        codes = _fe_codes(form, self.labeled, self.unlabeled)
        self.codes_pooled = codes
        self.codes_labeled = [c[:self.n] for c in codes]
        self.codes_unlabeled = [c[self.n:] for c in codes]
        self.clusters, self.cluster_col = None, None
        self.vcov_label = "heteroskedasticity-robust (HC1 in each sample, docs/methods/ppi.md §9.2)"
        self.iid, self._parts = False, None
        if isinstance(vcov, dict) and list(vcov) == ["CRV1"] and isinstance(vcov["CRV1"], str):
            col = vcov["CRV1"]
            for frame, nm in ((self.labeled, "labeled"), (self.unlabeled, "unlabeled")):
                if col not in frame.columns:
                    raise InvalidArgumentError(f"argument `vcov`: the cluster column {col!r} is not in `{nm}`")
                _check_missing(frame, col, nm, "the cluster column")
            # one numbering over both samples, ids matched by value as fe matches levels (a date and
            # its Timestamp, 3 and 3.0 are one cluster); ids of a type only one sample has are an error
            ids, families = _level_codes(pd.concat([self.labeled[col], self.unlabeled[col]], ignore_index=True))
            fam_l, fam_u = ({families[c] for c in np.unique(part)} for part in (ids[:self.n], ids[self.n:]))
            if fam_l != fam_u:
                raise InvalidArgumentError(
                    f"argument `vcov`: the cluster column {col!r} holds {_families(fam_l)} in `labeled` but "
                    f"{_families(fam_u)} in `unlabeled`; convert it to one type in both")
            self.clusters = cluster_codes(ids[:self.n], ids[self.n:], self.n, self.N)
            if np.unique(self.clusters[0]).size < 2:
                raise InvalidArgumentError(f"argument `vcov`: the labelled rows lie in one cluster of {col!r}")
            self.cluster_col = col
            self.vcov_label = f"CRV1 by {col} (fixest's factors, one numbering over both samples, docs/methods/ppi.md §9.2)"
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

    def _model_matrix_unlabeled(self) -> np.ndarray:
        data = self.unlabeled.copy()
        data[self.yname] = self.yhat_unlabeled
        return fe.feols(self.formula, data, fixef_rm="none").model_matrix().to_numpy(float)

    def _df_k(self, codes, k: int, clusters) -> int:
        """fixest's degrees of freedom of a sample's regression (``_validation.fixest_df_k``, as in
        ``fe``): the slopes plus the fixed effects' levels, less one per fixed effect after the
        first; with CRV1 a fixed effect nested in the clusters does not count (its levels less one)."""
        # the distinct codes: a sample's rows of the numbering shared by both samples may skip levels
        levels = [int(np.unique(c).size) for c in codes]
        nested = () if clusters is None else [name == self.cluster_col or levels_nested_in(c, clusters)
                                              for name, c in zip(self.form.fixef_names, codes)]
        return fixest_df_k(k, levels, nested)

    def _sample(self, X, codes, w, targets, clusters, what):
        """One sample's within regression of each of ``targets`` (§9.2): the regressors and the
        targets demeaned within the sample (weighted), the bread ``(X'WX)^-1``, the residuals, the
        influence rows ``bread x_i w_i e_i`` of each target and fixest's small-sample factor of
        the sample's ``vcov`` (HC1 ``m/(m - df_k)``, CRV1 ``(m - 1)/(m - df_k)``, iid none: its
        residual variance divides by ``m - df_k``)."""
        m, k = X.shape
        dm = fe.demean(np.column_stack([X] + list(targets)), codes, weights=w).values
        Xd, T = dm[:, :k], dm[:, k:]
        bread = np.linalg.inv((Xd * w[:, None]).T @ Xd)
        bread = (bread + bread.T) / 2
        E = T - Xd @ (bread @ ((Xd * w[:, None]).T @ T))
        df_k = self._df_k(codes, k, clusters)
        if m - df_k <= 0:
            raise InvalidArgumentError(f"argument `{what}`: {m} rows leave no residual degrees of freedom for the "
                                       f"slopes and the fixed effects' levels ({df_k})")
        if self.clusters is not None:
            fac = (m - 1) / (m - df_k)
        else:
            fac = m / (m - df_k)
        psi = [(Xd * (w * E[:, t])[:, None]) @ bread for t in range(E.shape[1])]
        return {"bread": bread, "E": E, "w": w, "df": m - df_k, "fac": fac, "psi": psi}

    def parts(self, use_unlabeled: bool = True):
        """The pieces of the variance (§9.2), computed once: the labelled rows' within regressions
        of y and of the prediction, and (``use_unlabeled``) the unlabelled rows' of the
        prediction, each demeaned within its own sample."""
        if self._parts is None:
            X = self.fit(0.0)[3]
            cl, clu = (None, None) if self.clusters is None else self.clusters
            self._parts = {"lab": self._sample(X, self.codes_labeled, self.w, [self.y, self.yhat], cl, "labeled")}
        if use_unlabeled and "unl" not in self._parts:
            X_u = self._model_matrix_unlabeled()
            if X_u.shape[1] != self._parts["lab"]["bread"].shape[0]:
                raise InvalidArgumentError("argument `unlabeled`: its regressors differ from the labelled rows' (a "
                                           "regressor collinear in one sample only); drop it")
            clu = None if self.clusters is None else self.clusters[1]
            self._parts["unl"] = self._sample(X_u, self.codes_unlabeled, self.w_unlabeled, [self.yhat_unlabeled],
                                              clu, "unlabeled")
        return self._parts

    def quadratic(self, lam_nonzero: bool):
        """``(A, B, C)`` with ``V(lambda) = A - 2 lambda B + lambda^2 C`` (§9.2), and the per-row (or
        per-cluster) pieces that lambda-hat's variance needs: ``(a, d)``, the influence rows (or
        cluster totals) of ``V = sum (a - lambda d)(a - lambda d)'`` up to the constant factor, and
        that factor (the unlabelled rows' ``d`` rows, labelled rows first, for hetero)."""
        P = self.parts(lam_nonzero)
        lab = P["lab"]
        if self.iid:
            sy = lab["E"][:, 0]
            sh = lab["E"][:, 1]
            w = lab["w"]
            A = lab["bread"] * (np.sum(w * sy * sy) / lab["df"])
            B = lab["bread"] * (np.sum(w * sy * sh) / lab["df"])
            C = lab["bread"] * (np.sum(w * sh * sh) / lab["df"])
            if lam_nonzero:
                unl = P["unl"]
                eu = unl["E"][:, 0]
                C = C + unl["bread"] * (np.sum(unl["w"] * eu * eu) / unl["df"])
            return A, B, C, None
        a = lab["psi"][0] * np.sqrt(lab["fac"])
        b = lab["psi"][1] * np.sqrt(lab["fac"])
        c = P["unl"]["psi"][0] * np.sqrt(P["unl"]["fac"]) if lam_nonzero else None
        if self.clusters is None:
            A, B, C = a.T @ a, (a.T @ b + b.T @ a) / 2, b.T @ b
            if c is not None:
                C = C + c.T @ c
            return A, B, C, (a, b, c, 1.0)
        codes, codes_u = self.clusters
        G_all = int(max(codes.max(), codes_u.max())) + 1
        Ta = cluster_totals(a, codes, G_all)
        Td = cluster_totals(b, codes, G_all)
        if c is not None:
            Td = Td - cluster_totals(c, codes_u, G_all)
            used = np.union1d(codes, codes_u)
        else:
            used = np.unique(codes)
        Ta, Td = Ta[used], Td[used]
        G = used.size
        f = G / (G - 1)
        A, B, C = f * Ta.T @ Ta, f * (Ta.T @ Td + Td.T @ Ta) / 2, f * Td.T @ Td
        return A, B, C, (Ta, Td, None, f)

    def lam_hat(self, coord) -> float:
        """The lambda in [0, 1] that minimises the reported variance (§9.2): its trace over the
        slopes, or its (coord, coord) entry: ``clip(B / C)``, closed form."""
        A, B, C, _ = self.quadratic(True)
        b, c = (np.trace(B), np.trace(C)) if coord is None else (B[coord, coord], C[coord, coord])
        return float(np.clip(b / c, 0.0, 1.0)) if c > 0 else 0.0

    def lam_variance(self, coord) -> float:
        """The delta-method variance of lambda-hat = tr B / tr C (unclipped; §5.1 for ppi.feols):
        both traces are sums over rows (hetero) or clusters (CRV1) of quadratic forms of the
        influence rows; each row's (cluster's) share of ``num - r den``, centred (per sample without
        clusters), squared and summed, over ``den^2``."""
        _A, B, C, pieces = self.quadratic(True)
        num, den = (np.trace(B), np.trace(C)) if coord is None else (B[coord, coord], C[coord, coord])
        if den <= 0:
            return 0.0
        r = num / den
        a, d, c, f = pieces
        if coord is not None:
            a, d = a[:, [coord]], d[:, [coord]]
            c = None if c is None else c[:, [coord]]
        u = f * (np.sum(a * d, axis=1) - r * np.sum(d * d, axis=1))
        m = u.size
        total = float(np.sum((u - u.mean()) ** 2)) * m / (m - 1)
        if c is not None:
            v = -r * np.sum(c * c, axis=1)
            M = v.size
            total += float(np.sum((v - v.mean()) ** 2)) * M / (M - 1)
        return total / den ** 2

    def split(self, lam: float):
        """The diagonal of the hetero variance at ``lam`` in its labelled and unlabelled parts."""
        P = self.parts(lam != 0)
        lab = P["lab"]
        r = (lab["psi"][0] - lam * lab["psi"][1]) * np.sqrt(lab["fac"])
        a = np.sum(r * r, axis=0)
        if lam == 0:
            return a, np.zeros_like(a)
        c = P["unl"]["psi"][0] * np.sqrt(P["unl"]["fac"])
        return a, lam * lam * np.sum(c * c, axis=0)

    def covariance(self, lam: float) -> np.ndarray:
        """The covariance of the slopes at ``lam`` (§9.2): ``A - 2 lam B + lam^2 C``; at lambda = 0
        fe.feols's on the labelled rows (hetero HC1, CRV1, iid, with fixest's factors)."""
        A, B, C, _ = self.quadratic(lam != 0)
        return A - 2.0 * lam * B + lam * lam * C


def feols(formula, labeled, unlabeled, *, prediction: str, method: str = "ppi++", vcov="hetero",
          level: float = 0.95, lam=None, coord=None, weights=None, small_sample: bool = False) -> PPIResult:
    """Prediction-powered fixed-effects regression ``"y ~ x1 + x2 | firm + year"`` (fixest /
    pyfixest syntax, :func:`llmsurrogate.fe.feols`'s): the within regression of
    ``lam * prediction`` on the unlabelled rows plus the within regression of
    ``y - lam * prediction`` on the labelled rows (docs/methods/ppi.md §9). The point estimate equals
    :func:`ols` on the explicit design with one dummy per level of each fixed effect; the variance is
    that of the estimator computed, the two within regressions each in its own sample, with
    fixest's small-sample factors (§9.2; ppi_py's pooled-Hessian sandwich on the dummies is too
    small with many levels and few labelled rows each, §9.3); with ``lam=0`` both equal
    :func:`llmsurrogate.fe.feols` on the labelled rows (coefficients and standard errors, fixest's
    small-sample factors included).

    ``labeled``: the rows with the human answer (the formula's outcome) and the LLM's
    (``prediction``, a column name); ``unlabeled``: rows with the prediction only (the outcome
    column may be missing). ``method``: ``"ppi++"`` (lambda minimising the reported variance,
    summed over the slopes or of the coefficient ``coord``, in closed form; or ``lam`` given),
    ``"ppi"`` (lambda = 1) or ``"classical"``. ``vcov``: ``"hetero"`` (HC1 in each sample, default),
    ``{"CRV1": column}`` (cluster ids from that column of both frames, one numbering; §8) or ``"iid"``
    (homoskedastic residuals in both regressions; §9.4). ``weights``: a column
    name of both frames (positive; rescaled to sum to n and N). Every level of a fixed effect
    must appear in both samples. The fixed effects themselves are not reported. ``small_sample=True``:
    t-intervals (the variance already has fixest's factors; the option adds the variance lambda-hat
    adds and takes Welch-Satterthwaite degrees of freedom, G - 1 with CRV1; docs/methods/ppi.md §5);
    the default False keeps the z-intervals.

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
    (['x'], 1.46, 0.03, 0.88)
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
    cov0 = p.covariance(0.0)   # fe.feols on the labelled rows (hetero HC1, CRV1 or iid)
    var_lam0 = np.diag(cov0)
    notes = []
    if method == "classical":
        lam_used, theta, cov = 0.0, theta0, cov0
    else:
        if method == "ppi":
            lam_used = 1.0
        elif lam_given is not None:
            lam_used = float(lam_given)
        else:
            lam_used = p.lam_hat(k)
            notes.append(f"lambda tuned to minimise the reported variance (closed form, docs/methods/ppi.md §9.3): "
                         f"{lam_used:.4g}")
        fitted = p.fit(lam_used)
        theta = fitted[0].to_numpy(float)
        cov = p.covariance(lam_used)
    var, var0 = np.diag(cov), np.diag(cov0)
    eff = np.full(var.size, float(p.n)) if method == "classical" else p.n * (var_lam0 / var)
    df, z0 = None, z
    if small_sample:
        # the variance already has fixest's small-sample factors in each sample (§9.2); the option
        # adds the variance that tuning lambda adds and t quantiles (§5.1)
        lab = p.parts(False)["lab"]
        df_l = float(lab["df"])
        df0 = df_l if p.clusters is None else float(labelled_clusters(p.clusters) - 1)
        if method == "classical":
            df = np.full(var.size, df0)
        else:
            extra = np.zeros(var.size)
            if tuned:
                # theta(lambda) is linear in lambda: D = d theta / d lambda = theta(1) - theta(0)
                D = p.fit(1.0)[0].to_numpy(float) - theta0
                extra = D * D * p.lam_variance(k)
            var = var + extra
            if p.clusters is not None:
                df = np.full(var.size, df0)
            else:
                a, b = p.split(lam_used)
                df_u = float(p.parts(True)["unl"]["df"])
                df = satterthwaite_df(a + extra, b, df_l, df_u)
        z, z0 = t_quantile(alpha, df), t_quantile(alpha, df0)
        df = tuple(float(v) for v in df)
    se, se0 = np.sqrt(var), np.sqrt(var0)
    table = make_table(terms, theta, se, theta - z * se, theta + z * se, lam_used, eff, theta0, se0, theta0 - z0 * se0,
                       theta0 + z0 * se0)
    return PPIResult(estimand="feols", method=method, level=float(level), n=p.n, N=p.N, table=table, lam_tuned=tuned,
                     coord=None if k is None else terms[k], weighted=p.weighted, intercept=None, notes=tuple(notes),
                     clustered=p.clusters is not None, vcov=p.vcov_label, small_sample=small_sample, df=df)
