"""The results of :func:`llmsurrogate.fe.feols` (:class:`FeolsResult`) and
:func:`llmsurrogate.fe.bootstrap` (:class:`FeolsBootstrap`), and :func:`etable`, the side-by-side
table.

scipy.stats (the t distribution) is imported inside the methods that need it: it takes about half
a second to import, and the command line imports this module to register its commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._deprecation import warn_deprecated
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..results import Result, Summary, result_dataclass


def _level(level: float, alpha: float | None, owner: str) -> float:
    """The confidence level, from ``level`` or from pyfixest's ``alpha = 1 - level`` (deprecated)."""
    if alpha is not None:
        warn_deprecated(f"{owner}(): argument `alpha` (1 - level) is now `level` (alpha=0.05 is level=0.95)",
                        stacklevel=4)
        if not (isinstance(alpha, (int, float, np.integer, np.floating)) and 0 < alpha < 1):
            raise InvalidArgumentError(f"argument `alpha` must lie in (0, 1); got {alpha!r}")
        level = 1 - alpha
    if isinstance(level, bool) or not (isinstance(level, (int, float, np.integer, np.floating)) and 0 < level < 1):
        raise InvalidArgumentError(f"argument `level` must lie in (0, 1), e.g. 0.95; got {level!r}")
    return float(level)


@dataclass(eq=False)
class FittedSample:
    """What :class:`FeolsResult`'s post-estimation methods read (held by the fit in memory, not
    saved with it): the estimation rows' positions in the data, outcome, regressors of the
    coefficients kept (the outcome's and the columns' units), residuals, weights, fixed-effect
    codes and level labels, and how to build the regressors of new data."""

    rows: np.ndarray
    y: np.ndarray
    X: np.ndarray
    resid: np.ndarray
    w: Any
    fe_codes: list
    fe_labels: list
    spec: Any
    categorical_levels: Any
    form: Any
    names: list
    beta: np.ndarray
    effects: Any = None  # the fixed effects, once computed
    vcov_inputs: Any = None  # _vcov.VcovInputs: what FeolsResult.with_vcov() recomputes the variance from


class _FixefNames(list):
    """``fit.fixef``: call it (``fit.fixef()``) for the estimated fixed effects, as pyfixest; used
    as the list of fixed-effect names it was before, it warns (FutureWarning) and is that list."""

    def __init__(self, names, fit):
        super().__init__(names)
        self._fit = fit

    def __call__(self):
        return self._fit._fixef_effects()

    def _old(self):
        warn_deprecated("FeolsResult.fixef is now a method (the estimated fixed effects, as pyfixest's fixef()); "
                        "the names are FeolsResult.fixef_names", stacklevel=4)


for _m in ("__iter__", "__len__", "__getitem__", "__contains__", "__eq__", "__bool__", "__add__", "index", "count",
           "__reversed__"):
    def _wrap(name):
        base = getattr(list, name, None)

        def method(self, *args, **kwargs):
            self._old()
            return base(self, *args, **kwargs) if base is not None else bool(list.__len__(self))
        method.__name__ = name
        return method
    setattr(_FixefNames, _m, _wrap(_m))
_FixefNames.__hash__ = None


