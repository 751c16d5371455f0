"""What every result's figure shares (matplotlib, imported on first use).

One convention: a result's ``plot()`` returns the matplotlib :class:`~matplotlib.figure.Figure`.
Where it draws one panel it takes ``ax=``: given, it draws into that Axes and returns
``ax.figure``; not given, it makes a figure of its own (laid out with ``tight_layout``).

The helpers here make the axes (:func:`axes_for`, :func:`finish`), switch an axis to a log scale
when the values span decades and label its ticks as plain numbers (``4``, ``1,000``, never
``4 × 10^0``: :func:`log_scale_if_wide`, :func:`plain_log_ticks`), and put a legend under an axes,
off the data (:func:`legend_below`).

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> fig, ax, owned = axes_for(None, (4, 3))
>>> _ = ax.plot([1, 10, 42510], [1, 2, 3])
>>> log_scale_if_wide(ax, [1, 10, 42510], axis="x"), ax.get_xscale()
(True, 'log')
>>> finish(fig, owned) is fig
True
>>> import matplotlib.pyplot as plt; plt.close(fig)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "WIDE_RATIO",
    "axes_for",
    "finish",
    "legend_below",
    "log_scale_if_wide",
    "plain_log_ticks",
    "plain_number",
    "spans_decades",
]

#: values whose largest is at least this many times their smallest (1.5 decades) are drawn on a log scale
WIDE_RATIO = 30.0


def axes_for(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any, bool]:
    """``(figure, axes, owned)``: the figure of ``ax`` when given (``owned`` False), else a new
    figure of size ``figsize`` with one Axes (``owned`` True)."""
    if ax is not None:
        return ax.figure, ax, False
    import matplotlib.pyplot as plt

    fig, new = plt.subplots(figsize=figsize)
    return fig, new, True


def finish(fig: Any, owned: bool) -> Any:
    """Lay out a figure the plot made itself (``tight_layout``; a caller's figure is left as it
    is) and return it."""
    if owned:
        fig.tight_layout()
    return fig


def spans_decades(values: Iterable[float], ratio: float = WIDE_RATIO) -> bool:
    """Whether the finite values are all positive and the largest is at least ``ratio`` times the smallest."""
    v = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    return bool(v.size) and bool((v > 0).all()) and float(v.max()) >= ratio * float(v.min())


def log_scale_if_wide(ax: Any, values: Iterable[float], axis: str = "y", ratio: float = WIDE_RATIO) -> bool:
    """Put ``axis`` (``"x"`` or ``"y"``) of ``ax`` on a log scale with plain tick labels when
    ``values`` span decades (:func:`spans_decades`); returns whether it did."""
    if not spans_decades(values, ratio):
        return False
    plain_log_ticks(ax, axis)
    return True


def plain_number(x: float, _pos: Any = None) -> str:
    """A tick label: ``4``, ``0.5``, ``1,000`` (thousands separated; never ``4 × 10^0``)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1 and float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:.3g}"


def plain_log_ticks(ax: Any, axis: str = "y") -> None:
    """Log scale on ``axis`` with plain-number tick labels: the powers of ten, and 2 and 5 times
    them where the axis spans less than two decades (so a short axis still has labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis == "x":
        ax.set_xscale("log")
        lo, hi = ax.get_xlim()
        target = ax.xaxis
    else:
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        target = ax.yaxis
    target.set_major_locator(LogLocator(base=10))
    target.set_major_formatter(FuncFormatter(plain_number))
    if lo > 0 and hi / lo < 100:
        def minor(x, pos=None):
            mant = x / 10 ** math.floor(math.log10(x) + 1e-9)
            return plain_number(x) if any(math.isclose(mant, m, rel_tol=1e-6) for m in (2, 5)) else ""
        target.set_minor_formatter(FuncFormatter(minor))
    else:
        target.set_minor_formatter(NullFormatter())


def legend_below(ax: Any, ncol: int | None = None, **kwargs: Any) -> Any:
    """A legend centred under ``ax``, below its x label, so that it covers no data; ``ncol``
    entries a row (default: all in one row, at most 3)."""
    from matplotlib.transforms import ScaledTranslation

    handles, labels = ax.get_legend_handles_labels()
    ncol = ncol or max(1, min(len(labels), 3))
    kwargs.setdefault("fontsize", "small")
    kwargs.setdefault("title_fontsize", kwargs["fontsize"])
    # anchored a fixed 34 points under the axes (tick labels and x label), whatever the axes' height
    below = ax.transAxes + ScaledTranslation(0, -34 / 72, ax.figure.dpi_scale_trans)
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below,
                     ncol=ncol, frameon=False, **kwargs)
