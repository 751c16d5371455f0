"""The manifest of a command-line run: what produced its outputs, for the ``run.json`` beside them.

A manifest records the llmsurrogate, Python and platform versions, the versions of the installed
dependencies that can change the numbers, a SHA-256 of every input file, the seeds, the command
line and when the run started and finished (UTC). :func:`start` builds it before the work (the
inputs are hashed as they are when read), :func:`finish` completes it after (the optional
libraries a run imported, such as torch, are known only then).

The command line never holds a secret: API keys come from environment variables only, and the value
after any option whose name contains ``key`` is replaced by ``***`` all the same; a URL in any word
loses its userinfo and secret query values (:func:`llmsurrogate._redact.redact_url`).

>>> redact_command_line(["llmsurrogate", "score", "--api-key-env", "MY_KEY", "--api-key=sk-1", "--out", "o"])
['llmsurrogate', 'score', '--api-key-env', '***', '--api-key=***', '--out', 'o']
>>> redact_command_line(["llmsurrogate", "risk", "--base-url", "http://me:pw@h/v1?api_key=s"])
['llmsurrogate', 'risk', '--base-url', 'http://***@h/v1?api_key=***']
"""

from __future__ import annotations

import datetime
import hashlib
import os
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__
from ._redact import REDACTED, redact_text

__all__ = ["CORE_DISTS", "IMPORTED_DISTS", "REDACTED", "file_sha256", "redact_command_line", "package_versions",
           "start", "finish"]

#: Dependencies always reported (when installed): every one can change a result or an output file.
CORE_DISTS = ("numpy", "pandas", "scipy", "scikit-learn", "joblib", "click", "rich", "matplotlib")
#: Optional dependencies (distribution -> module), reported when the run imported them.
IMPORTED_DISTS = {"torch": "torch", "transformers": "transformers", "tokenizers": "tokenizers", "vllm": "vllm",
                  "openai": "openai", "pyfixest": "pyfixest", "pyarrow": "pyarrow", "polars": "polars",
                  "rpy2": "rpy2", "dask": "dask", "distributed": "distributed", "ray": "ray",
                  "llama-cpp-python": "llama_cpp"}


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of the file at ``path`` (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def redact_command_line(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value of every option whose name contains ``key`` (any case) replaced by
    :data:`REDACTED`: the next word, or what follows ``=`` in ``--name=value``; every URL in a word
    redacted (:func:`llmsurrogate._redact.redact_text`)."""
    out: list[str] = []
    hide_next = False
    for word in map(redact_text, argv):
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if word.startswith("-") and word != "--":
            name, eq, _value = word.partition("=")
            if "key" in name.lower():
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(word)
                    hide_next = True
                continue
        out.append(word)
    return out


def package_versions(imported: Iterable[str] | None = None) -> dict[str, str]:
    """``{distribution: version}`` of :data:`CORE_DISTS` and of those :data:`IMPORTED_DISTS` whose
    module is in ``imported`` (default: the modules imported so far), installed ones only; read from
    the installed distributions' metadata."""
    modules = set(sys.modules if imported is None else imported)
    dists = list(CORE_DISTS) + [d for d, m in IMPORTED_DISTS.items() if m in modules]
    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def start(command_line: Sequence[str], inputs: Iterable[tuple[str, str | os.PathLike]] = (),
          seeds: Mapping[str, int | None] | None = None) -> dict[str, Any]:
    """The manifest of a run about to start: ``inputs`` are ``(argument, path)`` pairs (the argument
    as the command line names it, e.g. ``--data``), each hashed now; ``seeds`` ``{name: value}``."""
    files = []
    for arg, path in inputs:
        p = Path(path)
        files.append({"argument": arg, "path": str(p), "bytes": p.stat().st_size, "sha256": file_sha256(p)})
    return {"llmsurrogate": str(__version__), "python": platform.python_version(),
            "platform": platform.platform(), "packages": {}, "inputs": files, "seeds": dict(seeds or {}),
            "command_line": redact_command_line(command_line), "started_utc": _utc_now(), "finished_utc": None}


def finish(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` completed when the run has finished: the package versions (with the optional
    libraries it imported) and the finishing time. Returns it."""
    manifest["packages"] = package_versions()
    manifest["finished_utc"] = _utc_now()
    return manifest
