"""Reliability diagrams, ROC curves and score histograms (matplotlib, imported on first use), and
the tables they draw (:func:`roc_table`, :func:`curve_tables`). Every function returns the
matplotlib Figure and draws on ``ax`` when given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._plotting import axes_for, finish
from .._validation import as_float_array
from ..exceptions import InvalidArgumentError
from ._metrics import _carrying, _inputs, _yrgw, calibration_curve

#: the label of the curve of every row, beside the groups' curves
ALL = "all"


def _group_names(groups, labels: Mapping | Callable | None) -> np.ndarray:
    """The groups as text: through ``labels`` (a mapping code -> text, or a callable) when given,
    so that a figure's legend says "female", not the code "2"."""
    g = np.asarray(groups, dtype=object)
    if labels is None:
        return g.astype(str)
    if callable(labels) and not isinstance(labels, Mapping):
        return np.array([str(labels(v)) for v in g], dtype=object).astype(str)
    if not isinstance(labels, Mapping):
        raise InvalidArgumentError(f"argument `labels` must be a mapping group -> text or a callable; "
                                   f"got {type(labels).__name__}")
    by_text = {str(k): v for k, v in labels.items()}
    return np.array([str(labels[v]) if v in labels else str(by_text.get(str(v), v)) for v in g], dtype=object)


def roc_table(y, scores, *, drop_intermediate: bool = True, weights=None) -> pd.DataFrame:
    """The ROC curve: a first row (0, 0) at threshold +inf, then one row per distinct score
    (highest first): ``threshold`` (r >= threshold counts as positive), ``fpr``, ``tpr``;
    ``drop_intermediate`` leaves out the points on a straight line between their neighbours (the
    same curve, fewer rows). The points of ``sklearn.metrics.roc_curve(y, scores,
    drop_intermediate=..., sample_weight=weights)``; the trapezoid area under them is the ROC AUC
    with ties counted ½. Needs both classes (with positive weight).

    Examples
    --------
    >>> roc_table([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], drop_intermediate=False)
       threshold  fpr  tpr
    0        inf  0.0  0.0
    1       0.80  0.0  0.5
    2       0.40  0.5  0.5
    3       0.35  0.5  1.0
    4       0.10  1.0  1.0
    """
    yy, rr, w = _inputs(y, scores, weights)
    n_pos = float(yy.sum())
    if n_pos == 0 or n_pos == len(yy):
        raise InvalidArgumentError("a ROC curve needs both classes in `y`; it holds only "
                                   f"{'positives' if n_pos else 'negatives'}"
                                   f"{'' if w is None else ' among the rows of positive weight'}")
    order = np.argsort(-rr, kind="mergesort")
    r_sorted, y_sorted = rr[order], yy[order]
    last = np.r_[np.flatnonzero(np.diff(r_sorted)), len(rr) - 1]  # the last row of each distinct score
    if w is None:
        tps = np.cumsum(y_sorted)[last]
        fps = (last + 1) - tps
        n_neg = len(yy) - n_pos
    else:
        w_sorted = w[order]
        tps = np.cumsum(w_sorted * y_sorted)[last]
        fps = np.cumsum(w_sorted * (1 - y_sorted))[last]
        n_pos, n_neg = tps[-1], fps[-1]
    if drop_intermediate and len(tps) > 2:  # scikit-learn's rule: keep the corners of the curve
        keep = np.flatnonzero(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])
        last, tps, fps = last[keep], tps[keep], fps[keep]
    return pd.DataFrame({"threshold": np.r_[np.inf, r_sorted[last]],
                         "fpr": np.r_[0.0, fps / n_neg], "tpr": np.r_[0.0, tps / n_pos]})


