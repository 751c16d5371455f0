"""The light commands that no single capability owns: ``datasets`` (what is bundled) and
``quantile`` (empirical quantiles of a column); ``demo`` is :mod:`llmsurrogate.cli.demo`.
Registered by :mod:`llmsurrogate.cli`."""

from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from .. import datasets as ds
from .. import quantiles as q
from .._cli_support import (
    FiniteFloat,
    NJobs,
    cli_names,
    data_column,
    handle_errors,
    read_table,
)
from .._validation import require_columns


@click.command()
@handle_errors
def datasets():
    """List the bundled data sets and their sources."""
    doms = ds.certainty_equivalent_domains()
    models = ds.transfer_error_models()
    click.echo(f"certainty equivalents: {len(doms)} subject pools, {int(doms['n_obs'].sum())} rows "
               "(datasets.load_certainty_equivalents)")
    click.echo(f"transfer errors: {len(models)} published 44x44 matrices (datasets.load_transfer_errors)")
    click.echo(f"ACS fixture: 10 ACSIncome rows, codebooks {ds.acs_codebook_variables()} (datasets.load_acs_*)")
    click.echo("\n" + ds.attribution())


@click.command()
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file.")
@click.option("--column", required=True, help="Column holding the values.")
@click.option("--tau", type=FiniteFloat(0, 1), multiple=True, required=True, help="Level in [0, 1]; repeat for several.")
@click.option("--weights", default=None, help="Optional column of non-negative weights.")
@click.option("--n-jobs", type=NJobs(), default=None, help="Threads (default: an enclosing joblib.parallel_config's n_jobs, else LLMSURROGATE_NUM_THREADS, else all cores).")
@handle_errors
def quantile(data_path: Path, column: str, tau: tuple[float, ...], weights: str | None, n_jobs: int | None):
    """Upper and lower empirical quantiles of one column."""
    frame = read_table(data_path)
    require_columns(frame, [column] + ([weights] if weights else []), name="--data")
    levels = list(tau)
    with cli_names(values=data_column(column, data_path), weights=data_column(weights or "", data_path),
                   tau="--tau"):
        if weights:
            upper = q.weighted_upper_quantile(frame[column], frame[weights], levels, n_jobs=n_jobs)
            lower = q.weighted_lower_quantile(frame[column], frame[weights], levels, n_jobs=n_jobs)
        else:
            upper = q.upper_quantile(frame[column], levels, n_jobs=n_jobs)
            lower = q.lower_quantile(frame[column], levels, n_jobs=n_jobs)
    click.echo(pd.DataFrame({"tau": levels, "lower": lower, "upper": upper}).to_string(index=False))
