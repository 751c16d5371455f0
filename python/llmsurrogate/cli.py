"""The ``llmsurrogate`` command line: registration only.

Each capability owns its commands (``ess/_cli.py``, ``transfer/_cli.py``, ``risk/_cli.py``); the
commands no capability owns live in ``_cli_general.py``; shared helpers (error handling, progress,
reading tables) in ``_cli_support.py``.

Exit codes: 0 success, 1 a problem with the input or the computation (a one-line message on stderr,
no traceback; ``LLMSURROGATE_DEBUG=1`` shows the traceback of an unexpected one), 2 a usage error
such as an option value of the wrong type or out of range (click's convention), 130 interrupted
with Ctrl-C, 141 (quietly) when the reader of the output went away (``llmsurrogate datasets | head
-1``), as coreutils tools killed by SIGPIPE. Input files must have unique column names. Long work shows rich progress bars on
stderr; warnings are one line each. Worker processes started for parallel fits exit when the
command is killed (:mod:`llmsurrogate._workers`). Every command that writes results leaves a
``run.json`` beside them (``<file>.run.json`` for a single output file): versions, a SHA-256 of
each input file, the seeds, the command line and the UTC times (:mod:`llmsurrogate._cli_support`).

Examples::

    llmsurrogate --version
    llmsurrogate demo --out demo-output
    llmsurrogate datasets
    llmsurrogate quantile --data errors.csv --column err --tau 0.95
    llmsurrogate transfer intervals cpt.csv rf.csv --coverage 0.9 --compare
    llmsurrogate ess --data data.csv --outcome y --prediction llm --algorithm rf --out ess-output
    llmsurrogate score --data rows.csv --task ACSIncome --model ./model --cache cache --out scores
"""

from __future__ import annotations

import click

from . import __version__
from ._cli_general import datasets, demo, quantile
from ._cli_support import CommandLineGroup
from .ess._cli import ess_command
from .lookahead._cli import lookahead_group
from .risk._cli import score
from .transfer._cli import transfer_group


@click.group(cls=CommandLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="llmsurrogate")
def cli():
    """llmsurrogate: how much is an LLM worth as a stand-in for human data?"""


cli.add_command(demo, "demo")
cli.add_command(datasets, "datasets")
cli.add_command(quantile, "quantile")
cli.add_command(transfer_group, "transfer")
cli.add_command(ess_command, "ess")
cli.add_command(score, "score")
cli.add_command(lookahead_group, "lookahead")


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    from ._cli_support import one_line

    return f"Warning: {one_line(message)}\n"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``llmsurrogate`` console script. Warnings are shown as one line each."""
    import warnings

    warnings.formatwarning = _one_line_warning
    cli.main(args=argv, prog_name="llmsurrogate")


if __name__ == "__main__":  # pragma: no cover
    main()
