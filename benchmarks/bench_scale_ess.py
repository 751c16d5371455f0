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

``--backends``: the scikit-learn cases (not the block mean, which never leaves this process) under
four settings: ``n_jobs=1``, the default ``n_jobs``, and the default on a Dask ``LocalCluster`` (2
worker processes x 1 thread, ``joblib.parallel_config(backend="dask")`` with a ``distributed.Client``)
and on a local Ray instance (``ray.init(num_cpus=2)``, ``register_ray()``), as a user selects them.
The cluster starts before the timed call (its start recorded apart) and the call is its first use;
``chunks_sent`` counts the chunks handed to joblib (the rest ran in this process). Writes
``results/scale_ess_backends.json``.

Compare two trees of the package by running this file with each on ``PYTHONPATH`` (the record names
the code imported)::

    python benchmarks/bench_scale_ess.py --full
    python benchmarks/bench_scale_ess.py --backends --rounds 2
    PYTHONPATH=/tmp/old/python python benchmarks/bench_scale_ess.py --out /tmp/old.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import statistics
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
#: ``--backends`` only: fits of a second or more, where a cluster of 2 workers should pay
BACKEND_CASES = [("random forest (300 trees), costly fits", "rf", 10_000, 5, [1000, 2000], "none")]


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
    start_s, stop_cluster, config = None, (lambda: None), contextlib.nullcontext()
    if spec.get("backend"):
        t0 = time.perf_counter()
        stop_cluster, config = _start_cluster(spec["backend"])
        start_s = time.perf_counter() - t0
    sent = _count_sent()
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
    with config:
        res = ess.equivalent_sample_size(df, "y", "llm", algorithm=algorithm, grid=spec["grid"],
                                         loss="brier" if classifier else "squared", seed=0, n_jobs=spec["n_jobs"],
                                         tuning=spec["tuning"], algorithm_options=options, progress=False)
    seconds = time.perf_counter() - t0
    stop.set()
    sampler.join()
    stop_cluster()
    numbers = np.ascontiguousarray(res.table.select_dtypes("number").to_numpy(dtype=np.float64))
    return {"seconds": seconds, "rss_mb_before": before / 1024, "rss_mb_peak": peak["self"] / 1024,
            "rss_mb_peak_with_workers": peak["tree"] / 1024, "table_sha256": hashlib.sha256(numbers.tobytes()).hexdigest(),
            "code": code_label(llmsurrogate.__file__), "cluster_start_s": start_s, "chunks_sent": sent[0]}


def _start_cluster(name: str):
    """A Dask ``LocalCluster`` (2 worker processes x 1 thread) or a local Ray instance (2 CPUs), both
    workers up: a function that stops it, and the joblib context a user selects it with."""
    import logging
    import warnings

    import joblib

    if name == "dask":
        import distributed

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                               dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
            client.wait_for_workers(2)

        def stop():
            client.close()
            cluster.close()
    else:
        import ray
        from ray.util.joblib import register_ray

        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False,
                 logging_level=logging.ERROR)
        register_ray()
        stop = ray.shutdown
    return stop, joblib.parallel_config(backend=name)


def _count_sent() -> list:
    """A one-item list counting the chunks ``run_tasks`` hands to joblib (``_engine._in_order``)."""
    from llmsurrogate.ess import _engine

    sent = [0]
    inner = getattr(_engine, "_in_order", None)
    if inner is None:
        return [None]

    def counting(tasks, *args, **kwargs):
        def each():
            for task in tasks:
                sent[0] += 1
                yield task
        return inner(each(), *args, **kwargs)

    _engine._in_order = counting
    return sent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="add the block mean at n = 10^6")
    ap.add_argument("--only-full", action="store_true", help="the n = 10^6 case only")
    ap.add_argument("--rounds", type=int, default=1, help="rounds per case (each runs both settings)")
    ap.add_argument("--quick", action="store_true", help="the two cheapest cases; writes quick/ (git-ignored)")
    ap.add_argument("--backends", action="store_true",
                    help="the scikit-learn cases on n_jobs=1, the default, Dask and Ray (scale_ess_backends.json)")
    ap.add_argument("--only-costly", action="store_true", help=argparse.SUPPRESS)
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
    sides = ["default", "1"]
    if a.backends:
        cases = [c for c in cases if c[1] != "mean"] + BACKEND_CASES
        if a.only_costly:
            cases = BACKEND_CASES
        sides += ["dask", "ray"]
    rows = []
    for label, algo, n, d, grid, tuning in cases:
        runs = {side: [] for side in sides}
        for r in range(a.rounds):
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            for side in order:
                spec = {"algo": algo, "n": n, "d": d, "grid": grid, "tuning": tuning,
                        "n_jobs": 1 if side == "1" else None, "backend": side if side in ("dask", "ray") else None}
                out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                                     text=True, check=True)
                res = json.loads(out.stdout.strip().splitlines()[-1])
                res["load"] = loadavg()
                runs[side].append(res)
                sent = "" if res["chunks_sent"] is None else f"  {res['chunks_sent']} chunks sent"
                print(f"{label:40s} n={n:>9,} n_jobs={side:7s} {res['seconds']:8.2f} s  peak "
                      f"{res['rss_mb_peak']:7.0f} MB (with workers {res['rss_mb_peak_with_workers']:7.0f} MB){sent}",
                      flush=True)
        hashes = {r["table_sha256"] for rs in runs.values() for r in rs}
        if len(hashes) != 1:
            raise SystemExit(f"{label}: the settings {sides} gave different numbers")
        best = {side: min(r["seconds"] for r in rs) for side, rs in runs.items()}
        median = {side: statistics.median(r["seconds"] for r in rs) for side, rs in runs.items()}
        rows.append({"case": label, "algorithm": algo, "n": n, "features": d, "grid": grid or "default",
                     "tuning": tuning, "runs": runs, "min_s": best, "median_s": median,
                     "default_over_one_job": best["default"] / best["1"], "table_sha256": hashes.pop()})
    import llmsurrogate

    name = "scale_ess_backends" if a.backends else "scale_ess"
    result = {"benchmark": name, "code": code_label(llmsurrogate.__file__), "rounds": a.rounds,
              "measured_as": "a fresh process per run; peak VmRSS of the process and of its tree (workers "
                             "included) sampled every 50 ms; seconds of the equivalent_sample_size call"
                             + ("; the cluster started before it (cluster_start_s), the call its first use"
                                if a.backends else ""),
              "cases": rows, **stamp(load, ["scikit-learn", "joblib"] + (["dask", "distributed", "ray"]
                                                                         if a.backends else []))}
    out = result_path(name, a.quick, a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
