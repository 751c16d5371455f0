"""Forecast intervals on a transfer-error table: plain, weighted and worst case over Γ, and the
coverage each guarantees (the Python side of ``rust/transfer/table.rs``).

Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic Models" (2025), and
``docs/methods/transfer.md`` §2–3. transferUQ's names and signatures, with the package's words
(see :mod:`._common` for the table conventions, ``side``, ``level`` and ``tau``):

========================================================  ======================================
``forecast_interval(err, level, side, correction)``       ``(lower, upper)`` (Prop. 1)
``weighted_forecast_interval(err, weights, level, side)`` ``(lower, upper)`` (Theorem 1)
``worst_case_interval(err, level, Gamma, side)``          ``(lower, upper)`` (Corollary 1)
========================================================  ======================================

and the coverage helpers of Proposition 1, Claim 1, Corollary 1, Theorem 1 and Theorem R.1.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._deprecation import deprecated_arguments
from .._validation import (
    as_float_array,
    check_choice,
    check_flag,
    check_gamma,
    check_probability,
    check_real,
)
from ..exceptions import CoverageWarning, InvalidArgumentError
from ._common import (
    _check_weights,
    _clip_side,
    _core_table,
    _n_r,
    _order_statistics,
    _ordered,
    _side,
    _table,
    _tau,
)
from ._results import ForecastIntervals, WorstCaseCurve, _step
from ._table import ErrorTable, PooledErrors

__all__ = [
    "coverage_bound", "coverage_upper_bound", "tau_for_coverage", "weighted_coverage_diagnostic", "robust_level",
    "forecast_interval", "weighted_forecast_interval", "forecast_intervals", "ForecastIntervals",
    "worst_case_interval", "worst_case_curve", "worst_case_tau_curve", "WorstCaseCurve",
]


# ---- coverage helpers (Proposition 1, Claim 1, Corollary 1, Theorem 1, Theorem R.1) -------------------

@deprecated_arguments(positional=3)
def coverage_bound(n: int, r: int, tau: float, *, side: str = "two", Gamma: float = 1.0) -> float:  # noqa: N803
    """Guaranteed coverage of the level-τ interval: (2τ−1 or τ)(n−r)/(n+Γ²).

    Γ = 1 is Proposition 1 (exchangeable domains); Γ > 1 is Corollary 1 (likelihood ratio in
    [1/Γ, Γ], for the worst-case interval of :func:`worst_case_interval`).

    Examples
    --------
    >>> round(coverage_bound(44, 1, 0.95), 4)
    0.86
    >>> round(coverage_bound(44, 1, 0.95, Gamma=2.0), 3)
    0.806
    """
    (n, r), side = _n_r(n, r), _side(side)
    tau = check_probability(tau, "tau", high_open=False)
    return _coverage(n, r, tau, side, check_gamma(Gamma))


def _coverage(n: int, r: int, tau: float, side: str, g: float = 1.0) -> float:
    """:func:`coverage_bound` of checked arguments (``side`` one of "two", "upper", "lower")."""
    lead = (2 * tau - 1) if side == "two" else tau
    return max(lead, 0.0) * (n - r) / (n + g * g)


@deprecated_arguments(positional=3)
def coverage_upper_bound(n: int, r: int, tau: float, *, side: str = "two", conservative: bool = False) -> float:
    """Claim 1: coverage is at most (2τ−1 or τ)(n−r)/(n+1) + (r+1)/(n+1) + (n−r)!/(n+1)! without ties.

    ``conservative=True`` doubles the last (max-atom) term for two-sided intervals (docs/methods/transfer.md §2.1, A17).

    Examples
    --------
    >>> round(coverage_upper_bound(44, 1, 0.95), 4)
    0.9049
    """
    (n, r), side = _n_r(n, r), _side(side)
    tau = check_probability(tau, "tau", high_open=False)
    conservative = check_flag(conservative, "conservative")
    try:
        atom = math.exp(math.lgamma(n - r + 1) - math.lgamma(n + 2))
    except OverflowError:  # n beyond ~1e305: the atom (n - r)!/(n + 1)! <= 1/(n + 1) is 0 in floating point
        atom = 0.0
    mult = 2 if (conservative and side == "two") else 1
    lead = (2 * tau - 1) if side == "two" else tau
    return min(1.0, lead * (n - r) / (n + 1) + (r + 1) / (n + 1) + mult * atom)


@deprecated_arguments(renamed={"coverage": "level"}, positional=3)
def tau_for_coverage(n: int, r: int, level: float, *, side: str = "two") -> float:
    """The quantile level τ whose Proposition 1 guarantee is the coverage ``level`` (the package's
    correction).

    Raises if ``level`` exceeds the best possible guarantee (n−r)/(n+1).

    Examples
    --------
    >>> tau = tau_for_coverage(44, 1, 0.8)
    >>> round(tau, 4), round(coverage_bound(44, 1, tau), 4)
    (0.9186, 0.8)
    """
    (n, r), side = _n_r(n, r), _side(side)
    c = check_probability(level, "level")
    adj = c * (n + 1) / (n - r)
    if adj > 1 + 1e-12:
        raise InvalidArgumentError(f"argument `level`: {c} cannot be guaranteed with n = {n}, r = {r}; the maximum is "
                                   f"(n - r)/(n + 1) = {(n - r) / (n + 1):.4f}")
    adj = min(adj, 1.0)
    return (1 + adj) / 2 if side == "two" else adj


@deprecated_arguments(positional=5)
def weighted_coverage_diagnostic(n: int, r: int, tau: float, weights: Any, w_target: float, *,
                                 side: str = "two") -> float:
    """Plug-in value of Theorem 1's bound, (2τ−1 or τ)(n−r)/n · Σw/(Σw + w_target).

    A **diagnostic, not a guarantee**: the theorem takes an expectation over the unobserved target's
    likelihood ratio; this plugs in a user-chosen ``w_target``.

    Examples
    --------
    >>> round(weighted_coverage_diagnostic(3, 1, 0.9, weights=[1.0, 1.0, 2.0], w_target=1.0), 4)
    0.4267
    """
    (n, r), side = _n_r(n, r), _side(side)
    tau = check_probability(tau, "tau", high_open=False)
    w = _check_weights(as_float_array(weights, "weights"), n)   # one likelihood ratio per domain
    w_target = check_real(w_target, "w_target", low=0.0)
    scale = float(w.max())        # Σw / (Σw + w_target) is scale-free; dividing by the largest weight avoids overflow
    total = float(np.sum(w / scale))
    lead = (2 * tau - 1) if side == "two" else tau
    return max(lead, 0.0) * (n - r) / n * total / (total + w_target / scale)


@deprecated_arguments(positional=4)
def robust_level(tau: float, Gamma: float, n: int, r: int, *, side: str = "two", mode: str = "safe"):  # noqa: N803
    """Theorem R.1: the inflated level τ' for the unweighted interval under the shift model 𝒫(Γ; r).

    Returns ``(tau_prime, guarantee)`` with guarantee (2τ−1 or τ)(1 − (r+1)Γ/(n+1)). ``mode="safe"``
    (default) uses 1 − τ' = (1−τ)(n+1−(r+1)Γ)/(Γ(n−r)), which keeps the renormalisation the paper's
    proof drops (docs/methods/transfer.md §3.4, A8); ``mode="paper"`` uses the printed τ' = 1 − (1−τ)/Γ. Note the Γ of this
    model is not the Γ of 𝒲(Γ). Use the result with ``forecast_interval(err, tau=tau_prime)``.

    Examples
    --------
    >>> tau_prime, guarantee = robust_level(0.95, Gamma=1.5, n=44, r=1)
    >>> round(tau_prime, 4), round(guarantee, 4)
    (0.9674, 0.84)
    """
    (n, r), side = _n_r(n, r), _side(side)
    mode = check_choice(mode, "mode", ["safe", "paper"])
    tau = check_probability(tau, "tau", high_open=False)
    g = check_gamma(Gamma)
    if (r + 1) * g >= n + 1:
        raise InvalidArgumentError(f"arguments `Gamma`, `n` and `r`: Theorem R.1 needs (r + 1) Gamma < n + 1; got "
                                   f"({r} + 1) * {g} >= {n + 1}")
    if mode == "paper":
        tp = 1 - (1 - tau) / g
    else:
        tp = 1 - (1 - tau) * (n + 1 - (r + 1) * g) / (g * (n - r))
    lead = (2 * tau - 1) if side == "two" else tau
    return min(max(tp, 0.0), 1.0), lead * (1 - (r + 1) * g / (n + 1))


# ---- forecast intervals ---------------------------------------------------------------------------

#: :func:`forecast_interval` warns (:class:`~llmsurrogate.exceptions.CoverageWarning`) when the
#: coverage Proposition 1 guarantees is more than this below the nominal coverage.
COVERAGE_SHORTFALL = 0.05


class ForecastInterval(tuple):
    """``(lower, upper)``, a plain pair, with ``guaranteed``: the coverage Proposition 1 guarantees
    (NaN when the table does not give r, the number of training domains)."""

    guaranteed: float

    def __new__(cls, lower: float, upper: float, guaranteed: float):
        out = super().__new__(cls, (lower, upper))
        out.guaranteed = guaranteed
        return out

    def __getnewargs__(self):
        return (*self, self.guaranteed)


def _guaranteed(t: Any, tau: float, side: str, nominal: float, warn: bool = True) -> float:
    """Proposition 1's coverage at the quantile level ``tau`` (NaN without r), with a
    :class:`CoverageWarning` when it falls more than :data:`COVERAGE_SHORTFALL` below ``nominal``."""
    if t.r is None or t.n <= t.r:
        return math.nan
    guaranteed = _coverage(t.n, t.r, min(tau, 1.0), side)  # checked: t's n > r >= 1, tau in (0, 1], side
    if warn and guaranteed < nominal - COVERAGE_SHORTFALL:
        best = (t.n - t.r) / (t.n + 1)
        fix = ("correction=True raises the level so that it is guaranteed" if nominal <= best else
               f"no level guarantees more than (n - r)/(n + 1) = {best:.4g} here; more domains raise it")
        warnings.warn(f"the interval's guaranteed coverage is {guaranteed:.4g}, well below the nominal {nominal:.4g} "
                      f"(Proposition 1 with n = {t.n} domains, r = {t.r}); {fix}", CoverageWarning,
                      stacklevel=4)  # 4: past the public function's argument wrapper
    return guaranteed

@deprecated_arguments(renamed={"coverage": "level"}, positional=2)
def forecast_interval(err: Any, level: float | None = None, *, side: str = "two", correction: bool = False,
                      tau: float | None = None, mode: str = "exact", pooled: bool = False) -> tuple[float, float]:
    """Forecast interval for the transfer error to a new domain (Section 3, Proposition 1).

    Pools the N errors and returns ``(lower, upper)`` = [e̲_τ, ē_τ] = [f_(N+1−k), f_(k)], k = ⌈τN⌉,
    with τ = (1 + level)/2 two-sided and τ = level one-sided (``side="upper"`` gives
    ``(-inf, ē_τ]``, ``side="lower"`` gives ``[e̲_τ, inf)``). Under exchangeable domains the interval
    covers the realised error with probability at least (2τ−1)(n−r)/(n+1) (τ(n−r)/(n+1)
    one-sided); ``correction=True`` raises τ so that this guarantee equals ``level``.

    ``mode="exact"`` (default) takes the Definition-2 rank k = ⌈τN⌉ with levels compared to 1e-12;
    ``mode="transferUQ"`` computes τ and the rank as transferUQ 0.1.0 does (``quantile(type = 1)``,
    whose fuzz of 4 machine epsilons picks the next order statistic when τN lands a rounding error
    above an integer, as in corrected intervals: docs/methods/transfer.md, departure 18).
    ``pooled=True`` reads ``err`` as transferUQ does (see :class:`PooledErrors`).

    The order statistics are selected, never sorted (8 bytes an error). A table larger than memory
    can be given as a path to a ``.npy`` file (a square matrix) or a Parquet file (a long table), a
    ``numpy.memmap``, or a Dask array or dataframe: it is read in chunks, a few passes, in memory of
    its own (some 40 MB), with the same result bit for bit (docs/methods/transfer.md A2).

    The pair returned has an attribute ``guaranteed``, the coverage Proposition 1 guarantees
    (:func:`coverage_bound` at the level used; NaN when the table does not give r). When it is more
    than :data:`COVERAGE_SHORTFALL` (0.05) below the nominal coverage (``level``, or 2τ−1
    two-sided and τ one-sided for ``tau``), a :class:`~llmsurrogate.exceptions.CoverageWarning`
    names both numbers.

    Examples
    --------
    >>> import numpy as np
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> forecast_interval(E, tau=0.8)
    (2.0, 5.0)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     interval = forecast_interval(E, level=0.9)
    >>> interval, round(interval.guaranteed, 2)
    ((1.0, 6.0), 0.45)
    >>> print(caught[0].message)
    the interval's guaranteed coverage is 0.45, well below the nominal 0.9 (Proposition 1 with n = 3 domains, r = 1);
    no level guarantees more than (n - r)/(n + 1) = 0.5 here; more domains raise it
    """
    t = _ordered(err, pooled=pooled)
    side = _side(side)
    mode = check_choice(mode, "mode", ["exact", "transferUQ"])
    correction = check_flag(correction, "correction")
    if correction and t.r is None:
        raise InvalidArgumentError("argument `correction`: the finite-sample correction needs r, the number of "
                                   "training domains, which a two-column (test, error) table does not give")
    if mode == "transferUQ":
        lo, hi, q = _transferuq_interval(t, level, side, bool(correction), tau)
    else:
        q = _tau(level, side, tau, n=t.n, r=t.r, correction=bool(correction))
        k = min(max(math.ceil(t.N * (q - 1e-12)), 1), t.N)  # rust/common/quantiles.rs upper_rank
        lo, hi = _order_statistics(t, [t.N + 1 - k, k])  # [f_(N+1-k), f_(k)], by selection
    if level is not None:
        nominal = float(level)
    else:
        nominal = 2 * q - 1 if side == "two" else q
    # an exact corrected level guarantees the coverage, or _tau has warned that it cannot
    warn = not (correction and mode == "exact")
    return ForecastInterval(*_clip_side(lo, hi, side), _guaranteed(t, q, side, nominal, warn))


_EPS4 = 4 * float(np.finfo(float).eps)


def _r_type1_index(n: int, p: float) -> int:
    """The 0-based order statistic that R's ``quantile(type = 1)`` takes of ``n`` sorted values."""
    nppm = n * p
    j = math.floor(nppm + _EPS4)
    return min(j, n - 1) if nppm > j else max(j - 1, 0)


