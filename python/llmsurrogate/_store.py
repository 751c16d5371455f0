"""The one cache entry format: what produced an entry, a checksum, a format tag.

Every cache of the package stores its entries this way -- the LLM outputs (rows of the SQLite file
of :mod:`llmsurrogate.llm.cache`), the transfer-table fits (:mod:`llmsurrogate.transfer._fit_cache`)
and the ESS command line's finished grid points (:mod:`llmsurrogate.ess._cli`):

* the **producer**: the versions of llmsurrogate and of the distributions that can change the value
  (:func:`llmsurrogate._atomic.producer`), as canonical JSON (:func:`canonical`);
* a **checksum**: BLAKE2b over the entry's key, its producer and its payload
  (:func:`llmsurrogate._atomic.checksum`);
* a **format tag** naming the kind of entry (``"transfer-fit"``, ``"ess-point"``, ...).

An entry is trusted only when its producer equals this process's and its checksum matches. Anything
else -- damaged, truncated, written by other versions, of another kind, or in an older release's
format -- is a *miss*: the caller recomputes the value, overwrites the entry and counts it in its
``rejected`` statistics. Reading an entry never raises for what is in it.

A SQLite row holds the fields in columns (key, producer, checksum, payload; the table is the tag). A
file entry (:meth:`EntryFormat.write`, :meth:`EntryFormat.lookup`) is named ``<key>.entry`` and holds three parts::

    LLMSURROGATE-CACHE-ENTRY 1\\n
    {"checksum": "...", "format": "<tag>", "producer": {...}, ...}\\n     (canonical JSON header)
    <payload bytes>

>>> import tempfile, pathlib
>>> fmt = EntryFormat("demo", ("numpy",))
>>> with tempfile.TemporaryDirectory() as d:
...     path = pathlib.Path(d) / entry_name("x")
...     fmt.write(path, "x", b"payload", n=7)
...     hit = fmt.read(path, "x", n=7)
...     miss = fmt.read(path, "y", n=7)   # another key: the checksum does not match
...     other = EntryFormat("other", ("numpy",)).read(path, "x", n=7)   # another kind of entry
>>> hit, miss, other
(b'payload', None, None)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ._atomic import checksum, producer, write_bytes
from .exceptions import InvalidArgumentError

__all__ = ["EntryFormat", "canonical", "entry_name", "cache_folder", "MAGIC", "SUFFIX"]

#: First line of every file entry (the version of the file layout).
MAGIC = b"LLMSURROGATE-CACHE-ENTRY 1"
#: File name suffix of file entries.
SUFFIX = ".entry"


def canonical(obj: Any) -> str:
    """Canonical JSON text of ``obj`` (sorted keys, no spaces; anything else as ``str``)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def entry_name(key: str) -> str:
    """The file name of the entry ``key``."""
    return key + SUFFIX


def cache_folder(cache: Any) -> Path | None:
    """The folder of a ``cache=`` argument, which means one thing everywhere: ``None`` (no cache), a
    folder path (str or PathLike), or an :class:`llmsurrogate.llm.cache.Cache` (its folder; a file
    store such as the transfer fits then lives beside the LLM outputs)."""
    if cache is None:
        return None
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache)
    if hasattr(cache, "directory") and hasattr(cache, "get_many"):  # a Cache (NullCache: no folder)
        return None if cache.directory is None else Path(cache.directory)
    raise InvalidArgumentError(f"argument `cache` must be None, a directory path or a Cache; got {type(cache).__name__}")


