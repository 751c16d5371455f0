"""Table builds that scale (issue 37, item 3).

* A complete design's errors are written where the table holds them as the fits finish
  (``_build._InLayout``; by test domain, then training set in lexicographic order), with no
  (training sets x domains) matrix, per-subset arrays, concatenations or sort: an EU r = 2 build
  peaked at 184 bytes per error (the table is 32), now at about 33 -- and the table is the sorted
  one of before, bit for bit.
* ``write_tidy`` writes a table a row group at a time, never the whole long frame with its label
  columns; the file is the one ``to_parquet`` wrote. ``transfer build --out F.parquet`` writes the
  rows as the fits finish (``error_table(out=...)``, tests/transfer/test_transfer_build_out.py).
* Black-box (scikit-learn) fits are run by cost (``_build._plan``): cheap ones in this process
  (a default ``n_jobs`` was 2-12x slower than ``n_jobs=1`` for small fits), costly ones in
  batches of fits per task. Tested on the strategy chosen, not on wall time.
"""

from __future__ import annotations

import gc
import itertools
import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from _samples import lotteries as _lotteries
from _samples import synthetic
from click.testing import CliRunner
from llmsurrogate import transfer as tr
from llmsurrogate.cli import cli
from llmsurrogate.exceptions import ComputationError
from llmsurrogate.transfer import _build, _write
from llmsurrogate.transfer._table import combinations_array, lex_layout


def _sorted_reference(mse, n, r):
    """The table of before: every (training set, test domain) row in the fits' order, then
    ErrorTable._from_arrays's checks and lexicographic sort."""
    combos = list(itertools.combinations(range(n), r))
    rows = [(s, d) for s in combos for d in range(n) if d not in s]
    values = np.array([mse[i, d] for i, s in enumerate(combos) for d in range(n) if d not in s])
    test = np.array([d for _, d in rows], dtype=np.int64)
    train = np.array([s for s, _ in rows], dtype=np.int64).reshape(-1, r)
    return tr.ErrorTable._from_arrays(values, test, train, list(range(n)), name="x", metric="m", arg="samples")


# ---- the layout -----------------------------------------------------------------------------------
@pytest.mark.parametrize("m,r", [(1, 1), (5, 1), (6, 2), (7, 3), (6, 6), (4, 5), (9, 4)])
def test_combinations_array_is_itertools_order(m, r):
    ref = np.array(list(itertools.combinations(range(m), r)), dtype=np.int64).reshape(-1, r)
    np.testing.assert_array_equal(combinations_array(m, r), ref)


@pytest.mark.parametrize("n,r", [(2, 1), (5, 1), (4, 2), (7, 2), (7, 3), (8, 5), (6, 5)])
def test_fits_written_in_any_order_give_the_sorted_table_bit_for_bit(n, r):
    rng = np.random.default_rng(n * 10 + r)
    mse = rng.random((math.comb(n, r), n))
    ref = _sorted_reference(mse, n, r)
    test, train = lex_layout(n, r)
    np.testing.assert_array_equal(test, ref.test)
    np.testing.assert_array_equal(train, ref.train)
    layout = _build._InLayout(n, r)
    layout.step = 2  # several passes per batch
    order = rng.permutation(math.comb(n, r))  # batches of training sets in any order, as a cache or pool gives them
    for part in np.array_split(order, min(3, order.size)):
        layout(part, mse[part])
    got = tr.ErrorTable._in_lex_layout(layout.result(), n, r, list(range(n)), name="x", metric="m")
    np.testing.assert_array_equal(got.values, ref.values)
    np.testing.assert_array_equal(got.test, ref.test)
    np.testing.assert_array_equal(got.train, ref.train)
    assert got.train.dtype == ref.train.dtype == np.int64 and got.train.shape == ref.train.shape
    if r == 1:
        np.testing.assert_array_equal(layout.diag, np.diag(mse))


def test_a_missing_fit_is_an_error_not_a_table():
    layout = _build._InLayout(5, 2)
    layout(np.arange(9), np.ones((9, 5)))  # 9 of 10 training sets
    with pytest.raises(ComputationError, match="internal error"):
        layout.result()


def test_non_finite_error_named_as_before_first_in_the_fits_order():
    """The first non-finite error in the fits' order (training set, then test domain) is the one
    named, as when the rows were concatenated in that order; the table's order would name another."""
    n, r = 6, 2
    data = _build._Samples(_lotteries(n), "domain", ["z1", "z2", "p1"], "ce")
    combos = list(itertools.combinations(range(n), r))
    mse = np.ones((len(combos), n))
    mse[combos.index((0, 5)), 1] = np.inf   # table order: test 1 comes first
    mse[combos.index((0, 3)), 4] = np.nan   # fits' order: training set (0, 3) comes first
    layout = _build._InLayout(n, r)
    layout(np.arange(len(combos)), mse)
    with pytest.raises(ComputationError, match=r"\(nan\) for train=\['D000', 'D003'\], test='D004'"):
        _build._assemble(data, combos, True, layout.result(), name="M", metric="m")


