"""Order statistics of error tables that do not fit in memory (issue 37, item 2): a square matrix
in a ``.npy`` file or a ``numpy.memmap``, a long table in a Parquet file, or either as a Dask
collection. :func:`forecast_interval` and :func:`qte_interval` read them in chunks.

The selection is exact and streams (docs/methods/transfer.md A2): each error's order key (its
``f64::total_cmp`` order as an unsigned 64-bit integer) is counted by its top 16 bits in a first
pass, which also checks the table (no missing or infinite error; in a long table, every test domain
``C(n - 1, r)`` times and no test domain among its training domains). Each wanted rank then lies in
one bucket; a bucket holding more than its share of :data:`BUDGET` errors is split by its next 12
bits in another pass, until every wanted bucket is small (or one value); a last pass collects the
wanted buckets' errors and each rank is read off their sorted keys. So two to four passes over the
data, and memory of :data:`BUDGET` errors and a few histograms, whatever the table's size; the values are those the sorted
table holds at those ranks, bit for bit.

Where each source is read: a ``.npy`` file by its rows, a chunk at a time from the file (never
mapped whole, so an address-space limit below the file's size is fine); a ``numpy.memmap`` by its
rows; a Parquet file by its row groups (only the error column after the first pass); a Dask array
or dataframe by its own blocks or partitions, each pass one Dask computation (``to_delayed``, so
the user's scheduler or cluster runs it). A table in memory (ndarray, frame, ``ErrorTable``) does
not come here: it is selected in one step (``_common._order_statistics``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from ..exceptions import InvalidArgumentError, NonFiniteError, ShapeError

#: Errors kept in memory for the last, exact step, all wanted ranks together (32 MB): a wanted
#: bucket is split further while it holds more than its share.
BUDGET = 1 << 22
#: Values per chunk read from a file (64 MB of float64).
CHUNK = 1 << 23
_FIRST_BITS, _NEXT_BITS = 16, 12   # (histograms of 65,536 and 4,096 counts per wanted bucket)
_TOP = (1 << 64) - 1


def is_streamed(err: Any) -> bool:
    """Whether ``err`` is read in chunks here: a path to a ``.npy`` or ``.parquet`` file, a 2-D
    ``numpy.memmap``, or a Dask array or dataframe."""
    if isinstance(err, (str, os.PathLike)):
        return Path(err).suffix.lower() in (".npy", ".parquet", ".pq")
    if isinstance(err, np.memmap):
        return err.ndim == 2
    return type(err).__module__.split(".")[0] == "dask"


class Streamed:
    """An error table read in chunks: ``n`` domains, ``r`` training domains per error, ``N`` errors,
    and ``chunks`` of float64 errors (a matrix's diagonal marked NaN), each call a new pass."""

    def __init__(self, n: int, r: int, N: int, arg: str) -> None:  # noqa: N803
        self.n, self.r, self.N, self.arg = n, r, N, arg
        self.diagonal = 0   # NaN cells marked per pass (a matrix's diagonal)

    def reduce(self, per_chunk: Callable[[np.ndarray], Any], combine: Callable[[Any, Any], Any]) -> Any:
        raise NotImplementedError

    def first_bad(self) -> str:
        """Where the first missing or infinite error is (for the error message)."""
        raise NotImplementedError


# ---- sources ---------------------------------------------------------------------------------------

def _mark_diagonal(block: np.ndarray, row0: int, col0: int, owned: bool = False) -> np.ndarray:
    """``block`` (rows ``row0...``, columns ``col0...`` of a square matrix) as float64, a copy
    unless ``owned`` (a buffer read for this pass, float64 already), with the matrix's diagonal
    cells in it set to NaN."""
    reuse = owned and block.dtype == np.float64 and block.flags.c_contiguous
    out = block if reuse else np.array(block, dtype=np.float64, order="C")
    lo, hi = max(row0, col0), min(row0 + out.shape[0], col0 + out.shape[1])
    if lo < hi:
        idx = np.arange(lo, hi)
        out[idx - row0, idx - col0] = np.nan
    return out


def _first_bad_cell(block: np.ndarray, row0: int, col0: int) -> tuple[int, int, float] | None:
    marked = _mark_diagonal(block, row0, col0)
    bad = ~np.isfinite(marked)
    lo, hi = max(row0, col0), min(row0 + marked.shape[0], col0 + marked.shape[1])
    if lo < hi:
        idx = np.arange(lo, hi)
        bad[idx - row0, idx - col0] = False
    where = np.argwhere(bad)
    if not where.size:
        return None
    i, j = where[0]
    return int(i + row0), int(j + col0), float(marked[i, j])


class MatrixFile(Streamed):
    """A square matrix ``E[train, test]`` in a ``.npy`` file, read a chunk of rows at a time (a
    Fortran-ordered file a chunk of columns: the off-diagonal cells are the same)."""

    def __init__(self, path: Any, arg: str) -> None:
        self.path = Path(path)
        try:
            with open(self.path, "rb") as f:
                version = np.lib.format.read_magic(f)
                read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                shape, fortran, dtype = read.get(version, lambda f: np.lib.format._read_array_header(f, version))(f)
                self.offset = f.tell()
        except (OSError, ValueError) as err:
            raise InvalidArgumentError(f"argument `{arg}`: cannot read {self.path} as a .npy file; {err}") from err
        if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
            raise ShapeError(f"argument `{arg}`: {self.path.name} must hold a square n x n matrix [train, test] "
                             f"(n >= 2); got shape {shape}")
        if not ((dtype.kind == "f" and dtype.itemsize <= 8) or (dtype.kind in "iu" and dtype.itemsize <= 4)):
            raise InvalidArgumentError(f"argument `{arg}`: {self.path.name} must hold float64 (or float32, or "
                                       f"integers of at most 4 bytes, which float64 holds exactly); got dtype {dtype}")
        n = int(shape[0])
        super().__init__(n, 1, n * (n - 1), arg)
        self.fortran, self.dtype = bool(fortran), dtype
        self.diagonal = n

    def _blocks(self) -> Iterator[tuple[np.ndarray, int]]:
        n = self.n
        rows = max(1, CHUNK // n)
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            for row0 in range(0, n, rows):
                count = min(rows, n - row0) * n
                block = np.fromfile(f, dtype=self.dtype, count=count)
                if block.size != count:
                    raise InvalidArgumentError(f"argument `{self.arg}`: {self.path.name} ends early (truncated file)")
                yield block.reshape(-1, n), row0

    owned = True   # the blocks are read from the file for the pass

    def reduce(self, per_chunk, combine):
        out = None
        for block, row0 in self._blocks():   # (rows of the transpose when Fortran-ordered)
            part = per_chunk(_mark_diagonal(block, row0, 0, self.owned).reshape(-1))
            out = part if out is None else combine(out, part)
        return out

    def first_bad(self):
        for block, row0 in self._blocks():
            found = _first_bad_cell(block, row0, 0)
            if found:
                i, j, v = found
                train, test = (j, i) if self.fortran else (i, j)
                return f"the error for train={train}, test={test} is {_what(v)}"
        return "a missing error"


class MatrixMemmap(MatrixFile):
    """A square matrix held by a ``numpy.memmap`` (already mapped by the caller), read by rows."""

    def __init__(self, m: np.memmap, arg: str) -> None:
        if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
            raise ShapeError(f"argument `{arg}` must be a square n x n matrix [train, test]; got shape {m.shape}")
        n = int(m.shape[0])
        Streamed.__init__(self, n, 1, n * (n - 1), arg)
        self.m, self.fortran, self.diagonal, self.owned = m, False, n, False   # (the caller's memory: copied)

    def _blocks(self):
        rows = max(1, CHUNK // self.n)
        for row0 in range(0, self.n, rows):
            yield np.asarray(self.m[row0:row0 + rows]), row0


class DaskMatrix(Streamed):
    """A square Dask array: each pass is one Dask computation over its blocks."""

    def __init__(self, a: Any, arg: str) -> None:
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 2 or any(math.isnan(s) for s in a.shape):
            raise ShapeError(f"argument `{arg}` must be a square n x n Dask array [train, test]; got shape {a.shape}")
        n = int(a.shape[0])
        super().__init__(n, 1, n * (n - 1), arg)
        self.a, self.diagonal = a, n

    def _parts(self, fn):
        import dask

        starts = [np.cumsum((0,) + c)[:-1] for c in self.a.chunks]
        blocks = self.a.to_delayed()
        return [dask.delayed(fn)(blocks[i, j], int(starts[0][i]), int(starts[1][j]))
                for i in range(blocks.shape[0]) for j in range(blocks.shape[1])]

    def reduce(self, per_chunk, combine):
        import dask

        parts = self._parts(lambda b, r0, c0: per_chunk(_mark_diagonal(b, r0, c0).reshape(-1)))
        return dask.delayed(_fold)(combine, *parts).compute()

    def first_bad(self):
        import dask

        found = [f for f in dask.compute(*self._parts(_first_bad_cell)) if f]
        if found:
            i, j, v = min(found, key=lambda f: (f[1], f[0]))
            return f"the error for train={i}, test={j} is {_what(v)}"
        return "a missing error"


def _fold(combine, *parts):
    out = parts[0]
    for p in parts[1:]:
        out = combine(out, p)
    return out


class LongParquet(Streamed):
    """A long table (``train`` or ``train_1..train_r``, ``test``, ``error``) in a Parquet file, read
    by row groups; the domain columns only in the first pass (the checks)."""

    def __init__(self, path: Any, arg: str) -> None:
        from .._optional import require

        pq = require("pyarrow.parquet", purpose="reading a Parquet error table")
        self.path = Path(path)
        try:
            self.file = pq.ParquetFile(self.path)
        except (OSError, ValueError) as err:
            raise InvalidArgumentError(f"argument `{arg}`: cannot read {self.path} as a Parquet file; {err}") from err
        names = self.file.schema_arrow.names
        self.train = [c for c in names if c.startswith("train")]
        self.error = "error" if "error" in names else names[-1]
        if "test" not in names or not self.train:
            raise InvalidArgumentError(f"argument `{arg}`: {self.path.name} needs columns train (or train_1, ...), test "
                                       f"and error; it has {names}")
        n, r, N = _check_long(self._domain_batches(), len(self.train), arg)  # noqa: N806
        super().__init__(n, r, N, arg)

    def _domain_batches(self):
        for batch in self.file.iter_batches(columns=[*self.train, "test"]):
            yield batch.to_pandas()

    def _errors(self):
        """The error column, a batch of float64 values at a time."""
        for batch in self.file.iter_batches(columns=[self.error], batch_size=CHUNK):
            yield np.ascontiguousarray(batch.column(0).to_numpy(zero_copy_only=False), dtype=np.float64)

    def reduce(self, per_chunk, combine):
        out = None
        for values in self._errors():
            part = per_chunk(values)
            out = part if out is None else combine(out, part)
        return out

    def first_bad(self):
        row = 0
        for values in self._errors():
            bad = np.flatnonzero(~np.isfinite(values))
            if bad.size:
                return f"the error in row {row + int(bad[0]) + 1} is {_what(values[bad[0]])}"
            row += values.size
        return "a missing error"


class DaskLong(Streamed):
    """A long Dask dataframe: each pass one Dask computation over its partitions."""

    def __init__(self, df: Any, arg: str) -> None:
        names = [str(c) for c in df.columns]
        self.train = [c for c in names if c.startswith("train")]
        self.error = "error" if "error" in names else names[-1]
        if "test" not in names or not self.train:
            raise InvalidArgumentError(f"argument `{arg}` needs columns train (or train_1, ...), test and error; it "
                                       f"has {names}")
        self.df = df
        import dask

        parts = df[[*self.train, "test"]].to_delayed()
        n, r, N = _check_long(dask.compute(*parts), len(self.train), arg)  # noqa: N806  (domains: one pass)
        super().__init__(n, r, N, arg)

    def reduce(self, per_chunk, combine):
        import dask

        parts = [dask.delayed(lambda s: per_chunk(np.ascontiguousarray(s.to_numpy(dtype=np.float64))))(p)
                 for p in self.df[self.error].to_delayed()]
        return dask.delayed(_fold)(combine, *parts).compute()

    def first_bad(self):
        return "a missing or infinite error"


def _check_long(batches, r: int, arg: str) -> tuple[int, int, int]:
    """(n, r, N) of a long table read in batches of its domain columns: no missing domain, no test
    domain among its training domains, every test domain C(n - 1, r) times."""
    import pandas as pd

    counts: dict = {}
    labels: set = set()
    rows = 0
    for frame in batches:
        frame = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
        cols = [c for c in frame.columns if str(c).startswith("train")]
        if frame[[*cols, "test"]].isna().to_numpy().any():
            raise InvalidArgumentError(f"argument `{arg}`: the domain columns have missing values")
        clash = np.flatnonzero((frame[cols].to_numpy() == frame[["test"]].to_numpy()).any(axis=1))
        if clash.size:
            raise InvalidArgumentError(f"argument `{arg}`: row {rows + int(clash[0]) + 1} has its test domain among its "
                                       "training domains")
        for label, c in frame["test"].value_counts(sort=False).items():
            counts[label] = counts.get(label, 0) + int(c)
        for c in cols:
            labels.update(frame[c].unique().tolist())
        rows += len(frame)
    labels.update(counts)
    n = len(labels)
    if n <= r:
        raise InvalidArgumentError(f"argument `{arg}`: need more domains than training domains (n > r); got n = {n}, "
                                   f"r = {r}")
    each = math.comb(n - 1, r)
    short = [d for d in labels if counts.get(d, 0) != each]
    if short or rows != n * each:
        d = short[0] if short else next(iter(labels))
        raise ShapeError(f"argument `{arg}`: {rows} errors, but {n} domains with r = {r} need {n * each} (each test "
                         f"domain with each of the C({n - 1}, {r}) training sets); test domain {d!r} has "
                         f"{counts.get(d, 0)} of {each}")
    return n, r, rows


def _what(v: float) -> str:
    return "missing (NaN)" if np.isnan(v) else f"not finite ({v})"


def streamed(err: Any, arg: str = "err") -> Streamed:
    """The :class:`Streamed` source of ``err`` (see :func:`is_streamed`)."""
    if isinstance(err, (str, os.PathLike)):
        if not Path(err).exists():
            raise InvalidArgumentError(f"argument `{arg}`: no file {err}")
        if Path(err).suffix.lower() == ".npy":
            return MatrixFile(err, arg)
        return LongParquet(err, arg)
    if isinstance(err, np.memmap):
        return MatrixMemmap(err, arg)
    if hasattr(err, "columns"):
        return DaskLong(err, arg)
    return DaskMatrix(err, arg)


# ---- the selection ---------------------------------------------------------------------------------

def _from_keys(keys: np.ndarray) -> np.ndarray:
    """The float64 values of order keys (the inverse of ``total_order_key``)."""
    keys = np.asarray(keys, dtype=np.uint64)
    top = np.uint64(1 << 63)
    bits = np.where(keys & top, keys & ~top, ~keys)
    return bits.view(np.float64)


def _aligned(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` as a C-contiguous, aligned array of ``dtype`` (what the Rust kernels take), copied only
    when it is not: on a Dask cluster the arrays a task carries arrive unpickled from a buffer and
    may be misaligned (a 60 x 60 matrix's pass failed with "not contiguous or misaligned")."""
    return np.require(a, dtype=dtype, requirements=["C", "A"])


def _keys(values: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    top = np.uint64(1 << 63)
    return np.where(bits & top, ~bits, bits | top)


def order_statistics(src: Streamed, ranks: Any) -> np.ndarray:
    """The values at the 1-based ``ranks`` (0: -inf, N + 1: +inf) of the errors of ``src``, by
    the streamed selection of this module's docstring; bit for bit the sorted table's."""
    ranks = np.asarray(ranks, dtype=np.int64)
    wanted = sorted({int(r) for r in ranks.tolist() if 1 <= r <= src.N})
    # per wanted rank: [prefix, shift, rank within the prefix's errors, their count]
    state = {r: [0, 64, r, src.N] for r in wanted}
    share = max(BUDGET // max(len(wanted), 1), 1)
    first = True
    while True:
        todo = [r for r in wanted if first or (state[r][3] > share and state[r][1] > 0)]
        if not todo:
            break
        groups: dict[int, list[int]] = {}
        for r in todo:
            groups.setdefault(state[r][1], []).append(state[r][0])
        plan = [(shift, np.array(sorted(set(p)), dtype=np.uint64), min(_FIRST_BITS if shift == 64 else _NEXT_BITS, shift))
                for shift, p in sorted(groups.items())]

        def count(chunk, plan=plan):
            chunk = _aligned(chunk, np.float64)
            return [_core.transfer_key_histogram(chunk, _aligned(prefixes, np.uint64), shift, bits)
                    for shift, prefixes, bits in plan]

        def add(a, b):
            return [(x[0] + y[0], x[1] + y[1], x[2] + y[2]) for x, y in zip(a, b)]

        found = src.reduce(count, add)
        if first:
            _check_first_pass(src, found[0])
        for (shift, prefixes, bits), (counts, _, _) in zip(plan, found):
            rows = counts.reshape(prefixes.size, 1 << bits)
            cums = np.cumsum(rows, axis=1)
            for r in todo:
                p, s, within, _ = state[r]
                if s != shift:
                    continue
                i = int(np.searchsorted(prefixes, np.uint64(p)))
                row, cum = rows[i], cums[i]
                b = int(np.searchsorted(cum, within))   # first bucket whose cumulative count reaches `within`
                state[r] = [(p << bits) | b, s - bits, within - (int(cum[b - 1]) if b else 0), int(row[b])]
        first = False
    values: dict[int, float] = {}
    ranges = sorted({(p << s, min((p + 1) << s, _TOP)) for p, s, _, _ in state.values() if s > 0})
    if ranges:
        lo = np.array([a for a, _ in ranges], dtype=np.uint64)
        hi = np.array([b for _, b in ranges], dtype=np.uint64)
        kept = src.reduce(lambda chunk: _core.transfer_key_collect(_aligned(chunk, np.float64), _aligned(lo, np.uint64),
                                                                   _aligned(hi, np.uint64)),
                          lambda a, b: np.concatenate([a, b]))
        keys = np.sort(_keys(kept))
    for r in wanted:
        p, s, within, _ = state[r]
        if s == 0:
            values[r] = float(_from_keys(np.array([p]))[0])
        else:
            start = int(np.searchsorted(keys, np.uint64(p << s)))
            values[r] = float(_from_keys(keys[start + within - 1:start + within])[0])
    return np.array([values[r] if r in values else (-np.inf if r <= 0 else np.inf) for r in ranks.tolist()])


def _check_first_pass(src: Streamed, first: tuple) -> None:
    counts, nan, inf = first
    total = int(counts.sum())
    if nan != src.diagonal or inf:
        raise NonFiniteError(f"argument `{src.arg}`: {src.first_bad()}; every (train, test) combination needs a "
                             "finite error")
    if total != src.N:  # (a stream that changed between passes, or a miscount)
        raise ShapeError(f"argument `{src.arg}`: read {total} errors where {src.N} were expected")