def curve_tables(y, scores, groups=None, *, bins: int = 10, seed: int = 42, min_share: float = 0.04,
                 labels: Mapping | Callable | None = None, weights=None) -> dict[str, pd.DataFrame]:
    """The curves a risk evaluation draws, as tables: ``roc`` (:func:`roc_table` with a ``group``
    column: ``"all"``, then each group with both classes) and ``group_calibration``
    (:func:`~llmsurrogate.risk.calibration_curve` of each group holding at least ``min_share`` of
    the rows and ``bins`` rows, quantile bins, with a ``group`` column; empty without groups).
    ``labels`` turns group codes into text (a mapping or a callable). With ``weights`` (survey
    weights) the curves are weighted and a group's share is its share of the weight.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> t = curve_tables(y, r, ["a", "b"] * 5, bins=2)
    >>> t["roc"].groupby("group", sort=False).size().to_dict()
    {'all': 8, 'a': 4, 'b': 5}
    >>> sorted(t["group_calibration"]["group"].unique())
    ['a', 'b']
    """
    if groups is None:
        yy, rr, w = _inputs(y, scores, weights)
    else:
        yy, rr, g, w = _yrgw(y, scores, groups, weights)
        yy, rr, g, w = _carrying(w, yy, rr, g)
    rocs = [roc_table(yy, rr, weights=w).assign(group=ALL)] if 0 < yy.sum() < len(yy) else []
    calib = []
    if groups is not None:
        names = _group_names(g, labels)
        for lab in np.unique(names):
            m = names == lab
            wm = None if w is None else w[m]
            if 0 < yy[m].sum() < m.sum():
                rocs.append(roc_table(yy[m], rr[m], weights=wm).assign(group=lab))
            share = m.mean() if w is None else wm.sum() / w.sum()
            if share >= min_share and m.sum() >= bins:
                calib.append(calibration_curve(yy[m], rr[m], bins=bins, seed=seed, weights=wm).assign(group=lab))
    roc = (pd.concat(rocs, ignore_index=True) if rocs else
           pd.DataFrame({"threshold": [], "fpr": [], "tpr": [], "group": []}))
    group_calibration = pd.concat(calib, ignore_index=True) if calib else pd.DataFrame()
    return {"roc": roc[["group", "threshold", "fpr", "tpr"]], "group_calibration": group_calibration}


def plot_calibration_table(table, ax=None, label: str | None = None, **kwargs):
    """Reliability diagram of a :func:`calibration_curve` table: per bin the fraction positive
    against the mean score, error bars from its CI, and the diagonal; on ``ax`` (default: a new
    figure). ``kwargs`` go to matplotlib's ``errorbar``. Returns the figure.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from llmsurrogate.risk import calibration_curve
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> fig = plot_calibration_table(calibration_curve(y, r, bins=2, n_boot=20), label="all")
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()
    ('mean risk score in bin', 'fraction positive')
    >>> plt.close(fig)
    """
    fig, ax, owned = axes_for(ax, (4.8, 4.8))
    _diagonal(ax)
    _errorbars(ax, table, label, **kwargs)
    _square_limits(ax, [table])
    return finish(fig, owned)


def _diagonal(ax) -> None:
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
    ax.set_xlabel("mean risk score in bin")
    ax.set_ylabel("fraction positive")


def _errorbars(ax, table, label, **kwargs) -> None:
    kwargs.setdefault("marker", "o")
    kwargs.setdefault("ms", 4)
    kwargs.setdefault("capsize", 2)
    ax.errorbar(table["mean_score"], table["fraction_positive"],
                yerr=[table["fraction_positive"] - table["ci_low"], table["ci_high"] - table["fraction_positive"]],
                label=label, **kwargs)


def _square_limits(ax, tables) -> None:
    """Equal x and y limits: [0, 1] where the bins spread over most of it, else the part holding
    every mean score and CI (rounded out to 0.1), so that bins crowded in [0.1, 0.4] are not a smudge."""
    vals = np.concatenate([np.r_[t["mean_score"], t["ci_low"], t["ci_high"]] for t in tables if len(t)] or [[0.0, 1.0]])
    vals = vals[np.isfinite(vals)]
    lo, hi = (np.floor(vals.min() * 10) / 10, np.ceil(vals.max() * 10) / 10) if vals.size else (0.0, 1.0)
    if hi - lo >= 0.6:
        lo, hi = 0.0, 1.0
    pad = 0.015 * (hi - lo)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_aspect("equal", adjustable="box")


