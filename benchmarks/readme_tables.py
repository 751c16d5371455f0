"""Regenerate the README's speed section from the committed result files.

Every table comes from one JSON file written by benchmarks/_harness.py (``comparisons`` with all
rounds), and carries that file's date, machine and load average next to it, so that no number in
the README lacks a file behind it. A full run's file (``results/<name>.json``, the canonical tree) is
preferred; where only a quick run exists (``quick/<name>.json``, git-ignored) its table says so. Files in the old format
(one timing, no rounds or load) are listed as not regenerated.

    python benchmarks/readme_tables.py            # print the section
    python benchmarks/readme_tables.py --write    # replace it in README.md between the markers

The section lies between ``<!-- speed:begin -->`` and ``<!-- speed:end -->`` in README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"  # the canonical tree: one file per benchmark
QUICK = HERE / "quick"  # quick runs (git-ignored)
SECOND_RUN = RESULTS / "reproducibility" / "second_run"  # a second full run, compared by compare_runs.py
README = HERE.parent / "README.md"
BEGIN, END = "<!-- speed:begin -->", "<!-- speed:end -->"
ORDER = ["transfer", "quantiles", "ess", "risk_scores", "llm_cpu", "llm_http", "transfer_build", "transfer_nls",
         "lookahead", "scale", "llm_gpu"]  # llm_gpu: old format (needs a GPU), listed as not regenerated


def _fmt_s(s: float) -> str:
    if s != s:  # NaN
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _fmt_x(x: float) -> str:
    return f"{x:.0f}x" if x >= 100 else f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


def _load(v) -> str:
    return "?" if not v else " / ".join(f"{x:.2f}" for x in v)


def _header(name: str, d: dict, path: Path) -> list[str]:
    env = d.get("environment", {})
    rel = path.relative_to(HERE.parent)
    when = env.get("date_utc", "?")
    machine = f"{env.get('cpu_model', '?')}, {env.get('cpu_count', '?')} cores, {env.get('machine', '')}"
    lines = [f"**{name}** — `{rel}`, {when}; {machine}; load average (1/5/15 min) "
             f"{_load(d.get('load_before'))} before, {_load(d.get('load_after'))} after."]
    if d.get("quick"):
        lines.append("*Quick run (`make bench-quick`): fewer rounds; it checks the harness and is no claim.*")
    if d.get("notes"):
        lines.append(d["notes"])
    if d.get("transferUQ_skipped"):
        lines.append(f"transferUQ peer skipped: {d['transferUQ_skipped']}")
    return lines


def table_per_row_peer(d: dict) -> list[str]:
    """One line per (case, peer side) with the peer named in its own column: for files whose rows
    compare against different peers (``"table_style": "per_row_peer"``), which the one-column-per-
    side layout would spread over many mostly empty columns."""
    head = "| case | peer | ours (min) | peer (min) | peer / ours: min (median) | rounds | load before |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in d.get("comparisons", []):
        ours = r["sides"].get("ours")
        first = next(iter(r["sides"].values()))["rounds_s"]
        n_rounds = str(r.get("rounds", len(first) if isinstance(first, list) else 1))
        for name, s in r["sides"].items():
            if name == "ours":
                continue
            sp = r.get("speedup", {}).get(name)
            out.append("| " + " | ".join([
                r["case"], name, _fmt_s(ours["min_s"]) if ours else "-", _fmt_s(s["min_s"]),
                f"{_fmt_x(sp['min'])} ({_fmt_x(sp['median'])})" if sp else "-", n_rounds,
                _load(r.get("load_before"))]) + " |")
    return out


def table_scale(d: dict) -> list[str]:
    """scale.json: time and peak resident memory per error above the input, by size, and the growth
    exponents (slopes of log time and log peak on log N)."""
    head = "| case | ours (min) | np.partition (min) | ours / np.partition: min | peak above the input, B/error: ours (np.partition) | rounds | load before |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in d.get("comparisons", []):
        ours, peer = r["sides"]["ours"], r["sides"].get("np.partition")
        peak = r.get("peak_bytes_per_error") or {}
        if "peak_rss_bytes" in r:
            mem = f"{r['peak_rss_bytes'] / 1e6:.0f} MB peak RSS in all ({r['file_bytes'] / 1e9:.1f} GB file)"
        else:
            mem = f"{peak.get('ours', float('nan')):.1f}" + (f" ({peak['np.partition']:.1f})" if "np.partition" in peak else "")
            if "np.partition" not in peak and (r.get("peak_process_bytes") or {}).get("ours"):
                mem += f"; whole process {r['peak_process_bytes']['ours'] / 1e9:.2f} GB"
        out.append("| " + " | ".join([
            r["case"], _fmt_s(ours["min_s"]), _fmt_s(peer["min_s"]) if peer else "-",
            _fmt_x(ours["min_s"] / peer["min_s"]) if peer else "-", mem, str(r.get("rounds", 1)),
            _load(r.get("load_before"))]) + " |")
    growth = d.get("growth_exponents") or {}
    if growth:
        out += ["", "Growth exponents (log time and log peak on log N, smallest to largest size): " + "; ".join(
            f"{case}: " + ", ".join(f"{side} time {g['time']:.2f}, peak {g['peak']:.2f}" for side, g in sides.items())
            for case, sides in growth.items() if sides) + "."]
    return out


def table_build_scale(d: dict) -> list[str]:
    """scale_build*.json: one EU r = 2 build per code (ours, the code before issue 37), its peak memory
    per error and the Parquet write; and scikit-learn builds at the default n_jobs and one job."""
    out = ["| code | errors | build | peak above the start, B/error | write (Parquet) | write peak, B/error |",
           "|---|---|---|---|---|---|"]
    for code, b in d.get("build", {}).items():
        if not isinstance(b, dict):
            continue
        out.append(f"| {code} | {b['N']:,} | {_fmt_s(b['build_s'])} | {b['build_bytes_per_error']:.1f} | "
                   f"{_fmt_s(b.get('write_s', float('nan')))} | {b.get('write_bytes_per_error', float('nan')):.1f} |")
    if d.get("build", {}).get("same_table"):
        out += ["", "Both codes' tables have the same SHA-256."]
    sk = d.get("sklearn") or {}
    if sk:
        out += ["", "| scikit-learn build (first call / warm call) | time |", "|---|---|"]
        out += [f"| {k} | {_fmt_s(v['first_s'])} / {_fmt_s(v['warm_s'])} |" for k, v in sk.items()]
    return out


def table(d: dict) -> list[str]:
    if d.get("table_style") == "per_row_peer":
        return table_per_row_peer(d)
    if str(d.get("benchmark", "")).startswith("scale_build") and not d.get("comparisons"):
        return table_build_scale(d)
    if d.get("table_style") == "scale":
        return table_scale(d)
    rows = d.get("comparisons", [])
    sides: list[str] = []
    for r in rows:
        for s in r["sides"]:
            if s not in sides:
                sides.append(s)
    peers = [s for s in sides if s != "ours"]
    head = "| case | ours (min) | " + " | ".join(f"{p} (min)" for p in peers) + " | " + \
        " | ".join(f"{p} / ours: min (median)" for p in peers) + " | rounds | load before |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [r["case"], _fmt_s(r["sides"]["ours"]["min_s"]) if "ours" in r["sides"] else "-"]
        cells += [_fmt_s(r["sides"][p]["min_s"]) if p in r["sides"] else "-" for p in peers]
        sp = r.get("speedup", {})
        cells += [f"{_fmt_x(sp[p]['min'])} ({_fmt_x(sp[p]['median'])})" if p in sp else "-" for p in peers]
        first = next(iter(r["sides"].values()))["rounds_s"]
        cells += [str(r.get("rounds", len(first) if isinstance(first, list) else 1)), _load(r.get("load_before"))]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _row_notes(d: dict) -> list[str]:
    """Per-row facts a table cannot show (lookahead.json): measured per-replication times behind an
    extrapolated bootstrap row, and how a peer's default fared where it was run once."""
    out = []
    for r in d.get("comparisons", []):
        pr = r.get("per_replication_s")
        if pr:
            one = (f" ({_fmt_s(pr['ours_1_thread_min'])} on one thread, pyfixest / that "
                   f"{_fmt_x(pr['pyfixest_min'] / pr['ours_1_thread_min'])})") if pr.get("ours_1_thread_min") else ""
            out.append(f"{r['case']}: per replication (min) ours {_fmt_s(pr['ours_min'])}{one}, pyfixest "
                       f"{_fmt_s(pr['pyfixest_min'])} measured on {r.get('peer_reps_per_round', '?')} replications per "
                       f"round; the pyfixest column is that time x {r.get('reps', 0) / r.get('peer_reps_per_round', 1):.0f} "
                       "(extrapolated, not run).")
        dd = r.get("pyfixest_default_demeaner")
        if dd:
            what = ("fitted" + (f", coefficients within {dd['coef_max_rel_err_vs_ours']:.1e} (relative) of ours"
                                if "coef_max_rel_err_vs_ours" in dd else "")) if dd.get("outcome") == "fitted" \
                else f"failed: {dd.get('error', '?')}"
            out.append(f"{r['case']}: pyfixest's default demeaner (run once) {what}, in {_fmt_s(dd['seconds'])}.")
    return [" ".join(out), ""] if out else []


