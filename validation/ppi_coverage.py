"""Coverage of the prediction-powered intervals (llmsurrogate.ppi; docs/methods/ppi.md §5).

Seven estimators, each with a known truth: the mean; the survey-weighted mean (a sample that
over-represents one stratum 4 to 1, with inverse-probability weights); the OLS slope of ``x``
(heteroskedastic errors); the logistic slope of ``x``; a fixed-effects slope (``ppi.feols``
with firm fixed effects and ``vcov={"CRV1": "firm"}``: a random slope per firm makes the errors
correlated within firms, labelled and unlabelled rows share the firms, five labelled rows per
firm); the survey-weighted OLS slope (the over-represented stratum has a steeper slope, so
the unweighted fit is biased: 2.45 against the population's 1.95); and the survey-weighted
logistic slope of ``x`` (the stratum as a regressor, sampled 4 to 1 with inverse-probability
weights). For each, three predictions: ``good`` (correlated with y), ``useless`` (independent
noise) and ``anti`` (anti-correlated). n = 50, 200, 1000 labelled rows and N = 10 n unlabelled.

Per replication the package is called three times (``method="ppi"``, ``"ppi++"``, and
``"ppi++"`` with ``small_sample=True``); the classical intervals are the ``classical_*`` columns
of the PPI++ results (z and small-sample). Recorded per cell and method: coverage of the
``level`` interval, its Monte Carlo s.e. at the nominal level, the mean width, the mean lambda,
failures (fits that do not exist: separated logistic samples, which are skipped).

    python validation/ppi_coverage.py [--reps 1000] [--feols-reps 200] [--jobs 2] [--quick]

Writes validation/results/ppi_coverage.json (not with --quick) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from llmsurrogate import ppi
from llmsurrogate.exceptions import InvalidArgumentError

OUT = Path(__file__).resolve().parent / "results" / "ppi_coverage.json"
LEVEL = 0.90
SEED = 20260536
ESTIMATORS = ("mean", "weighted_mean", "ols", "logistic", "feols", "weighted_ols",
              "weighted_logistic")   # new ones last: their cells' seeds follow the others'
QUALITIES = ("good", "useless", "anti")
NS = (50, 200, 1000)
METHODS = ("classical", "classical_small", "ppi", "ppi++", "ppi++_small")
TRUTH = {"mean": 1.0, "weighted_mean": 1.6, "ols": 2.0, "logistic": 1.0, "feols": 1.5, "weighted_ols": 1.95,
         "weighted_logistic": 1.0}


#: the population mean and s.d. of y per design (fixed numbers: a prediction must be the same
#: function of y in both samples, never of a sample's own statistics)
MOMENTS = {"mean": (1.0, 1.12), "weighted_mean": (1.6, 1.3), "ols": (1.0, 2.24), "feols": (0.0, 2.0),
           "weighted_ols": (1.3, 2.34)}


def _pred(rng, y, quality, estimator, scale=0.6):
    """A continuous prediction of y: correlated (with a constant bias), independent noise of y's
    spread, or anti-correlated."""
    mu, sd = MOMENTS[estimator]
    if quality == "good":
        return y + rng.normal(0, scale * sd, y.size) + 0.3 * sd
    if quality == "useless":
        return rng.normal(mu, sd, y.size)
    return -y + rng.normal(0, scale * sd, y.size)


def draw(estimator, quality, m, rng, firms=None):
    """m rows of the estimator's design: a dict of arrays (a frame for feols)."""
    if estimator == "mean":
        y = 1.0 + rng.standard_exponential(m) - 1.0 + rng.normal(0, 0.5, m)   # skewed, mean 1
        return {"y": y, "yhat": _pred(rng, y, quality, estimator)}
    if estimator == "weighted_mean":
        z = rng.random(m) < 0.3 * 4 / (0.3 * 4 + 0.7)        # stratum 1 over-represented 4 to 1
        y = 1.0 + 2.0 * z + rng.normal(0, 1, m)
        return {"y": y, "yhat": _pred(rng, y, quality, estimator), "w": np.where(z, 0.25, 1.0)}
    if estimator == "ols":
        x = rng.normal(size=m)
        y = 1.0 + 2.0 * x + rng.normal(size=m) * np.sqrt(0.5 + 0.5 * x * x)
        return {"X": np.column_stack([np.ones(m), x]), "y": y, "yhat": _pred(rng, y, quality, estimator)}
    if estimator == "weighted_ols":   # population: P(z) = 0.3, slope 1.5 + 1.5 z, so 1.95 overall
        z = rng.random(m) < 0.3 * 4 / (0.3 * 4 + 0.7)        # stratum 1 over-represented 4 to 1
        x = rng.normal(size=m)
        y = 1.0 + z + (1.5 + 1.5 * z) * x + rng.normal(size=m) * np.sqrt(0.5 + 0.5 * x * x)
        return {"X": np.column_stack([np.ones(m), x]), "y": y, "yhat": _pred(rng, y, quality, estimator),
                "w": np.where(z, 0.25, 1.0)}
    if estimator in ("logistic", "weighted_logistic"):
        x = rng.normal(size=m)
        # (the plain logistic cells draw no stratum: their random streams stay those of the committed results)
        z = rng.random(m) < 0.3 * 4 / (0.3 * 4 + 0.7) if estimator == "weighted_logistic" else np.zeros(m, bool)
        eta = -0.5 + 1.0 * x + 1.0 * z
        y = (rng.random(m) < expit(eta)).astype(float)
        if quality == "good":
            yhat = expit(0.7 * eta + 1.5 * (y - 0.5) + rng.normal(0, 1, m))
        elif quality == "useless":
            yhat = rng.random(m)
        else:
            yhat = expit(-0.7 * eta - 1.5 * (y - 0.5) + rng.normal(0, 1, m))
        if estimator == "logistic":
            return {"X": np.column_stack([np.ones(m), x]), "y": y, "yhat": yhat}
        return {"X": np.column_stack([np.ones(m), x, z]), "y": y, "yhat": yhat, "w": np.where(z, 0.25, 1.0)}
    # feols: firms fixed per replication (effects alpha, random slopes b, LLM biases c), rows spread evenly
    alpha, b, c = firms
    G = alpha.size
    firm = np.arange(m) % G
    x = rng.normal(size=m) + 0.5 * alpha[firm]
    y = alpha[firm] + (1.5 + b[firm]) * x + rng.normal(size=m)
    yhat = _pred(rng, y, quality, estimator) + (c[firm] if quality != "useless" else 0.0)
    return pd.DataFrame({"firm": firm, "x": x, "y": y, "llm_y": yhat})


