"""Empirical upper and lower quantiles, plain and weighted.

These are the order-statistic building blocks of the transfer-performance and ESS inference
(Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic Models", Definition 2
and Section 4). For a distribution P,

* the **upper** τ-quantile is ``Q̄_τ(P) = inf{b : P((-∞, b]) ≥ τ}``,
* the **lower** τ-quantile is ``Q̲_τ(P) = sup{b : P([b, ∞)) ≥ 1 - τ}``.

For N equally weighted values sorted as f_(1) ≤ … ≤ f_(N), ``Q̄_τ = f_(⌈τN⌉)`` (R's
``quantile(x, τ, type = 1)``) and ``Q̲_τ = f_(⌊τN⌋+1)``; they differ only where τN is a whole number.
The ends are ``Q̄_0 = -∞`` and ``Q̲_1 = +∞``. Levels are compared with a tolerance of 1e-12 on the
probability scale, so that 0.5 × 1892 = 946.0000000000001 still selects rank 946. (R's own
``quantile(type = 1)`` fuzz is smaller and sometimes picks the next rank at τ = k/N, e.g. N = 50,
k = 14; numpy's ``inverted_cdf`` has none.)

The weighted versions put weight ``weights[i]`` on ``values[i]`` and an extra mass ``inf_weight`` at
+∞ (upper quantile) or -∞ (lower quantile), the conservative place for an unobserved target in
weighted conformal prediction. Weights need not sum to one.

All computation runs in the Rust core with the GIL released; ``n_jobs`` sets the threads used to
sort large inputs (``None``: an enclosing ``joblib.parallel_config``'s ``n_jobs``, else the
``LLMSURROGATE_NUM_THREADS`` environment variable, else every core; see
:func:`llmsurrogate.num_threads`).

Examples
--------
>>> from llmsurrogate import quantiles
>>> x = [3.0, 1.0, 2.0, 4.0, 6.0, 5.0]
>>> quantiles.upper_quantile(x, 0.5), quantiles.lower_quantile(x, 0.5)
(3.0, 4.0)
>>> quantiles.quantile_interval(x, 5 / 6)
(2.0, 5.0)
>>> quantiles.weighted_upper_quantile([1.0, 2.0], [1.0, 3.0], 0.25)
1.0
>>> quantiles.weighted_upper_quantile([1.0, 2.0], [1.0, 1.0], 0.9, inf_weight=1.0)
inf
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._positions import at, located
from ._validation import align_by_label, as_float_array, as_levels, check_real
from ._workers import resolve_n_jobs
from .exceptions import NonFiniteError, ShapeError

__all__ = [
    "upper_quantile",
    "lower_quantile",
    "quantile_interval",
    "weighted_upper_quantile",
    "weighted_lower_quantile",
    "weighted_quantile_interval",
]


def _shape(out: np.ndarray, scalar: bool):
    return float(out[0]) if scalar else out


def _inf_weight(inf_weight: Any) -> float:
    return check_real(inf_weight, "inf_weight", low=0.0)


def upper_quantile(values, tau, *, n_jobs: int | None = None):
    """Upper empirical quantile ``Q̄_τ`` of ``values`` (R's ``quantile(type = 1)``).

    Parameters
    ----------
    values : array-like of float
        The sample (list, numpy array, pandas or polars Series). NaN is an error; ±inf is allowed.
    tau : float or array-like of float
        Level(s) in [0, 1]. A scalar gives a float, an array gives an array.
    n_jobs : int, optional
        Workers/threads for sorting large inputs (None: see :func:`llmsurrogate.num_threads`).

    Examples
    --------
    >>> upper_quantile([10.0, 30.0, 20.0], [0.0, 1 / 3, 0.5, 1.0]).tolist()
    [-inf, 10.0, 20.0, 30.0]
    """
    v = as_float_array(values, "values")
    t, scalar = as_levels(tau)
    return _shape(_core.upper_quantiles(v, t, resolve_n_jobs(n_jobs)), scalar)


def lower_quantile(values, tau, *, n_jobs: int | None = None):
    """Lower empirical quantile ``Q̲_τ = sup{b : F([b, ∞)) ≥ 1 - τ}`` of ``values``.

    Examples
    --------
    >>> lower_quantile([10.0, 30.0, 20.0], [0.0, 1 / 3, 0.5, 1.0]).tolist()
    [10.0, 20.0, 20.0, inf]
    """
    v = as_float_array(values, "values")
    t, scalar = as_levels(tau)
    return _shape(_core.lower_quantiles(v, t, resolve_n_jobs(n_jobs)), scalar)


def _interval_level(tau) -> float:
    return check_real(tau, "tau", low=0.5, high=1.0, low_open=True)


def quantile_interval(values, tau: float, *, n_jobs: int | None = None) -> tuple[float, float]:
    """The interval ``[Q̲_{1-τ}, Q̄_τ] = [f_(N+1-k), f_(k)]`` with ``k = ⌈τN⌉``, for τ in (1/2, 1].

    This is the pooled forecast interval of the transfer paper (Definition 3) applied to any
    sample. At τ ≤ 1/2 the ends would cross, so such levels are rejected.

    Examples
    --------
    >>> quantile_interval(range(1, 101), 0.95)
    (6.0, 95.0)
    """
    level = _interval_level(tau)
    v = as_float_array(values, "values")
    jobs = resolve_n_jobs(n_jobs)
    lo = _core.lower_quantiles(v, np.array([1.0 - level]), jobs)[0]
    hi = _core.upper_quantiles(v, np.array([level]), jobs)[0]
    return float(lo), float(hi)


def _weighted_inputs(values, weights):
    values, weights = align_by_label(("values", values), ("weights", weights))
    v = as_float_array(values, "values")
    w = as_float_array(weights, "weights")
    if v.shape != w.shape:
        raise ShapeError(f"arguments `values` (length {v.size}) and `weights` (length {w.size}) must have the same length")
    return v, w


def _normalised(w: np.ndarray, inf_weight: float) -> tuple[np.ndarray, float]:
    """Weights and the mass at infinity divided by the power of two just below their largest value, so that
    their sum cannot overflow (three weights of 1e308 sum to inf) and no ratio changes: the division
    by a power of two is exact. NaN, negative and all-zero weights are left for the kernel to reject."""
    finite = w[np.isfinite(w)]
    top = max(float(finite.max()) if finite.size else 0.0, inf_weight if np.isfinite(inf_weight) else 0.0)
    if top <= 0.0:
        return w, inf_weight
    _, exp = np.frexp(top)
    scale = np.ldexp(1.0, int(exp) - 1)   # the power of two in (top / 2, top]: scaled weights are <= 2
    if scale == 1.0:
        return w, inf_weight
    return np.ascontiguousarray(w / scale), inf_weight / scale


def _weighted_args(values, weights, inf_weight):
    v, w = _weighted_inputs(values, weights)
    if np.isinf(w).any():
        raise NonFiniteError(located("argument `weights` has an infinite value at ", at(np.flatnonzero(np.isinf(w))[0]),
                                     "; weights must be finite"))
    extra = _inf_weight(inf_weight)
    w, extra = _normalised(w, extra)
    return v, w, extra


def weighted_upper_quantile(values, weights, tau, *, inf_weight: float = 0.0, n_jobs: int | None = None):
    """Upper quantile ``Q̄_τ`` of ``Σ w_i δ(v_i) + inf_weight · δ(+∞)`` (normalised).

    Returns +inf when the mass at +∞ exceeds ``1 - τ`` of the total.

    Examples
    --------
    >>> weighted_upper_quantile([1.0, 2.0, 3.0], [0.2, 0.0, 0.8], [0.2, 0.21, 1.0]).tolist()
    [1.0, 3.0, 3.0]
    """
    v, w, extra = _weighted_args(values, weights, inf_weight)
    t, scalar = as_levels(tau)
    return _shape(_core.weighted_upper_quantiles(v, w, t, extra, resolve_n_jobs(n_jobs)), scalar)


def weighted_lower_quantile(values, weights, tau, *, inf_weight: float = 0.0, n_jobs: int | None = None):
    """Lower quantile ``Q̲_τ`` of ``Σ w_i δ(v_i) + inf_weight · δ(-∞)`` (normalised).

    Returns -inf when the mass at -∞ exceeds ``τ`` of the total.

    Examples
    --------
    >>> weighted_lower_quantile([1.0, 2.0, 3.0], [0.2, 0.0, 0.8], [0.0, 0.2, 0.5]).tolist()
    [1.0, 3.0, 3.0]
    """
    v, w, extra = _weighted_args(values, weights, inf_weight)
    t, scalar = as_levels(tau)
    return _shape(_core.weighted_lower_quantiles(v, w, t, extra, resolve_n_jobs(n_jobs)), scalar)


def weighted_quantile_interval(values, weights, tau: float, *, inf_weight: float = 0.0,
                               n_jobs: int | None = None) -> tuple[float, float]:
    """``[Q̲_{1-τ}, Q̄_τ]`` of the weighted distribution (Definition 5 of the transfer paper), τ in (1/2, 1].

    With ``inf_weight > 0`` the lower end uses a mass at -∞ and the upper end a mass at +∞.

    Examples
    --------
    >>> weighted_quantile_interval([1.0, 2.0, 3.0, 4.0], [1, 1, 1, 1], 0.75)
    (2.0, 3.0)
    """
    level = _interval_level(tau)
    v, w, extra = _weighted_args(values, weights, inf_weight)
    jobs = resolve_n_jobs(n_jobs)
    lo = _core.weighted_lower_quantiles(v, w, np.array([1.0 - level]), extra, jobs)[0]
    hi = _core.weighted_upper_quantiles(v, w, np.array([level]), extra, jobs)[0]
    return float(lo), float(hi)
