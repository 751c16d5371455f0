"""Input validation shared by every public function.

Each helper names the offending argument and says how to fix it, and raises a subclass of
:class:`~llmsurrogate.exceptions.LLMSurrogateError`. Frames may be pandas or polars DataFrames or a
mapping of column name to sequence (what R passes through reticulate); they come back as pandas.

Rules every public function follows
-----------------------------------
**Pairing by label.** When a function pairs two or more inputs row by row (``y`` and ``scores``;
``values`` and ``weights``; ``data`` and ``prediction``; an error matrix's rows and columns) and more
than one of them carries pandas labels (a ``Series`` or ``DataFrame``), the rows are paired **by
label**, never silently by position (:func:`align_by_label`):

* equal indexes (same labels, same order): used as they are;
* the same labels in another order: the later inputs are reordered to the first one's order;
* different labels (a label in one but not the other), or duplicated labels that are not in the same
  order: :class:`~llmsurrogate.exceptions.InvalidArgumentError` naming both arguments, with the
  fix: ``.reset_index(drop=True)`` on both (or ``.to_numpy()``) to pair by position, or
  ``b.loc[a.index]`` to pick the matching rows.

A list, numpy array, polars Series or ``pandas.Index`` has no row labels and is paired by position.

**No lossy coercion.** Numeric inputs must hold real numbers (bool, int, float). Complex numbers,
datetime64/timedelta64 values, strings and other objects are rejected with an error naming the
argument instead of being truncated to a real part, turned into day or nanosecond counts, or parsed
from text (:func:`as_float_array`, :func:`reject_lossy`). Long doubles (``np.longdouble``) are
accepted when float64 holds them exactly and rejected when the conversion would round or overflow
one of them (computations run in float64). A masked array with masked entries is rejected (the
mask is not honoured: pass ``x.compressed()`` or ``x.filled(np.nan)``).

**Templates are filled, never evaluated.** A user-supplied ``str.format`` template (a task file's
column ``format``, ``persona_prompt``, ``recall_prompt``) may hold plain fields (``{AGE}``,
``{}``) with format specs (``{AGE:>3}``, ``{date:%Y-%m-%d}``) only: attribute and index access
(``{0.__class__}``, ``{row[0]}``), conversions (``!r``), nested fields and widths or precisions
above :data:`MAX_FORMAT_WIDTH` are refused (:func:`check_template`, :func:`fill_template`).

**Sizes checked before allocating.** An argument that sets the size of an allocation (``bins``,
``n_boot``, ``n``) is checked against the memory the process may use before any work starts
(:func:`check_allocation`); the error names the argument and the memory it would need.
"""

from __future__ import annotations

import datetime
import decimal
import difflib
import fractions
import math
import numbers
import os
import re
import string
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._positions import Located, at, located
from .exceptions import (
    ColumnNotFoundError,
    EmptyInputError,
    InvalidArgumentError,
    LLMSurrogateWarning,
    NonFiniteError,
    ResourceError,
    ShapeError,
)

# pandas (a required dependency, ~0.35 s to import) is imported inside the functions that take
# frames: this module is also imported by llmsurrogate.quantiles and llmsurrogate.num_threads,
# which work on numpy arrays and stay free of pandas.


