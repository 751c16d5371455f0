"""Independent NumPy reference implementations, written straight from the definitions.

Upper quantile   Q̄_τ(P) = inf{b : P((-∞, b]) ≥ τ}
Lower quantile   Q̲_τ(P) = sup{b : P([b, ∞)) ≥ 1 - τ}

(Andrews, Fudenberg, Lei, Liang & Wu, Definition 2.) The candidates for b are the sample points and
±∞; the comparisons carry the same 1e-12 tolerance on the probability scale as the Rust core.
These are O(N²) on purpose: they share no code or algorithm with the kernels.
"""

from __future__ import annotations

import numpy as np

TOL = 1e-12


def upper_quantile(values, weights, tau, inf_weight=0.0):
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    total = w.sum() + inf_weight
    if tau <= 0:
        return -np.inf
    for b in np.sort(np.unique(v)):
        if w[v <= b].sum() >= (tau - TOL) * total:
            return float(b)
    return np.inf


def lower_quantile(values, weights, tau, inf_weight=0.0):
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    total = w.sum() + inf_weight
    need = (1 - tau - TOL) * total
    if need <= 0:
        return np.inf
    for b in np.sort(np.unique(v))[::-1]:
        if w[v >= b].sum() >= need:
            return float(b)
    return -np.inf


def rank_upper(values, tau):
    """R's type-1 quantile: f_(ceil(tau N)) with 1 <= rank <= N."""
    f = np.sort(np.asarray(values, dtype=float))
    k = int(np.ceil(len(f) * (tau - TOL)))
    return float(f[min(max(k, 1), len(f)) - 1])
