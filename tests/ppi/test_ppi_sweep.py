"""The quantile's sorted sweep in Rust (``_core.ppi_cumulative_at`` through
``ppi._stats._cumulative_at``): the sums of increments of the rows with value <= t at every t of a
sorted grid, against numpy (the brute force and the argsort/cumsum/searchsorted it replaced), with
ties, signed zeros and weights; the same bits for any thread count; shape errors as exceptions."""

import numpy as np
import pytest

from llmsurrogate import _core
from llmsurrogate.exceptions import InvalidArgumentError, NonFiniteError, ShapeError
from llmsurrogate.ppi import _stats


def _brute(values, increments, grid):
    below = values[None, :] <= grid[:, None]
    return [below.astype(float) @ inc for inc in increments]


def _numpy_sweep(values, increments, grid):
    """The numpy code the Rust sweep replaced (stable argsort, cumsum, searchsorted side='right')."""
    order = np.argsort(values, kind="stable")
    idx = np.searchsorted(values[order], grid, side="right")
    return [np.concatenate([[0.0], np.cumsum(inc[order])])[idx] for inc in increments]


def _data(seed, n):
    rng = np.random.default_rng(seed)
    values = np.round(rng.lognormal(size=n), 1) - 1.0        # many ties
    values[rng.integers(0, n, n // 50)] = -0.0
    values[rng.integers(0, n, n // 50)] = 0.0
    w = rng.gamma(2.0, size=n)
    grid = np.sort(np.concatenate([np.unique(values), rng.normal(size=50), [-5.0, -0.0, 0.0, 1e9], values[:7]]))
    return values, [w, w * w, rng.normal(size=n)], grid


@pytest.mark.parametrize("seed, n", [(0, 1), (1, 17), (2, 2000)])
def test_sweep_matches_brute_force(seed, n):
    values, incs, grid = _data(seed, n)
    got = _stats._cumulative_at(values, incs, grid)
    assert len(got) == 3
    for g, b in zip(got, _brute(values, incs, grid)):
        np.testing.assert_allclose(g, b, rtol=1e-12, atol=1e-12)


def test_sweep_is_the_numpy_sweep_bit_for_bit():
    values, incs, grid = _data(3, 100_000)
    for g, b in zip(_stats._cumulative_at(values, incs, grid), _numpy_sweep(values, incs, grid)):
        np.testing.assert_array_equal(g, b)


def test_sweep_does_not_depend_on_threads(monkeypatch):
    values, incs, grid = _data(4, 200_000)
    inc = np.ascontiguousarray(np.stack(incs))
    one = _core.ppi_cumulative_at(values, inc, grid, n_jobs=1)
    for j in (2, 3, 8):
        assert _core.ppi_cumulative_at(values, inc, grid, n_jobs=j).tobytes() == one.tobytes()
    for env in ("1", "4"):
        monkeypatch.setenv("LLMSURROGATE_NUM_THREADS", env)
        assert np.stack(_stats._cumulative_at(values, incs, grid)).tobytes() == one.tobytes()


def test_sweep_empty_inputs():
    grid = np.array([0.0, 1.0])
    assert [g.tolist() for g in _stats._cumulative_at(np.empty(0), [np.empty(0)], grid)] == [[0.0, 0.0]]
    assert _stats._cumulative_at(np.array([1.0]), [], grid) == []
    assert _stats._cumulative_at(np.array([1.0]), [np.ones(1)], np.empty(0))[0].shape == (0,)
    assert _core.ppi_cumulative_at(np.empty(0), np.empty((0, 0)), np.empty(0)).shape == (0, 0)


def test_sweep_shape_errors_are_exceptions():
    with pytest.raises(ShapeError, match="increments"):
        _core.ppi_cumulative_at(np.ones(3), np.ones((2, 4)), np.zeros(1))
    with pytest.raises(InvalidArgumentError, match="sorted"):
        _core.ppi_cumulative_at(np.ones(3), np.ones((1, 3)), np.array([1.0, 0.0]))
    with pytest.raises(NonFiniteError, match="values"):
        _core.ppi_cumulative_at(np.array([1.0, np.nan]), np.ones((1, 2)), np.zeros(1))