def _is_polars(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "polars"


def _kind_problem(kind: str) -> str | None:
    """Why a numpy dtype kind cannot become float64 without loss (None: it can)."""
    if kind in "biuf":
        return None
    if kind == "c":
        return "holds complex numbers (only real numbers are accepted; pass `.real` explicitly if that is meant)"
    if kind in "mM":
        return ("holds dates or durations (datetime64/timedelta64); convert them to numbers explicitly, "
                "e.g. days since a reference date")
    if kind in "US":
        return "holds strings; convert them to numbers first (e.g. pandas.to_numeric)"
    return None if kind == "O" else "has a non-numeric dtype"


def _object_problem(arr: np.ndarray) -> str | None:
    """Why an object array cannot become float64 without loss (None: every element is a real number or missing)."""
    for v in arr.ravel():
        if isinstance(v, np.floating) and v.dtype.itemsize > 8:
            problem = _float64_problem(np.asarray([v]))
            if problem is not None:
                return problem
        if v is None or isinstance(v, (bool, np.bool_, numbers.Real, decimal.Decimal, fractions.Fraction)):
            continue
        if isinstance(v, (complex, np.complexfloating)):
            return _kind_problem("c")
        if isinstance(v, (datetime.date, datetime.timedelta, np.datetime64, np.timedelta64)):
            return _kind_problem("M")
        if isinstance(v, (str, bytes)):
            return _kind_problem("U")
        if type(v).__name__ in ("NAType", "NaTType"):
            if type(v).__name__ == "NaTType":
                return _kind_problem("M")
            continue
        return f"holds a non-numeric value of type {type(v).__name__} ({v!r:.40})"
    return None


def _float64_problem(arr: np.ndarray) -> Located | None:
    """Why a float array wider than float64 (long double) cannot become float64 without loss."""
    with np.errstate(over="ignore", invalid="ignore"):
        back = arr.astype(np.float64).astype(arr.dtype)
    lost = np.flatnonzero(~((back == arr) | np.isnan(arr)).ravel())
    if not lost.size:
        return None
    i = int(lost[0])
    return located(f"holds {arr.dtype} (long double) numbers that float64 cannot hold exactly (", at(i), ": "
                   f"{arr.ravel()[i]!r} would become {float(arr.ravel()[i])!r}); computations run in float64: "
                   "convert with `.astype(numpy.float64)` if that rounding is acceptable")


def reject_lossy(x: Any, name: str) -> None:
    """Raise if ``x`` (numpy, pandas, polars or a sequence) holds complex, datetime/timedelta,
    string or other non-numeric values that a float conversion would silently change, long doubles
    that float64 would round, or masked entries (a numpy masked array)."""
    if _is_polars(x):
        x = x.to_numpy()
    if isinstance(x, np.ma.MaskedArray) and np.ma.is_masked(x):
        raise InvalidArgumentError(
            f"argument `{name}` is a masked array with {int(np.ma.count_masked(x))} masked entries; masks are not "
            "honoured: pass `.compressed()` to drop them or `.filled(numpy.nan)` to mark them missing")
    dtype = getattr(x, "dtype", None)
    kind = getattr(dtype, "kind", None)
    if kind is None and dtype is not None:  # a pandas extension dtype without a numpy kind
        kind = "O"
    if isinstance(dtype, np.dtype) or (kind is not None and kind != "O"):
        problem = _kind_problem(kind)
        if problem is None and kind == "f" and isinstance(dtype, np.dtype) and dtype.itemsize > 8:
            problem = _float64_problem(np.asarray(x))
            if problem is not None:
                raise InvalidArgumentError(located(f"argument `{name}` ", problem))
            return
        if problem is None and kind != "O":
            return
    elif isinstance(x, (str, bytes)):
        raise InvalidArgumentError(f"argument `{name}` must be an array of numbers, not a string")
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        try:
            pd_kind = getattr(getattr(x, "dtype", None), "kind", "O")
        except Exception:  # pragma: no cover - exotic dtypes
            pd_kind = "O"
        problem = _kind_problem(pd_kind)
        if problem is None and pd_kind != "O":
            return
        if problem is None:
            problem = _object_problem(np.asarray(x.to_numpy(dtype=object)))
    else:
        if isinstance(x, np.ndarray):
            arr = x
        else:
            try:  # a list of plain numbers becomes a numeric array at once (no per-element scan)
                arr = np.asarray(x)
            except (ValueError, TypeError):
                arr = np.asarray(x, dtype=object) if not np.isscalar(x) else np.asarray(x)
        problem = _kind_problem(arr.dtype.kind)
        if problem is None and arr.dtype.kind == "O":
            problem = _object_problem(arr)
    if problem is not None:
        raise InvalidArgumentError(located(f"argument `{name}` ", problem))


def as_float_array(x: Any, name: str, *, allow_nan: bool = True, allow_empty: bool = False) -> np.ndarray:
    """A 1-d C-contiguous float64 copy-or-view of ``x`` (list, numpy, pandas or polars Series).

    Complex, datetime64/timedelta64, string and other non-numeric values are errors (no lossy
    coercion). NaN checks are left to the Rust kernels unless ``allow_nan=False``.
    """
    if x is None:
        raise InvalidArgumentError(f"argument `{name}` is None; pass a 1-d array of numbers")
    if isinstance(x, (str, bytes)):
        raise InvalidArgumentError(f"argument `{name}` must be an array of numbers, not a string")
    if isinstance(x, Mapping):
        raise InvalidArgumentError(f"argument `{name}` must be a 1-d array of numbers, not a mapping")
    if _is_polars(x):
        x = x.to_numpy()
    if isinstance(x, (list, tuple)):
        try:  # once, here: a list of plain numbers becomes a numeric array without a per-element scan
            x = np.asarray(x)
        except ValueError as err:
            if "inhomogeneous" in str(err) or "sequence" in str(err):
                raise ShapeError(f"argument `{name}` must be 1-dimensional; got ragged nested sequences") from err
            x = np.asarray(x, dtype=object)
    reject_lossy(x, name)
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):  # pandas Series / Index
        try:
            x = x.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"argument `{name}` must hold numbers; {err}") from err
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as err:
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
            raise NonFiniteError(located(f"argument `{name}` has a non-finite value ({arr[bad[0]]}) at ", at(bad[0]),
                                         "; drop or impute missing values first"))
    return np.ascontiguousarray(arr)


