"""Inference on a transfer-error table: forecast intervals, worst-case bounds, dominance, CIs.

Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic Models" (2025), and
``docs/methods/transfer.md`` §2–5 (algorithms A2–A10). Every function takes the error table in any
of the three conventions of the authors' R package transferUQ (a square matrix ``[train, test]``
with the diagonal ignored, a long frame ``train..., test, error``, or an :class:`ErrorTable`) and
keeps transferUQ's names and signatures:

========================================================  ======================================
``forecast_interval(err, coverage, side, correction)``    ``(lower, upper)`` (Prop. 1)
``qte_interval(err, coverage, side, betas, r)``           frame ``beta, lb, ub`` (Prop. Q.1)
``ete_interval(err, coverage, side, bd, r)``              ``(lower, upper)`` (Prop. Q.2)
``check_worstcase_dominance(err1, err2, taulist, Gamma)`` frame ``tau, res`` (Def. 7)
``check_everywhere_dominance(err1, err2, taulist)``       frame ``tau, res`` (Def. 8)
========================================================  ======================================

``side`` is ``"two"``, ``"upper"`` (an upper bound: ``(-inf, a]``, transferUQ's ``"right"``) or
``"lower"`` (a lower bound: ``[a, inf)``, transferUQ's ``"left"``); the package's names are accepted.
``coverage`` is the package's *nominal* coverage c: a two-sided interval uses τ = (1 + c)/2, a
one-sided one τ = c. ``correction=True`` inflates c by (n + 1)/(n − r) first so that Proposition 1
guarantees c. Every function also accepts ``tau=`` to give the quantile level directly.

Where the package or the paper is wrong, the default is the correct method and an
argument reproduces the package:

* U-statistic order: ``order=None`` uses k = r + 1 (Lemma Q.1); ``order="transferUQ"`` uses k = r.
* Everywhere dominance: ``mode="exact"`` (default) scans every j; ``mode="paper"`` adds the
  invalid pruning j ≥ τN of Appendix R.3 (reproduces Table 2); ``mode="transferUQ"`` reproduces the
  package (pruning, ``>=`` for m(j), LP constraint Ψ₂ᵀv ≥ τ in count units, violation iff LP ≤ τ).
* Worst-case dominance: ``mode="exact"`` checks every Γ in [1, Gamma] through the exact Γ
  breakpoints of ē_τ(Γ); ``mode="transferUQ"`` checks Γ = Gamma only, at the package's index
  J − 1 with a strict ``<``.

All hot loops run in the Rust core (``rust/transfer/``) on a table sorted once
and cached on the :class:`ErrorTable`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import _core
from .._validation import (
    align_by_label,
    as_float_array,
    check_allocation,
    check_choice,
    check_flag,
    check_gamma,
    check_int,
    check_n_jobs,
    check_probability,
    check_real,
)
from ..exceptions import CoverageWarning, InvalidArgumentError, LLMSurrogateWarning, ShapeError
from ._results import EverywhereDominance, ForecastIntervals, WorstCaseCurve, _step
from ._table import ErrorTable, PooledErrors, _pooled

__all__ = [
    "forecast_interval", "weighted_forecast_interval", "forecast_intervals", "ForecastIntervals",
    "worst_case_interval", "worst_case_curve", "worst_case_tau_curve", "WorstCaseCurve",
    "check_worstcase_dominance", "critical_gamma", "check_everywhere_dominance",
    "everywhere_dominance", "EverywhereDominance", "everywhere_dominance_box", "qte_interval", "ete_interval", "ustat_tail_bound",
    "coverage_bound", "coverage_upper_bound", "tau_for_coverage", "weighted_coverage_diagnostic",
    "robust_level", "lp2_simplex", "plot_quantile_ci", "clear_rank_cache",
]

_SIDES = {"two": "two", "upper": "upper", "lower": "lower", "right": "upper", "left": "lower"}
DEFAULT_TAULIST = np.round(np.arange(0.5, 1.0 + 1e-9, 0.01), 10)
DEFAULT_BETAS = np.round(np.arange(0.2, 0.8 + 1e-9, 0.01), 10)


# ---- plumbing -------------------------------------------------------------------------------------

def _table(err: Any, arg: str = "err", pooled: bool = False, r: Any = None) -> ErrorTable:
    """``err`` as an :class:`ErrorTable`; with ``pooled=True`` read as transferUQ does (two-column
    form, ordered training tuples, missing cells: a :class:`PooledErrors`), with a warning when
    cells are missing."""
    if not pooled:
        return ErrorTable.coerce(err, arg=arg)
    t = _pooled(err, arg=arg, r=r)
    if isinstance(t, PooledErrors) and not t.complete:
        if t.missing:
            what = f"{t.missing} of its {t.N + t.missing} errors are missing (NA)"
        elif t.expected is not None:
            what = f"it has {t.N} errors where {t.n} domains with r = {t.r} need {t.expected}"
        else:
            what = "its test domains have different numbers of errors"
        warnings.warn(f"argument `{arg}`: {what}; as transferUQ does, the result uses the errors given, but "
                      "Proposition 1's guarantee needs one error per (training set, test domain)",
                      LLMSurrogateWarning, stacklevel=3)
    return t


def _sorted_values(t: Any) -> np.ndarray:
    """The pooled errors in ascending order (also for tables with missing cells)."""
    if isinstance(t, PooledErrors) and not t.balanced:
        return np.sort(t.values)
    return _core_table(t).sorted_values()


def _core_table(t: ErrorTable, negate: bool = False):
    """The Rust-side sorted table, built once per ErrorTable (and once for the negated errors)."""
    key = "_llms_core_neg" if negate else "_llms_core"
    core = t.__dict__.get(key)
    if core is None:
        if isinstance(t, PooledErrors) and not t.balanced:
            raise InvalidArgumentError(
                "this computation needs the same number of errors for every test domain (weights, worst cases and "
                "dominance are per test domain); the table has missing cells: fill them or drop their domains")
        vals = -t.values if negate else t.values
        core = _core.TransferTable(np.ascontiguousarray(vals, dtype=np.float64),
                                   np.ascontiguousarray(t.test, dtype=np.int64), t.n)
        object.__setattr__(t, key, core)
    return core


def _side(side: Any) -> str:
    if isinstance(side, (list, tuple)) and side:  # R's c("two", "left", "right") default
        side = side[0]
    return _SIDES[check_choice(side, "side", list(_SIDES))]


def _tau(coverage: Any, side: str, tau: Any, *, n: int | None = None, r: int | None = None,
         correction: bool = False) -> float:
    """τ from the package's coverage (or τ given directly), validated."""
    if tau is not None:
        if coverage is not None:
            raise InvalidArgumentError("pass either `coverage` or `tau`, not both")
        t = check_probability(tau, "tau", low=0.0, high=1.0, high_open=False)
        if side == "two" and t <= 0.5:
            raise InvalidArgumentError(
                f"argument `tau`: a two-sided interval needs tau in (0.5, 1]; got {t} (at tau <= 0.5 the interval "
                "[e_(N+1-k), e_(k)] is inverted and Proposition 1 guarantees nothing)")
        return t
    if coverage is None:
        raise InvalidArgumentError("argument `coverage` is required (a number in (0, 1)), or pass `tau`")
    c = check_probability(coverage, "coverage", low=0.0, high=1.0, high_open=False)
    if correction:
        c_adj = c * (n + 1) / (n - r)
        if c_adj > 1:
            warnings.warn(
                f"coverage {c} cannot be guaranteed with n = {n} domains and r = {r}: the best possible guarantee "
                f"is (n - r)/(n + 1) = {(n - r) / (n + 1):.4f}, reached by the [min, max] interval returned",
                LLMSurrogateWarning, stacklevel=3)
        c = min(c_adj, 1.0)
    return (1 + c) / 2 if side == "two" else c


