"""No input reaches an abort or a panic of the Rust core (issue 11, defect 2).

Each call runs in its own Python process under a 2 GiB address-space cap (``RLIMIT_AS``) and a
timeout. Before the fix these calls aborted the interpreter (allocation failure, exit 134 /
SIGABRT), raised ``pyo3_runtime.PanicException`` or silently wrapped an integer around. Now each
one exits normally, having raised an ``LLMSurrogateError`` subclass that names the argument (and,
for sizes, the memory it would need), or returns the reference answer.

The calls go to ``llmsurrogate._core`` directly: the public wrappers check sizes first as well,
but the Rust core must be safe on its own (R and other callers reach it too). The public entry
points named in the issue are run the same way at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

LIMIT = 2 << 30  # bytes of address space the child may use
TIMEOUT = 120

PRELUDE = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    import numpy as np
    from llmsurrogate import _core
    from llmsurrogate.exceptions import LLMSurrogateError
    y2, s2 = np.array([0.0, 1.0]), np.array([0.2, 0.8])
    try:
        result = {call}
        out = {{"raised": None, "result": repr(result)}}
    except BaseException as err:  # PanicException derives from BaseException
        out = {{"raised": type(err).__name__, "ours": isinstance(err, LLMSurrogateError),
               "memory": isinstance(err, MemoryError), "message": str(err)}}
    print("RESULT " + json.dumps(out))
""")


def run_isolated(call: str) -> dict:
    code = PRELUDE.format(limit=LIMIT, call=call)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:  # pragma: no cover - a failure, reported as such
        pytest.fail(f"{call} did not finish in {TIMEOUT} s")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"{call} killed the interpreter (exit {proc.returncode}); stderr tail:\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def assert_clean_error(out: dict, call: str, arg: str, *, memory: bool) -> None:
    assert out["raised"] is not None, f"{call} returned {out.get('result')} instead of raising"
    assert out["raised"] != "PanicException", f"{call} panicked: {out['message']}"
    assert out["ours"], f"{call} raised {out['raised']}, not an LLMSurrogateError: {out['message']}"
    assert f"`{arg}`" in out["message"], f"{call}: the message does not name `{arg}`: {out['message']}"
    if memory:
        assert out["raised"] == "ResourceError" and out["memory"], out
        assert "of memory" in out["message"] and "iB" in out["message"], out["message"]


