"""The ``llmsurrogate`` command line: the command registry and the entry point, nothing else.

One adapter convention: each capability owns its commands in ``<capability>/_cli.py`` (``ess``,
``transfer``, ``risk``, ``lookahead``, ``ppi``); the commands no capability owns live in
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
    llmsurrogate transfer intervals cpt.csv rf.csv --level 0.9 --compare
    llmsurrogate ess --data data.csv --outcome y --prediction llm --algorithm rf --out ess-output
    llmsurrogate risk --data rows.csv --task ACSIncome --model ./model --cache cache --out scores
    llmsurrogate ppi --data answers.csv --y human --prediction llm --out ppi-output
"""

from __future__ import annotations

import importlib
import warnings

import click

from .. import __version__
from .._cli_support import CommandLineGroup, deprecated_command, one_line

__all__ = ["COMMANDS", "cli", "main"]

#: The registry: command name -> (module, attribute, the one-line help ``llmsurrogate --help``
#: lists). A command's module is imported only when that command runs or its help is asked for, so
#: ``llmsurrogate --help`` and the light commands start without pandas, scipy or scikit-learn.
#: ``tests/cli/test_cli_commands.py`` checks each one-line help against the command's own.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "datasets": ("llmsurrogate.cli.general", "datasets", "List the bundled data sets and their sources."),
    "demo": ("llmsurrogate.cli.demo", "demo",
             ("Transfer forecast intervals on the bundled 44-subject-pool data (paper Table 5), the ESS of a "
              "textbook CPT rule on one subject pool, and the lookahead-bias test on a simulated panel (with "
              "LAP of a tiny trained model).")),
    "ess": ("llmsurrogate.ess._cli", "ess_command",
            "Equivalent sample size of a fixed prediction rule (block-out CV + sequential one-sided CI)."),
    "lookahead": ("llmsurrogate.lookahead._cli", "lookahead_group",
                  "Lookahead bias in LLM forecasts (Gao, Jiang & Yan 2026): LAP and the test."),
    "ppi": ("llmsurrogate.ppi._cli", "ppi_command",
            "Prediction-powered inference (PPI, PPI++) from one file of labelled and unlabelled rows."),
    "quantile": ("llmsurrogate.cli.general", "quantile", "Upper and lower empirical quantiles of one column."),
    "risk": ("llmsurrogate.risk._cli", "risk_command",
             "LLM risk scores for every row of --data, with metrics when the label is present."),
    "transfer": ("llmsurrogate.transfer._cli", "transfer_group",
                 "Transfer performance of a model across domains (Andrews, Fudenberg, Lei, Liang & Wu 2025)."),
}

#: old command names kept for one release: hidden from ``--help``, a notice on stderr, then the
#: new command (the risk command was ``llmsurrogate score`` before 0.2)
RENAMED_COMMANDS: dict[str, str] = {"score": "risk"}


def load_command(name: str) -> click.Command:
    """The command registered as ``name`` (its module imported now)."""
    module, attribute, _ = COMMANDS[name]
    return getattr(importlib.import_module(module), attribute)


class _Registry(CommandLineGroup):
    """The root group over :data:`COMMANDS`: commands load on first use; the command list of
    ``--help`` comes from the registry without importing them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS:
            return load_command(name)
        if name in RENAMED_COMMANDS:
            new = RENAMED_COMMANDS[name]
            return deprecated_command(load_command(new), name, new)
        return None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, click.utils.make_default_short_help(COMMANDS[n][2], limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_Registry, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="llmsurrogate")
def cli():
    """llmsurrogate: how much is an LLM worth as a stand-in for human data?"""


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"Warning: {one_line(message)}\n"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``llmsurrogate`` console script (``argv``: the words after the program
    name; ``None``: ``sys.argv``). Warnings are shown as one line each. Ends with ``SystemExit``,
    as the console script does: status 0 on success, 1 on an error, 2 on a usage error.

    Examples
    --------
    >>> import pandas as pd
    >>> pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}).to_csv("x.csv", index=False)
    >>> try:
    ...     main(["quantile", "--data", "x.csv", "--column", "x", "--tau", "0.5"])
    ... except SystemExit as done:
    ...     print("exit status", done.code)
     tau  lower  upper
     0.5    3.0    2.0
    exit status 0
    """
    warnings.formatwarning = _one_line_warning
    cli.main(args=argv, prog_name="llmsurrogate")