def _clip_side(lo: float, hi: float, side: str) -> tuple[float, float]:
    if side == "upper":
        return (-math.inf, float(hi))
    if side == "lower":
        return (float(lo), math.inf)
    return (float(lo), float(hi))


def _n_r(n: Any, r: Any) -> tuple[int, int]:
    """Numbers of domains n and training domains r, with n > r >= 1."""
    n, r = check_int(n, "n", minimum=2), check_int(r, "r", minimum=1)
    if n <= r:
        raise InvalidArgumentError(f"arguments `n` and `r`: need n > r (more domains than training domains); "
                                   f"got n = {n}, r = {r}")
    return n, r


def _check_weights(w: np.ndarray, n: int | None = None) -> np.ndarray:
    """Likelihood ratios: finite, >= 0, not all zero (and ``n`` of them when given)."""
    if n is not None and w.size != n:
        raise ShapeError(f"argument `weights` needs one likelihood ratio per domain ({n}); got {w.size}")
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise InvalidArgumentError(f"argument `weights` must be finite; got {w[bad[0]]} at position {bad[0]}")
    bad = np.flatnonzero(w < 0)
    if bad.size:
        raise InvalidArgumentError(f"argument `weights` must be >= 0 (likelihood ratios); got {w[bad[0]]} at "
                                   f"position {bad[0]}")
    if not np.any(w > 0):
        raise InvalidArgumentError("argument `weights`: all weights are zero; at least one must be positive")
    return w


