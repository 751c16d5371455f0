"""Conversion between llmsurrogate's Python objects and R.

Two routes, for two directions of use:

* **R calling Python (reticulate, the R package in ``r-bridge/``).** Debian's reticulate 1.28 does
  not convert numpy-2 arrays or pandas-on-numpy-2 frames, so everything crosses as plain Python
  values: :func:`to_r_columns` turns a frame into ``{column: list}`` (``None`` for missing), and
  :func:`call` runs a public function by name and returns only plain values (lists, dicts, floats,
  strings). In the other direction reticulate would send R's missing values as values (an integer
  ``NA`` as -2147483648, a logical ``NA`` as ``True``, a character ``NA`` as ``"NA"``), so the R
  package sends data frames and vectors as typed columns with the positions of their missing
  values, which :func:`from_r` (applied by :func:`call` to every argument) turns into lists with
  ``None`` there.
* **Python calling R (rpy2, for tests and users).** :func:`pandas_to_r` and :func:`r_to_pandas`
  convert data frames with rpy2's conversion-context API (rpy2 >= 3.5.17, < 3.6 while R is 4.2);
  :func:`r_converter` gives the converter for ``with r_converter().context(): ...`` blocks.
"""

from __future__ import annotations

import datetime
import importlib
import math
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._optional import require
from ._validation import as_frame
from .exceptions import InvalidArgumentError, LLMSurrogateWarning
from .results import Result

__all__ = ["to_r_columns", "to_plain", "from_r", "call", "r_call", "r_message", "pandas_to_r", "r_to_pandas", "r_converter"]

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
    "testing": {"synthetic_census"},
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


