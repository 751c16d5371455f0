"""The ``llmsurrogate`` command line.

Exit codes: 0 success, 1 a problem with the input or the computation (a one-line message on stderr,
no traceback), 2 a usage error (click's convention), 130 interrupted with Ctrl-C. Long work shows
rich progress bars on stderr.

Examples::

    llmsurrogate --version
    llmsurrogate demo --out demo-output
    llmsurrogate datasets
    llmsurrogate quantile --data errors.csv --column err --tau 0.95
    llmsurrogate transfer intervals cpt.csv rf.csv --coverage 0.9 --compare
    llmsurrogate ess --data data.csv --outcome y --prediction llm --algorithm rf --out ess-output
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from . import __version__
from .exceptions import LLMSurrogateError


def _handle_errors(fn):
    """Turn package errors into exit code 1 with a clean message, Ctrl-C into 130."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LLMSurrogateError as err:
            click.secho(f"Error: {err}", fg="red", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.secho("Interrupted; results written so far are kept.", fg="yellow", err=True)
            sys.exit(130)

    return wrapper


def _progress():
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=False)


def read_table(path: Path):
    """Read a CSV or Parquet file into pandas, with an error that names the file on failure."""
    import pandas as pd

    from .exceptions import InvalidArgumentError

    suffix = path.suffix.lower()
    try:
        if suffix in {".parquet", ".pq"}:
            return pd.read_parquet(path)
        if suffix in {".csv", ".txt", ".gz"}:
            return pd.read_csv(path)
    except ImportError as err:
        raise InvalidArgumentError(f"reading {path.name} needs pyarrow: pip install pyarrow ({err})") from err
    except (OSError, ValueError) as err:
        raise InvalidArgumentError(f"could not read --data {path}: {err}") from err
    raise InvalidArgumentError(f"--data {path}: unsupported file type {suffix!r}; use .csv or .parquet")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="llmsurrogate")
def cli():
    """llmsurrogate: how much is an LLM worth as a stand-in for human data?"""


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-output"),
              show_default=True, help="Folder for the table (CSV), the summary (JSON) and the figure (PNG).")
@click.option("--tau", type=click.FloatRange(0.5, 1.0, min_open=True), default=0.95, show_default=True,
              help="Quantile level of the forecast interval.")
@click.option("--no-plot", is_flag=True, help="Skip the figure.")
@click.option("--ess/--no-ess", "with_ess", default=True, show_default=True,
              help="Also run the equivalent-sample-size demo (textbook CPT vs RF and lasso, ~30 s).")
