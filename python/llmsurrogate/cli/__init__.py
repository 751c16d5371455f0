"""The ``llmsurrogate`` command line: the command registry and the entry point, nothing else.

One adapter convention: each capability owns its commands in ``<capability>/_cli.py`` (``ess``,
``transfer``, ``risk``, ``lookahead``); the commands no capability owns live in
:mod:`llmsurrogate.cli.general` (``demo``, ``datasets``, ``quantile``); the shared machinery every
command is built from (error handling, option types, progress, reading tables, ``run.json``) is
:mod:`llmsurrogate._cli_support`, below the capabilities (a capability may import it, never this
package). ``python -m llmsurrogate.cli`` runs the same command as the ``llmsurrogate`` script.

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
    llmsurrogate risk --data rows.csv --task ACSIncome --model ./model --cache cache --out scores
"""

from __future__ import annotations

import warnings

import click

from .. import __version__
from .._cli_support import CommandLineGroup, deprecated_command, one_line
from ..ess._cli import ess_command
from ..lookahead._cli import lookahead_group
from ..risk._cli import score
from ..transfer._cli import transfer_group
from .general import datasets, demo, quantile

__all__ = ["cli", "main"]


@click.group(cls=CommandLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="llmsurrogate")
def cli():
    """llmsurrogate: how much is an LLM worth as a stand-in for human data?"""


cli.add_command(demo, "demo")
cli.add_command(datasets, "datasets")
cli.add_command(quantile, "quantile")
cli.add_command(transfer_group, "transfer")
cli.add_command(ess_command, "ess")
cli.add_command(score, "risk")
cli.add_command(lookahead_group, "lookahead")
# the risk command's name before 0.2.x: hidden, with a deprecation notice on stderr
cli.add_command(deprecated_command(score, "score", "risk"), "score")


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"Warning: {one_line(message)}\n"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``llmsurrogate`` console script. Warnings are shown as one line each."""
    warnings.formatwarning = _one_line_warning
    cli.main(args=argv, prog_name="llmsurrogate")
