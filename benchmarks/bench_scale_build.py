"""Transfer-table builds at scale (issue 37, item 3): memory per error and time of the r = 2 build,
and the default ``n_jobs`` against ``n_jobs=1`` for scikit-learn models.

* **EU, r = 2, every training set** on ``--domains`` synthetic domains (``--rows`` lotteries
  each): wall time and peak RSS (VmHWM, in a fresh process per side, read after the build; the
  process's RSS before the build is subtracted) per error, ours against the code at ``--old``
  (a checkout of the package before the change, e.g. ``git archive <rev> python``), and a SHA-256
  of the two tables (values, test, train, domains) that must agree. ``--parquet`` also writes the
  table as ``transfer build`` does (row groups against the whole long frame).
* **scikit-learn, r = 1**: ``LinearRegression`` (cheap fits) and a 20-tree random forest
  (costly) on ``--sk-domains`` domains, default ``n_jobs`` against ``n_jobs=1``, each side's
  first call in a fresh process and a warm second call, ours and the old code.

* **Backends** (``--backends``): ``error_table`` of scikit-learn models with ``n_jobs=1``, the default
  ``n_jobs``, a Dask ``LocalCluster`` (2 worker processes x 1 thread) and a local Ray instance (2
  CPUs), the last two as a user selects them: ``joblib.parallel_config(backend="dask")`` with a
  ``distributed.Client``, ``joblib.parallel_config(backend="ray")`` after ``register_ray()``. A cheap
  model (``LinearRegression``, ``--lr-domains`` domains, r = 1) and a costly one (a random forest of
  ``--rf-trees`` trees, ``--rf-domains`` domains of ``--rf-rows`` rows, r = 1). Each configuration
  runs in a fresh process, rounds interleaved (the configuration that goes first rotates); the
  cluster's start-up (``LocalCluster`` + ``Client`` with both workers up; ``ray.init``) is timed
  apart from the builds, and two builds follow it: the first on the fresh cluster (its workers
  import scikit-learn and this package then; the default ``n_jobs``: loky's pool starts if used) and
  a second one, what a user whose cluster already runs pays. A SHA-256 of each table's values must
  be the same in every configuration. Writes ``results/scale_build_backends.json``
  (``results/scale_build_backends_before.json``: the same run before a shipped task confined the
  model's own joblib calls, when Dask's forest tables differed from build to build).

Writes ``benchmarks/results/scale_build.json`` (``--quick``: 60 domains, ``benchmarks/quick/``).

    python benchmarks/bench_scale_build.py [--domains 500] [--old /tmp/oldbuild/python] [--quick]
    python benchmarks/bench_scale_build.py --backends [--rounds 2] [--rf-trees 300] [--rf-domains 60]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _harness import Run, add_common_args, loadavg, result_path  # noqa: E402

_DATA = '''
import numpy as np, pandas as pd
def data(n, m, seed=1):
    rng = np.random.default_rng(seed)
    z1 = rng.choice([10.0, 20.0, 50.0], size=(n, m)); z2 = z1 * rng.choice([0.0, 0.2, 0.5], size=(n, m))
    p = rng.choice([0.05, 0.25, 0.5, 0.75, 0.95], size=(n, m))
    ce = p * z1 + (1 - p) * z2 + rng.normal(0, 1 + 0.01 * np.arange(n)[:, None], size=(n, m))
    return pd.DataFrame({"domain": np.repeat([f"D{d:04d}" for d in range(n)], m), "z1": z1.ravel(),
                         "z2": z2.ravel(), "p1": p.ravel(), "ce": ce.ravel()})
def rss(field="VmRSS"):
    return int([l for l in open("/proc/self/status") if l.startswith(field)][0].split()[1]) * 1024
'''

_BUILD = _DATA + '''
import hashlib, json, sys, time
from llmsurrogate import transfer as tr
n, m, parquet, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
df = data(n, m)
tr.error_table(data(5, m), tr.EU(), r=2, progress=False)
open("/proc/self/clear_refs", "w").write("5")  # VmHWM := VmRSS
before = rss()
t0 = time.perf_counter()
t = tr.error_table(df, tr.EU(), r=2, progress=False)
build_s = time.perf_counter() - t0
peak_build = rss("VmHWM")
h = hashlib.sha256()
for a in (t.values, t.test, t.train):
    h.update(a.dtype.str.encode()); h.update(repr(a.shape).encode()); h.update(a.tobytes())
h.update(repr(t.domains).encode())
res = {"N": t.N, "build_s": build_s, "rss_before": before, "peak_build": peak_build, "sha256": h.hexdigest()}
if parquet:
    open("/proc/self/clear_refs", "w").write("5")
    before_w = rss()
    t0 = time.perf_counter()
    try:
        from llmsurrogate.transfer._build import write_tidy
        write_tidy(t, out)
    except ImportError:
        from llmsurrogate._atomic import write_frame
        write_frame(out, t.tidy())
    res.update(write_s=time.perf_counter() - t0, rss_before_write=before_w, peak_write=rss("VmHWM"))
print(json.dumps(res))
'''

_SKLEARN = _DATA + '''
import json, sys, time
from llmsurrogate import transfer as tr
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression
n, model, n_jobs = int(sys.argv[1]), sys.argv[2], None if sys.argv[3] == "None" else int(sys.argv[3])
df = data(n, 12)
make = {"lr": LinearRegression, "rf": lambda: RandomForestRegressor(n_estimators=20, random_state=0)}[model]
times = []
for _ in range(2):
    t0 = time.perf_counter()
    t = tr.error_table(df, make(), n_jobs=n_jobs, progress=False)
    times.append(time.perf_counter() - t0)
print(json.dumps({"first_s": times[0], "warm_s": times[1], "sum": float(t.values.sum())}))
'''


_BACKEND = _DATA + '''
import contextlib, hashlib, json, logging, os, sys, time, warnings
config, model, n, m, trees = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
import joblib
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression
from llmsurrogate import transfer as tr
from llmsurrogate.transfer import _build
df = data(n, m)
make = {"lr": LinearRegression, "rf": lambda: RandomForestRegressor(n_estimators=trees, random_state=0)}[model]
n_jobs, start_s, stop = (1 if config == "n_jobs=1" else None), None, lambda: None
backend = None
if config == "dask":
    import dask, distributed
    t0 = time.perf_counter()
    with warnings.catch_warnings(), dask.config.set({"distributed.comm.timeouts.connect": "180s"}):
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.ERROR)
        client = distributed.Client(cluster)
        client.wait_for_workers(2)
    start_s = time.perf_counter() - t0
    assert len(set(client.run(os.getpid).values()) - {os.getpid()}) == 2
    backend = "dask"
    def stop():
        client.close(); cluster.close()
elif config == "ray":
    import ray
    from ray.util.joblib import register_ray
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False,
             logging_level=logging.ERROR)
    register_ray()
    start_s = time.perf_counter() - t0
    backend = "ray"
    stop = ray.shutdown
# where the fits ran: the fits of every task handed to joblib (the rest ran in this process)
shipped = []
def counting_delayed(f):
    inner = joblib.delayed(f)
    def make_task(*a, **k):
        shipped.append(len(a[-1]))
        return inner(*a, **k)
    return make_task
_build.delayed = counting_delayed
builds, hashes, task_counts = [], [], []
for _ in range(2):
    shipped.clear()
    ctx = joblib.parallel_config(backend=backend) if backend else contextlib.nullcontext()
    with ctx:
        t0 = time.perf_counter()
        t = tr.error_table(df, make(), n_jobs=n_jobs, progress=False)
        builds.append(time.perf_counter() - t0)
    hashes.append(hashlib.sha256(t.values.tobytes()).hexdigest())
    task_counts.append(list(shipped))
t0 = time.perf_counter()
stop()
res = {"config": config, "model": model, "start_s": start_s, "first_build_s": builds[0], "warm_build_s": builds[1],
       "stop_s": time.perf_counter() - t0, "sha256": hashes, "fits": n,
       "fits_per_task": task_counts}
print(json.dumps(res))
'''


def _child(code: str, args: list, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def backends(args) -> None:
    """``--backends``: one build configuration per fresh process, rounds interleaved."""
    import importlib.util
    import statistics

    from _harness import summarize

    configs = ["n_jobs=1", "default"]
    skipped = {}
    for name, module in (("dask", "distributed"), ("ray", "ray")):
        if importlib.util.find_spec(module) is None:
            skipped[name] = f"{module} is not installed"
        else:
            configs.append(name)
    rounds = args.rounds or (1 if args.quick else 2)
    cases = {"lr": (args.lr_domains, 12, 0), "rf": (args.rf_domains, args.rf_rows, args.rf_trees)}
    run = Run("scale_build_backends", quick=args.quick,
              python_packages=["scikit-learn", "joblib", "dask", "distributed", "ray"],
              notes=f"transfer.error_table, r = 1: LinearRegression on {cases['lr'][0]} domains of 12 rows; "
                    f"RandomForestRegressor({args.rf_trees} trees, random_state=0) on {cases['rf'][0]} domains "
                    f"of {cases['rf'][1]} rows. Configurations: n_jobs=1, the default n_jobs, Dask LocalCluster "
                    "(processes, 2 workers x 1 thread, joblib.parallel_config(backend='dask')), Ray (ray.init("
                    "num_cpus=2), register_ray, joblib.parallel_config(backend='ray')); each in a fresh process, "
                    f"{rounds} interleaved rounds; start_s: the cluster's start, apart from the builds; first_build_s: "
                    "the first build after it; warm_build_s: a second build (a cluster already running).")
    raw: dict = {}
    for model, (n, m, trees) in cases.items():
        runs: dict = {c: [] for c in configs}
        load = loadavg()
        for r in range(rounds):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for config in order:
                before = loadavg()
                try:
                    res = _child(_BACKEND, [config, model, n, m, trees], None)
                except subprocess.CalledProcessError as e:
                    skipped[config] = (e.stderr or "")[-2000:]
                    print(model, config, "failed:", skipped[config][-500:], flush=True)
                    continue
                res["load_before"], res["load_after"] = before, loadavg()
                runs[config].append(res)
                print(model, config, json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in res.items()
                                                 if k not in ("sha256", "fits_per_task")}), flush=True)
        runs = {c: v for c, v in runs.items() if v}
        sides = {}
        for config, rs in runs.items():
            side = {"first_build": summarize([x["first_build_s"] for x in rs]),
                    "warm_build": summarize([x["warm_build_s"] for x in rs])}
            side.update(min_s=side["warm_build"]["min_s"], median_s=side["warm_build"]["median_s"],
                        rounds_s=side["warm_build"]["rounds_s"])
            if rs[0]["start_s"] is not None:
                side["start"] = summarize([x["start_s"] for x in rs])
                side["start_plus_first_build_median_s"] = statistics.median(x["start_s"] + x["first_build_s"]
                                                                            for x in rs)
            side["load"] = [[x["load_before"], x["load_after"]] for x in rs]
            # per build: joblib tasks and the fits they carried (the rest ran in the calling process)
            side["tasks_per_build"] = [[[len(b), sum(b)] for b in x["fits_per_task"]] for x in rs]
            sides[config] = side
        hashes = {h for rs in runs.values() for x in rs for h in x["sha256"]}
        run.add(f"{model}: warm build (n_jobs=1 as 'ours')", {("ours" if c == "n_jobs=1" else c): v
                                                              for c, v in sides.items()},
                load_before=load, domains=n, rows_per_domain=m, trees=trees or None, same_table=len(hashes) == 1,
                sha256=sorted(hashes))
        raw[model] = runs
        if len(hashes) != 1:
            print(f"{model}: TABLES DIFFER across configurations: {sorted(hashes)}", flush=True)
    run.extra = {"runs": raw, "skipped": skipped, "rounds": rounds}
    run.write(result_path("scale_build_backends", args.quick, args.out))


def main():
    parser = argparse.ArgumentParser()
    add_common_args(parser)
    parser.add_argument("--domains", type=int, default=None, help="domains of the EU r = 2 build (default 500)")
    parser.add_argument("--rows", type=int, default=12, help="lotteries per domain")
    parser.add_argument("--old", default=None, help="PYTHONPATH of the package before the change (optional)")
    parser.add_argument("--parquet", action="store_true", help="also write the table to Parquet")
    parser.add_argument("--sk-domains", type=int, default=200)
    parser.add_argument("--skip-sklearn", action="store_true")
    parser.add_argument("--backends", action="store_true",
                        help="n_jobs=1 / default / Dask / Ray builds instead (results/scale_build_backends.json)")
    parser.add_argument("--lr-domains", type=int, default=200)
    parser.add_argument("--rf-domains", type=int, default=60)
    parser.add_argument("--rf-rows", type=int, default=12)
    parser.add_argument("--rf-trees", type=int, default=300)
    args = parser.parse_args()
    if args.backends:
        backends(args)
        return
    n = args.domains or (60 if args.quick else 500)
    run = Run("scale_build", quick=args.quick, python_packages=["scikit-learn", "joblib", "pyarrow"],
              notes=f"EU r = 2, every training set, {n} synthetic domains of {args.rows} lotteries; peak RSS "
                    "(VmHWM after clearing it, minus RSS before the build) per error in a fresh process per side; "
                    f"scikit-learn r = 1 on {args.sk_domains} domains, default n_jobs vs n_jobs=1, first call in a "
                    "fresh process and a warm second call.")
    results: dict = {"domains": n, "rows_per_domain": args.rows, "load_before": loadavg(), "build": {},
                     "sklearn": {}}
    sides = [("ours", None)] + ([("old", args.old)] if args.old else [])
    out_file = Path("/tmp") / f"scale_build_{os.getpid()}.parquet"
    for label, path in sides:
        res = _child(_BUILD, [n, args.rows, int(args.parquet), out_file], path)
        res["build_bytes_per_error"] = (res["peak_build"] - res["rss_before"]) / res["N"]
        if args.parquet:
            res["write_bytes_per_error"] = (res["peak_write"] - res["rss_before_write"]) / res["N"]
        results["build"][label] = res
        print(label, json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in res.items()}),
              flush=True)
    if args.old:
        results["build"]["same_table"] = results["build"]["ours"]["sha256"] == results["build"]["old"]["sha256"]
    out_file.unlink(missing_ok=True)
    if not args.skip_sklearn:
        for model in ("lr", "rf"):
            for label, path in sides:
                for n_jobs in ("None", "1"):
                    res = _child(_SKLEARN, [args.sk_domains, model, n_jobs], path)
                    results["sklearn"][f"{model} {label} n_jobs={n_jobs}"] = res
                    print(model, label, n_jobs, res, flush=True)
    results["load_after"] = loadavg()
    results["when"] = time.strftime("%Y-%m-%d %H:%M:%S")
    run.extra = results
    run.write(result_path("scale_build", args.quick, args.out))


if __name__ == "__main__":
    main()
