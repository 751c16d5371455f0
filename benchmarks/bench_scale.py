"""Transfer inference at scale (issue 37): time, peak resident memory per error and growth with the
table's size, for the calls a batch job over large metadata makes.

Every round runs in a fresh process (``python -c``): it builds the error matrix (seeded), resets
the peak resident size (``/proc/self/clear_refs``), runs one call and reports the call's time and
its peak resident memory above what the process held before it (so above the input), per error.
Rounds of ours and the peer are interleaved (the harness's scheme, one process per round).

Cases, at ``--sizes`` (matrix sides D; N = D(D - 1) errors):

* ``forecast_interval`` (tau = 0.95, two order statistics) against ``np.partition`` of the N errors
  (an N-vector made before the timing, two kth): the selection limit the issue sets (<= 3x its time,
  <= 12 bytes an error above the input);
* ``qte_interval`` (0.9, the default 61 betas: 122 order statistics) against ``np.partition`` with
  those 122 kth;
* ``check_worstcase_dominance`` of two matrices over the default 51 tau, Gamma up to infinity
  (``--dominance-sizes``; ours only: the O(N n) scan it replaced took some 107 s per tau at 10^8),
  ``check_everywhere_dominance`` over the same 51 tau (one sweep per group of tau) and
  ``everywhere_dominance_box`` at Gamma = 2 (one pass per group of tau); each with the whole
  process's peak too (the two matrices included: the issue's < 4 GB);
* with ``--stream D``: ``forecast_interval`` and ``qte_interval`` on a ``.npy`` file of a D x D matrix
  (``--stream 31623``: 10^9 errors, 8 GB) under ``ulimit -v`` of ``--ulimit-gb`` (4), once each.

Growth exponents: the slope of log(min time) and of log(peak) on log(N) between the smallest and
the largest size. Results: ``results/scale.json`` (``--quick``: ``quick/scale.json``); the README's
table comes from it (``benchmarks/readme_tables.py``).

    python benchmarks/bench_scale.py --threads 2 --stream 31623
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _harness import Run, add_common_args, loadavg, result_path, summarize, threads  # noqa: E402

_ROUND = textwrap.dedent("""
    import gc, json, sys, time
    import numpy as np

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

    case, side, D = sys.argv[1], sys.argv[2], int(sys.argv[3])
    N = D * (D - 1)
    rng = np.random.default_rng(D)
    E = rng.gamma(2.0, 1.0, size=(D, D))
    np.fill_diagonal(E, np.nan)
    import llmsurrogate.transfer as tr
    from llmsurrogate.transfer._common import DEFAULT_BETAS
    from llmsurrogate.transfer._ustat import _ci_ranks
    small = E[:40, :40]
    if case in ("dominance", "everywhere", "box"):
        E2 = E * rng.uniform(0.9, 1.2, size=(D, D))
        check = {"dominance": tr.check_worstcase_dominance, "everywhere": tr.check_everywhere_dominance,
                 "box": lambda a, b: tr.everywhere_dominance_box(a, b, Gamma=2.0)}[case]
        call = lambda: check(E, E2)
        check(small, small * 1.1)
    elif side == "ours":
        call = (lambda: tr.forecast_interval(E, tau=0.95)) if case == "forecast" else (lambda: tr.qte_interval(E, 0.9))
        tr.forecast_interval(small, tau=0.95); tr.qte_interval(small, 0.9)
    else:   # np.partition of the N errors, with the interval's order statistics as kth
        values = E[~np.isnan(E)]
        del E
        if case == "forecast":
            k = min(max(int(np.ceil(N * (0.95 - 1e-12))), 1), N)
            kth = [N - k, k - 1]
        else:
            jl, ju = _ci_ranks(N, D, 2, DEFAULT_BETAS, 0.05)
            kth = sorted({int(j) - 1 for j in np.r_[jl, ju] if 1 <= j <= N})
        call = lambda: np.partition(values, kth)
        np.partition(values[:1000], [0, 1])
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    t0 = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "peak_per_error": (status("VmHWM") - base) / N,
                      "peak_process_bytes": status("VmHWM")}))
