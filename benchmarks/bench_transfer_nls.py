"""Rust NLS (bounded Levenberg-Marquardt) vs scipy.optimize.least_squares on the same fits.

The fits are those of the r = 1 transfer tables: EU (CRRA) and the five CPT variants of the paper
(g, ab, dg, abg, abdg), each fitted on each of the 44 subject pools of
``llmsurrogate.datasets.load_certainty_equivalents()``, from the same starting points and within
the same bounds. scipy gets a vectorised NumPy residual and ``method="trf"`` (its bounded
least-squares solver); both sides keep the best start. Both run on one thread.

The optimum is compared on the training MSE (relative difference) and on the parameters
(absolute difference), after the same treatment of unidentified parameters on both sides (the most
restricted model with the same training MSE: free parameters are put at their defaults one at a
time, alpha, beta, delta, gamma, refitting the others, and a restriction is kept when the training
MSE does not rise by more than 1e-13 relative; docs/methods/transfer.md).

Writes ``benchmarks/results/transfer_nls.json``.

    python benchmarks/bench_transfer_nls.py [--quick] [--rounds 3]

Timed through benchmarks/_harness.py: interleaved rounds (ours, scipy, scipy on grouped lotteries), load
and versions recorded; --quick (one round) writes benchmarks/quick/transfer_nls.json.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy
from scipy.optimize import least_squares

import llmsurrogate
from llmsurrogate import datasets as ds
from llmsurrogate import transfer as tr

OUT = Path(__file__).resolve().parent / "results" / "transfer_nls.json"


def crra(eta, z1, z2, p):
    s = np.where((z1 < 0) | (z2 < 0), -1.0, 1.0)
    a, b = np.abs(z1), np.abs(z2)
    rho = 1.0 - eta
    if abs(rho) < 1e-12:
        with np.errstate(divide="ignore"):
            return s * a ** p * b ** (1 - p)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return s * (p * a ** rho + (1 - p) * b ** rho) ** (1 / rho)


def cpt(alpha, beta, delta, gamma, z1, z2, p):
    """The CE as the Rust core computes it: the direct powers for alpha, beta >= 1e-3, below that
    U = 1 + (U - 1) with expm1/log1p, which keeps full precision at the floor 1e-8 where the direct
    powers lose ~1e-8 relative; both sides then minimise the same objective to rounding."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        w = delta * p ** gamma / (delta * p ** gamma + (1 - p) ** gamma)
        if alpha >= 1e-3 and beta >= 1e-3:
            v1 = np.where(z1 >= 0, np.abs(z1) ** alpha, -(np.abs(z1) ** beta))
            v2 = np.where(z2 >= 0, np.abs(z2) ** alpha, -(np.abs(z2) ** beta))
            u = w * v1 + (1 - w) * v2
            return np.where(u >= 0, np.abs(u) ** (1 / alpha), -(np.abs(u) ** (1 / beta)))

        def gain_m1(z):
            return np.where(z > 0, np.expm1(alpha * np.log(np.abs(z))), np.where(z == 0, -1.0, -(np.abs(z) ** beta) - 1))

        def loss_m1(z):
            return np.where(z < 0, np.expm1(beta * np.log(np.abs(z))), np.where(z == 0, -1.0, -(np.abs(z) ** alpha) - 1))

        um1 = w * gain_m1(z1) + (1 - w) * gain_m1(z2)
        nm1 = w * loss_m1(z1) + (1 - w) * loss_m1(z2)
        return np.where(um1 >= -1, np.exp(np.log1p(um1) / alpha), -np.exp(np.log1p(nm1) / beta))


def grouped(g):
    """Distinct lotteries with counts and mean outcomes (the same reduction the Rust core uses), and
    the within-lottery sum of squares (the constant the reduction drops from the objective)."""
    agg = g.groupby(["z1", "z2", "p1"], sort=True)["ce"].agg(["size", "mean", "var"]).reset_index()
    ss_within = float(np.nansum(agg["var"].to_numpy(float) * (agg["size"].to_numpy(float) - 1)))
    return (agg["z1"].to_numpy(float), agg["z2"].to_numpy(float), agg["p1"].to_numpy(float),
            agg["mean"].to_numpy(float), agg["size"].to_numpy(float), ss_within)


