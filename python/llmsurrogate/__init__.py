"""llmsurrogate: how much is an LLM worth as a stand-in for human data, and can you trust it?

Capabilities, one package each, all of the same shape (a public ``__init__`` re-exporting the
API; private modules by role: ``_results``, ``_cli``, ``demo``, then the computation), imported on
first use so ``import llmsurrogate`` stays fast and needs none of torch, transformers, vllm, rpy2,
dask or polars. The methods as implemented: ``docs/methods/<capability>.md``.

* :mod:`llmsurrogate.ess` -- equivalent sample size of a fixed prediction rule (block-out CV,
  three-term variance, sequential one-sided CI, CATE-ESS).
* :mod:`llmsurrogate.transfer` -- transfer performance across domains (error tables built by
  fitting EU/CPT/ML models, forecast intervals, weighted and worst-case quantiles, dominance LPs,
  U-statistic bounds).
* :mod:`llmsurrogate.risk` -- LLM risk scores from survey rows, their metrics and recalibration.
* :mod:`llmsurrogate.lookahead` -- lookahead bias in LLM forecasts (LAP, the paper's prompts and
  forecasts, the fixed-effects interaction test and its bootstrap).
* :mod:`llmsurrogate.ppi` -- prediction-powered inference (PPI, PPI++): means, answer shares,
  quantiles and regressions from a few human labels and many LLM answers, with valid intervals.

Shared machinery (imports no capability):

* :mod:`llmsurrogate.fe` -- fixed-effects OLS (``feols``, ``etable``) and its bootstrap, used by
  lookahead and public on its own.
* :mod:`llmsurrogate.llm` -- tasks, prompts, backends (transformers, vLLM, OpenAI-compatible HTTP
  servers), the on-disk cache, scoring.
* :mod:`llmsurrogate.quantiles` -- empirical upper/lower quantiles, plain and weighted (Rust core).
* :mod:`llmsurrogate.datasets` -- bundled real data (44 subject pools, transfer-error matrices, ACS rows).
* :mod:`llmsurrogate.results` -- the result base class every capability returns (print, tidy, save/load).
* :mod:`llmsurrogate.exceptions` -- the error hierarchy rooted at :class:`LLMSurrogateError`.
* :mod:`llmsurrogate.testing` -- tiny offline tokenizers and models, synthetic census rows.
* the private top-level modules (``_validation``, ``_workers``, ``_deprecation``, ``_core``, ...):
  input checks, worker counts, deprecations, the Rust core.

Adapters on top (may import every capability; none imports them):

* :mod:`llmsurrogate.cli` -- the command line; :mod:`llmsurrogate.demo` -- the demo runner;
  :mod:`llmsurrogate.rbridge` -- the bridge for the R package and for rpy2.

Where a change belongs, and the words every package uses: ``docs/developers.md``.

>>> import llmsurrogate
>>> llmsurrogate.quantiles.upper_quantile([1.0, 2.0, 3.0], 0.5)
2.0
"""

from __future__ import annotations

import importlib
from typing import Any

from . import _core, exceptions
from .exceptions import *  # noqa: F403  (the LLMSurrogateError hierarchy, listed in exceptions.__all__)

__version__: str = _core.__version__

_SUBMODULES = {"quantiles", "datasets", "results", "rbridge", "demo", "cli", "transfer", "ess", "llm", "risk", "fe",
               "lookahead", "ppi"}
#: Submodules reachable as attributes (``llmsurrogate.testing``) and listed by ``dir()``, outside ``__all__``.
_TOOLS = {"testing"}

__all__ = ["__version__", "num_threads", *exceptions.__all__, *sorted(_SUBMODULES)]


def num_threads(n_jobs: int | None = None) -> int:
    """Workers/threads the package uses for ``n_jobs``: its one meaning of ``n_jobs`` everywhere
    (joblib pools of ESS and transfer, the Rust kernels' thread pools).

    ``None``: the ``n_jobs`` of an enclosing ``joblib.parallel_config``, else the
    ``LLMSURROGATE_NUM_THREADS`` environment variable, else every core this process may use. A
    positive count is used as given, ``-1`` is every core and ``-k`` every core but ``k - 1``
    (joblib's convention); the result is capped at twice the cores (at least 4). No number the
    package computes depends on it.

    Examples
    --------
    >>> num_threads(2)
    2
    >>> num_threads() >= 1
    True
    """
    # inside the function: _workers needs numpy (through _validation), which `import llmsurrogate` does not load
    from ._workers import resolve_n_jobs

    return resolve_n_jobs(n_jobs)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES or name in _TOOLS:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'llmsurrogate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES | _TOOLS)