@result_dataclass
class FeolsResult(Result):
    """A fitted fixed-effects OLS: coefficients, their variance, fit statistics and what was
    dropped. Accessors follow pyfixest: :meth:`coef`, :meth:`se`, :meth:`tstat`, :meth:`pvalue`
    (pandas Series indexed by term), :meth:`confint`, :meth:`tidy`, :meth:`vcov`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate.fe import feols
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": rng.normal(size=50)})
    >>> df["y"] = 1.5 * df["x"] + df["firm"] + rng.normal(scale=0.1, size=50)
    >>> fit = feols("y ~ x | firm", df, vcov="hetero")      # a FeolsResult
    >>> fit.tidy().round(3)
      term  estimate  std_error  statistic  p_value  conf_low  conf_high
    0    x     1.483      0.023     65.484      0.0     1.437      1.529
    """

    formula: str
    outcome: str
    terms: list
    beta: Any  # ndarray (k,)
    vcov_matrix: Any  # ndarray (k, k)
    vcov_type: str
    df_t: int
    df_k: int
    nobs: int
    n_input: int
    n_dropped_nan: int
    n_dropped_singletons: int
    n_dropped_zero_weight: int
    dropped_collinear: list
    fixef_names: list
    fe_levels: dict
    n_clusters: dict
    r2: float
    r2_within: float
    rmse: float
    weights: Any
    demean_iterations: int
    demean_residual: float
    demean_tol: float
    seconds: float
    notes: tuple = ()
    #: ndarray (k,): the standard errors, computed on rescaled columns (exact where the variance of a
    #: coefficient over- or underflows a float64); None for results saved before they were stored
    std_errors: Any = None
    #: "aweights" (analytic) or "fweights" (frequency: nobs is the sum of the weights)
    weights_type: str = "aweights"
    #: residual degrees of freedom: nobs minus the coefficients and the fixed-effect levels (one
    #: level of each fixed effect after the first is redundant), as fixest's df.residual
    df_resid: Any = None
    #: the small-sample corrections other than the defaults, {"k_adj": bool, "G_adj": bool}
    #: (:meth:`with_vcov`); None: the defaults (both True)
    ssc: Any = None

    @classmethod
    def _from_fields(cls, fields: dict[str, Any]) -> "FeolsResult":
        if "fixef" in fields and "fixef_names" not in fields:  # saved before fixef() became a method
            fields = dict(fields)
            fields["fixef_names"] = fields.pop("fixef")
        return cls(**fields)

    @property
    def fixef(self):
        """The estimated fixed effects: ``fit.fixef()`` is a dict ``{name: Series}`` indexed by
        level (see :meth:`predict` for an example). Used as a list it is the names, with a
        FutureWarning: they are now :attr:`fixef_names`."""
        return _FixefNames(self.fixef_names, self)

    # -- post-estimation (pyfixest's names) --------------------------------------------------------
    def _fitted_sample(self) -> FittedSample:
        sample = self.__dict__.get("_sample")
        if sample is None:
            raise InvalidArgumentError(
                "this FeolsResult holds no estimation sample (a result loaded from JSON keeps the estimates, not the "
                "data): refit it with feols() for predict(), resid(), fixef(), model_matrix() and obs_index")
        return sample

    @property
    def obs_index(self) -> np.ndarray:
        """Positions (0-based) in ``data`` of the rows used in the estimation, in the order of
        :meth:`resid`, ``predict()`` and :meth:`model_matrix`."""
        return np.asarray(self._fitted_sample().rows, dtype=np.int64)

    def resid(self) -> np.ndarray:
        """The residuals of the estimation rows (outcome minus fitted values, fixed effects
        included), in the outcome's units, in the order of :attr:`obs_index`.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from llmsurrogate.fe import feols
        >>> df = pd.DataFrame({"y": [1.0, 2.0, 4.0, 3.0, 7.0], "x": [0.0, 1.0, 2.0, 3.0, 4.0]})
        >>> fit = feols("y ~ x", df)
        >>> np.round(fit.resid(), 2).tolist()
        [0.2, -0.1, 0.6, -1.7, 1.0]
        """
        return np.array(self._fitted_sample().resid, dtype=np.float64)

    def model_matrix(self) -> pd.DataFrame:
        """The regressors of the estimation rows as the formula built them (one column per
        coefficient, without the fixed effects, as fixest's ``model.matrix``), indexed by
        :attr:`obs_index`.

        Examples
        --------
        >>> import pandas as pd
        >>> from llmsurrogate.fe import feols
        >>> df = pd.DataFrame({"y": [1.0, 2.0, 4.0, 3.0], "x": [1.0, 2.0, 3.0, 4.0], "g": ["a", "b", "a", "b"]})
        >>> feols("y ~ x + C(g)", df).model_matrix()
           Intercept    x  C(g)[T.b]
        0        1.0  1.0        0.0
        1        1.0  2.0        1.0
        2        1.0  3.0        0.0
        3        1.0  4.0        1.0
        """
        s = self._fitted_sample()
        return pd.DataFrame(s.X, columns=list(self.terms), index=pd.Index(self.obs_index))

    def predict(self, newdata=None) -> np.ndarray:
        """Predicted values, fixed effects included. ``newdata=None``: the fitted values of the
        estimation rows (order of :attr:`obs_index`); a DataFrame or a mapping of columns: one
        value per row of it, the formula's transforms applied, NaN where a value it needs is
        missing or a level (of a fixed effect, or of ``C()``/``i()``) was not in the estimation
        rows (as pyfixest). Levels are matched by value within a dtype family: ``True`` is the
        level ``1`` of a 0/1 column, ``3.0`` the level ``3``; text for a column fitted on numbers
        (or numbers for one fitted on text) is an :class:`InvalidArgumentError` naming the column
        (docs/methods/fe.md §3).

        Examples
        --------
        >>> import pandas as pd
        >>> from llmsurrogate.fe import feols
        >>> df = pd.DataFrame({"y": [1.0, 2.0, 4.0, 3.0, 5.0, 6.0], "x": [0.0, 1.0, 2.0, 0.0, 1.0, 2.0],
        ...                    "firm": ["a", "a", "a", "b", "b", "b"]})
        >>> fit = feols("y ~ x | firm", df)
        >>> fit.predict(pd.DataFrame({"x": [1.0, 1.0, 1.0], "firm": ["a", "b", "c"]})).round(2).tolist()
        [2.33, 4.67, nan]
        >>> {k: v.round(2).to_dict() for k, v in fit.fixef().items()}
        {'firm': {'a': 0.83, 'b': 3.17}}
        >>> df["treated"] = [0, 1, 0, 1, 1, 0]
        >>> fit2 = feols("y ~ x + C(treated) | firm", df)
        >>> bool(fit2.predict(df.assign(treated=True))[0] == fit2.predict(df.assign(treated=1))[0])
        True
        """
        s = self._fitted_sample()
        if newdata is None:
            return np.asarray(s.y - s.resid, dtype=np.float64)
        from .._validation import as_frame, require_columns
        from ._estimation import check_columns

        frame = as_frame(newdata, "newdata")
        form = s.form
        check_columns(frame, form.regressor_columns(), "newdata")
        require_columns(frame, form.regressor_columns(), "newdata")
        n = len(frame)
        beta = np.asarray(self.beta, dtype=np.float64)
        if s.spec is not None:
            from ._transforms import build_new

            Xn, names, rows = build_new(form, s.spec, frame, s.categorical_levels or {})
            xb = np.full(n, np.nan)
            if len(rows):
                xb[rows] = Xn[:, [names.index(t) for t in self.terms]] @ beta
        else:
            from ._transforms import numeric_newdata

            xb = np.zeros(n)
            for t, b in zip(self.terms, beta):
                v = np.ones(n)
                for c in ([] if t == "Intercept" else t.split(":")):
                    v = v * numeric_newdata(frame, c).to_numpy(dtype=np.float64, na_value=np.nan)
                xb = xb + b * v
        if self.fixef_names:
            from ._levels import match_levels

            effects = self._fixef_effects()
            for fe, name, labels in zip(form.fixef, self.fixef_names, s.fe_labels):
                # each column's values matched to the fit's levels by value within a dtype family
                # (3.0 is the level 3, True the level 1); -1: missing or not a level of the fit
                codes = match_levels(frame, fe, labels.parts)
                vals = effects[name].reindex(labels.strings()).to_numpy(dtype=np.float64)
                add = np.full(n, np.nan)
                add[codes >= 0] = vals[codes[codes >= 0]]
                xb = xb + add
        return np.asarray(xb, dtype=np.float64)

    def _fixef_effects(self) -> dict:
        """The estimated fixed effects, ``{name: Series indexed by level}`` (levels as strings, as
        pyfixest's): the least-squares solution of ``y - X b - e = sum of the effects`` normalised as
        pyfixest's ``fixef()``: every level of the first fixed effect, and for each other the first
        level in sorted order at 0. Needs the levels to be connected (else the split between fixed
        effects is not identified: the minimum-norm solution, with a warning)."""
        s = self._fitted_sample()
        if not self.fixef_names:
            raise InvalidArgumentError("fixef(): the model has no fixed effects")
        if s.effects is None:
            s.effects = _solve_effects(s, self.fixef_names)
        return {k: v.copy() for k, v in s.effects.items()}

    def with_vcov(self, vcov, data=None, *, k_adj: bool = True, G_adj: bool = True) -> "FeolsResult":
        """The fit with another variance, without refitting (pyfixest's ``fit.vcov(vcov, data)``,
        as a new result: this one is unchanged). ``vcov`` as :func:`feols` takes it; the numbers
        are those of ``feols(..., vcov=vcov)`` on the same rows. A cluster column is taken from the
        fit when it is one of its fixed effects (one column) or was a cluster column of the fit,
        else from ``data``: the data of the fit, with its rows (``n_input``) in the same order
        (the rows of the fit are taken by :attr:`obs_index`); a missing value in an estimation row
        is an error (``feols(..., vcov=...)`` would drop the row: refit). ``k_adj``, ``G_adj``:
        the small-sample factors ``(N - 1)/(N - df_k)`` and ``G/(G - 1)`` (``G = N`` for
        hetero, HC2, HC3), fixest's ``ssc(adj = , cluster.adj = )``; both False give sandwich's
        HC0/HC2/HC3 (``_vcov`` module docstring).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df)
        >>> bool(np.isclose(fit.with_vcov({"CRV1": "firm"}).se()["x"],
        ...                 fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"}).se()["x"], rtol=1e-12))
        True
        >>> fit.with_vcov("hetero", k_adj=False, G_adj=False).vcov_type
        'hetero (HC1); no small-sample factor'
        """
        import copy

        from ._demean import factorize, recode
        from ._vcov import check_variances, compute_vcov, parse_vcov, ssc_label, to_units

        for name, flag in (("k_adj", k_adj), ("G_adj", G_adj)):
            if not isinstance(flag, (bool, np.bool_)):
                raise InvalidArgumentError(f"argument `{name}` must be True or False; got {flag!r}")
        s = self._fitted_sample()
        inputs = s.vcov_inputs
        if inputs is None:
            raise InvalidArgumentError("this FeolsResult keeps no variance inputs: refit it with feols()")
        spec = parse_vcov(vcov)
        codes = []
        frame = None
        for name in spec.clusters:
            if name in inputs.cluster_codes:
                codes.append(inputs.cluster_codes[name])
                continue
            if name in inputs.fe_names:
                codes.append(inputs.fe_codes[inputs.fe_names.index(name)])
                continue
            if data is None:
                raise InvalidArgumentError(
                    f"argument `vcov`: cluster column {name!r} is neither a fixed effect nor a cluster column of the "
                    "fit; pass the data of the fit as `data`")
            if frame is None:
                from .._validation import as_frame

                frame = as_frame(data, "data")
                if len(frame) != self.n_input:
                    raise InvalidArgumentError(
                        f"argument `data` has {len(frame)} rows; the fit was estimated on data of {self.n_input} rows "
                        "(pass the same data)")
            if name not in frame.columns:
                raise InvalidArgumentError(f"argument `vcov`: cluster column {name!r} is not in `data`")
            raw = factorize(frame[name].to_numpy()[np.asarray(s.rows)])[0]
            if np.any(raw < 0):
                raise InvalidArgumentError(
                    f"argument `vcov`: cluster column {name!r} is missing in {int(np.sum(raw < 0))} of the "
                    f"{len(raw)} estimation rows; feols(..., vcov=...) would drop them: refit with that vcov")
            codes.append(recode(raw)[0])
        vc = compute_vcov(spec, X=inputs.X, resid=inputs.resid, w=inputs.w, bread=inputs.bread,
                          fe_codes=inputs.fe_codes, fe_names=inputs.fe_names, cluster_codes=codes,
                          fweights=inputs.fweights, k_adj=bool(k_adj), G_adj=bool(G_adj))
        V, se, Q = to_units(vc.vcov, inputs.G, inputs.r)
        check_variances(self.terms, Q, spec)
        bad = [t for t, v in zip(self.terms, se) if not np.isfinite(v)]
        if bad:
            raise InvalidArgumentError(f"argument `vcov`: the standard error of {bad[0]!r} is not finite")
        default = bool(k_adj) and bool(G_adj)
        out = copy.copy(self)
        for field, value in (("vcov_matrix", V), ("std_errors", se), ("vcov_type", ssc_label(spec.label, k_adj, G_adj)),
                             ("df_t", int(vc.df_t)), ("df_k", int(vc.df_k)),
                             ("n_clusters", {name: int(c.max()) + 1 for name, c in zip(spec.clusters, codes)}),
                             ("ssc", None if default else {"k_adj": bool(k_adj), "G_adj": bool(G_adj)})):
            object.__setattr__(out, field, value)
        return out

    def _series(self, values, name: str):
        return pd.Series(np.asarray(values, dtype=float), index=pd.Index(self.terms, name="Coefficient"), name=name)

    def coef(self):
        """Estimates, indexed by term.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> fit.coef().round(3)
        Coefficient
        x    1.418
        Name: Estimate, dtype: float64
        """
        return self._series(self.beta, "Estimate")

    def vcov(self):
        """The variance matrix as a DataFrame indexed by term.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> fit.vcov().round(5)
                 x
        x  0.03106
        """
        return pd.DataFrame(np.asarray(self.vcov_matrix), index=self.terms, columns=self.terms)

    def se(self):
        """Standard errors (the square roots of the variance's diagonal, computed on standardized
        columns: exact where that diagonal over- or underflows a float64).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> fit.se().round(4)
        Coefficient
        x    0.1762
        Name: Std. Error, dtype: float64
        """
        if self.std_errors is not None:
            return self._series(self.std_errors, "Std. Error")
        return self._series(np.sqrt(np.diag(np.asarray(self.vcov_matrix))), "Std. Error")

    def tstat(self):
        """t statistics.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> fit.tstat().round(2)
        Coefficient
        x    8.05
        Name: t value, dtype: float64
        """
        return self._series(np.asarray(self.beta) / self.se().to_numpy(), "t value")

    def pvalue(self):
        """Two-sided p-values from the t distribution with ``df_t`` degrees of freedom
        (``N - df_k`` for iid/hetero, ``G - 1`` for clustered).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> fit.pvalue().round(6)
        Coefficient
        x    0.000021
        Name: Pr(>|t|), dtype: float64
        """
        from scipy.stats import t

        return self._series(2 * t.sf(np.abs(self.tstat().to_numpy()), self.df_t), "Pr(>|t|)")

    def confint(self, level: float = 0.95, *, alpha: float | None = None):
        """``level`` confidence intervals (t quantiles with ``df_t`` df); columns as pyfixest
        (``"2.5%"``, ``"97.5%"``). ``alpha`` (pyfixest's ``1 - level``) is a deprecated alias.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> fit.confint(level=0.9).round(3)
                        5%    95%
        Coefficient
        x            1.095  1.741
        """
        from scipy.stats import t

        level = _level(level, alpha, "FeolsResult.confint")
        return self._confint(level, t)

    def _confint(self, level: float, t):
        tail = (1 - level) / 2
        z = t.ppf(1 - tail, self.df_t)
        b, s = self.coef().to_numpy(), self.se().to_numpy()
        lo, hi = f"{100 * tail:g}%", f"{100 * (1 - tail):g}%"
        return pd.DataFrame({lo: b - z * s, hi: b + z * s}, index=pd.Index(self.terms, name="Coefficient"))

    def tidy(self, level: float = 0.95, *, alpha: float | None = None):
        """One row per term: term, estimate, std_error, statistic, p_value, conf_low, conf_high
        (``level`` intervals; ``alpha`` = 1 - level is a deprecated alias).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> fit.tidy()[["term", "estimate", "std_error", "conf_low", "conf_high"]].round(3)
          term  estimate  std_error  conf_low  conf_high
        0    x     1.418      0.176      1.02      1.817
        """
        from scipy.stats import t

        ci = self._confint(_level(level, alpha, "FeolsResult.tidy"), t)
        return pd.DataFrame({
            "term": list(self.terms),
            "estimate": self.coef().to_numpy(),
            "std_error": self.se().to_numpy(),
            "statistic": self.tstat().to_numpy(),
            "p_value": self.pvalue().to_numpy(),
            "conf_low": ci.iloc[:, 0].to_numpy(),
            "conf_high": ci.iloc[:, 1].to_numpy(),
        })

    def summary(self) -> Summary:
        """The fit in words and a coefficient table (print it, or ``.as_text()``).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": np.random.default_rng(0).normal(size=50)})
        >>> df["y"] = 1.5 * df["x"] + df["firm"] + np.sin(np.arange(50))
        >>> fit = fe.feols("y ~ x | firm", df, vcov={"CRV1": "firm"})
        >>> print(fit.summary().as_text().splitlines()[0])
        OLS with fixed effects: y
        """
        facts: dict[str, Any] = {
            "Formula": self.formula,
            "Observations": self.nobs,
            "Standard errors": self.vcov_type,
        }
        for name, g in self.n_clusters.items():
            facts[f"Clusters ({name})"] = g
        for name, g in self.fe_levels.items():
            facts[f"Fixed effect {name}"] = f"{g} levels"
        facts["R2"] = self.r2
        if self.fixef_names:
            facts["Within R2"] = self.r2_within
            facts["Demeaning"] = (f"{self.demean_iterations} iteration(s), relative residual "
                                  f"{self.demean_residual:.2g} (tol {self.demean_tol:g})")
        if self.weights is not None:
            facts["Weights"] = self.weights
        notes = list(self.notes)
        if self.ssc is None:
            notes.append(f"t tests with {self.df_t} degrees of freedom; small-sample corrections as pyfixest's defaults "
                         "(docs/methods/lookahead.md §5.3.1).")
        else:
            applied = [f for f, on in (("(N-1)/(N-K)", self.ssc["k_adj"]), ("G/(G-1)", self.ssc["G_adj"])) if on]
            notes.append(f"t tests with {self.df_t} degrees of freedom; small-sample factors: "
                         f"{' and '.join(applied) if applied else 'none'} (G = N for hetero, HC2, HC3; "
                         "llmsurrogate.fe._vcov).")
        return Summary(f"OLS with fixed effects: {self.outcome}", facts=facts, tables=[("", self.tidy())],
                       notes=notes, float_format="{:.6g}")


