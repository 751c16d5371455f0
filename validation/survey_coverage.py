"""Coverage of the answer-distribution distance CIs (risk.compare_answers; docs/methods/survey.md §3.3).

A finite population with known answer distributions: three groups, two covariate cells each, K = 4
ordered options. The human answer probabilities pi(g, x) are fixed; the LLM's are
p(g, x) = (1 - delta) pi(g, x) + delta u, u a point mass on the top option, so every distance
(total variation, Wasserstein-1; per group, pooled, and the weight-share mean over groups) is known
exactly and is linear in delta. The sample is drawn with inclusion probabilities that depend on the
cells (informative: the sample over-represents one cell 4 to 1), and the survey weights are their
inverses, so the weighted comparison targets the population and the unweighted one does not.

For every design (delta, n) and replication the package computes the comparison with the public
function and the three bootstrap intervals from the same replicates (percentile, basic, and their
hull, the package's default, through the package's own ``_interval``); the study records two-sided coverage of the true distance, the one-sided coverage of
each end, the mean bias of the estimate and, for the unweighted comparison, its coverage of the
population truth.

    python validation/survey_coverage.py [--reps 400] [--n-boot 200] [--quick]

Writes validation/results/survey_coverage.json and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from llmsurrogate.risk import compare_answers
from llmsurrogate.risk._population import _interval  # the interval rules compared here

OUT = Path(__file__).resolve().parent / "results" / "survey_coverage.json"
K = 4
# population: share of each (group, cell); human answer probabilities per (group, cell)
POP = np.array([[0.25, 0.15], [0.20, 0.10], [0.20, 0.10]])
PI = np.array([[[.40, .30, .20, .10], [.10, .20, .30, .40]],
               [[.25, .25, .25, .25], [.50, .30, .15, .05]],
               [[.10, .40, .40, .10], [.30, .20, .20, .30]]])
INCL = np.array([[1.0, 4.0], [1.0, 4.0], [1.0, 4.0]])  # relative inclusion probabilities
U = np.eye(K)[K - 1]


def truth(delta: float) -> dict:
    """Exact distances per group, pooled and group mean (population shares)."""
    llm = (1 - delta) * PI + delta * U
    out = {}
    gw = POP.sum(axis=1)
    tv_g, w1_g = [], []
    for g in range(3):
        share = POP[g] / gw[g]
        d = share @ llm[g] - share @ PI[g]
        tv_g.append(0.5 * np.abs(d).sum())
        w1_g.append(np.abs(np.cumsum(d)[:-1]).sum())
        out[("group", str(g))] = (tv_g[-1], w1_g[-1])
    d = np.einsum("gx,gxk->k", POP, llm - PI)
    out[("pooled", "all rows")] = (0.5 * np.abs(d).sum(), np.abs(np.cumsum(d)[:-1]).sum())
    out[("group_mean", "mean of groups")] = (float(gw @ tv_g), float(gw @ w1_g))
    return out


def draw(rng, n: int, delta: float):
    q = (POP * INCL).ravel()
    q /= q.sum()
    cell = rng.choice(q.size, size=n, p=q)
    g, x = np.divmod(cell, 2)
    pi = PI[g, x]
    y = (rng.uniform(size=n)[:, None] > np.cumsum(pi, axis=1)).sum(axis=1)
    y = np.minimum(y, K - 1)
    probs = (1 - delta) * pi + delta * U
    w = 1.0 / INCL[g, x]
    return y, probs, g.astype(str), w


def run(delta, n, reps, n_boot, rng, level=0.95):
    tru = truth(delta)
    keys = list(tru)
    hits = {(k, d, how): 0 for k in keys for d in (0, 1) for how in ("basic", "percentile", "hull", "unweighted")}
    low_ok = {(k, d, how): 0 for k in keys for d in (0, 1) for how in ("basic", "percentile", "hull")}
    high_ok = dict.fromkeys(low_ok, 0)
    bias = {(k, d): 0.0 for k in keys for d in (0, 1)}
    for r in range(reps):
        y, probs, g, w = draw(rng, n, delta)
        seed = int(rng.integers(2**63))
        res = compare_answers(y, probs, g, weights=w, ordered=True, interval="percentile", n_boot=n_boot, seed=seed,
                              level=level).table
        unw = compare_answers(y, probs, g, ordered=True, interval="basic", n_boot=n_boot, seed=seed,
                              level=level).table
        for t_row, u_row in zip(res.itertuples(), unw.itertuples()):
            key = (t_row.scope, t_row.group)
            d = 0 if t_row.distance == "tv" else 1
            true = tru[key][d]
            bias[(key, d)] += (t_row.value - true) / reps
            lo_b, hi_b = _interval("basic", t_row.value, t_row.ci_low, t_row.ci_high)
            lo_h, hi_h = _interval("hull", t_row.value, t_row.ci_low, t_row.ci_high)
            for how, lo, hi in (("basic", lo_b, hi_b), ("percentile", t_row.ci_low, t_row.ci_high), ("hull", lo_h, hi_h)):
                hits[(key, d, how)] += lo <= true <= hi
                low_ok[(key, d, how)] += lo <= true
                high_ok[(key, d, how)] += true <= hi
            hits[(key, d, "unweighted")] += u_row.ci_low <= true <= u_row.ci_high
    rows = []
    for key in keys:
        for d, name in ((0, "tv"), (1, "w1")):
            row = {"delta": delta, "n": n, "scope": key[0], "group": key[1], "distance": name,
                   "truth": float(tru[key][d]), "mean_bias": float(bias[(key, d)]), "reps": reps}
            for how in ("basic", "percentile", "hull"):
                row[f"coverage_{how}"] = hits[(key, d, how)] / reps
                row[f"lower_ok_{how}"] = low_ok[(key, d, how)] / reps
                row[f"upper_ok_{how}"] = high_ok[(key, d, how)] / reps
            row["coverage_unweighted_basic"] = hits[(key, d, "unweighted")] / reps
            row["mc_se"] = math.sqrt(0.95 * 0.05 / reps)
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="60 replications, n = 2000 only, 100 resamples")
    args = parser.parse_args()
    reps, n_boot = (60, 100) if args.quick else (args.reps, args.n_boot)
    ns = (2000,) if args.quick else (500, 2000)
    rng = np.random.default_rng(20261125)
    t0 = time.time()
    rows = []
    for n in ns:
        for delta in (0.0, 0.05, 0.15, 0.4):
            rows += run(delta, n, reps, n_boot, rng)
            print(f"delta={delta} n={n} done ({time.time() - t0:.0f}s)", flush=True)
    out = {"reps": reps, "n_boot": n_boot, "level": 0.95, "seconds": time.time() - t0, "rows": rows}
    if not args.quick:
        OUT.parent.mkdir(exist_ok=True)
        OUT.write_text(json.dumps(out, indent=1))
    cols = ["delta", "n", "scope", "group", "distance", "truth", "mean_bias", "coverage_basic", "coverage_percentile",
            "coverage_hull", "lower_ok_basic", "upper_ok_percentile", "coverage_unweighted_basic"]
    print(" ".join(f"{c[:14]:>14}" for c in cols))
    for row in rows:
        print(" ".join(f"{row[c]:>14.4f}" if isinstance(row[c], float) else f"{str(row[c])[:14]:>14}" for c in cols))


if __name__ == "__main__":
    main()