def _row_labels(x: Any):
    """The row labels of a pandas Series or DataFrame (None for anything else)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(x, (pd.Series, pd.DataFrame)):
        return x.index
    return None


def align_by_label(*named: tuple[str, Any]) -> list[Any]:
    """Inputs paired row by row, aligned by their pandas labels (the rule in the module docstring).

    ``named`` holds ``(argument name, value)`` pairs; the values come back in the same order. Inputs
    without row labels (lists, numpy arrays, polars, ``pandas.Index``) pass unchanged and are paired
    by position. Of the labelled inputs, the first sets the order: an input with equal labels passes
    unchanged, one with the same labels in another order is reordered to match, and one with other
    labels raises :class:`InvalidArgumentError` naming both arguments. Inputs of different lengths
    pass unchanged (the caller's length check names them).
    """
    out = [value for _, value in named]
    ref_name, ref = None, None
    for i, (name, value) in enumerate(named):
        idx = _row_labels(value)
        if idx is None:
            continue
        if ref is None:
            ref_name, ref = name, idx
            continue
        if len(idx) != len(ref) or idx.equals(ref):
            continue
        same_set = not idx.has_duplicates and not ref.has_duplicates and bool(idx.isin(ref).all()) \
            and bool(ref.isin(idx).all())
        if same_set:
            out[i] = value.loc[ref] if value.ndim == 1 else value.loc[ref, :]
            continue
        extra = idx[~idx.isin(ref)]
        missing = ref[~ref.isin(idx)]
        if len(extra) or len(missing):
            what = (f"label {extra.tolist()[0]!r} is in `{name}` but not in `{ref_name}`" if len(extra)
                    else f"label {missing.tolist()[0]!r} is in `{ref_name}` but not in `{name}`")
        else:
            what = "their indexes hold duplicated labels in different orders"
        raise InvalidArgumentError(
            f"arguments `{ref_name}` and `{name}` are pandas objects whose row labels disagree ({what}); rows are "
            f"paired by label, never by position. To pair by position, pass `.reset_index(drop=True)` (or "
            f"`.to_numpy()`) of both; to pair the matching rows, pass `{name}.loc[{ref_name}.index]`")
    return out


def memory_limit() -> int | None:
    """Bytes this process may allocate at most: physical memory, or the address-space limit if lower."""
    limit = None
    try:
        limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - platforms without sysconf
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            limit = soft if limit is None else min(limit, soft)
    except (ImportError, ValueError, OSError):  # pragma: no cover - Windows
        pass
    return limit


def _bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def check_allocation(nbytes: float, name: str, value: Any, what: str) -> None:
    """Raise before allocating ``nbytes`` (set by argument ``name`` = ``value``) when it exceeds
    :func:`memory_limit`."""
    limit = memory_limit()
    if limit is not None and nbytes > limit:
        raise ResourceError(
            f"argument `{name}` = {value} would need {_bytes(nbytes)} of memory for {what}, more than this process "
            f"may use ({_bytes(limit)}); choose a smaller `{name}`")


def check_real(value: Any, name: str, *, low: float = -np.inf, high: float = np.inf,
               low_open: bool = False, high_open: bool = False, allow_inf: bool = False) -> float:
    """A real scalar (not a bool, not NaN) in the given interval; finite unless ``allow_inf``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"argument `{name}` must be a number; got {type(value).__name__}")
    v = float(value)
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if math.isnan(v) or (not allow_inf and math.isinf(v)) or not (ok_low and ok_high):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        fin = "a number" if allow_inf else "a finite number"
        raise InvalidArgumentError(f"argument `{name}` must be {fin} in {interval}; got {value!r}")
    return v