def _fit(estimator, lab, unl, **kw):
    if estimator == "mean":
        return ppi.mean(lab["y"], lab["yhat"], unl["yhat"], level=LEVEL, **kw)
    if estimator == "weighted_mean":
        return ppi.mean(lab["y"], lab["yhat"], unl["yhat"], weights=lab["w"], weights_unlabeled=unl["w"],
                        level=LEVEL, **kw)
    if estimator in ("ols", "logistic", "weighted_ols", "weighted_logistic"):
        fn = ppi.logistic if estimator.endswith("logistic") else ppi.ols
        if kw.get("method", "ppi++") == "ppi++":
            kw["coord"] = 1
        if estimator.startswith("weighted"):
            kw.update(weights=lab["w"], weights_unlabeled=unl["w"])
        return fn(lab["X"], lab["y"], lab["yhat"], unl["X"], unl["yhat"], level=LEVEL, **kw)
    if kw.get("method", "ppi++") == "ppi++":
        kw["coord"] = "x"
    return ppi.feols("y ~ x | firm", lab, unl.drop(columns="y"), prediction="llm_y", vcov={"CRV1": "firm"},
                     level=LEVEL, **kw)


def _term(res):
    return 0 if res.estimand in ("mean", "feols") else 1


def run_cell(estimator, quality, n, reps, seed):
    """One cell: ``reps`` replications; returns one row per method."""
    rng = np.random.default_rng(seed)
    truth = TRUTH[estimator]
    N = 10 * n
    hits = {m: [] for m in METHODS}
    widths = {m: [] for m in METHODS}
    lams = {m: [] for m in METHODS}
    failures = 0
    t0 = time.time()
    for _ in range(reps):
        firms = None
        if estimator == "feols":
            G = n // 5
            firms = (rng.normal(0, 1, G), rng.normal(0, 0.7, G), rng.normal(0, 0.5, G))
        lab, unl = draw(estimator, quality, n, rng, firms), draw(estimator, quality, N, rng, firms)
        try:
            r_ppi = _fit(estimator, lab, unl, method="ppi")
            r_pp = _fit(estimator, lab, unl)
            r_small = _fit(estimator, lab, unl, small_sample=True)
        except InvalidArgumentError:
            failures += 1
            continue
        k = _term(r_pp)
        rows = r_pp.table.iloc[k], r_small.table.iloc[k]
        intervals = {
            "classical": (rows[0]["classical_ci_low"], rows[0]["classical_ci_high"], 0.0),
            "classical_small": (rows[1]["classical_ci_low"], rows[1]["classical_ci_high"], 0.0),
            "ppi": (r_ppi.table.iloc[k]["ci_low"], r_ppi.table.iloc[k]["ci_high"], 1.0),
            "ppi++": (rows[0]["ci_low"], rows[0]["ci_high"], rows[0]["lam"]),
            "ppi++_small": (rows[1]["ci_low"], rows[1]["ci_high"], rows[1]["lam"]),
        }
        for m, (lo, hi, lam) in intervals.items():
            hits[m].append(lo <= truth <= hi)
            widths[m].append(hi - lo)
            lams[m].append(lam)
    done = reps - failures
    mc_se = math.sqrt(LEVEL * (1 - LEVEL) / done) if done else float("nan")
    out = []
    for m in METHODS:
        cov = float(np.mean(hits[m])) if done else float("nan")
        out.append({"estimator": estimator, "prediction": quality, "n": n, "N": N, "method": m, "reps": done,
                    "failures": failures, "coverage": cov, "mc_se": mc_se,
                    "within_2se": bool(abs(cov - LEVEL) <= 2 * mc_se),
                    "mean_width": float(np.mean(widths[m])) if done else float("nan"),
                    "mean_lam": float(np.mean(lams[m])) if done else float("nan"),
                    "seconds": time.time() - t0})
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2, help="joblib workers (at most 2 on a shared machine)")
    parser.add_argument("--quick", action="store_true", help="at most 20 replications, n = 50 and 200, no JSON written")
    parser.add_argument("--estimators", default=",".join(ESTIMATORS))
    parser.add_argument("--merge", action="store_true",
                        help="keep the other estimators' rows of the existing JSON (their cells have their own seeds)")
    parser.add_argument("--feols-reps", type=int, default=None,
                        help="replications of the fixed-effects cells (default: --reps; each costs ~10x a mean's)")
    args = parser.parse_args()
    reps = min(args.reps, 20) if args.quick else args.reps
    ns = (50, 200) if args.quick else NS
    estimators = [e for e in args.estimators.split(",") if e]
    cells = [(e, q, n) for e in estimators for n in ns for q in QUALITIES]
    seeds = np.random.SeedSequence(SEED).spawn(len(ESTIMATORS) * len(NS) * len(QUALITIES))
    index = {(e, q, n): i for i, (e, n, q) in enumerate((e, n, q) for e in ESTIMATORS for n in NS
                                                        for q in QUALITIES)}
    t0 = time.time()
    feols_reps = reps if args.quick or args.feols_reps is None else args.feols_reps
    jobs = [(e, q, n, feols_reps if e == "feols" else reps, int(seeds[index[(e, q, n)]].generate_state(1)[0]))
            for e, q, n in cells]
    # the slow cells first, so that the two workers finish together
    jobs.sort(key=lambda j: -(j[2] * (20 if j[0] == "feols" else 3 if j[0].endswith("logistic") else 1)))
    if args.jobs > 1:
        from joblib import Parallel, delayed
        parts = Parallel(n_jobs=min(args.jobs, 2), verbose=0)(delayed(run_cell)(*j) for j in jobs)
    else:
        parts = [run_cell(*j) for j in jobs]
    rows = [r for part in parts for r in part]
    if args.merge and OUT.exists():
        old = json.loads(OUT.read_text())
        rows += [r for r in old["rows"] if r["estimator"] not in estimators]
    rows.sort(key=lambda r: (ESTIMATORS.index(r["estimator"]), r["n"], QUALITIES.index(r["prediction"]),
                             METHODS.index(r["method"])))
    big = [r for r in rows if r["n"] >= 200]
    out = {"level": LEVEL, "reps": reps, "feols_reps": feols_reps, "seed": SEED, "N_over_n": 10, "seconds": time.time() - t0,
           "criterion": "coverage within 2 Monte Carlo s.e. (at the nominal level) of nominal for n >= 200",
           "n_ge_200_within_2se": sum(r["within_2se"] for r in big), "n_ge_200_cells": len(big), "rows": rows}
    if not args.quick:
        OUT.parent.mkdir(exist_ok=True)
        OUT.write_text(json.dumps(out, indent=1))
    print(f"{'estimator':>14} {'pred':>8} {'n':>5} " + " ".join(f"{m:>15}" for m in METHODS) + "   lam++")
    for key in dict.fromkeys((r["estimator"], r["prediction"], r["n"]) for r in rows):
        cell = {r["method"]: r for r in rows if (r["estimator"], r["prediction"], r["n"]) == key}
        print(f"{key[0]:>14} {key[1]:>8} {key[2]:>5} "
              + " ".join(f"{cell[m]['coverage']:>8.3f} ({cell[m]['mean_width']:.3f})"[:15].rjust(15) for m in METHODS)
              + f"   {cell['ppi++']['mean_lam']:.2f}")
    print(f"n >= 200: {out['n_ge_200_within_2se']} of {out['n_ge_200_cells']} within 2 MC s.e.; "
          f"{out['seconds']:.0f} s")


if __name__ == "__main__":
    main()
