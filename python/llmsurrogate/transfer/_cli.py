"""The ``llmsurrogate transfer`` commands: ``intervals`` (forecast intervals and dominance from
transfer-error tables) and ``build`` (a transfer-error table from data, by fitting a model on
every training set of r domains). Registered by :mod:`llmsurrogate.cli`."""

from __future__ import annotations

import contextlib
import difflib
import re
import warnings
from pathlib import Path

import click

from .._cli_support import (FiniteFloat, NameList, NJobs, Seed, Subsets, check_output_and_record, cli_names,
                            data_column, deprecated_option, handle_errors, read_table, start_run, write_run_json)
from .._positions import Located, message_of
from ..exceptions import InvalidArgumentError, LLMSurrogateError


#: The package's Python words in warnings, and what the command line calls them.
_CLI_WORDS = [(re.compile(r"\bcorrection=True\b"), "--correction"), (re.compile(r"\bsubsets=K\b"), "--subsets K"),
              (re.compile(r"\bsubsets='all'"), "--subsets all")]


@contextlib.contextmanager
def _warnings_in_cli_words():
    """Inside the block, the package's warnings name the command's options (``--correction``),
    not the Python arguments (``correction=True``)."""
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        shown = set()
        for w in caught:
            text = str(w.message)
            for pattern, words in _CLI_WORDS:
                text = pattern.sub(words, text)
            if text not in shown:
                shown.add(text)
                warnings.warn_explicit(text, w.category, w.filename, w.lineno)


def _require_columns(frame, data_path: Path, columns: dict[str, list[str]], numeric: tuple[str, ...]) -> None:
    """Each option's columns are in ``--data`` (and hold numbers for the options in ``numeric``),
    or an error that names the option: ``--domain 'study': no such column in --data f.csv``."""
    import pandas as pd

    available = [str(c) for c in frame.columns]
    for flag, names in columns.items():
        for name in names:
            if name not in frame.columns:
                hint = difflib.get_close_matches(name, available, n=1)
                shown = ", ".join(available[:20]) + (", ..." if len(available) > 20 else "")
                raise InvalidArgumentError(f"{flag} {name!r}: no such column in --data {data_path.name} (its "
                                           f"columns: {shown})" + (f"; did you mean {flag} {hint[0]}?" if hint else ""))
            if flag in numeric and not (pd.api.types.is_numeric_dtype(frame[name])
                                        or frame[name].isna().all()):
                example = frame[name].dropna().iloc[0]
                raise InvalidArgumentError(f"{flag} {name!r}: column {name!r} of --data {data_path.name} holds text "
                                           f"(e.g. {str(example)!r}), not numbers; {flag} takes numeric columns")


@click.group("transfer")
def transfer_group():
    """Transfer performance of a model across domains (Andrews, Fudenberg, Lei, Liang & Wu 2025)."""


def _read_error_table(path: Path):
    """An error table from CSV/Parquet: a long frame (train..., test, error columns) or a square
    matrix [train, test] (first column the row labels when it is not numeric or is named train)."""
    import dataclasses

    import pandas as pd

    from . import ErrorTable
    from ._common import _table

    frame = read_table(path)
    name = path.stem
    if "test" in frame.columns and any(str(c).startswith("train") for c in frame.columns):
        errors = frame["error" if "error" in frame.columns else frame.columns[-1]]
        if not (pd.api.types.is_numeric_dtype(errors) or errors.isna().all()):
            text = pd.to_numeric(errors, errors="coerce").isna() & errors.notna()
            row = int(text.to_numpy().argmax())
            raise InvalidArgumentError(f"{path.name}: column {str(errors.name)!r} must hold the errors as numbers; "
                                       f"row {row + 2} of the file has {str(errors.iloc[row])!r}")
        try:
            table = _table(frame, arg=f"--data {path.name}")  # also a sample of the training sets, with a warning
        except LLMSurrogateError as err:  # the frame's row i is the file's line i + 2 (after the header)
            msg = message_of(err)
            if isinstance(msg, Located):
                err.args = (msg.render(lambda p: f"row {p.index + 2} of the file" if p.word == "row" else p.text()),
                            *err.args[1:])
            raise
        if isinstance(table, ErrorTable):
            return dataclasses.replace(table, name=name)
        table.name = name
        return table
    first = frame.columns[0]
    if str(first) in {"train", "", "Unnamed: 0"} or not pd.api.types.is_numeric_dtype(frame[first]) \
            or frame.shape[1] == frame.shape[0] + 1:
        frame = frame.set_index(first)
        frame.index = frame.index.map(str)
        frame.columns = frame.columns.map(str)
    return ErrorTable.from_matrix(frame, name=name, arg=f"--data {path.name}")