def as_levels(tau: Any, name: str = "tau") -> tuple[np.ndarray, bool]:
    """Probability levels as a float64 array plus whether the caller passed a scalar."""
    scalar = isinstance(tau, numbers.Real) and not isinstance(tau, bool)
    if isinstance(tau, bool):
        raise InvalidArgumentError(f"argument `{name}` must be a number in [0, 1], not a bool")
    arr = as_float_array(tau, name)
    bad = np.flatnonzero(~((arr >= 0) & (arr <= 1)))
    if bad.size:
        raise InvalidArgumentError(located(f"argument `{name}` must lie in [0, 1]; got {arr[bad[0]]} at ", at(bad[0])))
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


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (not a bool), optionally in [``minimum``, ``maximum``]. Whole floats such as R's 2 pass."""
    if isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"argument `{name}` must be an integer, not a bool")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        out = int(value)
    else:
        raise InvalidArgumentError(f"argument `{name}` must be an integer; got {value!r}")
    if minimum is not None and out < minimum:
        raise InvalidArgumentError(f"argument `{name}` must be >= {minimum}; got {out}")
    if maximum is not None and out > maximum:
        raise InvalidArgumentError(f"argument `{name}` must be <= {maximum}; got {out}")
    return out


def check_flag(value: Any, name: str) -> bool:
    """``value`` is True or False (a numpy bool too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"argument `{name}` must be True or False; got {value!r}")
    return bool(value)


def check_n_jobs(n_jobs: Any) -> int | None:
    """``n_jobs`` checked, not resolved: ``None``, a positive count or -k (joblib style; never 0).

    What each value means (``None``: an enclosing ``joblib.parallel_config``'s ``n_jobs``, else
    ``LLMSURROGATE_NUM_THREADS``, else every core) is decided in one place,
    :func:`llmsurrogate._workers.resolve_n_jobs`."""
    if n_jobs is None:
        return None
    out = check_int(n_jobs, "n_jobs", minimum=-(2**31), maximum=2**31 - 1)
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


def _polars_column(s: Any):
    """A polars Series as a numpy array, or, for integer and boolean columns with nulls, as a pandas
    nullable array (``Int64``, ``boolean``: nulls stay missing values, integers stay exact; numpy
    would give float64 with NaN and an object array of True/False/None)."""
    import pandas as pd

    if s.null_count() and (s.dtype.is_integer() or str(s.dtype) == "Boolean"):
        missing = s.is_null().to_numpy()
        if s.dtype.is_integer():
            return pd.arrays.IntegerArray(s.fill_null(0).to_numpy(), missing)
        return pd.arrays.BooleanArray(s.fill_null(False).to_numpy(), missing)
    return s.to_numpy()


def as_frame(data: Any, name: str = "data"):
    """A pandas DataFrame from pandas, polars, or a mapping of column -> sequence."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if _is_polars(data) and hasattr(data, "columns") and hasattr(data, "get_column"):
        return pd.DataFrame({c: _polars_column(data.get_column(c)) for c in data.columns})
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
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"argument `{name}` must be a number >= 1 (Inf allowed); got {value!r}")
    g = float(value)
    if not g >= 1:
        raise InvalidArgumentError(f"argument `{name}` must be >= 1 (Inf allowed); got {value}")
    return g


