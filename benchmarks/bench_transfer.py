"""Transfer inference (llmsurrogate.transfer) vs transferUQ-equivalent pure Python/NumPy code.

Part 1 (the 44-domain published matrices): every computation of the paper's application --
forecast intervals at 3 levels x 3 sides, a 61-beta QTE curve and an ETE interval per model, and
worst-case and everywhere dominance over 10 taus for 4 model pairs -- timed per function against
the real transferUQ 0.1.0 (installed from its released source into a scratch R library by
transferuq_setup(); source from --transferuq-src / $TRANSFERUQ_SRC, a clone of github.com/lihualei71/transferUQ):

* Python: ours vs transferUQ called through rpy2 in this process, interleaved (benchmarks/_harness.py);
  extra lines: our defaults, and a NumPy re-implementation of transferUQ's algorithms (written from
  docs/methods/transfer.md; named as such, not the peer);
* R: benchmarks/_transfer_r_runner.R loads transferUQ and our R package in ONE R process and
  interleaves their calls per function, plus a breakdown of where one bridge call's time goes;
  section r-long does the same on long data frames: the published matrices as r = 1 rows (1,892)
  and transferUQ's r = 2 help-page construction with n = 40 (59,280 rows of ordered training
  pairs), with an extra side "ours_new_data" that gets other errors at every call (nothing kept
  from an earlier call on the same data frame), and for r = 1 "ours_new_design", whose data frames
  also have other domain columns (nothing kept from a data frame of the same design).

Without R or transferUQ's source the peer is skipped with a message.

Part 2 (large metadata): n synthetic domains with r = 1 (n = 1000: 999,000 errors): forecast
interval, weighted interval, the Gamma = inf worst-case curve, everywhere dominance at 20 taus and
a 61-beta QTE curve, each part timed, in a fresh process per n (peak memory from getrusage),
with LLMSURROGATE_NUM_THREADS=2.

    python benchmarks/bench_transfer.py [--quick] [--rounds 7] [--threads 2] [--transferuq-src DIR]

Writes benchmarks/results/transfer.json (--quick: benchmarks/quick/transfer.json, git-ignored).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "transfer.json"
PAIRS = [("abdg", "RF"), ("EU_iso", "RF"), ("g", "RF"), ("abdg", "EU_iso")]
MODELS = ["abdg", "RF", "EU_iso", "g"]
COVERAGES = [0.8, 0.9, 0.95]
SIDES = ["two", "left", "right"]
BETAS = np.round(np.arange(0.2, 0.8 + 1e-9, 0.01), 10)
TAUS = np.round(np.linspace(0.5, 0.95, 10), 10)


# ---- baseline: transferUQ's algorithms in pure Python/NumPy (written from the spec) -----------------

def b_sort(M):
    n = M.shape[0]
    vec = M.T.ravel().copy()  # column-major, like as.vector in R
    vec[np.arange(n) * (n + 1)] = np.nan
    order = np.argsort(vec, kind="stable")
    order = order[~np.isnan(vec[order])]
    return vec[order], order // n, n


def b_q1(vals, p):
    return vals[max(math.ceil(p * vals.size - 1e-9), 1) - 1]


def b_forecast(M, coverage, side):
    vals, _, _ = b_sort(M)
    if side == "two":
        tau = (1 + coverage) / 2
        return (-b_q1(np.sort(-vals), tau), b_q1(vals, tau))
    if side == "left":
        return (-b_q1(np.sort(-vals), coverage), math.inf)
    return (-math.inf, b_q1(vals, coverage))


def b_logbound(mu, x, n, k):
    from scipy.optimize import minimize_scalar
    from scipy.stats import binom

    m = n // k
    xm = min(mu, x)
    h1 = (xm * math.log(xm / mu) if xm > 0 else 0.0) + (1 - xm) * math.log((1 - xm) / (1 - mu))
    hoeff = -m * h1
    bent = binom.logcdf(math.ceil(m * x), m, mu) + 1

    def f(ll):
        lam = math.exp(ll)
        return (n * lam / k) * (x - mu / (1 + k * (math.expm1(lam) - lam) / lam))

    maurer = min(minimize_scalar(f, bounds=(-20, 6), method="bounded").fun, 0.0)
    return min(hoeff, bent, maurer)


def b_inv_x(beta, n, k, alpha):
    from scipy.optimize import brentq

    g = lambda x: b_logbound(beta, x, n, k) - math.log(alpha)  # noqa: E731
    return 0.0 if g(1e-4) > 0 else brentq(g, 1e-4, beta - 1e-10)


def b_inv_mu(u, n, k, alpha):
    from scipy.optimize import brentq

    g = lambda mu: b_logbound(mu, u, n, k) - math.log(alpha)  # noqa: E731
    return 1.0 if g(1 - 1e-4) > 0 else brentq(g, u + 1e-10, 1 - 1e-4)


def b_qte(M, coverage, betas, k):
    vals, _, n = b_sort(M)
    alpha = (1 - coverage) / 2
    out = []
    for beta in betas:
        lo = b_inv_x(beta, n, k, alpha)
        hi = 1 - b_inv_x(1 - beta, n, k, alpha)
        out.append((beta, b_q1(vals, lo) if lo > 0 else vals[0], b_q1(vals, hi)))
    return out


def b_ete(M, coverage, k):
    vals, _, n = b_sort(M)
    u = min(max(vals.mean(), 1e-10), 1 - 1e-10)
    alpha = (1 - coverage) / 2
    return (1 - b_inv_mu(1 - u, n, k, alpha), b_inv_mu(u, n, k, alpha))


def b_gamma_curve(M):
    vals, test, n = b_sort(M)
    N = vals.size
    p = np.empty(N)
    for j in range(1, N + 1):
        psi = np.bincount(test[:j], minlength=n)
        p[j - 1] = psi.min() / (n - 1)  # Q_j(inf) = min_i Psi_i
    return p, vals


def b_worstcase(M1, M2, taus):
    p1, v1 = b_gamma_curve(M1)
    p2, v2 = b_gamma_curve(M2)
    return [bool(v1[np.flatnonzero(p1 < t)[-1]] < v2[np.flatnonzero(p2 < t)[-1]]) for t in taus]


def b_lp(psi1, psi2, tau):
    from scipy.optimize import linprog

    n = psi1.size
    res = linprog(psi1, A_ub=-psi2[None, :].astype(float), b_ub=[-tau], A_eq=np.ones((1, n)), b_eq=[1],
                  bounds=[(0, None)] * n, method="highs")
    return (res.fun if res.status == 0 else 0.0) / (n - 1)


def b_everywhere(M1, M2, taus):
    v1, t1, n = b_sort(M1)
    v2, t2, _ = b_sort(M2)
    N = v1.size
    out = []
    for tau in taus:
        flag = True
        for j in range(math.ceil(tau * N), N + 1):
            idx = np.flatnonzero(v1 >= v2[j - 1])
            if idx.size == 0:
                break
            idx = max(idx[0], 1)
            psi2 = np.bincount(t2[:j], minlength=n)
            psi1 = np.bincount(t1[:idx], minlength=n)
            if np.all(psi2 <= psi1) or psi1.min() / (n - 1) > tau:
                continue
            if b_lp(psi1, psi2, tau) <= tau:
                flag = False
                break
        out.append(flag)
    return out


WORK_CALLS = {"forecast_interval": len(MODELS) * len(COVERAGES) * len(SIDES), "qte_interval": len(MODELS),
              "ete_interval": len(MODELS), "check_worstcase_dominance": len(PAIRS),
              "check_everywhere_dominance": len(PAIRS)}


def our_work(raw, inv, conventions):
    """Our side of each function group; ``conventions="transferUQ"`` computes what transferUQ
    computes (its quantile rank, U-statistic order r, pruned everywhere scan, single-Gamma check),
    ``"defaults"`` the package's defaults."""
    from llmsurrogate import transfer as tr

    tq = conventions == "transferUQ"
    # matrices as numpy arrays, as transferUQ gets R matrices (a pandas DataFrame is validated
    # column by column and costs ~2.5 ms more per call on a 44 x 44 matrix)
    raw = {m: np.asarray(raw[m].to_numpy(), dtype=np.float64) for m in MODELS}
    inv = {m: np.asarray(inv[m].to_numpy(), dtype=np.float64) for m in MODELS}
    fmode = {"mode": "transferUQ"} if tq else {}
    order = {"order": "transferUQ"} if tq else {}
    dmode = {"mode": "transferUQ"} if tq else {}

    def forecast():
        for m in MODELS:
            for c in COVERAGES:
                for s in SIDES:
                    tr.forecast_interval(raw[m], c, side=s, **fmode)

    def qte():
        tr.clear_rank_cache()  # cold quantile-CI ranks, as transferUQ computes them on every call
        for m in MODELS:
            tr.qte_interval(raw[m], 0.8, side="two", betas=BETAS, **order)

    def ete():
        for m in MODELS:
            tr.ete_interval(inv[m], 0.8, **order)

    def worst():
        for a, b in PAIRS[:WORST_PAIRS]:
            tr.check_worstcase_dominance(raw[a], raw[b], TAUS, **dmode)

    def everywhere():
        for a, b in PAIRS:
            tr.check_everywhere_dominance(raw[a], raw[b], TAUS, **dmode)

    return {"forecast_interval": forecast, "qte_interval": qte, "ete_interval": ete,
            "check_worstcase_dominance": worst, "check_everywhere_dominance": everywhere}