def _transferuq_interval(t: Any, level: Any, side: str, correction: bool, tau: Any) -> tuple[float, float, float]:
    """transferUQ 0.1.0's forecast_interval, floating point included; and the quantile level used."""
    if tau is not None:
        q = _tau(level, side, tau)
    else:
        c = check_probability(level, "level", low=0.0, high=1.0, high_open=False)
        if correction:
            c = min((t.n + 1) / (t.n - t.r) * c, 1.0)
        q = (1 + c) / 2 if side == "two" else c
    i = _r_type1_index(t.N, q)
    # the lower end is -quantile(-f, q): -f sorted is -f reversed, so its i-th value is -f[N - 1 - i],
    # the order statistic of rank N - i
    lo, hi = _order_statistics(t, [t.N - i, i + 1])
    return float(lo), float(hi), q


def _weights(t: ErrorTable, weights: Any) -> np.ndarray:
    if isinstance(weights, pd.Series):
        # a labelled input paired with the table's domains: paired by label (the rule of _validation)
        labels = [str(v) for v in weights.index]
        domains = [str(d) for d in t.domains]
        if weights.index.has_duplicates or set(labels) != set(domains):
            extra = sorted(set(labels) - set(domains), key=str)[:3]
            missing = sorted(set(domains) - set(labels), key=str)[:3]
            raise InvalidArgumentError(
                f"arguments `err` and `weights`: the index of `weights` must hold the table's domain labels, each "
                f"once (not in the table: {extra}; without a weight: {missing}); weights are paired with domains by "
                "label. To pair by position (the table's domain order), pass `weights.to_numpy()`")
        weights = dict(zip(labels, weights.tolist()))
    if isinstance(weights, Mapping):
        missing = [d for d in t.domains if d not in weights and str(d) not in weights]
        if missing:
            raise InvalidArgumentError(f"argument `weights` has no weight for domain(s) {missing[:5]}")
        w = as_float_array([weights[d] if d in weights else weights[str(d)] for d in t.domains], "weights")
    else:
        w = as_float_array(weights, "weights", allow_empty=True)
    w = _check_weights(w, t.n)
    # only ratios matter: divide by the power of two just below the largest weight (exact), so that
    # the kernel's sums cannot overflow (three weights of 1e308 sum to inf)
    _, exp = np.frexp(float(w.max()))
    return np.ascontiguousarray(w / np.ldexp(1.0, int(exp) - 1))