def note_dropped(notes: list[str], n_dropped: int, detail: str = "", *, stacklevel: int = 3) -> None:
    """Count rows dropped for missing values: a note on the result and a warning (nothing when
    none were dropped). ``detail`` follows "missing values", e.g. ``" (NaN/None)"``."""
    if n_dropped:
        msg = f"{n_dropped} row(s) dropped for missing values{detail} in the columns used"
        notes.append(msg)
        warnings.warn(msg, LLMSurrogateWarning, stacklevel=stacklevel + 1)


#: The widest field (and the longest precision) a user-supplied template's format spec may ask
#: for: ``"{AGE:>3000000000}"`` would allocate gigabytes.
MAX_FORMAT_WIDTH = 10_000

# a standard format spec: [[fill]align][sign][z][#][0][width][grouping][.precision][grouping][type]
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d+))?[,_]?[a-zA-Z%]?", re.DOTALL)


def check_template(template: Any, name: str, fields: Sequence[str] | None = None) -> list[str]:
    """The field names of the user-supplied ``str.format`` template ``template`` (argument
    ``name``), in order, after checking that it holds plain fields with format specs only (the rule
    in the module docstring); ``fields``: the names it may use (None: any).

    Examples
    --------
    >>> check_template("You are {AGE:>3} years old, {SEX}.", "template")
    ['AGE', 'SEX']
    >>> check_template("{0.__class__.__mro__}", "format")
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: argument `format` uses '{0.__class__.__mro__}': a template takes plain fields such as {AGE} or {AGE:>3}, not attribute or index access
    """
    if not isinstance(template, str):
        raise InvalidArgumentError(f"argument `{name}` must be a str.format template (a string); got "
                                   f"{type(template).__name__}")
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise InvalidArgumentError(f"argument `{name}` is not a valid template ({err}); write a literal brace as "
                                   "{{ or }}") from None
    names = []
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if "." in field or "[" in field:
            raise InvalidArgumentError(f"argument `{name}` uses {shown!r}: a template takes plain fields such as "
                                       "{AGE} or {AGE:>3}, not attribute or index access")
        if conversion:
            raise InvalidArgumentError(f"argument `{name}` uses {shown!r}: conversions (!r, !s, !a) are not "
                                       "allowed in a template; write the field without them")
        if "{" in spec:
            raise InvalidArgumentError(f"argument `{name}` uses {shown!r}: a format spec cannot hold another field")
        m = _SPEC.fullmatch(spec)
        if m and max(int(m["width"] or 0), int(m["precision"] or 0)) > MAX_FORMAT_WIDTH:
            raise InvalidArgumentError(f"argument `{name}` uses {shown!r}: a width or precision above "
                                       f"{MAX_FORMAT_WIDTH:,} is not allowed")
        if fields is not None and field not in fields:
            raise InvalidArgumentError(f"argument `{name}` uses the unknown field {shown!r}; the fields are "
                                       + ", ".join(f"{{{f}}}" for f in fields))
        names.append(field)
    return names


