"""Dominance between two methods' transfer errors: worst-case (Definition 7), everywhere
(Definition 8, Appendix R.3), Γ-bounded everywhere dominance and the critical Γ, and the two-point
LP behind the everywhere check (the Python side of ``rust/transfer/dominance.rs``).

``docs/methods/transfer.md`` §4. transferUQ's names and signatures:

========================================================  ======================================
``check_worstcase_dominance(err1, err2, taulist, Gamma)`` frame ``tau, res`` (Def. 7)
``check_everywhere_dominance(err1, err2, taulist)``       frame ``tau, res`` (Def. 8)
========================================================  ======================================

Where the package or the paper is wrong, the default is the correct method and an argument
reproduces the package:

* Everywhere dominance: ``mode="exact"`` (default) scans every j; ``mode="paper"`` adds the
  invalid pruning j ≥ τN of Appendix R.3 (reproduces Table 2); ``mode="transferUQ"`` reproduces the
  package (pruning, ``>=`` for m(j), LP constraint Ψ₂ᵀv ≥ τ in count units, violation iff LP ≤ τ).
* Worst-case dominance: ``mode="exact"`` checks every Γ in [1, Gamma] through the exact Γ
  breakpoints of ē_τ(Γ); ``mode="transferUQ"`` checks Γ = Gamma only, at the package's index
  J − 1 with a strict ``<``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .. import _core
from .._deprecation import deprecated_arguments
from .._validation import (
    align_by_label,
    as_float_array,
    check_choice,
    check_flag,
    check_gamma,
    check_real,
)
from ..exceptions import ShapeError
from ._common import DEFAULT_TAULIST, SquareMatrix, _core_table, _same, _taulist
from ._results import EverywhereDominance
from ._table import ErrorTable

__all__ = [
    "check_worstcase_dominance", "critical_gamma", "check_everywhere_dominance", "everywhere_dominance",
    "EverywhereDominance", "everywhere_dominance_box", "lp2_simplex",
]


def _worstcase_exact(t1: ErrorTable, t2: ErrorTable, taus: np.ndarray, g: float):
    """Per τ: (dominates on all of [1, g], largest Γ* up to which it dominates; NaN: fails at Γ = 1).
    Two plain matrices: each table held only from the lowest rank a τ's sweep reads (half of it
    over the default τ ≥ 0.5; docs/methods/transfer.md A5), the same answers."""
    if isinstance(t1, SquareMatrix) and isinstance(t2, SquareMatrix):
        res, bad = _core.transfer_worst_case_dominance_matrices(np.ascontiguousarray(t1.matrix),
                                                                np.ascontiguousarray(t2.matrix), taus, g)
        if bad:
            (t1, t2)[bad - 1].raise_missing_cell()
        return res
    return _core.transfer_worst_case_dominance(_core_table(t1), _core_table(t2), taus, g)


@deprecated_arguments(positional=3)
def check_worstcase_dominance(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, *, Gamma: float = math.inf,  # noqa: N803
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
    t1, t2 = _same(err1, err2, pooled, square=True)   # (read only through their core tables)
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


@deprecated_arguments(positional=3)
def critical_gamma(err1: Any, err2: Any, tau: Any, *, kind: str = "everywhere", Gamma_max: float = 1e6,  # noqa: N803
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
    t1, t2 = _same(err1, err2, pooled, square=True)   # (read only through their core tables)
    kind = check_choice(kind, "kind", ["everywhere", "worstcase"])
    scalar = np.isscalar(tau)
    taus = _taulist(tau)
    if kind == "everywhere":
        out = np.asarray(_core.transfer_critical_gamma_box(_core_table(t1), _core_table(t2), taus, check_gamma(Gamma_max, "Gamma_max")))
    else:
        out = np.array([c if not ok else math.inf for ok, c in _worstcase_exact(t1, t2, taus, math.inf)])
    return float(out[0]) if scalar else out


@deprecated_arguments(positional=3)
def everywhere_dominance_box(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, *, Gamma: float = 2.0,  # noqa: N803
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
    t1, t2 = _same(err1, err2, pooled, square=True)   # (read only through their core tables)
    taus = _taulist(taulist)
    res = _core.transfer_box_dominance(_core_table(t1), _core_table(t2), taus, check_gamma(Gamma))
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


@deprecated_arguments(positional=3)
def everywhere_dominance(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, *, mode: str = "exact",
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
    t1, t2 = _same(err1, err2)
    taus = _taulist(taulist)
    mode = check_choice(mode, "mode", ["exact", "paper", "transferUQ"])
    verify = check_flag(verify, "verify")
    wit = _core.transfer_everywhere_dominance(_core_table(t1), _core_table(t2), taus, mode)
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


@deprecated_arguments(positional=3)
def check_everywhere_dominance(err1: Any, err2: Any, taulist: Any = DEFAULT_TAULIST, *, mode: str = "exact",
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
    t1, t2 = _same(err1, err2, pooled, square=True)   # (read only through their core tables)
    taus = _taulist(taulist)
    mode = check_choice(mode, "mode", ["exact", "paper", "transferUQ"])
    wit = _core.transfer_everywhere_dominance(_core_table(t1), _core_table(t2), taus, mode)
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
    obj, sup = _core.transfer_lp2_simplex(av, bv, check_real(tau, "tau", low=0.0, high=1.0))
    return obj, dict(sup)