def _sort_key(levels) -> np.ndarray:
    """Positions of the levels (a LevelLabels) in sorted order of their values, as formulaic sorts a
    column's levels (numbers as numbers, strings as strings; an interacted fixed effect by its
    columns in turn); values that do not compare are sorted as strings."""
    parts = [np.asarray(p) for p in levels.parts]
    try:
        keys = []
        for p in reversed(parts):
            keys.append(np.unique(p, return_inverse=True)[1])
        return np.lexsort(keys) if len(keys) > 1 else np.argsort(keys[0], kind="stable")
    except TypeError:
        return np.argsort(levels.strings(), kind="stable")


def fixef_components(fe_codes: list) -> int:
    """The connected components of the graph whose nodes are the levels of all the fixed effects
    and whose edges join the levels that one observation has (each row links its level of the first
    fixed effect to its level of every other): with two fixed effects their effects are identified,
    up to one constant, exactly when this is 1 (Abowd, Creecy & Kramarz 2002).

    Examples
    --------
    >>> import numpy as np
    >>> fixef_components([np.array([0, 0, 1, 1]), np.array([0, 1, 2, 3])])  # firms 0-1 share no worker
    2
    >>> fixef_components([np.array([0, 0, 1, 1]), np.array([0, 1, 1, 2])])
    1
    """
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    sizes = [int(c.max()) + 1 if len(c) else 0 for c in fe_codes]
    offsets = np.cumsum([0] + sizes[:-1])
    first = np.asarray(fe_codes[0], dtype=np.int64)
    src = np.concatenate([first] * (len(fe_codes) - 1)) if len(fe_codes) > 1 else np.zeros(0, dtype=np.int64)
    dst = np.concatenate([np.asarray(c, dtype=np.int64) + off for c, off in zip(fe_codes[1:], offsets[1:])]) \
        if len(fe_codes) > 1 else np.zeros(0, dtype=np.int64)
    total = int(sum(sizes))
    graph = sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(total, total))
    return int(connected_components(graph, directed=False)[0])


