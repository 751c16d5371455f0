"""Issue 34, item 3: fixed effects on the data users have. ``predict(newdata)`` with the dtypes a
user's newdata takes after ordinary work (a counterfactual ``df.assign(treated=True)`` for a 0/1
column, a fixed effect read back as float, numbers read as strings), datetime and timedelta
columns inside transforms, ``i(x, ref=...)`` with a level holding parentheses, ``fixef()`` on
fixed effects that are not connected, and the messages of the transforms' edge cases.

References: the same call on the newdata of the fit's own dtypes, an explicit forward pass
(coefficients times the dummies plus the fixed effects), and numpy's lstsq on explicit dummies
(minimum-norm for the fixed effects that are not connected). Item 6's duplicated and MultiIndex
columns are here too.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def treatment_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.normal(size=n), "treated": rng.integers(0, 2, n), "firm": rng.integers(0, 6, n)})
    df["y"] = 0.5 * df["x"] + 2.0 * df["treated"] + 0.3 * df["firm"] + rng.normal(scale=0.1, size=n)
    return df


def forward(fit, new, term_values):
    """The explicit forward pass: the coefficients times the given regressor values, plus the
    firm's fixed effect."""
    beta = fit.coef()
    xb = sum(beta[t] * np.asarray(v, dtype=float) for t, v in term_values.items())
    effects = fit.fixef()["firm"]
    return xb + effects.reindex([str(int(v)) for v in new["firm"]]).to_numpy()


# -- predict(): level matching by value and dtype family ----------------------------------------------------------------

@pytest.mark.parametrize("term, dummy", [("C(treated)", "C(treated)[T.1]"), ("i(treated)", "treated::1"),
                                         ("factor(treated)", "factor(treated)[T.1]")])
def test_predict_bool_newdata_for_a_01_categorical(term, dummy):
    df = treatment_frame()
    fit = quiet(fe.feols, f"y ~ x + {term} | firm", df)
    counterfactual = df.head(20).assign(treated=True)  # a user's df.assign(treated=True)
    got = fit.predict(counterfactual)
    # the same rows with treated=1 in the fit's dtype, and the explicit forward pass
    np.testing.assert_allclose(got, fit.predict(df.head(20).assign(treated=1)), rtol=1e-12)
    want = forward(fit, counterfactual, {"x": counterfactual["x"], dummy: np.ones(20)})
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(fit.predict(df.head(20).assign(treated=False)),
                               fit.predict(df.head(20).assign(treated=0)), rtol=1e-12)


@pytest.mark.parametrize("term", ["C(treated)", "i(treated)"])
def test_predict_01_newdata_for_a_bool_categorical(term):
    df = treatment_frame()
    fit = quiet(fe.feols, f"y ~ x + {term} | firm", df.assign(treated=df["treated"].astype(bool)))
    new = df.head(20)
    np.testing.assert_allclose(fit.predict(new.assign(treated=1)), fit.predict(new.assign(treated=True)), rtol=1e-12)
    np.testing.assert_allclose(fit.predict(new.assign(treated=0.0)), fit.predict(new.assign(treated=False)),
                               rtol=1e-12)
    np.testing.assert_allclose(fit.predict(new), fit.predict(new.assign(treated=new["treated"].astype(bool))),
                               rtol=1e-12)
    # a number that is no level is an unseen level: NaN, never the reference level's value
    assert np.isnan(fit.predict(new.assign(treated=2))).all()
    assert np.isnan(fit.predict(new.assign(treated=0.5))).all()


def test_predict_unseen_level_is_nan_not_the_reference():
    df = treatment_frame().assign(g=lambda d: np.where(d["firm"] < 3, "a", "b"))
    fit = quiet(fe.feols, "y ~ x + C(g) | firm", df)
    new = df.head(4).assign(g=["a", "b", "c", None])
    got = fit.predict(new)
    assert np.isfinite(got[:2]).all() and np.isnan(got[2:]).all()


