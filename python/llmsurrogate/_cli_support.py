"""Shared machinery of the ``llmsurrogate`` command line: error handling, progress, reading tables,
the ``run.json`` every command that writes results leaves beside them.

An error names what the user typed (``--data f.csv``, ``column 'x' of --data f.csv``), never an API
argument the command passed on: each command runs the API inside :func:`cli_names`, which renames
the arguments of the package's error messages.

Each capability owns its commands in ``<capability>/_cli.py`` and builds them from these helpers;
:mod:`llmsurrogate.cli` only registers them. This module is shared machinery, below the
capabilities: a capability's ``_cli`` imports it, and nothing here imports a capability or the
command-line package :mod:`llmsurrogate.cli` (``tests/package/test_layout.py``).

Old spellings (a renamed command or option) keep working for one release, hidden from ``--help``,
with a one-line notice on stderr: :func:`deprecated_command`, :func:`deprecated_option`.

``run.json``: a command that writes into an output folder writes ``run.json`` there; one that writes
a single file ``out.csv`` writes ``out.csv.run.json`` beside it (none when the file is a character
device such as ``/dev/null``, or a FIFO). It holds the command's own fields
(if any) and a ``manifest`` (:mod:`llmsurrogate._manifest`): versions, platform, a SHA-256 of every
input file, the seeds, the command line and the UTC start and finish times. A command calls
:func:`start_run` before its work and :func:`write_run_json` after its last output.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import json
import math
import os
import re
import select
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from . import _manifest
from ._atomic import check_output_file, is_stream, write_text
from ._deprecation import REMOVED_IN
from ._positions import message_of, reworded
from ._progress import RichProgress
from ._redact import redact_text
from .exceptions import InvalidArgumentError, LLMSurrogateError

__all__ = ["CommandLineGroup", "FiniteFloat", "NJobs", "NameList", "PositiveIntList", "RUN_JSON", "Seed", "Subsets",
           "check_output_and_record", "cli_names", "cli_warnings", "command_line", "data_column", "deprecated_command",
           "deprecated_option", "deprecation_notice", "exit_on_closed_output",
           "handle_errors", "one_line", "output_closed", "progress_bar", "read_table", "run_json_beside", "start_run",
           "use_agg_backend", "write_run_json"]

#: Set to 1 to let unexpected exceptions through with their traceback (for bug reports).
DEBUG_ENV = "LLMSURROGATE_DEBUG"
#: The name of the run record in an output folder.
RUN_JSON = "run.json"
#: Where :class:`CommandLineGroup` keeps the words of the command line (``click.Context.meta``).
_ARGS_META = "llmsurrogate.args"


def one_line(text: object) -> str:
    """``text`` on one line: its lines joined with spaces (an error message is one line on stderr)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


_ARGUMENT = re.compile(r"(?:argument )?`([A-Za-z_][A-Za-z0-9_]*)[^`]*`")
#: An API setting in a hint, in backticks or not: ``missing='drop'``, ```bias_correct=True```.
_SETTING = re.compile(r"`?\b([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|\"[^\"]*\"|True|-?[0-9][0-9.]*)`?")
#: An argument the command already named in command-line words: ``argument `--data f.csv```.
_CLI_ARGUMENT = re.compile(r"(?:argument )?`(--?[A-Za-z][^`]*)`")


def cli_names(**names: str) -> contextlib.AbstractContextManager:
    """Inside the block, a package error that names an API argument names what the user typed
    instead: ``with cli_names(values="column 'x' of --data"):`` turns "argument `values` holds
    strings" into "column 'x' of --data holds strings" (and "is not in `data`" into "is not in
    --data f.csv" with ``data="--data f.csv"``). An argument named with more words (``argument
    `outcome 'y'```) is matched by its first word; names not given are left alone. A setting whose
    name maps to an option becomes that option with its value: ``missing='drop'`` with
    ``missing="--missing"`` reads "--missing drop", ``bias_correct=True`` "--bias-correct".
    The block may be entered more than once; :meth:`rename` applies the same renaming to any text.

    >>> cli_names(missing="--missing").rename("drop them first (or pass missing='drop')")
    'drop them first (or pass --missing drop)'
    """
    return _Renamer(names)


class _Renamer(contextlib.AbstractContextManager):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def _setting(self, match: re.Match) -> str:
        option = self.names.get(match.group(1))
        if option is None or not option.startswith("-"):
            return match.group(0)
        value = match.group(2).strip()
        if value == "True":
            return option
        return f"{option} {value.strip(chr(39) + chr(34))}"

    def rename(self, text: str) -> str:
        text = _SETTING.sub(self._setting, text)
        return _ARGUMENT.sub(lambda m: self.names.get(m.group(1), m.group(0)), text)

    def __exit__(self, kind, err, tb) -> None:
        if isinstance(err, LLMSurrogateError):
            text = message_of(err)
            new = reworded(text, self.rename)
            if new != text:
                err.args = (new, *err.args[1:])


