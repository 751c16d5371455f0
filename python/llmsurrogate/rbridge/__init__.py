"""Conversion between llmsurrogate's Python objects and R, and the R package's adapters.

Two routes, for two directions of use:

* **R calling Python (reticulate, the R package in ``r-bridge/``).** Everything crosses as plain
  Python values (:mod:`~llmsurrogate.rbridge._convert`: :func:`to_r_columns`, :func:`to_plain`,
  :func:`from_r`, :func:`r_message`). The R package calls one function, :func:`r_call`, with an
  R-facing name ``"<module>.<function>"``; it runs
  ``llmsurrogate.rbridge.<module>.R_FUNCTIONS["<function>"]`` (:mod:`~llmsurrogate.rbridge._call`).
  One adapter module per module the R package calls into -- :mod:`~llmsurrogate.rbridge.transfer`,
  :mod:`~llmsurrogate.rbridge.ess`, :mod:`~llmsurrogate.rbridge.risk`,
  :mod:`~llmsurrogate.rbridge.fe`, :mod:`~llmsurrogate.rbridge.lookahead`,
  :mod:`~llmsurrogate.rbridge.ppi`, and ``quantiles``,
  ``datasets``, ``demo``, ``testing`` -- and one convention in each: ``R_FUNCTIONS`` maps a Python
  function's name to the public function itself where R's words and values cross unchanged, or to
  the adapter ``r_<R function>`` (``r_feols``, ``r_lookahead_bootstrap``) that takes R's words and
  values; every output goes back through :func:`to_plain`.
* **Python calling R (rpy2, for tests and users).** :func:`pandas_to_r` and :func:`r_to_pandas`
  convert data frames with rpy2's conversion-context API (rpy2 >= 3.5.17, < 3.6 while R is 4.2);
  :func:`r_converter` gives the converter for ``with r_converter().context(): ...`` blocks
  (:mod:`~llmsurrogate.rbridge._rpy2`, loaded with pandas when one of them is first used; rpy2
  when it is first called).

The adapters (``r_feols``, ``r_etable``, ``r_lookahead_test``, ``r_lookahead_bootstrap``,
``r_lap``) stay importable from here; their modules, which import their capability, load on first
use, so that ``import llmsurrogate.rbridge`` (R's first call) loads no capability it does not call,
nor numpy or pandas (``upper_quantile()`` from R needs neither pandas nor a capability).

Importing the bridge also makes torch, when it is first imported in an R process, use its own BLAS
rather than R's (:mod:`~llmsurrogate.rbridge._blas`; R's reference BLAS made torch 10 times slower).
"""

from __future__ import annotations

import importlib
from typing import Any

from . import _blas
from ._call import ADAPTERS, call, r_call, r_functions, shutdown_workers
from ._convert import _r_matrix, from_r, r_message, to_plain, to_r_columns

__all__ = ["to_r_columns", "to_plain", "from_r", "call", "r_call", "r_message", "pandas_to_r", "r_to_pandas",
           "r_converter"]

# torch, when R first imports it, binds to its own BLAS (MKL), not to R's (see _blas)
_blas.install()

# adapter or rpy2 helper -> its module (loaded on first use)
_ADAPTER_NAMES = {"r_feols": "fe", "r_etable": "fe", "r_lookahead_test": "lookahead",
                  "r_lookahead_bootstrap": "lookahead", "r_lap": "lookahead", "pandas_to_r": "_rpy2",
                  "r_to_pandas": "_rpy2", "r_converter": "_rpy2", "rpy2_robjects": "_rpy2"}


def __getattr__(name: str) -> Any:
    if name in _ADAPTER_NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_ADAPTER_NAMES[name]}"), name)
    if name == "R_CALLABLE":  # the registry's earlier shape: module -> names
        out: dict[str, set[str]] = {}
        for key in r_functions():
            module, _, fn = key.partition(".")
            out.setdefault(module, set()).add(fn)
        return out
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
