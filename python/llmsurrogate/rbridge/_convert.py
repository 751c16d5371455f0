"""Generic conversion between the R package's values and Python's (the reticulate route).

Debian's reticulate 1.28 does not convert numpy-2 arrays or pandas-on-numpy-2 frames, so everything
crosses as plain Python values: :func:`to_r_columns` turns a frame into ``{column: list}``
(``None`` for missing) and :func:`to_plain` any output into lists, dicts, floats and strings. In
the other direction reticulate would send R's missing values as values (an integer ``NA`` as
-2147483648, a logical ``NA`` as ``True``, a character ``NA`` as ``"NA"``), so the R package sends
data frames and vectors as typed columns with the positions of their missing values, which
:func:`from_r` turns into lists with ``None`` there. :func:`r_message` puts a Python message in R's
terms. :func:`_r_frame` and :func:`_r_names` are the adapters' helpers for R's columns and
character vectors.

numpy and pandas are not imported here: R's first call imports only what the function it calls
needs (``upper_quantile()`` loads no pandas). A value can be a numpy or pandas object only once
that library was imported, so the checks look for them in ``sys.modules``.
"""

from __future__ import annotations

import datetime
import math
import re
import sys
from collections.abc import Mapping
from typing import Any

from .._positions import one_based
from ..exceptions import InvalidArgumentError

__all__ = ["to_r_columns", "to_plain", "from_r", "r_message"]


def _plain_scalar(v: Any) -> Any:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) else float(v)
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return _plain_int(v)
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(v, np.floating):
            return None if math.isnan(float(v)) else float(v)
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, np.integer):
            return _plain_int(int(v))
    pd = sys.modules.get("pandas")
    if pd is not None:
        if v is pd.NA or v is pd.NaT:
            return None
        if isinstance(v, pd.Timestamp):
            return v.isoformat()
    return v


def _plain_int(v: int) -> int | float:
    # reticulate 1.28 turns ints outside R's 32-bit integer range into 0 or NA without an error:
    # send those as doubles (exact up to 2**53).
    return v if -(2**31) < v < 2**31 else float(v)


def to_r_columns(data: Any) -> dict[str, list]:
    """A frame (pandas, polars, mapping) as ``{column: list}`` with ``None`` for missing values.

    Categoricals become their labels. This is what the R package turns into a ``data.frame``.

    >>> import pandas as pd
    >>> to_r_columns(pd.DataFrame({"a": [1.5, float("nan")], "b": ["x", None]}))
    {'a': [1.5, None], 'b': ['x', None]}
    """
    from .._validation import as_frame  # numpy and pandas: only when a frame is converted

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
    if obj is None or isinstance(obj, (str, float, int)):
        return _plain_scalar(obj)
    results = sys.modules.get("llmsurrogate.results")
    if results is not None and isinstance(obj, results.Result):
        return {"__result__": obj.kind, "tidy": to_plain(obj.tidy()), "summary": _r_summary_text(obj.summary()),
                "json": obj.to_json(indent=None)}
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return {"__frame__": to_r_columns(obj.reset_index() if obj.index.name else obj)}
    if pd is not None and isinstance(obj, pd.Series):
        return {"__frame__": to_r_columns(obj.reset_index())}
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return [to_plain(v) for v in obj.tolist()]
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    v = _plain_scalar(obj)
    if isinstance(v, float) and math.isinf(v):
        return v
    return v


class _NAFrame:
    """A table of a summary printed with R's ``NA`` for its missing values (pandas prints ``NaN``),
    as the same table reads in R (``as.data.frame()`` of the result)."""

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    def to_string(self, **kwargs: Any) -> str:
        return self.frame.to_string(na_rep="NA", **kwargs)


def _r_summary_text(summary: Any) -> str:
    """A result's printed summary for R: its tables' missing values read ``NA``.

    >>> import pandas as pd
    >>> from llmsurrogate.results import Summary
    >>> print(_r_summary_text(Summary("T", tables=[("", pd.DataFrame({"reference": [float("nan")], "b": [1.5]}))])))
    T
    =
    <BLANKLINE>
     reference   b
            NA 1.5
    """
    tables = summary.tables
    try:
        summary.tables = [(caption, _NAFrame(frame)) for caption, frame in tables]
        return summary.as_text()
    finally:
        summary.tables = tables


