"""fe.feols on data that used to give silent wrong answers (issue 21, items 1-5): identified
regressors with a large mean, weights paired by position or converted with loss, extreme scales,
and unchecked formulas and options. References are least squares on the explicit design (numpy's
lstsq with fixed-effect dummies) and statsmodels."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning

sm = pytest.importorskip("statsmodels.api")

RTOL = 1e-8
VCOVS = ["iid", "hetero", {"CRV1": "firm"}]


def make_data(n=600, n_firms=30, seed=0):
    rng = np.random.default_rng(seed)
    firm = rng.integers(0, n_firms, n)
    # x1 on a grid of 2^-10 so that x1 + 1e5 and x1 + 1e9 are exact: their least squares are x1's
    x1 = np.round(rng.normal(size=n) * 2**10) / 2**10
    x2 = rng.normal(size=n)
    day = pd.Timestamp("2023-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D")
    ymd = day.strftime("%Y%m%d").astype(int).to_numpy()
    y = 1.5 * x1 - 0.5 * x2 + 0.01 * (ymd - 20230000) + rng.normal(size=n)[firm] + rng.normal(size=n)
    return pd.DataFrame(dict(y=y, x1=x1, x2=x2, ymd=ymd, firm=firm, w=rng.uniform(0.5, 2.0, n),
                             index_label=np.arange(n))).set_index(pd.Index(np.arange(n) * 7 + 3))


def lstsq(y, design, w=None):
    sw = np.ones(len(y)) if w is None else np.sqrt(w)
    return np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)[0]


def dummies(codes):
    return (codes[:, None] == np.unique(codes)[None, :]).astype(float)


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


DF = make_data()


# --- 1. identified regressors are not dropped; collinear ones still are -------------------------

def test_regressor_with_a_large_mean_is_kept_without_fe():
    df = DF.assign(xo=DF["x1"] + 1e5)
    fit = fe.feols("y ~ xo + x2", df)
    assert fit.dropped_collinear == [] and list(fit.coef().index) == ["Intercept", "xo", "x2"]
    # least squares of y on (1, x1, x2): xo = x1 + 1e5 exactly, so the slopes are the same and the
    # intercept moves by -1e5 times the slope of xo
    b = lstsq(df["y"].to_numpy(), np.column_stack([np.ones(len(df)), df["x1"], df["x2"]]))
    want = np.array([b[0] - 1e5 * b[1], b[1], b[2]])
    assert rel(fit.coef(), want) < RTOL
    ref = sm.OLS(df["y"].to_numpy(), sm.add_constant(df[["x1", "x2"]].to_numpy())).fit()
    assert rel(fit.se().to_numpy()[1:], ref.bse[1:]) < RTOL


@pytest.mark.parametrize("vcov", VCOVS, ids=str)
def test_regressor_with_a_large_mean_is_kept_with_fe(vcov):
    df = DF.assign(x1_1e9=DF["x1"] + 1e9)
    D = dummies(df["firm"].to_numpy())
    for weights in [None, "w"]:
        w = None if weights is None else df["w"].to_numpy()
        # a yyyymmdd date within a year: mean 2e7, spread 1e2
        fit = fe.feols("y ~ ymd + x1 | firm", df, vcov=vcov, weights=weights)
        assert list(fit.coef().index) == ["ymd", "x1"]
        b = lstsq(df["y"].to_numpy(), np.column_stack([D, df["ymd"] - 20230000, df["x1"]]), w)
        assert rel(fit.coef(), b[-2:]) < RTOL
        # x1 + 1e9 with firm effects: least squares equals x1's; so do the standard errors
        fit = fe.feols("y ~ x1_1e9 + x2 | firm", df, vcov=vcov, weights=weights)
        base = fe.feols("y ~ x1 + x2 | firm", df, vcov=vcov, weights=weights)
        assert list(fit.coef().index) == ["x1_1e9", "x2"]
        b = lstsq(df["y"].to_numpy(), np.column_stack([D, df["x1"], df["x2"]]), w)
        assert rel(fit.coef(), b[-2:]) < RTOL
        assert rel(fit.se(), base.se()) < RTOL


def test_ymd_standard_errors_equal_statsmodels_with_dummies():
    D = dummies(DF["firm"].to_numpy())
    fit = fe.feols("y ~ ymd + x1 | firm", DF)
    ref = sm.OLS(DF["y"].to_numpy(), np.column_stack([D, DF["ymd"] - 20230000, DF["x1"]])).fit()
    assert rel(fit.coef(), ref.params[-2:]) < RTOL
    assert rel(fit.se(), ref.bse[-2:]) < RTOL


def test_truly_collinear_regressors_are_still_dropped():
    df = DF.assign(x3=3 * DF["x1"] + 2, x4=3 * DF["x1"] + 2 + 1e5,
                   xf=np.where(DF["firm"] % 3 == 0, 2.5, -1.0) + 7, xf_big=DF["firm"] * 1e6 + 1e9)
    with pytest.warns(LLMSurrogateWarning, match="collinear regressor.*x3"):
        fit = fe.feols("y ~ x1 + x3 + x2", df)
    assert fit.dropped_collinear == ["x3"]
    with pytest.warns(LLMSurrogateWarning, match="collinear regressor.*x4"):
        assert fe.feols("y ~ x1 + x4 + x2", df).dropped_collinear == ["x4"]
    with pytest.warns(LLMSurrogateWarning, match="collinear regressor.*x3"):
        assert fe.feols("y ~ x1 + x3 | firm", df).dropped_collinear == ["x3"]
    for col in ["xf", "xf_big"]:
        with pytest.warns(LLMSurrogateWarning, match=f"collinear regressor.*{col}"):
            fit = fe.feols(f"y ~ x1 + {col} | firm", df, weights="w")
        assert fit.dropped_collinear == [col] and list(fit.coef().index) == ["x1"]
    # a constant is collinear with the intercept
    with pytest.warns(LLMSurrogateWarning, match="collinear regressor.*c"):
        assert fe.feols("y ~ x1 + c", df.assign(c=1e5)).dropped_collinear == ["c"]


# --- 2. weights as a pandas Series are paired by label --------------------------------------------

def test_weights_series_paired_by_label():
    w = DF["w"]
    aligned = fe.feols("y ~ x1 + x2 | firm", DF, weights=w)
    by_name = fe.feols("y ~ x1 + x2 | firm", DF, weights="w")
    shuffled = fe.feols("y ~ x1 + x2 | firm", DF, weights=w.sample(frac=1, random_state=1))
    np.testing.assert_allclose(aligned.coef(), by_name.coef(), rtol=1e-12)
    np.testing.assert_allclose(shuffled.coef(), aligned.coef(), rtol=1e-12)
    np.testing.assert_allclose(shuffled.se(), aligned.se(), rtol=1e-12)
    # a numpy array has no labels: by position
    np.testing.assert_allclose(fe.feols("y ~ x1 + x2 | firm", DF, weights=w.to_numpy()).coef(), aligned.coef(), rtol=1e-12)
    foreign = pd.Series(w.to_numpy(), index=np.arange(len(w)) + 10**6)
    with pytest.raises(InvalidArgumentError, match="`weights`"):
        fe.feols("y ~ x1 + x2 | firm", DF, weights=foreign)


# --- 3. weights: no lossy conversion -----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["complex", "strings", "datetime64", "timedelta64", "2-d", "object"])
def test_weights_refuse_lossy_conversion(kind):
    w = DF["w"].to_numpy()
    bad = {"complex": w + 1j, "strings": w.astype(str), "2-d": w[:, None],
           "datetime64": np.datetime64("2020-01-01") + np.arange(len(w)).astype("timedelta64[D]"),
           "timedelta64": np.arange(1, len(w) + 1).astype("timedelta64[D]"),
           "object": np.array([{"a": 1}] * len(w), dtype=object)}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning would not do
        with pytest.raises(InvalidArgumentError, match="`weights`"):
            fe.feols("y ~ x1 + x2 | firm", DF, weights=bad)


# --- 4. extreme scales --------------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [1e160, 1e-170, 1e300, 1e-300])
@pytest.mark.parametrize("fml", ["y ~ x1 + x2 | firm", "y ~ x1 + x2"])
def test_regressor_scale_equivariance(scale, fml):
    for vcov in VCOVS:
        base = fe.feols(fml, DF, vcov=vcov)
        fit = fe.feols(fml, DF.assign(x1=DF["x1"] * scale), vcov=vcov)
        assert fit.dropped_collinear == [] and fit.coef().index.equals(base.coef().index)
        factor = np.where(fit.coef().index == "x1", 1 / scale, 1.0)
        assert rel(fit.coef(), base.coef() * factor) < 1e-10
        assert np.all(np.isfinite(fit.se())) and np.all(fit.se() > 0)
        assert rel(fit.se(), base.se() * factor) < 1e-10
        assert rel(fit.pvalue(), base.pvalue()) < 1e-8
        assert fit.r2 == pytest.approx(base.r2, rel=1e-10)


@pytest.mark.parametrize("scale", [1e300, 1e-300])
@pytest.mark.parametrize("fml", ["y ~ x1 + x2 | firm", "y ~ x1 + x2"])
def test_outcome_and_weight_scale_equivariance(scale, fml):
    for vcov in VCOVS:
        base = fe.feols(fml, DF, vcov=vcov, weights="w")
        fit = fe.feols(fml, DF.assign(y=DF["y"] * scale), vcov=vcov, weights="w")
        assert rel(fit.coef(), base.coef() * scale) < 1e-10
        assert np.all(np.isfinite(fit.se())) and np.all(fit.se() > 0)
        assert rel(fit.se(), base.se() * scale) < 1e-10
        assert rel(fit.tstat(), base.tstat()) < 1e-10
        assert fit.rmse == pytest.approx(base.rmse * scale, rel=1e-10)
        fit = fe.feols(fml, DF.assign(w=DF["w"] * scale), vcov=vcov, weights="w")
        assert rel(fit.coef(), base.coef()) < 1e-10 and rel(fit.se(), base.se()) < 1e-10


def test_coefficient_beyond_float64_is_an_error_naming_the_column():
    df = DF.assign(y=DF["y"] * 1e300, x1=DF["x1"] * 1e-170)
    with pytest.raises(InvalidArgumentError, match="x1"):
        fe.feols("y ~ x1 + x2 | firm", df)


# --- 5. unbounded formulas and unchecked options --------------------------------------------------

def test_formula_with_too_many_terms_is_refused_before_building_them():
    fml = "y ~ " + "*".join(f"x{i}" for i in range(40))
    with pytest.raises(InvalidArgumentError, match="`fml`.*terms"):
        fe.parse_formula(fml)
    with pytest.raises(InvalidArgumentError, match="`fml`.*terms"):
        fe.feols(fml, DF)


@pytest.mark.parametrize("bad", [2, 1.0, 0.0, -1.0, "2", None, True, float("nan")])
def test_collin_tol_validated(bad):
    with pytest.raises(InvalidArgumentError, match="`collin_tol`"):
        fe.feols("y ~ x1 + x2", DF, collin_tol=bad)


def test_outcome_on_the_right_is_refused():
    for fml in ["y ~ y + x1 | firm", "y ~ x1 + x1:y | firm", "y ~ x1*y", "y ~ x1 | y"]:
        with pytest.raises(InvalidArgumentError, match="`fml`.*outcome"):
            fe.feols(fml, DF)


def test_empty_sample_names_the_argument_responsible():
    with pytest.raises(InvalidArgumentError, match="`vcov`.*'cl'"), warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        fe.feols("y ~ x1 | firm", DF.assign(cl=np.nan), vcov={"CRV1": "cl"})
    with pytest.raises(InvalidArgumentError, match="`weights`"), warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        fe.feols("y ~ x1 | firm", DF, weights=np.zeros(len(DF)))
    with pytest.raises(InvalidArgumentError, match="`weights`"), warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        fe.feols("y ~ x1 | firm", DF.assign(w=np.nan), weights="w")


def test_lookahead_bootstrap_judges_collinearity_as_feols():
    # a control coded yyyymmdd is identified (feols keeps it): every bootstrap replication is too,
    # and equals the weighted feols on the resampled rows
    from llmsurrogate import lookahead as la

    rng = np.random.default_rng(7)
    n = 800
    d = pd.DataFrame({"firm": rng.integers(0, 60, n), "date": rng.integers(0, 25, n), "llm": rng.normal(size=n),
                      "lap": rng.uniform(0, 0.3, n), "ctl": 20230101 + rng.integers(0, 300, n)})
    d["y"] = d["llm"] * (1 + d["lap"]) + 0.01 * (d["ctl"] - 20230000) + rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        b = la.bootstrap(d, "y", "llm", "lap", controls=["ctl"], n_boot=5, seed=3)
        assert b.n_singular == 0 and np.isfinite(b.draws).all()
        for rep in range(5):
            w = la.bootstrap_counts(n, 3, rep)
            want = fe.feols("y ~ llm + lap + llm:lap + ctl | firm + date", d, weights=w, fixef_rm="none")
            assert b.draws[rep] == pytest.approx(want.coef()["llm:lap"], rel=1e-9)
