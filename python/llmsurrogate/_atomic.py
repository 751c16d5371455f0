"""Atomic output files and the checks that run before any work starts.

Every file the command line (and the demos) write goes through :func:`write_bytes`,
:func:`write_text`, :func:`write_frame` or :func:`save_figure`: the content goes to a temporary file
in the destination's folder, is flushed to disk, and only then takes the final name with
:func:`os.replace`. A kill, a crash or a full disk leaves the old file (or none) at the final
path, never part of one; a failed write removes its temporary file and raises
:class:`~llmsurrogate.exceptions.ComputationError` naming the file.

Only a regular file (or a new name) is ever replaced. A character device (``--out /dev/null``) or a
FIFO at the path is written to directly, not atomically (the content is made in a temporary file
first, then copied in; a write error such as ``/dev/full``'s is a ``ComputationError``); a folder,
a block device or a socket there is refused with an
:class:`~llmsurrogate.exceptions.InvalidArgumentError`.

:func:`check_output_dir` and :func:`check_output_file` run before the computation: the folder is
created and a probe file written and removed (permission bits are not trusted: a read-only
mount or a full quota only shows on a real write), an output that would overwrite an input is
refused, and so is an output path that holds something no output may replace (a folder, a block
device, a socket).

``LLMSURROGATE_TEST_WRITE_DELAY`` (seconds): a test hook that pauses between writing the
temporary file and renaming it, so that kill tests can hit the final write; with
``LLMSURROGATE_TEST_WRITE_DELAY_MATCH`` (a glob such as ``*.csv``) only for matching file names.

>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as d:
...     write_text(pathlib.Path(d) / "a.txt", "hello")
...     (pathlib.Path(d) / "a.txt").read_text()
'hello'
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__
from .exceptions import ComputationError, InvalidArgumentError

__all__ = ["write_bytes", "write_text", "write_frame", "save_figure", "atomic_target", "check_output_dir",
           "check_output_file", "is_stream", "producer", "checksum"]

_DELAY_ENV = "LLMSURROGATE_TEST_WRITE_DELAY"


def _delay(name: str) -> None:
    value = os.environ.get(_DELAY_ENV)
    pattern = os.environ.get(_DELAY_ENV + "_MATCH")
    if pattern:
        if not fnmatch.fnmatch(name, pattern):
            return
    if value:
        with contextlib.suppress(ValueError):
            time.sleep(float(value))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _kind(path: Path) -> str:
    """What is at ``path`` (links followed): ``"none"``, ``"file"`` (a regular file), ``"stream"`` (a
    character device or a FIFO) or the name of something no output may replace."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "none"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISBLK(mode):
        return "block device"
    return "socket" if stat.S_ISSOCK(mode) else "special file"


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a character device (``/dev/null``) or a FIFO: written to directly, never replaced."""
    return _kind(Path(path)) == "stream"


def _check_target(path: Path, arg: str) -> str:
    """The kind of ``path``; raise when an output may not be written there."""
    kind = _kind(path)
    if kind == "folder":
        raise InvalidArgumentError(f"{arg} {path} is a folder, not a file; give another path")
    if kind not in ("none", "file", "stream"):
        raise InvalidArgumentError(f"{arg} {path} is a {kind}, not a file; give the path of a file (a character "
                                   "device such as /dev/null, or a FIFO, is written to directly)")
    if kind == "stream" and not os.access(path, os.W_OK):
        raise InvalidArgumentError(f"{arg} {path}: cannot write there (permission denied)")
    return kind


@contextlib.contextmanager
def _stream_target(path: Path, what: str) -> Iterator[Path]:
    """:func:`atomic_target` for a character device or FIFO: the content goes to a temporary file
    (writers may seek), then is copied into ``path``, which is opened without ``O_CREAT`` (nothing
    new ever takes its place)."""
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise ComputationError(f"cannot write {what} {path}: {err.strerror or err}") from err
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        out = os.open(path, os.O_WRONLY | os.O_NOCTTY)
        try:
            with open(tmp, "rb") as src:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(out, view):]
        finally:
            os.close(out)
    except OSError as err:
        raise ComputationError(f"cannot write {what} {path}: {err.strerror or err}") from err
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike, *, what: str = "output") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block finishes without error the file
    written there is flushed and renamed to ``path``. On any error the temporary file is removed and
    an ``OSError`` becomes a :class:`ComputationError` naming ``path``. A character device or FIFO
    at ``path`` is written to directly instead; a folder, block device or socket raises
    :class:`InvalidArgumentError`."""
    path = Path(path)
    if _check_target(path, what) == "stream":
        with _stream_target(path, what) as tmp:
            yield tmp
        return
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise ComputationError(f"cannot write {what} {path}: {err.strerror or err}") from err
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        # mkstemp creates 0600: give the file the mode it would have had (or the one it replaces)
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        _delay(path.name)
        os.replace(tmp, path)
        _fsync_dir(folder)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ComputationError(f"cannot write {what} {path}: {err.strerror or err}") from err
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_bytes(path: str | os.PathLike, data: bytes, *, what: str = "output") -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_target(path, what=what) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)