_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _listed(v: Any) -> list:
    """reticulate sends an R vector of length 1 as a scalar and one of length 0 as ``[]``."""
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _date(v: Any) -> datetime.date:
    return _EPOCH_DATE + datetime.timedelta(days=math.floor(v))


def _datetime(v: Any) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(seconds=v)


_KINDS = {"double": float, "integer": int, "logical": bool, "character": str, "date": _date,
          "datetime": _datetime, "int64": int}


def _r_column(spec: Mapping, what: str = "column") -> list:
    """One typed R column (``{"kind", "values", "na"}``, ``na`` the 0-based positions of R's
    missing values) as a list with ``None`` for missing."""
    kind = spec.get("kind")
    convert = _KINDS.get(kind)
    if convert is None:
        raise InvalidArgumentError(f"{what}: unknown column kind {kind!r} from R")
    values = _listed(spec.get("values"))
    na = _listed(spec.get("na"))
    if na:
        values = list(values)
        for i in na:
            values[int(i)] = None
    if kind in ("double", "integer", "logical", "character"):
        return values  # reticulate already made them floats, ints, bools and strs
    try:
        return [None if v is None else convert(v) for v in values]
    except (OverflowError, ValueError) as err:
        raise InvalidArgumentError(f"{what}: a {kind} value is outside Python's range ({err})") from err


#: What reticulate makes of R's scalars and raw vectors: passed on as they are.
_PLAIN = (str, int, float, bool, type(None), bytes, bytearray)


def from_r(value: Any) -> Any:
    """An argument from the R package as Python values: a data frame (``{"__rframe__": ...}``) as
    ``{column: list}`` and a vector (``{"__rvector__": ...}``) as a list, ``None`` where R has a
    missing value; anything else unchanged.

    >>> from_r({"__rframe__": {"names": ["a", "d"], "columns": [
    ...     {"kind": "integer", "values": [1, -2147483648], "na": 1},
    ...     {"kind": "date", "values": [0.0, 19000.0], "na": []}]}})
    {'a': [1, None], 'd': [datetime.date(1970, 1, 1), datetime.date(2022, 1, 8)]}
    """
    if isinstance(value, _PLAIN):  # most arguments: no Mapping (abstract class) check
        return value
    if isinstance(value, Mapping):
        if "__rframe__" in value:
            spec = value["__rframe__"]
            names = [str(n) for n in _listed(spec.get("names"))]
            columns = _listed(spec.get("columns"))
            return {name: _r_column(col, f"column {name!r}") for name, col in zip(names, columns)}
        if "__rvector__" in value:
            return _r_column(value["__rvector__"], "vector")
        if "__rmatrix__" in value:
            return _r_matrix(value["__rmatrix__"])
    return value


# The last few complete matrices from R, keyed by their bytes: repeated calls on the same matrix
# (several levels, sides or functions) reuse its table and the sorted errors the Rust core keeps
# on it, as a Python user reusing an ErrorTable does. A changed matrix has other bytes.
_MATRIX_CACHE: "dict[tuple[int, bytes], Any]" = {}
_MATRIX_CACHE_SIZE = 8