# ---- memory --------------------------------------------------------------------------------------
def _peak_per_error(call):
    gc.collect()
    tracemalloc.start()
    try:
        out = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak / out.N


def test_r2_build_peak_memory_per_error():
    """EU, r = 2, 70 domains (167,440 errors): the build's peak (numpy's allocations, traced) per
    error. Before: 184 B (the fits' matrix, per-subset arrays, their concatenations and int64
    copies, then the sort's keys, order and reordered copies); now the table's 32 B and a little."""
    data = _lotteries(70)
    tr.error_table(_lotteries(6), tr.EU(), r=2, progress=False)  # imports and one-off setup
    table, per_error = _peak_per_error(lambda: tr.error_table(data, tr.EU(), r=2, progress=False))
    assert table.N == 70 * math.comb(69, 2)
    assert per_error < 44, per_error


def test_tables_of_one_build_share_the_layout():
    """error_tables: every table of every model and kind holds the same read-only test and training
    arrays (16 + 8 bytes an error once, not per table)."""
    tabs = tr.error_tables(synthetic(n=6, m=20), {"EU": tr.EU(), "CPT": tr.CPT("g")}, r=2, n_jobs=1, progress=False)
    tables = [t for kinds in tabs.values() for t in kinds.values()]
    assert len(tables) == 6
    assert all(t.test is tables[0].test and t.train is tables[0].train for t in tables)
    assert not tables[0].train.flags.writeable and not tables[0].test.flags.writeable
    assert len({id(t.values) for t in tables}) == 6


# ---- writing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_written_in_blocks_equals_the_whole_frame(tmp_path, suffix):
    from llmsurrogate._atomic import write_frame

    table = tr.error_table(synthetic(n=7, m=20), tr.EU(), r=2, metric="rmse", progress=False)
    write_frame(tmp_path / f"whole{suffix}", table.tidy())
    _build.write_tidy(table, tmp_path / f"one{suffix}")            # one block: the same bytes
    assert (tmp_path / f"one{suffix}").read_bytes() == (tmp_path / f"whole{suffix}").read_bytes()
    _build.write_tidy(table, tmp_path / f"blocks{suffix}", rows=16)  # 7 * 15 = 105 rows: 7 blocks
    if suffix == ".csv":
        assert (tmp_path / f"blocks{suffix}").read_bytes() == (tmp_path / f"whole{suffix}").read_bytes()
        return
    import pyarrow.parquet as pq

    assert pq.ParquetFile(tmp_path / f"blocks{suffix}").metadata.num_row_groups == 7
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / f"blocks{suffix}"), table.tidy(), check_exact=True)


