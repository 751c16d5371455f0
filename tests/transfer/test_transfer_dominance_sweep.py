"""Worst-case bounds and dominance in one sweep per τ with O(1) work per step (issue 37, item 1):
Γ*_j from the counts around θ = τ'N/n instead of a scan over all n sorted counts, every τ started
from one pass over the table, and a matrix's sorted table read straight from the matrix.

The reference is the scan the kernel did before, written out here in Python (IEEE doubles, the
same expressions in the same order, so the same bits): the step functions must be equal bit for
bit, for tables where θ is within rounding of a whole number too (K = 100: every τ of the grid).
"""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import llmsurrogate.transfer as tr
from llmsurrogate import _core
from llmsurrogate.transfer import ErrorTable
from llmsurrogate.transfer._common import DEFAULT_TAULIST, SquareMatrix, _core_table, _same


def _scan_steps(values: np.ndarray, test: np.ndarray, n: int, tau: float, gamma_max: float):
    """The step function Γ ↦ ē_τ(Γ) by the O(N n) scan (docs/methods/transfer.md A4 before issue 37)."""
    nn = values.size
    t = tau - 1e-12
    j0 = max(min(max(math.ceil(nn * t), 1), nn), 1)
    counts = np.zeros(n, dtype=np.int64)
    for d in test[: j0 - 1]:
        counts[d] += 1
    big_c_base = t * nn
    gs, vs, best = [], [], 0.0
    for j in range(j0, nn + 1):
        counts[test[j - 1]] += 1
        big_c = min(big_c_base - j, 0.0)
        pk, s_star = 0.0, math.inf
        for k, c in enumerate(np.sort(counts).tolist()):
            pk += float(c)
            kk = float(k + 1)
            den = float(n) * pk - kk * float(j) - big_c * kk
            if den < 0.0:
                s = float(n) * big_c / den
                if s < s_star:
                    s_star = s
        g = math.inf if math.isinf(s_star) else math.sqrt(1.0 + max(s_star, 0.0))
        if g > best:
            v = values[j - 1]
            if gs and vs[-1] == v:
                gs[-1] = g
            else:
                gs.append(g)
                vs.append(v)
            best = g
            if g >= gamma_max:
                break
    return gs, vs


def _bits(x) -> list[int]:
    return np.asarray(x, dtype=np.float64).view(np.int64).tolist()


@pytest.mark.parametrize("n,seed", [(101, 1), (40, 2), (12, 3)])
@pytest.mark.parametrize("gamma_max", [math.inf, 1.5])
def test_step_functions_equal_the_scan_bit_for_bit(n, seed, gamma_max):
    rng = np.random.default_rng(seed)
    m = np.round(rng.gamma(2.0, 1.0, size=(n, n)), 1)   # ties
    core = _core_table(SquareMatrix(m))
    values, test = core.sorted_values(), core.sorted_test()
    taus = [0.5, 0.75, 0.9, 0.95, 0.99, 1.0]
    many = core.gamma_steps_many(np.array(taus), gamma_max)
    for tau, (g, v) in zip(taus, many):
        want_g, want_v = _scan_steps(values, test, n, tau, gamma_max)
        assert _bits(g) == _bits(want_g) and _bits(v) == _bits(want_v), (n, tau, gamma_max)
        one = core.gamma_steps(tau, gamma_max)
        assert _bits(one[0]) == _bits(g) and _bits(one[1]) == _bits(v)


