"""The ``llmsurrogate`` command line.

Exit codes: 0 success, 1 a problem with the input or the computation (a one-line message on stderr,
no traceback), 2 a usage error (click's convention), 130 interrupted with Ctrl-C. Long work shows
rich progress bars on stderr.

Examples::

    llmsurrogate --version
    llmsurrogate demo --out demo-output
    llmsurrogate datasets
    llmsurrogate quantile --data errors.csv --column err --tau 0.95
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
@_handle_errors
def demo(out_dir: Path, tau: float, no_plot: bool):
    """Transfer forecast intervals on the bundled 44-subject-pool data (paper Table 5)."""
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
    click.echo(f"\nWrote {', '.join(written)} to {out_dir}/")


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


def _load_task(spec: str):
    from .llm.tasks import Task, task_from_dict

    path = Path(spec)
    if path.suffix.lower() == ".toml" or path.exists():
        if not path.exists():
            from .exceptions import InvalidArgumentError

            raise InvalidArgumentError(f"--task {spec}: no such file")
        return Task.from_toml(path)
    return task_from_dict({"preset": spec})


def _make_backend(kind: str, model: str, device: str | None, batch_size: int):
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
@click.option("--batch-size", type=click.IntRange(1), default=16, show_default=True)
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
        res = risk.risk_scores(frame, task, be, method, cache=cache, batch_size=batch_size,
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