""")

_STREAM = textwrap.dedent("""
    import json, resource, sys, time
    import llmsurrogate.transfer as tr
    path, case = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    tr.forecast_interval(path, tau=0.95) if case == "forecast" else tr.qte_interval(path, 0.9)
    print(json.dumps({"seconds": time.perf_counter() - t0,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
""")


def _round(case: str, side: str, d: int) -> dict:
    run = subprocess.run([sys.executable, "-c", _ROUND, case, side, str(d)], capture_output=True, text=True,
                         timeout=1800)
    if run.returncode:
        raise RuntimeError(f"{case} {side} D={d}: {run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def _measure(run: Run, case: str, label: str, d: int, rounds: int, peer: bool) -> dict:
    sides = ["ours", "np.partition"] if peer else ["ours"]
    got: dict[str, list[dict]] = {s: [] for s in sides}
    load = loadavg()
    for i in range(rounds):   # interleaved, the side that goes first rotating
        for s in sides[i % len(sides):] + sides[:i % len(sides)]:
            got[s].append(_round(case, s, d))
    n = d * (d - 1)
    summary = {s: summarize([r["seconds"] for r in got[s]]) for s in sides}
    peaks = {s: max(r["peak_per_error"] for r in got[s]) for s in sides}
    whole = {s: max(r["peak_process_bytes"] for r in got[s]) for s in sides}
    return run.add(f"{label}, N = {n:.3g}", summary, peer_name="np.partition" if peer else None, rounds=rounds,
                   warmup=0, load_before=load, N=n, D=d, peak_bytes_per_error=peaks, peak_process_bytes=whole,
                   threads=os.environ.get("LLMSURROGATE_NUM_THREADS"))


def _growth(rows: list[dict]) -> dict:
    """Slopes of log(min time) and log(peak) on log(N) between the smallest and largest size."""
    if len(rows) < 2:
        return {}
    a, b = rows[0], rows[-1]
    dn = math.log(b["N"] / a["N"])
    out = {}
    for side in a["sides"]:
        out[side] = {"time": math.log(b["sides"][side]["min_s"] / a["sides"][side]["min_s"]) / dn,
                     "peak": math.log(max(b["peak_bytes_per_error"][side] * b["N"], 1.0) /
                                      max(a["peak_bytes_per_error"][side] * a["N"], 1.0)) / dn}
    return out


def _stream(run: Run, d: int, ulimit_gb: float, folder: Path) -> None:
    path = folder / f"scale_{d}.npy"
    if not path.exists():
        import numpy as np

        m = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(d, d))
        rng = np.random.default_rng(2026)
        for i in range(0, d, 512):
            m[i:i + 512] = rng.gamma(2.0, 1.0, size=(min(512, d - i), d))
        m.flush()
        del m
    import resource

    limit = int(ulimit_gb * 1024 ** 3)

    def address_space_limit():   # what `ulimit -v` sets, in the child only
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    for case, label in (("forecast", "forecast_interval"), ("qte", "qte_interval")):
        load = loadavg()
        res = subprocess.run([sys.executable, "-c", _STREAM, str(path), case], capture_output=True, text=True,
                             timeout=3600, preexec_fn=address_space_limit)
        if res.returncode:
            raise RuntimeError(f"streamed {case}: {res.stderr[-2000:]}")
        got = json.loads(res.stdout.strip().splitlines()[-1])
        n = d * (d - 1)
        run.add(f"{label}, .npy file, N = {n:.3g}, ulimit -v {ulimit_gb:g} GB", {"ours": summarize([got["seconds"]])},
                rounds=1, warmup=0, load_before=load, N=n, D=d, file_bytes=path.stat().st_size,
                peak_rss_bytes=got["peak_rss_bytes"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--sizes", default="1000,3162,10000", help="matrix sides D for the intervals")
    ap.add_argument("--dominance-sizes", default="1000,3162,10000", help="matrix sides D for dominance")
    ap.add_argument("--stream", type=int, default=None, help="side D of a .npy matrix read in chunks (31623: 1e9)")
    ap.add_argument("--ulimit-gb", type=float, default=4.0, help="address-space limit of the streamed run")
    ap.add_argument("--folder", default=tempfile.gettempdir(), help="where the streamed .npy file is written")
    a = ap.parse_args()
    threads(a.threads or os.cpu_count() or 1)
    rounds = a.rounds or (1 if a.quick else 3)
    sizes = [300, 1000] if a.quick else [int(x) for x in a.sizes.split(",")]
    dsizes = [300, 1000] if a.quick else [int(x) for x in a.dominance_sizes.split(",")]
    run = Run("scale", quick=a.quick, python_packages=["numpy", "llmsurrogate"],
              notes="Each round a fresh process; peak = resident memory above the input during the call, per error. "
                    "Issue 37's goals at N = 1e8: intervals <= 3x np.partition and <= 12 B/error; worst-case "
                    "dominance over 51 tau < 30 s and < 4 GB (peak_process_bytes: the whole process, both matrices included).")
    growth = {}
    for case, label, peer, ds in (("forecast", "forecast_interval (tau = 0.95)", True, sizes),
                                  ("qte", "qte_interval (61 betas)", True, sizes),
                                  ("dominance", "check_worstcase_dominance (51 tau, Gamma to inf)", False, dsizes),
                                  ("everywhere", "check_everywhere_dominance (51 tau)", False, dsizes),
                                  ("box", "everywhere_dominance_box (51 tau, Gamma = 2)", False, dsizes)):
        rows = [_measure(run, case, label, d, rounds, peer) for d in ds]
        growth[label] = _growth(rows)
    run.extra["growth_exponents"] = growth
    run.extra["table_style"] = "scale"
    out = result_path("scale", a.quick, a.out)
    run.write(out)   # (the in-memory cases are kept if the streamed run fails)
    if a.stream:
        _stream(run, a.stream, a.ulimit_gb, Path(a.folder))
        run.write(out)


if __name__ == "__main__":
    main()
