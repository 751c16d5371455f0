"""Prediction-powered inference (``llmsurrogate.ppi``) vs ppi_py 0.2.3 (the peer), timed with
benchmarks/_harness.py (warm-up, interleaved rounds, min and median, load, versions).

ppi_py runs in its own interpreter (``.venv-ppi``, ``make ppi-venv``) as a worker
(``_ppi_py_runner.py``) that holds the case's arrays and runs one call per request, so the rounds
interleave call by call: ours, ppi_py, ours, ... (the side that goes first rotates). Both sides get
the same threads (``--threads``, default all cores) and the same arrays (written once to a
temporary ``.npz``); the two intervals are compared before anything is timed.

Cases (full run; ``--quick`` divides N and n by 10):

* OLS, lambda tuned (``ppi.ols(method="ppi++")`` vs ``ppi_ols_ci(lam=None)``), N = 10^6, n = 10^4,
  d = 10;
* logistic, lambda tuned (``ppi.logistic`` vs ``ppi_logistic_ci(lam=None)``), the same sizes;
* quantile, N = 10^6 (ours only: ppi_py's ``ppi_quantile_ci`` builds an ``N x 5000`` grid, 40 GB at
  N = 10^6), with the peak resident memory of a fresh process that runs it;
* growth in N (10^5, 3 10^5, 10^6; n = 10^4) of ours, with the fitted exponent of time ~ N^b.

Writes ``benchmarks/results/ppi.json`` (--quick: benchmarks/quick/).

    python benchmarks/bench_ppi.py [--quick] [--rounds 5] [--threads 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import threads  # noqa: E402

if __name__ == "__main__" and "--quantile-memory" not in sys.argv:  # before numpy reads the variables
    import os

    _t = next((sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--threads"), None)
    threads(int(_t) if _t else (os.cpu_count() or 1))

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
PPI_PYTHON = HERE.parent / ".venv-ppi" / "bin" / "python"
D = 10


def ols_data(n: int, N: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)

    def rows(m):
        X = np.column_stack([np.ones(m), rng.normal(size=(m, D - 1))])
        y = X @ np.linspace(-1, 1, D) + rng.normal(size=m)
        return X, y, y + rng.normal(scale=0.7, size=m) + 0.2 * X[:, 1]

    X, y, yhat = rows(n)
    X_u, _, yhat_u = rows(N)
    return {"X": X, "y": y, "yhat": yhat, "X_u": X_u, "yhat_u": yhat_u}


def logistic_data(n: int, N: int, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    beta = np.linspace(-0.5, 0.5, D)

    def rows(m):
        X = np.column_stack([np.ones(m), rng.normal(size=(m, D - 1))])
        p = 1.0 / (1.0 + np.exp(-X @ beta))
        y = rng.binomial(1, p).astype(float)
        yhat = np.clip(p + 0.15 * (y - p) + rng.normal(0, 0.2, m), 0.0, 1.0)
        return X, y, yhat

    X, y, yhat = rows(n)
    X_u, _, yhat_u = rows(N)
    return {"X": X, "y": y, "yhat": yhat, "X_u": X_u, "yhat_u": yhat_u}


def quantile_data(n: int, N: int, seed: int = 2):
    rng = np.random.default_rng(seed)
    y = rng.lognormal(size=n)
    return y, y * rng.lognormal(0, 0.2, n), rng.lognormal(size=N) * rng.lognormal(0, 0.2, N)


class Peer:
    """The ppi_py worker (``_ppi_py_runner.py`` in ``.venv-ppi``)."""

    def __init__(self, python: Path):
        self.proc = subprocess.Popen([str(python), str(HERE / "_ppi_py_runner.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.version = None
        self.last = None

    def ask(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if not reply.get("ok"):
            raise RuntimeError(f"ppi_py worker failed: {reply.get('error')}")
        return reply

    def load(self, case: str, path: Path) -> None:
        self.version = self.ask(cmd="load", case=case, path=str(path))["version"]

    def run(self, case: str) -> dict:
        self.last = self.ask(cmd="run", case=case)
        return self.last

    def close(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        self.proc.wait(timeout=60)


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def quantile_memory(N: int, n: int) -> None:
    """In a fresh process: ppi.quantile at N once, printing the resident memory before the call and
    its peak during it (VmHWM, reset just before the call where the kernel allows it)."""
    import time

    from llmsurrogate import ppi

    y, yhat, yhat_u = quantile_data(n, N)
    ppi.quantile(y[:100], yhat[:100], yhat_u[:1000], 0.5)  # imports and first-call setup
    before = _status_kb("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")   # reset the high-water mark to the current RSS
        reset = True
    except OSError:
        reset = False
    t = time.perf_counter()
    ppi.quantile(y, yhat, yhat_u, 0.5)
    seconds = time.perf_counter() - t
    print(json.dumps({"rss_before_mb": before / 1024, "peak_rss_mb": _status_kb("VmHWM") / 1024,
                      "peak_reset_before_call": reset, "seconds": seconds, "N": N, "n": n}))


def exponent(Ns, times) -> float:
    """The least-squares slope of log(time) on log(N)."""
    x, y = np.log(np.asarray(Ns, float)), np.log(np.asarray(times, float))
    return float(np.polyfit(x, y, 1)[0])


def main():
    from _harness import Run, add_common_args, result_path

    import llmsurrogate
    from llmsurrogate import ppi

    parser = argparse.ArgumentParser()
    add_common_args(parser)
    parser.add_argument("--quantile-memory", nargs=2, type=int, metavar=("N", "n"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quantile_memory:
        quantile_memory(*args.quantile_memory)
        return
    scale = 10 if args.quick else 1
    N, n = 1_000_000 // scale, 10_000 // scale
    rounds = args.rounds or (3 if args.quick else 5)
    n_threads = int(__import__("os").environ.get("LLMSURROGATE_NUM_THREADS", "1"))
    if not PPI_PYTHON.exists():
        sys.exit(f"{PPI_PYTHON} is missing: `make ppi-venv` installs ppi_py 0.2.3 there")
    run = Run("ppi", quick=args.quick,
              notes=f"speedup = ppi_py / ours; ppi_py 0.2.3 in its own interpreter (.venv-ppi) as a worker, "
                    f"interleaved call by call; both on {n_threads} thread(s) (llmsurrogate.num_threads() = "
                    f"{llmsurrogate.num_threads()}); d = {D} coefficients with the intercept; 95% intervals")
    peer = Peer(PPI_PYTHON)
    agreement = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for kind, make, fn in (("ols", ols_data, ppi.ols), ("logistic", logistic_data, ppi.logistic)):
                data = make(n, N)
                case = f"{kind}:{N}"
                path = Path(tmp) / f"{kind}.npz"
                np.savez(path, **data)
                peer.load(case, path)
                ours = lambda data=data, fn=fn: fn(data["X"], data["y"], data["yhat"], data["X_u"],  # noqa: E731
                                                   data["yhat_u"], method="ppi++")
                res = ours()
                ref = peer.run(case)
                diff = max(float(np.max(np.abs(res.ci_low - np.asarray(ref["low"])))),
                           float(np.max(np.abs(res.ci_high - np.asarray(ref["high"])))))
                agreement[kind] = {"max_abs_ci_difference": diff, "lam": float(res.lam)}
                run.compare(f"{kind}, lambda tuned, N = {N:,}, n = {n:,}, d = {D}", ours,
                            lambda case=case: peer.run(case), peer_name=f"ppi_py {peer.version}", rounds=rounds,
                            N=N, n=n, d=D, max_abs_ci_difference=diff)
    finally:
        peer.close()

    y, yhat, yhat_u = quantile_data(n, N)
    run.compare(f"quantile (q = 0.5), N = {N:,}, n = {n:,}", lambda: ppi.quantile(y, yhat, yhat_u, 0.5),
                rounds=rounds, N=N, n=n,
                peer_note="ppi_py's ppi_quantile_ci builds an N x 5000 grid (40 GB at N = 10^6): not run")
    proc = subprocess.run([sys.executable, __file__, "--quantile-memory", str(N), str(n)], capture_output=True,
                          text=True, check=True)
    memory = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"quantile memory: {memory}", flush=True)

    growth = {}
    Ns = [N // 10, (3 * N) // 10, N]
    for kind, make, fn in (("ols", ols_data, ppi.ols), ("logistic", logistic_data, ppi.logistic)):
        meds = []
        for m in Ns:
            data = make(n, m)
            row = run.compare(f"growth: {kind}, lambda tuned, N = {m:,}, n = {n:,}",
                              lambda data=data, fn=fn: fn(data["X"], data["y"], data["yhat"], data["X_u"],
                                                          data["yhat_u"]),
                              rounds=rounds, N=m, n=n, d=D)
            meds.append(row["sides"]["ours"]["median_s"])
        b = exponent(Ns, meds)
        growth[kind] = {"N": Ns, "median_s": meds, "exponent": b}
        print(f"growth {kind}: time ~ N^{b:.2f} over N = {Ns}", flush=True)
    run.extra.update({"agreement": agreement, "quantile_memory": memory, "growth": growth,
                      "ppi_py_version": peer.version})
    run.write(result_path("ppi", args.quick, args.out))


if __name__ == "__main__":
    main()
