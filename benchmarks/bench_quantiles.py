"""Quantile kernels vs NumPy baselines, timed in the same process.

Writes ``benchmarks/results/quantiles.json`` and prints a table. Ratios are baseline time / our
time (higher is better). Results agree exactly (asserted) before anything is timed.

    python benchmarks/bench_quantiles.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import llmsurrogate
from llmsurrogate import quantiles as q

OUT = Path(__file__).resolve().parent / "results" / "quantiles.json"


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def numpy_weighted_upper(v, w, taus):
    order = np.argsort(v, kind="stable")
    c = np.cumsum(w[order])
    idx = np.searchsorted(c, (taus - 1e-12) * c[-1], side="left")
    return v[order][np.minimum(idx, v.size - 1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    off_grid = np.array([0.050001, 0.950001, 0.987654])   # away from integer tau*N (numpy has no level fuzz)
    many = np.linspace(0.2, 0.8, 61) + 1.234e-7
    for n in (1_892, 100_000, 1_000_000):
        v = rng.lognormal(1.0, 1.0, n)
        w = rng.uniform(0.1, 2.0, n)
        cases = {
            "upper quantile, 3 levels": (lambda: q.upper_quantile(v, off_grid),
                                         lambda: np.quantile(v, off_grid, method="inverted_cdf")),
            "upper quantile, 61 levels": (lambda: q.upper_quantile(v, many),
                                          lambda: np.quantile(v, many, method="inverted_cdf")),
            "weighted upper quantile, 61 levels": (lambda: q.weighted_upper_quantile(v, w, many),
                                                   lambda: numpy_weighted_upper(v, w, many)),
        }
        for name, (ours, base) in cases.items():
            np.testing.assert_array_equal(ours(), base())
            t_ours, t_base = best_time(ours, args.repeat), best_time(base, args.repeat)
            rows.append({"case": name, "n": n, "llmsurrogate_s": t_ours, "numpy_s": t_base,
                         "speedup": t_base / t_ours})
    payload = {
        "llmsurrogate": llmsurrogate.__version__, "numpy": np.__version__, "threads": llmsurrogate.num_threads(),
        "cpu_count": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version(),
        "results": rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(payload, indent=2))
    print(f"{'case':38s} {'n':>9s} {'ours (ms)':>10s} {'numpy (ms)':>11s} {'speedup':>8s}")
    for r in rows:
        print(f"{r['case']:38s} {r['n']:9d} {1e3 * r['llmsurrogate_s']:10.3f} {1e3 * r['numpy_s']:11.3f} {r['speedup']:8.2f}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