def _solve_effects(s: FittedSample, names: list) -> dict:
    """The fixed effects of a fit (see :meth:`FeolsResult._fixef_effects`)."""
    import warnings

    from scipy import sparse
    from scipy.sparse.linalg import lsqr, spsolve

    d = np.asarray(s.y - s.resid - (s.X @ np.asarray(s.beta) if s.X.shape[1] else 0.0), dtype=np.float64)
    n = len(d)
    w = np.ones(n) if s.w is None else np.asarray(s.w, dtype=np.float64)
    blocks, refs = [], []
    strings = [labels.strings() for labels in s.fe_labels]
    orders = [_sort_key(labels) for labels in s.fe_labels]
    for j, (codes, labels, order) in enumerate(zip(s.fe_codes, strings, orders)):
        g = len(labels)
        D = sparse.csr_matrix((np.ones(n), (np.arange(n), codes.astype(np.int64))), shape=(n, g))
        if j > 0:
            ref = int(order[0])
            keep = np.r_[0:ref, ref + 1:g]
            D = D[:, keep]
            refs.append((ref, keep))
        else:
            refs.append((None, np.arange(g)))
        blocks.append(D)
    if len(blocks) == 1:
        sums = np.bincount(s.fe_codes[0], weights=w * d, minlength=len(s.fe_labels[0]))
        alpha = sums / np.bincount(s.fe_codes[0], weights=w, minlength=len(s.fe_labels[0]))
    else:
        D = sparse.hstack(blocks).tocsr()
        n_components = fixef_components(s.fe_codes)
        solved = False
        if n_components == 1:
            A = (D.T @ sparse.diags(w) @ D).tocsc()
            rhs = D.T @ (w * d)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                alpha = spsolve(A, rhs)
            # connected, yet singular: possible with three or more fixed effects
            solved = bool(np.all(np.isfinite(alpha))) and \
                np.max(np.abs(A @ alpha - rhs)) <= 1e-8 * max(np.max(np.abs(rhs)), 1e-300)
        if not solved:
            why = (f"not connected: their levels form {n_components} components (sets of levels that no observation "
                   "links), so their split between fixed effects is not identified within each component"
                   if n_components > 1 else "connected but not identified (a further fixed effect is nested in or "
                   "collinear with the others)")
            warnings.warn(f"fixef(): the fixed effects are {why}; returned: the minimum-norm solution among those with "
                          "the first level in sorted order of each fixed effect after the first at 0 (sums of effects "
                          "on observed combinations, and predict(), are identified; single effects are comparable "
                          "only within a component)", LLMSurrogateWarning, stacklevel=4)
            sw = np.sqrt(w)
            alpha = lsqr(sparse.diags(sw) @ D, sw * d, atol=1e-14, btol=1e-14, iter_lim=100_000)[0]
    out, start = {}, 0
    for name, labels, order, (ref, keep) in zip(names, strings, orders, refs):
        vals = np.zeros(len(labels))
        vals[keep] = alpha[start:start + len(keep)]
        start += len(keep)
        out[name] = pd.Series(vals[order], index=pd.Index([str(v) for v in labels[order]], name=name), name=name)
    return out