def _ess_notes(d: dict) -> list[str]:
    """ess.json: per-prediction times of the accumulation layer, the in-L2 comparison and the
    accumulator's share of a real ESS run (where the remaining factor to the floor comes from)."""
    layer, l2, share = d.get("layer"), d.get("in_l2"), d.get("accumulation_share")
    out = []
    if layer:
        ns = layer["ns_per_prediction"]
        out.append("Per prediction (ns, sum of per-size minima over the grid): " +
                   ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in ns.items()) + ".")
    if l2:
        out.append(f"With the predictions already in L2 (n = {l2['n']:,}, {l2['rows_per_call']} rows per call, each "
                   f"side's empty-call cost subtracted) the kernel takes {l2['ours_ns_per_prediction']:.2f} ns and "
                   f"np.sum {l2['floor_ns_per_prediction']:.2f} ns per prediction ({_fmt_x(l2['ratio'])}): the kernel "
                   "is compute-bound there (a loss, the difference loss, two pending sums and two lane sums per "
                   "prediction against one addition).")
    if share:
        out.append(f"Inside an L1-logit ESS run (n = {share['n']:,}, {len(share['grid'])} training sizes, "
                   f"{share['n_jobs']} jobs) the accumulator took {share['accumulator_s']:.3f} s of "
                   f"{share['ess_run_s']:.2f} s ({100 * share['share']:.1f}%).")
    return [" ".join(out), ""] if out else []


