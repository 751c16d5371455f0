"""The ``llmsurrogate ess`` command (registered by :mod:`llmsurrogate.cli`).

Finished grid points are cached under ``OUT/.ess_cache/<key>/`` where the key hashes the data file
and every argument that changes the numbers, so an interrupted run restarted with the same
arguments reuses them. Each ``N_<n>.entry`` is an entry of the package's one cache entry format
(:mod:`llmsurrogate._store`): the point, what produced it (the llmsurrogate, numpy and scikit-learn
versions) and a BLAKE2b checksum; a file that cannot be read, fails the checksum or came from other
versions (or an older release's ``N_<n>.json``) is not trusted: the point is recomputed, the file
replaced, and the count reported on stderr.

Every output is written atomically (:mod:`llmsurrogate._atomic`), and the output folder is checked
(writable, not overwriting ``--data``) before any work starts. ``run.json`` in the output folder is
the run's manifest (:mod:`llmsurrogate._manifest`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import click
import numpy as np

from .._atomic import check_output_dir, save_figure, write_bytes, write_frame, write_text
from .._cli_support import (RUN_JSON, FiniteFloat, NameList, NJobs, PositiveIntList, Seed, cli_names, cli_warnings,
                            data_column, handle_errors, progress_bar, read_table, start_run, use_agg_backend,
                            write_run_json)
from .._store import SUFFIX, EntryFormat, entry_name
from ..exceptions import InvalidArgumentError
from ._engine import HYBRID_MIN_BLOCKS, LOSSES, MULTICLASS_LOSSES
from ._estimators import Plumbing, _refuse_weights, run_error_curve, run_ess


#: Distributions whose versions can change a grid point (besides llmsurrogate itself).
PRODUCER_DISTS = ("numpy", "scikit-learn")
#: The entry format of a grid point (:mod:`llmsurrogate._store`): the point as JSON, ``meta`` ``{"n_train": N}``.
POINT_FORMAT = EntryFormat("ess-point", PRODUCER_DISTS)


def point_file(n_train: int) -> str:
    """The file name of grid point ``n_train`` in a cache folder."""
    return entry_name(f"N_{int(n_train)}")


def encode_point(point: dict) -> bytes:
    """The bytes of a cache file: the point with its producer and checksum."""
    n_train = int(point["n_train"])
    return POINT_FORMAT.encode(f"N_{n_train}", json.dumps(point, default=str).encode("utf-8"), n_train=n_train)


def decode_point(raw: bytes, n_train: int) -> dict | None:
    """The point of a cache file, or None when it is damaged, from other versions or for another N."""
    payload = POINT_FORMAT.decode(f"N_{n_train}", raw, n_train=int(n_train))
    if payload is None:
        return None
    try:
        point = json.loads(payload)
        return point if int(point["n_train"]) == n_train else None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def load_points(cache_dir: Path) -> tuple[dict, int]:
    """Trusted points ``{N: point}`` of a cache folder and the number of files rejected (an older
    release's ``N_<n>.json`` where no entry stands is counted too, and left alone)."""
    cache, rejected = {}, 0
    for f in sorted(cache_dir.glob("N_*" + SUFFIX)):
        try:
            n_train = int(f.name[2: -len(SUFFIX)])
            point = decode_point(f.read_bytes(), n_train)
        except (OSError, ValueError):
            point = None
        if point is None:
            rejected += 1
        else:
            cache[n_train] = point
    for f in sorted(cache_dir.glob("N_*.json")):
        try:
            old = (cache_dir / point_file(int(f.stem[2:]))).exists()
        except ValueError:
            old = False
        rejected += not old
    return cache, rejected


def _key(data_path: Path, args: dict) -> str:
    h = hashlib.sha256()
    with open(data_path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    h.update(json.dumps(args, sort_keys=True, default=str).encode())
    return h.hexdigest()[:20]


def _dense_ranks(values) -> np.ndarray | None:
    """Dense ranks of a numeric column (missing values as -1), or None for a non-numeric one."""
    import pandas as pd

    num = pd.to_numeric(values, errors="coerce")
    if num.isna().sum() > values.isna().sum():
        return None
    return num.rank(method="dense").fillna(-1).to_numpy()


def leaking_columns(frame, outcome: str, columns: list[str]) -> list[tuple[str, str]]:
    """The ``columns`` that give the outcome away, each with how (a phrase with ``{outcome}``): a
    column equal to the outcome or a strictly monotone function of it (``2 * y + 1``, ``log(y)``,
    a recoding of a 0/1 outcome: the rows in the same order, ties alike), or a column that
    determines it (each of its values goes with a single outcome value, while it has at most n / 4
    distinct values, so each is seen four times on average). Both need n >= 20 rows, where a chance
    match is all but impossible (2 in 2^20 for an independent 0/1 column). One sort per column. A leak such as the true probability of a 0/1
    outcome is none of these: it is caught only by reading the columns listed.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"x": range(40), "y": [0, 1] * 20, "code": ["no", "yes"] * 20})
    >>> leaking_columns(df, "y", ["x", "code"])
    [('code', 'is a monotone function of the outcome {outcome} (the rows in the same order, ties alike)')]
    """
    import pandas as pd

    y = frame[outcome]
    n = len(frame)
    y_ranks = _dense_ranks(y)
    y_codes = pd.factorize(y)[0]
    binary = pd.Series(y).nunique() == 2
    found = []
    for col in columns:
        values = frame[col]
        ranks = _dense_ranks(values) if y_ranks is not None else None
        if ranks is None and y_ranks is not None and binary and pd.Series(values).nunique() == 2 \
                and not values.isna().any():
            ranks = pd.factorize(values, sort=True)[0] + 1.0  # two labels ("no"/"yes") of a 0/1 outcome
        if ranks is not None and n >= 20:
            top = y_ranks.max() + 1
            flipped = np.where(y_ranks > 0, top - y_ranks, y_ranks)
            if np.array_equal(ranks, y_ranks) or np.array_equal(ranks, flipped):
                same = np.array_equal(pd.to_numeric(values, errors="coerce").to_numpy(dtype=float),
                                      pd.to_numeric(y, errors="coerce").to_numpy(dtype=float), equal_nan=True)
                found.append((col, "is equal to the outcome {outcome}" if same else
                              "is a monotone function of the outcome {outcome} (the rows in the same order, ties alike)"))
                continue
        codes = pd.factorize(values)[0]
        distinct = int(codes.max()) + 1
        if n >= 20 and 2 <= distinct <= n // 4:
            groups = pd.DataFrame({"c": codes, "y": y_codes})
            if groups.groupby("c")["y"].nunique().max() == 1:
                found.append((col, f"determines the outcome {{outcome}} (each of its {distinct} values goes with one "
                                   "outcome value)"))
    return found


def default_features(frame, outcome: str, prediction: str | list[str] | None, data_path: Path) -> list[str]:
    """The features of a run without ``--features``: every column but the outcome and the prediction
    (one column, or the K columns of a multiclass loss; the command lists them on stderr as the work
    starts); columns that give the outcome away (:func:`leaking_columns`) are an error."""
    skip = {outcome, *([prediction] if prediction is None or isinstance(prediction, str) else prediction)}
    feats = [str(c) for c in frame.columns if c not in skip]
    if outcome in frame.columns:
        leaks = leaking_columns(frame, outcome, feats)
        if leaks:
            col, how = leaks[0]
            more = f" (also {', '.join(repr(c) for c, _ in leaks[1:])})" if len(leaks) > 1 else ""
            keep = [f for f in feats if f not in {c for c, _ in leaks}]
            hint = f"pass --features {','.join(keep)}" if keep else "pass --features with the learner's columns"
            raise InvalidArgumentError(
                f"{data_column(col, data_path)} {how.format(outcome=repr(outcome))}{more}: as a feature it would "
                f"leak the outcome into the learner; {hint}, or --features with the columns you mean")
    return feats


def _class_text(values) -> "pd.Series":
    """A categorical outcome as the file writes it, to compare with --options and column names:
    whole numbers as integers ("2", not "2.0"), missing values kept missing."""
    import pandas as pd

    ser = pd.Series(values)
    num = pd.to_numeric(ser, errors="coerce")
    if pd.api.types.is_numeric_dtype(ser) and ser.dtype != bool:
        whole = num.dropna()
        if (whole == np.round(whole)).all():
            return num.map(lambda v: v if pd.isna(v) else str(int(v)))
    return ser.map(lambda v: v if pd.isna(v) else str(v))


def _class_prediction(frame, outcome, prediction, class_labels, loss, data_path):
    """``(frame, prediction, columns, name)`` of a multiclass --loss: the outcome as text, the
    --prediction columns as a table whose columns are the class labels (--options, else the column
    names), those columns (never features) and how the command names them in errors."""
    cols = [c.strip() for c in prediction.split(",")]
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise InvalidArgumentError(f"--prediction: {data_column(missing[0], data_path)} does not exist")
    labels = [c.strip() for c in class_labels.split(",")] if class_labels else cols
    if len(labels) != len(cols):
        raise InvalidArgumentError(f"--options has {len(labels)} class labels but --prediction names {len(cols)} "
                                   "columns; give one label per column, in the same order")
    table = frame[cols].set_axis(labels, axis=1)
    frame = frame.assign(**{outcome: _class_text(frame[outcome])}) if outcome in frame.columns else frame
    name = f"--prediction {','.join(cols)}"
    return frame, table, cols, name


@click.command("ess")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file, one row per observation.")
@click.option("--outcome", required=True, help="Outcome column.")
@click.option("--prediction", default=None, help="Column with the fixed rule's (LLM's) predictions; with --loss multiclass_log "
              "or multiclass_brier the K comma-separated columns of its class probabilities, one per class; omit for the "
              "error curve only.")
@click.option("--options", "class_labels", type=NameList(), default=None,
              help="With --loss multiclass_log or multiclass_brier: the class labels of the --prediction columns, "
              "comma-separated in their order, as the outcome writes them (default: the column names; "
              "docs/methods/ess.md §1.6).")
@click.option("--weights", "weight_col", default=None, metavar="COLUMN",
              help="Not supported: survey weights are refused, with the reason (the ESS counts i.i.d. draws from the "
              "population; neither its estimate nor its variance holds with weights; docs/methods/survey.md §5). "
              "Without weights the ESS describes the population as sampled.")
@click.option("--features", type=NameList(), default=None, help="Comma-separated feature columns (default: every column but --outcome and --prediction, "
              "listed on stderr; a column that gives the outcome away is then an error).")
@click.option("--algorithm", default="rf", show_default=True, type=click.Choice(["rf", "lasso", "logit_l1", "mean", "majority"]))
@click.option("--loss", default="squared", show_default=True, type=click.Choice(list(LOSSES)))
@click.option("--grid", type=PositiveIntList(), default=None, help="Comma-separated training sizes (default 1, 2, 5, 10, ... up to n/2).")
@click.option("--alpha", default=0.05, show_default=True, type=FiniteFloat(0, 0.5, min_open=True),
              help="Significance level alpha, in (0, 0.5]: the ESS bound is one-sided at 1 - alpha, the error "
              "curve's intervals two-sided at 1 - alpha.")
@click.option("--variance", default="difference", show_default=True, type=click.Choice(["difference", "sum"]))
@click.option("--regime", default="hybrid", show_default=True, type=click.Choice(["hybrid", "fixed_N", "fixed_B"]))
@click.option("--bias-correct", is_flag=True, help="Add 2 V_test/(B-1) to the fixed-N variance (docs/methods/ess.md §4.6; not in the paper).")
@click.option("--tuning", default="per_n_subset", show_default=True, type=click.Choice(["per_n_subset", "per_block", "none"]),
              help="Hyperparameters: a grid search on a subset of size N at each grid size (for rf: 12 settings x "
              "3-fold CV = 36 forests), inside every block, or scikit-learn's defaults (for rf not faster: "
              "full-depth trees). Cost of each: docs/methods/ess.md §8.3.")
@click.option("--seed", type=Seed(allow_none=True), default="0", show_default=True, help="Permutation seed (an integer), or 'none' to keep the file's order.")
@click.option("--n-estimators", default=300, show_default=True, type=click.IntRange(1, 100_000),
              help="Trees for --algorithm rf (1 to 100,000); time grows about in proportion "
              "(docs/methods/ess.md §8.3).")
@click.option("--missing", default="error", show_default=True, type=click.Choice(["error", "drop"]),
              help="Rows with a missing outcome, prediction or feature: stop with an error, or drop them (with a warning).")
@click.option("--n-jobs", type=NJobs(), default=None, help="Workers for the block fits and threads for the Rust kernels "
                   "(default: LLMSURROGATE_NUM_THREADS, else all cores; -1 all cores, -k all but k-1). No number depends on it.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("ess-output"), show_default=True,
              help="Folder for <ess|error_curve>_table.csv, _summary.json, _plot.png and run.json (the manifest: "
              "versions, input SHA-256, seed, command line).")
@click.option("--no-plot", is_flag=True, help="Skip the figure.")
@handle_errors
def ess_command(data_path, outcome, prediction, class_labels, weight_col, features, algorithm, loss, grid, alpha,
                variance, regime, bias_correct, tuning, seed, n_estimators, missing, n_jobs, out_dir, no_plot):
    """Equivalent sample size of a fixed prediction rule (block-out CV + sequential one-sided CI)."""
    with cli_names(weights=f"--weights {weight_col}"):
        _refuse_weights(weight_col)  # the API's refusal and reason, before anything is read or written
    stem = "error_curve" if prediction is None else "ess"
    if class_labels is not None and (loss not in MULTICLASS_LOSSES or prediction is None):
        raise InvalidArgumentError("--options labels the --prediction columns of a multiclass --loss "
                                   f"({' or '.join(MULTICLASS_LOSSES)}); drop it, or pass that --loss and --prediction")
    check_output_dir(out_dir, files=[f"{stem}_table.csv", f"{stem}_summary.json", f"{stem}_plot.png", RUN_JSON],
                     inputs=[data_path])
    frame = read_table(data_path)
    rule, skip, pred_name = prediction, prediction, data_column(prediction or "", data_path)
    if loss in MULTICLASS_LOSSES and prediction is not None:
        frame, rule, skip, pred_name = _class_prediction(frame, outcome, prediction, class_labels, loss, data_path)
    feats = [f.strip() for f in features.split(",")] if features else \
        default_features(frame, outcome, skip, data_path)
    try:
        grid_vals = [int(v) for v in grid.split(",")] if grid else None
    except ValueError as err:
        raise InvalidArgumentError(f"--grid must be comma-separated integers ({err})") from err
    seed_val = None if str(seed).lower() == "none" else int(seed)
    manifest = start_run([("--data", data_path)], {"seed": seed_val})
    options = {"n_estimators": n_estimators} if algorithm == "rf" else None
    args = dict(outcome=outcome, prediction=prediction, features=feats, algorithm=algorithm, loss=loss,
                grid=grid_vals, seed=seed_val, tuning=tuning, options=options, missing=missing)
    if class_labels is not None:
        args["classes"] = class_labels
    cache_dir = out_dir / ".ess_cache" / _key(data_path, args)
    check_output_dir(cache_dir, arg="--out")
    cache, rejected = load_points(cache_dir)

    computed = []

    def save_point(pt):
        write_bytes(cache_dir / point_file(pt["n_train"]), encode_point(pt), what="cache entry")
        computed.append(int(pt["n_train"]))

    if cache:
        click.echo(f"reusing {len(cache)} finished grid point(s) from {cache_dir}", err=True)
    if rejected:
        click.echo(f"rejected {rejected} cached grid point(s) (damaged, or from another llmsurrogate/numpy/"
                   f"scikit-learn version): recomputing them", err=True)
    plumbing = Plumbing(cache=cache, on_point=save_point)
    common = dict(hybrid_min_blocks=HYBRID_MIN_BLOCKS, algorithm_options=options, missing=missing,
                  bias_correct=bias_correct)
    names = cli_names(data=f"--data {data_path.name}", outcome=data_column(outcome, data_path),
                      prediction=pred_name, options="--options", features="--features", grid="--grid",
                      alpha="--alpha", seed="--seed", missing="--missing", algorithm="--algorithm", loss="--loss",
                      regime="--regime", tuning="--tuning", variance="--variance", bias_correct="--bias-correct")
    preface = None if features else \
        f"features (every column but --outcome and --prediction; --features chooses): {', '.join(feats)}"
    with progress_bar(preface) as bar, cli_warnings(names), names:
        if prediction is None:
            result = run_error_curve(plumbing, frame, outcome, feats, algorithm, grid_vals, loss, regime, tuning,
                                     seed_val, n_jobs, level=1 - alpha, progress=bar, **common)
        else:
            result = run_ess(plumbing, frame, outcome, rule, feats, algorithm, grid_vals, loss, alpha, variance,
                             regime, tuning, seed_val, n_jobs, progress=bar, **common)
    click.echo(f"grid points: {len(cache)} reused, {len(computed)} computed, {rejected} rejected from the cache",
               err=True)
    click.echo(result.summary().as_text())
    write_frame(out_dir / f"{stem}_table.csv", result.table)
    summary = {"kind": result.kind, "args": {k: v for k, v in args.items()}, "alpha": alpha, "regime": regime,
               "bias_correct": bool(bias_correct)}
    if prediction is not None:
        summary.update(lower_bound=result.lower_bound, ci=[result.lower_bound, "inf"], status=result.status,
                       plugin=None if result.plugin == float("inf") else result.plugin, llm_error=result.llm_error,
                       llm_se=result.llm_se, conclusion=result.conclusion(), variance=variance)
    summary["result"] = json.loads(result.to_json(indent=None))
    write_text(out_dir / f"{stem}_summary.json", json.dumps(summary, indent=2))
    written = [f"{stem}_table.csv", f"{stem}_summary.json"]
    if not no_plot:
        use_agg_backend()
        fig = result.plot()
        fig.tight_layout()
        save_figure(fig, out_dir / f"{stem}_plot.png", dpi=130)
        written.append(f"{stem}_plot.png")
    write_run_json(out_dir / RUN_JSON, manifest)
    written.append(RUN_JSON)
    click.echo(f"\nWrote {', '.join(written)} to {out_dir}/")
