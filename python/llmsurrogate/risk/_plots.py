"""Reliability diagrams and score histograms (matplotlib, imported on first use)."""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array
from ._metrics import _yr, calibration_curve


def plot_calibration_table(table, ax=None, label: str | None = None, **kwargs):
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
    ax.errorbar(table["mean_score"], table["fraction_positive"],
                yerr=[table["fraction_positive"] - table["ci_low"], table["ci_high"] - table["fraction_positive"]],
                marker="o", capsize=2, label=label, **kwargs)
    ax.set_xlim(0, 1); ax.set_ylim(0, 1)
    ax.set_xlabel("mean risk score in bin"); ax.set_ylabel("fraction positive")
    return ax.figure


def plot_calibration(y, scores, groups=None, bins: int = 10, ax=None, min_share: float = 0.04):
    """Reliability diagram (quantile bins, bootstrap CIs), one curve per group if ``groups``."""
    yy, rr = _yr(y, scores)
    fig = plot_calibration_table(calibration_curve(yy, rr, bins), ax=ax, label="all")
    ax = fig.axes[0]
    if groups is not None:
        g = np.asarray(groups).astype(str)
        for lab in np.unique(g):
            m = g == lab
            if m.mean() >= min_share and m.sum() >= bins:
                plot_calibration_table(calibration_curve(yy[m], rr[m], bins), ax=ax, label=str(lab), alpha=0.7)
    ax.legend(fontsize=7)
    ax.set_title("Calibration")
    return fig


def plot_score_histogram(scores, groups=None, bins: int = 20, ax=None):
    """Histogram of scores on [0, 1], one (density) histogram per group if ``groups``."""
    import matplotlib.pyplot as plt

    rr = as_float_array(scores, "scores", allow_nan=False)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    edges = np.linspace(0, 1, bins + 1)
    if groups is None:
        ax.hist(rr, bins=edges, color="C0")
    else:
        g = np.asarray(groups).astype(str)
        for lab in np.unique(g):
            ax.hist(rr[g == lab], bins=edges, histtype="step", density=True, label=str(lab))
        ax.legend(fontsize=7)
    ax.set_xlabel("risk score"); ax.set_ylabel("count" if groups is None else "density")
    return ax.figure