@pytest.mark.parametrize("cast", [float, lambda s: s.astype("Int64"), lambda s: s.astype("float32")])
def test_predict_float_newdata_for_an_int_fixed_effect(cast):
    df = treatment_frame()
    fit = quiet(fe.feols, "y ~ x + treated | firm", df)
    new = df.head(30)
    want = fit.predict(new)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(fit.predict(new.assign(firm=cast(new["firm"]) if not isinstance(cast, type)
                                                      else new["firm"].astype(cast))), want, rtol=1e-12)


def test_predict_float_fit_int_newdata_interacted_fixed_effect():
    df = treatment_frame().assign(year=lambda d: (np.arange(len(d)) % 3 + 2000).astype(float))
    fit = quiet(fe.feols, "y ~ x | firm^year", df)
    new = df.head(30)
    want = fit.predict(new)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(fit.predict(new.assign(year=new["year"].astype(int))), want, rtol=1e-12)
    np.testing.assert_allclose(fit.predict(new.assign(firm=new["firm"].astype(float))), want, rtol=1e-12)


def test_predict_bool_fixed_effect_given_as_01():
    df = treatment_frame()
    fit = quiet(fe.feols, "y ~ x | treated", df.assign(treated=df["treated"].astype(bool)))
    new = df.head(30)
    want = fit.predict(new.assign(treated=new["treated"].astype(bool)))
    np.testing.assert_allclose(fit.predict(new), want, rtol=1e-12)


def test_predict_numbers_read_as_strings_are_our_error():
    df = treatment_frame()
    fit = quiet(fe.feols, "y ~ x + C(treated) | firm", df)
    new = df.head(3).astype({"x": object})
    new.loc[new.index[0], "x"] = "N/A"  # a CSV's "N/A" read as text
    with pytest.raises(InvalidArgumentError, match=r"`newdata`.*'x'.*'N/A'"):
        fit.predict(new)
    with pytest.raises(InvalidArgumentError, match=r"`newdata`.*'x'"):
        fit.predict(df.head(3).assign(x=df["x"].head(3).astype(str)))
    # numbers held in an object column (e.g. after a concat) are numbers
    np.testing.assert_allclose(fit.predict(df.head(3).astype({"x": object})), fit.predict(df.head(3)), rtol=1e-12)
    # a categorical fitted on numbers, given strings: refused (design choice, docs/methods/fe.md §3)
    with pytest.raises(InvalidArgumentError, match=r"`newdata`.*'treated'.*text"):
        fit.predict(df.head(3).assign(treated=["1", "0", "N/A"]))
    plain = quiet(fe.feols, "y ~ x | firm", df)
    with pytest.raises(InvalidArgumentError, match=r"`newdata`.*'firm'.*text"):
        plain.predict(df.head(3).assign(firm=df["firm"].head(3).astype(str)))


# -- datetime and timedelta -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fml, column", [("y ~ log(date) | firm", "date"), ("y ~ poly(date, 2) | firm", "date"),
                                         ("y ~ C(treated) + td | firm", "td"), ("y ~ I(td * 2) + x | firm", "td"),
                                         ("y ~ date:x + log(x + 10)", "date"), ("log(date) ~ x | firm", "date")])
def test_datetime_and_timedelta_in_transforms_are_refused(fml, column):
    df = treatment_frame().assign(date=lambda d: pd.date_range("2020-01-01", periods=len(d)),
                                  td=lambda d: pd.to_timedelta(np.arange(len(d)), unit="D"))
    with pytest.raises(InvalidArgumentError, match=rf"`fml`: column '{column}' is not numeric"):
        quiet(fe.feols, fml, df)


def test_numbers_as_text_in_the_fit_are_refused_not_dummy_coded():
    # formulaic would encode a text column written bare as dummies, one per distinct number
    df = treatment_frame()
    text = df.assign(x=df["x"].round(3).astype(str))
    with pytest.raises(InvalidArgumentError, match=r"`fml`: column 'x' is not numeric"):
        quiet(fe.feols, "y ~ x + C(treated) | firm", text)
    with pytest.raises(InvalidArgumentError, match=r"`fml`: column 'x' is not numeric"):
        quiet(fe.feols, "y ~ x + C(treated)", text)


