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


# ---- NumPy references, straight from the paper's formulas ---------------------------------------
def crra_ref(eta, z1, z2, p):
    """v^-1(p v(z1) + (1-p) v(z2)) with v(z) = (z^(1-eta) - 1)/(1-eta), mirrored for losses."""
    s = np.where((z1 < 0) | (z2 < 0), -1.0, 1.0)
    a, b = np.abs(z1), np.abs(z2)
    rho = 1 - eta
    with np.errstate(divide="ignore"):
        u = p * (a ** rho - 1) / rho + (1 - p) * (b ** rho - 1) / rho
        return s * (1 + rho * u) ** (1 / rho)


def cpt_ref(alpha, beta, delta, gamma, z1, z2, p):
    w = delta * p ** gamma / (delta * p ** gamma + (1 - p) ** gamma)

    def v(z):
        return np.where(z >= 0, np.abs(z) ** alpha, -(np.abs(z) ** beta))

    u = w * v(z1) + (1 - w) * v(z2)
    return np.where(u >= 0, np.abs(u) ** (1 / alpha), -(np.abs(u) ** (1 / beta)))


def cara_ref(a, z1, z2, p):
    return -np.log(p * np.exp(-a * z1) + (1 - p) * np.exp(-a * z2)) / a