@deprecated_arguments(renamed={"coverage": "level"}, positional=3)
def weighted_forecast_interval(err: Any, weights: Any, level: float | None = None, *, side: str = "two",
                               tau: float | None = None, pooled: bool = False) -> tuple[float, float]:
    """Forecast interval under a known likelihood ratio (Section 4.1, Theorem 1).

    ``weights`` holds ω(S_d) for each domain (array in the table's domain order, or a mapping
    domain → weight); each pooled error gets the weight of its **test** domain (eq. 7). Only ratios
    matter. Zero weights are allowed (closed box); negative or all-zero weights are errors.

    Examples
    --------
    >>> import numpy as np
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
    >>> forecast_interval(E, tau=0.8), weighted_forecast_interval(E, [1.0, 1.0, 4.0], tau=0.8)
    ((2.0, 5.0), (2.0, 4.0))
    """
    t = _table(err, pooled=pooled)
    side = _side(side)
    q = _tau(level, side, tau)
    lo, hi = _core_table(t).weighted(_weights(t, weights), np.array([q]))
    return _clip_side(lo[0], hi[0], side)


@deprecated_arguments(renamed={"coverage": "level"}, positional=2)
def forecast_intervals(tables: Mapping[str, Any], level: Sequence[float] | float = (0.8, 0.9, 0.95), *,
                       sides: Sequence[str] | str = ("two",), correction: bool = False) -> ForecastIntervals:
    """:func:`forecast_interval` for several models, levels and sides, as a tidy result that plots.

    The table's ``coverage`` column holds the nominal coverage ``level`` of each row.

    Examples
    --------
    >>> import numpy as np
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
    >>> res = forecast_intervals({"A": E, "B": 2 * E}, level=0.6)
    >>> res.table[["model", "tau", "lower", "upper", "guaranteed"]].round(3).values.tolist()
    [['A', 0.8, 2.0, 5.0, 0.3], ['B', 0.8, 4.0, 10.0, 0.3]]
    """
    if not isinstance(tables, Mapping) or not tables:
        raise InvalidArgumentError("argument `tables` must be a non-empty mapping model name -> error table")
    covs = [level] if np.isscalar(level) else list(as_float_array(level, "level"))
    sides = [sides] if isinstance(sides, str) else list(sides)
    if not sides:
        raise InvalidArgumentError("argument `sides` is empty; pass e.g. ('two',) or ('two', 'upper')")
    correction = check_flag(correction, "correction")
    rows, first = [], None
    for name, err in tables.items():
        t = _table(err, arg=f"tables[{name!r}]")
        first = first or t
        for side in sides:
            s = _side(side)
            for c in covs:
                q = _tau(c, s, None, n=t.n, r=t.r, correction=correction)
                lo, hi = forecast_interval(t, c, side=s, correction=correction)
                rows.append({"model": str(name), "coverage": float(c), "side": s, "tau": q, "lower": lo,
                             "upper": hi, "guaranteed": coverage_bound(t.n, t.r, q, side=s)})
    return ForecastIntervals(table=pd.DataFrame(rows), n=first.n, r=first.r)


