"""Issue 21, item 6: formulas written as pyfixest (and fixest) users write them -- C(x), factor(x),
i(x, ref=...), i(x, z), log(), exp(), I(...), poly(), x:z, x*z, "- 1" / "+ 0" -- against
pyfixest 0.60 on the same formula (coefficient names, estimates and standard errors), and the
allow-list that keeps a formula from running code.

pyfixest's MAP demeaner is run at 1e-13 so that the comparison can be at 1e-8 relative.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning

pf = pytest.importorskip("pyfixest")

RTOL = 1e-8
DATA = pf.get_data(N=1000, seed=76540251, beta_type="2", error_type="2")  # pyfixest's test generator


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


def both(fml, data=DATA, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = fe.feols(fml, data, **kw)
        ref = pf.feols(fml, data, demeaner=pf.MapDemeaner(fixef_tol=1e-13), **kw)
    return ours, ref


FORMULAS = [
    "Y ~ X1 + C(f1)",
    "Y ~ X1 + C(f1) + C(f2)",
    "Y ~ X1 + C(f1) | f2",
    "Y ~ X1 + C(f1) | f2 + f3",
    "Y ~ X1 + i(f1, ref = 1)",
    "Y ~ X1 + i(f2, ref = 2.0)",
    "Y ~ X1 + i(f1) + i(f2)",
    "Y ~ X1 + i(f1, ref = 3.0) | f2",
    "Y ~ X1 + i(f1, X2)",
    "Y ~ X1 + i(f1, X2, ref=1) + i(f2, X1, ref=2)",
    "Y ~ X1 + i(f1, X2) | f2 + f3",
    "Y ~ X1 + exp(X2)",
    "log(Y) ~ X1",
    "Y ~ X1 + I(X2 ** 2)",
    "Y ~ X1 + I(X1 ** 2) + I(X2**4)",
    "Y ~ X1 + poly(X2, 2) | f1",
    "Y ~ X1 + X2:f1 | f3",
    "Y ~ X1*X2 | f1 + f2",
    "Y ~ X1 + np.log(f1 + 1) + C(f2):X2",
    "Y ~ X1 + C(f1) - 1",
    "Y ~ 0 + X1 + C(f1)",
    "Y ~ X1 + X2 | f2^f3",
]


@pytest.mark.parametrize("weights", [None, "weights"])
@pytest.mark.parametrize("vcov", ["iid", "hetero", {"CRV1": "group_id"}], ids=str)
@pytest.mark.parametrize("fml", FORMULAS)
def test_transform_formulas_equal_pyfixest(fml, vcov, weights):
    ours, ref = both(fml, vcov=vcov, weights=weights)
    assert list(ours.coef().index) == list(ref.coef().index)
    assert ours.nobs == ref._N
    assert rel(ours.coef(), ref.coef()) < RTOL
    assert rel(ours.se(), ref.se()) < RTOL


def test_factor_is_r_spelling_of_c():
    a = fe.feols("Y ~ X1 + factor(f1) | f2", DATA.dropna())
    b = fe.feols("Y ~ X1 + C(f1) | f2", DATA.dropna())
    assert [t.replace("factor(", "C(") for t in a.terms] == b.terms
    np.testing.assert_array_equal(a.coef().to_numpy(), b.coef().to_numpy())


def test_minus_one_and_plus_zero_are_the_same_model():
    fits = [fe.feols(f, DATA.dropna()) for f in ["Y ~ X1 + X2 - 1", "Y ~ 0 + X1 + X2", "Y ~ X1 + X2 + 0",
                                                   "Y ~ -1 + X1 + X2"]]
    for f in fits[1:]:
        assert f.terms == ["X1", "X2"]
        np.testing.assert_allclose(f.coef().to_numpy(), fits[0].coef().to_numpy(), rtol=1e-14)
    x = DATA.dropna()[["X1", "X2"]].to_numpy()
    want = np.linalg.lstsq(x, DATA.dropna()["Y"].to_numpy(), rcond=None)[0]
    np.testing.assert_allclose(fits[0].coef().to_numpy(), want, rtol=1e-10)


def test_rows_missing_a_level_are_dropped_not_zero_dummies():
    # the pd.get_dummies trap of the issue: a row whose category is missing becomes an all-zero row
    # (the reference level) and is kept; C() drops it, as pyfixest and R's factor() do
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "x": rng.normal(size=n)})
    df["y"] = df["x"] + df["g"].map({"a": 0.0, "b": 1.0, "c": -2.0}) + rng.normal(size=n)
    df.loc[rng.choice(n, 60, replace=False), "g"] = None
    with pytest.warns(LLMSurrogateWarning, match="60 row"):
        ours = fe.feols("y ~ x + C(g)", df)
    complete = df.dropna()
    dummies = pd.get_dummies(complete["g"], drop_first=True, dtype=float)
    X = np.column_stack([np.ones(len(complete)), complete["x"], dummies])
    want = np.linalg.lstsq(X, complete["y"].to_numpy(), rcond=None)[0]
    assert ours.terms == ["Intercept", "x", "C(g)[T.b]", "C(g)[T.c]"] and ours.nobs == n - 60
    np.testing.assert_allclose(ours.coef().to_numpy(), want, rtol=1e-10)
    trap = pd.get_dummies(df["g"], drop_first=True, dtype=float).join(df[["x", "y"]])
    wrong = fe.feols("y ~ x + b + c", trap)
    assert abs(wrong.coef()["x"] - ours.coef()["x"]) > 1e-3  # the trap would have been a silent error


@pytest.mark.parametrize("fml, what", [
    ("y ~ __import__('os').system('touch PWNED')", "__import__"),
    ("y ~ x + open('PWNED', 'w')", "open"),
    ("y ~ x + C(x).__class__", "__class__|not a column"),
    ("y ~ I(x.__class__)", "x.__class__"),
    ("y ~ log(x)[0]", "not a column|log"),
    ("y ~ I(x)[0]", "not a column|I"),
    ("y ~ {x ** 2}", "not a column"),
    ("y ~ `__import__`", "not a column"),  # a name in backticks is a column's, never one of ours
    ("y ~ log(`__builtins__`)", "not a column"),
    ("y ~ log(x.__class__)", "not a column"),  # R's dotted name, but with a part of ours
    ("y ~ np.random.seed(0)", "np.random.seed"),
    ("y ~ np.lib.npyio.savetxt('PWNED', x)", "np.lib"),
    ("y ~ I(2 ** 10 ** 10)", "exponent"),
    ("y ~ I(x ** 1000)", "exponent"),
    ("y ~ I((lambda: 0)())", "lambda|function"),
    ("y ~ I([v for v in x])", "ListComp|for v"),
    ("y ~ I('a' + x)", "constant"),
    ("y ~ C(x, contr.sum)", "C\\(\\)"),
    ("y ~ i(g, bin={'a': ['b']})", "bin"),
    ("y ~ i(g, ref=x.__len__())", "number or a short string"),
    ("y ~ log(C(g))", "C\\(\\)"),
    ("y ~ lag(x)", "lag"),
    ("y ~ (x + z)**2", "parentheses"),
    ("y ~ x - z", "- z"),
    ("y ~ eval('1')", "eval"),
    ("y ~ getattr(x, 'T')", "getattr"),
    ("y ~ x | log(g)", "must be columns"),
    ("y ~ sw(x, z)", "multiple estimation"),
    ("y ~ x | g ~ z", "instrumental"),
    ("y + z ~ x", "one outcome"),
])
def test_no_formula_runs_code(fml, what, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = pd.DataFrame({"y": [1.0, 2.0, 3.0, 4.0], "x": [1.0, 0.0, 2.0, 1.0], "z": [0.0, 1.0, 1.0, 0.0],
                       "g": ["a", "b", "a", "b"]})
    with pytest.raises(InvalidArgumentError, match="`fml`") as err:
        fe.feols(fml, df)
    assert pytest.importorskip("re").search(what, str(err.value)), str(err.value)
    assert not (tmp_path / "PWNED").exists()


def test_term_cap_counts_transforms_before_anything_is_built():
    fml = "y ~ " + "*".join(f"log(x{i})" for i in range(40))
    with pytest.raises(InvalidArgumentError, match="`fml`.*terms"):
        fe.parse_formula(fml)


def test_column_cap_refuses_a_dummy_per_row():
    df = pd.DataFrame({"y": np.arange(6000.0), "x": np.ones(6000), "id": np.arange(6000)})
    with pytest.raises(InvalidArgumentError, match="`fml`.*columns.*fixed effect"):
        fe.feols("y ~ x + C(id)", df)


@pytest.mark.parametrize("fml", ["log(Y) ~ Y", "Y ~ log(Y) | f1", "Y ~ X1 + I(Y * 2)", "log(Y) ~ X1 | Y",
                                 "Y ~ i(f1, Y)"])
def test_outcome_on_the_right_is_refused_through_transforms(fml):
    with pytest.raises(InvalidArgumentError, match="`fml`.*outcome"):
        fe.feols(fml, DATA)


def test_parsed_formula_records_its_columns():
    f = fe.parse_formula("log(y) ~ x + C(g) + i(h, z, ref=2) | firm")
    assert f.transformed and f.outcome == "log(y)" and f.outcome_variables == ("y",)
    assert f.categorical == ("g", "h") and f.columns() == ["y", "x", "g", "h", "z", "firm"]
    assert f.regressor_columns() == ["x", "g", "h", "z", "firm"]
    plain = fe.parse_formula("y ~ a:b + a*c + b - 1")
    assert not plain.transformed and plain.term_names == ["Intercept", "a", "c", "b", "a:b", "a:c"][1:] \
        and not plain.intercept


@pytest.mark.parametrize("fml, param", [("y ~ x + C(g) | firm", "C(g)[T.b]"), ("y ~ C(g) + x + log(z)", "x"),
                                        ("y ~ i(g, x, ref='a') + x", "g::c:x")])
def test_the_bootstrap_takes_the_column_of_a_transform(fml, param):
    # each replication equals feols with that replication's counts as weights (the column named,
    # not the term at the same place in the formula: C(g) makes two columns)
    rng = np.random.default_rng(5)
    n = 300
    d = pd.DataFrame({"firm": rng.integers(0, 15, n), "g": rng.choice(["a", "b", "c"], n), "x": rng.normal(size=n),
                      "z": rng.uniform(1, 3, n)})
    d["y"] = d["x"] + (d["g"] == "b") * 0.7 + np.log(d["z"]) + rng.normal(size=n)
    boot = fe.bootstrap(fml, d, param=param, n_boot=4, seed=11, n_jobs=1)
    assert boot.estimate == pytest.approx(fe.feols(fml, d, fixef_rm="none").coef()[param], rel=1e-12)
    for b in range(4):
        w = fe.bootstrap_counts(n, 11, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLMSurrogateWarning)
            want = fe.feols(fml, d, weights=w, fixef_rm="none").coef()[param]
        assert boot.draws[b] == pytest.approx(want, rel=1e-8)
    with pytest.raises(InvalidArgumentError, match="`param`.*C\\(g\\)\\[T.b\\]"):
        fe.bootstrap("y ~ x + C(g)", d, param="C(g)", n_boot=2, seed=1)


def test_r_names_with_dots_and_backticks_are_columns_everywhere():
    """Issue 35 §4: R's dotted names (``x.1``, ``firm.id``) and names in backticks are column names
    inside every function as outside; the fit equals the one on the same columns renamed."""
    rng = np.random.default_rng(35)
    n = 80
    df = pd.DataFrame({"x.1": rng.uniform(1, 2, n), "my var": rng.normal(size=n), "firm.id": rng.choice(list("abcd"), n),
                       "y.0": rng.normal(size=n)})
    plain = df.rename(columns={"x.1": "x1", "my var": "myvar", "firm.id": "firm", "y.0": "y0"})
    for ours, ref in [("y.0 ~ log(x.1) + `my var` | firm.id", "y0 ~ log(x1) + myvar | firm"),
                      ("y.0 ~ C(firm.id) + poly(x.1, 2) + I(x.1 ** 2):`my var`", "y0 ~ C(firm) + poly(x1, 2) + I(x1 ** 2):myvar"),
                      ("log(x.1) ~ i(firm.id, `my var`, ref='b')", "log(x1) ~ i(firm, myvar, ref='b')"),
                      ("`my var` ~ x.1 | `firm.id`", "myvar ~ x1 | firm")]:
        a, b = fe.feols(ours, df), fe.feols(ref, plain)
        np.testing.assert_allclose(a.coef().to_numpy(), b.coef().to_numpy(), rtol=1e-12)
        np.testing.assert_allclose(a.se().to_numpy(), b.se().to_numpy(), rtol=1e-12)
        assert len(a.coef()) == len(b.coef())
    with pytest.raises(InvalidArgumentError, match="the function `as.numeric`"):
        fe.feols("y.0 ~ as.numeric(x.1)", df)


def test_categorical_levels_in_their_order_without_unused_ones():
    """A pandas Categorical encoded by C()/i() keeps its categories' order and drops those no row
    used has (the reference is the first used, as R's lm() takes a factor's)."""
    rng = np.random.default_rng(7)
    n = 90
    edu = rng.choice(["low", "mid", "high"], n)
    df = pd.DataFrame({"edu": pd.Categorical(edu, categories=["none", "low", "mid", "high"]), "x": rng.normal(size=n)})
    df["y"] = df["x"] + pd.Series(edu).map({"low": 0.0, "mid": 1.0, "high": 3.0}) + rng.normal(size=n)
    fit = fe.feols("y ~ x + C(edu)", df)
    assert list(fit.coef().index) == ["Intercept", "x", "C(edu)[T.mid]", "C(edu)[T.high]"]
    X = np.column_stack([np.ones(n), df["x"], edu == "mid", edu == "high"]).astype(float)
    np.testing.assert_allclose(fit.coef().to_numpy(), np.linalg.lstsq(X, df["y"], rcond=None)[0], rtol=1e-10)
    assert list(fe.feols("y ~ x + i(edu)", df).coef().index) == ["Intercept", "x", "edu::mid", "edu::high"]
    pred = fit.predict(pd.DataFrame({"x": [0.0, 0.0], "edu": ["high", "none"]}))
    assert np.isclose(pred[0], fit.coef()["Intercept"] + fit.coef()["C(edu)[T.high]"]) and np.isnan(pred[1])