def fill_template(template: str, name: str, *args: Any, **values: Any) -> str:
    """``template.format(*args, **values)`` after :func:`check_template`; a field without a value
    or a format spec that does not suit its value is an :class:`InvalidArgumentError` naming
    ``name``."""
    check_template(template, name)
    try:
        return template.format(*args, **values)
    except KeyError as err:
        raise InvalidArgumentError(f"argument `{name}` uses the field {{{err.args[0]}}}, which has no value; the "
                                   f"fields are {', '.join('{' + k + '}' for k in values) or 'positional'}") from None
    except IndexError:
        raise InvalidArgumentError(f"argument `{name}` uses more positional fields ({{}} or {{0}}, {{1}}, ...) than "
                                   f"the {len(args)} value(s) given") from None
    except (ValueError, TypeError) as err:
        raise InvalidArgumentError(f"argument `{name}` cannot be filled: {err}") from None


def named_columns(probs) -> list | None:
    """The option names of a prediction's columns: a DataFrame's column labels, None for an array
    or a DataFrame whose columns are the default ``RangeIndex`` 0..K-1 (``pd.DataFrame(array)``:
    positions, not names)."""
    import pandas as pd

    if not isinstance(probs, pd.DataFrame):
        return None
    cols = probs.columns
    if isinstance(cols, pd.RangeIndex) and cols.start == 0 and cols.step == 1:
        return None
    return list(cols)


def name_order(names, options) -> tuple[bool, list | None, list, list]:
    """``(match, order, lost, extra)``: whether columns named ``names`` hold exactly the ``options``;
    if so ``order``, the permutation putting them in the order of ``options`` (None: already in it);
    else the options without a column (``lost``) and the columns that are no option (``extra``), both
    empty when a label repeats. The one matching of column names to options (``match_options``; the
    multiclass recalibrators' ``transform``), each caller wording its own error.

    Examples
    --------
    >>> from llmsurrogate._validation import name_order
    >>> name_order(["b", "a"], ["a", "b"])
    (True, [1, 0], [], [])
    >>> name_order(["a", "c"], ["a", "b"])
    (False, None, ['b'], ['c'])
    """
    import pandas as pd

    have, want = pd.Index(list(names)), pd.Index(list(options))
    if len(have) == len(want) and not have.has_duplicates and not want.has_duplicates:
        order = have.get_indexer(want)
        if (order >= 0).all():
            return True, (None if (order == np.arange(len(order))).all() else order.tolist()), [], []
    return False, None, [o for o in options if o not in have], [c for c in names if c not in want]


def match_options(names: list | None, options, what: str = "the columns of `probs`", arg: str = "probs"):
    """The column order that puts named prediction columns ``names`` in the order of ``options``
    (None: keep the order). Named columns and ``options=`` must name the same options, in any
    order; a mismatch is an error naming both, never a silent relabelling.

    Examples
    --------
    >>> from llmsurrogate._validation import match_options
    >>> match_options(["never", "often", "rarely"], ["never", "rarely", "often"])
    [0, 2, 1]
    >>> match_options(None, ["a", "b"]) is None  # unnamed columns: `options` labels them in order
    True
    """
    if options is None or names is None:
        return None
    options = list(options)
    match, order, extra, spare = name_order(names, options)
    if match:
        return order
    why = (f"{extra[0]!r} is in `options` but not a column of `{arg}`" if extra else
           f"column {spare[0]!r} of `{arg}` is not in `options`" if spare else "the labels repeat")
    raise InvalidArgumentError(
        f"arguments `options` ({options[:20]}) and `{arg}` ({what}: {list(names)[:20]}) name different answer "
        f"options: {why}. Columns are matched to `options` by name, never relabelled by position: name the "
        f"columns by the options (or pass `{arg}.to_numpy()` to label its columns by `options` in order)")


