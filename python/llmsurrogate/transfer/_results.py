"""The result objects of the transfer capability (all on :class:`llmsurrogate.results.Result`):
forecast intervals of several models, worst-case curves over Gamma, everywhere dominance with
witnesses, the paper's application, and the demo's interval table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._plotting import axes_for, finish, legend_below, log_scale_if_wide, plain_log_ticks, plain_number
from .._validation import check_gamma
from ..exceptions import InvalidArgumentError
from ..results import Result, Summary, TableResult, result_dataclass

__all__ = ["ForecastIntervals", "WorstCaseCurve", "EverywhereDominance", "TransferApplication", "IntervalTable"]


def _step(gs: np.ndarray, vs: np.ndarray, gamma: float) -> float:
    i = min(int(np.searchsorted(gs, gamma, side="left")), len(vs) - 1)
    return float(vs[i])


def _step_path(steps: pd.DataFrame, gamma_max: float) -> tuple[np.ndarray, np.ndarray]:
    """The x, y of a step function (``value`` on (gamma_from, gamma_to]) drawn over [1, gamma_max]."""
    xs: list[float] = []
    ys: list[float] = []
    for g0, g1, v in zip(steps["gamma_from"], steps["gamma_to"], steps["value"]):
        xs += [max(float(g0), 1.0), min(float(g1), gamma_max)]
        ys += [float(v), float(v)]
        if g1 >= gamma_max:
            break
    return np.asarray(xs), np.asarray(ys)


def _one_panel(kind: str, ax: Any, panels: int) -> None:
    if ax is not None:
        raise InvalidArgumentError(f"argument `ax`: {kind}.plot() draws {panels} panels in a figure of its own; "
                                   "call it without `ax` (it returns the Figure)")


def _draw_intervals(ax, frame: pd.DataFrame, log: bool | None) -> None:
    """Horizontal intervals, one row per model, one bar per nominal level (dodged, darker for the
    lower level), the legend under the axes (off the bars); ``frame``: model, coverage, lower,
    upper, guaranteed. ``log``: None for a log axis when the intervals span decades."""
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(frame["model"]))
    levels = sorted(frame["coverage"].unique())
    colors = plt.cm.viridis(np.linspace(0.15, 0.8, max(len(levels), 1)))
    step = min(0.22, 0.8 / max(len(levels), 1))
    guaranteed = "guaranteed" in frame and (frame.groupby("coverage")["guaranteed"].nunique() == 1).all()
    for li, (lev, col) in enumerate(zip(levels, colors)):
        sub = frame[frame["coverage"] == lev]
        label = f"{lev:.0%}"
        if guaranteed:
            label += f" (≥ {sub['guaranteed'].iloc[0]:.0%})"
        for i, m in enumerate(models):
            row = sub[sub["model"] == m]
            if row.empty:
                continue
            y = len(models) - 1 - i + (li - (len(levels) - 1) / 2) * step  # first model on top
            ax.plot([row["lower"].iloc[0], row["upper"].iloc[0]], [y, y], color=col, lw=4, solid_capstyle="butt",
                    label=label if i == 0 else None)
    ax.set_yticks(range(len(models))[::-1], models)
    ax.set_ylim(-0.5, len(models) - 0.5)
    ends = frame[["lower", "upper"]].to_numpy(float)
    if log is None:
        log_scale_if_wide(ax, ends, axis="x")
    elif log and (ends[np.isfinite(ends)] > 0).all():
        plain_log_ticks(ax, "x")
    ax.grid(axis="x", alpha=0.3)
    legend_below(ax, ncol=len(levels), title="nominal level (guaranteed coverage)" if guaranteed else "nominal level")


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
        """The intervals as a frame (a copy of ``table``).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import transfer
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
        >>> res = transfer.forecast_intervals({"A": E, "B": 2 * E}, level=0.6)
        >>> res.tidy().columns.tolist()
        ['model', 'coverage', 'side', 'tau', 'lower', 'upper', 'guaranteed']
        """
        return self.table.copy()

    def summary(self) -> Summary:
        """The intervals in words and a table (print it, or ``.as_text()``).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import transfer
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
        >>> res = transfer.forecast_intervals({"A": E, "B": 2 * E}, level=0.6)
        >>> print(res.summary().as_text().splitlines()[0])
        Transfer-error forecast intervals
        """
        return Summary("Transfer-error forecast intervals", facts={"domains (n)": self.n, "training domains (r)": self.r},
                       tables=[("intervals", self.table)],
                       notes=["guaranteed = Proposition 1's lower bound on coverage under exchangeable domains"])

    def plot(self, ax=None, side: str = "two", log: bool | None = None, **kwargs):
        """The intervals of one ``side`` ("two", "upper", "lower"): a row per model, a bar per
        nominal level, the legend under the axes; on ``ax`` if given. ``log``: a log axis (None:
        when the intervals span decades). Returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> from llmsurrogate import datasets
        >>> from llmsurrogate.transfer import forecast_intervals
        >>> res = forecast_intervals({m: datasets.load_transfer_errors(m) for m in ("EU_iso", "RF")}, level=[0.8, 0.9])
        >>> fig = res.plot()
        >>> fig.axes[0].get_xscale(), [t.get_text() for t in fig.axes[0].get_yticklabels()]
        ('linear', ['EU_iso', 'RF'])
        >>> fig.savefig("intervals.png")
        """
        df = self.table[self.table["side"] == side]
        if df.empty:
            raise InvalidArgumentError(f"argument `side`: no {side!r} intervals here; sides: "
                                       f"{sorted(self.table['side'].unique())}")
        n_models, n_levels = df["model"].nunique(), df["coverage"].nunique()
        fig, ax, owned = axes_for(ax, (6.4, 1.5 + 0.22 * n_models * max(n_levels, 2)))
        _draw_intervals(ax, df, log)
        ax.set_xlabel("transfer error")
        ax.set_title(f"Forecast intervals for the transfer error to a new domain (n = {self.n}, r = {self.r})",
                     fontsize=9)
        return finish(fig, owned)


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
        """The step functions as a frame (a copy of ``steps``).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import transfer
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
        >>> curve = transfer.worst_case_curve(E, tau=0.8, lower=False)
        >>> curve.tidy().round(3)
           tau  bound  gamma_from  gamma_to  value
        0  0.8  upper       1.000     1.155    5.0
        1  0.8  upper       1.155       inf    6.0
        """
        return self.steps.copy()

    def value(self, tau: float, Gamma: float, bound: str = "upper") -> float:  # noqa: N803
        """The ``bound`` (``"upper"`` or ``"lower"``) at ``tau`` and ``Gamma``.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import transfer
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
        >>> curve = transfer.worst_case_curve(E, tau=0.8, lower=False)
        >>> curve.value(0.8, Gamma=1.0), curve.value(0.8, Gamma=2.0)
        (5.0, 6.0)
        """
        s = self.steps[(np.isclose(self.steps["tau"], tau)) & (self.steps["bound"] == bound)]
        if s.empty:
            raise InvalidArgumentError(f"tau {tau} is not in this curve")
        return _step(s["gamma_to"].to_numpy(), s["value"].to_numpy(), check_gamma(Gamma))

    def summary(self) -> Summary:
        """The curve in words and its steps (print it, or ``.as_text()``).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import transfer
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
        >>> curve = transfer.worst_case_curve(E, tau=0.8, lower=False)
        >>> print(curve.summary().as_text().splitlines()[0])
        Worst-case transfer-error bounds over Gamma
        """
        return Summary(f"Worst-case transfer-error bounds over Gamma{': ' + self.name if self.name else ''}",
                       tables=[("step functions (value on (gamma_from, gamma_to])", self.steps)],
                       notes=["exact breakpoints (docs/methods/transfer.md §3.3); coverage >= (2tau-1)(n-r)/(n+Gamma^2) (Corollary 1)"])

    def plot(self, ax=None, gamma_max: float = 100.0, **kwargs):
        """The bounds as step functions of Γ in [1, ``gamma_max``] (log axis), one colour per τ,
        the upper bound solid and the lower dashed; the y axis is logarithmic when the values span
        decades (one domain's error can dwarf the rest). On ``ax`` if given; ``kwargs`` go to
        matplotlib's ``plot``. Returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> from llmsurrogate import datasets
        >>> from llmsurrogate.transfer import worst_case_curve
        >>> fig = worst_case_curve(datasets.load_transfer_errors("RF"), tau=[0.5, 0.9]).plot()
        >>> fig.axes[0].get_yscale()   # the bounds reach 42,510 from about 1
        'log'
        >>> fig.savefig("worst_case.png")
        """
        import matplotlib.pyplot as plt

        fig, ax, owned = axes_for(ax, (6.4, 4.2))
        taus = sorted(self.steps["tau"].unique())
        colors = dict(zip(taus, plt.cm.viridis(np.linspace(0.1, 0.75, max(len(taus), 1)))))
        color = kwargs.pop("color", None)
        drawn = []
        for (tau, bound), s in self.steps.groupby(["tau", "bound"], sort=True):
            xs, ys = _step_path(s, gamma_max)
            drawn.append(ys)
            ax.plot(xs, ys, ls="-" if bound == "upper" else "--", color=colors[tau] if color is None else color,
                    label=f"τ = {tau:g}, {bound} bound", **kwargs)
        plain_log_ticks(ax, "x")
        log_scale_if_wide(ax, np.concatenate(drawn) if drawn else [], axis="y")
        ax.set_xlabel("Γ (bound on the likelihood ratio)")
        ax.set_ylabel("worst-case quantile of the transfer error")
        ax.set_title(f"Worst-case transfer-error bounds{': ' + self.name if self.name else ''}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        return finish(fig, owned)


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
        """One row per tau (a copy of ``table``).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import transfer
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
        >>> res = transfer.everywhere_dominance(E, np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]]), taulist=[0.7])
        >>> res.tidy()[["tau", "dominates", "witness"]]
           tau  dominates     witness
        0  0.7      False  {'0': 1.0}
        """
        return self.table.copy()

    def summary(self) -> Summary:
        """The comparison in words and a table (print it, or ``.as_text()``).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import transfer
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
        >>> res = transfer.everywhere_dominance(E, np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]]), taulist=[0.7])
        >>> print(res.summary().as_text().splitlines()[0])
        Everywhere dominance (mode=exact)
        """
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
        """The forecast intervals, one row per model, metric and level (a copy of ``intervals``).

        Examples
        --------
        >>> from llmsurrogate.transfer.demo import run_transfer_application
        >>> app = run_transfer_application(level=(0.9,), taus=[0.9])
        >>> app.tidy().shape
        (9, 8)
        """
        return self.intervals.copy()

    def summary(self) -> Summary:
        """The application's intervals and comparisons in words (print it, or ``.as_text()``).

        Examples
        --------
        >>> from llmsurrogate.transfer.demo import run_transfer_application
        >>> app = run_transfer_application(level=(0.9,), taus=[0.9])
        >>> print(app.summary().as_text().splitlines()[0])
        Transfer performance of EU, CPT and a random forest across 44 subject pools
        """
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
        """Two panels: forecast intervals per model (raw error) and ē_τ(Γ) over Γ. Returns the
        matplotlib Figure (two panels: ``ax`` is not taken).

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> from llmsurrogate.transfer.demo import run_transfer_application
        >>> fig = run_transfer_application(level=(0.9,), taus=[0.9]).plot()
        >>> [a.get_title() for a in fig.axes]
        ['Forecast intervals, new subject pool', 'Worst case over shifted target distributions']
        >>> fig.savefig("application.png")
        """
        import matplotlib.pyplot as plt

        _one_panel("TransferApplication", ax, 2)
        sub = self.intervals[self.intervals.metric == "raw transfer error"]
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.6))
        _draw_intervals(a1, sub, log=True)
        a1.set_xlabel("raw transfer error (RMSE, $)")
        a1.set_title("Forecast intervals, new subject pool")
        wc = self.worst_case
        drawn = []
        for m, g in wc.groupby("model", sort=False):
            xs, ys = _step_path(g, 100.0)
            drawn.append(ys)
            a2.plot(xs, ys, label=m)
        plain_log_ticks(a2, "x")
        log_scale_if_wide(a2, np.concatenate(drawn) if drawn else [], axis="y")
        a2.set_xlabel("Γ (bound on the likelihood ratio)")
        a2.set_ylabel("worst-case 90% quantile ē(Γ)")
        a2.set_title("Worst case over shifted target distributions")
        a2.grid(alpha=0.3)
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
        """One panel per metric, a horizontal interval per model. Returns the matplotlib Figure
        (``ax`` is taken only when the table has one metric).

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import pandas as pd; from llmsurrogate.transfer import IntervalTable
        >>> tab = IntervalTable(title="Two intervals", table=pd.DataFrame(
        ...     {"model": ["A", "B"], "metric": ["raw transfer error"] * 2, "lower": [1.0, 2.0], "upper": [3.0, 5.0]}))
        >>> [t.get_text() for t in tab.plot().axes[0].get_yticklabels()]
        ['A', 'B']
        """
        import matplotlib.pyplot as plt

        metrics = list(dict.fromkeys(self.table["metric"]))
        if len(metrics) > 1 or ax is None:
            _one_panel("IntervalTable", ax, len(metrics))
            same_rows = len({tuple(g["model"]) for _, g in self.table.groupby("metric", sort=False)}) == 1
            fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False,
                                     sharey=same_rows)  # the model names once, where every panel has the same rows
            panels = list(axes[0])
        else:
            fig, panels = ax.figure, [ax]
        for axis, metric in zip(panels, metrics):
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
                axis.xaxis.set_major_formatter(FuncFormatter(plain_number))
                axis.xaxis.set_minor_formatter(NullFormatter())
            axis.grid(axis="x", alpha=0.3)
        if ax is None:
            fig.suptitle(self.title, fontsize=10)
            fig.tight_layout()
        return fig