@_handle_errors
def demo(out_dir: Path, tau: float, no_plot: bool, with_ess: bool):
    """Transfer forecast intervals on the bundled 44-subject-pool data (paper Table 5), and the ESS
    of a textbook CPT rule on one subject pool."""
    from .demo import TABLE5_MODELS, run_demo

    with _progress() as progress:
        task = progress.add_task("forecast intervals per model", total=len(TABLE5_MODELS))
        result = run_demo(tau=tau, progress=lambda _name: progress.advance(task))
    click.echo(result.summary().as_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    result.table.to_csv(out_dir / "transfer_forecast_intervals.csv", index=False)
    result.to_json(out_dir / "transfer_forecast_intervals.json")
    written = ["transfer_forecast_intervals.csv", "transfer_forecast_intervals.json"]
    if not no_plot:
        import matplotlib

        matplotlib.use("Agg")
        fig = result.plot()
        fig.savefig(out_dir / "transfer_forecast_intervals.png", dpi=130)
        written.append("transfer_forecast_intervals.png")
    written += _demo_transfer_application(out_dir, plot=not no_plot)
    if with_ess:
        from .ess.demo import write_ess_demo

        with _progress() as progress:
            task = progress.add_task("ESS demo (random forest, lasso)", total=2)
            files, ess_res = write_ess_demo(out_dir, plot=not no_plot, progress=lambda _a: progress.advance(task))
        click.echo("\nEquivalent sample size of a textbook CPT rule (Tversky-Kahneman 1992, not fitted)")
        click.echo(ess_res["table"].to_string(index=False))
        written += files
    click.echo(f"\nWrote {', '.join(written)} to {out_dir}/")


def _demo_transfer_application(out_dir: Path, plot: bool) -> list[str]:
    """The demo's second part: forecast intervals and dominance for EU, CPT and RF (Table 2)."""
    from .transfer.application import run_transfer_application

    app = run_transfer_application()
    summary = app.summary()
    click.echo("\n" + summary.tables[1][0])
    click.echo(summary.tables[1][1].to_string(index=False))
    for note in summary.notes:
        click.echo(f"Note: {note}")
    app.dominance.to_csv(out_dir / "transfer_dominance.csv", index=False)
    written = ["transfer_dominance.csv"]
    if plot:
        app.plot().savefig(out_dir / "transfer_application.png", dpi=130)
        written.append("transfer_application.png")
    return written


@cli.command()
@_handle_errors
def datasets():
    """List the bundled data sets and their sources."""
    from . import datasets as ds

    doms = ds.certainty_equivalent_domains()
    models = ds.transfer_error_models()
    click.echo(f"certainty equivalents: {len(doms)} subject pools, {int(doms['n_obs'].sum())} rows "
               "(datasets.load_certainty_equivalents)")
    click.echo(f"transfer errors: {len(models)} published 44x44 matrices (datasets.load_transfer_errors)")
    click.echo(f"ACS fixture: 10 ACSIncome rows, codebooks {ds.acs_codebook_variables()} (datasets.load_acs_*)")
    click.echo("\n" + ds.attribution())


@cli.command()
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file.")
@click.option("--column", required=True, help="Column holding the values.")
@click.option("--tau", type=float, multiple=True, required=True, help="Level in [0, 1]; repeat for several.")
@click.option("--weights", default=None, help="Optional column of non-negative weights.")
@click.option("--n-jobs", type=int, default=None, help="Threads (default: LLMSURROGATE_NUM_THREADS or all cores).")
@_handle_errors
def quantile(data_path: Path, column: str, tau: tuple[float, ...], weights: str | None, n_jobs: int | None):
    """Upper and lower empirical quantiles of one column."""
    import pandas as pd

    from . import quantiles as q
    from ._validation import require_columns

    frame = read_table(data_path)
    require_columns(frame, [column] + ([weights] if weights else []), name="--data")
    levels = list(tau)
    if weights:
        upper = q.weighted_upper_quantile(frame[column], frame[weights], levels, n_jobs=n_jobs)
        lower = q.weighted_lower_quantile(frame[column], frame[weights], levels, n_jobs=n_jobs)
    else:
        upper = q.upper_quantile(frame[column], levels, n_jobs=n_jobs)
        lower = q.lower_quantile(frame[column], levels, n_jobs=n_jobs)
    click.echo(pd.DataFrame({"tau": levels, "lower": lower, "upper": upper}).to_string(index=False))


@cli.group()
def transfer():
    """Transfer performance of a model across domains (Andrews, Fudenberg, Lei, Liang & Wu 2025)."""


def _read_error_table(path: Path):
    """An error table from CSV/Parquet: a long frame (train..., test, error columns) or a square
    matrix [train, test] (first column the row labels when it is not numeric or is named train)."""
    import pandas as pd

    from .transfer import ErrorTable

    frame = read_table(path)
    name = path.stem
    if "test" in frame.columns and any(str(c).startswith("train") for c in frame.columns):
        return ErrorTable.coerce(frame, arg=f"--data {path.name}", name=name)
    first = frame.columns[0]
    if str(first) in {"train", "", "Unnamed: 0"} or not pd.api.types.is_numeric_dtype(frame[first]) \
            or frame.shape[1] == frame.shape[0] + 1:
        frame = frame.set_index(first)
        frame.index = frame.index.map(str)
        frame.columns = frame.columns.map(str)
    return ErrorTable.from_matrix(frame, name=name, arg=f"--data {path.name}")


@transfer.command("intervals")
@click.argument("data", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--coverage", type=float, multiple=True, default=(0.8, 0.9, 0.95), show_default=True,
              help="Nominal coverage (two-sided: tau = (1 + c)/2); repeat for several.")
@click.option("--side", type=click.Choice(["two", "upper", "lower", "left", "right"]), multiple=True,
              default=("two",), show_default=True, help="Interval side(s).")
@click.option("--correction", is_flag=True, help="Inflate coverage by (n+1)/(n-r) so that Proposition 1 guarantees it.")
@click.option("--gamma", "gamma", type=float, default=None,
              help="Also give the worst-case interval over likelihood ratios in [1/Gamma, Gamma] (inf allowed).")
@click.option("--compare", is_flag=True,
              help="Also check worst-case and everywhere dominance of the first model over each other one.")
@click.option("--tau", "taus", type=float, multiple=True, default=(0.5, 0.75, 0.9, 0.95), show_default=True,
              help="Levels for --compare.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the interval table to this CSV file.")
@_handle_errors
def transfer_intervals(data, coverage, side, correction, gamma, compare, taus, out_path):
    """Forecast intervals from transfer-error tables (one CSV/Parquet file per model).

    Each file is a square matrix [train, test] (diagonal ignored) or a long table with columns
    train (or train_1..train_r), test and error. The model is named after the file.
    """
    import pandas as pd

    from . import transfer as tr

    tables = {p.stem: _read_error_table(p) for p in data}
    res = tr.forecast_intervals(tables, coverage=list(coverage), sides=list(side), correction=correction)
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
        table.to_csv(out_path, index=False)
        click.echo(f"\nWrote {out_path}")
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
def _register_ess():
    from .ess._cli import ess_command

    cli.add_command(_handle_errors_command(ess_command), "ess")


def _handle_errors_command(command):
    command.callback = _handle_errors(command.callback)
    return command


_register_ess()




@transfer.command("build")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file: one row per observation, with a domain column.")
@click.option("--model", "model_name", required=True,
              help="eu, eu-authors, eu-cara, cpt, cpt:<letters of alpha/beta/delta/gamma free, e.g. g, ab, dg>, rf or kr.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Output table (.csv or .parquet): train (or train_1..train_r), test, error.")
@click.option("-r", "--r", "r", type=click.IntRange(min=1), default=1, show_default=True,
              help="Training domains per fit.")
@click.option("--metric", type=click.Choice(["mse", "rmse"]), default="mse", show_default=True)
@click.option("--normalize", type=click.Choice(["deterioration", "shortfall"]), default=None,
              help="Divide by the in-sample error on the test domain (default: raw transfer error).")
@click.option("--shortfall-model", multiple=True, help="Other models of the shortfall's model set (repeatable).")
@click.option("--subsets", default="all", show_default=True, help="'all' training sets, or how many to sample.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sampled training sets and for rf.")
@click.option("--domain", default="domain", show_default=True, help="Domain column.")
@click.option("--features", default="z1,z2,p1", show_default=True, help="Comma-separated feature columns.")
@click.option("--target", default="ce", show_default=True, help="Outcome column.")
@click.option("--matrix", is_flag=True, help="Write the r = 1 table as an n x n matrix [train, test] instead.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for finished fits; an interrupted build resumes from it.")
@click.option("--n-jobs", type=int, default=None, help="Threads or joblib workers (default: all cores).")
@_handle_errors
def transfer_build(data_path, model_name, out_path, r, metric, normalize, shortfall_model, subsets, seed, domain,
                   features, target, matrix, cache, n_jobs):
    """Fit a model on every training set of r domains and write its transfer-error table."""
    from .exceptions import InvalidArgumentError
    from .transfer import error_table, make_model

    frame = read_table(data_path)
    model = make_model(model_name, random_state=seed)
    others = [make_model(m, random_state=seed) for m in shortfall_model] or None
    n_sub: int | str = subsets
    if subsets != "all":
        try:
            n_sub = int(subsets)
        except ValueError as err:
            raise InvalidArgumentError(f"--subsets must be 'all' or a positive integer; got {subsets!r}") from err
    table = error_table(frame, model, r=r, metric=metric, normalize=normalize, subsets=n_sub, n_jobs=n_jobs,
                        shortfall_models=others, domain=domain, features=[f.strip() for f in features.split(",")],
                        target=target, cache=cache, progress=True, random_state=seed, name=model_name)
    import pandas as pd

    if isinstance(table, pd.DataFrame):
        out = table
    elif matrix:
        out = table.to_matrix().reset_index()
    else:
        out = table.tidy()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if out_path.suffix.lower() in {".parquet", ".pq"}:
        out.to_parquet(out_path, index=False)
    else:
        out.to_csv(out_path, index=False)
    click.echo(f"wrote {len(out)} rows to {out_path}")
def _load_task(spec: str):
    from .llm.tasks import Task, task_from_dict

    path = Path(spec)
    if path.suffix.lower() == ".toml" or path.exists():
        if not path.exists():
            from .exceptions import InvalidArgumentError

            raise InvalidArgumentError(f"--task {spec}: no such file")
        return Task.from_toml(path)
    return task_from_dict({"preset": spec})


def _make_backend(kind: str, model: str, device: str | None, batch_size: int | None):
    if kind == "transformers":
        from .llm.hf import TransformersBackend

        return TransformersBackend(model, device=device, batch_size=batch_size)
    from .llm.vllm import VLLMBackend

    return VLLMBackend(model)


@cli.command()
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file with the task's feature columns (and the label, to evaluate).")
@click.option("--task", "task_spec", required=True, help="Task TOML file, or a built-in task name (ACSIncome).")
@click.option("--backend", type=click.Choice(["transformers", "vllm"]), default="transformers", show_default=True)
@click.option("--model", required=True, help="Local model folder (save_pretrained layout).")
@click.option("--method", type=click.Choice(["multiple_choice", "numeric", "numeric_argmax"]),
              default="multiple_choice", show_default=True)
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Cache folder: every prompt's output is stored; a rerun resumes where it stopped.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for scores.csv, metrics.csv, metrics.json and calibration.png.")
@click.option("--batch-size", type=click.IntRange(1), default=None,
              help="Prompts per forward pass (default: 16 on the CPU, 128 on a GPU).")
@click.option("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda if available).")
@click.option("--no-order-correction", is_flag=True, help="Score only the original answer order.")
@click.option("--chat", is_flag=True, help="Wrap prompts in the model's chat template (instruct models).")
@click.option("--groups", "group_col", default=None, help="Column with groups for group metrics (default: the "
              "task's sensitive attribute when present).")
@click.option("--n-boot", type=click.IntRange(0), default=200, show_default=True)
@click.option("--no-plot", is_flag=True)
@_handle_errors
def score(data_path, task_spec, backend, model, method, cache_dir, out_dir, batch_size, device, no_order_correction,
          chat, group_col, n_boot, no_plot):
    """LLM risk scores for every row of --data, with metrics when the label is present."""
    import json

    from . import risk
    from .llm.cache import Cache

    frame = read_table(data_path)
    task = _load_task(task_spec)
    cache = Cache(cache_dir)
    be = _make_backend(backend, model, device, batch_size)
    with _progress() as progress:
        bar = progress.add_task(f"scoring prompts ({method})", total=None)
        res = risk.risk_scores(frame, task, be, method, cache=cache, batch_size=batch_size or 16,
                               correct_order_bias=not no_order_correction, chat=chat,
                               progress=lambda done, total: progress.update(bar, completed=done, total=total))
    out_dir.mkdir(parents=True, exist_ok=True)
    res.table.to_csv(out_dir / "scores.csv", index=False)
    written = ["scores.csv"]
    meta = dict(res.meta)
    if "label" in res.table:
        gcol = group_col or task.sensitive_attribute
        groups = frame[gcol].to_numpy() if gcol and gcol in frame.columns else None
        ev = res.evaluate(groups=groups, n_boot=n_boot)
        ev.metrics.to_csv(out_dir / "metrics.csv", index=False)
        ev.to_json(out_dir / "metrics.json")
        written += ["metrics.csv", "metrics.json"]
        click.echo(ev.summary().as_text())
        if not no_plot:
            import matplotlib

            matplotlib.use("Agg")
            fig = risk.plot_calibration(res.table["label"], res.table["score"], groups=groups)
            fig.savefig(out_dir / "calibration.png", dpi=130)
            written.append("calibration.png")
    (out_dir / "run.json").write_text(json.dumps(meta, indent=1, default=str))
    written.append("run.json")
    click.echo(f"cache: {meta['cache_hits']} prompts reused, {meta['cache_misses']} computed")
    click.echo(f"Wrote {', '.join(written)} to {out_dir}/")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``llmsurrogate`` console script."""
    cli.main(args=argv, prog_name="llmsurrogate")


if __name__ == "__main__":  # pragma: no cover
    main()
