"""Coverage studies for the ESS confidence bound and the error-curve CIs (docs/methods/ess.md §10.4-10.8).

Native fast learners with O(n + B) sufficient-statistic block-out CV (block mean, cell majority
vote), cross-checked once per design against the Rust streaming accumulator; the variance pieces
and Algorithm 3.1 are the package's Rust kernels. Prints coverage with Monte Carlo standard errors
and writes ``validation/results/ess_coverage.json``.

    python validation/ess_coverage.py [--reps 1000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from llmsurrogate import _core

Z95 = 1.6448536269514722
OUT = Path(__file__).resolve().parent / "results" / "ess_coverage.json"


# ---- O(n + B) block-out CV for the block-mean learner (squared loss) -------------------------

def _with_difference(out, llm_loss, n, N, B):
    """Add the difference-loss pieces (learner loss minus the LLM's loss) when an LLM loss is given."""
    if llm_loss is not None:
        ll = llm_loss[:n]
        llb = ll.reshape(B, N).sum(axis=1)
        out["de_b"] = out["e_b"] - (ll.sum() - llb) / (n - N)
        out["dlbar"] = out["lbar"] - ll
    return out


def mean_learner_blockout(y, N, llm_loss=None):
    B = len(y) // N
    n = B * N
    y = y[:n]
    m = y.reshape(B, N).mean(axis=1)
    s1b, s2b = y.reshape(B, N).sum(axis=1), (y**2).reshape(B, N).sum(axis=1)
    S1, S2 = s1b.sum(), s2b.sum()
    e_b = (S2 - s2b - 2 * m * (S1 - s1b) + (n - N) * m**2) / (n - N)
    own = np.repeat(m, N)
    M, Q = m.sum(), (m**2).sum()
    lbar = ((B - 1) * y**2 - 2 * y * (M - own) + (Q - own**2)) / (B - 1)
    return _with_difference({"e_b": e_b, "lbar": lbar}, llm_loss, n, N, B)


def cell_majority_blockout(x, y, N, rng, llm_loss=None):
    """Majority vote per cell x in {0,1} (coin for ties / empty cells), 0-1 loss, via cell counts."""
    B = len(y) // N
    n = B * N
    x, y = x[:n].astype(int), y[:n]
    xb, yb = x.reshape(B, N), y.reshape(B, N)
    lab = np.empty((B, 2))
    for c in (0, 1):
        ones = ((xb == c) & (yb == 1)).sum(axis=1)
        zeros = ((xb == c) & (yb == 0)).sum(axis=1)
        coin = (rng.random(B) < 0.5).astype(float)
        lab[:, c] = np.where(ones > zeros, 1.0, np.where(ones < zeros, 0.0, coin))
    # counts of (x, y) cells overall and per block
    cnt = np.array([[((x == c) & (y == v)).sum() for v in (0, 1)] for c in (0, 1)], dtype=float)
    cntb = np.stack([np.stack([((xb == c) & (yb == v)).sum(axis=1) for v in (0, 1)], axis=1) for c in (0, 1)], axis=1)
    # e_b: complement observations (c, v) with lab[b, c] != v
    e_b = np.zeros(B)
    for c in (0, 1):
        for v in (0, 1):
            e_b += (lab[:, c] != v) * (cnt[c, v] - cntb[:, c, v])
    e_b /= n - N
    # lbar_i: number of blocks b != b(i) with lab[b, x_i] != y_i
    wrong = np.array([[(lab[:, c] != v).sum() for v in (0, 1)] for c in (0, 1)], dtype=float)
    own = lab[np.repeat(np.arange(B), N), x]
    lbar = (wrong[x, y.astype(int)] - (own != y)) / (B - 1)
    return _with_difference({"e_b": e_b, "lbar": lbar, "labels": lab}, llm_loss, n, N, B)


def sequential(grid, blockouts, llm_loss, regime, variance, alpha=0.05):
    pts = []
    for N, bo in zip(grid, blockouts):
        plain = _core.ess_variance_pieces(np.ascontiguousarray(bo["e_b"]), np.ascontiguousarray(bo["lbar"]), N)
        diff = _core.ess_variance_pieces(np.ascontiguousarray(bo["de_b"]), np.ascontiguousarray(bo["dlbar"]), N)
        n_used = len(bo["lbar"])
        pts.append({"n_train": N, "plain": plain, "diff": diff, "llm_var": float(np.var(llm_loss[:n_used], ddof=1))})
    from scipy.special import ndtri

    return _core.ess_sequential_test(pts, float(ndtri(1 - alpha)), regime, 40, variance)["lower_bound"]


def summarise(name, bounds, n_star, extra=None):
    b = np.asarray(bounds)
    cov = float(np.mean(b <= n_star))
    se = math.sqrt(cov * (1 - cov) / len(b))
    q = np.percentile(b, [5, 50, 95]).tolist()
    print(f"  {name:46s} coverage {cov:.3f} (MC se {se:.3f})   5/50/95% of bound {q[0]:.0f}/{q[1]:.0f}/{q[2]:.0f}")
    return {"coverage": cov, "mc_se": se, "quantiles_5_50_95": q, "reps": len(b), **(extra or {})}


def check_against_rust(y, N, bo, llm_loss, x_rows=None):
    """One cross-check of the O(n+B) formulas against the streaming accumulator."""
    acc = _core.BlockOutAccumulator(y, N, "squared" if x_rows is None else "zero_one", llm_loss)
    B, n = acc.blocks, acc.n_used
    rows = x_rows if x_rows is not None else np.repeat(y[:n].reshape(B, N).mean(axis=1)[:, None], n, axis=1)
    acc.add_blocks(0, np.ascontiguousarray(rows), 1)
    o = acc.finalize()
    np.testing.assert_allclose(o["e_b"], bo["e_b"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(o["lbar"], bo["lbar"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(o["diff_lbar"], bo["dlbar"], rtol=1e-9, atol=1e-12)


def dgp_a(reps, n, rng):
    """§10.4: DGP A, s = 1, d = 0.1 (N* = 100), grid 10..300."""
    grid = list(range(10, 301, 10))
    res = {"fixed_N": [], "fixed_B": [], "sum": []}
    for r in range(reps):
        y = rng.normal(size=n)
        ll = (y - 0.1) ** 2
        bos = [mean_learner_blockout(y, N, ll) for N in grid]
        if r == 0:
            check_against_rust(y, 20, bos[1], ll)
        res["fixed_N"].append(sequential(grid, bos, ll, "fixed_N", "difference"))
        res["fixed_B"].append(sequential(grid, bos, ll, "fixed_B", "difference"))
        res["sum"].append(sequential(grid, bos, ll, "fixed_N", "sum"))
    return res


def dgp_b(reps, n, rng, llm):
    """§10.5 with a covariate: 'always 1' (N* = 4, grid 1..20) or noisy Bayes eta = 0.05 (N* = 38, grid 1..60)."""
    grid = list(range(1, 21)) if llm == "always1" else list(range(1, 61))
    out = []
    for r in range(reps):
        x = (rng.random(n) < 0.5).astype(float)
        y = (rng.random(n) < np.where(x == 1, 0.8, 0.4)).astype(float)
        if llm == "always1":
            pred = np.ones(n)
        else:
            bayes = (x == 1).astype(float)
            flip = rng.random(n) < 0.05
            pred = np.where(flip, 1 - bayes, bayes)
        ll = (pred != y).astype(float)
        bos = [cell_majority_blockout(x, y, N, rng, ll) for N in grid]
        if r == 0:
            N = grid[3]
            B = n // N
            rows = bos[3]["labels"][np.arange(B)[:, None], x[None, : B * N].astype(int)]
            check_against_rust(y, N, bos[3], ll, x_rows=rows)
        out.append(sequential(grid, bos, ll, "fixed_N", "difference"))
    return out


def dgp_c_fixed_b(reps, rng):
    """§10.6: OLS, p = 3, n = 6000; two-sided 95% CI coverage of e_N with (4.5) and (B.2) by B."""
    p, n = 3, 6000
    beta = np.array([1.0, -0.5, 0.25])
    out = {}
    for B in (2, 3, 5, 10, 50):
        N = n // B
        e_true = 1 + p / (N - p - 1)
        hit_n = hit_b = 0
        for _ in range(reps):
            X = rng.normal(size=(n, p))
            y = X @ beta + rng.normal(size=n)
            acc = _core.BlockOutAccumulator(y, N, "squared")
            rows = np.empty((B, n))
            for b in range(B):
                coef = np.linalg.lstsq(X[b * N:(b + 1) * N], y[b * N:(b + 1) * N], rcond=None)[0]
                rows[b] = X @ coef
            acc.add_blocks(0, rows, 1)
            o = acc.finalize()["plain"]
            se_n = math.sqrt(max(o["sigma2_fixed_n"], 0) / n)
            se_b = math.sqrt(o["sigma2_fixed_b"] / n)
            hit_n += abs(o["ecv"] - e_true) <= 1.959963984540054 * se_n
            hit_b += abs(o["ecv"] - e_true) <= 1.959963984540054 * se_b
        cn, cb = hit_n / reps, hit_b / reps
        out[B] = {"fixed_N": cn, "fixed_B": cb, "mc_se": math.sqrt(0.95 * 0.05 / reps), "reps": reps}
        print(f"  B = {B:3d}: coverage fixed-N (4.5) {cn:.3f}, fixed-B (B.2) {cb:.3f}   (MC se ~{math.sqrt(0.95*0.05/reps):.3f})")
    return out


def dgp_e(reps, n, rng):
    """§10.8: CATE via Y* with the block-mean learner; LLM constant CATE c = 2 (N*_tau = 45)."""
    grid = list(range(5, 101, 5))
    out = []
    for _ in range(reps):
        x = rng.random(n)
        d = (rng.random(n) < 0.5).astype(float)
        y = np.where(d == 1, 1 + 2 * x, x) + rng.normal(size=n)
        ystar = 2 * (2 * d - 1) * y
        ll = (ystar - 2.0) ** 2
        bos = [mean_learner_blockout(ystar, N, ll) for N in grid]
        out.append(sequential(grid, bos, ll, "fixed_N", "difference"))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="200 replications everywhere")
    args = parser.parse_args()
    reps = 200 if args.quick else args.reps
    rng = np.random.default_rng(20260122)
    results = {"reps": reps}
    t0 = time.time()
    print(f"DGP A (mean, squared loss, N* = 100, grid 10..300), {reps} reps")
    for n in (10_000, 2_000):
        r = dgp_a(reps, n, rng)
        results[f"A_n{n}"] = {k: summarise(f"n = {n}, {k}", v, 100) for k, v in r.items()}
    print(f"DGP B (cell majority, 0-1 loss), {reps // 2} reps")
    results["B_always1_n20000"] = summarise("always-1 LLM, N* = 4, n = 20000", dgp_b(reps // 2, 20_000, rng, "always1"), 4)
    results["B_noisy_n20000"] = summarise("noisy Bayes LLM, N* = 38, n = 20000", dgp_b(reps // 2, 20_000, rng, "noisy"), 38)
    print(f"DGP C (OLS, p = 3, n = 6000): fixed-B vs fixed-N CI coverage, {reps} reps")
    results["C_fixed_B"] = dgp_c_fixed_b(reps, rng)
    print(f"DGP E (CATE via Y*, N*_tau = 45, n = 40000), {reps // 2} reps")
    results["E_n40000"] = summarise("CATE, fixed-N difference test", dgp_e(reps // 2, 40_000, rng), 45)
    results["seconds"] = time.time() - t0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2))
    print(f"done in {results['seconds']:.0f} s; wrote {OUT}")


if __name__ == "__main__":
    main()
