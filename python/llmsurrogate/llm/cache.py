"""On-disk cache of every LLM output (SQLite in WAL mode).

Each entry is keyed by a SHA-256 over (backend, model identity -- which holds the weights
fingerprint or revision and the dtype --, prompt text, template version, decoding parameters) and
holds an array. Every entry is a row of the package's one cache entry format
(:mod:`llmsurrogate._store`): what produced it (``producer``: the llmsurrogate, torch, transformers
and vllm versions installed when it was computed) and a BLAKE2b ``checksum`` over its key,
producer, dtype and bytes. An entry read back with another producer, a wrong checksum or
a NaN is not trusted: it is a miss, recomputed and overwritten, and counted in ``Cache.rejected``
(:func:`cached_batches` also warns). A database file SQLite cannot read (truncated, garbage)
raises :class:`CacheCorruptError`, naming the file: move it aside (or delete it) and run again to
start a new cache -- the package never moves or deletes a user's cache on its own. A full disk
raises a :class:`~llmsurrogate.exceptions.ComputationError` that says so (finished batches stay).

Writes happen one transaction per batch, so a
run killed at any point keeps every finished batch and, started again, redoes no finished
prompt. Several processes may read and write one cache at the same time: SQLite's WAL mode
serialises writers (``busy_timeout`` waits for the lock) and ``INSERT OR REPLACE`` makes a
duplicate write of an identical result harmless (and repairs a rejected entry). No prompt is
computed by two of them: :func:`cached_batches` claims the prompts it is about to compute (the
``claims`` table) and waits for those another live process has claimed, taking them over when
that process is gone (killed: its process id no longer runs on this host, or its claims were not
renewed for :data:`CLAIM_LEASE` seconds).

>>> import tempfile, numpy as np
>>> with tempfile.TemporaryDirectory() as d:
...     cache = Cache(d)
...     k = cache.key(backend="fake", model="m", prompt="p", template="t", params={"ids": [1, 2]})
...     cache.put_many([(k, np.array([0.5, 0.25], dtype=np.float32))])
...     cache.get_many([k])[k].tolist()
[0.5, 0.25]
"""

from __future__ import annotations

import collections
import contextlib
import copy
import hashlib
import itertools
import os
import socket
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._progress import progress_reporter
from .._store import EntryFormat, canonical
from ..exceptions import ComputationError, InvalidArgumentError, LLMSurrogateWarning