class EntryFormat:
    """One kind of cache entry: its ``tag`` and the distributions (besides llmsurrogate) whose
    versions can change its value."""

    def __init__(self, tag: str, dists: tuple[str, ...] = ()):
        self.tag = str(tag)
        self.dists = tuple(dists)
        self._producer: dict[str, str | None] | None = None

    def __repr__(self) -> str:
        return f"EntryFormat({self.tag!r}, {self.dists!r})"

    @property
    def producer(self) -> dict[str, str | None]:
        """``{"llmsurrogate": version, dist: version or None, ...}`` of this process."""
        if self._producer is None:
            self._producer = producer(*self.dists)
        return dict(self._producer)

    @property
    def producer_text(self) -> str:
        """:attr:`producer` as canonical JSON: what a row stores and what a trusted entry must hold."""
        return canonical(self.producer)

    # ---------------------------------------------------------------- fields (rows and files)
    @staticmethod
    def checksum(key: str, producer_text: str, *parts: bytes | str) -> str:
        """The checksum of an entry: BLAKE2b over its key, its producer text and its payload parts."""
        return checksum(key, producer_text, *parts)

    def trusted(self, key: str, producer_text: Any, check: Any, *parts: Any, expect: str | None = None) -> bool:
        """Whether an entry's stored ``producer_text`` and ``check`` are those of this process (or of
        ``expect``, a producer text of the caller's own) for ``key`` and ``parts``."""
        want = self.producer_text if expect is None else expect
        if producer_text != want or not isinstance(check, str):
            return False
        if not all(isinstance(p, (bytes, str)) for p in parts):
            return False
        return check == self.checksum(key, producer_text, *parts)

    # ---------------------------------------------------------------- files
    def encode(self, key: str, payload: bytes, **meta: Any) -> bytes:
        """The bytes of the file entry ``key`` holding ``payload`` (``meta``: JSON fields checked on
        reading, e.g. a size)."""
        payload = bytes(payload)
        meta_text = canonical(meta)
        head = {"format": self.tag, "producer": self.producer, "meta": meta,
                "checksum": self.checksum(key, self.producer_text, self.tag, meta_text, payload)}
        return MAGIC + b"\n" + canonical(head).encode("utf-8") + b"\n" + payload

    def decode(self, key: str, raw: bytes, **meta: Any) -> bytes | None:
        """The payload of a file entry's bytes, or None when it is not trusted (damaged, another
        format, kind, key, producer or ``meta``)."""
        magic, sep, rest = raw.partition(b"\n")
        if magic != MAGIC or not sep:
            return None
        head_text, sep, payload = rest.partition(b"\n")
        if not sep:
            return None
        try:
            head = json.loads(head_text)
            if not isinstance(head, dict) or head.get("format") != self.tag:
                return None
            if canonical(head.get("meta")) != canonical(meta):
                return None
            if not self.trusted(key, canonical(head.get("producer")), head.get("checksum"), self.tag,
                                canonical(meta), payload):
                return None
        except (ValueError, TypeError, RecursionError):
            return None
        return payload

    def write(self, path: str | os.PathLike, key: str, payload: bytes, **meta: Any) -> None:
        """Write the file entry atomically (:func:`llmsurrogate._atomic.write_bytes`)."""
        write_bytes(path, self.encode(key, payload, **meta), what="cache entry")

    def read(self, path: str | os.PathLike, key: str, **meta: Any) -> bytes | None:
        """The payload of the file entry at ``path``; None when the file is missing, unreadable or
        not trusted (tell a missing file from a rejected one with :meth:`lookup`)."""
        return self.lookup(path, key, **meta)[0]

    def lookup(self, path: str | os.PathLike, key: str, *, legacy: tuple[str | os.PathLike, ...] = (),
               **meta: Any) -> tuple[bytes | None, bool]:
        """``(payload or None, rejected)``: ``rejected`` is True when an entry was found but not
        trusted -- the file at ``path`` is unreadable or fails a check, or it is missing and an
        older release's file (``legacy`` paths) stands in its place. Never raises for a file's content."""
        try:
            raw = Path(path).read_bytes()
        except FileNotFoundError:
            return None, any(os.path.exists(p) for p in legacy)
        except OSError:
            return None, True
        payload = self.decode(key, raw, **meta)
        return payload, payload is None
