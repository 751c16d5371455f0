"""Independent NumPy references for the ESS capability (docs/methods/ess.md §2.3 and Appendix R).

* :func:`blockout_bruteforce` -- the docs/methods/ess.md §2.3 loop, dense per block, no compensation tricks.
* :func:`variance_pieces`, :func:`one_sided_test`, :func:`sequential_ess` -- Appendix R verbatim.
* :func:`splitmix_permutation` -- the documented permutation with Python integers.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

MASK = (1 << 64) - 1


def splitmix_permutation(n: int, seed: int) -> np.ndarray:
    state = seed & MASK

    def nxt():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        m = i + 1
        threshold = ((1 << 64) - m) % m
        while True:
            r = nxt()
            if r >= threshold:
                break
        j = r % m
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


def blockout_bruteforce(y, preds, N, loss=lambda p, y: (p - y) ** 2, llm_loss=None):
    """preds: callable b -> length-n prediction vector (rows beyond B*N ignored)."""
    B = len(y) // N
    n = B * N
    T = n - N
    e_b = np.zeros(B)
    Lsum = np.zeros(n)
    for b in range(B):
        l = loss(np.asarray(preds(b))[:n], y[:n]).astype(float)
        if llm_loss is not None:
            l = l - llm_loss[:n]
        l[b * N:(b + 1) * N] = 0
        e_b[b] = l.sum() / T
        Lsum += l
    return e_b, Lsum / (B - 1)


def variance_pieces(e_b, Lbar, N):
    B = len(e_b)
    n = B * N
    assert len(Lbar) == n and B >= 2
    ecv = e_b.mean()
    S_b = Lbar.reshape(B, N).mean(axis=1)
    V_tr = e_b.var(ddof=1)
    V_te = Lbar.var(ddof=1)
    C = ((e_b - e_b.mean()) * (S_b - S_b.mean())).sum() / (B - 1)
    s2_N = N * V_tr + V_te + 2 * N * C
    s2_B = V_te
    s2_BM = N * (e_b + S_b).var(ddof=1)
    return dict(B=B, n=n, ecv=ecv, V_train=V_tr, V_test=V_te, C=C,
                sigma2_fixed_N=s2_N, sigma2_fixed_B=s2_B, sigma2_bm=s2_BM)


def one_sided_test(pieces, alpha=0.05, regime="hybrid", hybrid_min_blocks=40):
    use_N = regime == "fixed_N" or (regime == "hybrid" and pieces["B"] >= hybrid_min_blocks)
    s2 = pieces["sigma2_fixed_N"] if use_N else pieces["sigma2_fixed_B"]
    if use_N and s2 <= 0:
        s2 = pieces["sigma2_bm"]
    se = np.sqrt(max(s2, 0.0) / pieces["n"])
    if se == 0:
        return dict(T=np.nan, reject=False, lower=pieces["ecv"], se=0.0, degenerate=True)
    T = pieces["ecv"] / se
    z = norm.ppf(1 - alpha)
    return dict(T=T, p=1 - norm.cdf(T), reject=bool(T > z), lower=pieces["ecv"] - z * se, se=se)


def sequential_ess(grid, tests):
    prev = 0
    for N_k, t in zip(grid, tests):
        if not t["reject"]:
            return dict(N_tilde=prev + 1, status="stopped", N_stop=N_k)
        prev = N_k
    return dict(N_tilde=grid[-1] + 1, status="all_rejected")