def _check_r(t: ErrorTable, r: Any) -> None:
    if t.r is None:
        raise InvalidArgumentError("argument `r` is missing: a two-column (test, error) table does not give the number "
                                   "of training domains; pass `r`")
    if r is not None and check_int(r, "r", minimum=1) != t.r:
        raise InvalidArgumentError(f"argument `r` ({r}) does not match the table's {t.r} training domains per error")


# ---- coverage helpers (Proposition 1, Claim 1, Corollary 1, Theorem 1, Theorem R.1) -------------------

def coverage_bound(n: int, r: int, tau: float, side: str = "two", Gamma: float = 1.0) -> float:  # noqa: N803
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
    g = check_gamma(Gamma)
    lead = (2 * tau - 1) if side == "two" else tau
    return max(lead, 0.0) * (n - r) / (n + g * g)


def coverage_upper_bound(n: int, r: int, tau: float, side: str = "two", conservative: bool = False) -> float:
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


def tau_for_coverage(n: int, r: int, coverage: float, side: str = "two") -> float:
    """The level τ whose Proposition 1 guarantee is ``coverage`` (the package's correction).

    Raises if the coverage exceeds the best possible guarantee (n−r)/(n+1).

    Examples
    --------
    >>> tau = tau_for_coverage(44, 1, 0.8)
    >>> round(tau, 4), round(coverage_bound(44, 1, tau), 4)
    (0.9186, 0.8)
    """
    (n, r), side = _n_r(n, r), _side(side)
    c = check_probability(coverage, "coverage")
    adj = c * (n + 1) / (n - r)
    if adj > 1 + 1e-12:
        raise InvalidArgumentError(f"argument `coverage`: {c} cannot be guaranteed with n = {n}, r = {r}; the maximum is "
                                   f"(n - r)/(n + 1) = {(n - r) / (n + 1):.4f}")
    adj = min(adj, 1.0)
    return (1 + adj) / 2 if side == "two" else adj


