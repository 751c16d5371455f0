"""U-statistic confidence intervals for the transfer-error distribution: quantiles (QTE,
Prop. Q.1) and the mean (ETE, Prop. Q.2), from the tail bound of Lemma Q.1 (the Python side of
``rust/transfer/ustat.rs``).

``docs/methods/transfer.md`` §5 (algorithms A9–A10). transferUQ's names and signatures:

========================================================  ======================================
``qte_interval(err, level, side, betas, r)``              frame ``beta, lb, ub`` (Prop. Q.1)
``ete_interval(err, level, side, bd, r)``                 ``(lower, upper)`` (Prop. Q.2)
========================================================  ======================================

U-statistic order: ``order=None`` uses k = r + 1 (Lemma Q.1, the correct order);
``order="transferUQ"`` reproduces the package's k = r (anti-conservative).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .. import _core
from .._deprecation import deprecated_arguments
from .._validation import (
    as_float_array,
    check_allocation,
    check_choice,
    check_int,
    check_probability,
    check_real,
)
from ..exceptions import InvalidArgumentError
from ._common import DEFAULT_BETAS, _check_r, _order_statistics, _ordered, _side, _table
from ._table import ErrorTable

__all__ = ["ustat_tail_bound", "qte_interval", "ete_interval", "plot_quantile_ci", "clear_rank_cache"]


# ---- U-statistic confidence intervals (Appendix Q) --------------------------------------------------

def ustat_tail_bound(x: float, y: float, n: int, k: int) -> dict[str, float]:
    """Lemma Q.1: B_{n,k}(x; y) ≥ P(U ≤ x) and its parts (Hoeffding b1, Bentkus b2, Maurer b3).

    Examples
    --------
    >>> b = ustat_tail_bound(0.1, 0.3, n=44, k=2)
    >>> {key: round(v, 4) for key, v in b.items()}
    {'B': 0.0774, 'hoeffding': 0.0774, 'bentkus': 0.185, 'maurer': 0.3789}
    """
    x, y = check_real(x, "x", low=0.0, high=1.0), check_real(y, "y", low=0.0, high=1.0)
    n, k = check_int(n, "n", minimum=1, maximum=2**63 - 1), check_int(k, "k", minimum=1)
    if k > n:
        raise InvalidArgumentError(f"argument `k`: the U-statistic order must lie in 1..n ({n}); got {k}")
    # Bentkus's term sums ceil(floor(n/k) x) + 1 binomial terms, one float64 each
    check_allocation(8.0 * ((n // k) * x + 2), "n", n, "the binomial terms of Bentkus's bound")
    b, b1, b2, b3 = _core.transfer_ustat_tail_bound(x, y, n, k)
    return {"B": b, "hoeffding": b1, "bentkus": b2, "maurer": b3}


def _order(t: ErrorTable, order: Any) -> int:
    if order is None:
        return t.r + 1
    if isinstance(order, str):
        check_choice(order, "order", ["transferUQ"])
        return t.r
    return check_int(order, "order", minimum=1)


def _alpha(level: Any, side: str) -> float:
    """The error rate per side of a confidence ``level``: (1 − level)/2 two-sided, 1 − level one-sided."""
    c = check_probability(level, "level")
    return (1 - c) / 2 if side == "two" else 1 - c


_RANK_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _ci_ranks(N: int, n: int, k: int, betas: np.ndarray, alpha: float):  # noqa: N803
    """(j_L, j_U) per β. They depend only on (N, n, k, β, α), not on the data (docs/methods/transfer.md §5.3, A9), so
    they are cached per configuration (at most 256 entries; :func:`clear_rank_cache` empties it)."""
    key = (N, n, k, float(alpha), betas.tobytes())
    hit = _RANK_CACHE.get(key)
    if hit is None:
        if len(_RANK_CACHE) >= 256:
            _RANK_CACHE.clear()
        hit = tuple(np.asarray(x) for x in _core.transfer_quantile_ci_ranks(N, n, k, betas, alpha))
        _RANK_CACHE[key] = hit
    return hit


def clear_rank_cache() -> None:
    """Empty the cache of quantile-CI ranks (used by benchmarks to time cold calls).

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> E = datasets.load_transfer_errors("abdg")  # CPT's published 44 x 44 matrix
    >>> warm = qte_interval(E, 0.9, betas=[0.5])  # the ranks are now cached
    >>> clear_rank_cache()
    >>> qte_interval(E, 0.9, betas=[0.5]).equals(warm)  # recomputed cold, same answer
    True
    """
    _RANK_CACHE.clear()


@deprecated_arguments(renamed={"coverage": "level"}, positional=2)
def qte_interval(err: Any, level: float, *, side: str = "two", betas: Any = DEFAULT_BETAS, r: Any = None,
                 order: Any = None, pooled: bool = False):
    """Confidence intervals for quantiles q_β of the transfer-error distribution (Prop. Q.1).

    Frame ``beta, lb, ub``. Uses the U-statistic bound of order k = r + 1 (``order="transferUQ"``
    gives the package's k = r, anti-conservative) and the exact discrete rank rules of docs/methods/transfer.md §5.3:
    lb = f_(j_L), j_L = max{j : B((j−1)/N; β) ≤ α}; ub = f_(j_U), j_U = min{j : B(1−j/N; 1−β) ≤ α}
    (±inf when no rank qualifies). Two-sided intervals use α = (1 − level)/2 per side. As for
    :func:`forecast_interval`, ``err`` may be a ``.npy`` or Parquet file, a ``numpy.memmap`` or a
    Dask collection, read in chunks.

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> E = datasets.load_transfer_errors("abdg")  # CPT's published 44 x 44 matrix
    >>> ci = qte_interval(E, 0.9, betas=[0.25, 0.5, 0.75])
    >>> ci.round(3).values.tolist()
    [[0.25, 2.484, 3.888], [0.5, 3.157, 5.594], [0.75, 3.953, 14.76]]
    """
    t = _ordered(err, pooled=pooled, r=r)
    _check_r(t, r)
    side = _side(side)
    k = _order(t, order)
    alpha = _alpha(level, side)
    b = as_float_array(betas, "betas", allow_empty=True)
    if b.size == 0 or np.any(~((b > 0) & (b < 1))):
        raise InvalidArgumentError("argument `betas` must be quantile levels in (0, 1)")
    jl, ju = _ci_ranks(t.N, t.n, k, np.ascontiguousarray(b), alpha)
    # (ranks 0 and N + 1 are -inf and +inf), by selection: the errors are never sorted
    lb, ub = np.split(_order_statistics(t, np.concatenate([jl, ju])), 2)
    if side == "upper":
        lb = np.full_like(lb, -np.inf)
    elif side == "lower":
        ub = np.full_like(ub, np.inf)
    return pd.DataFrame({"beta": b, "lb": lb, "ub": ub})


@deprecated_arguments(renamed={"coverage": "level"}, positional=2)
def ete_interval(err: Any, level: float, *, side: str = "two", bd: float = 1.0, r: Any = None, order: Any = None,
                 pooled: bool = False):
    """Confidence interval for the mean transfer error E[e] (Prop. Q.2); errors must lie in [0, bd].

    Returns ``(lower, upper)`` (±inf on the open side of one-sided intervals). Order k = r + 1 by
    default (``order="transferUQ"``: k = r).

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> E = datasets.load_transfer_errors("abdg")  # CPT's published 44 x 44 matrix
    >>> lo, hi = ete_interval(E, 0.9, bd=30000.0)  # every error lies in [0, 30000]
    >>> round(lo, 4), round(hi, 1)
    (0.0042, 5064.6)
    """
    t = _table(err, pooled=pooled, r=r)
    _check_r(t, r)
    side = _side(side)
    k = _order(t, order)
    bd = check_real(bd, "bd", low=0.0, low_open=True)
    if t.values.min() < 0 or t.values.max() > bd:
        raise InvalidArgumentError(f"ete_interval needs every error in [0, bd] = [0, {bd}]; the errors span "
                                   f"[{t.values.min():.4g}, {t.values.max():.4g}] (set `bd`, or use e.g. 1/shortfall)")
    alpha = _alpha(level, side)
    u = float(np.mean(t.values / bd))
    u = min(max(u, 0.0), 1.0)
    hi = _core.transfer_ustat_mean_upper(u, t.n, k, alpha) if side in ("two", "upper") else math.inf
    lo = 1 - _core.transfer_ustat_mean_upper(1 - u, t.n, k, alpha) if side in ("two", "lower") else -math.inf
    return (lo * bd if np.isfinite(lo) else lo, hi * bd if np.isfinite(hi) else hi)


@deprecated_arguments(positional=2)
def plot_quantile_ci(curves: Mapping[str, Any], ax=None, *, log: bool | None = None):
    """Plot :func:`qte_interval` frames (beta, lb, ub) of several models as bands over β, on ``ax``
    if given. ``log``: a log y axis (None: when the bounds span decades). Returns the matplotlib
    Figure (earlier releases returned the Axes: it is ``fig.axes[0]``).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from llmsurrogate import datasets
    >>> ci = {m: qte_interval(datasets.load_transfer_errors(m), 0.9, betas=[0.25, 0.5, 0.75]) for m in ("abdg", "RF")}
    >>> fig = plot_quantile_ci(ci, log=True)
    >>> ax = fig.axes[0]
    >>> [t.get_text() for t in ax.get_legend().get_texts()], ax.get_yscale()
    (['abdg', 'RF'], 'log')
    >>> plt.close(fig)
    """
    from .._plotting import axes_for, finish, log_scale_if_wide, plain_log_ticks

    fig, ax, owned = axes_for(ax, (6.4, 4.2))
    bounds = []
    for name, df in curves.items():
        line = ax.plot(df["beta"], (df["lb"] + df["ub"]) / 2, alpha=0)[0]
        ax.fill_between(df["beta"], df["lb"], df["ub"], alpha=0.3, label=str(name), color=line.get_color())
        bounds += [df["lb"].to_numpy(float), df["ub"].to_numpy(float)]
    if log is None:
        log_scale_if_wide(ax, np.concatenate(bounds) if bounds else [], axis="y")
    elif log:
        plain_log_ticks(ax, "y")
    ax.set_xlabel("β (quantile of the transfer-error distribution)")
    ax.set_ylabel("confidence interval for the β-quantile")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return finish(fig, owned)