def test_datetime_in_newdata_is_refused():
    df = treatment_frame()
    fit = quiet(fe.feols, "y ~ log(x + 10) | firm", df)
    with pytest.raises(InvalidArgumentError, match=r"`newdata`.*'x'"):
        fit.predict(df.head(3).assign(x=pd.date_range("2020-01-01", periods=3)))


def test_dates_as_a_categorical_still_work():
    df = treatment_frame().assign(day=lambda d: pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(len(d)) % 3,
                                                                                            "D"))
    fit = quiet(fe.feols, "y ~ x + C(day) | firm", df)
    assert len(fit.coef()) == 3
    np.testing.assert_allclose(fit.predict(df.head(5)), fit.predict()[:5], rtol=1e-10)


# -- i(x, ref=...) with a level holding parentheses ---------------------------------------------------------------------

def test_i_ref_level_with_parentheses_nhanes():
    from llmsurrogate.datasets import load_nhanes

    nh = load_nhanes().dropna(subset=["HI_CHOL"]).reset_index(drop=True)
    fit = quiet(fe.feols, 'HI_CHOL ~ i(agecat, ref="(19,39]") + RIAGENDR | race', nh)
    assert list(fit.coef().index) == ["agecat::(0,19]", "agecat::(39,59]", "agecat::(59,Inf]", "RIAGENDR"]
    # reference: lstsq on explicit dummies (the race dummies, the age dummies without (19,39])
    ages = ["(0,19]", "(39,59]", "(59,Inf]"]
    X = np.column_stack([(nh["agecat"] == a).to_numpy(float) for a in ages] + [nh["RIAGENDR"].to_numpy(float)] +
                        [(nh["race"] == r).to_numpy(float) for r in sorted(nh["race"].unique())])
    beta = np.linalg.lstsq(X, nh["HI_CHOL"].to_numpy(), rcond=None)[0]
    np.testing.assert_allclose(fit.coef().to_numpy(), beta[:4], rtol=1e-8, atol=1e-12)
    # single quotes, and a level with `+`, `|`, `:` and `*` in it
    fit2 = quiet(fe.feols, "HI_CHOL ~ i(agecat, ref='(19,39]') + RIAGENDR | race", nh)
    np.testing.assert_allclose(fit2.coef().to_numpy(), fit.coef().to_numpy(), rtol=1e-12)
    odd = nh.assign(agecat=nh["agecat"].astype(str).replace({"(19,39]": "19+ | x:y*z"}))
    fit3 = quiet(fe.feols, 'HI_CHOL ~ i(agecat, ref="19+ | x:y*z") + RIAGENDR | race', odd)
    np.testing.assert_allclose(fit3.coef().to_numpy(), fit.coef().to_numpy(), rtol=1e-10)


def test_i_ref_that_is_no_level_is_refused():
    df = treatment_frame().assign(g=lambda d: np.where(d["firm"] < 3, "a", "b"))
    with pytest.raises(InvalidArgumentError, match=r"`fml`.*ref.*'c'"):
        quiet(fe.feols, 'y ~ x + i(g, ref="c") | firm', df)


# -- fixef() on fixed effects that are not connected ----------------------------------------------------------------------

def _disconnected(seed, blocks=2, n=120, weights=False):
    rng = np.random.default_rng(seed)
    block = np.arange(n) % blocks
    df = pd.DataFrame({"a": block * 10 + rng.integers(0, 3, n), "b": block * 10 + rng.integers(0, 4, n),
                       "x": rng.normal(size=n), "w": rng.uniform(0.5, 2, n) if weights else 1.0})
    df["c"] = block * 10 + rng.integers(0, 2, n)
    df["y"] = df["x"] + 0.1 * df["a"] + 0.2 * df["b"] + rng.normal(scale=0.1, size=n)
    return df


def _dummies(codes):
    levels = sorted(set(codes))
    return np.column_stack([np.asarray(codes) == lev for lev in levels]).astype(float), levels