@contextlib.contextmanager
def cli_warnings(names: contextlib.AbstractContextManager | None = None):
    """Inside the block, a warning prints as one line on stderr, ``Warning: <message>``, in the
    command line's words (``names``: a :func:`cli_names` block), instead of Python's
    ``file:line: Category: message``."""
    def show(message, category, filename, lineno, file=None, line=None):
        text = one_line(message)
        if isinstance(names, _Renamer):
            text = names.rename(text)
        click.secho(f"Warning: {redact_text(_CLI_ARGUMENT.sub(lambda m: m.group(1), text))}", fg="yellow", err=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def data_column(name: str, data_path: Path, arg: str = "--data") -> str:
    """How the command line names column ``name`` of the input file: ``column 'x' of --data f.csv``."""
    return f"column {name!r} of {arg} {data_path.name}"


def handle_errors(fn):
    """Every error of a command as one line on stderr, never a traceback: package errors and
    anything else raised while running it (a bad value that got past the option types, an OS
    error) exit 1; Ctrl-C exits 130; a reader of the output that went away (``| head -1``) ends
    the command quietly with 141 (:func:`exit_on_closed_output`). click's own usage errors (exit 2)
    pass through. With ``LLMSURROGATE_DEBUG=1`` an unexpected exception keeps its traceback. A package error that
    names a command-line argument as an API one (``argument `--data f.csv```) names it plainly. No
    URL in a message keeps its userinfo or a secret query value (:mod:`llmsurrogate._redact`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LLMSurrogateError as err:
            message = redact_text(_CLI_ARGUMENT.sub(lambda m: m.group(1), one_line(err)))
            click.secho(f"Error: {message}", fg="red", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.secho("Interrupted; results written so far are kept.", fg="yellow", err=True)
            sys.exit(130)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit):
            raise
        except Exception as err:  # noqa: BLE001 - the command line never shows a traceback
            if isinstance(err, BrokenPipeError) and output_closed():
                exit_on_closed_output()
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                raise
            detail = redact_text(one_line(err)) or "(no message)"
            click.secho(f"Error: {type(err).__name__}: {detail} (set {DEBUG_ENV}=1 for the traceback)",
                        fg="red", err=True)
            sys.exit(1)

    return wrapper


#: The exit status when the reader of the output went away: 128 + SIGPIPE, as a coreutils tool killed by it.
BROKEN_PIPE_EXIT = 141


def output_closed() -> bool:
    """Whether the reader of stdout or stderr went away (a pipe whose other end is closed:
    ``llmsurrogate datasets | head -1``), as opposed to some other pipe of the computation."""
    try:
        poller = select.poll()
        for fd in (1, 2):
            poller.register(fd, select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() (Windows)
        return False


def exit_on_closed_output() -> None:
    """End quietly with :data:`BROKEN_PIPE_EXIT`, as other command-line tools do when their reader
    goes away: no message, no traceback, and stdout and stderr sent to the null device so that
    Python's final flush of what is left in their buffers does not complain (the recipe of the
    Python documentation, :mod:`signal`, "Note on SIGPIPE")."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
    sys.exit(BROKEN_PIPE_EXIT)


# ------------------------------------------------------------------------------------------------
# Option types: a bad value is a usage error (exit 2) before any work starts
# ------------------------------------------------------------------------------------------------

class FiniteFloat(click.FloatRange):
    """A float in a range (``click.FloatRange``), never NaN; infinite only with ``allow_inf``."""

    def __init__(self, min: float | None = None, max: float | None = None, *, min_open: bool = False,
                 max_open: bool = False, allow_inf: bool = False) -> None:
        super().__init__(min=min, max=max, min_open=min_open, max_open=max_open)
        self.allow_inf = allow_inf

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if math.isnan(rv):
            self.fail(f"{value!r} is not a number.", param, ctx)
        if math.isinf(rv) and not self.allow_inf:
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


class Seed(click.ParamType):
    """A non-negative integer seed up to ``maximum``, or (with ``allow_none``) ``none``."""

    name = "integer"

    def __init__(self, maximum: int = 2**64 - 1, allow_none: bool = False) -> None:
        self.maximum = maximum
        self.allow_none = allow_none
        if allow_none:
            self.name = "integer|none"

    def convert(self, value, param, ctx):
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            text = value
        else:
            text = str(value).strip()
            if self.allow_none and text.lower() == "none":
                return None
        try:
            out = int(text)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not an integer{' or none' if self.allow_none else ''}.", param, ctx)
        if not 0 <= out <= self.maximum:
            self.fail(f"{out} is not in the range 0 to {self.maximum}.", param, ctx)
        return out


