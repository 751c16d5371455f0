"""Result objects of the ESS capability: :class:`ErrorCurve` and :class:`EssResult`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtri

from .._deprecation import warn_deprecated
from .._plotting import axes_for, finish, log_scale_if_wide
from ..results import Result, Summary, result_dataclass


#: the learners' names in a figure's legend (any other algorithm: its own name)
_ALGORITHM_NAMES = {"rf": "random forest", "lasso": "lasso", "logit_l1": "L1-penalised logit", "mean": "training mean"}


def _algorithm_name(algorithm: str) -> str:
    return _ALGORITHM_NAMES.get(algorithm, algorithm)


def _training_size_axis(ax, ns) -> None:
    """N on a log axis with plain labels (1, 10, 100) when the grid spans decades."""
    log_scale_if_wide(ax, ns, axis="x", ratio=20)
    ax.set_xlabel("training size N")


@result_dataclass
class ErrorCurve(Result):
    """Block-out CV error curve N -> e_N with pointwise CIs (docs/methods/ess.md §2, §4, §5).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate.ess import error_curve
    >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=200)})
    >>> curve = error_curve(df, "y", algorithm="mean", grid=[1, 10], n_jobs=1)   # an ErrorCurve
    >>> curve.grid, curve.n, curve.loss, curve.level
    ([1, 10], 200, 'squared', 0.95)
    >>> curve.table["error"].round(2).tolist()
    [1.86, 1.06]
    """

    title: str
    table: Any
    algorithm: str
    loss: str
    regime: str
    #: the confidence level of the two-sided intervals (0.95)
    level: float
    n: int
    seed: Any
    grid: list
    tuning: str
    permutation_hash: str
    permutation: Any
    versions: dict
    monotonicity_violations: list
    notes: list
    bias_correct: bool = False

    @property
    def alpha(self) -> float:
        """Deprecated: 1 - :attr:`level` (this attribute's earlier name and meaning; until 0.3)."""
        warn_deprecated("ErrorCurve.alpha is now ErrorCurve.level (alpha = 1 - level)")
        return 1 - self.level

    @classmethod
    def _from_fields(cls, fields: dict) -> "ErrorCurve":
        # a curve saved before `alpha` became `level` (level = 1 - alpha)
        if "alpha" in fields and "level" not in fields:
            fields = {("level" if k == "alpha" else k): (1 - v if k == "alpha" else v) for k, v in fields.items()}
        return cls(**fields)

    def tidy(self):
        """One row per training size: the error, its standard error and CI (a copy of ``table``).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate.ess import error_curve
        >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=200)})
        >>> curve = error_curve(df, "y", algorithm="mean", grid=[1, 10], n_jobs=1)
        >>> curve.tidy()[["n_train", "error", "se"]].round(3)
           n_train  error     se
        0        1  1.857  0.166
        1       10  1.060  0.084
        """
        return self.table.copy()

    def summary(self) -> Summary:
        """The curve in words and its table (print it, or ``.as_text()``).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate.ess import error_curve
        >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=200)})
        >>> curve = error_curve(df, "y", algorithm="mean", grid=[1, 10], n_jobs=1)
        >>> print(curve.summary().as_text().splitlines()[0])
        Error curve: mean, squared loss, n = 200
        """
        cols = ["n_train", "n_blocks", "error", "se", "ci_low", "ci_high", "regime"]
        if "rmse" in self.table:
            cols += ["rmse", "rmse_se"]
        facts = {"observations (n)": self.n, "algorithm": self.algorithm, "loss": self.loss,
                 "tuning": self.tuning, "regime": self.regime, "seed": str(self.seed),
                 "CI level": f"{self.level:.0%} two-sided"}
        notes = list(self.notes)
        if self.monotonicity_violations:
            notes.append(f"monotonicity diagnostic: the curve rises significantly between N pairs {self.monotonicity_violations}")
        return Summary(self.title, facts=facts, tables=[("error curve", self.table[cols])], notes=notes)

    def plot(self, ax=None, scale: str = "error", **kwargs):
        """Error curve with its CI band (``scale='rmse'`` for squared loss: delta-method band), on
        ``ax`` if given. Returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import numpy as np, pandas as pd
        >>> from llmsurrogate.ess import error_curve
        >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=200)})
        >>> fig = error_curve(df, "y", algorithm="mean", grid=[1, 10], n_jobs=1).plot()
        >>> fig.axes[0].get_xlabel()
        'training size N'
        >>> fig.savefig("error_curve.png")
        """
        fig, ax, owned = axes_for(ax, (6.4, 4.2))
        t = self.table
        ns = t["n_train"].to_numpy()
        if scale == "rmse" and "rmse" in t:
            y, se = t["rmse"].to_numpy(), t["rmse_se"].to_numpy()
        else:
            y, se = t["error"].to_numpy(), t["se"].to_numpy()
        z = _z((1 + self.level) / 2)
        ax.plot(ns, y, "o-", color="tab:blue", label=f"{_algorithm_name(self.algorithm)} (block-out CV)", **kwargs)
        ax.fill_between(ns, y - z * se, y + z * se, color="tab:blue", alpha=0.2, label=f"{self.level:.0%} CI")
        _training_size_axis(ax, ns)
        ax.set_ylabel("RMSE" if scale == "rmse" else f"{self.loss} loss")
        ax.set_title(self.title, fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        return finish(fig, owned)


def _z(p: float) -> float:
    return float(ndtri(p))


@result_dataclass
class EssResult(Result):
    """Equivalent sample size of a fixed prediction rule against an algorithm (docs/methods/ess.md §3, §4.7, §6).

    ``lower_bound`` is the one-sided (1 - alpha) confidence bound Ñ*_α of Algorithm 3.1: the CI is
    [lower_bound, ∞). When every grid null is rejected, ``status == "all_rejected"`` and the
    conclusion is N* > max(grid) (lower_bound = max(grid) + 1 is still a valid bound, not a point
    estimate). ``plugin`` is the plug-in estimate N̂*: the first grid N whose block-out estimate of
    e_N - e_LLM (on the retained B*N rows) is <= 0, or ``inf`` when there is none on the grid.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate.ess import equivalent_sample_size
    >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=400), "rule": 0.0})
    >>> res = equivalent_sample_size(df, "y", "rule", algorithm="mean", grid=[1, 2, 5], n_jobs=1)   # an EssResult
    >>> res.ci, res.status
    ((6, inf), 'all_rejected')
    >>> res.conclusion()
    'The rule beats mean at every grid size up to N = 5: ESS > 5 (95% one-sided CI [6, inf)).'
    """

    title: str
    table: Any
    lower_bound: int
    plugin: float
    llm_error: float
    llm_se: float
    status: str
    stop_n_train: Any
    no_llm_advantage_at_N1: bool
    algorithm: str
    loss: str
    alpha: float
    variance: str
    regime: str
    tuning: str
    n: int
    seed: Any
    grid: list
    permutation_hash: str
    permutation: Any
    versions: dict
    monotonicity_violations: list
    notes: list
    bias_correct: bool = False

    @property
    def ci(self) -> tuple[int, float]:
        """The one-sided confidence interval [lower_bound, inf)."""
        return (int(self.lower_bound), math.inf)

    def tidy(self):
        """One row per training size: the test of the rule against the algorithm (a copy of ``table``).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate.ess import equivalent_sample_size
        >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=400), "rule": 0.0})
        >>> res = equivalent_sample_size(df, "y", "rule", algorithm="mean", grid=[1, 2, 5], n_jobs=1)
        >>> res.tidy()["n_train"].tolist()
        [1, 2, 5]
        """
        return self.table.copy()

    def conclusion(self) -> str:
        """The result in one sentence.

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate.ess import equivalent_sample_size
        >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=400), "rule": 0.0})
        >>> res = equivalent_sample_size(df, "y", "rule", algorithm="mean", grid=[1, 2, 5], n_jobs=1)
        >>> res.conclusion()
        'The rule beats mean at every grid size up to N = 5: ESS > 5 (95% one-sided CI [6, inf)).'
        """
        a = f"{1 - self.alpha:.0%}"
        if self.status == "all_rejected":
            return (f"The rule beats {self.algorithm} at every grid size up to N = {max(self.grid)}: "
                    f"ESS > {max(self.grid)} ({a} one-sided CI [{self.lower_bound}, inf)).")
        if self.lower_bound == 1:
            return (f"No evidence that the rule beats {self.algorithm} trained on N = {self.grid[0]}: "
                    f"trivial bound, CI [1, inf).")
        return (f"The rule is worth at least {self.lower_bound} observations for {self.algorithm} "
                f"({a} one-sided CI [{self.lower_bound}, inf)).")

    def summary(self) -> Summary:
        """The ESS in words and its table (print it, or ``.as_text()``).

        Examples
        --------
        >>> import numpy as np, pandas as pd; from llmsurrogate.ess import equivalent_sample_size
        >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=400), "rule": 0.0})
        >>> res = equivalent_sample_size(df, "y", "rule", algorithm="mean", grid=[1, 2, 5], n_jobs=1)
        >>> print(res.summary().as_text().splitlines()[0])
        ESS of the fixed rule vs mean, squared loss, n = 400
        """
        cols = ["n_train", "n_blocks", "algo_error", "algo_se", "llm_error", "diff", "diff_se", "z", "p_value",
                "reject", "regime"]
        plug = "> max grid" if math.isinf(self.plugin) else int(self.plugin)
        facts = {"ESS lower bound": self.lower_bound, "CI": f"[{self.lower_bound}, inf)", "status": self.status,
                 "plug-in ESS": plug, "LLM error (all n)": self.llm_error, "LLM error SE": self.llm_se,
                 "algorithm": self.algorithm, "loss": self.loss, "tuning": self.tuning, "variance": self.variance,
                 "regime": self.regime, "alpha (one-sided)": self.alpha, "observations (n)": self.n,
                 "seed": str(self.seed)}
        notes = [self.conclusion(), *self.notes]
        if self.monotonicity_violations:
            notes.append("monotonicity diagnostic fired (the error curve rises significantly between "
                         f"N pairs {self.monotonicity_violations}); the sequential CI assumes a nonincreasing curve")
        if bool(self.table["degenerate"].any()):
            notes.append("some grid points had a zero difference-loss variance (identical predictions); not rejected")
        return Summary(self.title, facts=facts, tables=[("sequential tests", self.table[cols])], notes=notes)

    def plot(self, ax=None, scale: str = "error", rule_label: str = "fixed rule (LLM)", **kwargs):
        """The paper's figure: error curve with CI band, LLM error line with its band, the ESS bound
        marked; on ``ax`` if given. ``scale="rmse"`` (squared loss) shows RMSEs with delta-method
        bands. The y axis is logarithmic when the errors span decades. Returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import numpy as np, pandas as pd
        >>> from llmsurrogate.ess import equivalent_sample_size
        >>> df = pd.DataFrame({"y": np.random.default_rng(0).normal(size=400), "rule": 0.0})
        >>> res = equivalent_sample_size(df, "y", "rule", algorithm="mean", grid=[1, 2, 5], n_jobs=1)
        >>> fig = res.plot()
        >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()][:2]
        ['training mean', 'fixed rule (LLM)']
        >>> fig.savefig("ess.png")
        """
        fig, ax, owned = axes_for(ax, (6.4, 4.2))
        t = self.table
        ns = t["n_train"].to_numpy()
        z = _z(1 - self.alpha / 2)
        y, se = t["algo_error"].to_numpy(), t["algo_se"].to_numpy()
        ly, lse = self.llm_error, self.llm_se
        ylabel = f"{self.loss} loss"
        if scale == "rmse" and self.loss == "squared":
            se = se / (2 * np.sqrt(np.maximum(y, 1e-300)))
            y = np.sqrt(y)
            lse = lse / (2 * math.sqrt(max(ly, 1e-300)))
            ly = math.sqrt(ly)
            ylabel = "RMSE"
        ax.plot(ns, y, "o-", color="tab:blue", ms=4, label=_algorithm_name(self.algorithm), **kwargs)
        ax.fill_between(ns, y - z * se, y + z * se, color="tab:blue", alpha=0.2)
        ax.axhline(ly, color="tab:red", lw=1.5, label=rule_label)
        ax.axhspan(ly - z * lse, ly + z * lse, color="tab:red", alpha=0.12)
        if self.status == "all_rejected" or self.lower_bound > 1:
            ax.axvline(self.lower_bound, color="k", ls="--", lw=1,
                       label=f"ESS lower bound {self.lower_bound}" + (" (ESS > grid)" if self.status == "all_rejected" else ""))
        if math.isfinite(self.plugin):
            ax.plot([self.plugin], [np.interp(self.plugin, ns, y)], "k*", ms=9, label=f"plug-in {int(self.plugin)}")
        _training_size_axis(ax, ns)
        log_scale_if_wide(ax, np.r_[y, ly], axis="y")
        ax.set_ylabel(ylabel)
        ax.set_title(self.title, fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        return finish(fig, owned)
