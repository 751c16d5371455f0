"""Transfer-error tables written to a file a block of rows at a time (issue 37, item 3).

* :class:`_TidyFile`: the long table (``train`` or ``train_1..train_r``, ``test``, ``error``; the
  domain labels, as :meth:`ErrorTable.tidy` gives them) written to Parquet in row groups of
  :data:`_OUT_ROWS` rows, or to CSV (plain or compressed) in blocks of as many lines; atomically
  (:func:`~llmsurrogate._atomic.atomic_target`: the temporary file is made at the first block
  written and takes the final name when the table is complete; a failure leaves neither).
* :func:`write_tidy`: an :class:`ErrorTable` in memory written that way.
* :class:`_FitOrderSink`: what ``_build._fit_subsets(..., sink=...)`` feeds with each finished batch
  of fits while ``error_table(..., out=...)`` runs: it writes the rows in the fits' order (training
  set by training set, the test domains outside each in ascending order) as soon as every fit
  before them is in, with the metric, the normalisation and the finiteness check of the in-memory
  build. Held: the batches that came before an earlier fit did (cache hits, parallel results)
  and one row group, never the table.
* :class:`WrittenTable`: what ``error_table(..., out=...)`` returns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._atomic import atomic_target, check_output_file, write_frame
from ..exceptions import ComputationError, InvalidArgumentError

#: Rows per block when a table is written: a Parquet row group (pyarrow's default size, so the file
#: is laid out as ``DataFrame.to_parquet`` lays it out) or a block of CSV lines.
_OUT_ROWS = 1 << 20

#: Compressed CSV by suffix (pandas' names), each written as a stream.
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}

#: Fits turned into long rows at a time (about 65,536 errors: small index temporaries).
_EMIT_ERRORS = 1 << 16


@dataclasses.dataclass(frozen=True)
class WrittenTable:
    """A transfer-error table written to a file by ``error_table(..., out=path)``.

    ``path``: the file; ``rows``: its rows (one per error); ``domains``: the domain labels in the
    build's order; ``r``: training domains per fit; ``training_sets``: the fits written (all
    ``C(n, r)`` when ``complete``, else the sample's size); ``name``, ``metric``: the table's
    (as the in-memory table's). Read it back with ``ErrorTable.from_long(pd.read_parquet(path))``
    (a sample of training sets: the long frame itself).
    """

    path: Path
    rows: int
    domains: list
    r: int
    training_sets: int
    complete: bool
    name: str
    metric: str

    @property
    def n(self) -> int:
        """The number of domains."""
        return len(self.domains)


def _target_format(path: Path, arg: str) -> str:
    """``"parquet"``, ``"csv"`` or the compression of a compressed CSV, from ``path``'s suffix
    (as :func:`~llmsurrogate._atomic.write_frame` reads it); the library it needs is checked now,
    before any fit."""
    suffix = path.suffix.lower()
    if suffix in {".parquet", ".pq"}:
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError as err:
            raise InvalidArgumentError(f"{arg}: writing {path.name} needs pyarrow: pip install pyarrow ({err})") from err
        return "parquet"
    comp = _COMPRESSION.get(suffix)
    if comp == "zstd":
        try:
            import zstandard  # noqa: F401
        except ImportError as err:
            raise InvalidArgumentError(f"{arg}: writing {path.name} (zstandard-compressed CSV) needs zstandard: "
                                       "pip install zstandard, or give a .csv, .csv.gz or .parquet path") from err
    return comp or "csv"


def _one_kind_of_label(labels: list, path: Path, arg: str) -> None:
    """A Parquet column holds one type: the domain labels must all be text or all numbers (else
    pyarrow would fail at the first row group, after the fits)."""
    def kind(v):
        if isinstance(v, str):
            return "text"
        return "number" if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) \
            else type(v).__name__
    kinds = {}
    for v in labels:
        kinds.setdefault(kind(v), v)
    if len(kinds) > 1:
        shown = ", ".join(f"{k} ({v!r})" for k, v in kinds.items())
        raise InvalidArgumentError(f"{arg}: a Parquet column holds one type, but the domain labels mix {shown}; "
                                   f"write CSV instead of {path.name}, or make the labels all text")


class _TidyFile:
    """The long table written to ``path`` a block of ``rows`` rows at a time (default
    :data:`_OUT_ROWS`): rows come in as domain codes (``add(train, test, values)``; ``train``
    ``(k, r)``, ``test`` ``(k,)``, indices into ``labels``) in any pieces, and leave as exact blocks
    of ``rows`` (the last one shorter): each a Parquet row group or a block of CSV lines, the frame
    of each block built as :meth:`ErrorTable.tidy` builds it (so the file is ``to_parquet``'s /
    ``to_csv``'s of the whole frame). A context manager: the atomic target is opened at the first
    block written, completed (flushed, renamed) by a clean exit, removed on an error. The path is
    checked when the object is made (:func:`~llmsurrogate._atomic.check_output_file`: no folder there,
    its folder made if missing and writable), before the fits."""

    def __init__(self, path: Any, labels, r: int, *, rows: int | None = None, arg: str = "argument `out`"):
        self.path = Path(path)
        self.kind = _target_format(self.path, arg)
        self.labels = np.asarray(labels, dtype=object)
        if self.kind == "parquet":
            _one_kind_of_label(list(labels), self.path, arg)
        check_output_file(self.path, arg=arg)  # before any fit: not a folder, its folder writable (made)
        self.r = int(r)
        self.rows = _OUT_ROWS if rows is None else max(1, int(rows))
        self.written = 0
        self._pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._held = 0
        self._stack: contextlib.ExitStack | None = None
        self._out: Any = None
        self._closed = False

    # -- rows in --------------------------------------------------------------------------------
    def add(self, train: np.ndarray, test: np.ndarray, values: np.ndarray) -> None:
        if values.size == 0:
            return
        self._pieces.append((train, test, values))
        self._held += values.size
        while self._held >= self.rows:
            self._write(*self._take(self.rows))

    def _take(self, k: int):
        """The first ``k`` rows held (concatenated only when they span pieces)."""
        first = self._pieces[0]
        if first[2].size >= k:
            parts = [first]
            if first[2].size == k:
                self._pieces.pop(0)
            else:
                parts = [tuple(a[:k] for a in first)]
                self._pieces[0] = tuple(a[k:] for a in first)
        else:
            parts, got = [], 0
            while got < k:
                piece = self._pieces[0]
                need = k - got
                if piece[2].size <= need:
                    parts.append(self._pieces.pop(0))
                    got += piece[2].size
                else:
                    parts.append(tuple(a[:need] for a in piece))
                    self._pieces[0] = tuple(a[need:] for a in piece)
                    got = k
        self._held -= k
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(3))

    # -- blocks out -----------------------------------------------------------------------------
    def _frame(self, train: np.ndarray, test: np.ndarray, values: np.ndarray) -> pd.DataFrame:
        labels = self.labels
        cols = {"train": labels[train[:, 0]]} if self.r == 1 else \
            {f"train_{k + 1}": labels[train[:, k]] for k in range(self.r)}
        cols["test"] = labels[test]
        cols["error"] = values
        return pd.DataFrame(cols)

    def _open(self, frame: pd.DataFrame) -> None:
        stack = contextlib.ExitStack()
        self._stack = stack  # from here on, __exit__ completes or removes the file
        tmp = stack.enter_context(atomic_target(self.path, what="output"))
        if self.kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            part = pa.Table.from_pandas(frame, preserve_index=False)
            writer = pq.ParquetWriter(tmp, part.schema, compression="snappy")
            stack.callback(writer.close)
            self._out = writer
            writer.write_table(part, row_group_size=self.rows)
            return
        self._out = stack.enter_context(self._text_handle(tmp))
        frame.to_csv(self._out, index=False, header=True)

    def _text_handle(self, tmp: Path):
        """A text handle on ``tmp`` that writes the CSV (compressed as the suffix says)."""
        kind = self.kind
        if kind == "csv":
            return open(tmp, "w", newline="", encoding="utf-8")
        if kind in ("gzip", "bz2", "xz"):
            import bz2
            import gzip
            import lzma

            opener = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}[kind]
            return opener(tmp, "wt", newline="", encoding="utf-8")
        if kind == "zip":  # one member, named as the file without .zip (t.csv.zip holds t.csv)
            import zipfile

            @contextlib.contextmanager
            def member():
                with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive, \
                        archive.open(self.path.name[:-4] or "table.csv", "w", force_zip64=True) as raw, \
                        io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
                    yield text
            return member()
        import zstandard

        @contextlib.contextmanager
        def zst():
            with open(tmp, "wb") as raw, zstandard.ZstdCompressor().stream_writer(raw) as comp, \
                    io.TextIOWrapper(comp, encoding="utf-8", newline="") as text:
                yield text
        return zst()

    def _write(self, train: np.ndarray, test: np.ndarray, values: np.ndarray) -> None:
        frame = self._frame(train, test, values)
        if self._stack is None:
            self._open(frame)
        elif self.kind == "parquet":
            import pyarrow as pa

            self._out.write_table(pa.Table.from_pandas(frame, preserve_index=False), row_group_size=self.rows)
        else:
            frame.to_csv(self._out, index=False, header=False)
        self.written += values.size

    # -- the whole file -------------------------------------------------------------------------
    def __enter__(self) -> _TidyFile:
        return self

    def close(self) -> None:
        """Write what is held and complete the file (at least its header: a table is never empty)."""
        if self._held:
            self._write(*self._take(self._held))
        if self._stack is None:
            raise ComputationError(f"internal error: no rows to write to {self.path}")
        stack, self._stack = self._stack, None
        self._closed = True
        stack.close()

    def __exit__(self, kind, value, tb) -> bool:
        if kind is None:
            if not self._closed:
                try:
                    self.close()
                except BaseException as err:
                    self._abort(type(err), err, err.__traceback__)
                    raise
            return False
        return self._abort(kind, value, tb)

    def _abort(self, kind, value, tb) -> bool:
        """Close what is open and remove the temporary file (:func:`atomic_target` on an error)."""
        self._pieces, self._held = [], 0
        if self._stack is None:
            return False
        stack, self._stack = self._stack, None
        return bool(stack.__exit__(kind, value, tb))


def write_tidy(table: Any, path: Any, *, rows: int | None = None) -> None:
    """Write ``table.tidy()`` (``train``/``train_1..train_r``, ``test``, ``error``; domain labels)
    to ``path`` -- Parquet for ``.parquet``/``.pq``, else CSV -- atomically, ``rows`` rows at a time
    (default :data:`_OUT_ROWS`; a Parquet row group each), so that the long frame with its label
    columns is never held whole (at 62 million errors it is larger than the table). The file equals
    ``write_frame(path, table.tidy())``'s; a compressed CSV (``.gz``, ...) is written that way, whole."""
    path = Path(path)
    if path.suffix.lower() in _COMPRESSION:
        write_frame(path, table.tidy())
        return
    with _TidyFile(path, table.domains, table.r, rows=rows, arg="output") as out:
        step = out.rows
        for lo in range(0, table.N, step):
            out.add(table.train[lo:lo + step], table.test[lo:lo + step], table.values[lo:lo + step])


class _FitOrderSink:
    """Takes the MSE rows of finished fits (``sink(idx, rows)``: ``idx`` positions in ``combos``,
    ``rows`` their ``(len(idx), n)`` MSEs on every domain; batches in any order) and writes the
    errors to ``out`` (a :class:`_TidyFile`) in the fits' order: fit by fit, the test domains
    outside the training set in ascending order. A batch that comes before an earlier fit's is
    held until that one is in; the contiguous prefix is written at once, with the error on the
    ``metric`` scale (``"rmse"``: the square root) divided by ``divisor[test]`` when given (the
    in-sample error on the test domain: the normalisations), the same floating operations as the
    in-memory build. The first non-finite error in that order raises ``non_finite(value, train,
    test)`` (the in-memory build's message). With ``hold=True`` nothing is written until
    :meth:`release` gives the divisor (``r = 1``: the in-sample fits are fits of the table,
    :meth:`diagonal`)."""

    def __init__(self, out: _TidyFile, combos: np.ndarray, n: int, *, metric: str,
                 non_finite: Callable[[float, np.ndarray, int], Exception], divisor: np.ndarray | None = None,
                 hold: bool = False):
        self.out = out
        self.combos = np.asarray(combos, dtype=np.int64)
        self.n, self.r = int(n), self.combos.shape[1]
        self.metric = metric
        self.non_finite = non_finite
        self.divisor = divisor
        self.hold = hold
        self.next = 0  # the first fit not yet written
        self.pending: dict[int, np.ndarray] = {}
        self.step = max(1, _EMIT_ERRORS // max(self.n, 1))

    def __call__(self, idx, rows) -> None:
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        rows = np.asarray(rows, dtype=np.float64)
        if idx.size == 0:
            return
        if not self.hold and idx[0] == self.next and (idx.size == 1 or bool(np.all(np.diff(idx) == 1))):
            self._emit(self.next, rows)  # the next fits, in order: written at once
            self.next += idx.size
        else:
            for j, i in enumerate(idx.tolist()):
                self.pending[i] = rows[j]
        self._drain()

    def _drain(self) -> None:
        if self.hold:
            return
        while self.next in self.pending:
            end = self.next
            while end in self.pending and end - self.next < self.step:
                end += 1
            block = np.stack([self.pending.pop(i) for i in range(self.next, end)])
            self._emit(self.next, block)
            self.next = end

    def _emit(self, start: int, mse: np.ndarray) -> None:
        """The rows of fits ``start, start + 1, ...`` (``mse``: their MSE rows), a few at a time."""
        n, r = self.n, self.r
        for lo in range(0, mse.shape[0], self.step):
            block = mse[lo:lo + self.step]
            k = block.shape[0]
            sub = self.combos[start + lo:start + lo + k]
            mask = np.ones((k, n), dtype=bool)
            mask[np.arange(k)[:, None], sub] = False  # each training set's own domains left out
            vals = np.ascontiguousarray(block[mask], dtype=np.float64)
            test = np.nonzero(mask)[1].astype(np.int64)
            if self.metric == "rmse":
                np.sqrt(vals, out=vals)
            if self.divisor is not None:
                np.divide(vals, self.divisor[test], out=vals)
            bad = np.flatnonzero(~np.isfinite(vals))
            if bad.size:
                i = int(bad[0])
                raise self.non_finite(vals[i], sub[i // (n - r)], int(test[i]))
            self.out.add(np.repeat(sub, n - r, axis=0), test, vals)

    def diagonal(self) -> np.ndarray:
        """While held, with ``combos`` the ``n`` single domains in order (``r = 1``, every training
        set): each domain's in-sample MSE (its own fit evaluated on it)."""
        return np.array([self.pending[d][d] for d in range(self.n)])

    def release(self, divisor: np.ndarray | None) -> None:
        """Stop holding: write everything held, divided by ``divisor`` (None: not divided)."""
        self.divisor = divisor
        self.hold = False
        self._drain()

    def finish(self) -> int:
        """Check that every fit was written; the number of rows."""
        if self.hold:
            self.release(self.divisor)
        if self.next != self.combos.shape[0] or self.pending:
            raise ComputationError(f"internal error: {self.next} of {self.combos.shape[0]} fits written")
        return self.combos.shape[0] * (self.n - self.r)