def _scale_risk(name: str) -> list[str]:
    """scale_risk.json (and the old code's scale_risk_before.json): risk_scores along a run of many
    prompts, resident memory sampled (no peer: memory per prompt is the measure)."""
    out = []
    for label, fname in (("now", name), ("before issue 37", f"{name}_before")):
        path = RESULTS / f"{fname}.json"
        if not path.exists():
            continue
        d = json.loads(path.read_text())
        out.append(f"| {label} | {d['prompts']:,} | {_fmt_s(d['seconds'])} | {d['prompts_per_second']:.0f} | "
                   f"{d['rss_mb_before']:.0f} / {d['rss_mb_peak']:.0f} / {d['rss_mb_end']:.0f} | "
                   f"{d['rss_growth_bytes_per_prompt']:.0f} | {_load(d.get('load_before'))} |")
    head = ["**risk_scores at scale** — `benchmarks/results/scale_risk.json` and `scale_risk_before.json` "
            "(`benchmarks/bench_scale_risk.py`: the tiny model, 2 prompts a row, on-disk cache, resident memory "
            "sampled every second; one run each, no peer).", "",
            "| code | prompts | time | prompts/s | RSS MB before / peak / end | growth, B/prompt | load before |",
            "|---|---|---|---|---|---|---|"]
    return head + out + [""]


