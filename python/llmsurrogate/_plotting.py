"""What every result's figure shares (matplotlib, imported on first use).

One convention: a result's ``plot()`` returns the matplotlib :class:`~matplotlib.figure.Figure`.
Where it draws one panel it takes ``ax=``: given, it draws into that Axes and returns
``ax.figure``; not given, it makes a figure of its own (laid out with ``tight_layout``).

The helpers here make the axes (:func:`axes_for`, :func:`finish`), switch an axis to a log scale
when the values span decades and label its ticks as plain numbers (``4``, ``1,000``, never
``4 × 10^0``: :func:`log_scale_if_wide`, :func:`plain_log_ticks`), put a legend under an axes,
off the data (:func:`legend_below`, :func:`depth_below`), widen a figure whose title or x label
would be cut (:func:`widen_to_fit`, part of :func:`finish`) and keep x tick labels such as answer
options from running into each other (:func:`fit_tick_labels`).

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
    "depth_below",
    "finish",
    "fit_tick_labels",
    "legend_below",
    "log_scale_if_wide",
    "plain_log_ticks",
    "plain_number",
    "spans_decades",
    "widen_to_fit",
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
    """Lay out a figure the plot made itself (``tight_layout``, then wider where a title or an x
    label would run past its edges: :func:`widen_to_fit`; a caller's figure is left as it is) and
    return it."""
    if owned:
        fig.tight_layout()
        widen_to_fit(fig)
    return fig


def _overhang(fig: Any) -> float:
    """How far (pixels) the widest axes title or x label runs past the figure's left or right edge."""
    fig.draw_without_rendering()  # the texts' final places
    renderer = fig.canvas.get_renderer()
    over = 0.0
    for ax in fig.axes:
        for text in (ax.title, ax.xaxis.label):
            if text.get_visible() and text.get_text():
                box = text.get_window_extent(renderer)
                over = max(over, fig.bbox.x0 - box.x0, box.x1 - fig.bbox.x1)
    return over


def widen_to_fit(fig: Any, tries: int = 3) -> bool:
    """Make ``fig`` wider (and lay it out again) until no axes title or x label is cut at its
    left or right edge: ``tight_layout`` makes room for tick labels but cannot make a title
    longer than its axes fit (a weighted comparison's title, long group names). A text centred
    on its axes gains half of what the figure gains, so the figure grows by twice the overhang.
    Returns whether it changed the figure's size."""
    changed = False
    for _ in range(tries):
        over = _overhang(fig)
        if over <= 0.5:
            break
        fig.set_size_inches(fig.get_figwidth() + 2 * (over + 6) / fig.dpi, fig.get_figheight())
        fig.tight_layout()
        changed = True
    return changed


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


def legend_below(ax: Any, ncol: int | None = None, below: float = 34.0, **kwargs: Any) -> Any:
    """A legend centred under ``ax``, below its x label, so that it covers no data; ``ncol``
    entries a row (default: all in one row, at most 3); ``below``: points between the axes'
    bottom and the legend's top (34: one row of tick labels and an x label; see
    :func:`depth_below`)."""
    from matplotlib.transforms import ScaledTranslation

    handles, labels = ax.get_legend_handles_labels()
    ncol = ncol or max(1, min(len(labels), 3))
    kwargs.setdefault("fontsize", "small")
    kwargs.setdefault("title_fontsize", kwargs["fontsize"])
    # anchored a fixed distance under the axes (tick labels and x label), whatever the axes' height
    below = ax.transAxes + ScaledTranslation(0, -below / 72, ax.figure.dpi_scale_trans)
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below,
                     ncol=ncol, frameon=False, **kwargs)


def _x_tick_boxes(ax: Any) -> list:
    """The drawn x tick labels' window extents, left to right."""
    fig = ax.figure
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.xaxis.get_ticklabels() if t.get_visible() and t.get_text()]
    return sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)


def fit_tick_labels(ax: Any, gap: float = 4.0, small: float = 8.0) -> str:
    """Keep ``ax``'s x tick labels (texts such as answer options, "Under 20 hours") from running
    into each other (``gap`` pixels apart at least). In this order, the first that fits: the
    labels as they are; wrapped at word boundaries onto more lines, as wide as still fits; the
    same in the ``small`` font size (points); upright in the small font (read bottom to top),
    wrapped onto as few lines as fit side by side. Returns what it did: ``"as is"``,
    ``"wrapped"``, ``"wrapped small"``, ``"upright"`` or ``"crowded"`` (nothing fits: upright,
    one line each). Call it once the figure is laid out (the labels' room depends on the axes'
    width).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(4, 3))
    >>> _ = ax.bar(range(3), [1, 2, 3])
    >>> _ = ax.set_xticks(range(3), ["Under 20 hours", "20 to 34 hours", "35 hours or more"])
    >>> fit_tick_labels(ax), [t.get_text() for t in ax.get_xticklabels()]
    ('wrapped', ['Under 20\\nhours', '20 to 34\\nhours', '35 hours or\\nmore'])
    >>> plt.close(fig)
    """
    import textwrap

    ticks = list(ax.get_xticks())
    texts = [t.get_text() for t in ax.xaxis.get_ticklabels()]
    size = ax.xaxis.get_ticklabels()[0].get_fontsize() if texts else small
    shortest = max((len(w) for t in texts for w in t.split()), default=1)
    longest = max(map(len, texts), default=1)
    tried: set = set()

    def fits(width: int | None, **style: Any) -> bool:
        labels = texts if width is None else [textwrap.fill(t, width, break_long_words=False) for t in texts]
        key = (tuple(labels), tuple(sorted(style.items())))
        if key in tried:
            return False
        tried.add(key)
        ax.set_xticks(ticks, labels, **style)
        boxes = _x_tick_boxes(ax)
        return not any(a.x1 + gap > b.x0 for a, b in zip(boxes, boxes[1:]))

    if fits(None, fontsize=size):
        return "as is"
    for fontsize, outcome in ((size, "wrapped"), (min(size, small), "wrapped small")):
        if any(fits(width, fontsize=fontsize) for width in range(longest, shortest - 1, -1)):
            return outcome
    if any(fits(width, fontsize=min(size, small), rotation=90) for width in range(shortest, longest + 1)):
        return "upright"
    fits(None, fontsize=min(size, small), rotation=90)
    return "crowded"


def depth_below(ax: Any, pad: float = 6.0) -> float:
    """Points from the bottom of ``ax`` to the bottom of its lowest x tick label or x label, plus
    ``pad``: where :func:`legend_below` puts a legend that covers none of them."""
    fig = ax.figure
    boxes = _x_tick_boxes(ax)
    renderer = fig.canvas.get_renderer()
    if ax.xaxis.label.get_visible() and ax.xaxis.label.get_text():
        boxes.append(ax.xaxis.label.get_window_extent(renderer))
    lowest = min((b.y0 for b in boxes), default=ax.bbox.y0)
    return max(0.0, ax.bbox.y0 - lowest) * 72 / fig.dpi + pad
