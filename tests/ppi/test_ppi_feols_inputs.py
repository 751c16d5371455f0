"""ppi.feols on the data users have after real work: a fixed effect (and a CRV1 cluster column)
holding dates (datetime64, ``datetime.date`` objects, the two mixed across the samples), a pandas
Categorical in a meaningful, non-alphabetical order with unused categories, whole numbers stored as
float, frames whose index is a permutation. Each is a relabelling of the same data with plain
integer codes in that column, so estimates, standard errors and lambda must be identical (1e-10)
for ppi++, ppi and classical and vcov hetero, iid and CRV1. Missing ids and cluster ids of another
type in one sample are errors that name the column."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import ppi
from llmsurrogate.exceptions import InvalidArgumentError

METHODS = ("ppi++", "ppi", "classical")
DAYS = pd.to_datetime(["2024-03-05", "2023-12-31", "2024-01-15", "2024-02-29", "2023-07-01", "2024-06-30"])
GRADES = ["low", "mid", "high", "top"]  # the meaningful order: not alphabetical


def _rows(rng, m):
    df = pd.DataFrame({"firm": rng.integers(0, 7, m), "day": rng.integers(0, len(DAYS), m),
                       "x": rng.normal(size=m), "z": rng.normal(size=m)})
    df["x"] += 0.2 * df["firm"]
    df["y"] = (1.2 * df["x"] - 0.4 * df["z"] + np.sin(df["firm"]) + 0.3 * df["day"]
               + rng.normal(size=m) * (1 + 0.4 * np.abs(df["z"])))
    df["llm"] = df["y"] + rng.normal(scale=0.7, size=m) + 0.3 * np.cos(df["day"])
    return df


@pytest.fixture(scope="module")
def data():
    """Integer codes: ``firm`` 0..6 and ``day`` 0..5 (the reference)."""
    rng = np.random.default_rng(11)
    return _rows(rng, 160), _rows(rng, 900).drop(columns="y")


def _numbers(res):
    return res.table[["estimate", "std_error", "lam"]].to_numpy(float)


def _relabelled(lab, unl, col, f_lab, f_unl=None):
    lab, unl = lab.copy(), unl.copy()
    lab[col] = f_lab(lab[col])
    unl[col] = (f_unl or f_lab)(unl[col])
    return lab, unl


def _expect_same(ref, other, formula="y ~ x + z | firm + day", vcovs=("hetero", "iid", {"CRV1": "day"}),
                 formula_other=None):
    for vcov in vcovs:
        for method in METHODS:
            a = ppi.feols(formula, *ref, prediction="llm", vcov=vcov, method=method)
            b = ppi.feols(formula_other or formula, *other, prediction="llm", vcov=vcov, method=method)
            assert a.terms == b.terms
            np.testing.assert_allclose(_numbers(b), _numbers(a), rtol=1e-10, atol=1e-10,
                                       err_msg=f"vcov={vcov}, method={method}")


def _as_datetime64(s):
    return pd.Series(DAYS[s.to_numpy()], index=s.index)


def _as_date_objects(s):
    return pd.Series([DAYS[i].date() for i in s], index=s.index, dtype=object)


def test_a_datetime64_fixed_effect_and_cluster_equal_integer_codes(data):
    other = _relabelled(*data, "day", _as_datetime64)
    assert other[0]["day"].dtype.kind == "M"
    _expect_same(data, other)


def test_date_objects_as_fixed_effect_and_cluster_equal_integer_codes(data):
    other = _relabelled(*data, "day", _as_date_objects)
    assert other[0]["day"].dtype == object and isinstance(other[0]["day"].iloc[0], dt.date)
    _expect_same(data, other)


def test_a_date_cluster_that_is_no_fixed_effect_equals_integer_codes(data):
    """CRV1 by a date column outside the formula, as datetime64 in both samples, as date objects in
    both, and as datetime64 in one and date objects in the other: the same day is one cluster
    (before the fix the mixed case split each day in two clusters: ppi++ se 0.06 off)."""
    for f_lab, f_unl in ((_as_datetime64, None), (_as_date_objects, None), (_as_datetime64, _as_date_objects),
                         (_as_date_objects, _as_datetime64)):
        other = _relabelled(*data, "day", f_lab, f_unl)
        _expect_same(data, other, formula="y ~ x + z | firm", vcovs=({"CRV1": "day"},))


def test_a_fixed_effect_of_dates_interacted_with_another_equals_integer_codes(data):
    _expect_same(data, _relabelled(*data, "day", _as_datetime64), formula="y ~ x + z | firm^day",
                 vcovs=("hetero", {"CRV1": "firm"}))


def test_an_ordered_categorical_with_unused_categories_equals_integer_codes(data):
    """``firm`` as a Categorical whose categories are in a meaningful order (not alphabetical, not
    the order of first appearance), with categories no row uses, and a different category list in
    each sample (ordered in one, unordered in the other)."""
    names = ["zeta", "alpha", "mu", "beta", "omega", "kappa", "delta"]
    cats_lab = ["omega", "unused", "alpha", "zeta", "delta", "beta", "kappa", "mu", "never"]
    cats_unl = ["mu", "kappa", "beta", "alpha", "zeta", "omega", "delta", "only_here"]

    def cat(categories, ordered):
        return lambda s: pd.Series(pd.Categorical([names[i] for i in s], categories=categories, ordered=ordered),
                                   index=s.index)

    other = _relabelled(*data, "firm", cat(cats_lab, True), cat(cats_unl, False))
    assert isinstance(other[0]["firm"].dtype, pd.CategoricalDtype)
    _expect_same(data, other, vcovs=("hetero", "iid", {"CRV1": "firm"}))
    # the same categories and order in both samples, as the cluster too
    _expect_same(data, _relabelled(*data, "firm", cat(cats_lab, True)), vcovs=({"CRV1": "firm"},))


def test_a_categorical_of_grades_in_order_equals_integer_codes(data):
    """An R-style factor with levels low < mid < high < top (the day codes mapped onto four grades
    so that each grade is one code)."""
    lab, unl = (df[df["day"] < len(GRADES)].reset_index(drop=True) for df in data)
    grade = lambda s: pd.Series(pd.Categorical([GRADES[i] for i in s], categories=GRADES, ordered=True),
                                index=s.index)
    _expect_same((lab, unl), _relabelled(lab, unl, "day", grade))


def test_whole_numbers_stored_as_float_equal_integer_codes(data):
    """FE and cluster codes as float (as after a merge that brought NaN in another column), shifted
    and spread out; and float in one sample, integer in the other."""
    _expect_same(data, _relabelled(*data, "day", lambda s: s.astype(float) * 10.0 + 1990.0))
    _expect_same(data, _relabelled(*data, "day", lambda s: s.astype(float), lambda s: s))
    _expect_same(data, _relabelled(*data, "firm", lambda s: s.astype(float) + 100.0),
                 vcovs=({"CRV1": "firm"},))


def test_frames_with_a_permuted_index_equal_the_sorted_ones(data):
    """Rows sampled (a permuted RangeIndex) or sorted by another column: the same rows, so the
    same numbers up to the order of summation."""
    lab, unl = data
    for other in ((lab.sample(frac=1.0, random_state=1), unl.sample(frac=1.0, random_state=2)),
                  (lab.sort_values("x"), unl.sort_values(["day", "z"])),
                  (lab.set_index(lab.index[::-1] + 1000), unl.set_index(unl.index * 3))):
        assert not other[0].index.equals(lab.index)
        _expect_same(data, other)


def test_dates_categorical_and_permutation_together(data):
    lab, unl = _relabelled(*data, "day", _as_date_objects, _as_datetime64)
    lab["firm"] = pd.Categorical(lab["firm"].map(lambda i: f"f{6 - i}"), categories=[f"f{i}" for i in range(9)])
    unl["firm"] = unl["firm"].map(lambda i: f"f{6 - i}")
    other = (lab.sample(frac=1.0, random_state=3), unl.sample(frac=1.0, random_state=4))
    _expect_same(data, other)


def test_missing_ids_and_mixed_cluster_types_are_errors_naming_the_column(data):
    lab, unl = _relabelled(*data, "day", _as_datetime64)
    bad = lab.copy()
    bad.loc[5, "day"] = pd.NaT
    with pytest.raises(InvalidArgumentError, match=r"`labeled`: the fixed effect 'day' has a missing value .* row 5"):
        ppi.feols("y ~ x | firm + day", bad, unl, prediction="llm")
    with pytest.raises(InvalidArgumentError, match=r"`labeled`: the cluster column 'day' has a missing value .* row 5"):
        ppi.feols("y ~ x | firm", bad, unl, prediction="llm", vcov={"CRV1": "day"})
    bad = unl.copy()
    bad["day"] = bad["day"].dt.strftime("%Y-%m-%d")  # text in one sample, dates in the other
    with pytest.raises(InvalidArgumentError, match=r"cluster column 'day' holds dates in `labeled` but text in `unl"):
        ppi.feols("y ~ x | firm", lab, bad, prediction="llm", vcov={"CRV1": "day"})
