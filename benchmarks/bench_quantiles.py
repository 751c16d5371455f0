"""Quantile kernels vs NumPy (the peer), timed in the same process with benchmarks/_harness.py
(warm-up, interleaved rounds, min and median, load), both on one thread unless --threads.

Writes ``benchmarks/results/quantiles.json`` (--quick: benchmarks/quick/) and prints each case. Ratios
are numpy time / our time (higher is better). Results agree exactly (asserted) before anything is
timed.

    python benchmarks/bench_quantiles.py [--quick] [--rounds 9] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import threads  # noqa: E402

if "--threads" not in sys.argv:  # before numpy and llmsurrogate read the thread variables
    threads(1)

import numpy as np  # noqa: E402

import llmsurrogate  # noqa: E402
from llmsurrogate import quantiles as q  # noqa: E402


def numpy_weighted_upper(v, w, taus):
    order = np.argsort(v, kind="stable")
    c = np.cumsum(w[order])
    idx = np.searchsorted(c, (taus - 1e-12) * c[-1], side="left")
    return v[order][np.minimum(idx, v.size - 1)]


def main():
    from _harness import Run, add_common_args, result_path, threads

    parser = argparse.ArgumentParser()
    add_common_args(parser)
    parser.add_argument("--repeat", type=int, default=None, help="alias of --rounds")
    args = parser.parse_args()
    n_threads = threads(args.threads or 1)  # NumPy's sort is single-threaded: ours on the same 1 thread
    rounds = args.rounds or args.repeat or (5 if args.quick else 9)
    run = Run("quantiles", quick=args.quick,
              notes=f"speedup = numpy / ours; both on {n_threads} thread(s) "
                    f"(llmsurrogate.num_threads() = {llmsurrogate.num_threads()})")
    rng = np.random.default_rng(0)
    off_grid = np.array([0.050001, 0.950001, 0.987654])   # away from integer tau*N (numpy has no level fuzz)
    many = np.linspace(0.2, 0.8, 61) + 1.234e-7
    for n in ((1_892, 100_000) if args.quick else (1_892, 100_000, 1_000_000)):
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
            inner = 20 if n < 10_000 else 1
            run.compare(f"{name}, n = {n:,}", ours, base, peer_name="numpy", rounds=rounds, inner=inner,
                        n=n, threads_note=f"{n_threads} both")
    run.write(result_path("quantiles", args.quick, args.out))


if __name__ == "__main__":
    main()