def numpy_work(raw, inv):
    """The NumPy re-implementation of transferUQ's algorithms (written from the spec; U-statistic order
    2 as in our defaults): an extra line, not the peer."""
    rawn = {m: raw[m].to_numpy() for m in MODELS}
    invn = {m: inv[m].to_numpy() for m in MODELS}

    def forecast():
        for m in MODELS:
            for c in COVERAGES:
                for s in SIDES:
                    b_forecast(rawn[m], c, s)

    return {"forecast_interval": forecast,
            "qte_interval": lambda: [b_qte(rawn[m], 0.8, BETAS, 2) for m in MODELS],
            "ete_interval": lambda: [b_ete(invn[m], 0.8, 2) for m in MODELS],
            "check_worstcase_dominance": lambda: [b_worstcase(rawn[a], rawn[b], TAUS) for a, b in PAIRS[:WORST_PAIRS]],
            "check_everywhere_dominance": lambda: [b_everywhere(rawn[a], rawn[b], TAUS) for a, b in PAIRS]}


def _transferuq_r_code(lib):
    taus = ", ".join(repr(float(t)) for t in TAUS)
    return f"""
    suppressPackageStartupMessages(library(transferUQ, lib.loc = "{lib}"))
    function(raw, inv) {{
    models <- c({", ".join(repr(m) for m in MODELS)})
    pairs <- list({", ".join(f"c({a!r}, {b!r})" for a, b in PAIRS)})
    betas <- round(seq(0.2, 0.8, 0.01), 10)
    taus <- c({taus})
    list(
      forecast_interval = function() for (m in models) for (c in c(0.8, 0.9, 0.95)) for (s in c("two", "left", "right"))
        transferUQ::forecast_interval(raw[[m]], c, s),
      qte_interval = function() for (m in models) transferUQ::qte_interval(raw[[m]], 0.8, "two", betas),
      ete_interval = function() for (m in models) transferUQ::ete_interval(inv[[m]], 0.8),
      check_worstcase_dominance = function() for (p in pairs[seq_len({WORST_PAIRS})])
        transferUQ::check_worstcase_dominance(raw[[p[1]]], raw[[p[2]]], taus),
      check_everywhere_dominance = function() for (p in pairs)
        transferUQ::check_everywhere_dominance(raw[[p[1]]], raw[[p[2]]], taus))
    }}
    """