def test_a_matrix_and_its_table_give_the_same_sorted_table_and_answers():
    rng = np.random.default_rng(7)
    m1 = rng.choice([0.0, -0.0, 1.0, 2.0, 3.5], size=(30, 30))   # ties across test domains
    m2 = m1 + rng.choice([-1.0, 0.0, 1.0], size=m1.shape)
    for m in (m1, m2):
        square, table = _core_table(SquareMatrix(m)), _core_table(ErrorTable.from_matrix(m))
        assert _bits(square.sorted_values()) == _bits(table.sorted_values())
        assert square.sorted_test().tolist() == table.sorted_test().tolist()
    s1, s2 = _same(m1, m2, square=True)
    assert isinstance(s1, SquareMatrix) and isinstance(s2, SquareMatrix)
    long1, long2 = ErrorTable.from_matrix(m1).tidy(), ErrorTable.from_matrix(m2).tidy()   # through ErrorTables
    for g in (math.inf, 1.3):
        assert tr.check_worstcase_dominance(m1, m2, Gamma=g).equals(tr.check_worstcase_dominance(long1, long2, Gamma=g))
        assert tr.check_worstcase_dominance(m2, m1, Gamma=g, mode="transferUQ").equals(
            tr.check_worstcase_dominance(long2, long1, Gamma=g, mode="transferUQ"))
    for kind in ("worstcase", "everywhere"):
        for a, b in ((m1, m2), (m2, m1)):
            want = tr.critical_gamma(ErrorTable.from_matrix(a).tidy(), ErrorTable.from_matrix(b).tidy(), [0.8, 0.9],
                                     kind=kind)
            assert _bits(tr.critical_gamma(a, b, [0.8, 0.9], kind=kind)) == _bits(want)
    assert tr.everywhere_dominance_box(m1, m2, Gamma=1.5).equals(tr.everywhere_dominance_box(long1, long2, Gamma=1.5))


def test_a_matrix_with_a_missing_cell_gets_the_tables_error():
    m = np.random.default_rng(3).random((6, 6))
    m[2, 4] = np.nan
    with pytest.raises(Exception) as want:
        ErrorTable.from_matrix(m, arg="err1")
    with pytest.raises(type(want.value), match="train=2, test=4"):
        tr.check_worstcase_dominance(m, np.ones((6, 6)))


_PEAK = textwrap.dedent("""
    import gc, json, sys
    import numpy as np
    import llmsurrogate.transfer as tr

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

    D = int(sys.argv[1])
    rng = np.random.default_rng(0)
    E1 = rng.gamma(2.0, 1.0, size=(D, D)); E2 = E1 * rng.uniform(0.9, 1.2, size=(D, D))
    tr.check_worstcase_dominance(E1[:50, :50], E2[:50, :50])   # imports and one-off setup
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    tr.check_worstcase_dominance(E1, E2)
    print(json.dumps({"per_error": (status("VmHWM") - base) / (D * (D - 1))}))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak resident size from /proc")
def test_dominance_of_two_matrices_takes_at_most_24_bytes_an_error():
    """Peak above the two matrices: over the default τ ≥ 0.5 each table is held from its median
    rank up (``SortedTail``: 6 bytes an error of the whole table), the second built while the first
    is held (a selection copy of 8 bytes an error, then pairs of 8 and test domains of 2), and the
    sweeps' step functions: 16 at 10^8 errors, 21 here (measured). Whole sorted tables took 32;
    reading the matrices as ErrorTables first took 87."""
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("cannot reset the peak resident size (/proc/self/clear_refs)")
    run = subprocess.run([sys.executable, "-c", _PEAK, "1500"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    peak = pd.read_json(io.StringIO(run.stdout.strip().splitlines()[-1]), typ="series")["per_error"]
    assert peak <= 24.0, peak


@pytest.mark.parametrize("mode", ["exact", "paper", "transferUQ"])
def test_everywhere_dominance_in_one_sweep_equals_each_tau_alone(mode):
    """All tau share one sweep over the ranks (issue 37): each tau's answer and witness are those
    of a sweep for that tau alone."""
    rng = np.random.default_rng(11)
    m1 = np.round(rng.gamma(2.0, 1.0, size=(25, 25)), 1)
    m2 = np.round(m1 * rng.uniform(0.9, 1.2, size=m1.shape), 1)
    taus = [0.93, 0.5, 0.71, 1.0, 0.6, 0.85]
    for a, b in ((m1, m2), (m2, m1), (m1, m1 + 0.05)):
        together = tr.check_everywhere_dominance(a, b, taus, mode=mode)
        alone = pd.concat([tr.check_everywhere_dominance(a, b, [t], mode=mode) for t in taus], ignore_index=True)
        assert together.equals(alone)
    if mode == "exact":
        together = tr.everywhere_dominance(m1, m2, taus).table
        alone = pd.concat([tr.everywhere_dominance(m1, m2, [t]).table for t in taus], ignore_index=True)
        assert together.equals(alone)