def _draw_calibration(ax, overall, per_group) -> None:
    """The overall curve (black) and one curve per group, dodged a little along x so that their
    error bars do not hide each other."""
    _diagonal(ax)
    _errorbars(ax, overall, ALL, color="k", zorder=3)
    tables = [overall]
    grouped = per_group is not None and len(per_group) > 0
    if grouped:
        names = list(dict.fromkeys(per_group["group"]))
        for k, lab in enumerate(names):
            t = per_group[per_group["group"] == lab]
            shift = 0.003 * (k - (len(names) - 1) / 2)
            _errorbars(ax, t.assign(mean_score=t["mean_score"] + shift), str(lab), alpha=0.85, marker="sD^v<>p"[k % 7])
            tables.append(t)
    _square_limits(ax, tables)
    ax.legend(fontsize=8, loc="upper left", title="group" if grouped else None, title_fontsize=8)
    ax.set_title("Calibration (quantile bins, bootstrap CIs)", fontsize=10)
    ax.grid(alpha=0.3)


def plot_calibration(y, scores, groups=None, bins: int = 10, ax=None, min_share: float = 0.04, *,
                     labels: Mapping | Callable | None = None, weights=None):
    """Reliability diagram (quantile bins, bootstrap CIs), one curve per group if ``groups``
    (groups holding at least ``min_share`` of the rows and ``bins`` rows); ``labels`` names the
    groups' codes in the legend (a mapping such as ``{1: "male", 2: "female"}``, or a callable).
    ``weights``: survey weights (weighted curves, :func:`~llmsurrogate.risk.calibration_curve`).
    On ``ax`` if given; returns the matplotlib Figure.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> fig = plot_calibration(y, r, [1, 2] * 5, bins=2, labels={1: "male", 2: "female"})
    >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ['all', 'female', 'male']
    >>> plt.close(fig)
    """
    yy, rr, w = _inputs(y, scores, weights)
    fig, ax, owned = axes_for(ax, (4.8, 4.8))
    per_group = None
    if groups is not None:
        per_group = curve_tables(y, scores, groups, bins=bins, min_share=min_share, labels=labels,
                                 weights=weights)["group_calibration"]
    _draw_calibration(ax, calibration_curve(yy, rr, bins, weights=w), per_group)
    return finish(fig, owned)


def _draw_roc(ax, roc: pd.DataFrame) -> None:
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
    for k, (lab, t) in enumerate(roc.groupby("group", sort=False)):
        fpr, tpr = t["fpr"].to_numpy(float), t["tpr"].to_numpy(float)
        auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))  # trapezoids: ties count 1/2
        style = {"color": "k", "lw": 1.8, "zorder": 3} if lab == ALL else {"lw": 1.3, "alpha": 0.9}
        ax.plot(t["fpr"], t["tpr"], label=f"{lab} (AUC {auc:.3f})", **style)
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title("ROC curve", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)


def plot_roc(y, scores, groups=None, ax=None, *, labels: Mapping | Callable | None = None, weights=None):
    """ROC curve of ``scores`` against 0/1 labels ``y`` (the points of
    ``sklearn.metrics.roc_curve(y, scores)``), with its AUC (ties
    count ½, as :func:`~llmsurrogate.risk.roc_auc`) in the legend; one curve per group (with both classes) if
    ``groups``, named through ``labels``; weighted curves with survey ``weights``. On ``ax`` if
    given; returns the matplotlib Figure.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> fig = plot_roc(y, r)
    >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ['all (AUC 0.917)']
    >>> plt.close(fig)
    """
    fig, ax, owned = axes_for(ax, (4.8, 4.8))
    _draw_roc(ax, curve_tables(y, scores, groups, labels=labels, weights=weights)["roc"])
    return finish(fig, owned)