def transferuq_work(lib, raw, inv):
    """transferUQ in R through rpy2 (in this process), on our matrices (the same numbers on both sides:
    transferUQ's bundled copy differs from ours by up to 5e-11)."""
    import rpy2.robjects as ro

    def r_matrices(frames):
        out = {}
        for m in MODELS:
            a = np.asarray(frames[m].to_numpy(), dtype=np.float64).copy()
            np.fill_diagonal(a, np.nan)
            out[m] = ro.r["matrix"](ro.FloatVector(a.ravel(order="F").tolist()), nrow=a.shape[0])
        return ro.ListVector(out)

    env = ro.r(_transferuq_r_code(lib))(r_matrices(raw), r_matrices(inv))
    return {fn: (lambda f=env.rx2(fn): f()) for fn in WORK_CALLS}


SLOW = {"check_worstcase_dominance"}  # transferUQ: ~13 s a call here; no warm-up call, fewer rounds
WORST_PAIRS = len(PAIRS)  # --quick: the first pair only


def run_application(run, raw, inv, lib, rounds, slow_rounds, numpy_line=True):
    """Per function group: ours (transferUQ's conventions), transferUQ (rpy2), ours (defaults) and the
    NumPy re-implementation, interleaved; times per call."""
    from _harness import interleave

    sides = {"ours": our_work(raw, inv, "transferUQ")}
    if lib is not None:
        sides["transferUQ"] = transferuq_work(lib, raw, inv)
    sides["ours_defaults"] = our_work(raw, inv, "defaults")
    if numpy_line:
        sides["numpy_reimplementation_of_transferUQ"] = numpy_work(raw, inv)
    rows = {}
    for fn, calls in WORK_CALLS.items():
        calls = WORST_PAIRS if fn == "check_worstcase_dominance" else calls
        slow = fn in SLOW
        group = {name: side[fn] for name, side in sides.items()}
        for name, f in group.items():  # warm-up (the slow peer's only call would double the run)
            if not (slow and name in ("transferUQ", "numpy_reimplementation_of_transferUQ")):
                f()
        load = _loadavg()
        res = interleave(group, rounds=slow_rounds if slow else rounds, warmup=0)
        per_call = {name: {k: (v / calls if k != "rounds_s" else [x / calls for x in v]) for k, v in r.items()}
                    for name, r in res.items()}
        rows[fn] = run.add(f"{fn} (44-domain matrices, per call; {calls} calls)", per_call,
                           peer_name="transferUQ" if lib is not None else None, calls=calls,
                           rounds=slow_rounds if slow else rounds,
                           warmup="ours only" if slow else "all sides", load_before=load, section="python")
    return rows