def scipy_fit(model, z1, z2, p, y, w=None, ss_within=0.0):
    theta0, free, lower, upper, starts = model._spec()

    def full(x):
        th = theta0.copy()
        th[free] = x
        return th

    sw = np.ones_like(y) if w is None else np.sqrt(w)
    if isinstance(model, tr.EU):
        def resid(x):
            return sw * (crra(x[0], z1, z2, p) - y)
    else:
        def resid(x):
            return sw * (cpt(*full(x), z1, z2, p) - y)

    def safe(x):
        r = resid(x)
        return np.where(np.isfinite(r), r, 1e150)

    def solve(fun, x0, lo, hi):
        return least_squares(fun, x0, bounds=(lo, hi), method="trf", ftol=1e-12, xtol=1e-12, gtol=1e-12,
                             max_nfev=2000)

    best = None
    for s in starts:
        res = solve(safe, s, lower, upper)
        if best is None or res.cost < best.cost:
            best = res
    x = best.x.copy()
    sse = 2 * best.cost
    # the same unidentified-parameter convention as the Rust core: the most restricted model with
    # the same training objective (sse + ss_within, relative 1e-13)
    # restricted refits only where the Jacobian at the optimum is rank deficient (as in the Rust core)
    jac = np.asarray(best.jac, dtype=float)
    norms = np.linalg.norm(jac, axis=0)
    if np.any(norms <= 1e-12 * max(norms.max(), 1e-300)):
        deficient = True
    else:
        corr = (jac / norms).T @ (jac / norms)
        try:
            deficient = bool(np.min(np.diag(np.linalg.cholesky(corr))) ** 2 <= 1e-12)
        except np.linalg.LinAlgError:
            deficient = True
    fixed = np.zeros(len(free), dtype=bool)
    for j, i in enumerate(free):
        d = min(max(theta0[i], lower[j]), upper[j])
        if x[j] == d:
            fixed[j] = True
            continue
        t = x.copy()
        t[j] = d
        s2 = float(np.sum(resid(t) ** 2))
        movable = [a for a in range(len(free)) if a != j and not fixed[a]]
        if s2 > (sse + ss_within) * (1 + 1e-13) - ss_within and movable and deficient:
            def sub(v, t=t, movable=movable):
                u = t.copy()
                u[movable] = v
                return safe(u)
            res = solve(sub, x[movable], lower[movable], upper[movable])
            t[movable] = res.x
            s2 = 2 * res.cost
        if s2 <= (sse + ss_within) * (1 + 1e-13) - ss_within:
            x, sse = t, min(sse, s2)
            fixed[j] = True
    return full(x), sse / y.size if w is None else sse


