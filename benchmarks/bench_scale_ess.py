"""ESS at the default ``n_jobs`` against ``n_jobs=1``: time and peak resident memory (issue 37, item 5).

Each run is a fresh process (so that a pool's start and its workers' memory count, as in a user's
first call) that calls ``ess.equivalent_sample_size`` once while a thread samples the resident set
(``VmRSS``) of the process and of the whole process tree (the workers included) every 50 ms. The
two settings alternate, the one that goes first rotating from round to round; a case's numbers are
checked to be the same bits under both (a hash of the result table).

Cases: scikit-learn learners whose fits are small (many blocks, milliseconds a fit: the lasso and
the L1 logit with per-size tuning, a LinearRegression, a depth-3 tree), learners whose fits are
large (random forests of 300 trees on a few hundred rows), and the issue's own case, the block
mean at n = 10^5 with N = 10 and n = 10^6 with N = 100 (10^9 and 10^10 predictions; ``--full`` adds 10^6).

Compare two trees of the package by running this file with each on ``PYTHONPATH`` (the record names
the code imported)::

    python benchmarks/bench_scale_ess.py --full
    PYTHONPATH=/tmp/old/python python benchmarks/bench_scale_ess.py --out /tmp/old.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _harness import code_label, loadavg, result_path, stamp  # noqa: E402

#: label, algorithm, n, features, grid (None: the default), tuning
CASES = [
    ("lasso, small fits", "lasso", 5_000, 5, None, "per_n_subset"),
    ("L1 logit, small fits", "logit_l1", 3_000, 5, None, "per_n_subset"),
    ("LinearRegression, small fits", "linreg", 10_000, 5, [10, 100], "none"),
    ("depth-3 tree, small fits", "tree", 5_000, 5, None, "none"),
    ("random forest (300 trees), large fits", "rf", 2_000, 5, [200, 500], "none"),
    ("block mean, the issue's case", "mean", 100_000, 2, [10], "none"),
]
FULL_CASES = [("block mean, the issue's case", "mean", 1_000_000, 2, [100], "none")]


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss_kb(pid: int) -> int:
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += _rss_kb(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                try:
                    stack += [int(c) for c in Path(f"/proc/{p}/task/{tid}/children").read_text().split()]
                except OSError:
                    pass
        except OSError:
            pass
    return total


def child(spec: dict) -> dict:
    """One ESS in this process: seconds, peak RSS (process, process tree) and the table's hash."""
    import numpy as np
    import pandas as pd

    import llmsurrogate
    from llmsurrogate import ess

    n, d, algo = spec["n"], spec["d"], spec["algo"]
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    lin = X @ np.linspace(1, 0.2, d)
    classifier = algo == "logit_l1"
    if classifier:
        y = (lin + rng.logistic(size=n) > 0).astype(float)
        llm = np.clip(1 / (1 + np.exp(-lin)) + rng.normal(0, 0.1, n), 0.01, 0.99)
    else:
        y = lin + rng.normal(size=n)
        llm = lin + rng.normal(0, 1.2, n)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])
    df["y"], df["llm"] = y, llm
    algorithm, options = algo, None
    if algo == "linreg":
        from sklearn.linear_model import LinearRegression
        algorithm = LinearRegression()
    elif algo == "tree":
        from sklearn.tree import DecisionTreeRegressor
        algorithm = DecisionTreeRegressor(max_depth=3)
    elif algo == "rf":
        options = {"n_estimators": 300}
    peak = {"self": 0, "tree": 0}
    stop = threading.Event()

    def sample():
        me = os.getpid()
        while not stop.is_set():
            peak["self"] = max(peak["self"], _rss_kb(me))
            peak["tree"] = max(peak["tree"], _tree_rss_kb(me))
            stop.wait(0.05)

    before = _rss_kb(os.getpid())
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm=algorithm, grid=spec["grid"],
                                     loss="brier" if classifier else "squared", seed=0, n_jobs=spec["n_jobs"],
                                     tuning=spec["tuning"], algorithm_options=options, progress=False)
    seconds = time.perf_counter() - t0
    stop.set()
    sampler.join()
    numbers = np.ascontiguousarray(res.table.select_dtypes("number").to_numpy(dtype=np.float64))
    return {"seconds": seconds, "rss_mb_before": before / 1024, "rss_mb_peak": peak["self"] / 1024,
            "rss_mb_peak_with_workers": peak["tree"] / 1024, "table_sha256": hashlib.sha256(numbers.tobytes()).hexdigest(),
            "code": code_label(llmsurrogate.__file__)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="add the block mean at n = 10^6")
    ap.add_argument("--only-full", action="store_true", help="the n = 10^6 case only")
    ap.add_argument("--rounds", type=int, default=1, help="rounds per case (each runs both settings)")
    ap.add_argument("--quick", action="store_true", help="the two cheapest cases; writes quick/ (git-ignored)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return
    load = loadavg()
    cases = FULL_CASES if a.only_full else CASES + (FULL_CASES if a.full else [])
    if a.quick:
        cases = [CASES[0], CASES[-1]]
    rows = []
    for label, algo, n, d, grid, tuning in cases:
        runs = {"default": [], "1": []}
        for r in range(a.rounds):
            order = ["default", "1"] if r % 2 == 0 else ["1", "default"]
            for side in order:
                spec = {"algo": algo, "n": n, "d": d, "grid": grid, "tuning": tuning,
                        "n_jobs": None if side == "default" else 1}
                out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                                     text=True, check=True)
                res = json.loads(out.stdout.strip().splitlines()[-1])
                res["load"] = loadavg()
                runs[side].append(res)
                print(f"{label:40s} n={n:>9,} n_jobs={side:7s} {res['seconds']:8.2f} s  peak "
                      f"{res['rss_mb_peak']:7.0f} MB (with workers {res['rss_mb_peak_with_workers']:7.0f} MB)",
                      flush=True)
        hashes = {r["table_sha256"] for rs in runs.values() for r in rs}
        if len(hashes) != 1:
            raise SystemExit(f"{label}: the default n_jobs and n_jobs=1 gave different numbers")
        best = {side: min(r["seconds"] for r in rs) for side, rs in runs.items()}
        rows.append({"case": label, "algorithm": algo, "n": n, "features": d, "grid": grid or "default",
                     "tuning": tuning, "runs": runs, "min_s": best,
                     "default_over_one_job": best["default"] / best["1"], "table_sha256": hashes.pop()})
    import llmsurrogate

    result = {"benchmark": "scale_ess", "code": code_label(llmsurrogate.__file__), "rounds": a.rounds,
              "measured_as": "a fresh process per run; peak VmRSS of the process and of its tree (workers "
                             "included) sampled every 50 ms; seconds of the equivalent_sample_size call",
              "cases": rows, **stamp(load, ["scikit-learn", "joblib"])}
    out = result_path("scale_ess", a.quick, a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