def plot_score_histogram(scores, groups=None, bins: int = 20, ax=None, *, labels: Mapping | Callable | None = None,
                         value_range: tuple[float, float] | None = None, xlabel: str | None = None):
    """Histogram of scores, one (density) histogram per group if ``groups`` (named through
    ``labels``). ``bins`` equal bins over ``value_range``; by default [0, 1] for scores in
    [0, 1] (probabilities), else the scores' smallest to largest value, so that no score falls
    outside the bins (the expected level of a question with K > 2 options, 10 ... 50 hours, is no
    probability). ``xlabel``: the x axis' label (default ``"risk score"``, or ``"score"`` off
    [0, 1]). On ``ax`` if given; returns the matplotlib Figure.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig = plot_score_histogram([.1, .2, .8, .7, .4, .35, .3, .5, .9, .2], bins=5)
    >>> [int(bar.get_height()) for bar in fig.axes[0].patches]  # counts in [0, .2), [.2, .4), ...
    [1, 4, 2, 1, 2]
    >>> fig2 = plot_score_histogram([1.5, 2.5, 2.6, 3.9], bins=3, value_range=(1, 4))  # levels 1..4
    >>> [int(bar.get_height()) for bar in fig2.axes[0].patches], [float(x) for x in fig2.axes[0].get_xlim()]
    ([1, 2, 1], [1.0, 4.0])
    >>> plt.close(fig); plt.close(fig2)
    """
    rr = as_float_array(scores, "scores", allow_nan=False)
    lo, hi = _histogram_range(rr, value_range)
    fig, ax, owned = axes_for(ax, (5.5, 3.6))
    edges = np.linspace(lo, hi, bins + 1)
    if groups is None:
        ax.hist(rr, bins=edges, color="C0", edgecolor="white")
    else:
        names = _group_names(groups, labels)
        if names.shape != rr.shape:
            raise InvalidArgumentError(f"argument `groups` (length {names.size}) must have the length of `scores` "
                                       f"({rr.size})")
        for lab in np.unique(names):
            ax.hist(rr[names == lab], bins=edges, histtype="step", density=True, lw=1.5, label=str(lab))
        ax.legend(fontsize=8, title="group", title_fontsize=8)
    ax.set_xlim(lo, hi)
    ax.set_xlabel(xlabel if xlabel is not None else "risk score" if (lo, hi) == (0.0, 1.0) else "score")
    ax.set_ylabel("count" if groups is None else "density")
    return finish(fig, owned)


def _histogram_range(scores: np.ndarray, value_range) -> tuple[float, float]:
    """The histogram's span: ``value_range`` (checked to hold every score), else [0, 1] for
    probabilities, else the scores' own span (one unit around a single value)."""
    if value_range is None:
        if scores.size == 0 or (scores.min() >= 0 and scores.max() <= 1):
            return 0.0, 1.0
        lo, hi = float(scores.min()), float(scores.max())
        return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
    try:
        lo, hi = (float(v) for v in value_range)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"argument `value_range` must be two numbers (low, high); got {value_range!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InvalidArgumentError(f"argument `value_range` must be finite with low < high; got {value_range!r}")
    if scores.size and (scores.min() < lo or scores.max() > hi):
        raise InvalidArgumentError(f"argument `value_range` ({lo:g}, {hi:g}) leaves out scores: they span "
                                   f"{scores.min():g} to {scores.max():g}")
    return lo, hi


def plot_evaluation(ev: Any, ax=None, kind: str = "calibration") -> Any:
    """What :meth:`RiskEvaluation.plot` draws (see there)."""
    kinds = ("calibration", "roc", "both")
    if isinstance(ax, str):
        raise InvalidArgumentError(f"argument `ax` is {ax!r}: pass the kind of figure by name, plot(kind={ax!r})")
    if kind not in kinds:
        raise InvalidArgumentError(f"argument `kind` must be one of {list(kinds)}; got {kind!r}")
    if kind in ("roc", "both") and ev.roc is None:
        raise InvalidArgumentError("this evaluation holds no ROC curve (saved by an earlier version, or made "
                                   "without one): evaluate the scores again, or call risk.plot_roc(y, scores)")
    if kind == "both":
        if ax is not None:
            raise InvalidArgumentError("argument `ax`: kind='both' draws two panels in a figure of its own; call it "
                                       "without `ax` (it returns the Figure)")
        import matplotlib.pyplot as plt

        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.6, 4.8))
        _draw_calibration(a1, ev.calibration, ev.group_calibration)
        _draw_roc(a2, ev.roc)
        fig.tight_layout()
        return fig
    fig, ax, owned = axes_for(ax, (4.8, 4.8))
    if kind == "roc":
        _draw_roc(ax, ev.roc)
    else:
        _draw_calibration(ax, ev.calibration, ev.group_calibration)
    return finish(fig, owned)
