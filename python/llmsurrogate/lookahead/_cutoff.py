"""In-sample and out-of-sample periods around a model's knowledge cutoff (docs/methods/lookahead.md
§2.6): :func:`model_metadata` (the paper's Table A.1, shipped as package data) and
:func:`split_by_cutoff` (masks of the dates in each period)."""

from __future__ import annotations

import re
from importlib import resources

import numpy as np
import pandas as pd

from .._deprecation import deprecated_arguments
from ..exceptions import InvalidArgumentError

_MONTH = re.compile(r"^\d{4}-\d{2}$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}([ T].*)?$")


def model_metadata():
    """The models of the paper (Table A.1): ``model``, ``checkpoint``, ``role``,
    ``knowledge_cutoff``, ``release``, ``files_updated`` and the in-sample
    (``in_sample_start``, ``in_sample_end``) and out-of-sample (``oos_start``, ``oos_end``) months
    the paper uses (inclusive; empty where it has none). A pandas DataFrame.

    Examples
    --------
    >>> meta = model_metadata().set_index("model")
    >>> meta.loc["llama-2-70b", ["knowledge_cutoff", "oos_start", "oos_end"]].tolist()
    ['2022-09', '2023-09', '2024-12']
    """
    path = resources.files("llmsurrogate") / "data" / "lookahead-models" / "models.csv"
    with resources.as_file(path) as p:
        return pd.read_csv(p, dtype=str, keep_default_na=False)


def _bound(value, name: str, end: bool):
    """A bound as a Timestamp: a month ``"YYYY-MM"`` covers the whole month, a day covers the
    whole day (inclusive ends)."""
    if value is None or (isinstance(value, str) and value == ""):
        return None
    bad = InvalidArgumentError(f"argument `{name}` must be a date ('YYYY-MM-DD', a Timestamp) or a month "
                               f"'YYYY-MM'; got {value!r}")
    try:
        if isinstance(value, str):
            text = value.strip()
            if _MONTH.match(text):
                per = pd.Period(text, freq="M")
                return per.end_time if end else per.start_time
            if not _DAY.match(text):
                raise bad
        ts = pd.Timestamp(value)
        if ts is pd.NaT:
            raise bad
        if ts.tzinfo is not None:
            ts = ts.tz_localize(None)
        if end and ts == ts.normalize():
            ts = ts + pd.Timedelta(days=1) - pd.Timedelta(1, "ns")
    except (ValueError, TypeError, OverflowError):
        raise bad from None
    return ts


@deprecated_arguments(positional=1)
def split_by_cutoff(dates, *, is_end=None, oos_start=None, oos_end=None, model: str | None = None,
                    is_start=None):
    """Which ``dates`` are in-sample and which out-of-sample for a model (§2.6).

    ``model`` (a name of :func:`model_metadata`, e.g. ``"llama-2-70b"``) takes the paper's windows;
    ``is_start``, ``is_end``, ``oos_start``, ``oos_end`` (dates, or months ``"YYYY-MM"`` that cover
    the whole month; ends inclusive) set or override them. Dates after ``is_end`` and before
    ``oos_start`` belong to neither (the paper's October 2022 -- August 2023 for Llama-2). Time-zone
    aware dates are compared in their own local time.

    Returns a pandas DataFrame with boolean ``in_sample`` and ``out_of_sample`` and the label
    ``period`` (``"in_sample"``, ``"out_of_sample"``, ``"neither"``; missing dates are
    ``"neither"``), one row per date, indexed like ``dates`` when it is a Series. The arguments
    after ``dates`` are keyword-only (by position they still work, with a FutureWarning).

    Examples
    --------
    >>> split_by_cutoff(["2022-06-30", "2023-01-15", "2023-10-02"], model="llama-2-70b")
       in_sample  out_of_sample         period
    0       True          False      in_sample
    1      False          False        neither
    2      False           True  out_of_sample
    >>> split_by_cutoff(["2023-12-31", "2024-01-01"], is_end="2023-12", oos_start="2024-01")["period"].tolist()
    ['in_sample', 'out_of_sample']
    """
    if model is not None:
        table = model_metadata()
        row = table[table["model"] == model]
        if row.empty:
            raise InvalidArgumentError(f"argument `model`: unknown model {model!r}; known: {list(table['model'])}")
        row = row.iloc[0]
        is_start = row["in_sample_start"] if is_start is None else is_start
        is_end = row["in_sample_end"] if is_end is None else is_end
        oos_start = row["oos_start"] if oos_start is None else oos_start
        oos_end = row["oos_end"] if oos_end is None else oos_end
    if is_end is None and oos_start is None:
        raise InvalidArgumentError("pass `is_end` and/or `oos_start` (or `model=`) to define the periods")
    lo_is, hi_is = _bound(is_start, "is_start", False), _bound(is_end, "is_end", True)
    lo_oos, hi_oos = _bound(oos_start, "oos_start", False), _bound(oos_end, "oos_end", True)
    if hi_is is not None and lo_oos is not None and lo_oos <= hi_is:
        raise InvalidArgumentError(f"the out-of-sample start {oos_start!r} must come after the in-sample end {is_end!r}")
    index = dates.index if isinstance(dates, pd.Series) else None
    try:
        d = pd.to_datetime(pd.Series(np.asarray(dates) if not isinstance(dates, pd.Series) else dates.to_numpy()))
    except (ValueError, TypeError) as err:
        raise InvalidArgumentError(f"argument `dates` must hold dates ({err})") from None
    if getattr(d.dt, "tz", None) is not None:
        d = d.dt.tz_localize(None)
    ok = d.notna().to_numpy()
    v = d.to_numpy()
    ins = ok & (hi_is is not None)
    if hi_is is not None:
        ins &= v <= np.datetime64(hi_is)
    if lo_is is not None:
        ins &= v >= np.datetime64(lo_is)
    oos = ok & (lo_oos is not None)
    if lo_oos is not None:
        oos &= v >= np.datetime64(lo_oos)
    if hi_oos is not None:
        oos &= v <= np.datetime64(hi_oos)
    period = np.where(ins, "in_sample", np.where(oos, "out_of_sample", "neither"))
    return pd.DataFrame({"in_sample": ins, "out_of_sample": oos, "period": period}, index=index)
