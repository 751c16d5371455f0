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

Writes ``benchmarks/results/scale_build.json`` (``--quick``: 60 domains, ``benchmarks/quick/``).

    python benchmarks/bench_scale_build.py [--domains 500] [--old /tmp/oldbuild/python] [--quick]
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


def _child(code: str, args: list, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    add_common_args(parser)
    parser.add_argument("--domains", type=int, default=None, help="domains of the EU r = 2 build (default 500)")
    parser.add_argument("--rows", type=int, default=12, help="lotteries per domain")
    parser.add_argument("--old", default=None, help="PYTHONPATH of the package before the change (optional)")
    parser.add_argument("--parquet", action="store_true", help="also write the table to Parquet")
    parser.add_argument("--sk-domains", type=int, default=200)
    parser.add_argument("--skip-sklearn", action="store_true")
    args = parser.parse_args()
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