# ---- worst case over bounded likelihood ratios (Corollary 1, Theorem R.2) ------------------------------

@deprecated_arguments(renamed={"coverage": "level"}, positional=2)
def worst_case_interval(err: Any, level: float | None = None, *, Gamma: float = math.inf, side: str = "two",  # noqa: N803
                        tau: float | None = None, pooled: bool = False) -> tuple[float, float]:
    """Worst-case forecast interval [e̲_τ(Γ), ē_τ(Γ)] over likelihood ratios in [1/Γ, Γ] (eq. 8).

    Exact (Theorem R.2 closed form); coverage ≥ (2τ−1)(n−r)/(n+Γ²) by Corollary 1. Γ = 1 gives
    :func:`forecast_interval`; Γ = ∞ gives the largest per-test-domain quantile.

    Examples
    --------
    >>> import numpy as np
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
    >>> worst_case_interval(E, tau=0.8, Gamma=1.0), worst_case_interval(E, tau=0.8, Gamma=2.0)
    ((2.0, 5.0), (1.0, 6.0))
    """
    t = _table(err, pooled=pooled)
    side = _side(side)
    g = check_gamma(Gamma)
    q = _tau(level, side, tau)
    hi = _core_table(t).gamma_steps(q, g)
    lo = _core_table(t, negate=True).gamma_steps(q, g)
    up = _step(hi[0], hi[1], g)
    low = -_step(lo[0], lo[1], g)
    return _clip_side(low, up, side)


