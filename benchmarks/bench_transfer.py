"""Transfer inference (llmsurrogate.transfer) vs transferUQ-equivalent pure Python/NumPy code.

Part 1 (the 44-domain published matrices): every computation of the paper's application --
forecast intervals at 3 levels x 3 sides, a 61-beta QTE curve and an ETE interval per model, and
worst-case and everywhere dominance over 10 taus for 4 model pairs -- with our public API and with
a re-implementation of transferUQ 0.1.0's algorithms written from docs/methods/transfer.md (sorting per
call, per-j table() counts, an LP solver (HiGHS) per LP, root-finding on the U-statistic bound).
Both run in this process; the ratio is baseline time / our time.

Part 2 (large metadata): n synthetic domains with r = 1 (n = 1000: 999,000 errors): forecast
interval, weighted interval, the Gamma = inf worst-case curve, everywhere dominance at 20 taus and
a 61-beta QTE curve, each part timed, in a fresh process per n (peak memory from getrusage),
with LLMSURROGATE_NUM_THREADS=2.

    python benchmarks/bench_transfer.py [--quick]

Writes benchmarks/results/transfer.json.
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


def run_application(tables, ours_only=False):
    from llmsurrogate import transfer as tr

    raw, inv = tables

    def ours():
        tr.clear_rank_cache()  # time cold calls: the quantile-CI ranks are computed once per run
        for m in MODELS:
            for c in COVERAGES:
                for s in SIDES:
                    tr.forecast_interval(raw[m], c, s)
            tr.qte_interval(raw[m], 0.8, "two", BETAS)
            tr.ete_interval(inv[m], 0.8)
        for a, b in PAIRS:
            tr.check_worstcase_dominance(raw[a], raw[b], TAUS)
            tr.check_everywhere_dominance(raw[a], raw[b], TAUS)

    def baseline():
        for m in MODELS:
            M = raw[m].to_numpy()
            for c in COVERAGES:
                for s in SIDES:
                    b_forecast(M, c, s)
            b_qte(M, 0.8, BETAS, 2)
            b_ete(inv[m].to_numpy(), 0.8, 2)
        for a, b in PAIRS:
            b_worstcase(raw[a].to_numpy(), raw[b].to_numpy(), TAUS)
            b_everywhere(raw[a].to_numpy(), raw[b].to_numpy(), TAUS)

    ours()  # warm-up (imports, thread pools)
    t_ours = min(_timed(ours) for _ in range(5))
    t_base = math.nan if ours_only else _timed(baseline)
    return t_ours, t_base


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def check_agreement(raw, inv):
    """Baseline and ours agree where both compute the same quantity."""
    from llmsurrogate import transfer as tr

    for m in MODELS:
        for c in COVERAGES:
            for s in SIDES:
                assert tr.forecast_interval(raw[m], c, s) == b_forecast(raw[m].to_numpy(), c, s)
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the baseline (ours only)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(large_child(args.child)))
        return
    import llmsurrogate
    from llmsurrogate.datasets import load_transfer_errors

    raw = {m: load_transfer_errors(m) for m in MODELS}
    inv = {m: 1 / load_transfer_errors(m, "normalized") for m in MODELS}
    check_agreement(raw, inv)
    t_ours, t_base = run_application((raw, inv), ours_only=args.quick)
    print(f"44-domain application: ours {t_ours * 1e3:.1f} ms, transferUQ-equivalent {t_base:.2f} s, "
          f"speedup {t_base / t_ours:.0f}x")
    large = []
    env = dict(os.environ, LLMSURROGATE_NUM_THREADS="2")
    for n in (250, 500, 1000):
        out = subprocess.run([sys.executable, __file__, "--child", str(n)], env=env, capture_output=True, text=True,
                             check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        large.append(row)
        print(f"n = {n:5d} (N = {row['N']:>9,}): total {row['total_s']:.2f} s, peak RSS {row['peak_rss_mb']:.0f} MB; "
              + ", ".join(f"{k} {v:.3f}" for k, v in row["times_s"].items()))
    payload = {
        "llmsurrogate": llmsurrogate.__version__, "numpy": np.__version__, "cpu_count": os.cpu_count(),
        "machine": platform.machine(), "python": platform.python_version(),
        "application_44": {"ours_s": t_ours, "transferUQ_equivalent_s": t_base, "speedup": t_base / t_ours,
                           "calls": "4 models x (9 forecast intervals + 61-beta QTE + ETE) + 4 pairs x "
                                    "(worst-case + everywhere dominance at 10 taus)"},
        "large": large,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(payload, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