def main():
    import argparse
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _harness import Run, add_common_args, interleave, loadavg, result_path, threads

    parser = argparse.ArgumentParser()
    add_common_args(parser)
    args = parser.parse_args()
    threads(args.threads or 1)  # ours with n_jobs=1 against SciPy's single-threaded least_squares
    rounds = args.rounds or (1 if args.quick else 3)
    run = Run("transfer_nls", quick=args.quick, python_packages=["scipy"],
              notes="per model: 44 per-domain fits; ours (Rust, n_jobs=1) vs scipy.optimize.least_squares per "
                    "domain (the peer) and on grouped lotteries (an extra line); interleaved rounds; "
                    "speedup = scipy / ours")
    ce = ds.load_certainty_equivalents()
    ce = ce.sort_values("domain_id", kind="stable")
    groups = [g for _, g in ce.groupby("domain_id")]
    models = {"EU": tr.EU(), "CPT g": tr.CPT("g"), "CPT ab": tr.CPT("ab"), "CPT dg": tr.CPT("dg"),
              "CPT abg": tr.CPT("abg"), "CPT abdg": tr.CPT("abdg")}
    z1, z2, p, y = (np.ascontiguousarray(ce[c].to_numpy(float)) for c in ("z1", "z2", "p1", "ce"))
    offsets = np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64)
    subsets = np.arange(len(groups), dtype=np.int64).reshape(-1, 1)
    rows = []
    for name, model in models.items():
        out = {}
        sides = {
            "ours": lambda: out.__setitem__("ours", model._fit_domains(z1, z2, p, y, offsets, subsets, n_jobs=1)),
            "scipy": lambda: out.__setitem__("ref", [scipy_fit(model, *(g[c].to_numpy(float) for c in
                                                                        ("z1", "z2", "p1", "ce"))) for g in groups]),
            "scipy_grouped_lotteries": lambda: out.__setitem__("ref_g", [scipy_fit(model, *grouped(g)) for g in groups]),
        }
        load = loadavg()
        timed = interleave(sides, rounds=rounds, warmup=0)
        run.add(f"{name}: {len(groups)} per-domain NLS fits", timed, peer_name="scipy", rounds=rounds,
                warmup="none (each round refits from scratch)", load_before=load, threads=1)
        ours, ref, ref_g = out["ours"], out["ref"], out["ref_g"]
        t_rust, t_scipy, t_scipy_g = (timed[k]["min_s"] for k in ("ours", "scipy", "scipy_grouped_lotteries"))
        theta_g = np.array([r[0] for r in ref_g])
        theta_ref = np.array([r[0] for r in ref])
        mse_ref = np.array([r[1] for r in ref])
        rel_mse = (ours["train_mse"] - mse_ref) / mse_ref
        dtheta = np.abs(ours["theta"] - theta_ref).max(axis=1)
        rows.append({
            "model": name, "fits": len(groups), "rust_s": t_rust, "scipy_s": t_scipy, "speedup": t_scipy / t_rust,
            "scipy_grouped_s": t_scipy_g, "speedup_vs_scipy_grouped": t_scipy_g / t_rust,
            "max_abs_param_diff_vs_scipy_grouped": float(np.abs(ours["theta"] - theta_g).max()),
            "max_rel_mse_diff": float(np.abs(rel_mse).max()),
            "rust_better_fits": int(np.sum(rel_mse < -1e-9)), "scipy_better_fits": int(np.sum(rel_mse > 1e-9)),
            "max_abs_param_diff": float(dtheta.max()),
            "fits_with_param_diff_over_1e-6": int(np.sum(dtheta > 1e-6)),
            "all_converged": bool(np.all(ours["converged"])),
        })

    tot_r = sum(r["rust_s"] for r in rows)
    tot_s = sum(r["scipy_s"] for r in rows)
    tot_g = sum(r["scipy_grouped_s"] for r in rows)
    payload = {
        "llmsurrogate": llmsurrogate.__version__, "scipy": scipy.__version__, "numpy": np.__version__,
        "threads": 1, "cpu_count": os.cpu_count(), "machine": platform.machine(),
        "python": platform.python_version(), "results": rows,
        "total": {"rust_s": tot_r, "scipy_s": tot_s, "speedup": tot_s / tot_r, "scipy_grouped_s": tot_g,
                  "speedup_vs_scipy_grouped": tot_g / tot_r},
    }
    run.extra.update(payload)
    out_path = run.write(result_path("transfer_nls", args.quick, args.out))
    print(f"{'model':10s} {'rust (s)':>9s} {'scipy (s)':>10s} {'speedup':>8s} {'scipy grp (s)':>13s} {'speedup':>8s} "
          f"{'max rel MSE diff':>17s} {'fits |dθ|>1e-6':>15s}")
    for r in rows:
        print(f"{r['model']:10s} {r['rust_s']:9.3f} {r['scipy_s']:10.3f} {r['speedup']:8.1f} {r['scipy_grouped_s']:13.3f} "
              f"{r['speedup_vs_scipy_grouped']:8.1f} {r['max_rel_mse_diff']:17.2e} {r['fits_with_param_diff_over_1e-6']:15d}")
    print(f"total: rust {tot_r:.2f} s, scipy {tot_s:.2f} s ({tot_s / tot_r:.1f}x), scipy on grouped lotteries "
          f"{tot_g:.2f} s ({tot_g / tot_r:.1f}x); wrote {out_path}")


if __name__ == "__main__":
    main()