__all__ = ["Cache", "NullCache", "as_cache", "using_cache", "cached_batches", "cached_rows", "cached_stream",
           "CacheCorruptError", "entry_producer"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outputs (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    dtype TEXT NOT NULL,
    value BLOB NOT NULL,
    created REAL NOT NULL,
    producer TEXT NOT NULL DEFAULT '',
    checksum TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    renewed REAL NOT NULL
) WITHOUT ROWID;
"""

#: Seconds after which a claim that was not renewed (each commit of its owner renews them) is
#: taken over, whether or not its owner still runs (another host's process cannot be checked).
CLAIM_LEASE = 600.0
_CLAIM_POLL = 0.2  # seconds between looks at prompts another process is computing
_HOST = socket.gethostname()

#: The installed distributions whose versions can change an LLM output (the weights fingerprint,
#: dtype and device-independent identity are part of the key already).
PRODUCER_DISTS = ("torch", "transformers", "vllm")
#: The entry format of the rows (:mod:`llmsurrogate._store`).
ENTRY_FORMAT = EntryFormat("llm-output", PRODUCER_DISTS)


class CacheCorruptError(ComputationError):
    """The cache's SQLite file cannot be read (truncated, overwritten, not a database)."""


def entry_producer() -> str:
    """The producer string stored with (and required of) every entry written by this process.

    Examples
    --------
    >>> import json
    >>> sorted(json.loads(entry_producer()))  # each one's installed version (null: not installed)
    ['llmsurrogate', 'torch', 'transformers', 'vllm']
    """
    return ENTRY_FORMAT.producer_text


def _entry_checksum(key: str, prod: str, dtype: str, blob: bytes) -> str:
    return ENTRY_FORMAT.checksum(key, prod, dtype, blob)


def _has_nan(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "fc" and bool(np.isnan(arr).any())


def _retry_locked(action, attempts: int = 50):
    """Run ``action()``, retrying with a growing pause while SQLite answers "database is locked"
    (lock waits the busy handler does not cover, or that outlast ``busy_timeout``)."""
    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def _transaction(conn: sqlite3.Connection, body) -> None:
    """``body()`` in one write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``), rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        body()
        conn.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (a full disk does): a second ROLLBACK would hide the
        # real error behind "cannot rollback - no transaction is active"
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


_canonical = canonical


class Cache:
    """A SQLite cache of LLM outputs in ``directory/llm_cache.sqlite``.

    Pass it (or just the folder) as ``cache=`` to the scoring functions; ``hits``, ``misses`` and
    ``rejected`` count this object's look-ups.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     cache = Cache(folder)
    ...     key = Cache.key(backend="demo", model="m", prompt="Hello", template="t", params={})
    ...     cache.put_many([(key, np.array([-0.5], dtype=np.float32))])
    ...     print(cache.path.name, len(cache), cache.get_many([key, "no-such-key"]), cache.hits, cache.misses)
    ...     cache.close()
    llm_cache.sqlite 1 {'...': array([-0.5], dtype=float32)} 1 1
    """

    FILENAME = "llm_cache.sqlite"

    def __init__(self, directory: str | os.PathLike, *, timeout: float = 120.0):
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InvalidArgumentError(f"cannot create cache directory {self.directory}: {err}") from err
        self.path = self.directory / self.FILENAME
        if self.path.exists() and not self.path.is_file():  # SQLite would write a journal beside a device
            raise InvalidArgumentError(f"LLM cache {self.path} is not a regular file (a folder, device or FIFO); "
                                       "move it away or pass another cache folder")
        self.timeout = float(timeout)
        self._local = threading.local()
        self.producer = entry_producer()
        self.hits = 0
        self.misses = 0
        #: entries found but not trusted (other producer, bad checksum, NaN): counted in ``misses`` too
        self.rejected = 0
        #: who this object's claims belong to: host, process id and a token of its own
        self.owner = f"{_HOST}:{os.getpid()}:{os.urandom(4).hex()}"
        with self._guard():
            conn = self._conn()
            _retry_locked(lambda: conn.executescript(_SCHEMA))
            self._migrate(conn)

    @contextlib.contextmanager
    def _guard(self):
        """Turn SQLite's errors into package errors that name the file and the fix."""
        try:
            yield
        except sqlite3.OperationalError as err:
            msg = str(err)
            if "disk is full" in msg:
                raise ComputationError(f"LLM cache {self.path}: {msg}; free space on that disk (or pass another "
                                       "--cache folder) and run again: finished batches are kept") from err
            if "locked" in msg or "readonly" in msg or "unable to open" in msg or "I/O error" in msg:
                raise ComputationError(f"LLM cache {self.path}: {msg}") from err
            raise CacheCorruptError(self._corrupt_message(err)) from err
        except sqlite3.DatabaseError as err:
            raise CacheCorruptError(self._corrupt_message(err)) from err

    def _corrupt_message(self, err) -> str:
        return (f"LLM cache {self.path} is damaged ({err}); move it aside or delete it, with its -wal and -shm "
                f"files (e.g. mv {self.path} {self.path}.damaged), and run again to start a new cache")

    def _migrate(self, conn) -> None:
        """Add the producer and checksum columns to a cache written by an older release (its
        entries then fail the checks and are recomputed as they are met)."""
        cols = {row[1] for row in conn.execute("PRAGMA table_info(outputs)")}
        for col in ("producer", "checksum"):
            if col not in cols:
                try:
                    _retry_locked(lambda c=col: conn.execute(
                        f"ALTER TABLE outputs ADD COLUMN {c} TEXT NOT NULL DEFAULT ''"))
                except sqlite3.OperationalError as err:  # another process added it first
                    if "duplicate column" not in str(err):
                        raise

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
            # Switching a new database to WAL can fail at once with "locked" while another process
            # does the same (SQLite does not call the busy handler there): retry.
            _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    @staticmethod
    def key(*, backend: str, model: str, prompt: str, template: str, params: Any) -> str:
        """SHA-256 hex of the canonical JSON of the key fields.

        Examples
        --------
        >>> k = Cache.key(backend="demo", model="m", prompt="Hello", template="t", params={"ids": [1, 2]})
        >>> len(k), k == Cache.key(backend="demo", model="m", prompt="Hello", template="t", params={"ids": [1, 2]})
        (64, True)
        >>> k == Cache.key(backend="demo", model="m", prompt="Hello!", template="t", params={"ids": [1, 2]})
        False
        """
        h = hashlib.sha256()
        h.update(_canonical([backend, model, template, params]).encode("utf-8"))
        h.update(b"\x00")
        h.update(prompt.encode("utf-8"))
        return h.hexdigest()

    @staticmethod
    def keys(*, backend: str, model: str, prompts: Sequence[str], template: str, params: Any) -> list[str]:
        """Keys for many prompts sharing the other fields (one JSON encoding).

        Examples
        --------
        >>> ks = Cache.keys(backend="demo", model="m", prompts=["a", "b"], template="t", params={})
        >>> ks[1] == Cache.key(backend="demo", model="m", prompt="b", template="t", params={})
        True
        """
        head = _canonical([backend, model, template, params]).encode("utf-8") + b"\x00"
        base = hashlib.sha256(head)
        out = []
        for p in prompts:
            h = base.copy()
            h.update(p.encode("utf-8"))
            out.append(h.hexdigest())
        return out

    def _decode(self, k: str, dtype: str, blob: Any, prod: Any, check: Any) -> np.ndarray | None:
        """The entry's array, or None when it fails a check."""
        if not isinstance(blob, bytes) or not isinstance(dtype, str):
            return None
        if not ENTRY_FORMAT.trusted(k, prod, check, dtype, blob, expect=self.producer):
            return None
        try:
            arr = np.frombuffer(blob, dtype=np.dtype(dtype))
        except (TypeError, ValueError):
            return None
        return None if _has_nan(arr) else arr

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored arrays of the keys found and trusted (others are absent from the result;
        entries that fail a check are counted in :attr:`rejected`).

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     cache = Cache(folder)
        ...     cache.put_many([("k1", np.array([1.0, 2.0]))])
        ...     print(cache.get_many(["k1", "k2"]), cache.hits, cache.misses)
        ...     cache.close()
        {'k1': array([1., 2.])} 1 1
        """
        out: dict[str, np.ndarray] = {}
        uniq = list(dict.fromkeys(keys))
        chunk = 900  # under SQLite's default limit of bound variables
        rejected = 0
        with self._guard():
            conn = self._conn()
            for i in range(0, len(uniq), chunk):
                part = uniq[i: i + chunk]
                q = ("SELECT key, dtype, value, producer, checksum FROM outputs "
                     f"WHERE key IN ({','.join('?' * len(part))})")
                for k, dtype, blob, prod, check in conn.execute(q, part):
                    arr = self._decode(k, dtype, blob, prod, check)
                    if arr is None:
                        rejected += 1
                    else:
                        out[k] = arr
        self.hits += len(out)
        self.misses += len(uniq) - len(out)
        self.rejected += rejected
        return out

    def put_many(self, items: Iterable[tuple[str, np.ndarray]], kind: str = "") -> None:
        """Store ``(key, array)`` pairs in one transaction (all or nothing). An array holding a NaN
        is never stored.

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     cache = Cache(folder)
        ...     cache.put_many([("a", np.zeros(3)), ("b", np.array([np.nan]))], kind="demo")
        ...     print(len(cache), sorted(cache.get_many(["a", "b"])))
        ...     cache.close()
        1 ['a']
        """
        now = time.time()
        rows = []
        for k, arr in items:
            a = np.ascontiguousarray(arr)
            if _has_nan(a):  # never stored: a NaN read back is always damage
                continue
            blob = a.tobytes()
            rows.append((k, kind, a.dtype.str, blob, now, self.producer,
                         _entry_checksum(k, self.producer, a.dtype.str, blob)))
        if not rows:
            return

        with self._guard():
            conn = self._conn()

            def write():
                conn.executemany("INSERT OR REPLACE INTO outputs (key, kind, dtype, value, created, producer, "
                                 "checksum) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                conn.executemany("DELETE FROM claims WHERE key = ?", [(r[0],) for r in rows])
                conn.execute("UPDATE claims SET renewed = ? WHERE owner = ?", (now, self.owner))

            _retry_locked(lambda: _transaction(conn, write))

    def claim(self, keys: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str], list[str]]:
        """Look the missing ``keys`` up again and claim those still missing, in one transaction.
        Returns the arrays found (another process stored them meanwhile: they count as hits, no
        longer as misses), the keys now claimed by this object (to compute), and the keys a live
        other process claimed (to wait for).

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     cache, other = Cache(folder), Cache(folder)
        ...     cache.put_many([("done", np.ones(1))])
        ...     print(cache.claim(["done", "todo"]))  # found, claimed by `cache`, held by another
        ...     print(other.claim(["todo"]))          # `cache` runs (this process): `other` waits
        ...     cache.release(); cache.close(); other.close()
        ({'done': array([1.])}, ['todo'], [])
        ({}, [], ['todo'])
        """
        keys = list(dict.fromkeys(keys))
        hits, misses, rejected = self.hits, self.misses, self.rejected
        found: dict[str, np.ndarray] = {}
        mine: list[str] = []
        held: list[str] = []
        now = time.time()
        with self._guard():
            conn = self._conn()

            def write():
                found.clear(), mine.clear(), held.clear()
                found.update(self.get_many(keys))
                rest = [k for k in keys if k not in found]
                owners = {}
                for i in range(0, len(rest), 900):
                    part = rest[i: i + 900]
                    owners.update((k, (o, t)) for k, o, t in conn.execute(
                        f"SELECT key, owner, renewed FROM claims WHERE key IN ({','.join('?' * len(part))})", part))
                for k in rest:
                    (held if k in owners and _claim_live(*owners[k], self.owner, now) else mine).append(k)
                conn.executemany("INSERT OR REPLACE INTO claims (key, owner, renewed) VALUES (?, ?, ?)",
                                 [(k, self.owner, now) for k in mine])

            _retry_locked(lambda: _transaction(conn, write))
        # the keys were counted as misses when first looked up; the rejected ones were counted then too
        self.hits, self.misses, self.rejected = hits + len(found), misses - len(found), rejected
        return found, mine, held

    def release(self) -> None:
        """Drop this object's claims (the prompts it claimed and did not store).

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     cache, other = Cache(folder), Cache(folder)
        ...     _ = cache.claim(["todo"])
        ...     cache.release()
        ...     print(other.claim(["todo"])[1])  # free again: `other` claims it
        ...     other.release(); cache.close(); other.close()
        ['todo']
        """
        with self._guard():
            conn = self._conn()
            _retry_locked(lambda: conn.execute("DELETE FROM claims WHERE owner = ?", (self.owner,)))

    def __len__(self) -> int:
        with self._guard():
            return self._conn().execute("SELECT COUNT(*) FROM outputs").fetchone()[0]

    def integrity_ok(self) -> bool:
        """Whether SQLite's ``PRAGMA integrity_check`` finds the database file sound.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     cache = Cache(folder)
        ...     print(cache.integrity_ok())
        ...     cache.close()
        True
        """
        with self._guard():
            return self._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def with_producer(self, producer: str) -> Cache:
        """A view of this cache whose entries carry (and require) the producer text ``producer``
        (e.g. HTTP responses, which no local library version changes). It shares this object's file
        and connections -- one owner per SQLite file -- and counts its own hits and misses; closing
        the view leaves this object open.

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     cache = Cache(folder)
        ...     http = cache.with_producer("openai-http")
        ...     http.put_many([("k", np.ones(1))])
        ...     print(sorted(http.get_many(["k"])), sorted(cache.get_many(["k"])), cache.rejected)
        ...     cache.close()
        ['k'] [] 1
        """
        view = copy.copy(self)
        view.producer = str(producer)
        view.hits = view.misses = view.rejected = 0
        view.owner = f"{_HOST}:{os.getpid()}:{os.urandom(4).hex()}"
        view._parent = self
        return view

    def close(self) -> None:
        """Close this object's connection (a view made by :meth:`with_producer` closes nothing).
        A later call on the object opens a new connection.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     cache = Cache(folder)
        ...     cache.close()
        ...     print(len(cache))  # opens a new connection
        ...     cache.close()
        0
        """
        if getattr(self, "_parent", None) is not None:
            return
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __repr__(self) -> str:
        return f"Cache({str(self.directory)!r})"


def _claim_live(owner: str, renewed: float, me: str, now: float) -> bool:
    """Whether another owner's claim still stands: renewed within :data:`CLAIM_LEASE` and, on this
    host, its process still runs."""
    if owner == me or now - renewed > CLAIM_LEASE:
        return False
    host, _, rest = owner.partition(":")
    if host != _HOST:
        return True
    try:
        os.kill(int(rest.partition(":")[0]), 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError):  # PermissionError: it runs, as another user
        return True
    return True


class NullCache:
    """A cache that stores nothing (``cache=None``): every look-up misses, every prompt is
    claimed by the caller.

    Examples
    --------
    >>> import numpy as np
    >>> c = NullCache()
    >>> c.put_many([("k", np.ones(1))])
    >>> c.get_many(["k"]), c.claim(["k", "k"])
    ({}, ({}, ['k'], []))
    """

    directory = None
    hits = 0
    misses = 0
    rejected = 0

    @staticmethod
    def keys(**kw):
        """:meth:`Cache.keys` (the same keys).

        >>> NullCache.keys(backend="b", model="m", prompts=["p"], template="t", params={})[0][:8]
        '...'
        """
        return Cache.keys(**kw)

    def get_many(self, keys):
        """Nothing found: ``{}``.

        >>> NullCache().get_many(["k"])
        {}
        """
        return {}

    def put_many(self, items, kind=""):
        """Store nothing.

        >>> import numpy as np
        >>> NullCache().put_many([("k", np.ones(1))]) is None
        True
        """
        return None

    def claim(self, keys):
        """Nothing found, every distinct key claimed, none held by another process.

        >>> NullCache().claim(["a", "b", "a"])
        ({}, ['a', 'b'], [])
        """
        return {}, list(dict.fromkeys(keys)), []

    def release(self):
        """Nothing to release.

        >>> NullCache().release() is None
        True
        """
        return None


def as_cache(cache) -> Cache | NullCache:
    """The one meaning of a ``cache=`` argument anywhere in the package: ``None`` -> :class:`NullCache`
    (nothing stored); a folder path (str or PathLike) -> a :class:`Cache` opened there; a cache
    passes through.

    Examples
    --------
    >>> import tempfile
    >>> type(as_cache(None)).__name__
    'NullCache'
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     c = as_cache(folder)
    ...     print(c, as_cache(c) is c)
    ...     c.close()
    Cache('...') True
    """
    if cache is None:
        return NullCache()
    if isinstance(cache, (Cache, NullCache)):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return Cache(cache)
    raise InvalidArgumentError(f"argument `cache` must be None, a directory path or a Cache; got {type(cache).__name__}")


@contextlib.contextmanager
def using_cache(cache) -> Iterator[Cache | NullCache]:
    """``with using_cache(cache) as c:`` -- :func:`as_cache` for the length of one call: a cache
    opened here from a folder path is closed at the end of the block; a :class:`Cache` passed in
    stays open (whoever made it owns it).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, using_cache(d) as c:
    ...     type(c).__name__, c.path.name
    ('Cache', 'llm_cache.sqlite')
    """
    c = as_cache(cache)
    try:
        yield c
    finally:
        if c is not cache and isinstance(c, Cache):
            c.close()


def _compute_into(compute, prompts: list, items: list, buf: list, commit: int, flush) -> None:
    """Compute ``prompts`` (one per entry of ``items``) and append ``(item, result)`` to ``buf`` as
    results come: a backend that streams yields ``(positions, arrays)`` a batch at a time, and
    ``flush`` runs every ``commit`` results; then ``flush``. The backend must return one result a
    prompt. The one compute step of :func:`cached_batches`, :func:`cached_rows` and
    :func:`cached_stream`."""
    res = compute(prompts)
    if isinstance(res, Iterator):  # streamed: one backend batch at a time
        got = 0
        for pos, arrays in res:
            for p, a in zip(pos, arrays):
                buf.append((items[int(p)], a))
                got += 1
            if len(buf) >= commit:
                flush()
    else:
        res = list(res)
        got = len(res)
        buf.extend(zip(items, res))
    if got != len(items):
        raise RuntimeError(f"the backend returned {got} results for {len(items)} prompts")
    flush()


def _claimed_window(cache, part: list, take, run) -> None:
    """Compute the missing keys ``part`` under the cache's claims: what another process stored
    meanwhile is handed to ``take(found)``; what it is computing is waited for; the rest is
    ``run(keys)`` here. The window step of :func:`cached_rows` and :func:`cached_stream`."""
    while part:
        found, mine, held = cache.claim(part)
        if found:
            take(found)
        if mine:
            ours = set(mine)
            run([k for k in part if k in ours])
        elif held:
            time.sleep(_CLAIM_POLL)
        waiting = set(held)
        part = [k for k in part if k in waiting]


def cached_batches(cache, keys: Sequence[str], compute, *, batch_size: int | None, kind: str = "",
                   progress=None, commit_every: int | None = None) -> list[np.ndarray]:
    """Look ``keys`` up, compute the misses and store them as they finish. Returns the arrays in key
    order. ``progress``: ``None`` (a bar in an interactive session), ``True``, ``False`` or a
    ``progress(label, done, total)`` callback (:mod:`llmsurrogate._progress`), label ``"prompts"``.

    ``compute(indices)`` gets at most ``batch_size`` missing prompts per call (``None``: all of them
    in one call) and returns either their arrays in order, or an iterator of ``(positions, arrays)``
    pairs (positions into ``indices``) yielded as the backend finishes each of its own batches. The
    cache's commit granularity is separate from both: finished results are written in one
    transaction as soon as ``commit_every`` of them wait (default: ``batch_size``), and at the end of
    every call. A run killed at any point keeps every written result; it redoes fewer than
    ``commit_every`` finished-but-unwritten prompts plus the backend batch in flight (for a
    ``compute`` that returns a list: the call in flight).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> prompts = ["a", "bb", "a"]
    >>> keys = Cache.keys(backend="demo", model="len", prompts=prompts, template="t", params={})
    >>> def compute(indices):  # one array per missing prompt
    ...     print("computing", [prompts[i] for i in indices])
    ...     return [np.array([len(prompts[i])]) for i in indices]
    >>> with tempfile.TemporaryDirectory() as folder, using_cache(folder) as cache:
    ...     print(cached_batches(cache, keys, compute, batch_size=8, progress=False))
    ...     print(cached_batches(cache, keys, compute, batch_size=8, progress=False))  # all hits
    computing ['a', 'bb']
    [array([1]), array([2]), array([1])]
    [array([1]), array([2]), array([1])]
    """
    with progress_reporter(progress) as report:
        return _cached_batches(cache, keys, compute, batch_size=batch_size, kind=kind, progress=report,
                               commit_every=commit_every)


def _cached_batches(cache, keys, compute, *, batch_size, kind, progress, commit_every):
    cache = as_cache(cache)
    rejected0 = cache.rejected
    found = cache.get_many(keys)
    if cache.rejected > rejected0:
        warnings.warn(f"LLM cache {getattr(cache, 'path', '')}: {cache.rejected - rejected0} stored output(s) failed "
                      "their checksum or came from another llmsurrogate/torch/transformers/vllm version; recomputed",
                      LLMSurrogateWarning, stacklevel=2)
    out: list[np.ndarray | None] = [found.get(k) for k in keys]
    # deduplicate missing keys: identical prompts are computed once
    todo: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if out[i] is None:
            todo.setdefault(k, []).append(i)
    done = len(keys) - sum(len(v) for v in todo.values())
    if progress is not None:
        progress("prompts", done, len(keys))
    pending = list(todo.items())
    window = len(pending) if batch_size is None else int(batch_size)
    if window < 1:
        window = 1
    commit = window if commit_every is None else max(1, int(commit_every))
    buf: list[tuple[tuple[str, list[int]], np.ndarray]] = []

    def flush():
        nonlocal done
        if not buf:
            return
        cache.put_many([(k, a) for (k, _), a in buf], kind=kind)
        for (_, idx), a in buf:
            for i in idx:
                out[i] = np.asarray(a)
            done += len(idx)
        buf.clear()
        if progress is not None:
            progress("prompts", done, len(keys))

    def run(part):
        _compute_into(compute, [idx[0] for _, idx in part], part, buf, commit, flush)

    def take(found):
        nonlocal done
        for k, a in found.items():
            for i in todo[k]:
                out[i] = np.asarray(a)
            done += len(todo[k])
        if found and progress is not None:
            progress("prompts", done, len(keys))

    try:
        for start in range(0, len(pending), window):
            part = pending[start: start + window]
            while part:
                # what another process stored meanwhile is taken; what it is computing, waited for
                found, mine, held = cache.claim([k for k, _ in part])
                take(found)
                if mine:
                    ours = set(mine)
                    run([item for item in part if item[0] in ours])
                elif held:
                    time.sleep(_CLAIM_POLL)
                waiting = set(held)
                part = [item for item in part if item[0] in waiting]
    finally:
        if pending:
            with contextlib.suppress(Exception):
                cache.release()
    return out  # type: ignore[return-value]


class _SeenKeys:
    """The keys already answered in a streamed run (:func:`cached_rows`), each with the position of
    its first occurrence: 128 bits of the key (its first 32 hex digits) and an int64 position, 24
    bytes a distinct key, in sorted arrays merged once per chunk (a duplicate of an answered key
    is then copied, as :func:`cached_batches` computes or looks up a repeated key once)."""

    def __init__(self):
        self.digests = np.zeros(0, dtype="S16")
        self.first = np.zeros(0, dtype=np.int64)
        self._new_digests: list[bytes] = []
        self._new_first: list[int] = []

    @staticmethod
    def digests_of(keys: Sequence[str]) -> np.ndarray:
        return np.frombuffer(b"".join(bytes.fromhex(k[:32]) for k in keys), dtype="S16") if keys else \
            np.zeros(0, dtype="S16")

    def add(self, key: str, first: int) -> None:
        self._new_digests.append(bytes.fromhex(key[:32]))
        self._new_first.append(first)

    def merge(self) -> None:
        if not self._new_digests:
            return
        d = np.concatenate([self.digests, np.frombuffer(b"".join(self._new_digests), dtype="S16")])
        f = np.concatenate([self.first, np.asarray(self._new_first, dtype=np.int64)])
        order = np.argsort(d, kind="stable")
        self.digests, self.first = d[order], f[order]
        self._new_digests, self._new_first = [], []

    def lookup(self, digests: np.ndarray) -> np.ndarray:
        """The first position of each digest answered before the last :meth:`merge`, else -1."""
        if not len(self.digests) or not len(digests):
            return np.full(len(digests), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.digests, digests), len(self.digests) - 1)
        return np.where(self.digests[at] == digests, self.first[at], -1)


def cached_rows(cache, chunks: Iterable[Sequence[str]], n: int, width: int, make_keys, compute, *, window: int,
                kind: str = "", progress=None, commit_every: int | None = None, dtype=np.float32) -> np.ndarray:
    """:func:`cached_batches` for results of one width, streamed: the prompts come in ``chunks``
    (lists of prompts, ``n`` in all, made as they are needed), so that no more than a chunk and a
    window of prompts, their keys and their pending results are held at once; the results go
    into one ``(n, width)`` array of ``dtype`` as they are found or computed.

    ``make_keys(prompts)``: their cache keys. ``compute(prompts)`` gets at most ``window`` missing
    prompts per call and returns their arrays in order or an iterator of ``(positions, arrays)``
    (as for :func:`cached_batches`). The missing prompts form the same windows as
    :func:`cached_batches` would give them with ``batch_size=window``: the distinct missing keys in
    the order of their first occurrence, cut every ``window``; a repeated key is looked up and
    computed once (its first occurrence's result is copied); each distinct key is looked up once,
    so the cache's hit and miss counts are those of :func:`cached_batches` too. Results are written
    ``commit_every`` at a time (default: ``window``) as they finish, with the claims of
    :func:`cached_batches` (another process's finished prompts are taken, those it computes waited
    for). Beyond the result array a distinct key costs 24 bytes (:class:`_SeenKeys`).

    Examples
    --------
    >>> import tempfile
    >>> prompts = ["a", "bb", "a", "ccc"]
    >>> def keys(ps):
    ...     return Cache.keys(backend="demo", model="len", prompts=ps, template="t", params={})
    >>> def compute(ps):
    ...     print("computing", ps)
    ...     return [np.array([len(p)], np.float32) for p in ps]
    >>> chunks = lambda: (prompts[i: i + 2] for i in range(0, 4, 2))  # two prompts at a time
    >>> with tempfile.TemporaryDirectory() as folder, using_cache(folder) as cache:
    ...     print(cached_rows(cache, chunks(), 4, 1, keys, compute, window=8, progress=False).ravel())
    ...     print(cached_rows(cache, chunks(), 4, 1, keys, compute, window=8, progress=False).ravel())  # all hits
    computing ['a', 'bb', 'ccc']
    [1. 2. 1. 3.]
    [1. 2. 1. 3.]
    """
    with progress_reporter(progress) as report:
        return _cached_rows(cache, chunks, int(n), int(width), make_keys, compute, window=window, kind=kind,
                            progress=report, commit_every=commit_every, dtype=dtype)


def _cached_rows(cache, chunks, n, width, make_keys, compute, *, window, kind, progress, commit_every, dtype):
    cache = as_cache(cache)
    out = np.empty((n, width), dtype=dtype)
    window = max(1, int(window))
    commit = window if commit_every is None else max(1, int(commit_every))
    seen = _SeenKeys()
    # missing distinct keys waiting for their window, in the order of their first occurrence:
    # key -> (prompt, positions)
    pending: dict[str, tuple[str, list[int]]] = {}
    done = 0
    rejected = 0
    claimed = False
    buf: list[tuple[tuple[str, list[int]], np.ndarray]] = []

    def report():
        if progress is not None:
            progress("prompts", done, n)

    def answer(key, positions, arr):
        nonlocal done
        out[positions] = np.asarray(arr)
        seen.add(key, positions[0])
        done += len(positions)

    def flush():
        if not buf:
            return
        cache.put_many([(k, a) for (k, _), a in buf], kind=kind)
        for (k, positions), a in buf:
            answer(k, positions, a)
        buf.clear()
        report()

    def run(part):
        _compute_into(compute, [pending[k][0] for k in part], [(k, pending[k][1]) for k in part], buf, commit, flush)

    def take(found):
        for k, a in found.items():
            answer(k, pending[k][1], a)
        report()

    def run_window(part):
        nonlocal claimed
        claimed = True
        _claimed_window(cache, part, take, run)

    try:
        start = 0
        for prompts in chunks:
            prompts = list(prompts)
            keys = make_keys(prompts)
            first = seen.lookup(_SeenKeys.digests_of(keys))
            new: dict[str, tuple[str, list[int]]] = {}
            for j, (p, k) in enumerate(zip(prompts, keys)):
                i = start + j
                if k in pending:
                    pending[k][1].append(i)
                elif k in new:
                    new[k][1].append(i)
                elif first[j] >= 0:  # answered in an earlier chunk: the same result
                    out[i] = out[first[j]]
                    done += 1
                else:
                    new[k] = (p, [i])
            start += len(prompts)
            r0 = cache.rejected
            found = cache.get_many(list(new))
            rejected += cache.rejected - r0
            for k, item in new.items():
                if k in found:
                    answer(k, item[1], found[k])
                else:
                    pending[k] = item
            del prompts, keys, new, found
            report()
            while len(pending) >= window:
                part = list(itertools.islice(pending, window))
                run_window(part)
                for k in part:
                    del pending[k]
            seen.merge()
        if start != n:
            raise RuntimeError(f"{start} prompts came for {n}")
        if pending:
            run_window(list(pending))
            pending.clear()
    finally:
        if claimed:
            with contextlib.suppress(Exception):
                cache.release()
        if rejected:
            warnings.warn(f"LLM cache {getattr(cache, 'path', '')}: {rejected} stored output(s) failed their checksum "
                          "or came from another llmsurrogate/torch/transformers/vllm version; recomputed",
                          LLMSurrogateWarning, stacklevel=3)
    return out


def cached_stream(cache, chunks: Iterable[Sequence[str]], make_keys, compute, *, window: int, kind: str = "",
                  commit_every: int | None = None) -> Iterator[tuple[str, np.ndarray]]:
    """:func:`cached_rows` for results of any length, handed on instead of gathered: a generator of
    ``(prompt, array)`` for every prompt of ``chunks``, in their order, each as soon as it and
    every prompt before it are answered. It holds a chunk, the missing prompts waiting for their
    window and the answered ones waiting for an earlier one, not every prompt or result (the
    chain of thought's generated texts: :func:`~llmsurrogate.llm.scoring.cot_risk`).

    Look-ups, windows (the distinct missing prompts in the order of their first occurrence, cut
    every ``window``), claims and commits are those of :func:`cached_rows` and
    :func:`cached_batches`. The prompts should be distinct: a prompt repeated while its first
    occurrence waits shares its result, but one repeated after that is looked up (and, missing,
    computed) again, as the stream keeps nothing of the prompts it has handed on. Close the
    generator (or run it to its end) to release its claims.

    Examples
    --------
    >>> import tempfile
    >>> prompts = ["a", "bb", "ccc", "dddd"]
    >>> def keys(ps):
    ...     return Cache.keys(backend="demo", model="len", prompts=ps, template="t", params={})
    >>> def compute(ps):
    ...     print("computing", ps)
    ...     return [np.arange(len(p), dtype=np.float32) for p in ps]
    >>> chunks = lambda: (prompts[i: i + 2] for i in range(0, 4, 2))  # two prompts at a time
    >>> with tempfile.TemporaryDirectory() as folder, using_cache(folder) as cache:
    ...     print([len(a) for _, a in cached_stream(cache, chunks(), keys, compute, window=3)])
    ...     print([p for p, _ in cached_stream(cache, chunks(), keys, compute, window=3)])  # all hits
    computing ['a', 'bb', 'ccc']
    computing ['dddd']
    [1, 2, 3, 4]
    ['a', 'bb', 'ccc', 'dddd']
    """
    cache = as_cache(cache)
    window = max(1, int(window))
    commit = window if commit_every is None else max(1, int(commit_every))
    # [prompt, array or None] of every prompt not yet handed on, in order
    queue: collections.deque[list] = collections.deque()
    pending: dict[str, list] = {}  # missing distinct keys waiting for their window -> their queue cell
    buf: list[tuple[tuple[str, list], np.ndarray]] = []
    rejected = 0
    claimed = False

    def flush():
        if not buf:
            return
        cache.put_many([(k, a) for (k, _), a in buf], kind=kind)
        for (_, cell), a in buf:
            cell[1] = np.asarray(a)
        buf.clear()

    def run(part):
        _compute_into(compute, [pending[k][0] for k in part], [(k, pending[k]) for k in part], buf, commit, flush)

    def take(found):
        for k, a in found.items():
            pending[k][1] = np.asarray(a)

    def run_window(part):
        nonlocal claimed
        claimed = True
        _claimed_window(cache, part, take, run)

    try:
        for prompts in chunks:
            prompts = list(prompts)
            keys = make_keys(prompts)
            new: dict[str, list] = {}
            for p, k in zip(prompts, keys):
                cell = pending.get(k) or new.get(k)
                if cell is None:
                    cell = new[k] = [p, None]
                queue.append(cell)
            r0 = cache.rejected
            found = cache.get_many(list(new))
            rejected += cache.rejected - r0
            for k, cell in new.items():
                if k in found:
                    cell[1] = np.asarray(found[k])
                else:
                    pending[k] = cell
            del prompts, keys, new, found
            while len(pending) >= window:
                part = list(itertools.islice(pending, window))
                run_window(part)
                for k in part:
                    del pending[k]
            while queue and queue[0][1] is not None:
                cell = queue.popleft()
                yield cell[0], cell[1]
        if pending:
            run_window(list(pending))
            pending.clear()
        while queue:
            cell = queue.popleft()
            yield cell[0], cell[1]
    finally:
        if claimed:
            with contextlib.suppress(Exception):
                cache.release()
        if rejected:
            warnings.warn(f"LLM cache {getattr(cache, 'path', '')}: {rejected} stored output(s) failed their checksum "
                          "or came from another llmsurrogate/torch/transformers/vllm version; recomputed",
                          LLMSurrogateWarning, stacklevel=3)