# (call, argument named, a memory error?) — each aborted, panicked or wrapped around before
ERRORS = [
    # capacity overflow: PanicException
    ("_core.transfer_ustat_tail_bound(0.3, 0.5, 2**63, 1)", "n", True),
    # 2.4 TB of binomial terms: abort
    ("_core.transfer_ustat_tail_bound(0.3, 0.5, 10**12, 1)", "n", True),
    # 8 TiB permutation: abort
    ("_core.ess_permutation(2**40, 0)", "n", True),
    # 5.6 TB of bootstrap replicates: abort
    ("_core.risk_bootstrap(y2, s2, 10**11)", "n_boot", True),
    ("_core.risk_bootstrap_indices(2**40, 0, 0)", "n", True),
    # per-domain counts for 2^40 domains (8 TiB): abort
    ("_core.TransferTable(np.arange(4.0), np.array([0, 1, 0, 1]), 2**40)", "n", False),
    # offsets running past the nodes: index out of bounds, PanicException
    ("_core.ess_forest_predict_mean(np.array([1, -1, -1]), np.array([2, -1, -1]), np.array([0, -2, -2]),"
     " np.array([0.5, -2.0, -2.0]), np.ones((3, 1)), np.array([0, 10, 3], dtype=np.uint64),"
     " np.zeros((2, 1), dtype=np.float32))", "offsets", False),
    # B * N wrapped around to the length of lbar: a silent garbage answer
    ("_core.ess_variance_pieces(np.arange(4.0), np.arange(4.0), 2**62 + 1)", "n_train", False),
    # N + 1 wrapped around to 0: a silent wrong lower bound
    ("_core.ess_sequential_test([{'n_train': 2**64 - 1, 'llm_var': 0.0, **{k: dict(blocks=50, n_used=100,"
     " ecv=1.0, v_train=0.0, v_test=0.0, cov=0.0, sigma2_fixed_n=1.0, sigma2_fixed_b=1.0, sigma2_bm=1.0)"
     " for k in ('plain', 'diff')}}], 1.64)", "grid", False),
    # 2^40 starting points of width 0 (no memory behind the shape, 24 TiB of vectors): abort
    ("_core.transfer_nls_fit_subsets('eu_crra', np.array([0.5]), np.array([0]), np.array([0.0]), np.array([10.0]),"
     " np.empty((2**40, 0)), np.ones(2), np.ones(2), np.full(2, 0.5), np.ones(2), np.array([0, 2]),"
     " np.zeros((1, 1), dtype=np.int64))", "starts", True),
    # 2^20 subsets x 2^20 domains of MSEs (16 TiB), subsets a broadcast view: abort after a while
    ("_core.transfer_nls_fit_subsets('eu_crra', np.array([0.5]), np.array([0]), np.array([0.0]), np.array([10.0]),"
     " np.array([[0.3]]), np.ones(2**20), np.ones(2**20), np.full(2**20, 0.5), np.ones(2**20),"
     " np.arange(2**20 + 1), np.broadcast_to(np.zeros((1, 1), dtype=np.int64), (2**20, 1)))", "subsets", True),
]


@pytest.mark.parametrize(("call", "arg", "memory"), ERRORS, ids=[c[0][6:40] for c in ERRORS])
def test_core_raises_instead_of_aborting(call, arg, memory):
    assert_clean_error(run_isolated(call), call, arg, memory=memory)


# (call, reference answer) — each aborted before (dense per-bin arrays of 10^10 bins: 240 GB)
ANSWERS = [
    # one bin per row: ECE = mean |y - s| = 0.2
    ("_core.risk_ece_equal_width(y2, s2, 10**10)", "0.2"),
    ("float(_core.risk_point_metrics(y2, s2, 0.5, 10**10)[5])", "0.2"),
    ("_core.risk_bootstrap(y2, s2, 3, 7, 0.5, 10**10).shape", "(3, 7)"),
]


@pytest.mark.parametrize(("call", "expected"), ANSWERS, ids=[c[0][6:40] for c in ANSWERS])
def test_core_answers_huge_bin_counts(call, expected):
    out = run_isolated(call)
    assert out["raised"] is None, f"{call} raised {out['raised']}: {out['message']}"
    got = out["result"]
    if expected.startswith("("):
        assert got == expected
    else:
        assert float(got) == pytest.approx(float(expected), abs=1e-15)


# The public calls of the issue: the Python wrappers check these sizes too (InvalidArgumentError or
# ResourceError naming the argument); the process must survive either way.
PUBLIC = [
    ("__import__('llmsurrogate').transfer.ustat_tail_bound(0.3, 0.5, 2**63, 1)", "n"),
    ("__import__('llmsurrogate').transfer.ustat_tail_bound(0.3, 0.5, 10**12, 1)", "n"),
    ("__import__('llmsurrogate').ess.permutation(2**40, 0)", "n"),
    ("__import__('llmsurrogate').risk.ece([0, 1], [0.2, 0.8], bins=10**10)", "bins"),
    ("__import__('llmsurrogate').risk.evaluate([0, 1, 0, 1], [0.2, 0.8, 0.3, 0.6], n_boot=10**11)", "n_boot"),
]


@pytest.mark.parametrize(("call", "arg"), PUBLIC, ids=[c[0][26:60] for c in PUBLIC])
def test_public_calls_raise_instead_of_aborting(call, arg):
    assert_clean_error(run_isolated(call), call, arg, memory=False)
