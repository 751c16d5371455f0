"""The one progress-callback shape of every long job, and the one rich bar that draws it.

Every function that runs long takes ``progress=``: ``None`` (silent), ``True`` (a rich progress
bar on stderr) or a callable ``progress(label, done, total)``:

* ``label`` (str) names a unit of work, e.g. ``"grid points"``, ``"N = 20: blocks"``,
  ``"scoring prompts"``; a job may report several labels, and a bar draws one line per label;
* ``done`` (int) units of it are finished, out of ``total`` (int, or ``None`` while unknown).

>>> seen = []
>>> with progress_reporter(lambda label, done, total: seen.append((label, done, total))) as report:
...     report("fits", 1, 2)
>>> seen
[('fits', 1, 2)]
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, Optional

from .exceptions import InvalidArgumentError

__all__ = ["ProgressCallback", "RichProgress", "progress_reporter"]

#: ``progress(label, done, total)``; see the module docstring.
ProgressCallback = Callable[[str, int, Optional[int]], None]


def _silent(label: str, done: int, total: int | None) -> None:
    return None


class RichProgress:
    """A rich progress display on stderr with one bar per label (a :data:`ProgressCallback`).

    >>> with RichProgress(disable=True) as bar:
    ...     bar("fits", 1, 3)
    """

    def __init__(self, disable: bool = False) -> None:
        # rich is imported when a bar is drawn: the API's callers mostly pass no progress bar
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        # Text printed while the bar is live goes above it only when stdout is a terminal too;
        # stdout redirected to a file keeps every printed line.
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                             console=Console(stderr=True), transient=False, disable=disable,
                             redirect_stdout=sys.stdout.isatty())
        self._tasks: dict[str, Any] = {}

    def __call__(self, label: str, done: int, total: int | None) -> None:
        task = self._tasks.get(label)
        if task is None:
            task = self._tasks[label] = self._bar.add_task(label, total=total)
        self._bar.update(task, completed=done, total=total)

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.stop()


@contextlib.contextmanager
def progress_reporter(progress: Any, arg: str = "progress") -> Iterator[ProgressCallback]:
    """A :data:`ProgressCallback` for a job's ``progress=`` argument (``None``/``False``: silent,
    ``True``: a :class:`RichProgress` bar, a callable: itself), closed when the job ends."""
    if progress is None or progress is False:
        yield _silent
    elif progress is True:
        with RichProgress() as bar:
            yield bar
    elif callable(progress):
        yield progress
    else:
        raise InvalidArgumentError(f"argument `{arg}` must be None, True or a callable progress(label, done, total); "
                                   f"got {type(progress).__name__}")
