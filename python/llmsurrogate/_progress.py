"""The one progress-callback shape of every long job, and the one rich bar that draws it.

Every function that runs long takes ``progress=``:

* ``None`` (the default): a progress bar on stderr in an interactive session -- stderr is a
  terminal, or a Jupyter kernel -- and nothing otherwise (output piped or captured, a batch job,
  a worker process, a thread other than the main one);
* ``False``: silent; ``True``: a rich progress bar on stderr, interactive or not;
* a callable ``progress(label, done, total)``:

  - ``label`` (str) names a unit of work, e.g. ``"grid points"``, ``"N = 20: blocks"``,
    ``"scoring prompts"``; a job may report several labels, and a bar draws one line per label;
  - ``done`` (int) units of it are finished, out of ``total`` (int, or ``None`` while unknown).

A job that draws a bar first says on one line how much work it will do (``notice``); a job run
inside another job's bar adds its lines to that bar.

>>> seen = []
>>> with progress_reporter(lambda label, done, total: seen.append((label, done, total))) as report:
...     report("fits", 1, 2)
>>> seen
[('fits', 1, 2)]
>>> with progress_reporter(False) as report:  # silent, whatever stderr is
...     report("fits", 1, 2)
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Optional, Union

from .exceptions import InvalidArgumentError

__all__ = ["ProgressCallback", "RichProgress", "interactive", "progress_reporter", "quiet_transformers"]

#: ``progress(label, done, total)``; see the module docstring.
ProgressCallback = Callable[[str, int, Optional[int]], None]

#: The bars being drawn in this process, innermost last: a job started inside another's bar draws there.
_ACTIVE: list[RichProgress] = []


def _silent(label: str, done: int, total: int | None) -> None:
    return None


def _in_jupyter() -> bool:
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def interactive() -> bool:
    """Whether ``progress=None`` draws a bar: stderr is a terminal or this is a Jupyter kernel, in
    the main thread of the main process (a joblib worker that inherited the terminal draws nothing).

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()):  # stderr captured: no bar
    ...     interactive()
    False
    """
    if multiprocessing.parent_process() is not None or threading.current_thread() is not threading.main_thread():
        return False
    try:
        tty = bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError):  # a closed or exotic stream
        tty = False
    return tty or _in_jupyter()


class RichProgress:
    """A rich progress display on stderr with one bar per label (a :data:`ProgressCallback`).
    ``preface``: a line printed when the job shows its first notice or bar, not before (a command
    line lists the columns it will use only once its inputs passed every check).

    >>> with RichProgress(disable=True) as bar:
    ...     bar("fits", 1, 3)
    """

    def __init__(self, disable: bool = False, preface: str | None = None) -> None:
        # rich is imported when a bar is drawn: the API's callers mostly pass no progress bar
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        # Text printed while the bar is live goes above it only when stdout is a terminal too;
        # stdout redirected to a file keeps every printed line.
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                             TextColumn("left"), TimeRemainingColumn(),
                             console=Console(stderr=True), transient=False, disable=disable,
                             redirect_stdout=sys.stdout.isatty())
        self._tasks: dict[str, Any] = {}
        self._disabled = disable
        self._preface = preface

    def __call__(self, label: str, done: int, total: int | None) -> None:
        self._print_preface()
        task = self._tasks.get(label)
        if task is None:
            task = self._tasks[label] = self._bar.add_task(label, total=total)
        self._bar.update(task, completed=done, total=total)

    def note(self, text: str) -> None:
        """Print ``text`` on stderr above the bar (as typed: no rich markup)."""
        self._print_preface()
        if not self._disabled:
            self._bar.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def _print_preface(self) -> None:
        if self._preface is not None:
            text, self._preface = self._preface, None
            self.note(text)

    def __enter__(self) -> RichProgress:
        self._bar.start()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        self._bar.stop()


Notice = Union[str, Callable[[], str], None]


@contextlib.contextmanager
def progress_reporter(progress: Any, arg: str = "progress", notice: Notice = None) -> Iterator[ProgressCallback]:
    """A :data:`ProgressCallback` for a job's ``progress=`` argument (see the module docstring),
    closed when the job ends. ``notice``: how much work the job will do (a string, or a function
    that returns one), printed on stderr when a bar is drawn, before the first bar line."""
    if progress is None:
        progress = bool(_ACTIVE) or interactive()
    if progress is False:
        yield _silent
    elif progress is True or isinstance(progress, RichProgress):
        if isinstance(progress, RichProgress):
            bar, own = progress, None
        elif _ACTIVE:
            bar, own = _ACTIVE[-1], None
        else:
            bar = own = RichProgress()
        with own if own is not None else contextlib.nullcontext():
            if notice is not None:
                bar.note(notice() if callable(notice) else notice)
            yield bar
    elif callable(progress):
        yield progress
    else:
        raise InvalidArgumentError(f"argument `{arg}` must be None, True, False or a callable progress(label, done, "
                                   f"total); got {type(progress).__name__}")


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' own progress bars ("Loading weights", "Writing model shards") and info
    messages off inside the block, as they were after it: the package's jobs report through
    :func:`progress_reporter`, which knows whether anyone is watching. Needs transformers."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()
