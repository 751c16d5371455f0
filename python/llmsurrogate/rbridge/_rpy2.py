"""Python calling R (rpy2, for tests and users): :func:`pandas_to_r` and :func:`r_to_pandas` convert
data frames with rpy2's conversion-context API (rpy2 >= 3.5.17, < 3.6 while R is 4.2);
:func:`r_converter` gives the converter for ``with r_converter().context(): ...`` blocks. rpy2 is
imported when first used (:func:`rpy2_robjects`): it starts an embedded R."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from .._optional import require
from .._validation import as_frame
from ..exceptions import InvalidArgumentError
from ._convert import _r_column

__all__ = ["pandas_to_r", "r_to_pandas", "r_converter", "rpy2_robjects"]


def rpy2_robjects(purpose: str = "converting data frames to and from R"):
    """``rpy2.robjects``, imported so that it does not break the processes this one starts later.

    Starting the embedded R sets ``LD_LIBRARY_PATH`` in this process's environment to R's
    library folders (``/usr/lib/R/lib:/usr/lib/x86_64-linux-gnu:...`` on Debian). The dynamic
    loader of *this* process never reads it again, but every child inherits it: a Python built
    with a shared libpython (pyenv's, for one) then loads the system's libpython instead of its
    own, and worker processes (joblib/loky, Dask) fail with errors such as ``undefined symbol:
    _PyModule_Add``. The variable is put back as it was once R is up.
    """
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
    if not isinstance(r_frame, ro.vectors.DataFrame) and not ro.r["is.data.frame"](r_frame)[0]:
        raise InvalidArgumentError(f"argument `r_frame` is not an R data.frame (got {type(r_frame).__name__})")
    names = [str(n) for n in ro.r["names"](r_frame)]
    columns = {name: _rpy2_column(ro, r_frame[j], name) for j, name in enumerate(names)}
    n = int(ro.r["nrow"](r_frame)[0])
    out = pd.DataFrame(columns, index=pd.RangeIndex(n))
    if ro.r(".row_names_info")(r_frame)[0] > 0:  # negative: R's automatic row names
        out.index = [str(r) for r in ro.r["rownames"](r_frame)]
    return out
