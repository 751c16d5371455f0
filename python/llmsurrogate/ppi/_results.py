"""The result of every PPI estimator: :class:`PPIResult` (docs/methods/ppi.md §6)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._validation import as_float_array
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..results import Result, Summary, result_dataclass
from ._stats import z_p_value

__all__ = ["TABLE_COLUMNS", "PPIResult"]

#: the columns of :attr:`PPIResult.table`, in order
TABLE_COLUMNS = ("term", "estimate", "std_error", "ci_low", "ci_high", "lam", "effective_n", "classical_estimate",
                 "classical_std_error", "classical_ci_low", "classical_ci_high")

_LABELS = {"classical": "classical", "ppi": "PPI", "ppi++": "PPI++"}
_ESTIMANDS = {"mean": "mean", "quantile": "quantile", "ols": "linear regression (OLS)",
              "logistic": "logistic regression", "poisson": "Poisson regression",
              "feols": "fixed-effects linear regression"}


def _scalar_or_array(values: np.ndarray):
    values = np.asarray(values, dtype=float)
    return float(values[0]) if values.size == 1 else values.copy()


@result_dataclass
class PPIResult(Result):
    """A prediction-powered estimate (or its classical baseline): one row per term of ``table``
    (a mean, one of K answer shares, a quantile, a coefficient), with the settings that made it.

    ``estimate``, ``se``, ``ci_low``, ``ci_high``, ``lam`` and ``effective_n`` are numbers for one
    term and arrays (in the order of ``terms``) for several; :meth:`p_value` tests a null value;
    :meth:`tidy` is the table; ``table``'s ``classical_*`` columns hold the classical estimate on the
    labelled rows alone, the interval PPI is compared with. ``n`` and ``N`` count the labelled and
    unlabelled rows. ``effective_n`` is the number of labelled rows the classical estimator would
    need for the variance PPI reaches (docs/methods/ppi.md §6.2). A quantile has no standard error
    (``se`` is NaN): its interval inverts a test of the CDF (§4).

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=300); yhat = y + rng.normal(scale=0.5, size=300)
    >>> yhat_unlabeled = rng.normal(size=20_000) + rng.normal(scale=0.5, size=20_000)
    >>> res = ppi.mean(y, yhat, yhat_unlabeled)
    >>> round(res.lam, 3), res.n, res.N, round(res.effective_n)
    (0.835, 300, 20000, 1544)
    >>> PPIResult.from_json(res.to_json()) == res
    True
    """

    estimand: str
    method: str
    level: float
    n: int
    N: int
    table: pd.DataFrame
    lam_mode: str | None = None
    lam_tuned: bool = False
    coord: str | None = None
    weighted: bool = False
    q: float | None = None
    intercept: bool | None = None
    test: dict | None = None
    notes: tuple = ()
    clustered: bool = False
    vcov: str | None = None
    small_sample: bool = False
    df: tuple | None = None  # the t-intervals' degrees of freedom per term (small_sample=True, §5)

    # -- the numbers -----------------------------------------------------------------------------
    @property
    def terms(self) -> list[str]:
        """The terms' names: the mean's (``y``'s name, else ``'mean'``), the K columns', the
        coefficients' (``X``'s column names, else ``x0, x1, ...``)."""
        return [str(t) for t in self.table["term"]]

    @property
    def estimate(self):
        """The point estimate(s)."""
        return _scalar_or_array(self.table["estimate"])

    @property
    def se(self):
        """The standard error(s) (NaN for a quantile)."""
        return _scalar_or_array(self.table["std_error"])

    @property
    def ci_low(self):
        """The lower end(s) of the ``level`` confidence interval."""
        return _scalar_or_array(self.table["ci_low"])

    @property
    def ci_high(self):
        """The upper end(s) of the ``level`` confidence interval."""
        return _scalar_or_array(self.table["ci_high"])

    @property
    def lam(self):
        """lambda: 0 for classical, 1 for PPI, the tuned or given value for PPI++ (one per column
        with ``lam_mode="element"`` or a ``lam`` given per column)."""
        values = self.table["lam"].to_numpy(dtype=float)
        if values.size == 1 or (self.lam_mode != "element" and np.all(values == values[0])):
            return float(values[0])
        return values.copy()

    @property
    def effective_n(self):
        """The labelled sample size the classical estimator would need for this variance (§6.2)."""
        return _scalar_or_array(self.table["effective_n"])

    def p_value(self, null=0.0):
        """Two-sided p-value of the hypothesis that the estimand equals ``null`` (a number, or one
        per term), from the same standard error and lambda as the interval: at an end of the
        interval it is ``1 - level``. For a quantile: the test of ``F(null) = q`` that the interval
        inverts (§4.3); where its p-value is below the stored window's threshold (1e-6) the
        threshold is returned with a warning.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import ppi
        >>> rng = np.random.default_rng(1); y = rng.normal(1, 1, 200)
        >>> res = ppi.mean(y, y + rng.normal(0, 0.3, 200), rng.normal(1, 1.05, 5000))
        >>> round(res.p_value(res.ci_low), 6), res.p_value() < 1e-6
        (0.05, True)
        """
        if self.estimand == "quantile":
            return self._quantile_p_value(null)
        null_arr = as_float_array(null, "null", allow_nan=False)
        k = len(self.table)
        if null_arr.size not in (1, k):
            raise InvalidArgumentError(f"argument `null` has {null_arr.size} values for {k} terms; pass one or {k}")
        p = self._test_p_value(self.table["estimate"].to_numpy(float), self.table["std_error"].to_numpy(float),
                               null_arr)
        return _scalar_or_array(p)

    def _test_p_value(self, est, se, null):
        """The z-test, or with ``small_sample=True`` the t-test with the interval's degrees of freedom."""
        if self.df is None:
            return z_p_value(est, se, null)
        from ._small_sample import t_p_value
        return t_p_value(est, se, null, np.asarray(self.df, dtype=float))

    def _quantile_p_value(self, null) -> float:
        if isinstance(null, (bool, np.bool_)) or not isinstance(null, (int, float, np.integer, np.floating)) \
                or not math.isfinite(float(null)):
            raise InvalidArgumentError(f"argument `null` must be a finite number for a quantile; got {null!r}")
        t0 = float(null)
        test = self.test
        t = np.asarray(test["t"], dtype=float)
        j = int(np.searchsorted(t, t0, side="right")) - 1
        if t0 < float(test["t_min"]):  # below every data value: F = 0
            return float(z_p_value(0.0, test["bottom_se"], self.q))
        top_t, top_cdf, top_se = test["top"]
        if t0 >= top_t:
            return float(z_p_value(top_cdf, top_se, self.q))
        if j < 0 or t0 >= float(test["t_next"]):
            warnings.warn(f"the p-value at {t0!r} is below {test['threshold']:g}; the result keeps the test only "
                          "where its p-value is at least that", LLMSurrogateWarning, stacklevel=3)
            return float(test["threshold"])
        return float(z_p_value(test["cdf"][j], test["se"][j], self.q))

    # -- presentation ----------------------------------------------------------------------------
    def tidy(self) -> pd.DataFrame:
        """One row per term: ``term``, ``estimate``, ``std_error``, ``statistic`` (z against 0),
        ``p_value`` (against 0; NaN for a quantile), ``ci_low``, ``ci_high``, ``lam``,
        ``effective_n``, the classical columns, ``method``, ``level`` (and ``q`` for a quantile).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import ppi
        >>> rng = np.random.default_rng(0); X = np.column_stack([np.ones(400), rng.normal(size=400)])
        >>> Xu = np.column_stack([np.ones(4000), rng.normal(size=4000)])
        >>> y = X @ [1.0, 2.0] + rng.normal(size=400)
        >>> res = ppi.ols(X, y, y + rng.normal(size=400), Xu, Xu @ [1.0, 2.0] + rng.normal(size=4000))
        >>> res.tidy()[["term", "estimate", "std_error"]].round(3)
          term  estimate  std_error
        0   x0     1.000      0.042
        1   x1     2.071      0.044
        """
        out = self.table.copy()
        est, se = out["estimate"].to_numpy(float), out["std_error"].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            out.insert(3, "statistic", est / se)
        out.insert(4, "p_value", self._test_p_value(est, se, 0.0))
        if self.df is not None:
            out["df"] = np.asarray(self.df, dtype=float)
        out["method"] = self.method
        out["level"] = self.level
        if self.q is not None:
            out["q"] = self.q
        return out

    def summary(self) -> Summary:
        """The estimate in words and its table.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import ppi
        >>> rng = np.random.default_rng(0); y = rng.normal(size=300)
        >>> res = ppi.mean(y, y + rng.normal(size=300), rng.normal(size=3000), method="ppi")
        >>> print(res.summary().as_text().splitlines()[0])
        Prediction-powered inference: mean (PPI)
        """
        facts: dict[str, Any] = {
            "Method": {"classical": "classical (labelled rows only)", "ppi": "PPI (lambda = 1)",
                                  "ppi++": "PPI++ (lambda tuned)" if self.lam_tuned else "PPI++ (lambda given)"}[self.method],
            "Labelled rows (n)": self.n,
            "Unlabelled rows (N)": self.N,
            "Confidence level": self.level,
        }
        if self.q is not None:
            facts["Quantile (q)"] = self.q
        if self.method == "ppi++":
            lam = self.lam
            facts["lambda"] = lam if isinstance(lam, float) else ", ".join(f"{v:.4g}" for v in lam)
            if self.coord is not None:
                facts["lambda tuned for"] = self.coord
        if self.vcov is not None:
            facts["Variance"] = self.vcov
        elif self.clustered:
            facts["Variance"] = "cluster-robust"
        if self.weighted:
            facts["Weights"] = "yes (rescaled to sum to n and N)"
        cols = ["term", "estimate", "std_error", "ci_low", "ci_high", "effective_n", "classical_ci_low",
                "classical_ci_high"]
        table = self.table[cols]
        if self.estimand == "quantile":
            table = table.drop(columns=["std_error"])
        kind = "t-intervals (small_sample=True, docs/methods/ppi.md §5)" if self.df is not None else \
            "z-intervals (docs/methods/ppi.md)"
        notes = [*self.notes, (f"{self.level * 100:g}% {kind}; effective_n: the labelled "
                               "rows the classical estimator would need for the same variance.")]
        title = f"Prediction-powered inference: {_ESTIMANDS[self.estimand]} ({_LABELS[self.method]})"
        return Summary(title, facts=facts, tables=[("Estimates", table)], notes=notes, float_format="{:.5g}")

    def plot(self, ax=None, terms=None, **kwargs):
        """The interval of each term beside the classical interval on the labelled rows alone
        (docs/methods/ppi.md §6): one row per term, the estimate as a dot, the intervals as bars;
        PPI's above, the classical below (one bar per term for ``method="classical"``). ``terms``:
        the terms drawn (names or 0-based positions; all by default). Returns the matplotlib Figure
        (``ax``: draw into that Axes).

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import numpy as np; from llmsurrogate import ppi
        >>> rng = np.random.default_rng(0); y = rng.normal(size=300)
        >>> res = ppi.mean(y, y + rng.normal(scale=0.5, size=300), rng.normal(size=5000))
        >>> fig = res.plot()
        >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        ['PPI++ (95%)', 'classical, labelled rows only (95%)']
        """
        from .._plotting import axes_for, finish, legend_below

        table = self.table
        if terms is not None:
            wanted = [terms] if isinstance(terms, (str, int, np.integer)) else list(terms)
            names = self.terms
            rows = []
            for t in wanted:
                if isinstance(t, (int, np.integer)) and not isinstance(t, bool) and 0 <= int(t) < len(names):
                    rows.append(int(t))
                elif isinstance(t, str) and t in names:
                    rows.append(names.index(t))
                else:
                    raise InvalidArgumentError(f"argument `terms`: {t!r} is not a term; choose from {names} or "
                                               f"positions 0 to {len(names) - 1}")
            table = table.iloc[rows]
        k = len(table)
        fig, ax, owned = axes_for(ax, (6.4, 1.6 + 0.55 * k))
        classical = self.method != "classical" and bool(np.isfinite(table["classical_ci_low"].to_numpy(float)).any())
        off = 0.17 if classical else 0.0
        pos = np.arange(k)[::-1].astype(float)
        level = f"{self.level * 100:g}%"
        ax.hlines(pos + off, table["ci_low"], table["ci_high"], color="C0", lw=3.5,
                  label=f"{_LABELS[self.method]} ({level})")
        ax.plot(table["estimate"], pos + off, "o", color="C0", ms=6)
        if classical:
            ax.hlines(pos - off, table["classical_ci_low"], table["classical_ci_high"], color="0.45", lw=3.5,
                      label=f"classical, labelled rows only ({level})")
            ax.plot(table["classical_estimate"], pos - off, "o", mfc="white", mec="0.45", ms=6)
        ax.set_yticks(pos, [str(t) for t in table["term"]])
        ax.set_ylim(-0.6, k - 0.4)
        ax.grid(axis="x", alpha=0.3)
        what = _ESTIMANDS[self.estimand] + (f" (q = {self.q:g})" if self.q is not None else "")
        ax.set_title(f"Prediction-powered {what}: n = {self.n:,} labelled, N = {self.N:,} unlabelled rows",
                     fontsize="medium")
        ax.set_xlabel("estimate and confidence interval")
        legend_below(ax, ncol=2)
        return finish(fig, owned)


def make_table(terms, estimate, se, ci_low, ci_high, lam, effective_n, classical_estimate, classical_se,
               classical_low, classical_high) -> pd.DataFrame:
    """The table of a :class:`PPIResult` from per-term arrays (scalars are broadcast)."""
    k = len(terms)

    def col(v):
        return np.broadcast_to(np.asarray(v, dtype=float), (k,)).astype(float)

    return pd.DataFrame({"term": [str(t) for t in terms], "estimate": col(estimate), "std_error": col(se),
                         "ci_low": col(ci_low), "ci_high": col(ci_high), "lam": col(lam),
                         "effective_n": col(effective_n), "classical_estimate": col(classical_estimate),
                         "classical_std_error": col(classical_se), "classical_ci_low": col(classical_low),
                         "classical_ci_high": col(classical_high)}, columns=list(TABLE_COLUMNS))