def test_cli_build_to_parquet_peak_memory_per_error(tmp_path, monkeypatch):
    """``transfer build --out F.parquet`` at 60 domains, r = 2 (102,660 errors), row groups of
    4,096 rows: the rows go to the file as the fits finish (``error_table(out=...)``) and the
    table is never made, so the command's peak (traced) is under 20 B an error (12 measured, mostly
    what does not grow with the table); with the table built first and written a row group at a
    time it was above the table's 32 B, and before that the build alone peaked at 184 B."""
    data = _lotteries(60)
    data.to_parquet(tmp_path / "d.parquet")
    _lotteries(6).to_parquet(tmp_path / "small.parquet")
    runner = CliRunner()
    warm = runner.invoke(cli, ["transfer", "build", "--data", str(tmp_path / "small.parquet"), "--model", "eu",
                               "-r", "2", "--out", str(tmp_path / "small_out.parquet")])
    assert warm.exit_code == 0, warm.output
    monkeypatch.setattr(_write, "_OUT_ROWS", 4096)
    gc.collect()
    tracemalloc.start()
    try:
        res = runner.invoke(cli, ["transfer", "build", "--data", str(tmp_path / "d.parquet"), "--model", "eu",
                                  "-r", "2", "--metric", "rmse", "--out", str(tmp_path / "t.parquet")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.exit_code == 0, res.output
    n_errors = 60 * math.comb(59, 2)
    assert peak / n_errors < 20, peak / n_errors
    assert f"wrote {n_errors} rows" in res.stdout
    got = tr.ErrorTable.from_long(pd.read_parquet(tmp_path / "t.parquet"))  # rows in the fits' order
    ref = tr.error_table(data, tr.EU(), r=2, metric="rmse", progress=False)
    assert got.domains == ref.domains and got.values.tobytes() == ref.values.tobytes()


# ---- black-box fits by cost -------------------------------------------------------------------------
def test_plan_by_cost():
    # cheap fits: one job whatever the workers (a cold pool costs seconds)
    assert _build._plan(200, 2, 0.002, _build._COLD_POOL_S)[0] == 1
    assert _build._plan(19_900, 16, 0.0002, _build._COLD_POOL_S)[0] == 1  # 4 s of fits
    # a warm pool and enough work: parallel, tasks of >= _TASK_S of fits, about 4 per worker
    jobs, batch = _build._plan(2000, 4, 0.01, _build._WARM_POOL_S)
    assert jobs == 4 and batch * 0.01 >= _build._TASK_S and math.ceil(2000 / batch) >= 4
    jobs, batch = _build._plan(400, 2, 0.5, _build._COLD_POOL_S)   # 200 s of fits
    assert jobs == 2 and math.ceil(400 / batch) == 8
    # never fewer tasks than workers
    for count, workers, cost in [(10, 8, 1.0), (3, 2, 10.0), (1000, 16, 0.001)]:
        jobs, batch = _build._plan(count, workers, cost, 0.0)
        assert jobs == 1 or math.ceil(count / batch) >= workers
    # Dask, Ray: unpriced, every worker gets tasks
    assert _build._plan(10, 2, None, 0.0) == (2, 2)


class _Counted:
    """A scikit-learn-style regressor (fit/predict) that counts nothing itself; the calls are
    counted on _fit_eval_batch."""

    def __init__(self, sleep=0.0):
        self.sleep = sleep

    def get_params(self, deep=True):
        return {"sleep": self.sleep}

    def set_params(self, **params):
        self.sleep = params.get("sleep", self.sleep)
        return self

    def fit(self, X, y):
        import time

        time.sleep(self.sleep)
        self.coef_ = np.linalg.lstsq(np.column_stack([X, np.ones(len(X))]), y, rcond=None)[0]
        return self

    def predict(self, X):
        return np.column_stack([X, np.ones(len(X))]) @ self.coef_


def test_cheap_fits_run_in_this_process_with_the_default_n_jobs(monkeypatch):
    """Small fits with the default n_jobs open no pool even when one would be cold (a default
    n_jobs used to be slower than n_jobs=1); the table is n_jobs=1's bit for bit."""
    from sklearn.linear_model import LinearRegression

    data = synthetic(n=12, m=20)
    ref = tr.error_table(data, LinearRegression(), r=1, n_jobs=1, progress=False)

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was opened for cheap fits")

    monkeypatch.setattr(_build, "parallel", no_pool)
    monkeypatch.setattr(_build, "_pool_start_s", lambda backend: 5.0, raising=False)
    got = tr.error_table(data, LinearRegression(), r=1, n_jobs=4, progress=False)
    np.testing.assert_array_equal(got.values, ref.values)
    got = tr.error_table(data, LinearRegression(), r=2, progress=False)
    np.testing.assert_array_equal(got.values, tr.error_table(data, LinearRegression(), r=2, n_jobs=1,
                                                             progress=False).values)


def test_costly_fits_go_to_workers_in_batches(monkeypatch):
    """Fits priced above what a pool costs run on the workers, many fits per task (the plan's
    batches), in order; the table equals n_jobs=1's bit for bit."""
    import joblib

    data = synthetic(n=8, m=20)
    ref = tr.error_table(data, _Counted(), r=2, n_jobs=1, progress=False)
    tasks = []
    real = _build._fit_eval_batch

    def counted(model, X, y, offsets, batch):
        tasks.append(len(batch))
        return real(model, X, y, offsets, batch)

    monkeypatch.setattr(_build, "_fit_eval_batch", counted)
    monkeypatch.setattr(_build, "_pool_start_s", lambda backend: 0.0)
    monkeypatch.setattr(_build, "_TASK_S", 0.0)
    with joblib.parallel_config(backend="threading"):
        got = tr.error_table(data, _Counted(sleep=0.01), r=2, n_jobs=2, progress=False)
    np.testing.assert_array_equal(got.values, ref.values)
    probed = 28 - sum(tasks)  # C(8, 2) = 28 fits: a few priced in this process, the rest in tasks
    assert 1 <= probed <= 8
    jobs, batch = _build._plan(28 - probed, 2, 0.01, 0.0)
    assert jobs == 2 and tasks == [batch] * (len(tasks) - 1) + [tasks[-1]] and len(tasks) == math.ceil(
        (28 - probed) / batch) and len(tasks) >= 2
