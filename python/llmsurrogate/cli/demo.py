"""The ``demo`` command: every capability's demo on the bundled data. Registered by
:mod:`llmsurrogate.cli` (its own module, so that the light commands do not import the demos)."""

from __future__ import annotations

import inspect
from pathlib import Path

import click

from .._atomic import check_output_dir
from .._cli_support import (
    RUN_JSON,
    FiniteFloat,
    handle_errors,
    progress_bar,
    start_run,
    use_agg_backend,
    write_run_json,
)
from ..demo import DEMOS, run_all
from ..ess.demo import run_ess_demo
from ..lookahead.demo import write_demo as lookahead_demo

__all__ = ["demo"]

_DEMO_NAMES = tuple(DEMOS)  # transfer, ess, lookahead


@click.command()
@click.argument("names", nargs=-1, type=click.Choice(_DEMO_NAMES))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-output"),
              show_default=True, help="Folder for the tables (CSV, text), summaries (JSON), figures (PNG) and "
              "run.json (the manifest: versions, the demos' seeds, command line).")
@click.option("--tau", type=FiniteFloat(0.5, 1.0, min_open=True), default=0.95, show_default=True,
              help="Quantile level of the forecast interval.")
@click.option("--no-plot", is_flag=True, help="Skip the figure.")
@click.option("--ess/--no-ess", "with_ess", default=True, show_default=True,
              help="Run every demo (default: transfer, then the equivalent-sample-size demo, ~30 s, and the "
              "lookahead demo, ~30 s); --no-ess runs the transfer demo only.")
@handle_errors
def demo(names: tuple[str, ...], out_dir: Path, tau: float, no_plot: bool, with_ess: bool):
    """Transfer forecast intervals on the bundled 44-subject-pool data (paper Table 5), the ESS
    of a textbook CPT rule on one subject pool, and the lookahead-bias test on a simulated panel
    (with LAP of a tiny trained model). NAMES (transfer, ess, lookahead) runs only those."""
    if names:
        only = tuple(dict.fromkeys(names))
    else:
        only = None if with_ess else ("transfer",)

    check_output_dir(out_dir)
    manifest = start_run(seeds=_demo_seeds(only))
    if not no_plot:
        use_agg_backend()
    with progress_bar() as bar:
        written = run_all(out_dir, tau=tau, plot=not no_plot, only=only, progress=bar,
                          echo=click.echo)
    write_run_json(out_dir / RUN_JSON, manifest)
    written.append(RUN_JSON)
    click.echo(f"\nWrote {', '.join(written)} to {out_dir}/")


def _demo_seeds(only: tuple[str, ...] | None) -> dict[str, int]:
    """The seed of each demo that runs (the transfer demo draws nothing at random), as its runner's
    default: ``run_all`` passes none."""
    runners = {"ess": run_ess_demo, "lookahead": lookahead_demo}
    return {name: inspect.signature(fn).parameters["seed"].default for name, fn in runners.items()
            if only is None or name in only}