@transfer_group.command("intervals")
@click.argument("data", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--level", type=FiniteFloat(0, 1, min_open=True), multiple=True, default=(0.8, 0.9, 0.95),
              show_default=True,
              help="Nominal coverage level c (two-sided: tau = (1 + c)/2); repeat for several.")
@deprecated_option("--coverage", "--level", type=FiniteFloat(0, 1, min_open=True), multiple=True)
@click.option("--side", type=click.Choice(["two", "upper", "lower", "left", "right"]), multiple=True,
              default=("two",), show_default=True, help="Interval side(s).")
@click.option("--correction", is_flag=True, help="Inflate the level by (n+1)/(n-r) so that Proposition 1 guarantees it.")
@click.option("--gamma", "gamma", type=FiniteFloat(1, allow_inf=True), default=None,
              help="Also give the worst-case interval over likelihood ratios in [1/Gamma, Gamma] (inf allowed).")
@click.option("--compare", is_flag=True,
              help="Also check worst-case and everywhere dominance of the first model over each other one.")
@click.option("--tau", "taus", type=FiniteFloat(0, 1, min_open=True), multiple=True, default=(0.5, 0.75, 0.9, 0.95),
              show_default=True,
              help="Levels for --compare.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the interval table to this CSV file, and its run record (versions, input SHA-256s, "
              "command line) to <out>.run.json beside it.")
@handle_errors
def transfer_intervals(data, level, side, correction, gamma, compare, taus, out_path):
    """Forecast intervals from transfer-error tables (one CSV/Parquet file per model).

    Each file is a square matrix [train, test] (diagonal ignored) or a long table with columns
    train (or train_1..train_r), test and error. The model is named after the file.
    """
    import pandas as pd

    from .. import transfer as tr
    from .._atomic import atomic_target

    record = check_output_and_record(out_path, data) if out_path is not None else None
    with _warnings_in_cli_words():
        tables = {p.stem: _read_error_table(p) for p in data}
        manifest = start_run([("DATA", p) for p in data]) if out_path is not None else None
        res = tr.forecast_intervals(tables, level=list(level), sides=list(side), correction=correction)
    table = res.tidy()
    if gamma is not None:
        wc = [tr.worst_case_interval(tables[row.model], Gamma=gamma, side=row.side, tau=row.tau)
              for row in table.itertuples()]
        table[f"lower_gamma_{gamma:g}"] = [w[0] for w in wc]
        table[f"upper_gamma_{gamma:g}"] = [w[1] for w in wc]
    first = next(iter(tables.values()))
    click.echo(f"n = {first.n} domains, r = {first.r}; 'guaranteed' is Proposition 1's coverage bound")
    click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if out_path is not None:
        with atomic_target(out_path) as tmp:  # CSV whatever the suffix
            table.to_csv(tmp, index=False)
        write_run_json(record, manifest)
        click.echo(f"\nWrote {out_path}" + (f" and {record.name}" if record else ""))
    if compare and len(tables) > 1:
        names = list(tables)
        rows = []
        for other in names[1:]:
            wc = tr.check_worstcase_dominance(tables[names[0]], tables[other], list(taus))
            ev = tr.check_everywhere_dominance(tables[names[0]], tables[other], list(taus))
            for t, a, b in zip(wc.tau, wc.res, ev.res):
                rows.append({"model": names[0], "over": other, "tau": t, "worst_case": bool(a), "everywhere": bool(b)})
        click.echo(f"\nDoes {names[0]} dominate (smaller upper quantiles)?")
        click.echo(pd.DataFrame(rows).to_string(index=False))


@transfer_group.command("build")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file: one row per observation, with a domain column.")
@click.option("--model", "model_name", required=True,
              help="eu, eu-authors, eu-cara, cpt, cpt:<letters of alpha/beta/delta/gamma free, e.g. g, ab, dg>, rf or kr.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Output table (.csv or .parquet): train (or train_1..train_r), test, error, one row per error "
              "in the fits' order (training set by training set), written as the fits finish; its run record "
              "(versions, input SHA-256, seed, command line) goes to <out>.run.json beside it.")
