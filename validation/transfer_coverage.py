"""Coverage simulations for the transfer-inference guarantees (docs/methods/transfer.md §8.2, S1–S5).

Every interval is computed with the public API (llmsurrogate.transfer) from the observed n x n
block; the target is the realised error e_{T, n+1} with T uniform over the n observed domains.

* S1 exchangeable domains (Prop. 1, Claim 1): coverage in [LB - 4 SE, UB + 4 SE].
* S2 known likelihood ratio (Theorem 1): weighted intervals, bound estimated by Monte Carlo.
* S3 bounded likelihood ratio (Corollary 1): worst-case intervals at Γ.
* S4 U-statistic tail bound (Lemma Q.1): empirical P(U <= x) <= B_{20,2}(x; 1/3).
* S5 quantile and mean CIs (Props Q.1, Q.2): coverage of two-sided 80% CIs (order r + 1).

    python validation/transfer_coverage.py [--reps 20000] [--seed 0]

Writes validation/results/transfer_coverage.json and prints a table with a PASS/FAIL column.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from llmsurrogate import transfer as tr

OUT = Path(__file__).resolve().parent / "results" / "transfer_coverage.json"


def errors(theta):
    return np.abs(theta[:, None] - 2 * theta[None, :])


def s1(rng, n, tau, reps):
    hit1 = hit2 = 0
    for _ in range(reps):
        theta = rng.normal(size=n + 1)
        E = errors(theta)
        block = E[:n, :n].copy()
        np.fill_diagonal(block, np.nan)
        target = E[rng.integers(n), n]
        hit1 += target <= tr.forecast_interval(block, tau=tau, side="upper")[1]
        lo, hi = tr.forecast_interval(block, tau=tau)
        hit2 += lo <= target <= hi
    r = 1
    extra = (r + 1) / (n + 1) + math.exp(math.lgamma(n - r + 1) - math.lgamma(n + 2))
    lb1, lb2 = tr.coverage_bound(n, r, tau, "upper"), tr.coverage_bound(n, r, tau, "two")
    return [dict(study="S1 exchangeable", n=n, tau=tau, side="one-sided", coverage=hit1 / reps, lower=lb1,
                 upper=lb1 + extra, reps=reps),
            dict(study="S1 exchangeable", n=n, tau=tau, side="two-sided", coverage=hit2 / reps, lower=lb2,
                 upper=lb2 + extra, reps=reps)]


def s2(rng, n, tau, delta, reps):
    hit1 = hit2 = hit_unw = 0
    ratio = []
    for _ in range(reps):
        theta = np.append(rng.normal(size=n), rng.normal(delta, 1.0))
        w = np.exp(delta * theta - delta**2 / 2)
        E = errors(theta)
        block = E[:n, :n].copy()
        np.fill_diagonal(block, np.nan)
        target = E[rng.integers(n), n]
        hit1 += target <= tr.weighted_forecast_interval(block, w[:n], tau=tau, side="upper")[1]
        lo, hi = tr.weighted_forecast_interval(block, w[:n], tau=tau)
        hit2 += lo <= target <= hi
        hit_unw += target <= tr.forecast_interval(block, tau=tau, side="upper")[1]
        ratio.append(w[:n].sum() / w.sum())
    factor = (n - 1) / n * float(np.mean(ratio))
    return [dict(study=f"S2 weighted, delta={delta}", n=n, tau=tau, side="one-sided", coverage=hit1 / reps,
                 lower=tau * factor, upper=1.0, reps=reps, unweighted_one_sided=hit_unw / reps),
            dict(study=f"S2 weighted, delta={delta}", n=n, tau=tau, side="two-sided", coverage=hit2 / reps,
                 lower=(2 * tau - 1) * factor, upper=1.0, reps=reps)]


def s3(rng, n, tau, gamma, reps):
    hit1 = hit2 = 0
    p_pos = gamma**2 / (gamma**2 + 1)
    for _ in range(reps):
        z = abs(rng.normal())
        theta = np.append(rng.normal(size=n), z if rng.random() < p_pos else -z)
        E = errors(theta)
        block = E[:n, :n].copy()
        np.fill_diagonal(block, np.nan)
        target = E[rng.integers(n), n]
        hit1 += target <= tr.worst_case_interval(block, tau=tau, Gamma=gamma, side="upper")[1]
        lo, hi = tr.worst_case_interval(block, tau=tau, Gamma=gamma)
        hit2 += lo <= target <= hi
    return [dict(study=f"S3 bounded ratio, Gamma={gamma}", n=n, tau=tau, side="one-sided", coverage=hit1 / reps,
                 lower=tr.coverage_bound(n, 1, tau, "upper", Gamma=gamma), upper=1.0, reps=reps),
            dict(study=f"S3 bounded ratio, Gamma={gamma}", n=n, tau=tau, side="two-sided", coverage=hit2 / reps,
                 lower=tr.coverage_bound(n, 1, tau, "two", Gamma=gamma), upper=1.0, reps=reps)]


def s4(rng, reps):
    n, k = 20, 2
    Z = rng.random((reps, n))
    off = ~np.eye(n, dtype=bool)
    U = ((Z[:, :, None] <= Z[:, None, :] ** 2) & off).sum(axis=(1, 2)) / (n * (n - 1))
    rows = []
    for x in (0.15, 0.20, 0.25, 0.30):
        b = tr.ustat_tail_bound(x, 1 / 3, n, k)["B"]
        rows.append(dict(study="S4 U-statistic tail bound", n=n, tau=x, side="P(U <= x)",
                         coverage=float(np.mean(U <= x)), lower=0.0, upper=b, reps=reps))
    return rows


def s5(rng, reps):
    from scipy.stats import norm

    n = 20
    q_true = norm.cdf(math.sqrt(5) / 3 * norm.ppf(0.75))
    th = rng.normal(size=(400_000, 2))
    mu_true = float(np.mean(norm.cdf(np.abs(th[:, 0] - 2 * th[:, 1]) / 3)))
    hq = hm = 0
    for _ in range(reps):
        theta = rng.normal(size=n)
        M = norm.cdf(errors(theta) / 3)
        np.fill_diagonal(M, np.nan)
        ci = tr.qte_interval(M, 0.8, betas=[0.5]).iloc[0]
        hq += ci.lb <= q_true <= ci.ub
        lo, hi = tr.ete_interval(M, 0.8)
        hm += lo <= mu_true <= hi
    return [dict(study="S5 quantile CI (median, 80%)", n=n, tau=0.5, side="two-sided", coverage=hq / reps,
                 lower=0.8, upper=1.0, reps=reps),
            dict(study="S5 mean CI (80%)", n=n, tau=math.nan, side="two-sided", coverage=hm / reps, lower=0.8,
                 upper=1.0, reps=reps)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    rows = []
    for n, tau in [(5, 0.9), (10, 0.9), (10, 0.95), (20, 0.8), (44, 0.95)]:
        rows += s1(rng, n, tau, args.reps)
    for n, tau, delta in [(10, 0.9, 1.0), (20, 0.9, 1.0), (20, 0.95, 0.5)]:
        rows += s2(rng, n, tau, delta, args.reps)
    for n, tau, gamma in [(10, 0.9, 1.5), (20, 0.9, 2.0)]:
        rows += s3(rng, n, tau, gamma, max(args.reps // 4, 1))
    rows += s4(rng, args.reps)
    rows += s5(rng, max(args.reps // 60, 50))
    for r in rows:
        se = math.sqrt(max(r["coverage"] * (1 - r["coverage"]), 1e-12) / r["reps"])
        r["se"] = se
        r["pass"] = bool(r["lower"] - 4 * se <= r["coverage"] <= r["upper"] + 4 * se)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"seed": args.seed, "seconds": time.perf_counter() - t0, "rows": rows}, indent=2))
    print(f"{'study':34s} {'n':>3s} {'tau':>5s} {'side':>10s} {'coverage':>9s} {'bounds':>17s} {'reps':>6s}  ok")
    for r in rows:
        print(f"{r['study']:34s} {r['n']:3d} {r['tau']:5.2f} {r['side']:>10s} {r['coverage']:9.3f} "
              f"[{r['lower']:.3f}, {r['upper']:.3f}] {r['reps']:6d}  {'PASS' if r['pass'] else 'FAIL'}")
    print(f"{time.perf_counter() - t0:.0f} s; wrote {OUT}")


if __name__ == "__main__":
    main()
