"""llmsurrogate.fe against pyfixest (the reference implementation; fixest's defaults) and bad input.

pyfixest's default demeaner stops at a tolerance of 1e-6, so the reference fits here use its MAP
demeaner at 1e-13 (and its LSMR demeaner on the hard panel) to compare at 1e-8 relative.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe
from llmsurrogate.exceptions import ColumnNotFoundError, InvalidArgumentError, LLMSurrogateWarning

from _samples import hard_panel

pf = pytest.importorskip("pyfixest")
from pyfixest.demeaners import LsmrDemeaner, MapDemeaner  # noqa: E402

RTOL = 1e-8
# pyfixest's MAP at 1e-13 is an absolute tolerance: on data in the thousands (Grunfeld) it cannot
# be met, and on the hard panel MAP crawls; LSMR at 1e-12 is the reference there
LSMR = LsmrDemeaner(fixef_atol=1e-12, fixef_btol=1e-12)
MAP_ABS = MapDemeaner(fixef_tol=1e-10)


def make_panel(n_firms=150, n_dates=120, n_obs=5000, seed=1):
    """The spec's §6.4 generator (unbalanced, several rows per firm-date), plus weights and an
    industry code nested in firms."""
    rng = np.random.default_rng(seed)
    firm = rng.integers(0, n_firms, n_obs)
    date = rng.integers(0, n_dates, n_obs)
    a = rng.normal(0, 1, n_firms)
    b = rng.normal(0, 2, n_dates)
    llm = rng.choice([-1.0, 0.0, 1.0], n_obs, p=[0.4, 0.15, 0.45])
    lap = rng.gamma(6.0, 0.012, n_obs) + 0.01 * a[firm]
    u = rng.normal(0, 4, n_obs) + rng.normal(0, 1.5, n_dates)[date]
    y = a[firm] + b[date] + 0.2 * llm - 0.3 * lap + 0.5 * llm * lap + u
    return pd.DataFrame(dict(y=y, llm=llm, lap=lap, firm=firm, date=date, region=rng.integers(0, 9, n_obs),
                             ind=firm % 7, w=rng.uniform(0.5, 2.0, n_obs)))


def reference(fml, data, vcov, weights=None, demeaner=None, **kw):
    return pf.feols(fml, data, vcov=vcov, weights=weights, demeaner=demeaner or MapDemeaner(fixef_tol=1e-13), **kw)


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def assert_same(ours, ref, rtol=RTOL):
    assert list(ours.coef().index) == list(ref.coef().index)
    assert ours.nobs == ref._N
    assert rel(ours.coef(), ref.coef()) < rtol, (ours.coef(), ref.coef())
    assert rel(ours.se(), ref.se()) < rtol, (ours.se(), ref.se())
    assert rel(ours.tstat(), ref.tstat()) < rtol
    np.testing.assert_allclose(ours.pvalue(), ref.pvalue(), rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(ours.confint().to_numpy(), ref.confint().to_numpy(), rtol=1e-7)
    assert ours.r2 == pytest.approx(ref._r2, rel=1e-9)
    if ref._has_fixef:
        assert ours.r2_within == pytest.approx(ref._r2_within, rel=1e-9)


PANEL = make_panel()
VCOVS = ["iid", "hetero", {"CRV1": "date"}, {"CRV1": "firm"}, {"CRV1": "firm+date"}]
FORMULAS = [
    "y ~ llm + lap + llm:lap | firm",                      # one FE
    "y ~ llm + lap + llm:lap | firm + date",               # two FE
    "y ~ llm*lap | firm + date + region",                  # three FE
    "y ~ llm + lap + llm:lap | firm + date + ind",         # a FE nested in another (and in firm clusters)
    "y ~ llm + lap + llm:lap",                             # no FE: intercept
]


@pytest.mark.parametrize("weights", [None, "w"])
@pytest.mark.parametrize("vcov", VCOVS, ids=str)
@pytest.mark.parametrize("fml", FORMULAS)
def test_equals_pyfixest(fml, vcov, weights):
    ours = fe.feols(fml, PANEL, vcov=vcov, weights=weights)
    assert_same(ours, reference(fml, PANEL, vcov, weights))


def test_unbalanced_with_gaps_and_interacted_fe():
    df = PANEL.sample(frac=0.6, random_state=3).reset_index(drop=True)
    for vcov in VCOVS:
        assert_same(fe.feols("y ~ llm*lap | firm + date^region", df, vcov=vcov),
                    reference("y ~ llm*lap | firm + date^region", df, vcov))


def test_real_panel_grunfeld():
    sm = pytest.importorskip("statsmodels.api")
    g = sm.datasets.grunfeld.load_pandas().data  # Grunfeld (1958): 10 US firms, 1935-1954
    for vcov in ["iid", "hetero", {"CRV1": "firm"}, {"CRV1": "year"}, {"CRV1": "firm+year"}]:
        for fml in ["invest ~ value + capital | firm + year", "invest ~ value*capital | firm", "invest ~ value + capital"]:
            assert_same(fe.feols(fml, g, vcov=vcov), reference(fml, g, vcov, demeaner=MAP_ABS))
    g = g.assign(w=np.linspace(0.5, 1.5, len(g)))
    assert_same(fe.feols("invest ~ value + capital | firm + year", g, vcov={"CRV1": "firm"}, weights="w"),
                reference("invest ~ value + capital | firm + year", g, {"CRV1": "firm"}, "w", demeaner=MAP_ABS))


@pytest.mark.slow
def test_hard_panel_converges_and_equals_lsmr():
    df = hard_panel()
    fml = "y ~ llm + lap + llm:lap | firm + date"
    ours = fe.feols(fml, df, vcov={"CRV1": "date"})
    assert ours.demean_residual <= 1e-12 and 1 < ours.demean_iterations < 1000
    ref = reference(fml, df, {"CRV1": "date"}, demeaner=LSMR)
    assert_same(ours, ref)
    # weights, and a third fixed effect (the symmetric-sweep path), on a smaller hard panel
    small = hard_panel(n_firms=500, n_dates=1000).assign(ind=lambda d: d["firm"] % 13)
    small["w"] = np.random.default_rng(1).uniform(0.2, 3.0, len(small))
    for f in ["y ~ llm*lap | firm + date", "y ~ llm*lap | firm + date + ind"]:
        ours = fe.feols(f, small, vcov={"CRV1": "firm+date"}, weights="w")
        assert ours.demean_residual <= 1e-12
        assert_same(ours, reference(f, small, {"CRV1": "firm+date"}, "w", demeaner=LSMR))
    # and the cap is honoured: too few iterations is a clear error, not a silent wrong answer
    with pytest.raises(Exception, match="fixef_maxiter"):
        fe.feols(fml, df, fixef_maxiter=5)


def test_singletons_dropped_counted_and_reported():
    df = PANEL.copy()
    extra = pd.DataFrame(dict(y=[1.0, 2.0, 3.0], llm=[1.0, 0.0, -1.0], lap=[0.1, 0.2, 0.3], firm=[900, 901, 902],
                              date=[0, 1, 2], region=0, ind=0, w=1.0))
    df = pd.concat([df, extra], ignore_index=True)
    with pytest.warns(LLMSurrogateWarning, match="3 singleton"):
        ours = fe.feols("y ~ llm + lap | firm + date", df, vcov={"CRV1": "date"})
    assert ours.n_dropped_singletons == 3 and ours.nobs == len(df) - 3
    assert any("singleton" in n for n in ours.notes)
    assert_same(ours, reference("y ~ llm + lap | firm + date", df, {"CRV1": "date"}))
    kept = fe.feols("y ~ llm + lap | firm + date", df, vcov={"CRV1": "date"}, fixef_rm="none")
    assert kept.nobs == len(df) and kept.n_dropped_singletons == 0
    assert_same(kept, reference("y ~ llm + lap | firm + date", df, {"CRV1": "date"}, fixef_rm="none"))
    # the slopes do not depend on the singletons (they are fitted exactly by their own level)
    np.testing.assert_allclose(kept.coef(), ours.coef(), rtol=1e-9)


def test_singletons_removed_repeatedly():
    # firm 1000 is a singleton; without it date 500 has one row (firm 1001), and without that
    # row firm 1001 has one row: fixest removes all three
    extra = pd.DataFrame(dict(y=[1.0, 2.0, 3.0], llm=[1.0, 0.0, -1.0], lap=[0.1, 0.2, 0.3], firm=[1000, 1001, 1001],
                              date=[500, 500, 0], region=0, ind=0, w=1.0))
    df = pd.concat([PANEL, extra], ignore_index=True)
    with pytest.warns(LLMSurrogateWarning, match="3 singleton"):
        ours = fe.feols("y ~ llm + lap | firm + date", df)
    assert ours.nobs == len(PANEL)
    assert_same(ours, reference("y ~ llm + lap | firm + date", df, "iid"))


def test_collinear_regressors_dropped_with_message():
    df = PANEL.assign(combo=PANEL["llm"] + 2 * PANEL["lap"], firm_const=PANEL["firm"] * 0.5)
    with pytest.warns(LLMSurrogateWarning, match="collinear regressor.*combo.*firm_const|collinear regressor.*firm_const"):
        ours = fe.feols("y ~ llm + lap + combo + firm_const | firm + date", df, vcov={"CRV1": "date"})
    assert set(ours.dropped_collinear) == {"combo", "firm_const"}
    assert list(ours.coef().index) == ["llm", "lap"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = reference("y ~ llm + lap + combo + firm_const | firm + date", df, {"CRV1": "date"})
    assert_same(ours, ref)
    with pytest.raises(InvalidArgumentError, match="collinear"), pytest.warns(LLMSurrogateWarning):
        fe.feols("y ~ firm_const | firm", df)


def test_nan_rows_dropped_and_counted():
    df = PANEL.copy()
    df.loc[[3, 10], "llm"] = np.nan
    df.loc[20, "y"] = np.nan
    df["firm"] = df["firm"].astype("float")
    df.loc[30, "firm"] = np.nan
    with pytest.warns(LLMSurrogateWarning, match="4 row"):
        ours = fe.feols("y ~ llm + lap | firm + date", df, vcov="hetero")
    assert ours.n_dropped_nan == 4 and ours.nobs + 4 == len(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(ours, reference("y ~ llm + lap | firm + date", df, "hetero"))


def test_zero_weight_rows_are_rows_removed():
    df = PANEL.copy()
    df.loc[:50, "w"] = 0.0
    with pytest.warns(LLMSurrogateWarning, match="51 row.*weight 0"):
        ours = fe.feols("y ~ llm + lap | firm + date", df, vcov={"CRV1": "date"}, weights="w")
    assert ours.n_dropped_zero_weight == 51
    assert_same(ours, reference("y ~ llm + lap | firm + date", df.iloc[51:], {"CRV1": "date"}, "w"))
    with pytest.raises(InvalidArgumentError, match="positive weight"), pytest.warns(LLMSurrogateWarning):
        fe.feols("y ~ llm | firm", df, weights=np.zeros(len(df)))


def test_bad_input_is_a_clear_error():
    one = PANEL.assign(const=1)
    with pytest.raises(InvalidArgumentError, match="cluster column 'const' has a single level"):
        fe.feols("y ~ llm | firm", one, vcov={"CRV1": "const"})
    with pytest.raises(ColumnNotFoundError, match="'lapp'.*did you mean 'lap'"):
        fe.feols("y ~ llm + lapp | firm", PANEL)
    with pytest.raises(ColumnNotFoundError, match="'cluster'"):
        fe.feols("y ~ llm | firm", PANEL, vcov={"CRV1": "cluster"})
    with pytest.raises(ColumnNotFoundError, match="'frm'"):
        fe.feols("y ~ llm | frm", PANEL)
    with pytest.raises(InvalidArgumentError, match="`vcov`"):
        fe.feols("y ~ llm | firm", PANEL, vcov="HC9")
    with pytest.raises(InvalidArgumentError, match="`fml`"):
        fe.feols("y llm", PANEL)
    with pytest.raises(InvalidArgumentError, match="`fml`.*lag"):  # a transform outside the allow-list
        fe.feols("y ~ lag(lap) | firm", PANEL)
    with pytest.raises(InvalidArgumentError, match="not numeric"):
        fe.feols("y ~ s | firm", PANEL.assign(s="a"))
    with pytest.raises(InvalidArgumentError, match="`weights`"):
        fe.feols("y ~ llm | firm", PANEL, weights=-PANEL["w"])
    with pytest.raises(InvalidArgumentError, match="`fixef_rm`"):
        fe.feols("y ~ llm | firm", PANEL, fixef_rm="all")


def test_formula_parsing():
    f = fe.parse_formula("y ~ a:b + a*c + b | f1 + f2^f3")
    assert f.term_names == ["a", "c", "b", "a:b", "a:c"]
    assert f.fixef_names == ["f1", "f2^f3"] and not f.intercept
    assert fe.parse_formula("y ~ x").term_names == ["Intercept", "x"]
    assert fe.parse_formula("y ~ a*b*c | f").term_names == ["a", "b", "c", "a:b", "a:c", "b:c", "a:b:c"]


def test_result_api_and_tables(tmp_path):
    fit = fe.feols("y ~ llm*lap | firm + date", PANEL, vcov={"CRV1": "date"})
    tidy = fit.tidy()
    assert list(tidy.columns) == ["term", "estimate", "std_error", "statistic", "p_value", "conf_low", "conf_high"]
    assert list(tidy["term"]) == ["llm", "lap", "llm:lap"]
    assert fit.fe_levels == {"firm": PANEL["firm"].nunique(), "date": PANEL["date"].nunique()}
    assert fit.n_clusters == {"date": PANEL["date"].nunique()}
    text = str(fit.summary())
    assert "CRV1 by date" in text and "Within R2" in text and "llm:lap" in text
    again = fe.FeolsResult.load(fit.save(tmp_path / "fit.json"))
    assert again == fit
    other = fe.feols("y ~ llm + lap | firm", PANEL, vcov="hetero")
    table = fe.etable([fit, other])
    assert "llm:lap" in table and "FE: date" in table and "Observations" in table and "(2)" in table
    tex = fe.etable([fit, other], type="tex")
    assert tex.startswith(r"\begin{tabular}{lcc}") and r"\toprule" in tex and "llm:lap" in tex
    assert r"Within $R^2$ &" in tex and r"\end{tabular}" in tex
    frame = fe.etable([fit, other], type="df")
    assert frame.loc["FE: date"].tolist() == ["x", "-"]


def test_demean_kernel_equals_dummy_regression_and_thread_count():
    rng = np.random.default_rng(4)
    n = 400
    f1, f2, f3 = rng.integers(0, 12, n), rng.integers(0, 9, n), rng.integers(0, 5, n)
    x = rng.normal(size=(n, 3))
    w = rng.uniform(0.2, 2.0, n)
    D = np.column_stack([np.eye(12)[f1], np.eye(9)[f2][:, 1:], np.eye(5)[f3][:, 1:]])
    sw = np.sqrt(w)[:, None]
    coef = np.linalg.lstsq(D * sw, x * sw, rcond=None)[0]
    want = x - D @ coef
    one = fe.demean(x, [f1, f2, f3], w, n_jobs=1)
    three = fe.demean(x, [f1, f2, f3], w, n_jobs=3)
    np.testing.assert_allclose(one.values, want, atol=1e-10)
    np.testing.assert_array_equal(one.values, three.values)
    assert one.converged and len(one.iterations) == 3


def test_demean_input_errors_and_threads():
    from concurrent.futures import ThreadPoolExecutor

    from llmsurrogate.exceptions import ShapeError

    x = np.arange(10.0)
    with pytest.raises(ShapeError):
        fe.demean(x, [np.zeros(9, dtype=int)])
    with pytest.raises(InvalidArgumentError, match="fixef_tol|tol"):
        fe.demean(x, [np.arange(10) % 3, np.arange(10) % 2], tol=0.0)
    # the kernel releases the GIL: fits in threads give the same numbers as in sequence
    fml = "y ~ llm*lap | firm + date"
    want = fe.feols(fml, PANEL, vcov={"CRV1": "date"}).coef()
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: fe.feols(fml, PANEL, vcov={"CRV1": "date"}).coef(), range(4)))
    for g in got:
        pd.testing.assert_series_equal(g, want)


def test_confint_level_and_the_old_alpha():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": rng.normal(size=50)})
    df["y"] = df["x"] + rng.normal(size=50)
    fit = fe.feols("y ~ x | firm", df)
    ci = fit.confint(level=0.9)
    assert list(ci.columns) == ["5%", "95%"]
    with pytest.warns(FutureWarning, match="`alpha`"):
        pd.testing.assert_frame_equal(fit.confint(alpha=0.1), ci)
    with pytest.warns(FutureWarning, match="`alpha`"):
        pd.testing.assert_frame_equal(fit.tidy(alpha=0.1), fit.tidy(level=0.9))
    with pytest.raises(InvalidArgumentError, match="level"):
        fit.confint(level=95)