def _r_matrix(spec: Mapping) -> Any:
    """An R error matrix sent as its numbers in column-major order (``{"bytes"}``: R's
    ``writeBin()`` of the doubles, little-endian, or ``{"values"}``: a list) with its number of rows
    (``"nrow"``; R's ``NA`` is a NaN), as transferUQ reads it: a complete square matrix becomes an
    :class:`~llmsurrogate.transfer.ErrorTable` with the domains 1..n (R's positions), without a
    long frame; one with missing off-diagonal cells becomes the long ``{"train", "test", "error"}``
    columns (1-based domains, ``None`` for a missing error) that the pooled reading of transferUQ's
    forms takes, with its warning."""
    import numpy as np

    nrow = int(spec.get("nrow"))
    raw = spec.get("bytes")
    key = None
    if raw is not None:
        raw = bytes(raw)
        key = (nrow, raw)
        hit = _MATRIX_CACHE.get(key)
        if hit is not None:
            return hit
        arr = np.frombuffer(raw, dtype="<f8")   # (read-only, over R's bytes: no copy of them)
    else:
        values = spec.get("values")
        arr = np.asarray(_listed(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64)
    if nrow <= 0 or arr.size % nrow:
        raise InvalidArgumentError(f"a matrix from R has {arr.size} values for {nrow} rows")
    arr = arr.reshape((nrow, arr.size // nrow), order="F")
    n = arr.shape[0]
    if arr.shape[1] != n:
        raise InvalidArgumentError(f"a matrix from R must be square; got {arr.shape[0]} x {arr.shape[1]}")
    if np.count_nonzero(np.isnan(arr)) == np.count_nonzero(np.isnan(np.diagonal(arr))):  # no cell off the diagonal missing
        # inside the function: converting R's values loads no capability until R sends a matrix
        from ..transfer import ErrorTable

        table = ErrorTable.from_matrix(arr, domains=list(range(1, n + 1)))
        if key is not None:
            while len(_MATRIX_CACHE) >= _MATRIX_CACHE_SIZE:
                _MATRIX_CACHE.pop(next(iter(_MATRIX_CACHE)))
            _MATRIX_CACHE[key] = table
        return table
    test, train = np.nonzero(~np.eye(n, dtype=bool).T)  # column-major, as R's which(row != col)
    errors = arr[train, test]
    missing = np.isnan(errors)
    return {"train": (train + 1).tolist(), "test": (test + 1).tolist(),
            "error": [None if m else float(v) for v, m in zip(errors.tolist(), missing.tolist())]}


# Python's words in messages and R's: type names after "got"/"not", and literals.
_R_TYPES = {"str": "character", "bool": "logical", "float": "numeric", "int": "integer", "NoneType": "NULL",
            "list": "a list", "tuple": "a list", "dict": "a named list", "ndarray": "numeric",
            "float64": "numeric", "int64": "integer", "DataFrame": "a data.frame", "Series": "a vector"}
_R_TYPE_RE = re.compile(r"\b(got|not|of type) (" + "|".join(sorted(_R_TYPES, key=len, reverse=True)) + r")\b")
# pandas' dtypes ("column 'x' is not numeric (dtype str)") as R's column types
_R_DTYPES = {"str": "character", "string": "character", "object": "character", "category": "factor",
             "bool": "logical", "boolean": "logical", "float64": "numeric", "float32": "numeric",
             "Float64": "numeric", "int64": "integer", "int32": "integer", "Int64": "integer", "Int32": "integer"}
_DTYPE_RE = re.compile(r"\bdtype:? ([\w\[\], ]+?)(?=[);,]|$)")
_R_LITERALS = [(re.compile(r"\bTrue\b"), "TRUE"), (re.compile(r"\bFalse\b"), "FALSE"),
               (re.compile(r"\bNone\b"), "NULL"), (re.compile(r"(?<![\w.])-inf\b"), "-Inf"),
               (re.compile(r"(?<![\w.-])inf\b"), "Inf"), (re.compile(r"(?<![\w.])nan\b"), "NaN")]
# a Python list of strings, ['lasso', 'rf'] -> c("lasso", "rf") (not a subscript: x['key'] stays), and a
# string value after "got"
_STR_LIST = re.compile(r"(?<![\w\]`)])\[('[^'\n]*'(?:, '[^'\n]*')*)\]")
_GOT_STR = re.compile(r"\b(got|not) '([^'\n]*)'")
# an interval of numbers, [0.0, 1.0] or (0, 1], after "in"/"lie in"/"within"
_NUM = r"-?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|inf)"
_INTERVAL = re.compile(r"\b(lie |lies |be )?(?:in|within) ([\[(])\s*(" + _NUM + r"),\s*(" + _NUM + r")\s*([\])])")
# a whole number written as a Python float after "got": got 2.0 -> got 2
_GOT_FLOAT = re.compile(r"\bgot (-?\d+)\.0(?![\d.])")
# a Python list of numbers after "got": got [99.0] -> got c(99)
_GOT_NUM_LIST = re.compile(r"\bgot \[(" + _NUM + r"(?:, " + _NUM + r")*)\]")


def _r_number(text: str) -> str:
    v = float(text)
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.15g}"


def _r_interval(m: re.Match) -> str:
    verb, left, lo, hi, right = m.group(1) or "", m.group(2), _r_number(m.group(3)), _r_number(m.group(4)), m.group(5)
    if left == "[" and right == "]":
        return f"{verb}between {lo} and {hi}"
    verb = "be " if verb else ""
    if left == "(" and right == ")":
        return f"{verb}strictly between {lo} and {hi}"
    if left == "(":
        return f"{verb}greater than {lo} and at most {hi}"
    return f"{verb}at least {lo} and less than {hi}"


def r_message(message: str) -> str:
    """A Python message in R's terms: its positions counted from 1 (a message built with
    :func:`llmsurrogate._positions.located`, as every message of the package that names a row or a
    position is: the one conversion, from the positions it carries as data), Python type names and pandas
    dtypes become R's (str -> character, bool -> logical, float -> numeric, ...),
    True/False/None/inf/nan become TRUE/FALSE/NULL/Inf/NaN, a list of strings becomes
    ``c("a", "b")``, an interval such as ``[0.0, 1.0]`` or ``(0, 1]`` becomes words ("between 0
    and 1", "greater than 0 and at most 1") and a whole number written ``2.0`` after "got" is
    written ``2``.

    >>> from llmsurrogate._positions import at, located
    >>> r_message(located("feature 'x' has a missing value at ", at(3, "row", marked=True), "; got str, not True"))
    "feature 'x' has a missing value at row 4; got character, not TRUE"
    >>> r_message("argument `algorithm` must be one of ['lasso', 'rf']; got 'foo'")
    'argument `algorithm` must be one of c("lasso", "rf"); got "foo"'
    >>> r_message("argument `level` must lie in [0.5, 1.0]; got 2.0")
    'argument `level` must lie between 0.5 and 1; got 2'
    >>> r_message("argument `algorithm_options['n_estimators']` must be >= 1; argument `order`: got [99.0, 2.5]")
    "argument `algorithm_options['n_estimators']` must be >= 1; argument `order`: got c(99, 2.5)"
    >>> r_message("argument `p` must be a number in (0.0, 1.0]; column 'g' is not numeric (dtype str)")
    "argument `p` must be a number greater than 0 and at most 1; column 'g' is not numeric (type character)"
    """
    out = one_based(message)
    out = _R_TYPE_RE.sub(lambda m: f"{m.group(1)} {_R_TYPES[m.group(2)]}", out)
    out = _DTYPE_RE.sub(lambda m: f"type {_R_DTYPES.get(m.group(1), m.group(1))}", out)
    out = _INTERVAL.sub(_r_interval, out)
    out = _GOT_FLOAT.sub(r"got \1", out)
    out = _GOT_NUM_LIST.sub(lambda m: "got c(" + ", ".join(_r_number(v) for v in m.group(1).split(", ")) + ")", out)
    out = _STR_LIST.sub(lambda m: "c(" + re.sub(r"'([^'\n]*)'", r'"\1"', m.group(1)) + ")", out)
    out = _GOT_STR.sub(r'\1 "\2"', out)
    for pattern, word in _R_LITERALS:
        out = pattern.sub(word, out)
    return out


def _r_frame(columns: Mapping[str, Any]):
    """A data frame from R's columns: a column of numbers, logicals and missing values (an integer
    or logical column with ``NA``, or one that is all ``NA``) becomes float64 with NaN, so that it
    stays numeric; any other column (factor labels, strings, dates) stays as its objects, ``None``
    missing."""
    import numpy as np
    import pandas as pd

    out = {}
    for name, values in columns.items():
        values = _listed(values)
        present = [v for v in values if v is not None]
        if any(v is None for v in values) and all(isinstance(v, (bool, int, float)) for v in present):
            out[name] = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
        else:
            out[name] = values
    return pd.DataFrame(out)


def _r_names(value: Any) -> list[str]:
    """An R character vector (a scalar for length 1, a list otherwise, ``[]`` when empty) as a list."""
    return [str(v) for v in _listed(value)]
