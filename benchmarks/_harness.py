"""One timing harness for every benchmark in this folder.

What a skeptic needs to accept a ratio, recorded in each result file:

* **warm-up** calls of every side before anything is timed (imports, thread pools, caches that a
  user's second call would also find warm);
* **interleaved rounds**: ours, the peer, ours, the peer, ... (the side that goes first rotates
  from round to round) so that a burst of load on this shared machine hits both sides alike;
  every round is kept in the JSON;
* **min and median** per side, and the ratio of each (peer / ours: above 1 means we are faster);
* the **load average** (1, 5, 15 min) before and after, the machine's cores and CPU model;
* **versions** of everything involved: Python packages, R and R packages where R runs, rustc;
* **equal thread counts** on both sides (``threads()`` sets LLMSURROGATE_NUM_THREADS, OMP, MKL,
  OpenBLAS and R's data.table/RhpcBLAS variables alike) unless a comparison names otherwise.

Peers that run in another process (R through Rscript) time themselves with the same scheme and
hand their rounds back; :meth:`Run.add` records them like local ones.

    from _harness import Run, threads
    threads(1)
    run = Run("quantiles", quick=args.quick)
    cmp = run.compare("upper quantile, n = 1e6", ours=lambda: ..., peer=lambda: ..., peer_name="numpy",
                      rounds=7)
    run.write(OUT)
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as _md
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

THREAD_VARS = ("LLMSURROGATE_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "RAYON_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "R_DATATABLE_NUM_THREADS")


def threads(n: int) -> int:
    """Give every library (ours, BLAS, OpenMP, R) the same ``n`` threads; call before importing them.

    Child processes (Rscript, folktexts) inherit the variables."""
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    return n


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on Linux
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover
        pass
    return platform.processor()


def _version(pkg: str) -> str | None:
    try:
        return _md.version(pkg)
    except _md.PackageNotFoundError:
        return None


def _cmd_version(cmd: Sequence[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


def r_versions(packages: Sequence[str] = (), lib: str | None = None) -> dict[str, Any]:
    """R's version and the versions of ``packages`` (looked up in ``lib`` first), or ``{}`` without R."""
    if shutil.which("Rscript") is None:
        return {}
    libs = f'c("{lib}", .libPaths())' if lib else ".libPaths()"
    pkgs = ", ".join(f'"{p}"' for p in packages)
    code = (f"v <- sapply(c({pkgs}), function(p) tryCatch(as.character(packageVersion(p, lib.loc = {libs})), "
            "error = function(e) NA_character_)); cat(R.version.string, '\\n'); "
            "for (p in names(v)) cat(p, v[[p]], '\\n')")
    try:
        out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    lines = out.stdout.strip().splitlines()
    if not lines:
        return {}
    res: dict[str, Any] = {"R": lines[0].strip()}
    for line in lines[1:]:
        name, _, ver = line.strip().partition(" ")
        res[name] = None if ver.strip() in ("NA", "") else ver.strip()
    return res


def environment(python_packages: Sequence[str] = (), r_packages: Sequence[str] = (), r_lib: str | None = None) -> dict:
    """Machine, thread settings and versions of everything a benchmark uses."""
    pkgs = ["llmsurrogate", "numpy", "pandas", "scipy", *python_packages]
    env = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "packages": {p: _version(p) for p in dict.fromkeys(pkgs)},
        "rustc": _cmd_version(["rustc", "--version"]),
        "thread_env": {v: os.environ.get(v) for v in THREAD_VARS},
    }
    if r_packages:
        env["r"] = r_versions(r_packages, r_lib)
    return env


def summarize(rounds: Sequence[float]) -> dict:
    return {"min_s": min(rounds), "median_s": statistics.median(rounds), "rounds_s": list(rounds)}


def _timed(fn: Callable[[], Any], inner: int) -> float:
    t = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t) / inner


def interleave(sides: dict[str, Callable[[], Any]], rounds: int = 5, warmup: int = 1, inner: int = 1) -> dict:
    """Time each side ``rounds`` times, interleaved (A, B, A, B, ...), after ``warmup`` calls of each.

    ``inner`` calls per round (for calls of a few microseconds); the time is per call."""
    for _ in range(warmup):
        for fn in sides.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for r in range(rounds):
        # rotate which side goes first, so that no side always follows the same one (a peer in R
        # can leave threads spinning or caches cold for whatever runs right after it)
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(_timed(sides[name], inner))
    return {name: summarize(ts) for name, ts in times.items()}


def ratios(peer: dict, ours: dict) -> dict:
    """peer / ours on the min and on the median (above 1: ours is faster)."""
    return {"min": peer["min_s"] / ours["min_s"] if ours["min_s"] > 0 else float("inf"),
            "median": peer["median_s"] / ours["median_s"] if ours["median_s"] > 0 else float("inf")}