def worst_case_curve(err: Any, tau: Sequence[float] | float = (0.5, 0.75, 0.9, 0.95), Gamma_max: float = math.inf,  # noqa: N803
                     *, lower: bool = True, name: str = "") -> WorstCaseCurve:
    """ē_τ(Γ) (and e̲_τ(Γ)) as exact step functions of Γ ∈ [1, Gamma_max] for each τ.

    No Γ grid: the breakpoints Γ*_j are computed in closed form (docs/methods/transfer.md §3.3).

    Examples
    --------
    >>> import numpy as np
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
    >>> steps = worst_case_curve(E, tau=0.8, lower=False).steps
    >>> steps[["gamma_from", "gamma_to", "value"]].round(4).values.tolist()
    [[1.0, 1.1547, 5.0], [1.1547, inf, 6.0]]
    """
    t = _table(err)
    g = check_gamma(Gamma_max, "Gamma_max")
    lower = check_flag(lower, "lower")
    taus = as_float_array(tau, "tau")
    for x in taus:
        check_probability(float(x), "tau", high_open=False)
    rows = []
    for bound, core, sign in [("upper", _core_table(t), 1.0)] + ([("lower", _core_table(t, True), -1.0)] if lower else []):
        for x, (gs, vs) in zip(taus, core.gamma_steps_many(np.ascontiguousarray(taus), g)):
            prev = 1.0
            for g1, v in zip(gs, vs):
                rows.append({"tau": float(x), "bound": bound, "gamma_from": prev, "gamma_to": float(g1),
                             "value": sign * float(v)})
                prev = float(g1)
    return WorstCaseCurve(steps=pd.DataFrame(rows), name=name or t.name)