def _loadavg():
    from _harness import loadavg

    return loadavg()


def check_agreement(raw, inv):
    """Baseline and ours agree where both compute the same quantity."""
    from llmsurrogate import transfer as tr

    for m in MODELS:
        for c in COVERAGES:
            for s in SIDES:
                assert tr.forecast_interval(raw[m], c, side=s) == b_forecast(raw[m].to_numpy(), c, s)
    a, b = raw["abdg"], raw["RF"]
    assert tr.check_worstcase_dominance(a, b, TAUS, mode="transferUQ").res.tolist() == b_worstcase(a.to_numpy(), b.to_numpy(), TAUS)
    assert tr.check_everywhere_dominance(a, b, TAUS, mode="transferUQ").res.tolist() == b_everywhere(a.to_numpy(), b.to_numpy(), TAUS)


# ---- part 2: large synthetic metadata -------------------------------------------------------------

def large_child(n):
    import resource

    from llmsurrogate import transfer as tr
    from llmsurrogate.transfer import ErrorTable

    rng = np.random.default_rng(n)
    theta = rng.normal(size=n)
    E1 = np.abs(theta[:, None] - 2 * theta[None, :]) + 0.1 * rng.random((n, n))
    E2 = 1.2 * E1 + 0.1 * rng.random((n, n))
    w = np.exp(0.5 * theta)
    times = {}
    t = time.perf_counter()
    t1, t2 = ErrorTable.from_matrix(E1), ErrorTable.from_matrix(E2)
    times["build tables (validation)"] = time.perf_counter() - t
    parts = {
        "forecast interval (incl. sort)": lambda: tr.forecast_interval(t1, 0.9),
        "weighted interval": lambda: tr.weighted_forecast_interval(t1, w, 0.9),
        "worst-case curve, Gamma = inf": lambda: tr.worst_case_tau_curve(t1, math.inf),
        "everywhere dominance, 20 taus": lambda: tr.check_everywhere_dominance(t1, t2, np.linspace(0.5, 0.99, 20)),
        "QTE curve, 61 betas": lambda: tr.qte_interval(t1, 0.8, betas=BETAS),
    }
    results = {}
    for name, fn in parts.items():
        t = time.perf_counter()
        results[name] = fn()
        times[name] = time.perf_counter() - t
    dom = results["everywhere dominance, 20 taus"]
    return {"n": n, "N": n * (n - 1), "times_s": times, "total_s": sum(times.values()),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "everywhere_dominates": int(dom.res.sum())}


