"""Monte Carlo of the lookahead-bias test and its bootstrap (docs/methods/lookahead.md §2.2, §2.7, §6.5).

Simulated panels of firms x dates with two-way fixed effects, an LLM signal in {-1, 0, 1} and a
LAP, generated from the paper's contamination model (Definition 1, §2.1): mu ~ N(0, 1) is the
forecastable part of the outcome, eps ~ N(0, 1) the news, the LLM sees mu_hat = mu + L * eps
(L = memorisation strength) and reports LLM = -1 / 0 / 1 at mu_hat < -0.5 / in between / > 0.5;
LAP = L + N(0, 0.05^2) noise. The outcome is

    y = a_firm + b_date + mu + eps + c_date * LLM + d_date * LLM * LAP

with firm effects correlated with LAP (so the firm FE matter), date effects, and date-varying
slopes c_date ~ N(0, 0.3^2), d_date ~ N(0, 3^2) of mean zero: they leave the population
interaction unchanged but correlate the scores within a date, so errors clustered by date are
needed (the HC1 line shows what ignoring that does). The "independent" design sets c = d = 0.

(a) Power: planted contamination L = L_max * U (U uniform, correlated with the firm), with L_max =
    0.3 and 0.1, inside the region L < L* = 0.414 where the population interaction is positive
    (§2.2, caveat 2). Rejection rate of the one-sided 5% test (H1: delta > 0).
(b) Size: L = 0, and LAP drawn from the same distribution but independent of everything else
    (delta = 0 exactly: with symmetric cut-offs E[mu | LLM] is linear in LLM). Rejection rates at
    5% (one-sided, each side, and two-sided) against the nominal 5% +- 2 MC s.e.; HC1 for contrast.
(c) The bootstrap's percentile p-value #{draws <= 0} / B (``LookaheadBootstrap.p_value`` without a
    reference) under the null: Kolmogorov-Smirnov test of uniformity and the rejection rate at
    1, 5, 10, 25 and 50%, for the paper's pairs bootstrap over observations on the independent
    design, the date-block bootstrap on the clustered design, and (for contrast) the pairs bootstrap
    over observations on the clustered design, which ignores the within-date dependence.

Writes ``validation/results/lookahead_mc.json`` (--quick: ``lookahead_mc_quick.json``) with the
seeds and settings.

    python validation/lookahead_mc.py [--quick] [--sims 1000] [--boot-sims 200] [--boot-reps 199]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import ndtr

import llmsurrogate
from llmsurrogate import lookahead as la
from llmsurrogate.exceptions import LLMSurrogateWarning

OUT = Path(__file__).resolve().parent / "results"
SEED = 20260112
DESIGN = {"n_obs": 10_000, "n_firms": 400, "n_dates": 300, "signal_cut": 0.5, "lap_noise_sd": 0.05,
          "c_date_sd": 0.3, "d_date_sd": 3.0, "L_star": (math.sqrt(2) - 1)}
ALPHAS = (0.01, 0.05, 0.10, 0.25, 0.50)


def panel(rng, L_max: float, planted: bool, clustered: bool = True, d=DESIGN) -> pd.DataFrame:
    """One simulated panel (module docstring). Rows are firm-date pairs drawn at random (unbalanced,
    several texts of a firm on one date allowed), as headlines are."""
    n, nf, nd = d["n_obs"], d["n_firms"], d["n_dates"]
    firm = rng.integers(0, nf, n)
    date = rng.integers(0, nd, n)
    g = rng.normal(size=nf)                      # firm component of the memorisation strength
    a = g + rng.normal(size=nf)                  # firm effects, correlated with LAP
    b = rng.normal(size=nd)                      # date effects
    u = ndtr(math.sqrt(0.5) * g[firm] + math.sqrt(0.5) * rng.normal(size=n))   # uniform on (0, 1)
    mu = rng.normal(size=n)
    eps = rng.normal(size=n)
    if planted:
        L = L_max * u
        muhat = mu + L * eps
    else:                                        # same LAP distribution, no contamination
        L = L_max * ndtr(math.sqrt(0.5) * g[firm] + math.sqrt(0.5) * rng.normal(size=n))
        muhat = mu
    lap = L + rng.normal(0.0, d["lap_noise_sd"], n)
    cut = d["signal_cut"]
    llm = np.where(muhat > cut, 1.0, np.where(muhat < -cut, -1.0, 0.0))
    y = a[firm] + b[date] + mu + eps
    if clustered:
        c = rng.normal(0.0, d["c_date_sd"], nd)
        dd = rng.normal(0.0, d["d_date_sd"], nd)
        y = y + c[date] * llm + dd[date] * llm * lap
    return pd.DataFrame({"y": y, "llm": llm, "lap": lap, "firm": firm, "date": date})


def rate(hits) -> dict:
    h = np.asarray(hits, dtype=bool)
    p = float(h.mean())
    return {"rate": p, "mc_se": math.sqrt(p * (1 - p) / h.size), "sims": int(h.size)}


def size_check(r: dict, nominal: float = 0.05) -> dict:
    """Within 2 MC s.e. of the nominal level (the s.e. at the nominal rate, which does not vanish
    when the observed rate is 0)."""
    se0 = math.sqrt(nominal * (1 - nominal) / r["sims"])
    return {**r, "nominal": nominal, "mc_se_at_nominal": se0, "within_2_mc_se": abs(r["rate"] - nominal) <= 2 * se0}


def run_tests(seq, sims: int, L_max: float, planted: bool) -> dict:
    est, stat, p_g, p_l, p_2, stat_hc1, p_g_hc1, p_2_hc1, se_ratio = ([] for _ in range(9))
    for child in seq.spawn(sims):
        df = panel(np.random.default_rng(child), L_max, planted)
        r = la.lookahead_test(df, "y", "llm", "lap", fe=["firm", "date"], cluster="date")
        h = la.lookahead_test(df, "y", "llm", "lap", fe=["firm", "date"], cluster=None)
        est.append(r.estimate)
        stat.append(r.statistic)
        p_g.append(r.p_greater)
        p_l.append(r.p_less)
        p_2.append(r.p_two_sided)
        stat_hc1.append(h.statistic)
        p_g_hc1.append(h.p_greater)
        p_2_hc1.append(h.p_two_sided)
        se_ratio.append(r.std_error / h.std_error)
    p_g, p_l, p_2 = map(np.asarray, (p_g, p_l, p_2))
    est = np.asarray(est)
    out = {
        "L_max": L_max, "planted": planted, "seed_entropy": seq.entropy, "spawn_key": list(seq.spawn_key),
        "delta_hat_mean": float(est.mean()), "delta_hat_mc_se": float(est.std(ddof=1) / math.sqrt(sims)),
        "delta_hat_sd": float(est.std(ddof=1)), "t_mean": float(np.mean(stat)), "t_sd": float(np.std(stat, ddof=1)),
        "se_ratio_cluster_over_hc1_mean": float(np.mean(se_ratio)),
        "reject_greater_5pct": rate(p_g <= 0.05),
        "reject_less_5pct": rate(p_l <= 0.05),
        "reject_two_sided_5pct": rate(p_2 <= 0.05),
        "hc1_reject_greater_5pct": rate(np.asarray(p_g_hc1) <= 0.05),
        "hc1_reject_two_sided_5pct": rate(np.asarray(p_2_hc1) <= 0.05),
    }
    if not planted:
        for k in ("reject_greater_5pct", "reject_less_5pct", "reject_two_sided_5pct",
                  "hc1_reject_greater_5pct", "hc1_reject_two_sided_5pct"):
            out[k] = size_check(out[k])
        out["ks_uniform_p_greater"] = float(stats.kstest(p_g, "uniform").pvalue)
    return out


def run_bootstrap(seq, sims: int, reps: int, L_max: float, clustered: bool, resample: str) -> dict:
    pvals, pvals1, seeds, singular = [], [], [], 0
    for child in seq.spawn(sims):
        rng = np.random.default_rng(child)
        df = panel(rng, L_max, planted=False, clustered=clustered)
        seed = int(rng.integers(0, 2**63))
        b = la.bootstrap(df, "y", "llm", "lap", fe=["firm", "date"], reps=reps, seed=seed, resample=resample)
        seeds.append(seed)
        pvals.append(b.p_value)                   # #{draws <= 0} / B: H0 delta <= 0
        pvals1.append(b.p_value_plus_one)
        singular += b.n_singular + b.n_unconverged
    p = np.asarray(pvals)
    ks = stats.kstest(p, "uniform")
    levels = {}
    for a in ALPHAS:
        se0 = math.sqrt(a * (1 - a) / sims)
        r = float((p <= a).mean())
        levels[f"{a:g}"] = {"rate": r, "mc_se_at_nominal": se0, "within_2_mc_se": abs(r - a) <= 2 * se0}
    return {"design": "clustered" if clustered else "independent", "resample": resample, "reps": reps,
            "sims": sims, "seed_entropy": seq.entropy, "spawn_key": list(seq.spawn_key),
            "ks_statistic": float(ks.statistic), "ks_pvalue": float(ks.pvalue),
            "mean_p": float(p.mean()), "reject_at": levels, "failed_replications": int(singular),
            "bootstrap_seeds": seeds, "p_values": p.tolist(), "p_values_plus_one": pvals1}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="200 test simulations, 50 bootstrap simulations")
    parser.add_argument("--sims", type=int, default=None, help="simulations per size/power design (default 1000)")
    parser.add_argument("--boot-sims", type=int, default=None, help="simulations per bootstrap design (default 200)")
    parser.add_argument("--boot-reps", type=int, default=199, help="bootstrap replications per simulation")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    sims = args.sims or (200 if args.quick else 1000)
    power_sims = max(sims // 2, 100)
    boot_sims = args.boot_sims or (50 if args.quick else 200)
    warnings.simplefilter("ignore", LLMSurrogateWarning)
    root = np.random.SeedSequence(args.seed)
    seq_size, seq_p3, seq_p1, seq_b1, seq_b2, seq_b3 = root.spawn(6)
    t0 = time.time()
    res = {"seed": args.seed, "quick": args.quick, "design": DESIGN, "sims": sims, "power_sims": power_sims,
           "boot_sims": boot_sims, "boot_reps": args.boot_reps, "test": "one-sided t test of H0: delta <= 0 "
           "(LookaheadTest.p_greater), errors clustered by date, t with G - 1 df; two-way FE firm + date",
           "llmsurrogate": llmsurrogate.__version__, "numpy": np.__version__, "cores": os.cpu_count(),
           "load_before": list(os.getloadavg())}

    print(f"(b) size: L = 0, {sims} simulations of n = {DESIGN['n_obs']:,} ({DESIGN['n_firms']} firms, "
          f"{DESIGN['n_dates']} dates)", flush=True)
    size = run_tests(seq_size, sims, 0.3, planted=False)
    for k in ("reject_greater_5pct", "reject_less_5pct", "reject_two_sided_5pct", "hc1_reject_greater_5pct",
              "hc1_reject_two_sided_5pct"):
        r = size[k]
        print(f"  {k:28s} {r['rate']:.3f} (MC se {r['mc_se_at_nominal']:.4f}; within 2 se of 0.05: {r['within_2_mc_se']})")
    print(f"  mean delta_hat {size['delta_hat_mean']:+.4f} (MC se {size['delta_hat_mc_se']:.4f}); clustered / HC1 "
          f"SE {size['se_ratio_cluster_over_hc1_mean']:.2f}; KS p of p-values {size['ks_uniform_p_greater']:.3f}")
    res["size"] = size

    res["power"] = {}
    for L_max, seq in ((0.3, seq_p3), (0.1, seq_p1)):
        print(f"(a) power: L ~ {L_max} x U, {power_sims} simulations", flush=True)
        p = run_tests(seq, power_sims, L_max, planted=True)
        r = p["reject_greater_5pct"]
        print(f"  rejection at 5% (one-sided) {r['rate']:.3f} (MC se {r['mc_se']:.3f}); mean delta_hat "
              f"{p['delta_hat_mean']:+.3f}, mean t {p['t_mean']:.2f}")
        res["power"][f"L_max_{L_max}"] = p

    res["bootstrap"] = {}
    for name, seq, clustered, resample in (("obs_independent", seq_b1, False, "obs"),
                                           ("date_clustered", seq_b2, True, "date"),
                                           ("obs_clustered", seq_b3, True, "obs")):
        print(f"(c) bootstrap p-value under the null: {name} ({boot_sims} simulations x {args.boot_reps} reps)",
              flush=True)
        b = run_bootstrap(seq, boot_sims, args.boot_reps, 0.3, clustered, resample)
        lv = ", ".join(f"{a}: {v['rate']:.3f}" for a, v in b["reject_at"].items())
        print(f"  KS D = {b['ks_statistic']:.3f}, p = {b['ks_pvalue']:.3f}; P(p <= a) {lv}")
        res["bootstrap"][name] = b

    res["load_after"] = list(os.getloadavg())
    res["seconds"] = time.time() - t0
    OUT.mkdir(exist_ok=True)
    path = OUT / ("lookahead_mc_quick.json" if args.quick else "lookahead_mc.json")
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"done in {res['seconds']:.0f} s; wrote {path}")


if __name__ == "__main__":
    main()
