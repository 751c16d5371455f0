"""The result objects of the transfer capability (all on :class:`llmsurrogate.results.Result`):
forecast intervals of several models, worst-case curves over Gamma, everywhere dominance with
witnesses, the paper's application, and the demo's interval table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_gamma
from ..exceptions import InvalidArgumentError
from ..results import Result, Summary, TableResult, result_dataclass

__all__ = ["ForecastIntervals", "WorstCaseCurve", "EverywhereDominance", "TransferApplication", "IntervalTable"]


def _step(gs: np.ndarray, vs: np.ndarray, gamma: float) -> float:
    i = min(int(np.searchsorted(gs, gamma, side="left")), len(vs) - 1)
    return float(vs[i])


@result_dataclass
class ForecastIntervals(Result):
    """Forecast intervals of several models (rows: model × coverage level × side).

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate.transfer import forecast_intervals
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> res = forecast_intervals({"A": E, "B": 2 * E}, level=0.6)
    >>> res.n, res.r, res.table.columns.tolist()
    (3, 1, ['model', 'coverage', 'side', 'tau', 'lower', 'upper', 'guaranteed'])
    """

    table: Any
    n: int
    r: int

    def tidy(self):
        return self.table.copy()

    def summary(self) -> Summary:
        return Summary("Transfer-error forecast intervals", facts={"domains (n)": self.n, "training domains (r)": self.r},
                       tables=[("intervals", self.table)],
                       notes=["guaranteed = Proposition 1's lower bound on coverage under exchangeable domains"])

    def plot(self, ax=None, side: str = "two", log: bool = True, **kwargs):
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * self.table["model"].nunique()))
        df = self.table[self.table["side"] == side]
        models = list(dict.fromkeys(df["model"]))
        levels = sorted(df["coverage"].unique())
        colors = plt.cm.viridis(np.linspace(0.15, 0.85, max(len(levels), 1)))
        for li, (lev, col) in enumerate(zip(levels, colors)):
            sub = df[df["coverage"] == lev]
            for i, m in enumerate(models):
                row = sub[sub["model"] == m]
                if row.empty:
                    continue
                y = i + (li - (len(levels) - 1) / 2) * 0.18
                ax.plot([row["lower"].iloc[0], row["upper"].iloc[0]], [y, y], color=col, lw=3,
                        label=f"{lev:.0%} nominal" if i == 0 else None, solid_capstyle="butt")
        ax.set_yticks(range(len(models)), models)
        if log and (df["lower"] > 0).all():
            ax.set_xscale("log")
        ax.set_xlabel("transfer error")
        ax.legend(fontsize="small", loc="best")
        ax.set_title("Forecast intervals for the transfer error to a new domain")
        return ax


@result_dataclass
class WorstCaseCurve(Result):
    """ē_τ(Γ) and e̲_τ(Γ) as exact step functions of Γ, one block of rows per τ.

    ``steps``: columns tau, bound ("upper"/"lower"), gamma_from, gamma_to, value: the bound equals
    ``value`` for Γ in (gamma_from, gamma_to] (the first piece includes Γ = 1).

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate.transfer import worst_case_curve
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> curve = worst_case_curve(E, tau=0.8, lower=False)
    >>> curve.steps.columns.tolist()
    ['tau', 'bound', 'gamma_from', 'gamma_to', 'value']
    >>> curve.value(0.8, Gamma=1.0), curve.value(0.8, Gamma=2.0)
    (5.0, 6.0)
    """

    steps: Any
    name: str = ""

    def tidy(self):
        return self.steps.copy()

    def value(self, tau: float, Gamma: float, bound: str = "upper") -> float:  # noqa: N803
        s = self.steps[(np.isclose(self.steps["tau"], tau)) & (self.steps["bound"] == bound)]
        if s.empty:
            raise InvalidArgumentError(f"tau {tau} is not in this curve")
        return _step(s["gamma_to"].to_numpy(), s["value"].to_numpy(), check_gamma(Gamma))

    def summary(self) -> Summary:
        return Summary(f"Worst-case transfer-error bounds over Gamma{': ' + self.name if self.name else ''}",
                       tables=[("step functions (value on (gamma_from, gamma_to])", self.steps)],
                       notes=["exact breakpoints (docs/methods/transfer.md §3.3); coverage >= (2tau-1)(n-r)/(n+Gamma^2) (Corollary 1)"])

    def plot(self, ax=None, gamma_max: float = 100.0, **kwargs):
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        for (tau, bound), s in self.steps.groupby(["tau", "bound"], sort=True):
            xs, ys = [1.0], []
            for g0, g1, v in zip(s["gamma_from"], s["gamma_to"], s["value"]):
                ys += [v, v]
                xs += [min(g1, gamma_max)] * 2
                if g1 >= gamma_max:
                    break
            xs = xs[:-1]
            ax.plot(xs[: len(ys)], ys, drawstyle="default", ls="-" if bound == "upper" else "--",
                    label=f"tau={tau:g} {bound}", **kwargs)
        ax.set_xscale("log")
        ax.set_xlabel("Gamma (bound on the likelihood ratio)")
        ax.set_ylabel("worst-case quantile of the transfer error")
        ax.legend(fontsize="small")
        return ax


@result_dataclass
class EverywhereDominance(Result):
    """Everywhere dominance per τ with witnesses of violations.

    ``table``: tau, dominates, j, m, witness (domain labels and weights of the two-point weight
    vector), upper1, upper2 (ē₁^w and ē₂^w at the witness, w = v + ε, recomputed independently).

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate.transfer import everywhere_dominance
    >>> E1 = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> E2 = np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]])
    >>> res = everywhere_dominance(E1, E2, taulist=[0.7])
    >>> res.mode, res.table[["dominates", "witness", "upper1", "upper2"]].values.tolist()
    ('exact', [[False, {'0': 1.0}, 5.0, 4.0]])
    """

    table: Any
    mode: str

    def tidy(self):
        return self.table.copy()

    def summary(self) -> Summary:
        return Summary(f"Everywhere dominance (mode={self.mode})", tables=[("per tau", self.table)],
                       notes=["closed-simplex semantics (zero weights allowed), as in Appendix R.3",
                              "mode='exact' has no pruning; 'paper'/'transferUQ' reproduce the invalid j >= tau N pruning"])


@result_dataclass
class TransferApplication(Result):
    """Forecast intervals per model and metric, and dominance between models per τ.

    Examples
    --------
    >>> from llmsurrogate.transfer.demo import run_transfer_application
    >>> app = run_transfer_application(level=(0.9,), taus=[0.9])
    >>> app.intervals.shape, app.dominance.columns.tolist()
    ((9, 8), ['model', 'other', 'metric', 'tau', 'worst_case', 'everywhere', 'everywhere_paper'])
    """

    intervals: Any
    dominance: Any
    worst_case: Any

    def tidy(self):
        return self.intervals.copy()

    def summary(self) -> Summary:
        d = self.dominance
        rows = []
        for (model, other, metric), g in d.groupby(["model", "other", "metric"], sort=False):
            def first(col, g=g):
                hit = g[col].to_numpy()
                if not hit.any():
                    return "never"
                lo = g.tau.to_numpy()[hit].min()
                if hit[g.tau.to_numpy() >= lo].all():
                    return f"tau >= {lo:.2f}"
                return f"{int(hit.sum())} of {hit.size} taus (from {lo:.2f})"

            rows.append({"comparison": f"{model} vs {other}", "metric": metric, "worst case": first("worst_case"),
                         "everywhere (exact)": first("everywhere"), "everywhere (paper)": first("everywhere_paper")})
        return Summary("Transfer performance of EU, CPT and a random forest across 44 subject pools",
                       facts={"domains (n)": 44, "training domains (r)": 1},
                       tables=[("forecast intervals (two-sided)", self.intervals),
                               ("dominance (method 1 has smaller upper quantiles), tau in 0.50:0.01:1", pd.DataFrame(rows))],
                       notes=["'everywhere (paper)' uses the paper's pruning j >= tau N, which docs/methods/transfer.md §4.4 shows is "
                              "invalid; the exact check (the default) confirms everywhere dominance only for EU over RF in "
                              "deterioration at high tau"])

    def plot(self, ax=None, **kwargs):
        """Two panels: forecast intervals per model (raw error) and ē_τ(Γ) over Γ. Returns the Figure."""
        import matplotlib.pyplot as plt

        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
        sub = self.intervals[self.intervals.metric == "raw transfer error"]
        models = list(dict.fromkeys(sub.model))
        covs = sorted(sub.coverage.unique())
        colors = plt.cm.viridis(np.linspace(0.2, 0.8, len(covs)))
        for ci, (c, col) in enumerate(zip(covs, colors)):
            s = sub[sub.coverage == c]
            for i, m in enumerate(models):
                r = s[s.model == m].iloc[0]
                y = i + (ci - 1) * 0.2
                a1.plot([r.lower, r.upper], [y, y], color=col, lw=4, solid_capstyle="butt",
                        label=f"{c:.0%} nominal ({r.guaranteed:.0%} guaranteed)" if i == 0 else None)
        a1.set_xscale("log")
        a1.set_yticks(range(len(models)), models)
        a1.set_xlabel("raw transfer error (RMSE, $)")
        a1.set_title("Forecast intervals, new subject pool")
        a1.legend(fontsize="x-small", loc="center right")
        wc = self.worst_case
        for m, g in wc.groupby("model", sort=False):
            xs, ys = [], []
            for g0, g1, v in zip(g.gamma_from, g.gamma_to, g.value):
                xs += [g0, min(g1, 100.0)]
                ys += [v, v]
                if g1 >= 100:
                    break
            a2.plot(xs, ys, label=m)
        a2.set_xscale("log")
        a2.set_yscale("log")
        a2.set_xlabel("Γ (bound on the likelihood ratio)")
        a2.set_ylabel("worst-case 90% quantile ē(Γ)")
        a2.set_title("Worst case over shifted target distributions")
        a2.legend(fontsize="small")
        fig.tight_layout()
        return fig


@result_dataclass
class IntervalTable(TableResult):
    """A table of intervals (columns ``model``, ``metric``, ``lower``, ``upper``) that plots itself.

    Examples
    --------
    >>> import pandas as pd
    >>> tab = IntervalTable(title="Two intervals", table=pd.DataFrame(
    ...     {"model": ["A", "B"], "metric": ["raw transfer error"] * 2, "lower": [1.0, 2.0], "upper": [3.0, 5.0]}))
    >>> tab.tidy()["upper"].tolist(), tab.summary().title
    ([3.0, 5.0], 'Two intervals')
    """

    def plot(self, ax=None, **kwargs):
        """One panel per metric, a horizontal interval per model. Returns the matplotlib Figure.

        ``ax`` is not used: the figure has one panel per metric."""
        import matplotlib.pyplot as plt

        metrics = list(dict.fromkeys(self.table["metric"]))
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
        for axis, metric in zip(axes[0], metrics):
            sub = self.table[self.table["metric"] == metric].reset_index(drop=True)
            y = np.arange(len(sub))[::-1]
            axis.hlines(y, sub["lower"], sub["upper"], color="tab:blue", lw=3)
            axis.plot(sub["lower"], y, "|", color="k")
            axis.plot(sub["upper"], y, "|", color="k")
            axis.set_yticks(y, sub["model"])
            axis.set_title(metric)
            if metric == "raw transfer error":
                from matplotlib.ticker import FuncFormatter, NullFormatter

                axis.set_xscale("log")
                lo, hi = sub["lower"].min(), sub["upper"].max()
                axis.set_xticks([t for t in (1, 2, 3, 5, 10, 20, 30, 50, 100, 200) if lo * 0.8 <= t <= hi * 1.25])
                axis.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))
                axis.xaxis.set_minor_formatter(NullFormatter())
            axis.grid(axis="x", alpha=0.3)
        fig.suptitle(self.title, fontsize=10)
        fig.tight_layout()
        return fig
