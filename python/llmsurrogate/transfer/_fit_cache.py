"""The transfer fit cache: finished fits of one model on one data set, and the counts of its use.

:func:`~llmsurrogate.transfer.error_table` and friends with ``cache=<folder>`` write every finished
subset fit at once, so a rerun (after an interruption) fits only what is missing. Entries are in
the package's one cache entry format (:mod:`llmsurrogate._store`); a damaged or foreign entry, or an
older release's file, is a counted miss (refitted), never an error.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

from .._store import EntryFormat, cache_folder, entry_name
from ..exceptions import InvalidArgumentError

__all__ = ["CacheStats", "collect_cache_stats", "FIT_FORMAT"]

#: Distributions whose versions can change a fit (besides llmsurrogate itself).
_PRODUCER_DISTS = ("numpy", "scikit-learn")
#: The entry format of a fit: the per-domain MSEs (float64, little-endian), ``meta`` ``{"n": domains}``.
FIT_FORMAT = EntryFormat("transfer-fit", _PRODUCER_DISTS)
#: Files of older releases standing where an entry now is (counted as rejected, left alone).
_LEGACY_SUFFIXES = (".fit", ".npy")


class CacheStats:
    """Counts of one or more builds' cache use: ``hits`` (fits reused), ``computed`` (fits run)
    and ``rejected`` (entries found but not trusted -- damaged, or from other versions -- and
    refitted; included in ``computed``)."""

    def __init__(self):
        self.hits = self.computed = self.rejected = 0

    def __repr__(self) -> str:
        return f"CacheStats(hits={self.hits}, computed={self.computed}, rejected={self.rejected})"


_STATS: list[CacheStats] = []


@contextlib.contextmanager
def collect_cache_stats():
    """``with collect_cache_stats() as stats:`` counts the cache use of the builds inside the block
    (the command line reports it)."""
    stats = CacheStats()
    _STATS.append(stats)
    try:
        yield stats
    finally:
        _STATS.remove(stats)


def _count(field: str, k: int) -> None:
    for stats in _STATS:
        setattr(stats, field, getattr(stats, field) + k)


class _Cache:
    """Finished fits of one model on one data set: ``<root>/<model key>-<data hash>/s<domains>.entry``.

    Each file is an entry of :data:`FIT_FORMAT` (:mod:`llmsurrogate._store`: what produced it -- the
    llmsurrogate, numpy and scikit-learn versions --, the domain count and a BLAKE2b checksum, then
    the values as float64). A file that cannot be read, fails a check, holds a NaN or came from
    other versions is a miss (refitted and replaced) counted in ``rejected``; the ``.fit`` and
    ``.npy`` files of older releases are counted there as well and left alone.
    """

    def __init__(self, root: Any, model_key: str, data_hash: str):
        """``root``: the ``cache=`` argument (None, a folder path or an llm ``Cache``: its folder)."""
        self.dir = None
        self.rejected = 0
        self.folder = f"{model_key}-{data_hash}"
        root = cache_folder(root)
        if root is not None:
            self.dir = os.path.join(os.fspath(root), self.folder)
            try:
                os.makedirs(self.dir, exist_ok=True)
            except OSError as err:
                raise InvalidArgumentError(f"argument `cache`: cannot create {self.dir} ({err.strerror or err})") \
                    from err

    @staticmethod
    def _name(subset) -> str:
        return "s" + "_".join(str(int(d)) for d in subset)

    def _key(self, name: str) -> str:
        return f"{self.folder}/{name}"

    def get(self, subset, n: int) -> np.ndarray | None:
        if self.dir is None:
            return None
        name = self._name(subset)
        legacy = tuple(os.path.join(self.dir, name + s) for s in _LEGACY_SUFFIXES)
        blob, rejected = FIT_FORMAT.lookup(os.path.join(self.dir, entry_name(name)), self._key(name), legacy=legacy,
                                           n=int(n))
        arr = None
        if blob is not None and len(blob) == 8 * n:
            arr = np.frombuffer(blob, dtype="<f8").astype(np.float64)
            if np.isnan(arr).any():
                arr = None
        if arr is None and (rejected or blob is not None):
            self.rejected += 1
        return arr

    def put(self, subset, mse: np.ndarray) -> None:
        if self.dir is None:
            return
        arr = np.ascontiguousarray(mse, dtype="<f8").reshape(-1)
        if np.isnan(arr).any():  # never stored: a NaN read back is always damage
            return
        name = self._name(subset)
        FIT_FORMAT.write(os.path.join(self.dir, entry_name(name)), self._key(name), arr.tobytes(), n=int(arr.size))