def level_key(value) -> tuple:
    """The identity of a level across dtypes (fe's level matching, the R bridge's level labels):
    ``(family, value)``, equal for equal values of one family: ``True`` and ``1`` and ``1.0`` give
    ``("number", 1)``; ``"1"`` gives ``("text", "1")``.

    Examples
    --------
    >>> level_key(True), level_key(np.int64(1)), level_key(1.0), level_key(0.5), level_key("1")
    (('number', 1), ('number', 1), ('number', 1), ('number', 0.5), ('text', '1'))
    """
    import pandas as pd

    if isinstance(value, (bool, np.bool_)):
        return ("number", int(bool(value)))
    if isinstance(value, (numbers.Integral, np.integer)):
        return ("number", int(value))
    if isinstance(value, (numbers.Real, np.floating)):
        f = float(value)
        return ("number", int(f)) if f.is_integer() else ("number", f)
    if isinstance(value, str):
        return ("text", value)
    if isinstance(value, (pd.Timestamp, np.datetime64, datetime.datetime, datetime.date)):
        return ("date", pd.Timestamp(value))
    if isinstance(value, (pd.Timedelta, np.timedelta64, datetime.timedelta)):
        return ("duration", pd.Timedelta(value))
    return (type(value).__name__, value)


def levels_nested_in(codes: np.ndarray, clusters: np.ndarray) -> bool:
    """Whether every level of ``codes`` (a fixed effect's integer codes) lies inside one cluster of
    ``clusters`` (integer codes, the same rows): fixest then does not count that fixed effect's
    levels in the small-sample factor of clustered standard errors (``fe``, ``ppi.feols``).

    >>> import numpy as np
    >>> levels_nested_in(np.array([0, 0, 1, 1]), np.array([5, 5, 6, 6]))
    True
    >>> levels_nested_in(np.array([0, 0, 1, 1]), np.array([5, 6, 6, 6]))
    False
    """
    order = np.lexsort((clusters, codes))
    f, c = codes[order], clusters[order]
    same_level = f[1:] == f[:-1]
    return not np.any(same_level & (c[1:] != c[:-1]))


def fixest_df_k(k: int, levels: Sequence[int], nested: Sequence[bool] = ()) -> int:
    """fixest's degrees of freedom ``df_k`` of a fixed-effects regression (``fe``, ``ppi.feols``):
    the ``k`` slopes plus the levels of each fixed effect, less one per fixed effect after the
    first (one level of each further effect is redundant with the first); with ``nested`` (one flag
    per fixed effect, for cluster-robust CRV1) a fixed effect nested in the clusters does not
    count: its levels less one are taken off.

    This is fixest's ``nparams`` (the coefficients plus ``sum(fixef_sizes) - (#fixed effects -
    1)``) and, for clustered standard errors, its default ``ssc(fixef.K = "nested")``, which leaves
    out the fixed effects nested in the clusters (pyfixest ``k_fixef="nonnested"``): fixest's
    vignette *On standard-errors*; docs/methods/fe.md. ``levels`` are the levels
    present in the estimation sample (fixest's ``fixef_sizes``): with codes that skip numbers
    (one sample's rows of a numbering shared with another sample) count the distinct codes, not
    the largest code plus one.

    >>> fixest_df_k(2, [50, 10])  # y ~ x1 + x2 | firm + year: 2 + 50 + 10 - 1
    61
    >>> fixest_df_k(2, [50, 10], nested=[True, False])  # clustered by firm: 61 - (50 - 1)
    12
    >>> fixest_df_k(3, [])
    3
    """
    if nested and len(nested) != len(levels):
        raise ValueError(f"nested has {len(nested)} flags for {len(levels)} fixed effects")
    df_k = k + sum(levels) - max(len(levels) - 1, 0)
    return df_k - sum(lev - 1 for lev, inside in zip(levels, nested) if inside)
