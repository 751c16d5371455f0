"""The ``llmsurrogate ess`` command (registered by :mod:`llmsurrogate.cli`).

Finished grid points are cached under ``OUT/.ess_cache/<key>/`` where the key hashes the data file
and every argument that changes the numbers, so an interrupted run restarted with the same
arguments reuses them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import click

from .._cli_support import handle_errors, progress_bar, read_table, use_agg_backend


def _key(data_path: Path, args: dict) -> str:
    h = hashlib.sha256()
    with open(data_path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    h.update(json.dumps(args, sort_keys=True, default=str).encode())
    return h.hexdigest()[:20]


@click.command("ess")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file, one row per observation.")
@click.option("--outcome", required=True, help="Outcome column.")
@click.option("--prediction", default=None, help="Column with the fixed rule's (LLM's) predictions; omit for the error curve only.")
@click.option("--features", default=None, help="Comma-separated feature columns (default: all other columns).")
@click.option("--algorithm", default="rf", show_default=True, type=click.Choice(["rf", "lasso", "logit_l1", "mean", "majority"]))
@click.option("--loss", default="squared", show_default=True, type=click.Choice(["squared", "absolute", "zero_one", "brier", "log"]))
@click.option("--grid", default=None, help="Comma-separated training sizes (default 1, 2, 5, 10, ... up to n/2).")
@click.option("--alpha", default=0.05, show_default=True, type=float, help="One-sided level of the ESS bound.")
@click.option("--variance", default="difference", show_default=True, type=click.Choice(["difference", "sum"]))
@click.option("--regime", default="hybrid", show_default=True, type=click.Choice(["hybrid", "fixed_N", "fixed_B"]))
@click.option("--bias-correct", is_flag=True, help="Add 2 V_test/(B-1) to the fixed-N variance (docs/methods/ess.md §4.6; not in the paper).")
@click.option("--tuning", default="per_n_subset", show_default=True, type=click.Choice(["per_n_subset", "per_block", "none"]))
@click.option("--seed", default="0", show_default=True, help="Permutation seed (an integer), or 'none' to keep the file's order.")
@click.option("--n-estimators", default=300, show_default=True, type=int, help="Trees for --algorithm rf.")
@click.option("--missing", default="error", show_default=True, type=click.Choice(["error", "drop"]),
              help="Rows with a missing outcome, prediction or feature: stop with an error, or drop them (with a warning).")
@click.option("--n-jobs", type=int, default=None, help="Parallel block fits and Rust threads (default: all cores).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("ess-output"), show_default=True)
@click.option("--no-plot", is_flag=True, help="Skip the figure.")
@handle_errors
def ess_command(data_path, outcome, prediction, features, algorithm, loss, grid, alpha, variance, regime, bias_correct,
                tuning, seed, n_estimators, missing, n_jobs, out_dir, no_plot):
    """Equivalent sample size of a fixed prediction rule (block-out CV + sequential one-sided CI)."""
    from ..exceptions import InvalidArgumentError
    from ._engine import HYBRID_MIN_BLOCKS
    from ._estimators import Plumbing, run_error_curve, run_ess

    frame = read_table(data_path)
    feats = [f.strip() for f in features.split(",")] if features else None
    try:
        grid_vals = [int(v) for v in grid.split(",")] if grid else None
    except ValueError as err:
        raise InvalidArgumentError(f"--grid must be comma-separated integers ({err})") from err
    seed_val = None if str(seed).lower() == "none" else int(seed)
    options = {"n_estimators": n_estimators} if algorithm == "rf" else None
    args = dict(outcome=outcome, prediction=prediction, features=feats, algorithm=algorithm, loss=loss,
                grid=grid_vals, seed=seed_val, tuning=tuning, options=options, missing=missing)
    cache_dir = out_dir / ".ess_cache" / _key(data_path, args)
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache = {}
    for f in cache_dir.glob("N_*.json"):
        pt = json.loads(f.read_text())
        cache[int(pt["n_train"])] = pt

    def save_point(pt):
        tmp = cache_dir / f".N_{pt['n_train']}.tmp"
        tmp.write_text(json.dumps(pt, default=str))
        tmp.replace(cache_dir / f"N_{pt['n_train']}.json")

    if cache:
        click.echo(f"reusing {len(cache)} finished grid point(s) from {cache_dir}", err=True)
    plumbing = Plumbing(cache=cache, on_point=save_point)
    common = dict(hybrid_min_blocks=HYBRID_MIN_BLOCKS, algorithm_options=options, missing=missing,
                  bias_correct=bias_correct)
    with progress_bar() as bar:
        if prediction is None:
            result = run_error_curve(plumbing, frame, outcome, feats, algorithm, grid_vals, loss, regime, tuning,
                                     seed_val, n_jobs, alpha=alpha, progress=bar, **common)
            stem = "error_curve"
        else:
            result = run_ess(plumbing, frame, outcome, prediction, feats, algorithm, grid_vals, loss, alpha, variance,
                             regime, tuning, seed_val, n_jobs, progress=bar, **common)
            stem = "ess"
    click.echo(result.summary().as_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    result.table.to_csv(out_dir / f"{stem}_table.csv", index=False)
    summary = {"kind": result.kind, "args": {k: v for k, v in args.items()}, "alpha": alpha, "regime": regime,
               "bias_correct": bool(bias_correct)}
    if prediction is not None:
        summary.update(lower_bound=result.lower_bound, ci=[result.lower_bound, "inf"], status=result.status,
                       plugin=None if result.plugin == float("inf") else result.plugin, llm_error=result.llm_error,
                       llm_se=result.llm_se, conclusion=result.conclusion(), variance=variance)
    summary["result"] = json.loads(result.to_json(indent=None))
    (out_dir / f"{stem}_summary.json").write_text(json.dumps(summary, indent=2))
    written = [f"{stem}_table.csv", f"{stem}_summary.json"]
    if not no_plot:
        use_agg_backend()
        ax = result.plot()
        ax.figure.tight_layout()
        ax.figure.savefig(out_dir / f"{stem}_plot.png", dpi=130)
        written.append(f"{stem}_plot.png")
    click.echo(f"\nWrote {', '.join(written)} to {out_dir}/")