def _minimum_norm(fit, df, fes):
    """lstsq (minimum norm) of y - X b on the dummies, without the first sorted level of each
    fixed effect after the first (the normalisation fixef() applies first)."""
    d = df["y"].to_numpy() - fit.predict(df) + sum(_sum_effects(fit, df))
    w = df["w"].to_numpy() if "w" in df else np.ones(len(df))
    cols, names = [], []
    for j, f in enumerate(fes):
        key = df[list(f.split("^"))].astype(str).agg("^".join, axis=1) if "^" in f else df[f].astype(str)
        D, levels = _dummies(key.to_numpy())
        order = fit.fixef()[f].index.tolist()
        idx = [levels.index(lev) for lev in order]
        D = D[:, idx]
        if j > 0:
            D, order = D[:, 1:], order[1:]
        cols.append(D)
        names += [(f, lev) for lev in order]
    D = np.column_stack(cols)
    sw = np.sqrt(w)
    alpha = np.linalg.lstsq(D * sw[:, None], d * sw, rcond=None)[0]
    return dict(zip(names, alpha))


def _sum_effects(fit, df):
    out = []
    for f, eff in fit.fixef().items():
        key = df[list(f.split("^"))].astype(str).agg("^".join, axis=1) if "^" in f else df[f].astype(str)
        out.append(eff.reindex(key).to_numpy())
    return out


@pytest.mark.parametrize("fml, blocks, weights", [
    ("y ~ x | a + b", 2, False), ("y ~ x | a + b", 3, False), ("y ~ x | a + b", 2, True),
    ("y ~ x | a + b + c", 2, False), ("y ~ x | a^c + b", 2, False), ("y ~ x | b + a", 4, True),
    ("y ~ x + I(x**2) | a + b", 2, False)])
def test_fixef_warns_when_fixed_effects_are_not_connected(fml, blocks, weights):
    df = _disconnected(blocks, blocks=blocks, weights=weights)
    fit = quiet(fe.feols, fml, df, weights="w" if weights else None)
    with pytest.warns(LLMSurrogateWarning, match=rf"not connected.*{blocks} components.*minimum-norm"):
        effects = fit.fixef()
    # the effects add up to the fitted values without the regressors, and are the minimum-norm solution
    np.testing.assert_allclose(sum(_sum_effects(fit, df)),
                               fit.predict() - (fit.model_matrix().to_numpy() @ fit.coef().to_numpy()), atol=1e-8)
    ref = _minimum_norm(fit, df, fit.fixef_names)
    for (f, lev), v in ref.items():
        assert effects[f][lev] == pytest.approx(v, abs=1e-7)


def test_fixef_connected_does_not_warn():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.integers(0, 5, 200), "b": rng.integers(0, 7, 200), "c": rng.integers(0, 3, 200),
                       "x": rng.normal(size=200)})
    df["y"] = df["x"] + df["a"] + rng.normal(size=200)
    for fml in ["y ~ x | a + b", "y ~ x | a + b + c", "y ~ x | a^c + b"]:
        fit = quiet(fe.feols, fml, df)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fit.fixef()


# -- messages -------------------------------------------------------------------------------------------------------------

def test_poly_of_a_constant_column_says_so():
    df = treatment_frame().assign(c=1.0, two=lambda d: d["treated"].astype(float))
    with pytest.raises(InvalidArgumentError, match=r"`fml`: poly\(c, 2\) needs at least 3 distinct values of 'c'.*1"):
        quiet(fe.feols, "y ~ poly(c, 2) | firm", df)
    with pytest.raises(InvalidArgumentError, match=r"poly\(two, 2\) needs at least 3 distinct values of 'two'.*2"):
        quiet(fe.feols, "y ~ poly(two, 2) | firm", df)


@pytest.mark.parametrize("degree", ["-1", "0", "11", "1.5", "-2"])
def test_poly_degree_out_of_range_is_our_message(degree):
    df = treatment_frame()
    with pytest.raises(InvalidArgumentError, match=r"degree of `poly\(\)` other than 1..10"):
        fe.feols(f"y ~ poly(x, {degree}) | firm", df)


