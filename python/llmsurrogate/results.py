"""Result objects shared by every capability.

A result is an immutable dataclass deriving from :class:`Result`. It prints a summary, renders as
HTML in notebooks, turns into tidy pandas frames, and survives a JSON round trip::

    >>> import pandas as pd
    >>> from llmsurrogate.results import TableResult
    >>> res = TableResult(title="Example", table=pd.DataFrame({"x": [1.0, 2.0]}), meta={"seed": 0})
    >>> TableResult.from_json(res.to_json()) == res
    True
    >>> print(res.summary().as_text().splitlines()[0])
    Example

Subclasses implement :meth:`Result.tidy` (one row per estimate) and may override
:meth:`Result.summary` and :meth:`Result.plot`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import importlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from . import __version__
from .exceptions import InvalidArgumentError

__all__ = ["Result", "Summary", "TableResult", "result_dataclass"]


def result_dataclass(cls):
    """Decorator for result classes: a frozen dataclass that keeps :class:`Result`'s ``__eq__``,
    ``__repr__`` (the summary) and ``_repr_html_``.

    Examples
    --------
    >>> import pandas as pd
    >>> @result_dataclass
    ... class ExampleMean(Result):
    ...     value: float
    ...     def tidy(self):
    ...         return pd.DataFrame({"estimate": [self.value]})
    >>> ExampleMean(2.5) == ExampleMean.from_json(ExampleMean(2.5).to_json())
    True
    """
    return dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)

_REGISTRY: dict[str, type["Result"]] = {}


class Summary:
    """A printable summary: a title, key-value facts, captioned tables and notes.

    ``str()`` and :meth:`as_text` give plain text, :meth:`as_html` an HTML fragment (also shown by
    notebooks through ``_repr_html_``).

    Examples
    --------
    >>> print(Summary("Fit", facts={"n": 10, "r2": 0.123456}, notes=["a toy"]))
    Fit
    ===
    n  : 10
    r2 : 0.1235
    <BLANKLINE>
    Note: a toy
    """

    def __init__(self, title: str, facts: dict[str, Any] | None = None,
                 tables: list[tuple[str, Any]] | None = None, notes: list[str] | None = None,
                 float_format: str = "{:.4g}"):
        self.title = title
        self.facts = dict(facts or {})
        self.tables = list(tables or [])
        self.notes = list(notes or [])
        self.float_format = float_format

    def _fmt(self, v: Any) -> str:
        if isinstance(v, float):
            return self.float_format.format(v)
        return str(v)

    def as_text(self) -> str:
        """The summary as plain text (what ``print`` shows).

        Examples
        --------
        >>> from llmsurrogate.results import Summary
        >>> print(Summary("Fit", facts={"n": 10, "r2": 0.123456}).as_text())
        Fit
        ===
        n  : 10
        r2 : 0.1235
        """
        lines = [self.title, "=" * len(self.title)]
        if self.facts:
            width = max(len(k) for k in self.facts)
            lines += [f"{k:<{width}} : {self._fmt(v)}" for k, v in self.facts.items()]
        for caption, frame in self.tables:
            lines += ["", caption] if caption else [""]
            lines.append(frame.to_string(index=False, float_format=lambda x: self.float_format.format(x)))
        if self.notes:
            lines.append("")
            lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines)

    def as_html(self) -> str:
        """The summary as an HTML fragment (what a notebook shows).

        Examples
        --------
        >>> from llmsurrogate.results import Summary
        >>> print(Summary("Fit", facts={"n": 10}).as_html())
        <h4>Fit</h4>
        <table><tr><th style='text-align:left'>n</th><td>10</td></tr></table>
        """
        parts = [f"<h4>{html.escape(self.title)}</h4>"]
        if self.facts:
            rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(self._fmt(v))}</td></tr>"
                           for k, v in self.facts.items())
            parts.append(f"<table>{rows}</table>")
        for caption, frame in self.tables:
            if caption:
                parts.append(f"<p><b>{html.escape(caption)}</b></p>")
            parts.append(frame.to_html(index=False, float_format=lambda x: self.float_format.format(x)))
        parts += [f"<p><i>Note: {html.escape(n)}</i></p>" for n in self.notes]
        return "\n".join(parts)

    __str__ = as_text

    def __repr__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


# --- JSON encoding of result fields ----------------------------------------------------------

def _encode(value: Any) -> Any:
    if isinstance(value, pd.DataFrame):
        out = {
            "columns": [str(c) for c in value.columns],
            "dtypes": [str(t) for t in value.dtypes],
            "data": {str(c): [_encode(v) for v in value[c].tolist()] for c in value.columns},
        }
        out.update(_encode_index(value.index))
        return {"__frame__": out}
    if isinstance(value, np.ndarray):
        return {"__array__": {"dtype": str(value.dtype), "shape": list(value.shape),
                              "data": [_encode(v) for v in value.ravel().tolist()]}}
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else {"__float__": repr(v)}
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if value is pd.NA or value is pd.NaT:
        return None
    raise InvalidArgumentError(f"cannot store a value of type {type(value).__name__} in a result's JSON")


def _encode_index(index: pd.Index) -> dict:
    """A frame's row labels where they are not the default 0..n-1 (a scores table keeps the data's
    index, so that what is paired with it by label still pairs after a save and a load): ``index``
    (and ``index_name``); labels JSON cannot hold as they are (dates, tuples) are not stored."""
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None:
        return {}
    if isinstance(index, pd.MultiIndex):
        return {}
    try:
        labels = [_encode(v) for v in index.tolist()]
    except InvalidArgumentError:
        return {}
    if any(not (v is None or isinstance(v, (str, int, float, bool))) for v in labels):
        return {}
    out = {"index": labels}
    if index.name is not None and isinstance(index.name, (str, int)):
        out["index_name"] = index.name
    return out


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "__frame__" in value:
            spec = value["__frame__"]
            frame = pd.DataFrame({c: [_decode(v) for v in spec["data"][c]] for c in spec["columns"]},
                                 columns=spec["columns"])
            for c, t in zip(spec["columns"], spec["dtypes"]):
                try:
                    frame[c] = frame[c].astype(t)
                except (TypeError, ValueError):
                    pass
            if "index" in spec:
                frame.index = pd.Index(spec["index"], name=spec.get("index_name"))
            return frame
        if "__array__" in value:
            spec = value["__array__"]
            return np.array([_decode(v) for v in spec["data"]], dtype=spec["dtype"]).reshape(spec["shape"])
        if "__float__" in value:
            return float(value["__float__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        return isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) and a.equals(b) \
            and list(a.columns) == list(b.columns)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: The modules that define result classes, imported when a saved result names a kind not yet
#: registered (so ``Result.load(path)`` works in a fresh process).
_RESULT_MODULES = ("llmsurrogate.ess._results", "llmsurrogate.transfer._results", "llmsurrogate.transfer._table",
                   "llmsurrogate.risk._results", "llmsurrogate.fe._results", "llmsurrogate.lookahead._results",
                   "llmsurrogate.ppi._results")


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Result:
    """Base class of all result objects (frozen dataclasses).

    Examples
    --------
    >>> import pandas as pd
    >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.0]}))
    >>> path = res.save("means.json")
    >>> Result.load(path) == res, Result.load(path).kind
    (True, 'TableResult')
    """

    kind: ClassVar[str] = "Result"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.kind = cls.__name__
        _REGISTRY[cls.__name__] = cls

    # -- what subclasses provide -----------------------------------------------------------------
    def tidy(self):
        """One row per estimate, broom-style, as a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> res.tidy()
             x
        0  1.0
        1  2.5
        """
        raise NotImplementedError(f"{type(self).__name__} does not define tidy()")

    def summary(self) -> Summary:
        """A :class:`Summary` of the result (printable, HTML in notebooks).

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> print(res.summary())
        Means
        =====
        seed : 0
        <BLANKLINE>
          x
          1
        2.5
        """
        return Summary(type(self).__name__, tables=[("", self.tidy())])

    def plot(self, ax=None, **kwargs):
        """Draw the result with matplotlib and return the :class:`matplotlib.figure.Figure`
        (subclasses that have a figure). A one-panel figure is drawn into ``ax`` when given (and
        ``ax.figure`` is returned), else into a new figure; ``fig.savefig("result.png")`` saves it.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg"); from llmsurrogate.risk import evaluate
        >>> fig = evaluate([0, 0, 1, 1, 0, 1], [.1, .4, .8, .35, .2, .9], n_boot=0).plot()
        >>> fig.savefig("result.png"); type(fig).__name__
        'Figure'
        """
        raise NotImplementedError(f"{type(self).__name__} has no plot")

    # -- shared behaviour ---------------------------------------------------------------------------
    def to_frame(self):
        """The result as one pandas DataFrame (defaults to :meth:`tidy`).

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> res.to_frame()["x"].tolist()
        [1.0, 2.5]
        """
        return self.tidy()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict holding every field, the class name and the package version.

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> d = res.to_dict()
        >>> d["kind"], sorted(d["fields"])
        ('TableResult', ['meta', 'notes', 'table', 'title'])
        """
        fields = {f.name: _encode(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {"kind": self.kind, "llmsurrogate_version": __version__, "fields": fields}

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> "Result":
        """Rebuild a result from :meth:`to_dict` output (the class is looked up by its name).

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> Result.from_dict(res.to_dict()) == res
        True
        """
        if not isinstance(payload, dict) or "kind" not in payload or "fields" not in payload:
            raise InvalidArgumentError("argument `payload` is not a saved llmsurrogate result (no 'kind'/'fields')")
        target = _REGISTRY.get(payload["kind"])
        if target is None:  # a result of a capability not imported yet: import the result modules
            for module in _RESULT_MODULES:
                importlib.import_module(module)
            target = _REGISTRY.get(payload["kind"])
        if target is None:
            raise InvalidArgumentError(f"unknown result kind {payload['kind']!r}: not a result of this version of "
                                       "llmsurrogate")
        if cls is not Result and not issubclass(target, cls):
            raise InvalidArgumentError(f"payload holds a {payload['kind']}, not a {cls.__name__}")
        return target._from_fields({k: _decode(v) for k, v in payload["fields"].items()})

    @classmethod
    def _from_fields(cls, fields: dict[str, Any]) -> "Result":
        """The result of decoded ``fields``; a subclass whose fields were renamed reads the old names here."""
        return cls(**fields)

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict`; also written to ``path`` when given.

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> text = res.to_json(indent=None)
        >>> text[:40]
        '{"kind": "TableResult", "llmsurrogate_ve'
        """
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            write_text_atomic(path, text)
        return text

    def save(self, path: str | Path) -> Path:
        """Write the whole result (every field, the class and the package version) as JSON to
        ``path``, atomically (a crash leaves the old file or the new one, never part of one);
        returns the path. :meth:`load` reads it back equal.

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> path = res.save("means.json")
        >>> path.name, Result.load(path) == res
        ('means.json', True)
        """
        path = Path(path)
        self.to_json(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Result":
        """Read a result written by :meth:`save` (``ErrorCurve.load(p)`` also checks its class).

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> path = res.save("means.json")
        >>> TableResult.load(path).tidy()["x"].tolist()
        [1.0, 2.5]
        """
        path = Path(path)
        if not path.is_file():
            raise InvalidArgumentError(f"argument `path`: no saved result at {path}")
        return cls.from_json(path)

    @classmethod
    def from_json(cls, source: str | Path) -> "Result":
        """Load a result from JSON text or from a file path.

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> Result.from_json(res.to_json()) == res
        True
        """
        text = str(source)
        if not text.lstrip().startswith("{"):
            path = Path(source)
            if not path.exists():
                raise InvalidArgumentError(f"argument `source`: {path} is neither JSON text nor an existing file")
            text = path.read_text()
        return cls.from_dict(json.loads(text))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_equal(getattr(self, f.name), getattr(other, f.name)) for f in dataclasses.fields(self))

    __hash__ = None  # results hold frames: not hashable

    def __repr__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()


@result_dataclass
class TableResult(Result):
    """A titled table with metadata and notes: the simplest result.

    Examples
    --------
    >>> import pandas as pd
    >>> res = TableResult(title="Example", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
    >>> print(res)
    Example
    =======
    seed : 0
    <BLANKLINE>
      x
      1
    2.5
    >>> res.to_frame()["x"].tolist()
    [1.0, 2.5]
    """

    title: str
    table: Any  # pandas.DataFrame
    meta: dict = dataclasses.field(default_factory=dict)
    notes: tuple = ()

    def tidy(self):
        """The table (a copy).

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> res.tidy()
             x
        0  1.0
        1  2.5
        """
        return self.table.copy()

    def summary(self) -> Summary:
        """The title, ``meta`` as facts, the table and the notes.

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.results import Result, TableResult
        >>> res = TableResult(title="Means", table=pd.DataFrame({"x": [1.0, 2.5]}), meta={"seed": 0})
        >>> print(res.summary())
        Means
        =====
        seed : 0
        <BLANKLINE>
          x
          1
        2.5
        """
        return Summary(self.title, facts=self.meta, tables=[("", self.table)], notes=list(self.notes))
