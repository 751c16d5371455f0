"""Conversion between llmsurrogate's Python objects and R.

Two routes, for two directions of use:

* **R calling Python (reticulate, the R package in ``r-bridge/``).** Debian's reticulate 1.28 does
  not convert numpy-2 arrays or pandas-on-numpy-2 frames, so everything crosses as plain Python
  values: :func:`to_r_columns` turns a frame into ``{column: list}`` (``None`` for missing), and
  :func:`call` runs a public function by name and returns only plain values (lists, dicts, floats,
  strings).
* **Python calling R (rpy2, for tests and users).** :func:`pandas_to_r` and :func:`r_to_pandas`
  convert data frames with rpy2's conversion-context API (rpy2 >= 3.5.17, < 3.6 while R is 4.2);
  :func:`r_converter` gives the converter for ``with r_converter().context(): ...`` blocks.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._optional import require
from ._validation import as_frame
from .exceptions import InvalidArgumentError
from .results import Result

__all__ = ["to_r_columns", "to_plain", "call", "pandas_to_r", "r_to_pandas", "r_converter"]

# Functions R may call through `call()`: module -> names. Keeps the bridge's surface explicit.
R_CALLABLE = {
    "quantiles": {"upper_quantile", "lower_quantile", "quantile_interval", "weighted_upper_quantile",
                  "weighted_lower_quantile", "weighted_quantile_interval"},
    "datasets": {"load_certainty_equivalents", "certainty_equivalent_domains", "load_transfer_errors",
                 "transfer_error_models", "load_acs_income_rows", "load_acs_golden_prompt"},
    "demo": {"run_demo"},
    "transfer": {"forecast_interval", "weighted_forecast_interval", "worst_case_interval", "qte_interval",
                 "ete_interval", "check_worstcase_dominance", "check_everywhere_dominance", "critical_gamma",
                 "coverage_bound", "everywhere_dominance_box", "error_table", "within_domain_cv"},
    "ess": {"equivalent_sample_size", "error_curve", "cate_ess", "permutation"},
    "risk": {"score_table", "evaluate_table"},
}


def _plain_scalar(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(float(v)) else float(v)
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer, int)):
        # reticulate 1.28 turns ints outside R's 32-bit integer range into 0 or NA without an
        # error: send those as doubles (exact up to 2**53).
        return int(v) if -(2**31) < int(v) < 2**31 else float(v)
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
        if isinstance(v, pd.Timestamp):
            return v.isoformat()
    except ImportError:  # pragma: no cover - pandas is a hard dependency
        pass
    return v


def to_r_columns(data: Any) -> dict[str, list]:
    """A frame (pandas, polars, mapping) as ``{column: list}`` with ``None`` for missing values.

    Categoricals become their labels. This is what the R package turns into a ``data.frame``.

    >>> import pandas as pd
    >>> to_r_columns(pd.DataFrame({"a": [1.5, float("nan")], "b": ["x", None]}))
    {'a': [1.5, None], 'b': ['x', None]}
    """
    frame = as_frame(data)
    out = {}
    for col in frame.columns:
        series = frame[col]
        if hasattr(series, "cat"):
            series = series.astype(object)
        out[str(col)] = [_plain_scalar(v) for v in series.tolist()]
    return out


def to_plain(obj: Any) -> Any:
    """Any llmsurrogate output as plain Python values that reticulate converts on every version.

    Frames become ``{"__frame__": {column: list}}``; results become ``{"__result__": kind, "tidy":
    frame, "summary": text, "json": text}``; arrays become lists.
    """
    import pandas as pd

    if isinstance(obj, Result):
        return {"__result__": obj.kind, "tidy": to_plain(obj.tidy()), "summary": obj.summary().as_text(),
                "json": obj.to_json(indent=None)}
    if isinstance(obj, pd.DataFrame):
        return {"__frame__": to_r_columns(obj.reset_index() if obj.index.name else obj)}
    if isinstance(obj, pd.Series):
        return {"__frame__": to_r_columns(obj.reset_index())}
    if isinstance(obj, np.ndarray):
        return [to_plain(v) for v in obj.tolist()]
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    v = _plain_scalar(obj)
    if isinstance(v, float) and math.isinf(v):
        return v
    return v


def call(function: str, *args: Any, **kwargs: Any) -> Any:
    """Run ``llmsurrogate.<module>.<name>`` (``function="module.name"``) and return :func:`to_plain` output.

    >>> call("quantiles.upper_quantile", [1.0, 2.0, 3.0], [0.5])
    [2.0]
    """
    module, _, name = function.partition(".")
    if name not in R_CALLABLE.get(module, ()):
        allowed = sorted(f"{m}.{n}" for m, names in R_CALLABLE.items() for n in names)
        raise InvalidArgumentError(f"argument `function`: {function!r} is not callable from R; choose from {allowed}")
    fn = getattr(importlib.import_module(f"llmsurrogate.{module}"), name)
    return to_plain(fn(*args, **kwargs))


def shutdown_workers() -> None:
    """Stop joblib's reusable worker processes, if any were started. The R package calls this when
    R exits: reticulate does not run Python's exit handlers, and loky would otherwise warn about
    leaked semaphores and temporary folders."""
    import sys

    if "joblib" not in sys.modules:
        return
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is None:
        return
    terminate = getattr(executor, "terminate", None)  # joblib's memmapping executor also removes its folders
    if terminate is not None:
        terminate(kill_workers=True)
    else:  # pragma: no cover - plain loky executors
        executor.shutdown(wait=True, kill_workers=True)


def r_converter():
    """rpy2's default converter plus the pandas converter (use as ``with r_converter().context():``)."""
    ro = require("rpy2.robjects", purpose="converting data frames to and from R")
    pandas2ri = require("rpy2.robjects.pandas2ri", purpose="converting data frames to and from R")
    return ro.default_converter + pandas2ri.converter


def pandas_to_r(data: Any):
    """A pandas (or polars, or mapping) frame as an R ``data.frame`` (an rpy2 object)."""
    ro = require("rpy2.robjects")
    frame = as_frame(data)
    with r_converter().context():
        return ro.conversion.get_conversion().py2rpy(frame)


def r_to_pandas(r_frame: Any):
    """An R ``data.frame`` (rpy2 object) as a pandas DataFrame."""
    ro = require("rpy2.robjects")
    with r_converter().context():
        out = ro.conversion.get_conversion().rpy2py(r_frame)
    import pandas as pd

    if not isinstance(out, pd.DataFrame):
        raise InvalidArgumentError(f"argument `r_frame` is not an R data.frame (converted to {type(out).__name__})")
    # rpy2 3.5 leaves R's NA_character_ as its own sentinel object, which pandas does not treat as
    # missing: make it a real missing value.
    na_types = tuple(type(x) for x in (ro.NA_Character, ro.NA_Logical, ro.NA_Integer, ro.NA_Real))
    for col in out.columns:
        if out[col].dtype == object:
            out[col] = out[col].map(lambda x: None if isinstance(x, na_types) else x)
    return out