def test_column_named_like_a_function_the_formula_calls():
    df = treatment_frame().assign(I=lambda d: d["x"] * 2, log=lambda d: d["x"] + 5)
    with pytest.raises(InvalidArgumentError, match=r"`fml`.*column 'I'.*function `I\(\)`.*rename"):
        fe.feols("y ~ I(x**2) + I | firm", df)
    with pytest.raises(InvalidArgumentError, match=r"`fml`.*column 'log'.*function `log\(\)`"):
        fe.feols("y ~ log(log) | firm", df)
    # a column named I in a formula that calls no I() is a column
    assert list(quiet(fe.feols, "y ~ I | firm", df).coef().index) == ["I"]


def test_exp_overflow_is_not_called_missing_values():
    df = treatment_frame().assign(z=lambda d: d["x"] * 1000)
    with pytest.raises(InvalidArgumentError, match=r"`fml`: exp\(z\) is beyond the range of a float64 in \d+ row"):
        quiet(fe.feols, "y ~ exp(z) | firm", df)
    with pytest.raises(InvalidArgumentError, match=r"`fml`: the outcome exp\(y \* 1000\) is beyond the range"):
        quiet(fe.feols, "exp(y * 1000) ~ x | firm", df.assign(y=df["y"].abs()))
    # log() of a value <= 0 stays pyfixest's: the row dropped, counted as such
    with pytest.warns(LLMSurrogateWarning, match=r"log\(\) of a value <= 0|not finite"):
        fe.feols("y ~ log(x) | firm", df)


def test_bootstrap_weights_is_our_error():
    df = treatment_frame()
    with pytest.raises(InvalidArgumentError, match=r"argument `weights`.*bootstrap"):
        fe.bootstrap("y ~ x | firm", df, weights="x", n_boot=5, seed=1)
    with pytest.raises(InvalidArgumentError, match=r"unknown argument `n_boots`.*`n_boot`"):
        fe.bootstrap("y ~ x | firm", df, n_boots=5, seed=1)


# -- item 6: duplicated and MultiIndex columns ----------------------------------------------------------------------------

def test_duplicated_column_is_our_error():
    df = treatment_frame()
    dup = pd.concat([df, df[["x"]]], axis=1)
    with pytest.raises(InvalidArgumentError, match=r"argument `data` has 2 columns named 'x'"):
        fe.feols("y ~ x | firm", dup)
    with pytest.raises(InvalidArgumentError, match=r"argument `data` has 2 columns named 'x'"):
        fe.feols("y ~ log(x + 10) | firm", dup)
    # a duplicated column the formula does not read is no matter
    other = pd.concat([df, df[["x"]].rename(columns={"x": "u"}), df[["x"]].rename(columns={"x": "u"})], axis=1)
    np.testing.assert_allclose(quiet(fe.feols, "y ~ x | firm", other).coef(), quiet(fe.feols, "y ~ x | firm", df).coef())
    fit = quiet(fe.feols, "y ~ x | firm", df)
    with pytest.raises(InvalidArgumentError, match=r"argument `newdata` has 2 columns named 'firm'"):
        fit.predict(pd.concat([df, df[["firm"]]], axis=1))
    with pytest.raises(InvalidArgumentError, match=r"argument `data` has 2 columns named 'firm'"):
        fe.bootstrap("y ~ x | firm", pd.concat([df, df[["firm"]]], axis=1), n_boot=5, seed=1)


def test_multiindex_columns_are_our_error():
    df = treatment_frame()
    mi = df.copy()
    mi.columns = pd.MultiIndex.from_tuples([(c, "a") for c in df.columns])
    with pytest.raises(InvalidArgumentError, match=r"argument `data` has MultiIndex columns"):
        fe.feols("y ~ x | firm", mi)
    fit = quiet(fe.feols, "y ~ x | firm", df)
    with pytest.raises(InvalidArgumentError, match=r"argument `newdata` has MultiIndex columns"):
        fit.predict(mi)