class NJobs(click.ParamType):
    """joblib's ``n_jobs``: a positive count or -k (all cores but k - 1); never 0."""

    name = "integer"

    def convert(self, value, param, ctx):
        try:
            out = int(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            out = None
        if out is None or (isinstance(value, float) and not value.is_integer()):
            self.fail(f"{value!r} is not an integer.", param, ctx)
        if out == 0:
            self.fail("0 is not allowed: use a positive count, or -1 for all cores.", param, ctx)
        if abs(out) > 2**31 - 1:
            self.fail(f"{out} is out of range.", param, ctx)
        return out


class NameList(click.ParamType):
    """Comma-separated names, none empty. The command gets the text back with the spaces around
    names removed (it splits on commas)."""

    name = "name,name,..."

    def convert(self, value, param, ctx):
        parts = [p.strip() for p in str(value).split(",")]
        if not any(parts):
            self.fail("give at least one name.", param, ctx)
        if not all(parts):
            self.fail(f"{value!r} has an empty name (check the commas).", param, ctx)
        return ",".join(parts)


class PositiveIntList(click.ParamType):
    """Comma-separated positive integers. The command gets the text back, normalised (it splits on commas)."""

    name = "int,int,..."

    def convert(self, value, param, ctx):
        parts = [p.strip() for p in str(value).split(",")]
        try:
            ints = [int(p) for p in parts]
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of integers.", param, ctx)
        bad = [v for v in ints if v < 1]
        if bad:
            self.fail(f"{bad[0]} is not a positive integer.", param, ctx)
        return ",".join(str(v) for v in ints)


class Subsets(click.ParamType):
    """``all``, or a positive number of training sets to sample."""

    name = "all|integer"

    def convert(self, value, param, ctx):
        text = str(value).strip()
        if text.lower() == "all":
            return "all"
        try:
            out = int(text)
        except ValueError:
            self.fail(f"{value!r} is not 'all' or a positive integer.", param, ctx)
        if out < 1:
            self.fail(f"{out} is not a positive integer.", param, ctx)
        return out


# ------------------------------------------------------------------------------------------------
# Old spellings: kept for one release, hidden from --help, with a notice on stderr
# ------------------------------------------------------------------------------------------------

def deprecation_notice(old: str, new: str) -> None:
    """One line on stderr: the old spelling ``old`` still works this release; use ``new``."""
    click.secho(f"Warning: {old} is deprecated and will be removed in llmsurrogate {REMOVED_IN}; use {new}",
                fg="yellow", err=True)


def deprecated_command(command: click.Command, old: str, new: str) -> click.Command:
    """``command`` under its old name ``old``: hidden from ``--help``, runs the same thing after a
    deprecation notice naming ``llmsurrogate <new>``."""
    alias = copy.copy(command)
    alias.name = old
    alias.hidden = True
    callback = command.callback

    @functools.wraps(callback)
    def run(*args, **kwargs):
        deprecation_notice(f"`llmsurrogate {old}`", f"`llmsurrogate {new}`")
        return callback(*args, **kwargs)

    alias.callback = run
    return alias


def deprecated_option(old: str, new: str, **attrs: Any):
    """A hidden option ``old`` (``"--reps"``) that stands for ``new`` (``"--n-boot"``): given, it
    prints a deprecation notice and the command gets its value as ``new``'s; giving both is a usage
    error. Place it among the command's options (below ``@click.command``); ``attrs`` are its
    ``click.option`` arguments (``type``, ...) without a default."""
    target = new.lstrip("-").replace("-", "_")
    hidden_name = f"deprecated_{target}"

    def decorate(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            value = kwargs.pop(hidden_name, None)
            if value is not None and value != ():
                ctx = click.get_current_context()
                source = ctx.get_parameter_source(target)
                if source is not None and source.name == "COMMANDLINE":
                    raise click.UsageError(f"{old} is the old spelling of {new}; give only {new}", ctx=ctx)
                deprecation_notice(old, new)
                kwargs[target] = value
            return fn(*args, **kwargs)

        return click.option(old, hidden_name, hidden=True, default=None, **attrs)(run)

    return decorate


def progress_bar(preface: str | None = None) -> RichProgress:
    """The command line's progress display (stderr): a ``progress(label, done, total)`` callback.
    ``preface``: a line shown above it once the work starts (not when a check fails first)."""
    return RichProgress(preface=preface)


def read_table(path: Path, arg: str = "--data") -> Any:
    """Read a CSV or Parquet file into pandas, with an error that names the file on failure.

    Column names must be unique: pandas would silently rename a repeated CSV column ``x`` to
    ``x.1``, so the header is read on its own and a repeated name is an error that names it.
    """
    import pandas as pd  # here, not at the top: `llmsurrogate --help` starts without pandas

    suffix = path.suffix.lower()
    try:
        if suffix in {".parquet", ".pq"}:
            import pyarrow.parquet as pq  # an optional dependency, needed for Parquet only

            _check_unique_columns([str(c) for c in pq.read_schema(path).names], path, arg)
            frame = pd.read_parquet(path)
            header = [str(c) for c in frame.columns]
        elif suffix in {".csv", ".txt", ".gz"}:
            frame = pd.read_csv(path)
            raw = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
            header = [str(v) for v in raw.iloc[0]] if len(raw) else []
        else:
            raise InvalidArgumentError(f"{arg} {path}: unsupported file type {suffix!r}; use .csv or .parquet")
    except LLMSurrogateError:
        raise
    except ImportError as err:
        raise InvalidArgumentError(f"reading {path.name} needs pyarrow: pip install pyarrow ({err})") from err
    except (OSError, ValueError) as err:
        raise InvalidArgumentError(f"could not read {arg} {path}: {one_line(err)}") from err
    _check_unique_columns(header, path, arg)
    return frame


def _check_unique_columns(header: list[str], path: Path, arg: str) -> None:
    """Raise on a column name that appears more than once (empty names, which pandas numbers
    ``Unnamed: i``, excepted)."""
    counts = collections.Counter(h for h in header if h.strip())
    repeated = [name for name, k in counts.items() if k > 1]
    if repeated:
        name = repeated[0]
        more = f" (also {', '.join(repr(r) for r in repeated[1:4])})" if len(repeated) > 1 else ""
        raise InvalidArgumentError(f"{arg} {path.name}: column {name!r} appears {counts[name]} times in the "
                                   f"header{more}; column names must be unique")


# ------------------------------------------------------------------------------------------------
# run.json: the manifest of a run, written beside its outputs
# ------------------------------------------------------------------------------------------------

class CommandLineGroup(click.Group):
    """The root command group: keeps the words it was given (for :func:`command_line`), however it
    was called (the console script, ``main(argv)``, click's test runner)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta.setdefault(_ARGS_META, list(args))
        return super().parse_args(ctx, args)


def command_line() -> list[str]:
    """The command line of the running command: the program and the words after it (``sys.argv``
    when the command runs as the console script)."""
    ctx = click.get_current_context(silent=True)
    args = ctx.meta.get(_ARGS_META) if ctx is not None else None
    if args is None:
        return list(sys.argv)
    prog = sys.argv[0] if sys.argv[1:] == args else "llmsurrogate"
    return [prog, *args]


def run_json_beside(path: Path) -> Path:
    """Where a command that writes the single file ``path`` writes its run record: ``<path>.run.json``."""
    return path.with_name(path.name + "." + RUN_JSON)


def check_output_and_record(path: Path, inputs: Iterable[Path], arg: str = "--out") -> Path | None:
    """Before any work: check the single output file ``path`` and its run record
    (:func:`llmsurrogate._atomic.check_output_file`). Returns the run record's path, or None when
    ``path`` is a character device (``/dev/null``) or a FIFO: nothing is written beside a device."""
    inputs = list(inputs)
    check_output_file(path, inputs=inputs, arg=arg)
    if is_stream(path):
        return None
    return check_output_file(run_json_beside(path), inputs=inputs, arg=arg)


def start_run(inputs: Iterable[tuple[str, Path]] = (), seeds: dict[str, int | None] | None = None) -> dict[str, Any]:
    """The manifest of the command about to do its work (:func:`llmsurrogate._manifest.start`):
    ``inputs`` are ``(argument, path)`` pairs, each file hashed now; ``seeds`` ``{name: value}``."""
    return _manifest.start(command_line(), inputs, seeds)


def write_run_json(path: Path | None, manifest: dict[str, Any], fields: dict[str, Any] | None = None) -> None:
    """Write the run record ``path`` atomically: ``fields`` and the ``manifest``, completed now
    (``None``: no record, see :func:`check_output_and_record`). No URL in it keeps its userinfo or a
    secret query value (:func:`llmsurrogate._redact.redact_text`, whatever field holds it)."""
    if path is None:
        return
    record = {**(fields or {}), "manifest": _manifest.finish(manifest)}
    write_text(path, redact_text(json.dumps(record, indent=1, default=str)))


def use_agg_backend() -> None:
    """Draw figures off-screen (the command line only writes PNG files)."""
    import matplotlib  # inside the function: only commands that draw load it

    matplotlib.use("Agg")