# Where to get the peer: its public repository, at the commit the results in benchmarks/results/ used
# (transferUQ 0.1.0). Nothing is fetched here: pass a folder with its source or a git clone.
TRANSFERUQ_REPOSITORY = "https://github.com/lihualei71/transferUQ"
TRANSFERUQ_COMMIT = "e709f1b51ead52a3ca59d581d85ada6384d8d179"
TRANSFERUQ_HOW = (f"set TRANSFERUQ_SRC (or --transferuq-src) to a folder with transferUQ's source or a git clone of "
                  f"{TRANSFERUQ_REPOSITORY} (the results in benchmarks/results/ used commit {TRANSFERUQ_COMMIT[:7]}, "
                  f"version 0.1.0): git clone {TRANSFERUQ_REPOSITORY} && "
                  f"git -C transferUQ checkout {TRANSFERUQ_COMMIT}")
REPO = Path(__file__).resolve().parent.parent


def _sudo():
    return [] if os.geteuid() == 0 else ["sudo", "-n"]


def transferuq_setup(src=None, lib=None):
    """Install transferUQ from its released source into a scratch R library (and our R package next to
    it, for the R section). ``src``: a source folder (with DESCRIPTION) or a git repository (bare or
    not; its HEAD is exported to a temporary folder); default ``$TRANSFERUQ_SRC``. Returns
    ``(library, None)`` or ``(None, reason to skip)``; the reason says where to get the source."""
    import shutil
    import tempfile

    if shutil.which("Rscript") is None:
        return None, "R (Rscript) is not installed"
    src = src or os.environ.get("TRANSFERUQ_SRC")
    if not src:
        return None, f"transferUQ's source was not given; {TRANSFERUQ_HOW}"
    src = Path(src)
    lib = Path(lib or os.environ.get("TRANSFERUQ_LIB") or Path(tempfile.gettempdir()) / "llmsurrogate-bench-rlib")
    if not src.exists():
        return None, f"transferUQ's source is not at {src}; {TRANSFERUQ_HOW}"
    need_lp = subprocess.run(["Rscript", "-e", "quit(status = !requireNamespace('lpSolve', quietly = TRUE))"],
                             capture_output=True).returncode != 0
    if need_lp:
        print("installing Debian's r-cran-lpsolve (transferUQ imports lpSolve)", flush=True)
        subprocess.run([*_sudo(), "apt-get", "install", "-y", "-qq", "r-cran-lpsolve"], capture_output=True)
        if subprocess.run(["Rscript", "-e", "quit(status = !requireNamespace('lpSolve', quietly = TRUE))"],
                          capture_output=True).returncode != 0:
            return None, "R package lpSolve is missing and `apt-get install r-cran-lpsolve` failed"
    lib.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if (src / "DESCRIPTION").exists():
            pkg = src
        else:
            git_dir = src / ".git" if (src / ".git").exists() else src
            pkg = Path(tmp) / "transferUQ"
            pkg.mkdir()
            archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "HEAD"], capture_output=True)
            if archive.returncode != 0:
                return None, f"cannot export transferUQ's source from {src}: {archive.stderr.decode()[-300:]}"
            subprocess.run(["tar", "-x", "-C", str(pkg)], input=archive.stdout, check=True)
        for what, path in (("transferUQ", pkg), ("llmsurrogate (R)", REPO / "r-bridge" / "llmsurrogate")):
            out = subprocess.run(["R", "CMD", "INSTALL", "--no-multiarch", f"--library={lib}", str(path)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                return None, f"R CMD INSTALL {what} failed: {out.stderr[-500:]}"
    return str(lib), None


def run_r_section(run, lib, rounds, slow_rounds, parts=("matrix", "long")):
    """The R section: our R package and transferUQ in one R process, interleaved per function: on
    the 44-domain matrices ("matrix") and on long data frames ("long": the same errors as r = 1
    rows, and transferUQ's r = 2 help-page construction with n = 40, 59,280 rows)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        env = dict(os.environ, R_LIBS=f"{lib}:{REPO / '.rlib'}", LLMSURROGATE_PYTHON=sys.executable,
                   RETICULATE_PYTHON=sys.executable)
        proc = subprocess.run(["Rscript", str(Path(__file__).with_name("_transfer_r_runner.R")), lib, str(rounds),
                               str(out), str(slow_rounds), str(WORST_PAIRS), ",".join(parts)], env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"R section failed:\n{proc.stderr[-2000:]}", flush=True)
            return None
        res = json.loads(out.read_text())
    for part, rows in (("matrix", res.get("functions") or {}), ("long", res.get("long") or {})):
        for fn, row in rows.items():
            for side in row["sides"].values():  # jsonlite writes a length-1 vector as a number
                if not isinstance(side["rounds_s"], list):
                    side["rounds_s"] = [side["rounds_s"]]
            what = "44-domain matrices" if part == "matrix" else \
                "44 domains, 1,892 rows" if fn.startswith("r=1") else "n = 40, 59,280 rows"
            run.add(f"R: {fn} ({what}, per call; {row['calls']} calls)", row["sides"], peer_name="transferUQ",
                    calls=row["calls"], rounds=row["rounds"], warmup=row["warmup"], load_before=row["load_before"],
                    section="R (one Rscript: library(transferUQ) and library(llmsurrogate))"
                    + ("" if part == "matrix" else ", long data frames"))
    return res


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _harness import Run, add_common_args, result_path, threads

    parser = argparse.ArgumentParser()
    add_common_args(parser)
    parser.add_argument("--transferuq-src", default=None, help="transferUQ's source folder or a git clone of "
                        "https://github.com/lihualei71/transferUQ (commit e709f1b); default $TRANSFERUQ_SRC")
    parser.add_argument("--transferuq-lib", default=None, help="scratch R library for transferUQ")
    parser.add_argument("--no-numpy-line", action="store_true", help="leave out the NumPy re-implementation")
    parser.add_argument("--skip-large", action="store_true", help="skip part 2 (large synthetic metadata)")
    parser.add_argument("--sections", default="python,r,r-long,large",
                        help="comma-separated subset of python (vs transferUQ via rpy2), r (one Rscript, matrices), "
                             "r-long (the same Rscript, long data frames with r = 1 and r = 2), large")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(large_child(args.child)))
        return
    n_threads = threads(args.threads or os.cpu_count() or 1)
    rounds = args.rounds or (3 if args.quick else 7)
    global WORST_PAIRS
    WORST_PAIRS = 1 if args.quick else len(PAIRS)
    slow_rounds = 1 if args.quick else 2
    lib, why = transferuq_setup(args.transferuq_src, args.transferuq_lib)
    if lib is None:
        print(f"SKIPPING the transferUQ peer: {why}", flush=True)
    run = Run("transfer", quick=args.quick, python_packages=["rpy2"],
              r_packages=["transferUQ", "llmsurrogate", "reticulate", "lpSolve", "jsonlite"] if lib else (),
              r_lib=lib,
              notes=f"speedup = peer / ours per call. Both sides on {n_threads} thread(s) (R's transferUQ is "
                    "single-threaded). 'ours' computes what transferUQ computes (mode/order = 'transferUQ'); "
                    "'ours_defaults' the package's defaults; 'numpy_reimplementation_of_transferUQ' is our "
                    "re-implementation of transferUQ's algorithms in NumPy/SciPy, an extra line, not the peer. "
                    "transferUQ's check_worstcase_dominance (~13 s a call) gets no warm-up call and fewer rounds.")
    if lib is None:
        run.extra["transferUQ_skipped"] = why
    from llmsurrogate.datasets import load_transfer_errors

    raw = {m: load_transfer_errors(m) for m in MODELS}
    inv = {m: 1 / load_transfer_errors(m, "normalized") for m in MODELS}
    check_agreement(raw, inv)
    sections = set(args.sections.split(","))
    run.extra["sections"] = sorted(sections)
    if "python" in sections:
        print("-- Python: ours vs transferUQ in R through rpy2 (same process)", flush=True)
        py = run_application(run, raw, inv, lib, rounds, slow_rounds, numpy_line=not args.no_numpy_line)
        totals = {}
        for side in py["forecast_interval"]["sides"]:
            totals[side] = sum(py[fn]["sides"][side]["min_s"] * (len(PAIRS) if fn == "check_worstcase_dominance"
                                                                 else WORK_CALLS[fn]) for fn in WORK_CALLS)
        run.extra["python_workload_total_min_s"] = totals
        print("   whole workload (sum of calls x per-call min): " + ", ".join(f"{k} {v:.3f} s" for k, v in totals.items()))
    parts = [part for part, key in (("matrix", "r"), ("long", "r-long")) if key in sections]
    if lib is not None and parts:
        print("-- R: our R package vs transferUQ in the same R process", flush=True)
        res = run_r_section(run, lib, rounds, slow_rounds, parts)
        if res is not None and res.get("functions"):
            run.extra["r_breakdown_s"] = res["breakdown_s"]
            run.extra["r_versions"] = res["versions"]
            rt = {side: sum(row["sides"][side]["min_s"] * (len(PAIRS) if fn == "check_worstcase_dominance" else row["calls"])
                            for fn, row in res["functions"].items())
                  for side in ("ours", "transferUQ", "ours_defaults")}
            run.extra["r_workload_total_min_s"] = rt
            print("   R breakdown (ms per call): " + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in res["breakdown_s"].items()))
            print("   R whole workload (sum of calls x per-call min): " + ", ".join(f"{k} {v:.3f} s" for k, v in rt.items()))
    if not args.skip_large and "large" in sections:
        large = []
        env = dict(os.environ, LLMSURROGATE_NUM_THREADS=str(n_threads))
        for n in ((250, 500) if args.quick else (250, 500, 1000)):
            out = subprocess.run([sys.executable, __file__, "--child", str(n)], env=env, capture_output=True,
                                 text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            large.append(row)
            print(f"n = {n:5d} (N = {row['N']:>9,}): total {row['total_s']:.2f} s, peak RSS {row['peak_rss_mb']:.0f} MB; "
                  + ", ".join(f"{k} {v:.3f}" for k, v in row["times_s"].items()), flush=True)
        run.extra["large"] = large
        run.extra["large_note"] = "ours only (no peer at this size), one timed call per part in a fresh process"
    run.write(result_path("transfer", args.quick, args.out))


if __name__ == "__main__":
    main()
