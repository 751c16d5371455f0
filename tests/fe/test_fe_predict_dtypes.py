"""Issue 34, item 3 (the hostile strategy for fe ``predict``): bool/int/float/text dtype swaps of a
``C()``/``i()`` column and of a fixed effect between the fit and ``newdata``, with the newdata's
rows shuffled, re-indexed and given unseen levels. The property: the prediction equals the one on
the same rows in the fit's own dtypes (NaN exactly where that is NaN), or, where the swap changes
the dtype family (numbers <-> text), an InvalidArgumentError naming ``newdata``; never another
number. The hostile harness (tests/package/test_hostile_inputs.py) calls ``fe.feols`` but not
``predict``, so this property test is fe's own.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmsurrogate import fe
from llmsurrogate.exceptions import InvalidArgumentError

NUMBER_KINDS = ["int", "Int64", "float", "bool", "object", "category"]
TEXT_KINDS = ["str", "string", "text-category"]
TEXT_LEVELS = np.array(["lo", "mid", "hi", "x y"], dtype=object)


def convert(codes: np.ndarray, kind: str) -> pd.Series:
    """The level codes 0..k-1 as a column of ``kind`` (text kinds: the words of TEXT_LEVELS)."""
    if kind == "int":
        return pd.Series(codes.astype(np.int64))
    if kind == "Int64":
        return pd.Series(codes.astype(np.int64), dtype="Int64")
    if kind == "float":
        return pd.Series(codes.astype(np.float64))
    if kind == "bool":
        return pd.Series(codes.astype(bool))
    if kind == "object":
        return pd.Series([int(c) for c in codes], dtype=object)
    if kind == "category":
        return pd.Series(pd.Categorical(codes.astype(np.int64)))
    words = TEXT_LEVELS[codes]
    if kind == "str":
        return pd.Series(list(words), dtype=object)
    if kind == "string":
        return pd.Series(list(words), dtype="string")
    if kind == "text-category":
        return pd.Series(pd.Categorical(words))
    if kind == "digits":  # numbers read as text: "0", "1"
        return pd.Series([str(int(c)) for c in codes], dtype=object)
    raise AssertionError(kind)


def family(kind: str) -> str:
    return "number" if kind in NUMBER_KINDS else "text"


@st.composite
def case(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    n_levels = draw(st.integers(2, 4))
    cat_fit = draw(st.sampled_from(NUMBER_KINDS + TEXT_KINDS))
    fe_fit = draw(st.sampled_from(["int", "float", "str", "bool"]))
    if cat_fit == "bool" or fe_fit == "bool":
        n_levels = 2
    same = [k for k in (NUMBER_KINDS if family(cat_fit) == "number" else TEXT_KINDS) if k != "bool" or n_levels == 2]
    cat_new = draw(st.sampled_from(same + ["digits" if family(cat_fit) == "number" else "int"]))
    fe_same = ["int", "float", "Int64", "object"] + (["bool"] if n_levels == 2 else []) if fe_fit != "str" else \
        ["str", "string", "text-category"]
    fe_new = draw(st.sampled_from(fe_same + ["digits" if fe_fit != "str" else "float"]))
    term = draw(st.sampled_from(["C(g)", "i(g)"]))
    unseen = draw(st.booleans())
    index = draw(st.sampled_from(["shuffled", "sorted", "strings"]))
    return {"seed": seed, "n_levels": n_levels, "cat_fit": cat_fit, "cat_new": cat_new, "fe_fit": fe_fit,
            "fe_new": fe_new, "term": term, "unseen": unseen, "index": index}


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(case())
def test_predict_with_swapped_dtypes_is_the_same_number_or_refused(c):
    rng, k, n = np.random.default_rng(c["seed"]), c["n_levels"], 90
    g = np.r_[np.arange(k), rng.integers(0, k, n - k)]
    f = np.r_[np.arange(k), rng.integers(0, k, n - k)]
    x = rng.normal(size=n)
    y = x + 1.5 * g + 0.7 * f + rng.normal(scale=0.3, size=n)
    fit_kind = c["fe_fit"]
    df = pd.DataFrame({"y": y, "x": x, "g": convert(g, c["cat_fit"]), "f": convert(f, fit_kind)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fe.feols(f"y ~ x + {c['term']} | f", df)

    rows = rng.permutation(n)[:25]
    g_new, f_new = g[rows].copy(), f[rows].copy()
    if c["unseen"] and c["cat_fit"] != "bool" and c["cat_new"] != "bool" and k < 4:
        g_new[0] = k  # a level the fit never saw (a number, or a word, of the fit's family)
    index = {"shuffled": pd.Index(rows), "sorted": pd.Index(np.sort(rows)[::-1]),
             "strings": pd.Index([f"r{r}" for r in rows])}[c["index"]]
    base = pd.DataFrame({"x": x[rows], "g": convert(g_new, c["cat_fit"]).set_axis(index),
                         "f": convert(f_new, fit_kind).set_axis(index)}, index=index)  # the fit's dtypes
    want = fit.predict(base)
    # the reference itself: the fit's own rows give the fitted values
    if not c["unseen"]:
        assert np.isfinite(want).all()
    new = base.copy()
    new["g"] = convert(g_new, c["cat_new"]).set_axis(index)
    new["f"] = convert(f_new, c["fe_new"]).set_axis(index)
    crossed = family(c["cat_new"]) != family(c["cat_fit"]) or \
        (c["fe_new"] in ("digits", "str", "string", "text-category")) != (c["fe_fit"] == "str")
    if crossed:
        with pytest.raises(InvalidArgumentError, match=r"argument `newdata`: column '(g|f)'"):
            fit.predict(new)
        return
    got = fit.predict(new)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-12, atol=1e-12)
