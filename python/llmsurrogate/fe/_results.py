"""The results of :func:`llmsurrogate.fe.feols` (:class:`FeolsResult`) and
:func:`llmsurrogate.fe.bootstrap` (:class:`FeolsBootstrap`), and :func:`etable`, the side-by-side
table.

scipy.stats (the t distribution) is imported inside the methods that need it: it takes about half
a second to import, and the command line imports this module to register its commands.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._deprecation import warn_deprecated
from ..exceptions import InvalidArgumentError
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
    fixef: list
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

    def _series(self, values, name: str):
        return pd.Series(np.asarray(values, dtype=float), index=pd.Index(self.terms, name="Coefficient"), name=name)

    def coef(self):
        """Estimates, indexed by term."""
        return self._series(self.beta, "Estimate")

    def vcov(self):
        """The variance matrix as a DataFrame indexed by term."""
        return pd.DataFrame(np.asarray(self.vcov_matrix), index=self.terms, columns=self.terms)

    def se(self):
        """Standard errors (the square roots of the variance's diagonal, computed on standardized
        columns: exact where that diagonal over- or underflows a float64)."""
        if self.std_errors is not None:
            return self._series(self.std_errors, "Std. Error")
        return self._series(np.sqrt(np.diag(np.asarray(self.vcov_matrix))), "Std. Error")

    def tstat(self):
        """t statistics."""
        return self._series(np.asarray(self.beta) / self.se().to_numpy(), "t value")

    def pvalue(self):
        """Two-sided p-values from the t distribution with ``df_t`` degrees of freedom
        (``N - df_k`` for iid/hetero, ``G - 1`` for clustered)."""
        from scipy.stats import t

        return self._series(2 * t.sf(np.abs(self.tstat().to_numpy()), self.df_t), "Pr(>|t|)")

    def confint(self, level: float = 0.95, *, alpha: float | None = None):
        """``level`` confidence intervals (t quantiles with ``df_t`` df); columns as pyfixest
        (``"2.5%"``, ``"97.5%"``). ``alpha`` (pyfixest's ``1 - level``) is a deprecated alias."""
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
        (``level`` intervals; ``alpha`` = 1 - level is a deprecated alias)."""
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
        if self.fixef:
            facts["Within R2"] = self.r2_within
            facts["Demeaning"] = (f"{self.demean_iterations} iteration(s), relative residual "
                                  f"{self.demean_residual:.2g} (tol {self.demean_tol:g})")
        if self.weights is not None:
            facts["Weights"] = self.weights
        notes = list(self.notes)
        notes.append(f"t tests with {self.df_t} degrees of freedom; small-sample corrections as pyfixest's defaults "
                     "(docs/methods/lookahead.md §5.3.1).")
        return Summary(f"OLS with fixed effects: {self.outcome}", facts=facts, tables=[("", self.tidy())],
                       notes=notes, float_format="{:.6g}")


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
        """The bootstrap standard error: the standard deviation (ddof=1) of the finite draws."""
        d = self._finite()
        return float(d.std(ddof=1)) if d.size > 1 else float("nan")

    def quantile(self, q):
        """Quantiles of the finite draws."""
        return np.quantile(self._finite(), q)

    def confint(self, level: float = 0.95) -> np.ndarray:
        """The percentile interval: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
        finite draws."""
        level = _level(level, None, "FeolsBootstrap.confint")
        return self.quantile([(1 - level) / 2, (1 + level) / 2])

    def tidy(self, level: float = 0.95):
        """One row: term, estimate, std_error (bootstrap), conf_low, conf_high (percentile),
        n_boot, finite_draws."""
        d = self._finite()
        lo, hi = self.confint(level) if d.size else (np.nan, np.nan)
        return pd.DataFrame({"term": [self.param], "estimate": [self.estimate], "std_error": [self.se()],
                             "conf_low": [float(lo)], "conf_high": [float(hi)], "n_boot": [self.n_boot],
                             "finite_draws": [int(d.size)]})

    def summary(self) -> Summary:
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
        fes += [f for f in m.fixef if f not in fes]
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
        rows.append((f"FE: {f}", ["x" if f in m.fixef else "-" for m in models]))
    rows.append(("S.E. type", [m.vcov_type for m in models]))
    rows.append(("Observations", [f"{m.nobs:,}" for m in models]))
    rows.append(("R2", [fmt.format(m.r2) for m in models]))
    if fes:
        rows.append(("Within R2", [fmt.format(m.r2_within) if m.fixef else "-" for m in models]))
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
