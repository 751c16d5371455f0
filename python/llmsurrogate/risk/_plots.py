"""Reliability diagrams and score histograms (matplotlib, imported on first use)."""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array
from ._metrics import _yr, calibration_curve


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
    """Reliability diagram (quantile bins, bootstrap CIs), one curve per group if ``groups``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> fig = plot_calibration(y, r, bins=2)
    >>> fig.axes[0].get_title(), fig.axes[0].get_xlabel()
    ('Calibration', 'mean risk score in bin')
    >>> plt.close(fig)
    """
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
    """Histogram of scores on [0, 1], one (density) histogram per group if ``groups``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig = plot_score_histogram([.1, .2, .8, .7, .4, .35, .3, .5, .9, .2], bins=5)
    >>> [int(bar.get_height()) for bar in fig.axes[0].patches]  # counts in [0, .2), [.2, .4), ...
    [1, 4, 2, 1, 2]
    >>> plt.close(fig)
    """
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