@result_dataclass
class FeolsBootstrap(Result):
    """The bootstrap of one coefficient of a fixed-effects OLS (:func:`llmsurrogate.fe.bootstrap`):
    ``draws`` (one per replication; NaN for the ``n_singular`` + ``n_unconverged`` that failed),
    the full-sample ``estimate`` of ``param``, and the settings (``n_boot``, ``seed``, ``cluster``:
    None for the pairs bootstrap, else the column whose ``n_clusters`` levels were resampled).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate import fe
    >>> u = np.random.default_rng(0).normal(size=(300, 2))
    >>> df = pd.DataFrame({"g": np.arange(300) % 15, "x": u[:, 0], "y": u[:, 0] + u[:, 1]})
    >>> boot = fe.bootstrap("y ~ x | g", df, n_boot=200, seed=1, n_jobs=1)   # a FeolsBootstrap
    >>> boot.tidy()[["term", "n_boot", "finite_draws"]]
      term  n_boot  finite_draws
    0    x     200           200
    """

    formula: str
    param: str
    estimate: float
    draws: Any  # ndarray (n_boot,)
    n_boot: int
    seed: int
    cluster: Any  # None (rows) or the column resampled as blocks
    n_clusters: int
    n_singular: int
    n_unconverged: int
    nobs: int
    fixef: list
    seconds: float
    notes: tuple = ()

    def _finite(self) -> np.ndarray:
        d = np.asarray(self.draws, dtype=float)
        return d[np.isfinite(d)]

    def se(self) -> float:
        """The bootstrap standard error: the standard deviation (ddof=1) of the finite draws.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(20), 10), "x": np.random.default_rng(0).normal(size=200)})
        >>> df["y"] = 2.0 * df["x"] + 0.1 * df["firm"] + np.sin(np.arange(200))
        >>> boot = fe.bootstrap("y ~ x | firm", df, n_boot=100, cluster="firm", seed=1, n_jobs=1)
        >>> round(boot.se(), 3)
        0.059
        """
        d = self._finite()
        return float(d.std(ddof=1)) if d.size > 1 else float("nan")

    def quantile(self, q):
        """Quantiles of the finite draws.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(20), 10), "x": np.random.default_rng(0).normal(size=200)})
        >>> df["y"] = 2.0 * df["x"] + 0.1 * df["firm"] + np.sin(np.arange(200))
        >>> boot = fe.bootstrap("y ~ x | firm", df, n_boot=100, cluster="firm", seed=1, n_jobs=1)
        >>> boot.quantile([0.05, 0.5, 0.95]).round(3).tolist()
        [1.831, 1.92, 2.037]
        """
        return np.quantile(self._finite(), q)

    def confint(self, level: float = 0.95) -> np.ndarray:
        """The percentile interval: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
        finite draws.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(20), 10), "x": np.random.default_rng(0).normal(size=200)})
        >>> df["y"] = 2.0 * df["x"] + 0.1 * df["firm"] + np.sin(np.arange(200))
        >>> boot = fe.bootstrap("y ~ x | firm", df, n_boot=100, cluster="firm", seed=1, n_jobs=1)
        >>> boot.confint(level=0.9).round(3).tolist()
        [1.831, 2.037]
        """
        level = _level(level, None, "FeolsBootstrap.confint")
        return self.quantile([(1 - level) / 2, (1 + level) / 2])

    def tidy(self, level: float = 0.95):
        """One row: term, estimate, std_error (bootstrap), conf_low, conf_high (percentile),
        n_boot, finite_draws.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(20), 10), "x": np.random.default_rng(0).normal(size=200)})
        >>> df["y"] = 2.0 * df["x"] + 0.1 * df["firm"] + np.sin(np.arange(200))
        >>> boot = fe.bootstrap("y ~ x | firm", df, n_boot=100, cluster="firm", seed=1, n_jobs=1)
        >>> boot.tidy().round(3)
          term  estimate  std_error  conf_low  conf_high  n_boot  finite_draws
        0    x     1.923      0.059     1.816       2.04     100           100
        """
        d = self._finite()
        lo, hi = self.confint(level) if d.size else (np.nan, np.nan)
        return pd.DataFrame({"term": [self.param], "estimate": [self.estimate], "std_error": [self.se()],
                             "conf_low": [float(lo)], "conf_high": [float(hi)], "n_boot": [self.n_boot],
                             "finite_draws": [int(d.size)]})

    def summary(self) -> Summary:
        """The bootstrap in words and its one-row table (print it, or ``.as_text()``).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate import fe
        >>> df = pd.DataFrame({"firm": np.repeat(np.arange(20), 10), "x": np.random.default_rng(0).normal(size=200)})
        >>> df["y"] = 2.0 * df["x"] + 0.1 * df["firm"] + np.sin(np.arange(200))
        >>> boot = fe.bootstrap("y ~ x | firm", df, n_boot=100, cluster="firm", seed=1, n_jobs=1)
        >>> print(boot.summary().as_text().splitlines()[0])
        Bootstrap of a fixed-effects OLS coefficient
        """
        facts: dict[str, Any] = {
            "Formula": self.formula, "Coefficient": self.param, "Estimate (full sample)": self.estimate,
            "Replications": self.n_boot,
            "Resample": "rows (pairs bootstrap)" if self.cluster is None else
            f"clusters of {self.cluster} ({self.n_clusters})",
            "Seed": self.seed, "Observations": self.nobs, "Seconds": self.seconds}
        return Summary("Bootstrap of a fixed-effects OLS coefficient", facts=facts, tables=[("", self.tidy())],
                       notes=list(self.notes), float_format="{:.6g}")


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def etable(models, *, type: str = "text", digits: int = 3, stars: bool = True):
    """Side-by-side table of several :class:`FeolsResult`: estimates with significance stars
    (``*** p<0.001, ** p<0.01, * p<0.05``) and standard errors in parentheses below, then the fixed
    effects, standard-error type, observations, R² and within R².

    ``type="text"`` returns a string, ``"tex"`` a LaTeX ``tabular`` (booktabs), ``"df"`` the
    table as a pandas DataFrame.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate.fe import feols
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": rng.normal(size=50), "z": rng.normal(size=50)})
    >>> df["y"] = 1.5 * df["x"] + df["firm"] + rng.normal(scale=0.1, size=50)
    >>> print(etable([feols("y ~ x | firm", df), feols("y ~ x + z | firm", df, vcov="hetero")]))
                       (1)           (2)
    ------------------------------------
                         y             y
    ------------------------------------
    x             1.503***      1.505***
                   (0.018)       (0.016)
    z                              0.010
                                 (0.016)
    ------------------------------------
    FE: firm             x             x
    S.E. type          iid  hetero (HC1)
    Observations        50            50
    R2               0.999         0.999
    Within R2        0.994         0.994
    ------------------------------------
    Significance: *** p<0.001, ** p<0.01, * p<0.05. Standard errors in parentheses.
    """
    if isinstance(models, FeolsResult):
        models = [models]
    models = list(models)
    if not models or not all(isinstance(m, FeolsResult) for m in models):
        raise InvalidArgumentError("argument `models` must be one FeolsResult or a list of them")
    if type not in ("text", "tex", "df"):
        raise InvalidArgumentError(f"argument `type` must be 'text', 'tex' or 'df'; got {type!r}")
    fmt = f"{{:.{int(digits)}f}}"
    terms: list[str] = []
    for m in models:
        terms += [t for t in m.terms if t not in terms]
    fes: list[str] = []
    for m in models:
        fes += [f for f in m.fixef_names if f not in fes]
    cols = [f"({i + 1})" for i in range(len(models))]
    rows: list[tuple[str, list[str]]] = [("", [m.outcome for m in models])]
    for t in terms:
        est, err = [], []
        for m in models:
            if t in m.terms:
                j = m.terms.index(t)
                p = float(m.pvalue().iloc[j])
                est.append(fmt.format(float(np.asarray(m.beta)[j])) + (_stars(p) if stars else ""))
                err.append("(" + fmt.format(float(m.se().iloc[j])) + ")")
            else:
                est.append("")
                err.append("")
        rows += [(t, est), ("", err)]
    for f in fes:
        rows.append((f"FE: {f}", ["x" if f in m.fixef_names else "-" for m in models]))
    rows.append(("S.E. type", [m.vcov_type for m in models]))
    rows.append(("Observations", [f"{m.nobs:,}" for m in models]))
    rows.append(("R2", [fmt.format(m.r2) for m in models]))
    if fes:
        rows.append(("Within R2", [fmt.format(m.r2_within) if m.fixef_names else "-" for m in models]))
    frame = pd.DataFrame([r[1] for r in rows], index=[r[0] for r in rows], columns=cols)
    if type == "df":
        return frame
    note = "Significance: *** p<0.001, ** p<0.01, * p<0.05. Standard errors in parentheses." if stars else \
        "Standard errors in parentheses."
    if type == "text":
        width0 = max(len(r[0]) for r in rows)
        widths = [max(len(c), *(len(r[1][i]) for r in rows)) for i, c in enumerate(cols)]
        line = lambda label, cells: "  ".join([f"{label:<{width0}}"] + [f"{c:>{w}}" for c, w in zip(cells, widths)])
        rule = "-" * len(line("", cols))
        out = [line("", cols), rule]
        n_coef_rows = 1 + 2 * len(terms)
        for i, (label, cells) in enumerate(rows):
            out.append(line(label, cells))
            if i == 0 or i == n_coef_rows - 1:
                out.append(rule)
        out += [rule, note]
        return "\n".join(out)
    esc = lambda s: (s.replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%")
                     .replace("&", r"\&").replace("#", r"\#").replace("$", r"\$"))
    tex_cell = lambda s: s.replace("***", "$^{***}$") if "***" in s else s.replace("**", "$^{**}$") if "**" in s else \
        s.replace("*", "$^{*}$")
    out = [r"\begin{tabular}{l" + "c" * len(models) + "}", r"\toprule",
           " & ".join([""] + cols) + r" \\"]
    n_coef_rows = 1 + 2 * len(terms)
    tex_label = {"R2": "$R^2$", "Within R2": "Within $R^2$"}
    for i, (label, cells) in enumerate(rows):
        out.append(" & ".join([tex_label.get(label, esc(label))] + [tex_cell(esc(c)) for c in cells]) + r" \\")
        if i == 0 or i == n_coef_rows - 1:
            out.append(r"\midrule")
    out += [r"\bottomrule", r"\multicolumn{" + str(len(models) + 1) + r"}{l}{\footnotesize " + esc(note).replace(
        "*** p", "$^{***}$ p").replace("** p", "$^{**}$ p").replace("* p", "$^{*}$ p") + "}", r"\end{tabular}"]
    return "\n".join(out)
