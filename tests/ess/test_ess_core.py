"""ESS Rust core against independent NumPy references (docs/methods/ess.md §10.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ess_reference as ref
from llmsurrogate import _core, ess
from llmsurrogate.exceptions import InvalidArgumentError

PIECE_MAP = {"ecv": "ecv", "v_train": "V_train", "v_test": "V_test", "cov": "C",
             "sigma2_fixed_n": "sigma2_fixed_N", "sigma2_fixed_b": "sigma2_fixed_B", "sigma2_bm": "sigma2_bm"}


def _accumulate(y, preds, N, llm_loss=None, chunk=3, complement=True, loss="squared", n_jobs=None):
    acc = _core.BlockOutAccumulator(y, N, loss, llm_loss)
    B, n = acc.blocks, acc.n_used
    for b0 in range(0, B, chunk):
        rows = []
        for b in range(b0, min(B, b0 + chunk)):
            p = np.asarray(preds(b))[:n]
            rows.append(np.concatenate([p[: b * N], p[(b + 1) * N:]]) if complement else p)
        acc.add_blocks(b0, np.ascontiguousarray(rows), n_jobs)
    return acc.finalize()


@pytest.mark.parametrize("n,N", [(61, 4), (200, 1), (200, 7), (1000, 13), (5000, 2500)])
def test_accumulator_equals_bruteforce_and_appendix_r(n, N):
    rng = np.random.default_rng(n + N)
    y = rng.normal(size=n)
    llm = rng.normal(size=n)
    llm_loss = (llm - y) ** 2
    P = {b: rng.normal(size=n) for b in range(n // N)}
    out = _accumulate(y, P.__getitem__, N, llm_loss, chunk=5, complement=(N % 2 == 0))
    e_b, lbar = ref.blockout_bruteforce(y, P.__getitem__, N)
    np.testing.assert_allclose(out["e_b"], e_b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out["lbar"], lbar, rtol=1e-12, atol=1e-14)
    ref_p = ref.variance_pieces(e_b, lbar, N)
    for k, r in PIECE_MAP.items():
        assert out["plain"][k] == pytest.approx(ref_p[r], rel=1e-10, abs=1e-13), k
    de_b, dlbar = ref.blockout_bruteforce(y, P.__getitem__, N, llm_loss=llm_loss)
    np.testing.assert_allclose(out["diff_e_b"], de_b, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(out["diff_lbar"], dlbar, rtol=1e-12, atol=1e-13)
    ref_d = ref.variance_pieces(de_b, dlbar, N)
    for k, r in PIECE_MAP.items():
        assert out["diff"][k] == pytest.approx(ref_d[r], rel=1e-10, abs=1e-13), k
    # (I1) mean of Lbar is the CV estimate; (I3) difference estimate = ecv - LLM mean on retained rows
    B = n // N
    assert lbar.mean() == pytest.approx(out["plain"]["ecv"], rel=1e-13)
    assert out["diff"]["ecv"] == pytest.approx(out["plain"]["ecv"] - llm_loss[: B * N].mean(), abs=1e-12)
    assert out["llm_mean"] == pytest.approx(llm_loss[: B * N].mean(), rel=1e-14)


def test_rust_variance_pieces_function_matches_appendix_r():
    rng = np.random.default_rng(3)
    e_b, lbar = rng.normal(size=25), rng.normal(size=25 * 6)
    got = _core.ess_variance_pieces(e_b, lbar, 6)
    want = ref.variance_pieces(e_b, lbar, 6)
    for k, r in PIECE_MAP.items():
        assert got[k] == pytest.approx(want[r], rel=1e-12)


def test_constant_learner_identities():
    """(I2) and docs/methods/ess.md §4.5: a learner that ignores its data."""
    rng = np.random.default_rng(5)
    n, N = 300, 6
    y = rng.exponential(size=n)
    out = _accumulate(y, lambda b: np.full(n, 0.5), N)
    loss = (0.5 - y) ** 2
    B = n // N
    m = loss.reshape(B, N).mean(axis=1)
    sm2 = m.var(ddof=1)
    assert out["plain"]["ecv"] == pytest.approx(loss.mean(), rel=1e-13)
    assert out["plain"]["v_train"] == pytest.approx(sm2 / (B - 1) ** 2, rel=1e-10)
    assert out["plain"]["cov"] == pytest.approx(-sm2 / (B - 1), rel=1e-10)
    assert out["plain"]["sigma2_fixed_b"] == pytest.approx(loss.var(ddof=1), rel=1e-12)


def test_learner_identical_to_llm_is_degenerate_and_not_rejected():
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"y": rng.normal(size=200)})
    df["llm"] = 0.0
    # the "algorithm" predicts 0 everywhere: identical to the LLM rule
    from sklearn.dummy import DummyRegressor

    res = ess.equivalent_sample_size(df, "y", "llm", algorithm=DummyRegressor(strategy="constant", constant=0.0),
                                     grid=[1, 5, 10], regime="fixed_N", seed=1, tuning="none")
    assert (res.table["diff"] == 0).all()
    assert res.table["degenerate"].all() and not res.table["reject"].any()
    assert res.lower_bound == 1 and res.status == "not_rejected_at_first_grid_point"


def test_losses_kernel():
    y = np.array([0.0, 1.0, 1.0, 0.0])
    p = np.array([0.2, 0.9, 0.0, 1.0])
    np.testing.assert_allclose(_core.ess_losses("squared", p, y), (p - y) ** 2)
    np.testing.assert_allclose(_core.ess_losses("absolute", p, y), np.abs(p - y))
    np.testing.assert_allclose(_core.ess_losses("zero_one", p, y), (p != y).astype(float))
    pc = np.clip(p, 1e-6, 1 - 1e-6)
    np.testing.assert_allclose(_core.ess_losses("log", p, y), -(y * np.log(pc) + (1 - y) * np.log(1 - pc)), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**63 + 7])
def test_permutation_matches_documented_algorithm(seed):
    for n in (1, 2, 17, 1000):
        np.testing.assert_array_equal(_core.ess_permutation(n, seed), ref.splitmix_permutation(n, seed))
    np.testing.assert_array_equal(ess.permutation(50, 3), ref.splitmix_permutation(50, 3))


def test_sequential_scan_equals_algorithm_31_on_random_tests():
    rng = np.random.default_rng(11)
    for trial in range(200):
        K = int(rng.integers(1, 8))
        grid = sorted(rng.choice(np.arange(1, 200), size=K, replace=False).tolist())
        pts, refs = [], []
        for N in grid:
            B = int(rng.integers(2, 120))
            e_b, lbar = rng.normal(0.3, 1, size=B), rng.normal(0.3, 1, size=B * N)
            pieces = _core.ess_variance_pieces(e_b, lbar, N)
            pts.append({"n_train": N, "plain": pieces, "diff": pieces, "llm_var": 0.0})
            refs.append(ref.one_sided_test(ref.variance_pieces(e_b, lbar, N)))
        got = _core.ess_sequential_test(pts, 1.6448536269514722, "hybrid", 40, "difference")
        want = ref.sequential_ess(grid, refs)
        assert got["lower_bound"] == want["N_tilde"]
        assert list(got["reject"]) == [r["reject"] for r in refs]
        # (3.5): first N with L_N <= 0
        lows = np.asarray(got["lower"])
        first = next((k for k in range(K) if lows[k] <= 0), None)
        assert got["stop_index"] == first


def test_tie_is_not_rejected_and_edges():
    p = {"blocks": 100, "n_used": 100, "ecv": 0.2, "v_train": 0, "v_test": 0, "cov": 0,
         "sigma2_fixed_n": 1.0, "sigma2_fixed_b": 1.0, "sigma2_bm": 1.0}
    got = _core.ess_sequential_test([{"n_train": 5, "plain": p, "diff": p, "llm_var": 0.0}], 2.0, "fixed_N", 40, "difference")
    assert got["reject"] == [False] and got["lower_bound"] == 1
    got = _core.ess_sequential_test([{"n_train": 5, "plain": p, "diff": p, "llm_var": 0.0}], 1.9, "fixed_N", 40, "difference")
    assert got["reject"] == [True] and got["lower_bound"] == 6 and got["stop_index"] is None
    q = dict(p, blocks=2)
    with pytest.raises(InvalidArgumentError, match="3 blocks"):
        _core.ess_sequential_test([{"n_train": 5, "plain": q, "diff": q, "llm_var": 0.0}], 1.9, "fixed_N", 40, "difference")


def test_bit_identical_across_threads_and_chunking():
    rng = np.random.default_rng(21)
    n, N = 40_000, 150
    y = rng.normal(size=n)
    llm_loss = rng.exponential(size=n)
    P = {}

    def preds(b):
        if b not in P:
            P[b] = np.random.default_rng(b).normal(size=n)
        return P[b]

    outs = [_accumulate(y, preds, N, llm_loss, chunk=c, n_jobs=j, complement=comp)
            for c, j, comp in [(1, 1, True), (7, 2, True), (64, 2, False), (1000, 1, False)]]
    for o in outs[1:]:
        np.testing.assert_array_equal(o["lbar"], outs[0]["lbar"])
        np.testing.assert_array_equal(o["e_b"], outs[0]["e_b"])
        assert o["diff"] == outs[0]["diff"]


def test_accumulator_input_errors():
    y = np.arange(10.0)
    with pytest.raises(InvalidArgumentError, match="N <= n/2"):
        _core.BlockOutAccumulator(y, 6)
    acc = _core.BlockOutAccumulator(y, 2)
    with pytest.raises(InvalidArgumentError, match="in order"):
        acc.add_blocks(1, np.zeros((1, 8)))
    bad = np.zeros((1, 8))
    bad[0, 3] = np.nan
    with pytest.raises(InvalidArgumentError, match="non-finite"):
        acc.add_blocks(0, bad)
    with pytest.raises(InvalidArgumentError, match="new accumulator"):
        acc.finalize()
    fresh = _core.BlockOutAccumulator(y, 2)
    with pytest.raises(InvalidArgumentError, match="blocks were added"):
        fresh.finalize()
    z1 = _core.BlockOutAccumulator(y, 2, "zero_one")
    bad[0, 3] = np.inf
    with pytest.raises(InvalidArgumentError, match="non-finite"):
        z1.add_blocks(0, bad)


def test_avx2_and_baseline_kernels_are_bit_identical():
    """The run-time-selected AVX2 kernels and the baseline build give the same bits."""
    import subprocess
    import sys

    code = (
        "import numpy as np, hashlib; from llmsurrogate import _core\n"
        "rng = np.random.default_rng(5); n = 9001; y = rng.normal(size=n); ll = rng.exponential(size=n)\n"
        "acc = _core.BlockOutAccumulator(y, 7, 'squared', ll)\n"
        "for b0 in range(0, acc.blocks, 50):\n"
        "    k = min(50, acc.blocks - b0); acc.add_blocks(b0, rng.normal(size=(k, acc.n_used - 7)))\n"
        "o = acc.finalize(); h = hashlib.sha256()\n"
        "for k in ('e_b', 'lbar', 'diff_e_b', 'diff_lbar'): h.update(o[k].tobytes())\n"
        "print(h.hexdigest(), repr(o['diff']['sigma2_fixed_n']))\n"
    )
    import os

    outs = []
    for env_extra in ({}, {"LLMSURROGATE_NO_AVX2": "1"}):
        env = dict(os.environ, **env_extra)
        env.pop("LLMSURROGATE_NO_AVX2", None) if not env_extra else None
        outs.append(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                   check=True).stdout)
    assert outs[0] == outs[1] and len(outs[0]) > 64
