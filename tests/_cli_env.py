"""What the tests that run the ``llmsurrogate`` command as a subprocess share."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def _env(**extra):
    """The environment of a command subprocess: this one's, offline, without the R library path an
    earlier rpy2 import added, plus ``extra``."""
    env = dict(os.environ)
    if "/lib/R/lib" in env.get("LD_LIBRARY_PATH", ""):  # what an earlier rpy2 import added
        env.pop("LD_LIBRARY_PATH")
    env.update(HF_HUB_OFFLINE="1", **{k: str(v) for k, v in extra.items()})
    return env


def _stored(cache: Path) -> int:
    """Rows committed to the LLM cache in folder ``cache`` (0 while it is missing or locked)."""
    path = cache / "llm_cache.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=30) as conn:
            return conn.execute("SELECT COUNT(*) FROM outputs").fetchone()[0]
    except sqlite3.Error:
        return 0