@click.option("-r", "--r", "r", type=click.IntRange(min=1), default=1, show_default=True,
              help="Training domains per fit.")
@click.option("--metric", type=click.Choice(["mse", "rmse"]), default="mse", show_default=True)
@click.option("--normalize", type=click.Choice(["deterioration", "shortfall"]), default=None,
              help="Divide by the in-sample error on the test domain (default: raw transfer error).")
@click.option("--shortfall-model", multiple=True, help="Other models of the shortfall's model set (repeatable).")
@click.option("--subsets", type=Subsets(), default="all", show_default=True,
              help="'all' training sets, or how many to sample.")
@click.option("--seed", type=Seed(2**32 - 1), default=0, show_default=True, help="Seed for sampled training sets and for rf.")
@click.option("--domain", default="domain", show_default=True, help="Domain column.")
@click.option("--features", type=NameList(), default="z1,z2,p1", show_default=True,
              help="Comma-separated feature columns.")
@click.option("--target", default="ce", show_default=True, help="Outcome column.")
@click.option("--matrix", is_flag=True, help="Write the r = 1 table as an n x n matrix [train, test] instead.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for finished fits; an interrupted build resumes from it.")
@click.option("--n-jobs", type=NJobs(), default=None, help="Threads or joblib workers (default: LLMSURROGATE_NUM_THREADS, else all cores).")
@handle_errors
def transfer_build(data_path, model_name, out_path, r, metric, normalize, shortfall_model, subsets, seed, domain,
                   features, target, matrix, cache, n_jobs):
    """Fit a model on every training set of r domains and write its transfer-error table."""
    import warnings

    from .._atomic import check_output_dir, write_frame
    from ..exceptions import LLMSurrogateWarning
    from . import error_table, make_model
    from ._build import collect_cache_stats

    record = check_output_and_record(out_path, [data_path])
    if cache is not None:
        check_output_dir(cache, arg="--cache")
    frame = read_table(data_path)
    feature_list = [f.strip() for f in features.split(",")]
    _require_columns(frame, data_path, {"--domain": [domain], "--target": [target], "--features": feature_list},
                     numeric=("--target", "--features"))
    manifest = start_run([("--data", data_path)], {"seed": seed})
    with cli_names(model=f"--model {model_name}", free=f"--model {model_name}"):
        model = make_model(model_name, seed=seed)
    for m in shortfall_model:
        with cli_names(model=f"--shortfall-model {m}", free=f"--shortfall-model {m}"):
            make_model(m, seed=seed)
    others = [make_model(m, seed=seed) for m in shortfall_model] or None
    n_sub: int | str = subsets
    if subsets != "all":
        try:
            n_sub = int(subsets)
        except ValueError as err:
            raise InvalidArgumentError(f"--subsets must be 'all' or a positive integer; got {subsets!r}") from err
    data = f"--data {data_path.name}"
    names = cli_names(samples=data, data=data, domain=data_column(domain, data_path),
                      target=data_column(target, data_path), features="--features", r="-r", subsets="--subsets",
                      shortfall_models="--shortfall-model", model="--model", out="--out")
    with collect_cache_stats() as stats, warnings.catch_warnings(), names:
        # rejected cache entries are counted and reported below, once
        warnings.filterwarnings("ignore", message=".*cached fit", category=LLMSurrogateWarning)
        # the long table goes to --out as the fits finish (row groups / blocks of lines, in the fits'
        # order): neither the table nor its long frame is held; --matrix needs the table
        table = error_table(frame, model, r=r, metric=metric, normalize=normalize, subsets=n_sub, n_jobs=n_jobs,
                            shortfall_models=others, domain=domain, features=feature_list,
                            target=target, cache=cache, progress=True, seed=seed, name=model_name,
                            out=None if matrix else out_path)
    if cache is not None:
        click.echo(f"cache: {stats.hits} fits reused, {stats.computed} computed, {stats.rejected} rejected "
                   "(damaged or from another version)", err=True)
    import pandas as pd

    if not matrix:
        rows = table.rows
    else:
        out = table if isinstance(table, pd.DataFrame) else table.to_matrix().reset_index()
        rows = len(out)
        write_frame(out_path, out)
    write_run_json(record, manifest)
    click.echo(f"wrote {rows} rows to {out_path}" + (f" and the run record to {record.name}" if record else ""))
