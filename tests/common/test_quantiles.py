"""Rust quantile kernels against the NumPy references in tests/reference.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmsurrogate
from llmsurrogate import quantiles as q
from llmsurrogate.exceptions import (
    EmptyInputError,
    InvalidArgumentError,
    LLMSurrogateError,
    NonFiniteError,
    ShapeError,
)

import reference as ref

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
# few distinct values so that ties are common
tied = st.sampled_from([-2.0, 0.0, 0.5, 1.0, 3.0])
levels = st.one_of(st.floats(min_value=0.0, max_value=1.0), st.sampled_from([0.0, 0.25, 0.5, 0.75, 0.95, 1.0]))
weight = st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=100.0))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(finite, tied), min_size=1, max_size=60), levels)
def test_unweighted_matches_definition(values, tau):
    ones = np.ones(len(values))
    assert q.upper_quantile(values, tau) == ref.upper_quantile(values, ones, tau)
    assert q.lower_quantile(values, tau) == ref.lower_quantile(values, ones, tau)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(finite, tied), min_size=1, max_size=60), st.floats(min_value=1e-9, max_value=1.0))
def test_upper_is_r_type_1(values, tau):
    assert q.upper_quantile(values, tau) == ref.rank_upper(values, tau)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_weighted_matches_definition(data):
    n = data.draw(st.integers(min_value=1, max_value=40))
    values = data.draw(st.lists(st.one_of(finite, tied), min_size=n, max_size=n))
    weights = data.draw(st.lists(weight, min_size=n, max_size=n).filter(lambda w: sum(w) > 0))
    inf_w = data.draw(st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=50.0)))
    tau = data.draw(levels)
    assert q.weighted_upper_quantile(values, weights, tau, inf_weight=inf_w) == \
        ref.upper_quantile(values, weights, tau, inf_w)
    assert q.weighted_lower_quantile(values, weights, tau, inf_weight=inf_w) == \
        ref.lower_quantile(values, weights, tau, inf_w)


@settings(max_examples=100, deadline=None)
@given(st.lists(finite, min_size=1, max_size=80), st.lists(levels, min_size=1, max_size=12))
def test_vector_levels_equal_scalar_calls(values, taus):
    up = q.upper_quantile(values, taus)
    lo = q.lower_quantile(values, taus)
    assert isinstance(up, np.ndarray) and up.shape == (len(taus),)
    assert up.tolist() == [q.upper_quantile(values, t) for t in taus]
    assert lo.tolist() == [q.lower_quantile(values, t) for t in taus]


@settings(max_examples=100, deadline=None)
@given(st.lists(finite, min_size=1, max_size=50), st.floats(min_value=0.01, max_value=1000.0), levels)
def test_weights_are_scale_free_and_unit_weights_are_unweighted(values, scale, tau):
    ones = np.ones(len(values))
    assert q.weighted_upper_quantile(values, ones, tau) == q.upper_quantile(values, tau)
    assert q.weighted_lower_quantile(values, ones, tau) == q.lower_quantile(values, tau)
    # scaling all weights (and the mass at infinity) changes nothing
    w = np.linspace(1, 2, len(values))
    assert q.weighted_upper_quantile(values, w * scale, tau, inf_weight=0.3 * scale) == \
        q.weighted_upper_quantile(values, w, tau, inf_weight=0.3)


def test_known_answers_and_ends():
    x = [3.0, 1.0, 2.0, 4.0, 6.0, 5.0]
    assert q.upper_quantile(x, 0.5) == 3.0 and q.lower_quantile(x, 0.5) == 4.0
    assert q.upper_quantile(x, 0.0) == -np.inf and q.lower_quantile(x, 1.0) == np.inf
    assert q.upper_quantile(x, 1.0) == 6.0 and q.lower_quantile(x, 0.0) == 1.0
    # 0.5 * 1892 = 946.0000000000001 in floating point must still pick rank 946
    big = np.arange(1, 1893, dtype=float)
    assert q.upper_quantile(big, 0.5) == 946.0
    assert q.quantile_interval(big, 0.95) == (95.0, 1798.0)
    # the forecast-interval identity: lower end is f_(N+1-k)
    for tau in (0.9, 0.95, 0.975, 0.99, 1.0):
        k = int(np.ceil(tau * 1892 - 1e-9))
        assert q.quantile_interval(big, tau) == (float(1892 + 1 - k), float(k))


def test_infinite_mass_and_infinite_values():
    assert q.weighted_upper_quantile([1.0, 2.0], [1.0, 1.0], 0.5, inf_weight=2.0) == 2.0
    assert q.weighted_upper_quantile([1.0, 2.0], [1.0, 1.0], 0.51, inf_weight=2.0) == np.inf
    assert q.weighted_lower_quantile([1.0, 2.0], [1.0, 1.0], 0.49, inf_weight=2.0) == -np.inf
    assert q.weighted_quantile_interval([1.0, 2.0, 3.0], [1, 1, 1], 0.9, inf_weight=1.0) == (-np.inf, np.inf)
    assert q.upper_quantile([np.inf, 0.0], 1.0) == np.inf


def test_inputs_pandas_polars_lists():
    import polars as pl

    data = [5.0, 1.0, 4.0, 2.0, 3.0]
    expected = q.upper_quantile(np.array(data), 0.4)
    assert q.upper_quantile(pd.Series(data, index=[9, 8, 7, 6, 5]), 0.4) == expected
    assert q.upper_quantile(pl.Series(data), 0.4) == expected
    assert q.upper_quantile(tuple(data), 0.4) == expected
    assert q.upper_quantile(np.array(data, dtype=np.int32), 0.4) == expected
    assert q.upper_quantile(np.array(data)[1::2], 1.0) == 2.0  # non-contiguous view of [1, 2]
    assert q.upper_quantile(pd.Series(data), pd.Series([0.4, 1.0])).tolist() == [expected, 5.0]


def test_large_input_threads_agree():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(300_000)
    w = rng.uniform(0, 1, v.size)
    taus = np.linspace(0, 1, 21)
    one = q.weighted_upper_quantile(v, w, taus, n_jobs=1)
    two = q.weighted_upper_quantile(v, w, taus, n_jobs=2)
    np.testing.assert_array_equal(one, two)
    # numpy's inverted_cdf is the same rule without the 1e-12 level fuzz: compare away from integer tau*N
    off_grid = np.array([0.12345, 0.50001, 0.98765])
    np.testing.assert_array_equal(q.upper_quantile(v, off_grid, n_jobs=2),
                                  np.quantile(v, off_grid, method="inverted_cdf"))


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: q.upper_quantile([], 0.5), EmptyInputError, ["`values`", "empty"]),
        (lambda: q.upper_quantile([1.0, np.nan], 0.5), NonFiniteError, ["`values`", "position 1", "impute"]),
        (lambda: q.upper_quantile(pd.Series([1.0, None]), 0.5), NonFiniteError, ["`values`"]),
        (lambda: q.upper_quantile([1.0], 1.5), InvalidArgumentError, ["`tau`", "[0, 1]"]),
        (lambda: q.upper_quantile([1.0], np.nan), InvalidArgumentError, ["`tau`"]),
        (lambda: q.upper_quantile([1.0], True), InvalidArgumentError, ["`tau`", "bool"]),
        (lambda: q.upper_quantile(["a", "b"], 0.5), InvalidArgumentError, ["`values`", "numbers"]),
        (lambda: q.upper_quantile([[1.0, 2.0]], 0.5), ShapeError, ["`values`", "1-dimensional"]),
        (lambda: q.upper_quantile(None, 0.5), InvalidArgumentError, ["`values`", "None"]),
        (lambda: q.upper_quantile([1.0], 0.5, n_jobs=0), InvalidArgumentError, ["`n_jobs`"]),
        (lambda: q.upper_quantile([1.0], 0.5, n_jobs=1.5), InvalidArgumentError, ["`n_jobs`", "integer"]),
        (lambda: q.lower_quantile([np.nan], 0.5), NonFiniteError, ["`values`"]),
        (lambda: q.quantile_interval([1.0, 2.0], 0.5), InvalidArgumentError, ["`tau`", "(0.5, 1.0]"]),
        (lambda: q.weighted_upper_quantile([1.0, 2.0], [1.0], 0.5), ShapeError, ["`values`", "`weights`"]),
        (lambda: q.weighted_upper_quantile([1.0], [-1.0], 0.5), InvalidArgumentError, ["`weights`", ">= 0"]),
        (lambda: q.weighted_upper_quantile([1.0, 2.0], [0.0, 0.0], 0.5), InvalidArgumentError, ["all weights are zero"]),
        (lambda: q.weighted_upper_quantile([1.0], [np.inf], 0.5), NonFiniteError, ["`weights`"]),
        (lambda: q.weighted_upper_quantile([1.0], [np.nan], 0.5), NonFiniteError, ["`weights`"]),
        (lambda: q.weighted_lower_quantile([1.0], [1.0], 0.5, inf_weight=-1), InvalidArgumentError, ["`inf_weight`"]),
        (lambda: q.weighted_lower_quantile([1.0], [1.0], 0.5, inf_weight=np.nan), InvalidArgumentError, ["`inf_weight`"]),
        (lambda: q.weighted_quantile_interval([1.0], [1.0], 0.2), InvalidArgumentError, ["`tau`"]),
        (lambda: llmsurrogate.num_threads(0), InvalidArgumentError, ["`n_jobs`"]),
    ],
)
def test_bad_input_raises_package_errors(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, LLMSurrogateError)
    assert isinstance(info.value, ValueError)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_rust_errors_map_to_the_hierarchy():
    """Errors raised inside the Rust core (not by Python validation) arrive as package classes."""
    from llmsurrogate import _core

    with pytest.raises(NonFiniteError, match="position 2"):
        _core.upper_quantiles(np.array([1.0, 2.0, np.nan]), np.array([0.5]))
    with pytest.raises(ShapeError):
        _core.weighted_upper_quantiles(np.array([1.0, 2.0]), np.array([1.0]), np.array([0.5]))
    with pytest.raises(EmptyInputError):
        _core.lower_quantiles(np.array([1.0]), np.array([], dtype=float))
    with pytest.raises(InvalidArgumentError, match="0 threads"):
        _core.resolve_threads(0)


# ---- issue 11, defect 1: silent wrong answers --------------------------------------------------------

def test_weights_near_the_float_maximum_do_not_overflow():
    # three weights of 1e308 summed to inf, and every level selected the first value
    assert q.weighted_upper_quantile([1, 2, 3], [1e308] * 3, 0.9) == 3.0
    assert q.weighted_lower_quantile([1, 2, 3], [1e308] * 3, 0.1) == 1.0
    assert q.weighted_quantile_interval([1, 2, 3], [1e308] * 3, 0.9) == (1.0, 3.0)
    assert q.weighted_upper_quantile([1, 2, 3], [1e308] * 3, 0.5, inf_weight=1e308) == \
        q.weighted_upper_quantile([1, 2, 3], [1.0] * 3, 0.5, inf_weight=1.0)
    # tiny (subnormal) weights keep their ratios too
    assert q.weighted_upper_quantile([1, 2, 3], [5e-324] * 3, 0.9) == 3.0


def test_values_and_weights_are_paired_by_label():
    values = pd.Series([1.0, 2.0, 3.0], index=["a", "b", "c"])
    weights = pd.Series([0.0, 0.0, 1.0], index=["c", "b", "a"])  # all the mass on "a" = 1.0
    assert q.weighted_upper_quantile(values, weights, 0.9) == 1.0
    assert q.weighted_upper_quantile(values, weights.loc[values.index].to_numpy(), 0.9) == 1.0
    with pytest.raises(InvalidArgumentError, match=r"`values` and `weights`.*reset_index"):
        q.weighted_upper_quantile(values, pd.Series([1.0, 1.0, 1.0], index=["a", "b", "z"]), 0.9)
    # a plain array pairs by position
    assert q.weighted_upper_quantile(values, [0.0, 0.0, 1.0], 0.9) == 3.0


@pytest.mark.parametrize("bad, word", [
    (np.array([1 + 1j, 2 + 0j]), "complex"),
    (np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), "datetime64"),
    (np.array([1, 2], dtype="timedelta64[D]"), "datetime64"),
    (pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02"])), "datetime64"),
    (["1.5", "2"], "strings"),
    (np.array([1.0, "2"], dtype=object), "strings"),
])
def test_lossy_inputs_are_rejected(bad, word):
    with pytest.raises(InvalidArgumentError, match=rf"`values`.*{word}"):
        q.upper_quantile(bad, 0.5)
    with pytest.raises(InvalidArgumentError, match=rf"`weights`.*{word}"):
        q.weighted_upper_quantile([1.0, 2.0], bad, 0.5)