class Run:
    """A benchmark run: environment and load before, comparisons, load after, one JSON file."""

    def __init__(self, name: str, *, quick: bool = False, python_packages: Sequence[str] = (),
                 r_packages: Sequence[str] = (), r_lib: str | None = None, notes: str = ""):
        self.name = name
        self.quick = quick
        self.load_before = loadavg()
        self.t0 = time.time()
        self.env = environment(python_packages, r_packages, r_lib)
        self.notes = notes
        self.comparisons: list[dict] = []
        self.extra: dict[str, Any] = {}

    def compare(self, case: str, ours: Callable[[], Any], peer: Callable[[], Any] | None = None, *,
                peer_name: str = "peer", rounds: int = 5, warmup: int = 1, inner: int = 1,
                extra: dict[str, Callable[[], Any]] | None = None, threads_note: str | None = None,
                **info: Any) -> dict:
        """Interleave ours, the peer and any ``extra`` sides (named lines such as a NumPy
        re-implementation); record and print the result."""
        sides = {"ours": ours}
        if peer is not None:
            sides[peer_name] = peer
        sides.update(extra or {})
        load = loadavg()
        res = interleave(sides, rounds=rounds, warmup=warmup, inner=inner)
        return self.add(case, res, peer_name=peer_name if peer is not None else None, inner=inner,
                        rounds=rounds, warmup=warmup, load_before=load, threads=threads_note, **info)

    def add(self, case: str, sides: dict[str, dict], *, peer_name: str | None = None, **info: Any) -> dict:
        """Record sides timed elsewhere (``{side: summarize(rounds)}``, "ours" among them)."""
        row: dict[str, Any] = {"case": case, **{k: v for k, v in info.items() if v is not None}, "sides": sides}
        if "load_before" not in row:
            row["load_before"] = None
        row["load_after"] = loadavg()
        ours = sides.get("ours")
        if ours is not None:
            row["speedup"] = {name: ratios(s, ours) for name, s in sides.items() if name != "ours"}
        if peer_name is not None:
            row["peer"] = peer_name
        self.comparisons.append(row)
        self._print(row)
        return row

    @staticmethod
    def _fmt(s: float) -> str:
        return f"{s * 1e3:9.3f} ms" if s < 10 else f"{s:9.2f} s "

    def _print(self, row: dict) -> None:
        parts = [f"{name} {self._fmt(s['min_s'])} (med {self._fmt(s['median_s']).strip()})"
                 for name, s in row["sides"].items()]
        speed = "; ".join(f"x{r['min']:.2f} vs {name} (median x{r['median']:.2f})"
                          for name, r in row.get("speedup", {}).items())
        print(f"{row['case']}: " + ", ".join(parts) + (f"  => {speed}" if speed else ""), flush=True)

    def payload(self) -> dict:
        return {
            "benchmark": self.name,
            "quick": self.quick,
            "harness": "benchmarks/_harness.py: warm-up, interleaved rounds (ours, peer, ...), min and median, "
                       "speedup = peer / ours",
            "environment": self.env,
            "load_before": self.load_before,
            "load_after": loadavg(),
            "wall_s": time.time() - self.t0,
            "notes": self.notes,
            "comparisons": self.comparisons,
            **self.extra,
        }

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.payload(), indent=2, default=_json_default) + "\n")
        print(f"wrote {path} (load {self.load_before} -> {loadavg()})", flush=True)
        return path


def stamp(load_before: list[float] | None, python_packages: Sequence[str] = (), **info: Any) -> dict:
    """Environment, versions and load (before: ``loadavg()`` taken at the start; after: now) for a
    benchmark that times only our own code (no peer), to merge into its result payload."""
    return {"environment": environment(python_packages), "load_before": load_before, "load_after": loadavg(),
            "harness": "benchmarks/_harness.py stamp (ours only: no peer to interleave with)", **info}


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def code_label(module_file: str) -> str:
    """Which tree of the package a run imported, without a path of this machine: the file relative
    to the repository when it is this checkout's, else ``"another tree on PYTHONPATH: <the path
    from its 'python' folder>"`` (a comparison run of older code)."""
    path = Path(module_file).resolve()
    root = Path(__file__).resolve().parents[1]
    try:
        return str(path.relative_to(root))
    except ValueError:
        parts = path.parts
        tail = parts[parts.index("python"):] if "python" in parts else parts[-2:]
        return "another tree on PYTHONPATH: " + "/".join(tail)


def result_path(name: str, quick: bool, out: str | None = None) -> Path:
    """``results/<name>.json`` for full runs (the one canonical tree, committed, behind the README's
    numbers), ``quick/<name>.json`` for quick ones (git-ignored, so that a quick run never replaces
    or sits beside the committed full numbers). A second full run, to check that the numbers
    reproduce, goes to ``results/reproducibility/<run>/`` with ``--out``."""
    if out:
        return Path(out)
    here = Path(__file__).resolve().parent
    return here / "quick" / f"{name}.json" if quick else here / "results" / f"{name}.json"


def add_common_args(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sizes; writes quick/ (git-ignored)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per comparison")
    parser.add_argument("--threads", type=int, default=None, help="threads on both sides (default: all cores)")
    parser.add_argument("--out", default=None, help="result file (default: results/<name>.json, quick/<name>.json with --quick)")


if __name__ == "__main__":  # pragma: no cover - prints the environment
    print(json.dumps(environment(), indent=2))
    sys.exit(0)
