"""Input validation shared by every public function.

Each helper names the offending argument and says how to fix it, and raises a subclass of
:class:`~llmsurrogate.exceptions.LLMSurrogateError`. Frames may be pandas or polars DataFrames or a
mapping of column name to sequence (what R passes through reticulate); they come back as pandas.
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .exceptions import (
    ColumnNotFoundError,
    EmptyInputError,
    InvalidArgumentError,
    NonFiniteError,
    ShapeError,
)


def _is_polars(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "polars"


def as_float_array(x: Any, name: str, *, allow_nan: bool = True, allow_empty: bool = False) -> np.ndarray:
    """A 1-d C-contiguous float64 copy-or-view of ``x`` (list, numpy, pandas or polars Series).

    NaN checks are left to the Rust kernels unless ``allow_nan=False``.
    """
    if x is None:
        raise InvalidArgumentError(f"argument `{name}` is None; pass a 1-d array of numbers")
    if _is_polars(x):
        x = x.to_numpy()
    elif hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):  # pandas Series / Index
        try:
            x = x.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"argument `{name}` must hold numbers; {err}") from err
    if isinstance(x, (str, bytes)):
        raise InvalidArgumentError(f"argument `{name}` must be an array of numbers, not a string")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InvalidArgumentError(f"argument `{name}` must hold numbers only; {err}") from err
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ShapeError(f"argument `{name}` must be 1-dimensional; got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise EmptyInputError(f"argument `{name}` is empty; pass at least one value")
    if not allow_nan:
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise NonFiniteError(
                f"argument `{name}` has a non-finite value ({arr[bad[0]]}) at position {bad[0]}; "
                "drop or impute missing values first"
            )
    return np.ascontiguousarray(arr)


def as_levels(tau: Any, name: str = "tau") -> tuple[np.ndarray, bool]:
    """Probability levels as a float64 array plus whether the caller passed a scalar."""
    scalar = isinstance(tau, numbers.Real) and not isinstance(tau, bool)
    if isinstance(tau, bool):
        raise InvalidArgumentError(f"argument `{name}` must be a number in [0, 1], not a bool")
    arr = as_float_array(tau, name)
    bad = np.flatnonzero(~((arr >= 0) & (arr <= 1)))
    if bad.size:
        raise InvalidArgumentError(f"argument `{name}` must lie in [0, 1]; got {arr[bad[0]]} at position {bad[0]}")
    return arr, scalar


def check_probability(value: Any, name: str, *, low: float = 0.0, high: float = 1.0,
                      low_open: bool = True, high_open: bool = True) -> float:
    """A scalar in the interval (low, high) with the requested open/closed ends."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"argument `{name}` must be a number; got {type(value).__name__}")
    v = float(value)
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (np.isfinite(v) and ok_low and ok_high):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise InvalidArgumentError(f"argument `{name}` must lie in {interval}; got {value}")
    return v


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """An integer (not a bool), optionally at least ``minimum``. Whole floats such as R's 2 pass."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"argument `{name}` must be an integer, not a bool")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        out = int(value)
    else:
        raise InvalidArgumentError(f"argument `{name}` must be an integer; got {value!r}")
    if minimum is not None and out < minimum:
        raise InvalidArgumentError(f"argument `{name}` must be >= {minimum}; got {out}")
    return out


def check_flag(value: Any, name: str) -> bool:
    """``value`` is True or False (a numpy bool too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"argument `{name}` must be True or False; got {value!r}")
    return bool(value)


def check_n_jobs(n_jobs: Any) -> int | None:
    """``None`` (use LLMSURROGATE_NUM_THREADS or all cores), a positive count or -k (joblib style)."""
    if n_jobs is None:
        return None
    out = check_int(n_jobs, "n_jobs")
    if out == 0:
        raise InvalidArgumentError("argument `n_jobs` must not be 0; use a positive count, -1 for all cores, or None")
    return out


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of strings, with a did-you-mean hint."""
    if not isinstance(value, str) or value not in choices:
        hint = difflib.get_close_matches(str(value), list(choices), n=1)
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        raise InvalidArgumentError(f"argument `{name}` must be one of {list(choices)}; got {value!r}{extra}")
    return value


def as_frame(data: Any, name: str = "data"):
    """A pandas DataFrame from pandas, polars, or a mapping of column -> sequence."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if _is_polars(data) and hasattr(data, "columns") and hasattr(data, "get_column"):
        return pd.DataFrame({c: data.get_column(c).to_numpy() for c in data.columns})
    if isinstance(data, Mapping):
        try:
            return pd.DataFrame({str(k): v for k, v in data.items()})
        except ValueError as err:
            raise ShapeError(f"argument `{name}`: all columns must have the same length ({err})") from err
    raise InvalidArgumentError(
        f"argument `{name}` must be a pandas or polars DataFrame or a mapping of column name to values; "
        f"got {type(data).__name__}"
    )


def require_columns(frame, columns: Sequence[str], name: str = "data") -> None:
    """Every name in ``columns`` is a column of ``frame``; otherwise say which are missing and suggest."""
    available = [str(c) for c in frame.columns]
    for col in columns:
        if col not in frame.columns:
            hint = difflib.get_close_matches(str(col), available, n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            shown = available if len(available) <= 20 else available[:20] + ["..."]
            raise ColumnNotFoundError(f"column {col!r} is not in `{name}` (columns: {shown}){extra}")


def check_gamma(value: Any, name: str = "Gamma") -> float:
    """A bound Γ >= 1 on a likelihood ratio (``inf`` allowed)."""
    try:
        g = float(value)
    except (TypeError, ValueError) as err:
        raise InvalidArgumentError(f"argument `{name}` must be a number >= 1 (Inf allowed)") from err
    if not g >= 1:
        raise InvalidArgumentError(f"argument `{name}` must be >= 1 (Inf allowed); got {value}")
    return g
