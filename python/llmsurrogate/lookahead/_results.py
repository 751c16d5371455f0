"""The result objects of the lookahead test: :class:`LookaheadTest` (the regression test, §2.2–§2.4)
and :class:`LookaheadBootstrap` (the pairs bootstrap of the interaction, §2.7, Figure III)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._deprecation import deprecated_arguments, warn_deprecated
from .._plotting import axes_for, finish
from .._validation import reject_lossy
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..fe import FeolsResult, etable
from ..results import Result, Summary, result_dataclass


@deprecated_arguments(positional=2)
def bootstrap_p_value(draws, reference: float = 0.0, *, side: str = "greater", plus_one: bool = False) -> float:
    """One-sided bootstrap p-value (§2.7): ``side="greater"`` gives #{draws >= reference} / B (the
    paper's Figure III test with the in-sample estimate as ``reference``), ``"less"`` #{draws <=
    reference} / B; ``plus_one`` gives (1 + #) / (B + 1), never 0. Draws that are not finite (NaN:
    a failed replication) are left out, counted in a warning; B counts the finite draws.
    ``bootstrap_pvalue`` (the old name) and ``side``/``plus_one`` by position still work, with a
    FutureWarning.

    Examples
    --------
    >>> bootstrap_p_value([0.1, 0.5, 0.9, 1.2], reference=0.8)
    0.5
    >>> bootstrap_p_value([0.1, 0.5, 0.9, 1.2], reference=0.8, plus_one=True)
    0.6
    """
    reject_lossy(draws, "draws")
    d = np.asarray(draws, dtype=np.float64).ravel()
    finite = np.isfinite(d)
    if not finite.any():
        raise InvalidArgumentError("argument `draws` has no finite value")
    if not finite.all():
        warnings.warn(f"{int((~finite).sum())} of {d.size} values of `draws` are not finite (NaN or inf) and are left "
                      f"out: the p-value counts the {int(finite.sum())} finite draws", LLMSurrogateWarning,
                      stacklevel=3)  # 3: past the deprecation wrapper
        d = d[finite]
    if side not in ("greater", "less"):
        raise InvalidArgumentError(f"argument `side` must be 'greater' or 'less'; got {side!r}")
    try:
        reference = float(reference)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"argument `reference` must be a number; got {reference!r}") from None
    count = int((d >= reference).sum()) if side == "greater" else int((d <= reference).sum())
    return (1 + count) / (d.size + 1) if plus_one else count / d.size


def bootstrap_pvalue(draws, reference: float = 0.0, side: str = "greater", plus_one: bool = False) -> float:
    """Deprecated name of :func:`bootstrap_p_value`."""
    warn_deprecated("bootstrap_pvalue() is now bootstrap_p_value()")
    return bootstrap_p_value(draws, reference, side=side, plus_one=plus_one)


@result_dataclass
class LookaheadTest(Result):
    """The lookahead-bias test: the interaction ``term`` (signal x LAP) of the fixed-effects
    regression, its standard error, t statistic (``df`` degrees of freedom), one-sided p-values
    (``p_greater`` for H1: delta > 0, the lookahead-bias alternative; ``p_less``) and the two-sided
    one; ``magnitudes`` (§2.3: marginal effect of the signal at the mean LAP, delta x SD(LAP), its
    ratio to the baseline signal coefficient); ``regression`` and ``baseline`` are the two fits
    (Table II columns 2 and 1) as :class:`~llmsurrogate.fe.FeolsResult`.

    Examples
    --------
    >>> from llmsurrogate.lookahead import lookahead_test
    >>> from llmsurrogate.lookahead.demo import small_panel
    >>> df = small_panel()   # 600 rows: ret = (0.1 + 0.5 lap) llm + noise
    >>> res = lookahead_test(df, "ret", "llm", "lap")          # a LookaheadTest
    >>> res.regression.terms, res.baseline.terms, round(res.magnitudes["interaction_per_sd"], 3)
    (['llm', 'lap', 'llm:lap'], ['llm'], 0.156)
    """

    outcome: str
    signal: str
    lap: str
    term: str
    fe: list
    cluster: Any
    controls: list
    standardized: bool
    estimate: float
    std_error: float
    statistic: float
    df: int
    p_greater: float
    p_less: float
    p_two_sided: float
    nobs: int
    n_input: int
    n_dropped: int
    lap_mean: float
    lap_sd: float
    lap_min: float  # the smallest and largest LAP of the rows used (standardised where asked)
    lap_max: float
    signal_sd: float
    magnitudes: dict
    fit: str  # the interaction regression's JSON (FeolsResult.to_json)
    baseline_fit: str
    notes: tuple = ()

    @property
    def regression(self):
        """The interaction regression (a :class:`~llmsurrogate.fe.FeolsResult`)."""
        return FeolsResult.from_json(self.fit)

    @property
    def baseline(self):
        """The regression on the signal without the LAP terms (Table II column 1)."""
        return FeolsResult.from_json(self.baseline_fit)

    @property
    def p_value(self) -> float:
        """The one-sided p-value of H0: delta <= 0 against H1: delta > 0 (lookahead bias)."""
        return self.p_greater

    def tidy(self):
        """One row: the interaction's estimate, standard error, t statistic and p-values.

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> res = lookahead.lookahead_test(small_panel(), "ret", "llm", "lap")
        >>> res.tidy()[["term", "estimate", "std_error", "p_value_greater"]].round(3)
              term  estimate  std_error  p_value_greater
        0  llm:lap     0.529      0.097              0.0
        """
        return pd.DataFrame({
            "term": [self.term], "estimate": [self.estimate], "std_error": [self.std_error],
            "statistic": [self.statistic], "df": [self.df], "p_value_greater": [self.p_greater],
            "p_value_less": [self.p_less], "p_value_two_sided": [self.p_two_sided],
        })

    def etable(self, type: str = "text", digits: int = 3):
        """Both regressions side by side (:func:`llmsurrogate.fe.etable`).

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> res = lookahead.lookahead_test(small_panel(), "ret", "llm", "lap")
        >>> print(res.etable().splitlines()[0])
                               (1)           (2)
        """
        return etable([self.baseline, self.regression], type=type, digits=digits)

    def summary(self) -> Summary:
        """The test in words and its table (print it, or ``.as_text()``).

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> res = lookahead.lookahead_test(small_panel(), "ret", "llm", "lap")
        >>> print(res.summary().as_text().splitlines()[0])
        Lookahead-bias test
        """
        facts: dict[str, Any] = {
            "Interaction": self.term,
            "Estimate": self.estimate,
            "Std. error": self.std_error,
            "t statistic": self.statistic,
            "p (H1: delta > 0)": self.p_greater,
            "p (two-sided)": self.p_two_sided,
            "Degrees of freedom": self.df,
            "Observations": self.nobs,
            "Fixed effects": " + ".join(self.fe),
            "Standard errors": f"clustered by {self.cluster}" if self.cluster else "HC1",
        }
        for k, v in self.magnitudes.items():
            facts[k.replace("_", " ")] = v
        table = self.etable(type="df").reset_index().rename(columns={"index": ""})
        notes = list(self.notes) + [
            "A positive interaction (the signal is more accurate on familiar texts) is the signature of lookahead "
            "bias; a small-contamination diagnostic (docs/methods/lookahead.md §2.2). p-values from the t "
            f"distribution with {self.df} degrees of freedom; no singleton removal (§2.4)."]
        return Summary("Lookahead-bias test", facts=facts, tables=[("Regressions", table)], notes=notes,
                       float_format="{:.5g}")


@result_dataclass
class LookaheadBootstrap(Result):
    """The pairs bootstrap of the interaction coefficient: ``draws`` (one per replication; NaN for
    the ``n_singular`` + ``n_unconverged`` that failed), the full-sample ``estimate``, the
    ``reference`` it is compared with (the in-sample estimate in the paper's Figure III) and the
    settings (``n_boot``, ``seed``, ``resample``). The replications are stored in the field
    ``reps`` (its name in saved results and the JSON files), read as ``n_boot``.

    Examples
    --------
    >>> from llmsurrogate.lookahead import bootstrap
    >>> from llmsurrogate.lookahead.demo import small_panel
    >>> df = small_panel()   # 600 rows: ret = (0.1 + 0.5 lap) llm + noise
    >>> boot = bootstrap(df, "ret", "llm", "lap", n_boot=200, seed=1, n_jobs=1)   # a LookaheadBootstrap
    >>> boot.quantile([0.05, 0.95]).round(2).tolist(), boot.p_value_at(reference=0.3)
    ([0.37, 0.69], 0.985)
    """

    outcome: str
    signal: str
    lap: str
    term: str
    fe: list
    controls: list
    standardized: bool
    resample: str
    n_blocks: int
    reps: int  # read as n_boot; the field keeps its name in saved results
    seed: int
    estimate: float
    reference: Any
    draws: Any  # ndarray (n_boot,)
    n_singular: int
    n_unconverged: int
    nobs: int
    seconds: float
    notes: tuple = ()

    @property
    def n_boot(self) -> int:
        """The number of replications (stored as ``reps``)."""
        return self.reps

    @property
    def method(self) -> str:
        """The resampling scheme in words: ``"pairs bootstrap"`` (rows, ``resample="obs"``) or
        e.g. ``"date-block bootstrap (40 blocks)"`` (the levels of a column)."""
        if self.resample == "obs":
            return "pairs bootstrap"
        return f"{self.resample}-block bootstrap ({self.n_blocks:,} blocks)"

    def p_value_at(self, reference: float | None = None, side: str | None = None, plus_one: bool = False) -> float:
        """One-sided p-value: with a reference (default: ``self.reference``), #{draws >= reference}
        / B (``side="greater"``, the paper's); without one, #{draws <= 0} / B (``side="less"``, the
        percentile test of H0: delta <= 0). ``plus_one``: (1 + #) / (B + 1). The property
        :attr:`p_value` is this with the defaults.

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> boot = lookahead.bootstrap(small_panel(), "ret", "llm", "lap", n_boot=100, seed=1, n_jobs=1)
        >>> boot.p_value_at(reference=0.3), boot.p_value_at(reference=0.3, plus_one=True)
        (0.99, 0.9900990099009901)
        """
        ref = self.reference if reference is None else reference
        d = np.asarray(self.draws, dtype=float)
        d = d[np.isfinite(d)]   # failed replications: counted in the notes already
        if ref is None:
            return bootstrap_p_value(d, 0.0, side=side or "less", plus_one=plus_one)
        return bootstrap_p_value(d, ref, side=side or "greater", plus_one=plus_one)

    def pvalue(self, reference: float | None = None, side: str | None = None, plus_one: bool = False) -> float:
        """Deprecated name of :meth:`p_value_at` (one name per idea: :attr:`p_value` is the property).

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> boot = lookahead.bootstrap(small_panel(), "ret", "llm", "lap", n_boot=100, seed=1, n_jobs=1)
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     p = boot.pvalue(reference=0.3)
        >>> p == boot.p_value_at(reference=0.3), caught[0].category.__name__
        (True, 'FutureWarning')
        """
        warn_deprecated("LookaheadBootstrap.pvalue() is now LookaheadBootstrap.p_value_at()")
        return self.p_value_at(reference, side, plus_one)

    @property
    def p_value(self) -> float:
        """``#/B`` (see :meth:`p_value_at`)."""
        return self.p_value_at()

    @property
    def p_value_plus_one(self) -> float:
        """(1 + #) / (B + 1) (see :meth:`p_value_at`)."""
        return self.p_value_at(plus_one=True)

    def quantile(self, q):
        """Quantiles of the finite draws.

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> boot = lookahead.bootstrap(small_panel(), "ret", "llm", "lap", n_boot=100, seed=1, n_jobs=1)
        >>> boot.quantile([0.05, 0.5, 0.95]).round(3).tolist()
        [0.365, 0.53, 0.693]
        """
        d = np.asarray(self.draws, dtype=float)
        return np.quantile(d[np.isfinite(d)], q)

    def tidy(self):
        """One row: the estimate, the draws' mean, sd and 95% quantile, the p-values.

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> boot = lookahead.bootstrap(small_panel(), "ret", "llm", "lap", n_boot=100, seed=1, n_jobs=1)
        >>> boot.tidy()[["term", "estimate", "boot_sd", "q95", "reps"]].round(3)
              term  estimate  boot_sd    q95  reps
        0  llm:lap     0.529      0.1  0.693   100
        """
        d = np.asarray(self.draws, dtype=float)
        d = d[np.isfinite(d)]
        return pd.DataFrame({
            "term": [self.term], "estimate": [self.estimate], "reference": [np.nan if self.reference is None else self.reference],
            "boot_mean": [float(d.mean())], "boot_sd": [float(d.std(ddof=1)) if d.size > 1 else np.nan],
            "q95": [float(np.quantile(d, 0.95))], "p_value": [self.p_value], "p_value_plus_one": [self.p_value_plus_one],
            "reps": [self.reps], "finite_reps": [int(d.size)],
        })

    def summary(self) -> Summary:
        """The bootstrap in words and its table (print it, or ``.as_text()``).

        Examples
        --------
        >>> from llmsurrogate import lookahead; from llmsurrogate.lookahead.demo import small_panel
        >>> boot = lookahead.bootstrap(small_panel(), "ret", "llm", "lap", n_boot=100, seed=1, n_jobs=1)
        >>> print(boot.summary().as_text().splitlines()[0])
        Pairs bootstrap of the lookahead interaction
        """
        rule = (f"#{{draws >= {self.reference:.5g}}} / B" if self.reference is not None else "#{draws <= 0} / B")
        facts = {"Interaction": self.term, "Estimate (full sample)": self.estimate, "Reference": self.reference,
                 "Replications": self.reps, "Resample": self.resample if self.resample == "obs" else
                 f"blocks of {self.resample} ({self.n_blocks})", "Seed": self.seed, "Observations": self.nobs,
                 f"p = {rule}": self.p_value, "p = (1 + #) / (B + 1)": self.p_value_plus_one,
                 "Seconds": self.seconds}
        return Summary(f"{self.method[0].upper()}{self.method[1:]} of the lookahead interaction", facts=facts, tables=[("", self.tidy())],
                       notes=list(self.notes), float_format="{:.5g}")

    def plot(self, ax=None, bins: int = 50, reference_label: str = "reference", **kwargs):
        """Histogram of the draws as the paper's Figure III: the 95th percentile (blue dotted) and the
        reference (red solid, labelled ``reference_label`` and its value) when there is one; titled with the resampling scheme used (pairs or
        blocks of a column) and the replications. On ``ax`` if given; ``kwargs`` go to matplotlib's
        ``hist``. Returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> from llmsurrogate.lookahead import bootstrap
        >>> from llmsurrogate.lookahead.demo import small_panel
        >>> boot = bootstrap(small_panel(), "ret", "llm", "lap", n_boot=50, seed=1, resample="date", n_jobs=1)
        >>> fig = boot.plot()
        >>> fig.axes[0].get_title()
        'Date-block bootstrap (20 blocks) of llm:lap, 50 replications'
        >>> fig.savefig("bootstrap.png")
        """
        fig, ax, owned = axes_for(ax, (6.4, 4.2))
        d = np.asarray(self.draws, dtype=float)
        d = d[np.isfinite(d)]
        ax.hist(d, bins=bins, color=kwargs.pop("color", "0.7"), edgecolor="white", **kwargs)
        ax.axvline(float(np.quantile(d, 0.95)), color="tab:blue", linestyle=":", label="95th percentile")
        if self.reference is not None:
            ax.axvline(float(self.reference), color="tab:red", linestyle="-", label=f"{reference_label} {self.reference:.4g}")
        ax.set_xlabel(f"bootstrap {self.term}")
        ax.set_ylabel("count")
        ax.set_title(f"{self.method[0].upper()}{self.method[1:]} of {self.term}, {self.reps:,} replications",
                     fontsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.18)  # headroom: the legend sits above the bars
        ax.legend(frameon=False, loc="upper left")
        return finish(fig, owned)
