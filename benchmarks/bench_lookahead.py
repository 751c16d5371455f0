"""Lookahead-bias benchmarks against pyfixest 0.60 and NumPy, timed in the same process with
benchmarks/_harness.py (warm-up, interleaved rounds, min and median, load, versions).

1. **Pairs bootstrap**, 10,000 replications of ``y ~ llm + lap + llm:lap | firm + date`` on 9,942
   observations (the paper's out-of-sample size; 900 firms, 335 dates, standardised variables):
   ``lookahead.bootstrap`` (Rust, integer resampling weights) against the same loop written with
   pyfixest (draw row indices with NumPy, ``pf.feols`` on the resampled frame, keep the
   interaction coefficient; ``fixef_rm="none"`` and iid errors as ours). pyfixest takes about
   16 ms a replication, so each of its rounds runs ``--peer-reps`` replications and the row reports
   its time **extrapolated** to 10,000 (x 10,000 / peer-reps; labelled so) next to ours on the full
   10,000; the per-replication times are in the JSON, with ours on one thread (same draws) as a
   per-core line (pyfixest's loop is Python-bound, one core). Before timing, pyfixest on the duplicated
   rows of our replications 0..4 (``bootstrap_counts``) must give our draws.
2. **One regression** with two-way clustered errors (``vcov={"CRV1": "firm+date"}``) on 91,361
   observations, 1,587 firms, 3,000 dates (the spec's §6.4 generator at the paper's size): ``fe.feols``
   against ``pf.feols``, both with their defaults (pyfixest's MAP demeaner stops at 1e-6, ours at
   a relative residual of 1e-12); coefficients and SEs asserted equal to 1e-5.
3. **The hard panel** of tests/fe/test_fe_feols.py (each of 1,587 firms active in a window of 58
   consecutive dates out of 3,000; 92,046 rows): ``fe.feols`` against pyfixest's LSMR demeaner
   (``LsmrDemeaner()``, its defaults, and at atol = btol = 1e-12 as an extra line); pyfixest's default
   demeaner is run once and its outcome (error and time) recorded.
4. **LAP reduction** over 1,000,000 texts of 60 tokens (float32 cached log-probabilities, the first
   token of each unscored, K = 20%: the mean of the 11 lowest of 59): ``lap_from_logprobs`` on one
   thread against NumPy on one thread (``np.partition`` on the (texts x 59) array, which NumPy gets
   for free here because every text has the same length), and ours on all threads as its own
   named row; results asserted equal (rtol 1e-6). ``--baseline-core PATH`` times an earlier build's
   ``_core`` extension (a ``.so`` built from an older commit) as a third side of the same rounds: a
   before/after in one run. The row names the selection path (AVX-512F where the CPU has it).

``--only`` runs some sections; their rows replace the same sections' rows of an existing result
file and the other rows are kept (each marked with the run it came from), so that one section can
be re-measured without re-running the rest.

Rows 1-3 run both sides on ``--threads`` threads (default: all cores; pyfixest's Rust demeaner
reads RAYON_NUM_THREADS, set by the harness like ours).

    python benchmarks/bench_lookahead.py [--quick] [--rounds 3] [--peer-reps 200] [--threads 2]
        [--only lap] [--baseline-core /path/to/_core.abi3.so]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import threads  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

_cores = os.cpu_count() or 1
if "--threads" not in sys.argv:  # before numpy, pyfixest and llmsurrogate read the thread variables
    threads(_cores)
    os.environ["NUMBA_NUM_THREADS"] = str(_cores)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import llmsurrogate  # noqa: E402
from llmsurrogate import fe  # noqa: E402
from llmsurrogate import lookahead as la  # noqa: E402
from llmsurrogate.exceptions import LLMSurrogateWarning  # noqa: E402

from _samples import hard_panel  # noqa: E402  (tests/_samples.py: the hard panel of tests/fe/test_fe_feols.py)

FML = "y ~ llm + lap + llm:lap | firm + date"


def oos_panel(n=9_942, n_firms=900, n_dates=335, seed=3):
    """The spec's §6.5 linear DGP at the paper's out-of-sample size, standardised (Table V)."""
    rng = np.random.default_rng(seed)
    firm = rng.integers(0, n_firms, n)
    date = rng.integers(0, n_dates, n)
    a = rng.normal(0, 1, n_firms)
    b = rng.normal(0, 1, n_dates)
    llm = rng.choice([-1.0, 0.0, 1.0], n, p=[0.4, 0.15, 0.45])
    lap = rng.normal(0, 1, n) + 0.5 * a[firm]
    y = a[firm] + b[date] + 0.2 * llm - 0.3 * lap + 0.1 * llm * lap + rng.normal(0, 1, n) + rng.normal(0, 0.5, n_dates)[date]
    z = lambda v: (v - v.mean()) / v.std(ddof=1)  # noqa: E731
    return pd.DataFrame(dict(y=z(y), llm=z(llm), lap=z(lap), firm=firm, date=date))


def paper_panel(n_firms=1_587, n_dates=3_000, n_obs=91_361, seed=1):
    """docs/methods/lookahead.md §6.4's generator at the paper's size."""
    rng = np.random.default_rng(seed)
    firm = rng.integers(0, n_firms, n_obs)
    date = rng.integers(0, n_dates, n_obs)
    a = rng.normal(0, 1, n_firms)
    b = rng.normal(0, 2, n_dates)
    llm = rng.choice([-1.0, 0.0, 1.0], n_obs, p=[0.4, 0.15, 0.45])
    lap = rng.gamma(6.0, 0.012, n_obs) + 0.01 * a[firm]
    u = rng.normal(0, 4, n_obs) + rng.normal(0, 1.5, n_dates)[date]
    y = a[firm] + b[date] + 0.2 * llm - 0.3 * lap + 0.5 * llm * lap + u
    return pd.DataFrame(dict(y=y, llm=llm, lap=lap, firm=firm, date=date))


def numpy_min_k(values: np.ndarray, n_texts: int, length: int, frac: float = 0.2) -> np.ndarray:
    """LAP (exp of the mean of the floor(frac * n) lowest log-probabilities, first token unscored)
    for texts of equal ``length``: a vectorised NumPy reference (np.partition per row)."""
    scored = values.reshape(n_texts, length)[:, 1:]
    k = max(1, int(frac * (length - 1)))
    bottom = np.partition(scored, k - 1, axis=1)[:, :k]
    return np.exp(bottom.mean(axis=1, dtype=np.float64))


def bench_bootstrap(run, args, pf, n_threads):
    df = oos_panel()
    n = len(df)
    reps = 1_000 if args.quick else 10_000
    peer_reps = args.peer_reps or (20 if args.quick else 200)
    seed = 20260101
    # correctness first: pyfixest on the duplicated rows of our replications 0..4 gives our draws
    ours = la.bootstrap(df, "y", "llm", "lap", n_boot=5, seed=seed)
    for b in range(5):
        idx = np.repeat(np.arange(n), la.bootstrap_counts(n, seed, b).astype(np.int64))
        ref = pf.feols(FML, df.iloc[idx], vcov="iid", fixef_rm="none",
                       demeaner=pf.demeaners.MapDemeaner(fixef_tol=1e-12)).coef()["llm:lap"]
        assert abs(ours.draws[b] - ref) <= 1e-7 * max(1.0, abs(ref)), (b, ours.draws[b], ref)
    rng = np.random.default_rng(seed)

    def peer_loop():
        out = np.empty(peer_reps)
        for b in range(peer_reps):
            d = df.iloc[rng.integers(0, n, n)]
            out[b] = pf.feols(FML, d, vcov="iid", fixef_rm="none").coef()["llm:lap"]
        return out

    last = {}

    def ours_full():
        last["res"] = la.bootstrap(df, "y", "llm", "lap", n_boot=reps, seed=seed)

    def ours_one_thread():   # the same draws on one thread: the per-core comparison
        la.bootstrap(df, "y", "llm", "lap", n_boot=reps, seed=seed, n_jobs=1)

    from _harness import interleave, loadavg, summarize

    load = loadavg()
    res = interleave({"ours": ours_full, "pyfixest": peer_loop, "ours_1_thread": ours_one_thread},
                     rounds=args.rounds or (2 if args.quick else 3))
    scale = reps / peer_reps
    peer_ext = summarize([t * scale for t in res["pyfixest"]["rounds_s"]])
    draws = np.asarray(last["res"].draws)
    row = run.add(
        f"pairs bootstrap, {reps:,} reps, n = {n:,} (pyfixest: {peer_reps} reps per round, extrapolated x{scale:.0f})",
        {"ours": res["ours"], "pyfixest (extrapolated)": peer_ext}, peer_name="pyfixest (extrapolated)",
        load_before=load, rounds=len(res["ours"]["rounds_s"]), warmup=1, threads=f"{n_threads} both", n=n, reps=reps,
        section="bootstrap",
        peer_reps_per_round=peer_reps, peer_measured=res["pyfixest"], ours_1_thread=res["ours_1_thread"],
        per_replication_s={"ours_min": res["ours"]["min_s"] / reps, "ours_median": res["ours"]["median_s"] / reps,
                           "ours_1_thread_min": res["ours_1_thread"]["min_s"] / reps,
                           "pyfixest_min": res["pyfixest"]["min_s"] / peer_reps,
                           "pyfixest_median": res["pyfixest"]["median_s"] / peer_reps},
        peer_call='pf.feols(fml, df.iloc[rng.integers(0, n, n)], vcov="iid", fixef_rm="none").coef()["llm:lap"]',
        check="pyfixest (MAP at 1e-12) on the duplicated rows of our replications 0..4 equals our draws to 1e-7",
        ours_bootstrap_sd=float(np.nanstd(draws, ddof=1)), ours_nan_draws=int(np.isnan(draws).sum()))
    pr = row["per_replication_s"]
    print(f"  per replication (min): ours {pr['ours_min'] * 1e3:.3f} ms ({n_threads} threads), "
          f"{pr['ours_1_thread_min'] * 1e3:.3f} ms (1 thread), pyfixest {pr['pyfixest_min'] * 1e3:.2f} ms")


def bench_regression(run, args, pf, n_threads):
    df = paper_panel()
    vcov = {"CRV1": "firm+date"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        o = fe.feols(FML, df, vcov=vcov)
        p = pf.feols(FML, df, vcov=vcov)
    np.testing.assert_allclose(o.coef().to_numpy(), p.coef().to_numpy(), rtol=1e-5)
    np.testing.assert_allclose(o.se().to_numpy(), p.se().to_numpy(), rtol=1e-5)

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLMSurrogateWarning)
            fe.feols(FML, df, vcov=vcov)

    def peer():
        pf.feols(FML, df, vcov=vcov)

    run.compare(f"two-way FE regression, two-way clustered SEs, n = {len(df):,} ({df.firm.nunique():,} firms, "
                f"{df.date.nunique():,} dates)", ours, peer, peer_name="pyfixest",
                rounds=args.rounds or (5 if args.quick else 9), threads_note=f"{n_threads} both", n=len(df), section="regression",
                ours_demean_iterations=int(o.demean_iterations), ours_demean_residual=float(o.demean_residual),
                settings="both defaults: ours CG to relative residual 1e-12; pyfixest MAP (Rust) to 1e-6")


def bench_hard(run, args, pf, n_threads):
    df = hard_panel()
    vcov = {"CRV1": "date"}
    Lsmr = pf.demeaners.LsmrDemeaner
    o = fe.feols(FML, df, vcov=vcov)
    p = pf.feols(FML, df, vcov=vcov, demeaner=Lsmr(fixef_atol=1e-12, fixef_btol=1e-12))
    np.testing.assert_allclose(o.coef().to_numpy(), p.coef().to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(o.se().to_numpy(), p.se().to_numpy(), rtol=1e-8)
    # pyfixest's default demeaner, once
    t = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = pf.feols(FML, df, vcov=vcov)
        default = {"outcome": "fitted", "coef_max_rel_err_vs_ours": float(np.max(np.abs(
            d.coef().to_numpy() / o.coef().to_numpy() - 1)))}
    except Exception as e:  # noqa: BLE001 - its failure is the point
        default = {"outcome": "error", "error": f"{type(e).__name__}: {str(e)[:300]}"}
    default["seconds"] = time.perf_counter() - t
    print(f"  pyfixest default demeaner on the hard panel: {default}")
    run.compare(f"hard panel (window of 58 of 3,000 dates per firm), n = {len(df):,}, CRV1 by date",
                lambda: fe.feols(FML, df, vcov=vcov),
                lambda: pf.feols(FML, df, vcov=vcov, demeaner=Lsmr()), peer_name="pyfixest LSMR",
                extra={"pyfixest LSMR atol=btol=1e-12": lambda: pf.feols(
                    FML, df, vcov=vcov, demeaner=Lsmr(fixef_atol=1e-12, fixef_btol=1e-12))},
                rounds=args.rounds or (3 if args.quick else 7), threads_note=f"{n_threads} both", n=len(df), section="hard",
                ours_demean_iterations=int(o.demean_iterations), ours_demean_residual=float(o.demean_residual),
                pyfixest_default_demeaner=default,
                settings="ours: defaults; pyfixest: LsmrDemeaner() (atol = btol = 1e-8) and at 1e-12")


def selection_path() -> str:
    """The Min-K% selection the kernel takes on this CPU (rust/lookahead/select.rs dispatches on
    AVX-512F at run time)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown (no /proc/cpuinfo)"
    return "AVX-512F (float32, k <= 128)" if " avx512f" in flags else "scalar"