def write_text(path: str | os.PathLike, text: str, *, what: str = "output") -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    write_bytes(path, text.encode("utf-8"), what=what)


def write_frame(path: str | os.PathLike, frame: Any, *, index: bool = False, what: str = "output") -> None:
    """Write a pandas DataFrame to ``path`` atomically: Parquet for ``.parquet``/``.pq``, else CSV."""
    path = Path(path)
    with atomic_target(path, what=what) as tmp:
        if path.suffix.lower() in {".parquet", ".pq"}:
            try:
                frame.to_parquet(tmp, index=index)
            except ImportError as err:
                raise InvalidArgumentError(f"writing {path.name} needs pyarrow: pip install pyarrow ({err})") from err
        else:
            comp = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz", ".zst": "zstd"}.get(path.suffix.lower())
            frame.to_csv(tmp, index=index, compression=comp)


def save_figure(fig: Any, path: str | os.PathLike, *, what: str = "figure", **kwargs: Any) -> None:
    """``fig.savefig(path, **kwargs)`` atomically (the format is taken from ``path``'s suffix)."""
    path = Path(path)
    kwargs.setdefault("format", path.suffix.lstrip(".").lower() or "png")
    with atomic_target(path, what=what) as tmp:
        fig.savefig(tmp, **kwargs)


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _check_not_input(target: Path, inputs: Iterable[str | os.PathLike], arg: str) -> None:
    for src in inputs:
        if src is None:
            continue
        if _same(target, Path(src)):
            raise InvalidArgumentError(f"{arg} {target} is the input file {src}; it would be overwritten. "
                                       "Choose another output path")


def _probe(folder: Path, arg: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InvalidArgumentError(f"{arg} {folder}: cannot create the folder ({err.strerror or err})") from err
    if not folder.is_dir():
        raise InvalidArgumentError(f"{arg} {folder}: not a folder")
    try:
        fd, name = tempfile.mkstemp(prefix=".llmsurrogate-write-check.", dir=folder)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as err:
        raise InvalidArgumentError(f"{arg} {folder}: cannot write there ({err.strerror or err})") from err


def check_output_dir(folder: str | os.PathLike, *, files: Iterable[str] = (),
                     inputs: Iterable[str | os.PathLike] = (), arg: str = "--out") -> Path:
    """Before any work: create ``folder``, check that a file can be written in it, and that none of
    the output ``files`` (names inside ``folder``) is one of the ``inputs``. Returns the folder."""
    folder = Path(folder)
    inputs = [i for i in inputs if i is not None]
    for name in files:
        _check_not_input(folder / name, inputs, arg)
        _check_target(folder / name, arg)
    _probe(folder, arg)
    return folder


def check_output_file(path: str | os.PathLike, *, inputs: Iterable[str | os.PathLike] = (),
                      arg: str = "--out") -> Path:
    """Before any work: ``path`` must not be an input, nor a folder, block device or socket, and its
    folder must be writable (created if missing); a character device or FIFO must be writable.
    Returns the path."""
    path = Path(path)
    _check_not_input(path, [i for i in inputs if i is not None], arg)
    if _check_target(path, arg) != "stream":
        _probe(path.parent if str(path.parent) else Path("."), arg)
    return path


# ------------------------------------------------------------------------------------------------
# Cache entries: what produced them and a checksum of their value
# ------------------------------------------------------------------------------------------------
_VERSIONS: dict[str, str | None] = {}


def _version(dist: str) -> str | None:
    if dist not in _VERSIONS:
        if dist == "llmsurrogate":
            _VERSIONS[dist] = str(__version__)
        else:
            try:
                _VERSIONS[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                _VERSIONS[dist] = None
    return _VERSIONS[dist]


def producer(*dists: str) -> dict[str, str | None]:
    """``{"llmsurrogate": version, dist: installed version or None, ...}``: what a cache entry
    was computed with (read from the installed distributions, nothing is imported)."""
    return {d: _version(d) for d in ("llmsurrogate", *dists)}


def checksum(*parts: bytes | str) -> str:
    """BLAKE2b (128-bit) hex digest of ``parts``, each length-prefixed (no two splits collide)."""
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        b = p.encode("utf-8") if isinstance(p, str) else bytes(p)
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()