def weighted_coverage_diagnostic(n: int, r: int, tau: float, weights: Any, w_target: float,
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


def robust_level(tau: float, Gamma: float, n: int, r: int, side: str = "two", mode: str = "safe"):  # noqa: N803
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


def _guaranteed(t: Any, level: float, side: str, nominal: float, warn: bool = True) -> float:
    """Proposition 1's coverage at ``level`` (NaN without r), with a :class:`CoverageWarning` when it
    falls more than :data:`COVERAGE_SHORTFALL` below ``nominal``."""
    if t.r is None or t.n <= t.r:
        return math.nan
    guaranteed = coverage_bound(t.n, t.r, min(level, 1.0), side)
    if warn and guaranteed < nominal - COVERAGE_SHORTFALL:
        best = (t.n - t.r) / (t.n + 1)
        fix = ("correction=True raises the level so that it is guaranteed" if nominal <= best else
               f"no level guarantees more than (n - r)/(n + 1) = {best:.4g} here; more domains raise it")
        warnings.warn(f"the interval's guaranteed coverage is {guaranteed:.4g}, well below the nominal {nominal:.4g} "
                      f"(Proposition 1 with n = {t.n} domains, r = {t.r}); {fix}", CoverageWarning, stacklevel=3)
    return guaranteed

def forecast_interval(err: Any, coverage: float | None = None, side: str = "two", correction: bool = False, *,
                      tau: float | None = None, mode: str = "exact", pooled: bool = False) -> tuple[float, float]:
    """Forecast interval for the transfer error to a new domain (Section 3, Proposition 1).

    Pools the N errors and returns ``(lower, upper)`` = [e̲_τ, ē_τ] = [f_(N+1−k), f_(k)], k = ⌈τN⌉,
    with τ = (1 + coverage)/2 two-sided and τ = coverage one-sided (``side="upper"`` gives
    ``(-inf, ē_τ]``, ``side="lower"`` gives ``[e̲_τ, inf)``). Under exchangeable domains the interval
    covers the realised error with probability at least (2τ−1)(n−r)/(n+1) (τ(n−r)/(n+1)
    one-sided); ``correction=True`` raises τ so that this guarantee equals ``coverage``.

    ``mode="exact"`` (default) takes the Definition-2 rank k = ⌈τN⌉ with levels compared to 1e-12;
    ``mode="transferUQ"`` computes τ and the rank as transferUQ 0.1.0 does (``quantile(type = 1)``,
    whose fuzz of 4 machine epsilons picks the next order statistic when τN lands a rounding error
    above an integer, as in corrected intervals: docs/methods/transfer.md, departure 18).
    ``pooled=True`` reads ``err`` as transferUQ does (see :class:`PooledErrors`).

    The pair returned has an attribute ``guaranteed``, the coverage Proposition 1 guarantees
    (:func:`coverage_bound` at the level used; NaN when the table does not give r). When it is more
    than :data:`COVERAGE_SHORTFALL` (0.05) below the nominal coverage (``coverage``, or 2τ−1
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
    ...     interval = forecast_interval(E, coverage=0.9)
    >>> interval, round(interval.guaranteed, 2)
    ((1.0, 6.0), 0.45)
    >>> print(caught[0].message)
    the interval's guaranteed coverage is 0.45, well below the nominal 0.9 (Proposition 1 with n = 3 domains, r = 1);
    no level guarantees more than (n - r)/(n + 1) = 0.5 here; more domains raise it
    """
    t = _table(err, pooled=pooled)
    side = _side(side)
    mode = check_choice(mode, "mode", ["exact", "transferUQ"])
    correction = check_flag(correction, "correction")
    if correction and t.r is None:
        raise InvalidArgumentError("argument `correction`: the finite-sample correction needs r, the number of "
                                   "training domains, which a two-column (test, error) table does not give")
    if mode == "transferUQ":
        lo, hi, level = _transferuq_interval(t, coverage, side, bool(correction), tau)
    else:
        level = _tau(coverage, side, tau, n=t.n, r=t.r, correction=bool(correction))
        if isinstance(t, PooledErrors) and not t.balanced:
            f = np.sort(t.values)
            k = min(max(math.ceil(f.size * (level - 1e-12)), 1), f.size)  # rust/common/quantiles.rs upper_rank
            lo, hi = f[f.size - k], f[k - 1]
        else:
            lo, hi = (v[0] for v in _core_table(t).intervals(np.array([level])))
    if coverage is not None:
        nominal = float(coverage)
    else:
        nominal = 2 * level - 1 if side == "two" else level
    # an exact corrected level guarantees the coverage, or _tau has warned that it cannot
    warn = not (correction and mode == "exact")
    return ForecastInterval(*_clip_side(lo, hi, side), _guaranteed(t, level, side, nominal, warn))


def _r_type1(f: np.ndarray, p: float) -> float:
    """R's ``quantile(x, p, type = 1)`` of the sorted ``f``, fuzz included (R 4.x quantile.default)."""
    n = f.size
    nppm = n * p
    j = math.floor(nppm + 4 * np.finfo(float).eps)
    return float(f[min(j, n - 1)] if nppm > j else f[max(j - 1, 0)])


def _transferuq_interval(t: Any, coverage: Any, side: str, correction: bool, tau: Any) -> tuple[float, float, float]:
    """transferUQ 0.1.0's forecast_interval, floating point included; and the level used."""
    if tau is not None:
        level = _tau(coverage, side, tau)
    else:
        c = check_probability(coverage, "coverage", low=0.0, high=1.0, high_open=False)
        if correction:
            c = min((t.n + 1) / (t.n - t.r) * c, 1.0)
        level = (1 + c) / 2 if side == "two" else c
    f = _sorted_values(t)
    return -_r_type1(-f[::-1], level), _r_type1(f, level), level


def _weights(t: ErrorTable, weights: Any) -> np.ndarray:
    import pandas as pd

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


def weighted_forecast_interval(err: Any, weights: Any, coverage: float | None = None, side: str = "two", *,
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
    level = _tau(coverage, side, tau)
    lo, hi = _core_table(t).weighted(_weights(t, weights), np.array([level]))
    return _clip_side(lo[0], hi[0], side)


def forecast_intervals(tables: Mapping[str, Any], coverage: Sequence[float] | float = (0.8, 0.9, 0.95),
                       sides: Sequence[str] | str = ("two",), correction: bool = False) -> ForecastIntervals:
    """:func:`forecast_interval` for several models, levels and sides, as a tidy result that plots.

    Examples
    --------
    >>> import numpy as np
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
    >>> res = forecast_intervals({"A": E, "B": 2 * E}, coverage=0.6)
    >>> res.table[["model", "tau", "lower", "upper", "guaranteed"]].round(3).values.tolist()
    [['A', 0.8, 2.0, 5.0, 0.3], ['B', 0.8, 4.0, 10.0, 0.3]]
    """
    import pandas as pd

    if not isinstance(tables, Mapping) or not tables:
        raise InvalidArgumentError("argument `tables` must be a non-empty mapping model name -> error table")
    covs = [coverage] if np.isscalar(coverage) else list(as_float_array(coverage, "coverage"))
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
                level = _tau(c, s, None, n=t.n, r=t.r, correction=correction)
                lo, hi = forecast_interval(t, c, s, correction)
                rows.append({"model": str(name), "coverage": float(c), "side": s, "tau": level, "lower": lo,
                             "upper": hi, "guaranteed": coverage_bound(t.n, t.r, level, s)})
    return ForecastIntervals(table=pd.DataFrame(rows), n=first.n, r=first.r)


# ---- worst case over bounded likelihood ratios (Corollary 1, Theorem R.2) ------------------------------

def worst_case_interval(err: Any, coverage: float | None = None, Gamma: float = math.inf, side: str = "two", *,  # noqa: N803
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
    level = _tau(coverage, side, tau)
    hi = _core_table(t).gamma_steps(level, g)
    lo = _core_table(t, negate=True).gamma_steps(level, g)
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
    import pandas as pd

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
    import pandas as pd

    t = _table(err)
    core = _core_table(t)
    prob, val = core.worst_case_p(check_gamma(Gamma)), core.sorted_values()
    last_of_tie = np.r_[val[1:] != val[:-1], True] if val.size else np.zeros(0, dtype=bool)
    return pd.DataFrame({"prob": prob[last_of_tie], "val": val[last_of_tie]})


def _same(err1: Any, err2: Any, pooled: bool = False) -> tuple[ErrorTable, ErrorTable]:
    t1, t2 = _table(err1, "err1", pooled), _table(err2, "err2", pooled)
    if type(t1) is not type(t2):  # one complete ErrorTable, one pooled: compare as pooled
        t1, t2 = (x if isinstance(x, PooledErrors) else PooledErrors(x.values, x.test, x.domains, x.r, name=x.name)
                  for x in (t1, t2))
    t2 = _in_domain_order(t2, t1)
    t1.same_design(t2, arg="err2")
    return t1, t2


def _in_domain_order(t2: ErrorTable, t1: ErrorTable) -> ErrorTable:
    """``t2`` with its domains in ``t1``'s order when both hold the same domain labels in another order
    (two matrices whose rows are permuted differently): tables are paired by domain label, never by
    position (the rule of ``_validation``)."""
    if type(t1) is not ErrorTable or type(t2) is not ErrorTable or len(t1.domains) != len(t2.domains):
        return t2
    d1, d2 = [str(d) for d in t1.domains], [str(d) for d in t2.domains]
    if d1 == d2 or set(d1) != set(d2) or len(set(d1)) != len(d1):
        return t2
    pos = {d: i for i, d in enumerate(d1)}
    to1 = np.array([pos[d] for d in d2], dtype=np.int64)
    return ErrorTable._from_arrays(t2.values.copy(), to1[t2.test], to1[t2.train], list(t1.domains), name=t2.name,
                                   metric=t2.metric, arg="err2")


def _taulist(taulist: Any) -> np.ndarray:
    taus = as_float_array(taulist, "taulist", allow_empty=True)
    if taus.size == 0:
        raise InvalidArgumentError("argument `taulist` is empty")
    bad = ~((taus > 0) & (taus <= 1))
    if bad.any():
        raise InvalidArgumentError(f"argument `taulist` must lie in (0, 1]; got {taus[bad][0]}")
    return np.ascontiguousarray(taus)


def _worstcase_exact(t1: ErrorTable, t2: ErrorTable, taus: np.ndarray, g: float):
    """Per τ: (dominates on all of [1, g], largest Γ* up to which it dominates; NaN: fails at Γ = 1)."""
    return _core.worst_case_dominance(_core_table(t1), _core_table(t2), taus, g)


def check_worstcase_dominance(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, Gamma: float = math.inf,  # noqa: N803
                              mode: str = "exact", pooled: bool = False):
    """Does method 1 worst-case-upper-dominate method 2 (Definition 7)? Frame ``tau, res``.

    ``mode="exact"`` (default): ē_{1,τ}(Γ) ≤ ē_{2,τ}(Γ) for **every** Γ in [1, Gamma], checked exactly
    on the union of both step functions' breakpoints (Gamma = Inf: all Γ ≥ 1, the definition).
    ``mode="transferUQ"``: the package's check at the single Γ = Gamma, at index max{j : p_j < τ}
    (= J − 1, off by one against Corollary R.1) and strict ``<``; hard-coded there to r = 1.

    Examples
    --------
    >>> import numpy as np
    >>> E1 = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> E2 = np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]])
    >>> check_worstcase_dominance(E1, E2, taulist=[0.7, 0.9])["res"].tolist()
    [True, True]
    """
    import pandas as pd

    t1, t2 = _same(err1, err2, pooled)
    taus = _taulist(taulist)
    g = check_gamma(Gamma)
    mode = check_choice(mode, "mode", ["exact", "transferUQ"])
    if mode == "exact":
        res = [ok for ok, _ in _worstcase_exact(t1, t2, taus, g)]
    else:
        res = []
        c1, c2 = _core_table(t1), _core_table(t2)
        p1, p2 = c1.worst_case_p(g), c2.worst_case_p(g)
        f1, f2 = c1.sorted_values(), c2.sorted_values()
        for x in taus:
            i1, i2 = np.flatnonzero(p1 < x), np.flatnonzero(p2 < x)
            res.append(bool(f1[i1[-1]] < f2[i2[-1]]) if i1.size and i2.size else False)
    return pd.DataFrame({"tau": taus, "res": np.array(res, dtype=bool)})


def critical_gamma(err1: Any, err2: Any, tau: Any, kind: str = "everywhere", Gamma_max: float = 1e6,  # noqa: N803
                   pooled: bool = False) -> Any:
    """Largest Γ* up to which method 1 dominates method 2 at τ.

    ``kind="everywhere"`` (default; docs/methods/transfer.md §4.3): Γ-bounded everywhere dominance, ē₁^w ≤ ē₂^w for every
    likelihood-ratio vector w ∈ [1/Γ, Γ]^n; exact LP check per Γ (closed-form dual of the box LP)
    and bisection on log Γ (dominance is monotone in Γ). ``inf`` when it holds at ``Gamma_max``.
    ``kind="worstcase"``: worst-case dominance (Definition 7) on [1, Γ*], exact from the Γ breakpoints
    (``inf``: for all Γ). ``nan``: no dominance even at Γ = 1. A float for scalar τ, else an array.

    Examples
    --------
    >>> import numpy as np
    >>> E1 = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> E2 = np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]])
    >>> np.round(critical_gamma(E1, E2, [0.7, 0.9]), 4).tolist()
    [1.1547, 1.4142]
    >>> critical_gamma(E1, E2, 0.9, kind="worstcase")
    inf
    """
    t1, t2 = _same(err1, err2, pooled)
    kind = check_choice(kind, "kind", ["everywhere", "worstcase"])
    scalar = np.isscalar(tau)
    taus = _taulist(tau)
    if kind == "everywhere":
        out = np.asarray(_core.critical_gamma_box(_core_table(t1), _core_table(t2), taus, check_gamma(Gamma_max, "Gamma_max")))
    else:
        out = np.array([c if not ok else math.inf for ok, c in _worstcase_exact(t1, t2, taus, math.inf)])
    return float(out[0]) if scalar else out


def everywhere_dominance_box(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, Gamma: float = 2.0,  # noqa: N803
                             pooled: bool = False):
    """Γ-bounded everywhere dominance (docs/methods/transfer.md §4.3, an extension of Definition 8): does ē₁^w ≤ ē₂^w hold
    for every likelihood-ratio vector w ∈ [1/Γ, Γ]^n? Frame ``tau, res``. Γ = 1 is the plain
    comparison of :func:`forecast_interval` upper ends; Γ → ∞ approaches everywhere dominance.

    Examples
    --------
    >>> import numpy as np
    >>> E1 = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> E2 = np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]])
    >>> everywhere_dominance_box(E1, E2, taulist=[0.9], Gamma=1.2)["res"].tolist()
    [True]
    >>> everywhere_dominance_box(E1, E2, taulist=[0.9], Gamma=2.0)["res"].tolist()
    [False]
    """
    import pandas as pd

    t1, t2 = _same(err1, err2, pooled)
    taus = _taulist(taulist)
    res = _core.box_dominance(_core_table(t1), _core_table(t2), taus, check_gamma(Gamma))
    return pd.DataFrame({"tau": taus, "res": np.array(res, dtype=bool)})


# ---- everywhere dominance (Definition 8, Appendix R.3) ----------------------------------------------


def _verify_witness(t1: ErrorTable, t2: ErrorTable, j: int, support, tau: float):
    """ē₁^w and ē₂^w at w = v nudged toward the largest-Ψ₂ domain (so that bᵀw > τ strictly,
    docs/methods/transfer.md §8.1 T6(c)) plus 1e-12 on every domain; the first nudge δ ∈ {0, 1e-9, 1e-6, 1e-3} that verifies."""
    test2 = _core_table(t2).sorted_test()
    psi2 = np.bincount(test2[:j], minlength=t2.n)
    v = np.zeros(t2.n)
    for d, x in support:
        v[d] += x
    top = np.zeros(t2.n)
    top[int(np.argmax(psi2))] = 1.0
    u1 = u2 = math.nan
    for delta in (0.0, 1e-9, 1e-6, 1e-3):
        w = (1 - delta) * v + delta * top + 1e-12
        u1 = float(_core_table(t1).weighted(w, np.array([tau]))[1][0])
        u2 = float(_core_table(t2).weighted(w, np.array([tau]))[1][0])
        if u1 > u2:
            break
    return u1, u2


def everywhere_dominance(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, mode: str = "exact",
                         verify: bool = True) -> EverywhereDominance:
    """Everywhere dominance (Definition 8) per τ, with a verified witness for each violation.

    For each violation the two-point LP solution v, nudged toward the domain with the largest Ψ₂ and
    plus 1e-12 on every domain, gives weights w; ``upper1``
    and ``upper2`` are the weighted upper quantiles ē^w of the two methods at w, computed directly
    (Theorem 1 weighting); ``verified`` says whether upper1 > upper2 (closed-simplex cases at the
    boundary can need ε → 0 and show ``False``).

    Examples
    --------
    >>> import numpy as np
    >>> E1 = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> E2 = np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]])
    >>> res = everywhere_dominance(E1, E2, taulist=[0.7, 0.9])
    >>> res.table[["tau", "dominates", "upper1", "upper2", "verified"]].values.tolist()
    [[0.7, False, 5.0, 4.0, True], [0.9, False, 5.0, 4.0, True]]
    """
    import pandas as pd

    t1, t2 = _same(err1, err2)
    taus = _taulist(taulist)
    mode = check_choice(mode, "mode", ["exact", "paper", "transferUQ"])
    verify = check_flag(verify, "verify")
    wit = _core.everywhere_dominance(_core_table(t1), _core_table(t2), taus, mode)
    rows = []
    for x, w in zip(taus, wit):
        row = {"tau": float(x), "dominates": w is None, "j": None, "m": None, "witness": None,
               "upper1": math.nan, "upper2": math.nan, "verified": None}
        if w is not None:
            j, m, support = w
            row.update(j=j, m=m, witness={str(t1.domains[d]): float(v) for d, v in support})
            if verify and support:
                row["upper1"], row["upper2"] = _verify_witness(t1, t2, j, support, float(x))
                row["verified"] = bool(row["upper1"] > row["upper2"])
        rows.append(row)
    return EverywhereDominance(table=pd.DataFrame(rows), mode=mode)


def check_everywhere_dominance(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, mode: str = "exact",
                               pooled: bool = False):
    """Does method 1 everywhere-upper-dominate method 2 (Definition 8)? Frame ``tau, res``.

    ``mode="exact"`` (default; correct): all j scanned. ``mode="paper"``: the paper's pruning j ≥ τN,
    which docs/methods/transfer.md §4.4 shows is invalid (it reproduces Table 2). ``mode="transferUQ"``: the package
    0.1.0's behaviour. See :func:`everywhere_dominance` for witnesses.

    Examples
    --------
    >>> import numpy as np
    >>> E1 = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
    >>> E2 = np.array([[np.nan, 2, 7], [1, np.nan, 3], [4, 5, np.nan]])
    >>> check_everywhere_dominance(E1, E2, taulist=[0.7, 0.9])["res"].tolist()
    [False, False]
    >>> check_everywhere_dominance(E1, E1 + 1, taulist=[0.7, 0.9])["res"].tolist()
    [True, True]
    """
    import pandas as pd

    t1, t2 = _same(err1, err2, pooled)
    taus = _taulist(taulist)
    mode = check_choice(mode, "mode", ["exact", "paper", "transferUQ"])
    wit = _core.everywhere_dominance(_core_table(t1), _core_table(t2), taus, mode)
    return pd.DataFrame({"tau": taus, "res": np.array([w is None for w in wit], dtype=bool)})


def lp2_simplex(a: Any, b: Any, tau: float) -> tuple[float, dict[int, float]]:
    """min aᵀv s.t. bᵀv ≥ τ, Σv = 1, v ≥ 0 in closed form (two-point support; +inf if infeasible).

    Examples
    --------
    >>> obj, v = lp2_simplex([1.0, 3.0], [0.0, 1.0], 0.5)
    >>> obj, sorted(v.items())
    (2.0, [(0, 0.5), (1, 0.5)])
    """
    a, b = align_by_label(("a", a), ("b", b))
    av = as_float_array(a, "a", allow_nan=False)
    bv = as_float_array(b, "b", allow_nan=False)
    if av.shape != bv.shape:
        raise ShapeError(f"arguments `a` (length {av.size}) and `b` (length {bv.size}) must have the same length")
    obj, sup = _core.lp2_simplex(av, bv, check_real(tau, "tau", low=0.0, high=1.0))
    return obj, dict(sup)


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
    b, b1, b2, b3 = _core.ustat_tail_bound(x, y, n, k)
    return {"B": b, "hoeffding": b1, "bentkus": b2, "maurer": b3}


def _order(t: ErrorTable, order: Any) -> int:
    if order is None:
        return t.r + 1
    if isinstance(order, str):
        check_choice(order, "order", ["transferUQ"])
        return t.r
    return check_int(order, "order", minimum=1)


def _alpha(coverage: Any, side: str) -> float:
    c = check_probability(coverage, "coverage")
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
        hit = tuple(np.asarray(x) for x in _core.quantile_ci_ranks(N, n, k, betas, alpha))
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


def qte_interval(err: Any, coverage: float, side: str = "two", betas: Any = DEFAULT_BETAS, r: Any = None,
                 order: Any = None, pooled: bool = False):
    """Confidence intervals for quantiles q_β of the transfer-error distribution (Prop. Q.1).

    Frame ``beta, lb, ub``. Uses the U-statistic bound of order k = r + 1 (``order="transferUQ"``
    gives the package's k = r, anti-conservative) and the exact discrete rank rules of docs/methods/transfer.md §5.3:
    lb = f_(j_L), j_L = max{j : B((j−1)/N; β) ≤ α}; ub = f_(j_U), j_U = min{j : B(1−j/N; 1−β) ≤ α}
    (±inf when no rank qualifies). Two-sided intervals use α = (1 − coverage)/2 per side.

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> E = datasets.load_transfer_errors("abdg")  # CPT's published 44 x 44 matrix
    >>> ci = qte_interval(E, 0.9, betas=[0.25, 0.5, 0.75])
    >>> ci.round(3).values.tolist()
    [[0.25, 2.484, 3.888], [0.5, 3.157, 5.594], [0.75, 3.953, 14.76]]
    """
    import pandas as pd

    t = _table(err, pooled=pooled, r=r)
    _check_r(t, r)
    side = _side(side)
    k = _order(t, order)
    alpha = _alpha(coverage, side)
    b = as_float_array(betas, "betas", allow_empty=True)
    if b.size == 0 or np.any(~((b > 0) & (b < 1))):
        raise InvalidArgumentError("argument `betas` must be quantile levels in (0, 1)")
    jl, ju = _ci_ranks(t.N, t.n, k, np.ascontiguousarray(b), alpha)
    f = _sorted_values(t)
    ext = np.concatenate([[-np.inf], f, [np.inf]])
    lb, ub = ext[jl], ext[ju]
    if side == "upper":
        lb = np.full_like(lb, -np.inf)
    elif side == "lower":
        ub = np.full_like(ub, np.inf)
    return pd.DataFrame({"beta": b, "lb": lb, "ub": ub})


def ete_interval(err: Any, coverage: float, side: str = "two", bd: float = 1.0, r: Any = None, order: Any = None,
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
    alpha = _alpha(coverage, side)
    u = float(np.mean(t.values / bd))
    u = min(max(u, 0.0), 1.0)
    hi = _core.ustat_mean_upper(u, t.n, k, alpha) if side in ("two", "upper") else math.inf
    lo = 1 - _core.ustat_mean_upper(1 - u, t.n, k, alpha) if side in ("two", "lower") else -math.inf
    return (lo * bd if np.isfinite(lo) else lo, hi * bd if np.isfinite(hi) else hi)


def plot_quantile_ci(curves: Mapping[str, Any], ax=None, log: bool = False):
    """Plot :func:`qte_interval` frames (beta, lb, ub) of several models as bands over β.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from llmsurrogate import datasets
    >>> ci = {m: qte_interval(datasets.load_transfer_errors(m), 0.9, betas=[0.25, 0.5, 0.75]) for m in ("abdg", "RF")}
    >>> ax = plot_quantile_ci(ci, log=True)
    >>> [t.get_text() for t in ax.get_legend().get_texts()], ax.get_yscale()
    (['abdg', 'RF'], 'log')
    >>> plt.close(ax.figure)
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name, df in curves.items():
        line = ax.plot(df["beta"], (df["lb"] + df["ub"]) / 2, alpha=0)[0]
        ax.fill_between(df["beta"], df["lb"], df["ub"], alpha=0.3, label=str(name), color=line.get_color())
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("beta (quantile of the transfer-error distribution)")
    ax.set_ylabel("confidence interval")
    ax.legend(fontsize="small")
    return ax