def worst_case_tau_curve(err: Any, Gamma: float = math.inf):  # noqa: N803
    """Corollary R.1: ē_τ(Γ) for all τ at once, as a frame ``prob, val`` (transferUQ's Gamma_curve).

    ``prob[j] = Q_j(Γ)/K``; ē_τ(Γ) = val at the first row with prob ≥ τ. One row per distinct error
    value: tied errors are one step of the curve, at the probability reached once all of them are in
    (transferUQ keeps a row per tied error, whose intermediate probabilities depend on the order of the
    table's rows; ē_τ(Γ) is the same either way).

    Examples
    --------
    >>> import numpy as np, llmsurrogate.transfer as tr
    >>> e = np.array([[0, 1, 2], [3, 0, 1], [2, 3, 0]], dtype=float)
    >>> tr.worst_case_tau_curve(e, Gamma=2.0)["val"].tolist()
    [1.0, 2.0, 3.0]
    """
    t = _table(err)
    core = _core_table(t)
    prob, val = core.worst_case_p(check_gamma(Gamma)), core.sorted_values()
    last_of_tie = np.r_[val[1:] != val[:-1], True] if val.size else np.zeros(0, dtype=bool)
    return pd.DataFrame({"prob": prob[last_of_tie], "val": val[last_of_tie]})