def _scale_ess(name: str) -> list[str]:
    """scale_ess.json: ESS at the default n_jobs against one job, time and peak resident memory."""
    d = json.loads((RESULTS / f"{name}.json").read_text())
    out = [f"**ESS at scale** — `benchmarks/results/{name}.json` (`benchmarks/bench_scale_ess.py`: {d.get('measured_as', '')}; "
           f"load {_load(d.get('load_before'))} before).", "",
           "| case | default n_jobs (min) | n_jobs = 1 (min) | default / one job | peak RSS MB (default) |",
           "|---|---|---|---|---|"]
    for c in d.get("cases", []):
        runs = c.get("runs", {}).get("default") or [{}]
        peak = max((r.get("rss_mb_peak_with_workers", float("nan")) for r in runs), default=float("nan"))
        ms = c.get("min_s", {})
        out.append(f"| {c['case']} (n = {c.get('n', '?'):,}) | {_fmt_s(ms.get('default', float('nan')))} | "
                   f"{_fmt_s(ms.get('1', float('nan')))} | {c.get('default_over_one_job', float('nan')):.2f} | {peak:.0f} |")
    return out + [""]


def _scale_ess_backends(name: str) -> list[str]:
    """scale_ess_backends.json (and ``scale_ess_backends_every_chunk.json``, the code before the cost
    rule, when present): ESS under one job, the default n_jobs, and the default on Dask and Ray."""
    d = json.loads((RESULTS / f"{name}.json").read_text())
    before_path = RESULTS / f"{name}_every_chunk.json"
    before = {c["case"]: c for c in json.loads(before_path.read_text())["cases"]} if before_path.exists() else {}
    out = [f"**ESS on a cluster** — `benchmarks/results/{name}.json` (`benchmarks/bench_scale_ess.py --backends`: "
           f"{d.get('measured_as', '')}; Dask LocalCluster of 2 worker processes, Ray with 2 CPUs, the default "
           f"n_jobs on both; {d.get('rounds', '?')} rounds, min; load {_load(d.get('load_before'))} before)"
           + (f"; before: `{before_path.name}`, the code that sent every chunk to the cluster" if before else "")
           + ". Chunks sent: the chunks of block fits handed to the cluster, of all.", "",
           "| case | n_jobs = 1 | default | Dask | Ray | chunks sent (Dask / Ray) | before: Dask / Ray |",
           "|---|---|---|---|---|---|---|"]
    for c in d.get("cases", []):
        ms = c.get("min_s", {})

        def sent(side, case=c):
            rs = case.get("runs", {}).get(side) or [{}]
            return "/".join(sorted({str(r.get("chunks_sent")) for r in rs}))

        old = before.get(c["case"], {}).get("min_s", {})
        was = f"{_fmt_s(old['dask'])} / {_fmt_s(old['ray'])}" if "dask" in old and "ray" in old else "—"
        out.append(f"| {c['case']} (n = {c.get('n', '?'):,}) | {_fmt_s(ms.get('1', float('nan')))} | "
                   f"{_fmt_s(ms.get('default', float('nan')))} | {_fmt_s(ms.get('dask', float('nan')))} | "
                   f"{_fmt_s(ms.get('ray', float('nan')))} | {sent('dask')} / {sent('ray')} | {was} |")
    return out + [""]


#: result files of memory runs (no interleaved peer), each with its own table
_MEMORY_RUNS = {"scale_risk": _scale_risk, "scale_ess": _scale_ess, "scale_ess_backends": _scale_ess_backends}
_SHOWN_WITH = {"scale_risk_before", "scale_ess_backends_every_chunk"}   # shown in their run's table


