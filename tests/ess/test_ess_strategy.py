"""Where block fits and tuning run (issue 37, item 5): the default ``n_jobs`` must never be slower
than one job. Small fits, or few of them, run in the calling thread; workers are started only when
the tasks timed so far say that they pay for their start and for handing their predictions back
(``_engine.pool_pays``). Before, every scikit-learn learner went to a pool of process workers: on 2
cores a lasso ESS at n = 5,000 took 9.0 s at the default ``n_jobs`` against 5.1 s with
``n_jobs=1``. These tests check the strategy chosen (pools opened, tasks dispatched), not time;
benchmarks/bench_scale_ess.py times it. No number depends on it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest
from joblib import delayed, parallel_config

from llmsurrogate import ess
from llmsurrogate.ess import _engine


def _data(n=400, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, 0.5, -0.3] + rng.normal(size=n)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["y"], df["llm"] = y, X[:, 0] + rng.normal(size=n)
    return df


def test_small_fits_open_no_pool(monkeypatch):
    """A lasso ESS on 400 rows (tuning at 8 sizes, ~800 block fits of milliseconds) at the default
    ``n_jobs`` with two workers allowed: no pool is opened (the old code opened one for the tuning
    and one per grid point), and the numbers are those of ``n_jobs=1``."""
    df = _data()
    kw = dict(algorithm="lasso", seed=0, progress=False)
    one = ess.equivalent_sample_size(df, "y", "llm", n_jobs=1, **kw)
    opened = []
    real = _engine.parallel

    def spy(*args, **kwargs):
        opened.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(_engine, "parallel", spy)
    # as on an idle machine with no pool running yet (an earlier test's pool would start for free)
    monkeypatch.setattr(_engine, "_pool_start_s", lambda workers: _engine.POOL_START_S)
    monkeypatch.setattr(_engine, "_free_workers", lambda workers: workers)
    monkeypatch.setenv("LLMSURROGATE_NUM_THREADS", "2")   # the default n_jobs: two workers
    two = ess.equivalent_sample_size(df, "y", "llm", **kw)
    assert opened == []
    pd.testing.assert_frame_equal(one.table, two.table, check_exact=True)


@pytest.fixture(autouse=True)
def _two_workers(monkeypatch):
    """The default n_jobs resolves to two workers in these tests (as on a 2-core machine)."""
    monkeypatch.setenv("LLMSURROGATE_NUM_THREADS", "2")


def _where(i, wait):
    time.sleep(wait)
    return i, threading.get_ident()


def test_costly_tasks_go_to_the_workers(monkeypatch):
    """Tasks of 50 ms with a free pool start on idle cores: two are timed in the calling thread,
    the other 18 run on the workers, and the results come back in order."""
    monkeypatch.setattr(_engine, "POOL_START_S", 0.0)
    monkeypatch.setattr(_engine, "_free_workers", lambda workers: workers)
    me = threading.get_ident()
    with parallel_config(backend="threading"):
        got = list(_engine.run_tasks([delayed(_where)(i, 0.05) for i in range(20)], None, "threads"))
    assert [i for i, _ in got] == list(range(20))
    assert [t == me for _, t in got] == [True] * 2 + [False] * 18


def test_busy_cores_keep_the_tasks_here(monkeypatch):
    """The same tasks when other processes keep every core but this thread's busy (load 3 on 2
    cores): all of them run in the calling thread."""
    monkeypatch.setattr(_engine, "POOL_START_S", 0.0)
    monkeypatch.setattr(_engine.os, "getloadavg", lambda: (3.0, 3.0, 3.0))
    monkeypatch.setattr(_engine.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert _engine._free_workers(2) == 1
    me = threading.get_ident()
    with parallel_config(backend="threading"):
        got = list(_engine.run_tasks([delayed(_where)(i, 0.05) for i in range(8)], None, "threads"))
    assert [i for i, _ in got] == list(range(8))
    assert all(t == me for _, t in got)


def test_tasks_whose_results_cost_more_to_hand_back_stay_here(monkeypatch):
    """The same tasks, each handing back 10^8 numbers (3 s of unpickling in the calling process
    against 50 ms of work): all of them run in the calling thread."""
    monkeypatch.setattr(_engine, "POOL_START_S", 0.0)
    me = threading.get_ident()
    with parallel_config(backend="threading"):
        got = list(_engine.run_tasks([delayed(_where)(i, 0.05) for i in range(8)], None, "threads",
                                     values=10 ** 8))
    assert [i for i, _ in got] == list(range(8))
    assert all(t == me for _, t in got)


def test_workers_asked_for_by_number_get_every_task(monkeypatch):
    """``n_jobs=2`` given: the tasks go to the workers at once, even where the cost rule would
    keep them here (busy cores); the choice by cost is the default's."""
    monkeypatch.setattr(_engine, "_free_workers", lambda workers: 1)
    me = threading.get_ident()
    with parallel_config(backend="threading"):
        got = list(_engine.run_tasks([delayed(_where)(i, 0.01) for i in range(6)], 2, "threads"))
    assert [i for i, _ in got] == list(range(6))
    assert all(t != me for _, t in got)


def test_one_job_never_opens_a_pool(monkeypatch):
    monkeypatch.setattr(_engine, "POOL_START_S", 0.0)
    monkeypatch.setattr(_engine, "_in_order", lambda *a: pytest.fail("a pool was opened"))
    assert [i for i, _ in _engine.run_tasks([delayed(_where)(i, 0.02) for i in range(6)], 1, "threads")] == \
        list(range(6))


@pytest.mark.parametrize("times, remaining, workers, values, growing, start, expected", [
    ([9.0], 100, 2, 0, False, 0.0, False),           # one timed task is no estimate (it carries the imports)
    ([9.0, 0.001], 100, 2, 0, False, 3.0, False),    # the fastest counts: 0.1 s left
    ([1.0, 1.0], 1, 2, 0, False, 0.0, False),        # one task left: nothing to share
    ([1.0, 1.0], 10, 1, 0, False, 0.0, False),       # one worker
    ([1.0, 1.0], 10, 2, 0, False, 2.0, True),        # 10 s here, 2 + 5 s on two workers
    ([1.0, 1.0], 10, 2, 0, False, 5.0, False),       # 5 + 5 s: above 3/4 of 10 s
    ([1.0, 1.0], 10, 2, 10 ** 8, False, 0.0, False),  # 30 s handing the results back
    ([0.5, 0.9, 1.0], 10, 2, 0, True, 2.0, True),    # growing: the faster of the last two bounds the rest
    ([0.5, 0.9, 1.0], 10, 2, 0, False, 2.0, False),  # not growing: the fastest, 5 s left
    ([0.0, 2.0], 10, 2, 0, True, 2.0, False),        # the imports on the second task: not an estimate
    ([0.01, 0.01], 100, 2, 0, False, 0.0, False),    # a running pool: 2 s of hand-offs for 1 s of work
])
def test_pool_pays(times, remaining, workers, values, growing, start, expected):
    assert _engine.pool_pays(times, remaining, workers, values, growing, start) is expected
