"""The ``llmsurrogate demo`` job: each capability's demo on the bundled real data, one after another.

* :mod:`llmsurrogate.transfer.demo` -- the transfer paper's Table 5 forecast intervals and its
  application (dominance of EU, CPT and a random forest across 44 subject pools);
* :mod:`llmsurrogate.ess.demo` -- the equivalent sample size of a textbook CPT rule on one pool;
* :mod:`llmsurrogate.lookahead.demo` -- LAP of a tiny trained model on seen vs unseen texts, and the
  lookahead-bias test with its bootstrap on a simulated panel of the paper's size.

:func:`run_demo` (the Table 5 intervals, a result object) is re-exported here because it is the
main job: ``llmsurrogate.demo.run_demo()`` and R's ``llmsurrogate_demo()`` return it.

>>> res = run_demo(tau=0.95)
>>> res.meta["guaranteed coverage (Prop. 1)"]
0.86
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from ._progress import ProgressCallback
from .transfer.demo import run_demo

__all__ = ["DEMOS", "run_demo", "run_all"]

#: The capability demos :func:`run_all` runs, in order: name -> module with ``write_demo``.
DEMOS = {"transfer": "llmsurrogate.transfer.demo", "ess": "llmsurrogate.ess.demo",
         "lookahead": "llmsurrogate.lookahead.demo"}


def run_all(out_dir: str | Path, *, tau: float = 0.95, plot: bool = True, only: tuple[str, ...] | None = None,
            progress: ProgressCallback | None = None, echo: Callable[[str], None] = print) -> list[str]:
    """Run the capability demos (``only``: a subset of :data:`DEMOS`) and write their outputs to
    ``out_dir``; returns the file names written. ``tau`` is the transfer intervals' level.

    Examples
    --------
    >>> list(DEMOS)
    ['transfer', 'ess', 'lookahead']
    >>> run_all("demo_out", only=("transfer",), plot=False, echo=lambda text: None)
    ['transfer_forecast_intervals.csv', 'transfer_forecast_intervals.json', 'transfer_dominance.csv']
    """
    written: list[str] = []
    for name, module in DEMOS.items():
        if only is not None and name not in only:
            continue
        demo = importlib.import_module(module)  # each demo's capability loads when its demo runs
        kwargs = {"tau": tau} if name == "transfer" else {}
        written += demo.write_demo(out_dir, plot=plot, progress=progress, echo=echo, **kwargs)
    return written
