"""Shared machinery of the ``llmsurrogate`` command line: error handling, progress, reading tables.

Each capability owns its commands in ``<capability>/_cli.py`` and builds them from these helpers;
:mod:`llmsurrogate.cli` only registers them. Nothing here imports a capability.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import click

from ._progress import RichProgress
from .exceptions import InvalidArgumentError, LLMSurrogateError

__all__ = ["handle_errors", "progress_bar", "read_table", "use_agg_backend"]


def handle_errors(fn):
    """Turn package errors into exit code 1 with a clean one-line message, Ctrl-C into 130."""

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


def progress_bar() -> RichProgress:
    """The command line's progress display (stderr): a ``progress(label, done, total)`` callback."""
    return RichProgress()


def read_table(path: Path, arg: str = "--data") -> Any:
    """Read a CSV or Parquet file into pandas, with an error that names the file on failure."""
    import pandas as pd

    suffix = path.suffix.lower()
    try:
        if suffix in {".parquet", ".pq"}:
            return pd.read_parquet(path)
        if suffix in {".csv", ".txt", ".gz"}:
            return pd.read_csv(path)
    except ImportError as err:
        raise InvalidArgumentError(f"reading {path.name} needs pyarrow: pip install pyarrow ({err})") from err
    except (OSError, ValueError) as err:
        raise InvalidArgumentError(f"could not read {arg} {path}: {err}") from err
    raise InvalidArgumentError(f"{arg} {path}: unsupported file type {suffix!r}; use .csv or .parquet")


def use_agg_backend() -> None:
    """Draw figures off-screen (the command line only writes PNG files)."""
    import matplotlib

    matplotlib.use("Agg")
