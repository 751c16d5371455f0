"""Shared pytest configuration.

* ``HF_HUB_OFFLINE=1``: no test may reach a model hub.
* Strict mode (``LLMSURROGATE_STRICT_TESTS=1``, set by ``make test``): a skipped test counts as a
  failure unless it is marked ``gpu``. Nothing is skipped silently where the full suite is expected
  to run (R, rpy2, polars all present).
"""

from __future__ import annotations

import importlib.util
import os
import traceback
import warnings

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

STRICT = os.environ.get("LLMSURROGATE_STRICT_TESTS", "") == "1"
# `make test-vllm` (LLMSURROGATE_VLLM_TESTS=1): tests marked vllm run against the real engine and
# may not skip; elsewhere (no vLLM in the venv) they may.
VLLM_TESTS = os.environ.get("LLMSURROGATE_VLLM_TESTS", "") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    may_skip = item.get_closest_marker("gpu") is not None or (item.get_closest_marker("vllm") is not None
                                                                and not VLLM_TESTS)
    if STRICT and report.skipped and not may_skip:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"skipped in strict mode (LLMSURROGATE_STRICT_TESTS=1): {reason}\n"
                           "Only tests marked `gpu` (and `vllm` outside make test-vllm) may skip; install what this "
                           "test needs (make test does).")


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where CUDA is available; they are reported as skipped elsewhere."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    try:
        import torch  # noqa: F401

        has_cuda = bool(torch.cuda.is_available())
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in gpu_items:
        item.add_marker(skip_gpu)


# --- No deprecated calls -----------------------------------------------------------------------
# A DeprecationWarning, PendingDeprecationWarning or FutureWarning raised while llmsurrogate's own
# code is on the call stack (a dependency warning about a call the package makes, or the package
# warning itself) fails the test. Warnings from a dependency's own import machinery, and those a
# test provokes by calling a dependency directly, do not count. Tests that assert a warning with
# ``pytest.warns`` or ``warnings.catch_warnings`` open their own context and are unaffected.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(importlib.util.find_spec("llmsurrogate").origin))
_DEPRECATIONS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def _package_frame(stack) -> traceback.FrameSummary | None:
    """The innermost frame of llmsurrogate's code on ``stack`` (outermost first), unless an import
    is under way between it and the warning."""
    for frame in reversed(stack):
        if frame.filename.startswith("<frozen importlib"):
            return None
        if os.path.abspath(frame.filename).startswith(_PACKAGE_DIR + os.sep):
            return frame
    return None


@pytest.fixture(autouse=True)
def _no_deprecated_calls(request):
    offenders: list[str] = []
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, _DEPRECATIONS):
            ours = _package_frame(traceback.extract_stack()[:-1])
            if ours is not None:
                offenders.append(f"{category.__name__} at {filename}:{lineno}: {message}\n"
                                 f"    called from {ours.filename}:{ours.lineno} ({ours.name})")
                return
        previous(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        for category in _DEPRECATIONS:
            warnings.simplefilter("always", category)
        warnings.showwarning = show
        yield
    if offenders:
        unique = list(dict.fromkeys(offenders))
        pytest.fail("a deprecated call in llmsurrogate (use the dependency's current API):\n" + "\n".join(unique),
                    pytrace=False)
