"""Nothing a transfer call allocates stays allocated after it returns unless the caller holds it
(issue 37, item 1): the square layout's index arrays (the test and training domain of every
error, 16 bytes an error) were kept by an ``lru_cache`` for the last 8 sizes, 1.6 GB at 10^8
errors. Tables alive at once still share them."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

from llmsurrogate import transfer
from llmsurrogate.transfer import ErrorTable, square_layout

D = 400


def _matrix(seed=0):
    M = np.random.default_rng(seed).random((D, D))
    np.fill_diagonal(M, np.nan)
    return M


def test_nothing_held_after_the_calls_return():
    M = _matrix()
    warm = M[:50, :50]
    transfer.qte_interval(warm, 0.9)   # imports and one-off setup outside the measurement (another size)
    transfer.forecast_interval(warm, 0.9)
    ErrorTable.from_matrix(warm).to_matrix()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for call in (lambda: transfer.qte_interval(M, 0.9), lambda: transfer.forecast_interval(M, 0.9),
                     lambda: ErrorTable.from_matrix(M).to_matrix()):
            out = call()
            del out
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held / (D * (D - 1)) < 2.0, held / (D * (D - 1))   # bytes per error (16.5 before)


def test_tables_alive_at_once_share_the_layout():
    """Tables made in the square layout (ErrorTable._square: the R bridge's and the builds' path) hold
    one copy of its index arrays between them, and once none holds them they are gone."""
    import weakref

    n = D * (D - 1)
    a = ErrorTable._square(np.zeros(n), D, range(D), name="a", metric="m")
    b = ErrorTable._square(np.ones(n), D, range(D), name="b", metric="m")
    test, train = square_layout(D)
    assert a.test is b.test is test and a.train is b.train is train
    ref = weakref.ref(test)
    del a, b, test, train
    gc.collect()
    assert ref() is None