def load_core(path: str):
    """An earlier build's ``_core`` extension, loaded beside the current one under another name."""
    spec = importlib.util.spec_from_file_location("_baseline_build._core", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--baseline-core: cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@contextlib.contextmanager
def core_swapped(core):
    """``lap_from_logprobs`` calling ``core``'s kernels (the Python layer unchanged)."""
    from llmsurrogate.lookahead import _lap

    saved = _lap._core
    _lap._core = core
    try:
        yield
    finally:
        _lap._core = saved


def bench_lap(run, args):
    n_texts = 100_000 if args.quick else 1_000_000
    length = 60
    rng = np.random.default_rng(5)
    values = (-rng.exponential(2.0, n_texts * length)).astype(np.float32)
    values[::length] = np.nan                     # the first token of each text has no log-probability
    offsets = np.arange(0, n_texts * length + 1, length, dtype=np.int64)
    ours1 = la.lap_from_logprobs((values, offsets), k=0.2, n_jobs=1)
    ref = numpy_min_k(values, n_texts, length)
    np.testing.assert_allclose(ours1, ref, rtol=1e-6)
    rounds = args.rounds or (3 if args.quick else 7)
    n_all = os.cpu_count() or 1
    extra1, extra_all, info = {}, {}, {}
    if args.baseline_core:
        old = load_core(args.baseline_core)
        with core_swapped(old):
            before = la.lap_from_logprobs((values, offsets), k=0.2, n_jobs=1)
        assert np.array_equal(before.view(np.uint64), ours1.view(np.uint64)), "the baseline build gives other bits"

        def side(n_jobs):
            def f():
                with core_swapped(old):
                    la.lap_from_logprobs((values, offsets), k=0.2, n_jobs=n_jobs)
            return f

        extra1 = {"ours before (baseline build)": side(1)}
        extra_all = {"ours before (baseline build)": side(n_all)}
        info = {"baseline_core": os.path.basename(args.baseline_core), "baseline_same_bits": True}
    run.compare(f"LAP (Min-K%, K = 20%) of {n_texts:,} texts x {length} tokens, 1 thread each",
                lambda: la.lap_from_logprobs((values, offsets), k=0.2, n_jobs=1),
                lambda: numpy_min_k(values, n_texts, length), peer_name="numpy (np.partition)", extra=extra1,
                rounds=rounds, threads_note="1 both", n_texts=n_texts, tokens=length, section="lap",
                selection=selection_path(), check="equal to rtol 1e-6",
                max_rel_diff=float(np.max(np.abs(ours1 / ref - 1))), **info)
    run.compare(f"LAP of {n_texts:,} texts, ours on {n_all} threads vs numpy on 1",
                lambda: la.lap_from_logprobs((values, offsets), k=0.2, n_jobs=n_all),
                lambda: numpy_min_k(values, n_texts, length), peer_name="numpy (np.partition)", extra=extra_all,
                rounds=rounds, threads_note=f"ours {n_all}, numpy 1", n_texts=n_texts, tokens=length, section="lap",
                selection=selection_path(), **info)


SECTIONS = ("bootstrap", "regression", "hard", "lap")
_CASE_PREFIX = {"pairs bootstrap": "bootstrap", "two-way FE regression": "regression", "hard panel": "hard", "LAP": "lap"}


def section_of(row: dict) -> str | None:
    """The section a result row belongs to (rows written before rows named it: by the case)."""
    if "section" in row:
        return row["section"]
    return next((name for prefix, name in _CASE_PREFIX.items() if row["case"].startswith(prefix)), None)


def merge_rows(run, path: Path, only: set[str]) -> None:
    """Rows of the sections not run now are taken from the existing ``path`` (marked with the run
    they came from); a re-run row records the row it replaces under ``previous``."""
    if only >= set(SECTIONS) or not path.exists():
        return
    old = json.loads(path.read_text())
    stamp = {"date_utc": old.get("environment", {}).get("date_utc"), "load_before": old.get("load_before")}
    replaced = {row["case"]: row for row in old.get("comparisons", []) if section_of(row) in only}
    for row in run.comparisons:
        prev = replaced.get(row["case"])
        if prev is not None:
            row["previous"] = {"date_utc": prev.get("from_run", stamp)["date_utc"],
                               "load_before": prev.get("load_before"), "sides": prev.get("sides"),
                               "speedup": prev.get("speedup")}
    kept = [dict(row, from_run=row.get("from_run", stamp)) for row in old.get("comparisons", [])
            if section_of(row) not in only]
    order = {name: i for i, name in enumerate(SECTIONS)}
    run.comparisons = sorted(kept + run.comparisons, key=lambda row: order.get(section_of(row) or "", len(order)))
    run.extra["sections_run"] = sorted(only)
    others = sorted({section_of(row) or "?" for row in kept}, key=lambda name: order.get(name, len(order)))
    if others:
        run.notes += (f" This run re-measured {', '.join(sorted(only))}; the rows of {', '.join(others)} are from the run "
                      f"of {stamp['date_utc']} (each marked from_run).")


def main():
    from _harness import Run, add_common_args, result_path

    parser = argparse.ArgumentParser()
    add_common_args(parser)
    parser.add_argument("--peer-reps", type=int, default=None,
                        help="pyfixest bootstrap replications per round (default 200; quick 20)")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help="comma-separated subset of bootstrap,regression,hard,lap (their rows replace those of an "
                             "existing result file; the others are kept)")
    parser.add_argument("--baseline-core", default=None,
                        help="LAP: an earlier build's _core extension (.so) timed as a third side")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=LLMSurrogateWarning)   # the hard panel's 3 singletons, per call
    warnings.filterwarnings("ignore", message=".*singleton.*")         # pyfixest's note of the same
    n_threads = threads(args.threads or _cores)
    os.environ["NUMBA_NUM_THREADS"] = str(n_threads)
    import pyfixest as pf
    import pyfixest.demeaners  # noqa: F401

    run = Run("lookahead", quick=args.quick, python_packages=["pyfixest", "numba"],
              notes=f"speedup = peer / ours. FE rows: both sides on {n_threads} thread(s) "
                    f"(llmsurrogate.num_threads() = {llmsurrogate.num_threads()}, RAYON_NUM_THREADS for pyfixest's "
                    "Rust demeaner); the bootstrap's pyfixest time is extrapolated from fewer replications per round "
                    "(labelled); LAP rows name their threads.")
    run.extra["table_style"] = "per_row_peer"   # benchmarks/readme_tables.py: the peer named on each line
    only = set(args.only.split(","))
    if only - set(SECTIONS):
        parser.error(f"--only: unknown section(s) {sorted(only - set(SECTIONS))}; choose from {SECTIONS}")
    if "bootstrap" in only:
        bench_bootstrap(run, args, pf, n_threads)
    if "regression" in only:
        bench_regression(run, args, pf, n_threads)
    if "hard" in only:
        bench_hard(run, args, pf, n_threads)
    if "lap" in only:
        bench_lap(run, args)
    path = result_path("lookahead", args.quick, args.out)
    merge_rows(run, path, only)
    run.write(path)


if __name__ == "__main__":
    main()