def from_r(value: Any) -> Any:
    """An argument from the R package as Python values: a data frame (``{"__rframe__": ...}``) as
    ``{column: list}`` and a vector (``{"__rvector__": ...}``) as a list, ``None`` where R has a
    missing value; anything else unchanged.

    >>> from_r({"__rframe__": {"names": ["a", "d"], "columns": [
    ...     {"kind": "integer", "values": [1, -2147483648], "na": 1},
    ...     {"kind": "date", "values": [0.0, 19000.0], "na": []}]}})
    {'a': [1, None], 'd': [datetime.date(1970, 1, 1), datetime.date(2022, 1, 8)]}
    """
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
    nrow = int(spec.get("nrow"))
    raw = spec.get("bytes")
    key = None
    if raw is not None:
        raw = bytes(raw)
        key = (nrow, raw)
        hit = _MATRIX_CACHE.get(key)
        if hit is not None:
            return hit
        arr = np.frombuffer(raw, dtype="<f8").astype(np.float64)
    else:
        values = spec.get("values")
        arr = np.asarray(_listed(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64)
    if nrow <= 0 or arr.size % nrow:
        raise InvalidArgumentError(f"a matrix from R has {arr.size} values for {nrow} rows")
    arr = arr.reshape((nrow, arr.size // nrow), order="F")
    n = arr.shape[0]
    if arr.shape[1] != n:
        raise InvalidArgumentError(f"a matrix from R must be square; got {arr.shape[0]} x {arr.shape[1]}")
    test, train = np.nonzero(~np.eye(n, dtype=bool).T)  # column-major, as R's which(row != col)
    errors = arr[train, test]
    missing = np.isnan(errors)
    if not missing.any():
        from .transfer import ErrorTable

        table = ErrorTable.from_matrix(arr, domains=list(range(1, n + 1)))
        if key is not None:
            while len(_MATRIX_CACHE) >= _MATRIX_CACHE_SIZE:
                _MATRIX_CACHE.pop(next(iter(_MATRIX_CACHE)))
            _MATRIX_CACHE[key] = table
        return table
    return {"train": (train + 1).tolist(), "test": (test + 1).tolist(),
            "error": [None if m else float(v) for v, m in zip(errors.tolist(), missing.tolist())]}


def call(function: str, *args: Any, **kwargs: Any) -> Any:
    """Run ``llmsurrogate.<module>.<name>`` (``function="module.name"``) on the arguments decoded by
    :func:`from_r` and return :func:`to_plain` output.

    >>> call("quantiles.upper_quantile", [1.0, 2.0, 3.0], [0.5])
    [2.0]
    """
    module, _, name = function.partition(".")
    if name not in R_CALLABLE.get(module, ()):
        allowed = sorted(f"{m}.{n}" for m, names in R_CALLABLE.items() for n in names)
        raise InvalidArgumentError(f"argument `function`: {function!r} is not callable from R; choose from {allowed}")
    fn = getattr(importlib.import_module(f"llmsurrogate.{module}"), name)
    args = tuple(from_r(a) for a in args)
    kwargs = {k: from_r(v) for k, v in kwargs.items()}
    return to_plain(fn(*args, **kwargs))


# Python's words in messages and R's: type names after "got"/"not", and literals.
_R_TYPES = {"str": "character", "bool": "logical", "float": "numeric", "int": "integer", "NoneType": "NULL",
            "list": "a list", "tuple": "a list", "dict": "a named list", "ndarray": "numeric",
            "float64": "numeric", "int64": "integer", "DataFrame": "a data.frame", "Series": "a vector"}
_R_TYPE_RE = re.compile(r"\b(got|not|of type) (" + "|".join(sorted(_R_TYPES, key=len, reverse=True)) + r")\b")
_R_LITERALS = [(re.compile(r"\bTrue\b"), "TRUE"), (re.compile(r"\bFalse\b"), "FALSE"),
               (re.compile(r"\bNone\b"), "NULL"), (re.compile(r"(?<![\w.])-inf\b"), "-Inf"),
               (re.compile(r"(?<![\w.-])inf\b"), "Inf"), (re.compile(r"(?<![\w.])nan\b"), "NaN")]
_ZERO_BASED = re.compile(r"\b(row|rows|position|index) (\d+) \(0-based\)")


def r_message(message: str) -> str:
    """A Python message in R's terms: 0-based positions marked ``(0-based)`` become 1-based (the
    package's messages mark every 0-based row and position so), Python type names become R's
    (str -> character, bool -> logical, float -> numeric, ...) and True/False/None/inf/nan become
    TRUE/FALSE/NULL/Inf/NaN.

    >>> r_message("feature 'x' has a missing value at row 3 (0-based); got str, not True")
    "feature 'x' has a missing value at row 4; got character, not TRUE"
    """
    out = _ZERO_BASED.sub(lambda m: f"{m.group(1)} {int(m.group(2)) + 1}", str(message))
    out = _R_TYPE_RE.sub(lambda m: f"{m.group(1)} {_R_TYPES[m.group(2)]}", out)
    for pattern, word in _R_LITERALS:
        out = pattern.sub(word, out)
    return out


def r_call(function: str, *args: Any, **kwargs: Any) -> dict:
    """:func:`call` for the R package: ``{"value": ..., "warnings": [{"message", "class"}]}``.

    Warnings are collected instead of printed, so that R raises them as R warnings (class
    ``llmsurrogate_warning``) that ``suppressWarnings()`` and ``tryCatch(warning = )`` see; the
    messages of warnings and errors are put in R's terms by :func:`r_message` (the exception keeps
    its class).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        try:
            value = call(function, *args, **kwargs)
        except Exception as err:
            if err.args and isinstance(err.args[0], str):
                err.args = (r_message(err.args[0]), *err.args[1:])
            raise
    out = []
    for w in caught:
        out.append({"message": r_message(str(w.message)), "class": w.category.__name__})
    return {"value": value, "warnings": out}


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


def rpy2_robjects(purpose: str = "converting data frames to and from R"):
    """``rpy2.robjects``, imported so that it does not break the processes this one starts later.

    Starting the embedded R sets ``LD_LIBRARY_PATH`` in this process's environment to R's
    library folders (``/usr/lib/R/lib:/usr/lib/x86_64-linux-gnu:...`` on Debian). The dynamic
    loader of *this* process never reads it again, but every child inherits it: a Python built
    with a shared libpython (pyenv's, for one) then loads the system's libpython instead of its
    own, and worker processes (joblib/loky, Dask) fail with errors such as ``undefined symbol:
    _PyModule_Add``. The variable is put back as it was once R is up.
    """
    import os

    before = os.environ.get("LD_LIBRARY_PATH")
    ro = require("rpy2.robjects", purpose=purpose)
    if os.environ.get("LD_LIBRARY_PATH") != before:
        if before is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = before
    return ro


def r_converter():
    """rpy2's default converter plus the pandas converter (use as ``with r_converter().context():``)."""
    ro = rpy2_robjects()
    pandas2ri = require("rpy2.robjects.pandas2ri", purpose="converting data frames to and from R")
    return ro.default_converter + pandas2ri.converter


def pandas_to_r(data: Any):
    """A pandas (or polars, or mapping) frame as an R ``data.frame`` (an rpy2 object)."""
    ro = rpy2_robjects()
    frame = as_frame(data)
    with r_converter().context():
        return ro.conversion.get_conversion().py2rpy(frame)


def _rpy2_column(ro: Any, col: Any, name: str):
    """One column of an R data.frame (an rpy2 vector) with R's missing values as missing: the same
    kinds as the reticulate route (:func:`from_r`), factors as pandas Categoricals."""
    import pandas as pd

    classes = list(ro.r["class"](col))
    typeof = ro.r["typeof"](col)[0]
    if ro.r["is.list"](col)[0] or len(ro.r["dim"](col) or []) > 1:
        raise InvalidArgumentError(f"column {name!r} is a list, matrix or data frame column; flatten it first")
    na = [i for i, m in enumerate(ro.r["is.na"](col)) if m]
    if "factor" in classes:
        codes = [int(c) - 1 for c in ro.r("function(x) { x <- as.integer(x); x[is.na(x)] <- 0L; x }")(col)]
        return pd.Categorical.from_codes(codes, categories=list(ro.r["levels"](col)), ordered="ordered" in classes)
    if "integer64" in classes:
        kind, values = "int64", list(ro.r("function(x) { requireNamespace('bit64'); as.character(x) }")(col))
    elif "Date" in classes:
        kind, values = "date", list(ro.r["as.numeric"](col))
    elif "POSIXct" in classes:
        kind, values = "datetime", list(ro.r["as.numeric"](col))
    elif typeof in ("double", "integer", "logical", "character"):
        kind, values = typeof, list(ro.r["as.vector"](col))
    else:
        raise InvalidArgumentError(f"column {name!r} is of R type {typeof}; numeric, integer, logical, character, "
                                   "factor, Date, POSIXct and integer64 columns can be converted")
    return _r_column({"kind": kind, "values": values, "na": na}, f"column {name!r}")


def r_to_pandas(r_frame: Any):
    """An R ``data.frame`` (rpy2 object) as a pandas DataFrame.

    R's missing values are missing in every column type (rpy2's own converter turns an integer
    ``NA`` into -2147483648): integer columns with ``NA`` become float64 with NaN, as pandas stores
    any integer column with missing values; factors become Categoricals, Dates ``datetime.date``
    objects, POSIXct UTC timestamps, integer64 (bit64) exact integers. Row names other than R's
    automatic ``1..n`` become the index.
    """
    ro = rpy2_robjects()
    import pandas as pd

    if not isinstance(r_frame, ro.vectors.DataFrame) and not ro.r["is.data.frame"](r_frame)[0]:
        raise InvalidArgumentError(f"argument `r_frame` is not an R data.frame (got {type(r_frame).__name__})")
    names = [str(n) for n in ro.r["names"](r_frame)]
    columns = {name: _rpy2_column(ro, r_frame[j], name) for j, name in enumerate(names)}
    n = int(ro.r["nrow"](r_frame)[0])
    out = pd.DataFrame(columns, index=pd.RangeIndex(n))
    if ro.r(".row_names_info")(r_frame)[0] > 0:  # negative: R's automatic row names
        out.index = [str(r) for r in ro.r["rownames"](r_frame)]
    return out


# ---- adapters of the R package's lookahead and fixed-effects functions --------------------------
# The R functions feols(), etable(), lookahead_test(), lookahead_bootstrap() and lap() call these
# (through `call("rbridge.<name>", ...)`): they take what the R package sends (a data frame as
# {column: list} with None for R's NA, names and scalars) and return Results or plain values.


def _r_frame(columns: Mapping[str, Any]):
    """A data frame from R's columns: a column of numbers, logicals and missing values (an integer
    or logical column with ``NA``, or one that is all ``NA``) becomes float64 with NaN, so that it
    stays numeric; any other column (factor labels, strings, dates) stays as its objects, ``None``
    missing."""
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


def _formula_arg(err: InvalidArgumentError) -> InvalidArgumentError:
    """The Python formula argument is ``fml``; R's is ``formula``."""
    if err.args and isinstance(err.args[0], str):
        err.args = (err.args[0].replace("argument `fml`", "argument `formula`"), *err.args[1:])
    return err


def r_feols(formula: str, data: Mapping, vcov: Any = None, weights: Any = None, fixef_rm: str = "singleton",
            n_jobs: Any = None):
    """:func:`llmsurrogate.fe.feols` for the R package's ``feols()``: ``weights`` a column name or
    the values (``None`` for R's ``NA``, such rows dropped); returns the :class:`FeolsResult`."""
    from .fe import feols

    if weights is not None and not isinstance(weights, str):
        weights = np.array([np.nan if v is None else float(v) for v in _listed(weights)], dtype=np.float64)
    if n_jobs is not None:
        n_jobs = int(n_jobs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LLMSurrogateWarning)
            fit = feols(formula, _r_frame(data), vcov=vcov, weights=weights, fixef_rm=fixef_rm, n_jobs=n_jobs)
    except InvalidArgumentError as err:
        raise _formula_arg(err) from None
    for w in caught:  # R's word for a missing value
        warnings.warn(str(w.message).replace("missing values (NaN/None)", "missing values (NA)"), w.category,
                      stacklevel=2)
    return fit


def r_etable(fits: Any, type: str = "text", digits: Any = 3, stars: bool = True):
    """:func:`llmsurrogate.fe.etable` of fits sent as their JSON (``FeolsResult.to_json``): a string
    for ``"text"`` and ``"tex"``, for ``"df"`` the table with its row labels in a column ``row``."""
    from .fe import FeolsResult, etable

    models = [FeolsResult.from_json(j) for j in _listed(fits)]
    out = etable(models, type=type, digits=int(digits), stars=bool(stars))
    if type == "df":
        out = out.rename_axis("row").reset_index()
    return out


def _lookahead_sample(data: Mapping, fe: Any, controls: Any) -> tuple:
    return _r_frame(data), _r_names(fe), _r_names(controls)


def r_lookahead_test(data: Mapping, outcome: str, signal: str, lap: str, fe: Any = ("firm", "date"),
                     cluster: Any = "date", controls: Any = (), standardize: bool = False, n_jobs: Any = None) -> dict:
    """:func:`llmsurrogate.lookahead.lookahead_test` for the R package: ``{"test", "regression",
    "baseline"}`` (the test and its two fits, as Results)."""
    from .lookahead import lookahead_test

    frame, fe, controls = _lookahead_sample(data, fe, controls)
    res = lookahead_test(frame, outcome, signal, lap, fe=fe, cluster=cluster, controls=controls,
                         standardize=bool(standardize), n_jobs=None if n_jobs is None else int(n_jobs))
    return {"test": res, "regression": res.regression, "baseline": res.baseline}


def r_lookahead_bootstrap(data: Mapping, outcome: str, signal: str, lap: str, fe: Any = ("firm", "date"),
                          reps: Any = 10_000, seed: Any = None, resample: str = "obs", controls: Any = (),
                          standardize: bool = False, reference: Any = None, n_jobs: Any = None):
    """:func:`llmsurrogate.lookahead.bootstrap` for the R package. Without a seed one is drawn below
    2**53, so that R's doubles hold it exactly and the run can be repeated from R."""
    from .lookahead import bootstrap

    frame, fe, controls = _lookahead_sample(data, fe, controls)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 53))
    return bootstrap(frame, outcome, signal, lap, fe=fe, reps=reps, seed=seed, resample=resample, controls=controls,
                     standardize=bool(standardize), reference=reference,
                     n_jobs=None if n_jobs is None else int(n_jobs))


def r_lap(texts: Any, model: str, k: Any = 0.2, method: str = "min_k", cache: Any = None,
          backend: str = "transformers", batch_size: Any = 16, agg: str = "geometric", details: bool = False,
          device: Any = None):
    """:func:`llmsurrogate.lookahead.lap` with the backend built from its description
    (:func:`llmsurrogate.llm.factory.make_backend`: ``backend`` on the local model folder ``model``)."""
    from .llm.factory import make_backend
    from .lookahead import lap

    texts = [str(t) for t in _listed(texts)]
    be = make_backend(backend, model, device=device, batch_size=None if batch_size is None else int(batch_size))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        out = lap(texts, be, k=k, method=method, cache=cache, batch_size=16 if batch_size is None else int(batch_size),
                  agg=agg, details=bool(details))
    for w in caught:  # the empty-text warning gives a 0-based position: marked so, r_message makes it R's
        warnings.warn(re.sub(r"\bposition (\d+)\b(?! \(0-based\))", r"position \1 (0-based)", str(w.message)),
                      w.category, stacklevel=2)
    return out


R_CALLABLE["rbridge"] = {"r_feols", "r_etable", "r_lookahead_test", "r_lookahead_bootstrap", "r_lap"}
