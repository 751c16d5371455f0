"""Do two benchmark runs agree? Every speedup of every comparison in one set of result files set
against the same comparison in another (two ``make bench`` runs on the same machine), so that a
README number that a second run does not reproduce shows up.

    python benchmarks/compare_runs.py benchmarks/results benchmarks/results/reproducibility/second_run \
        [--write benchmarks/results/reproducibility/README.md]

A ratio "reproduces" when the second run's value lies within ``--tolerance`` (default 25%) of the
first's, by the median of the rounds (the min is shown too). Files without harness comparisons
(old format) are listed as such.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _load(folder: Path) -> dict[str, dict]:
    out = {}
    for p in sorted(folder.glob("*.json")):
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        out[p.stem] = d
    return out


def _x(v: float) -> str:
    return f"{v:.3g}x" if v < 100 else f"{v:,.0f}x"


def _load_str(d: dict) -> str:
    lb = d.get("load_before")
    return " / ".join(f"{x:.2f}" for x in lb) if lb else "?"


def compare(a_dir: Path, b_dir: Path, tolerance: float) -> tuple[str, int, int]:
    a, b = _load(a_dir), _load(b_dir)
    lines = [f"# Two benchmark runs compared: `{a_dir}` (A) and `{b_dir}` (B)", "",
             f"Speedup = peer time / our time (min of the rounds; median in brackets). \"yes\" when B's median "
             f"ratio is within {tolerance:.0%} of A's.", ""]
    n_ok = n_all = 0
    for name in sorted(set(a) & set(b)):
        da, db = a[name], b[name]
        if "comparisons" not in da or "comparisons" not in db:
            lines += [f"**{name}**: old format in one of the runs; not compared.", ""]
            continue
        dates = (da.get("environment", {}).get("date_utc", "?"), db.get("environment", {}).get("date_utc", "?"))
        lines += [f"**{name}** — A {dates[0]} (load {_load_str(da)}), B {dates[1]} (load {_load_str(db)})", "",
                  "| case | against | A | B | B / A (median) | reproduces |", "|---|---|---|---|---|---|"]
        rows_b = {r["case"]: r for r in db["comparisons"]}
        for ra in da["comparisons"]:
            rb = rows_b.get(ra["case"])
            for side, sa in ra.get("speedup", {}).items():
                if rb is None or side not in rb.get("speedup", {}):
                    lines.append(f"| {ra['case']} | {side} | {_x(sa['min'])} ({_x(sa['median'])}) | - | - | not in B |")
                    continue
                sb = rb["speedup"][side]
                rel = sb["median"] / sa["median"] if sa["median"] else float("nan")
                ok = abs(rel - 1) <= tolerance
                n_all += 1
                n_ok += ok
                lines.append(f"| {ra['case']} | {side} | {_x(sa['min'])} ({_x(sa['median'])}) | "
                             f"{_x(sb['min'])} ({_x(sb['median'])}) | {rel:.2f} | {'yes' if ok else 'NO'} |")
        lines.append("")
    only = sorted(set(a) ^ set(b))
    if only:
        lines += ["In one run only: " + ", ".join(only) + ".", ""]
    lines += [f"{n_ok} of {n_all} ratios reproduce within {tolerance:.0%} (by the median).", ""]
    return "\n".join(lines), n_ok, n_all


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.25)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    text, _, _ = compare(args.a, args.b, args.tolerance)
    if args.write:
        args.write.write_text(text)
        print(f"wrote {args.write}")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
