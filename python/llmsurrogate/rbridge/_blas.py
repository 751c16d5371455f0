"""torch's matrix products inside R: torch binds to its own BLAS, not to the one R loaded.

torch's CPU library (``libtorch_cpu.so``) carries Intel MKL and calls its ``sgemm_`` through the
dynamic linker, which binds the name to the first library of the process that defines it. Inside R
that is R's BLAS (``libblas.so.3``, linked by ``libR.so`` before Python starts): with Debian's
reference BLAS, torch's products ran about 10 times slower than in Python (a Linear forward and
backward loop: 2.3 s against 0.22 s) and R's ``tiny_model()`` trained in 70-98 s instead of 26-30 s;
with an optimized BLAS for R (OpenBLAS) torch's numbers would differ from Python's.

:func:`install` adds a finder to :data:`sys.meta_path` that acts once, when torch is first
imported, and only where the process already defines ``sgemm_`` (R, or Python with R loaded by
rpy2; never plain Python): it loads ``libtorch_cpu.so`` first with ``RTLD_DEEPBIND``, so that the
library's own names (MKL's ``sgemm_``) come before the process's; torch's import then reuses that
loaded library. torch's products are then those of plain Python, bit for bit, and R's own BLAS
is left as it was (``RTLD_LOCAL``: torch's names are not offered to R).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

__all__ = ["binds_own_blas", "install"]

_TORCH = "torch"


class _TorchBlasFinder:
    """A :data:`sys.meta_path` finder that finds nothing: on the first ``import torch`` it loads
    torch's CPU library with its own BLAS first (:func:`_preload`), then leaves the import to the
    other finders."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname == _TORCH:
            _uninstall()
            _preload()
        # None: found nothing, the import goes on with the other finders


_FINDER = _TorchBlasFinder()
_state = {"preloaded": None}


def install() -> None:
    """Add the finder, unless torch is imported already (then it is too late) or it is there."""
    if _TORCH in sys.modules or _FINDER in sys.meta_path or not hasattr(os, "RTLD_DEEPBIND"):
        return
    sys.meta_path.insert(0, _FINDER)


def _uninstall() -> None:
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def _torch_cpu_library() -> str | None:
    # os.path, not pathlib: importing the bridge (R's first call) stays cheap
    spec = importlib.machinery.PathFinder.find_spec(_TORCH)
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = os.path.join(next(iter(spec.submodule_search_locations)), "lib", "libtorch_cpu.so")
    return lib if os.path.isfile(lib) else None


def _process_defines_sgemm() -> bool:
    import ctypes

    try:
        ctypes.CDLL(None).sgemm_  # noqa: B018 - the lookup is the test
    except AttributeError:
        return False
    return True


def _preload() -> None:
    lib = _torch_cpu_library()
    if lib is None or not _process_defines_sgemm():
        return
    import ctypes

    try:
        ctypes.CDLL(lib, mode=os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_DEEPBIND)
    except OSError:  # pragma: no cover - torch's own import then reports what is wrong
        return
    _state["preloaded"] = lib


def binds_own_blas() -> str | None:
    """The torch library loaded with its own BLAS first in this process (its path), or ``None``
    where nothing was done (plain Python, or torch imported before the bridge).

    >>> binds_own_blas() is None or binds_own_blas().endswith("libtorch_cpu.so")
    True
    """
    return _state["preloaded"]