def section() -> str:
    lines = ["## Speed", "",
             "Generated by `python benchmarks/readme_tables.py --write` from the result files named under each "
             "table (`make bench` writes them, `make bench-quick` a quick subset under `benchmarks/quick/`). Every "
             "comparison runs through `benchmarks/_harness.py`: warm-up, interleaved rounds of ours and the peer, "
             "min and median, load average before and after, equal threads; speedup = peer time / our time.", ""]
    second = SECOND_RUN
    if second.is_dir():
        import sys

        sys.path.insert(0, str(HERE))
        from compare_runs import compare

        _, ok, total = compare(RESULTS, second, 0.25)
        lines += [f"Reproduced: a second `make bench` right after this one (`benchmarks/results/reproducibility/second_run/`, "
                  f"set side by side in `benchmarks/results/reproducibility/README.md` by `benchmarks/compare_runs.py`) gave "
                  f"{ok} of {total} ratios within 25% of these by the median; the rest are listed there. Ratios near "
                  "1x are ties, and a second run can put the other side ahead (the 61-level quantiles against "
                  "NumPy, 1.2x then 0.9x at n = 100,000; the LM-head saving at the tiny 800-token vocabulary).", ""]
    legacy = []
    names = [n for n in ORDER if (RESULTS / f"{n}.json").exists() or (QUICK / f"{n}.json").exists()]
    names += sorted({p.stem for p in RESULTS.glob("*.json")} - set(names))
    for name in names:
        chosen = None
        for path in (RESULTS / f"{name}.json", QUICK / f"{name}.json"):
            if path.exists():
                d = json.loads(path.read_text())
                if "comparisons" in d:
                    chosen = (path, d)
                    break
        if chosen is None:
            if name in _MEMORY_RUNS:
                lines += _MEMORY_RUNS[name](name)
            elif name not in _SHOWN_WITH:
                legacy.append(name)
            continue
        path, d = chosen
        lines += _header(name, d, path) + [""] + table(d) + [""]
        for key, label in (("python_workload_total_min_s", "whole workload from Python"),
                           ("r_workload_total_min_s", "whole workload from R")):
            tot = d.get(key)
            if tot and "ours" in tot:
                parts = ", ".join(f"{k} {_fmt_s(v)}" for k, v in tot.items())
                ratio = "; ".join(f"{k} / ours {_fmt_x(v / tot['ours'])}" for k, v in tot.items() if k != "ours")
                lines += [f"{label} (sum of calls x per-call min): {parts}; {ratio}.", ""]
        lines += _row_notes(d)
        if name == "ess":
            lines += _ess_notes(d)
        bd = d.get("r_breakdown_s")
        if bd:
            lines += ["Where one R call's time goes (forecast_interval, 44 x 44 matrix, per call): " +
                      ", ".join(f"{k.replace('_', ' ')} {_fmt_s(v)}" for k, v in bd.items()) + ".", ""]
    gpu = [n for n in legacy if n.endswith("_gpu")]
    cpu = [n for n in legacy if n not in gpu]
    if cpu:
        lines += ["Not regenerated (result files in the old format, one timing without rounds or load; rerun "
                  "with `make bench`): " + ", ".join(f"`benchmarks/results/{n}.json`" for n in cpu) +
                  ". Their numbers quoted elsewhere in this README predate the harness.", ""]
    if gpu:
        lines += ["Not regenerated: " + ", ".join(f"`benchmarks/results/{n}.json`" for n in gpu) +
                  " (old format; it needs a GPU, which `make bench` does not assume: run "
                  "`benchmarks/bench_llm_gpu.py` on a GPU machine). Its numbers in this README come from one "
                  "earlier run on an H100.", ""]
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="replace the section in README.md")
    args = parser.parse_args()
    text = section()
    if not args.write:
        print(text)
        return 0
    readme = README.read_text()
    block = f"{BEGIN}\n{text}{END}"
    if BEGIN in readme and END in readme:
        start, end = readme.index(BEGIN), readme.index(END) + len(END)
        readme = readme[:start] + block + readme[end:]
    else:  # before "## Tests" (or at the end)
        anchor = readme.find("\n## Tests")
        readme = readme[:anchor + 1] + block + "\n\n" + readme[anchor + 1:] if anchor >= 0 else readme + "\n" + block + "\n"
    README.write_text(readme)
    print(f"updated {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
