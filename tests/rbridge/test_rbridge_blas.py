"""torch's products in a process that already defines ``sgemm_`` (R's BLAS, here Debian's reference
``libblas.so.3`` preloaded into Python as ``libR.so`` loads it into R): once the bridge is imported,
torch binds to its own BLAS, so its products are those of plain Python bit for bit; without the
bridge they are the reference BLAS's (other bits, and ten times slower). The R side of the same
check is r-bridge/llmsurrogate/tests/testthat/test-tiny-model.R."""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

# A float32 product through torch's sgemm_ (addmm), as hex: the bits, not a rounded sum.
PRODUCT = """
import torch
g = torch.Generator().manual_seed(3)
x, w = torch.randn(96, 64, generator=g), torch.randn(64, 80, generator=g)
print((x @ w).numpy().tobytes().hex())
"""


def _product(bridge_first: bool, preload: str | None) -> str:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    code = ("import llmsurrogate.rbridge\n" if bridge_first else "") + PRODUCT
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                         check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RTLD_DEEPBIND and LD_PRELOAD are Linux's")
def test_torch_keeps_its_own_blas_when_the_process_defines_sgemm():
    blas = ctypes.util.find_library("blas")
    assert blas, "Debian's libblas3 (R's BLAS) is not installed"
    plain = _product(bridge_first=False, preload=None)
    # the reference BLAS takes torch's sgemm_ when nothing is done: the check can fail
    assert _product(bridge_first=False, preload=blas) != plain
    assert _product(bridge_first=True, preload=blas) == plain
    # and in plain Python the bridge changes nothing
    assert _product(bridge_first=True, preload=None) == plain
