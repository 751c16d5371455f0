"""The lookahead-bias test and its pairs bootstrap (docs/methods/lookahead.md §2.2–§2.7, §4, §5.4,
§6.5–§6.6): the regression through ``fe.feols``, the magnitude identities of §4, the Rust
bootstrap replication by replication against ``fe.feols`` on the explicitly resampled rows, its
reproducibility, planted and absent lookahead bias, and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe, lookahead as la
from llmsurrogate.exceptions import ColumnNotFoundError, InvalidArgumentError

FML = "y ~ llm + lap + llm:lap | firm + date"


def panel(n=3000, firms=150, dates=60, planted=True, seed=0, l_max=0.3):
    """Definition 1 (§2.1): mu ~ N(0, 1), eps ~ N(0, 1), forecast mu + L eps with L ~ U(0, l_max)
    inside (0, L*) (L* = 0.414 here, §2.2 caveat 2) and LAP = L; without bias the forecast is mu
    and LAP is unrelated noise of the same law. Firm and date effects in the outcome."""
    rng = np.random.default_rng(seed)
    firm = rng.integers(0, firms, n)
    date = rng.integers(0, dates, n)
    mu, eps = rng.normal(size=n), rng.normal(size=n)
    L = rng.uniform(0, l_max, n)
    llm = mu + L * eps if planted else mu
    y = rng.normal(size=firms)[firm] + rng.normal(size=dates)[date] + mu + eps
    return pd.DataFrame({"y": y, "llm": llm, "lap": L, "firm": firm, "date": date})


def quiet_feols(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fe.feols(*args, **kwargs)


# --- §4 identities ---------------------------------------------------------------------------

def test_magnitude_identities_of_the_paper():
    # Table II: gamma = 0.00117, delta = 2.866, LAP (x 10^4) mean 0.073, SD 0.027, column-1 LLM
    # coefficient 0.210, SD(LLM) = 0.937
    m = la.magnitudes(0.00117, 2.866, 0.073, 0.027, gamma_baseline=0.210, signal_sd=0.937)
    assert m["marginal_effect_at_mean"] == pytest.approx(0.210, abs=0.002)
    assert m["interaction_per_sd"] == pytest.approx(0.077, abs=0.002)
    assert m["ratio_to_baseline"] == pytest.approx(0.37, abs=0.01)
    assert m["baseline_per_sd_signal"] == pytest.approx(0.197, abs=0.002)
    # Table VI: gamma = 0.514, delta = 0.148, LAP (%) mean 2.049, SD 1.007, column 1 0.798
    m = la.magnitudes(0.514, 0.148, 2.049, 1.007, gamma_baseline=0.798)
    assert m["marginal_effect_at_mean"] == pytest.approx(0.817, abs=0.002)
    assert m["interaction_per_sd"] == pytest.approx(0.149, abs=0.002)
    assert m["ratio_to_baseline"] == pytest.approx(0.19, abs=0.01)
    assert "baseline_per_sd_signal" not in m
    assert set(la.magnitudes(1, 2, 3, 4)) == {"marginal_effect_at_mean", "interaction_per_sd"}
    with pytest.raises(InvalidArgumentError, match="lap_sd"):
        la.magnitudes(1, 2, 3, -1)
    with pytest.raises(InvalidArgumentError, match="gamma"):
        la.magnitudes("a", 2, 3, 1)


def test_bootstrap_pvalue_helper_on_a_known_vector():
    draws = np.linspace(0, 1, 1000)
    assert la.bootstrap_p_value(draws, 0.95) == pytest.approx(0.05)
    assert la.bootstrap_p_value(draws, 0.95, plus_one=True) == pytest.approx(51 / 1001)
    assert la.bootstrap_p_value(draws, 0.05, side="less") == pytest.approx(0.05)
    assert la.bootstrap_p_value(np.r_[draws, np.nan], 0.95) == pytest.approx(0.05)  # NaN left out
    with pytest.raises(InvalidArgumentError, match="side"):
        la.bootstrap_p_value(draws, 0.5, side="two")
    with pytest.raises(InvalidArgumentError, match="finite"):
        la.bootstrap_p_value([np.nan], 0.5)


# --- the regression test -------------------------------------------------------------------------

def test_lookahead_test_is_feols_with_the_papers_conventions():
    d = panel(seed=3)
    r = la.lookahead_test(d, "y", "llm", "lap")
    ref = quiet_feols(FML, d, vcov={"CRV1": "date"}, fixef_rm="none")
    assert r.term == "llm:lap"
    assert r.estimate == pytest.approx(ref.coef()["llm:lap"], rel=1e-12)
    assert r.std_error == pytest.approx(ref.se()["llm:lap"], rel=1e-12)
    assert r.p_two_sided == pytest.approx(ref.pvalue()["llm:lap"], rel=1e-10)
    from scipy.stats import t

    assert r.df == 59
    assert r.p_greater == pytest.approx(t.sf(r.statistic, 59), rel=1e-12)
    assert r.p_greater + r.p_less == pytest.approx(1.0)
    assert r.regression.coef().equals(ref.coef())
    base = quiet_feols("y ~ llm | firm + date", d, vcov={"CRV1": "date"}, fixef_rm="none")
    assert r.baseline.coef()["llm"] == pytest.approx(base.coef()["llm"], rel=1e-12)
    gamma = float(ref.coef()["llm"])
    assert r.magnitudes["marginal_effect_at_mean"] == pytest.approx(gamma + r.estimate * d["lap"].mean())
    assert r.magnitudes["ratio_to_baseline"] == pytest.approx(r.estimate * d["lap"].std() / base.coef()["llm"])
    assert la.LookaheadTest.from_json(r.to_json()) == r
    text = str(r)
    assert "llm:lap" in text and "H1: delta > 0" in text
    assert list(r.tidy().columns)[:4] == ["term", "estimate", "std_error", "statistic"]
    # Table VI: firm clusters (firm effects nested); HC1 without a cluster
    r6 = la.lookahead_test(d, "y", "llm", "lap", cluster="firm")
    assert r6.std_error == pytest.approx(quiet_feols(FML, d, vcov={"CRV1": "firm"}, fixef_rm="none").se()["llm:lap"], rel=1e-12)
    rh = la.lookahead_test(d, "y", "llm", "lap", cluster=None)
    assert rh.std_error == pytest.approx(quiet_feols(FML, d, vcov="hetero", fixef_rm="none").se()["llm:lap"], rel=1e-12)


def test_controls_standardisation_and_missing_rows():
    d = panel(seed=4)
    d["small"] = (np.random.default_rng(1).uniform(size=len(d)) < 0.2).astype(float)
    # Table III: the small-firm indicator and its interactions; the baseline keeps the terms without LAP
    r = la.lookahead_test(d, "y", "llm", "lap", controls=["small", "llm:small", "lap:small", "llm:lap:small"])
    ref = quiet_feols("y ~ llm + lap + llm:lap + small + llm:small + lap:small + llm:lap:small | firm + date", d,
                      vcov={"CRV1": "date"}, fixef_rm="none")
    assert r.estimate == pytest.approx(ref.coef()["llm:lap"], rel=1e-12)
    assert set(r.baseline.terms) == {"llm", "small", "llm:small"}
    # transforms (feols takes them) are refused by name here: the baseline is built by dropping LAP's terms
    for bad in (["log(small + 1)"], ["C(small)"]):
        with pytest.raises(InvalidArgumentError, match="argument `controls`"):
            la.lookahead_test(d, "y", "llm", "lap", controls=bad)
    # Table V: outcome, signal and LAP z-scored within the sample (ddof=1) before the product
    rs = la.lookahead_test(d, "y", "llm", "lap", standardize=True)
    z = d.copy()
    for c in ("y", "llm", "lap"):
        z[c] = (z[c] - z[c].mean()) / z[c].std(ddof=1)
    assert rs.estimate == pytest.approx(quiet_feols(FML, z, vcov={"CRV1": "date"}, fixef_rm="none").coef()["llm:lap"], rel=1e-10)
    assert rs.standardized and rs.lap_sd == pytest.approx(1.0)
    # rows with a missing value are dropped with a count
    dn = d.copy()
    dn.loc[[0, 5, 9], "lap"] = np.nan
    dn.loc[11, "date"] = None
    with pytest.warns(Warning, match="4 row"):
        rn = la.lookahead_test(dn, "y", "llm", "lap")
    assert rn.nobs == len(d) - 4 and rn.n_dropped == 4


def test_planted_lookahead_bias_is_detected_and_its_absence_is_not():
    planted = panel(n=6000, seed=11, planted=True)
    r = la.lookahead_test(planted, "y", "llm", "lap")
    assert r.estimate > 0 and r.p_greater < 0.001
    b = la.bootstrap(planted, "y", "llm", "lap", n_boot=300, seed=5)
    assert b.p_value < 0.01  # #{draws <= 0} / B
    null = panel(n=6000, seed=11, planted=False)
    r0 = la.lookahead_test(null, "y", "llm", "lap")
    assert r0.p_greater > 0.1 and r0.p_two_sided > 0.1
    b0 = la.bootstrap(null, "y", "llm", "lap", n_boot=300, seed=5)
    assert b0.p_value > 0.1
    # the bootstrap spread matches the clustered standard error's order of magnitude
    assert 0.5 < np.nanstd(b0.draws) / r0.std_error < 2.0


# --- the bootstrap ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small():
    d = panel(n=1200, firms=80, dates=30, seed=7)
    # a singleton firm: kept by the bootstrap, and it does not move the slopes
    extra = pd.DataFrame({"y": [0.3], "llm": [1.0], "lap": [0.2], "firm": [999], "date": [3]})
    return pd.concat([d, extra], ignore_index=True)


@pytest.mark.parametrize("resample", ["obs", "date", "firm"])
def test_bootstrap_draws_equal_feols_on_the_resampled_rows(small, resample):
    b = la.bootstrap(small, "y", "llm", "lap", n_boot=6, seed=2024, resample=resample, n_jobs=2)
    assert b.draws.shape == (6,) and np.isfinite(b.draws).all()
    blocks = None if resample == "obs" else small[resample].to_numpy()
    for rep in range(6):
        w = la.bootstrap_counts(len(small), 2024, rep, blocks=blocks)
        assert w.sum() == (len(small) if resample == "obs" else w.sum())
        rows = np.repeat(np.arange(len(small)), w.astype(int))
        dup = small.iloc[rows]
        for rm in ("none", "singleton"):
            want = float(quiet_feols(FML, dup, fixef_rm=rm).coef()["llm:lap"])
            assert b.draws[rep] == pytest.approx(want, rel=1e-9, abs=1e-10), (rep, rm)
        # and the same as the weighted fit on the original rows (rows of weight 0 dropped)
        wfit = float(quiet_feols(FML, small, weights=w, fixef_rm="none").coef()["llm:lap"])
        assert b.draws[rep] == pytest.approx(wfit, rel=1e-9, abs=1e-10)
    if resample != "obs":
        assert b.n_blocks == small[resample].nunique()


def test_bootstrap_is_reproducible_for_any_thread_count(small):
    a = la.bootstrap(small, "y", "llm", "lap", n_boot=40, seed=9, n_jobs=1)
    b = la.bootstrap(small, "y", "llm", "lap", n_boot=40, seed=9, n_jobs=2)
    np.testing.assert_array_equal(a.draws, b.draws)
    c = la.bootstrap(small, "y", "llm", "lap", n_boot=40, seed=9)
    np.testing.assert_array_equal(a.draws, c.draws)
    d = la.bootstrap(small, "y", "llm", "lap", n_boot=40, seed=10)
    assert not np.array_equal(a.draws, d.draws)
    # the first replications do not depend on how many follow
    e = la.bootstrap(small, "y", "llm", "lap", n_boot=5, seed=9)
    np.testing.assert_array_equal(a.draws[:5], e.draws)
    # seed=None draws a seed and records it
    f = la.bootstrap(small, "y", "llm", "lap", n_boot=5)
    g = la.bootstrap(small, "y", "llm", "lap", n_boot=5, seed=f.seed)
    np.testing.assert_array_equal(f.draws, g.draws)
    # replications are distinct resamples, also for seed 0
    z = la.bootstrap(small, "y", "llm", "lap", n_boot=20, seed=0)
    assert len(np.unique(np.round(z.draws, 12))) == 20
    c0, c1 = la.bootstrap_counts(100, 0, 0), la.bootstrap_counts(100, 0, 1)
    assert c0.sum() == c1.sum() == 100 and not np.array_equal(c0, c1)


def test_bootstrap_result_pvalues_plot_and_json(small):
    import matplotlib

    matplotlib.use("Agg")
    b = la.bootstrap(small, "y", "llm", "lap", n_boot=50, seed=1, reference=0.4)
    d = b.draws
    assert b.p_value == pytest.approx((d >= 0.4).mean())
    assert b.p_value_plus_one == pytest.approx((1 + (d >= 0.4).sum()) / 51)
    assert b.p_value_at(side="less") == pytest.approx((d <= 0.4).mean())
    assert b.p_value_at(reference=0.0, side="less") == pytest.approx((d <= 0).mean())
    full = quiet_feols(FML, small, fixef_rm="none")
    assert b.estimate == pytest.approx(full.coef()["llm:lap"], rel=1e-12)
    nb = la.bootstrap(small, "y", "llm", "lap", n_boot=50, seed=1)
    assert nb.reference is None and nb.p_value == pytest.approx((d <= 0).mean())
    ax = b.plot().axes[0]  # plot() returns the Figure (issue 25, item 4)
    assert len(ax.lines) == 2  # 95th percentile and the reference
    assert la.LookaheadBootstrap.from_json(b.to_json()) == b
    assert "Pairs bootstrap" in str(b) and "p = (1 + #) / (B + 1)" in str(b)


def test_bootstrap_timing_smoke():
    d = panel(n=10_000, firms=1500, dates=250, seed=2)
    b = la.bootstrap(d, "y", "llm", "lap", n_boot=100, seed=1)
    assert np.isfinite(b.draws).all() and b.seconds < 60


# --- bad input -----------------------------------------------------------------------------------------

def test_bad_input_is_a_clear_error(small):
    with pytest.raises(ColumnNotFoundError, match="'lapp'"):
        la.lookahead_test(small, "y", "llm", "lapp")
    with pytest.raises(ColumnNotFoundError, match="'week'"):
        la.lookahead_test(small, "y", "llm", "lap", cluster="week")
    with pytest.raises(ColumnNotFoundError, match="'size'"):
        la.lookahead_test(small, "y", "llm", "lap", controls=["size"])
    with pytest.raises(ColumnNotFoundError, match="'quarter'"):
        la.bootstrap(small, "y", "llm", "lap", fe=["firm", "quarter"], n_boot=2, seed=1)
    with pytest.raises(InvalidArgumentError, match="n_boot"):
        la.bootstrap(small, "y", "llm", "lap", n_boot=0, seed=1)
    with pytest.raises(InvalidArgumentError, match="resample"):
        la.bootstrap(small, "y", "llm", "lap", n_boot=2, seed=1, resample="weekly")
    with pytest.raises(InvalidArgumentError, match="seed"):
        la.bootstrap(small, "y", "llm", "lap", n_boot=2, seed=-1)
    with pytest.raises(InvalidArgumentError, match="different"):
        la.lookahead_test(small, "y", "llm", "llm")
    with pytest.raises(InvalidArgumentError, match="fe"):
        la.lookahead_test(small, "y", "llm", "lap", fe=[])
    with pytest.raises(InvalidArgumentError, match="standardize"):
        la.lookahead_test(small, "y", "llm", "lap", standardize="yes")
    s = small.copy()
    s["const"] = 1.0
    with pytest.raises(InvalidArgumentError, match="constant"):
        la.lookahead_test(s, "y", "llm", "const", standardize=True)
    # LAP constant within firms: the interaction survives, but LAP itself is absorbed
    s["flap"] = s["firm"] * 0.01
    with pytest.raises(InvalidArgumentError, match="collinear"):
        la.bootstrap(s, "y", "llm", "flap", n_boot=2, seed=1)
    s["txt"] = "a"
    with pytest.raises(InvalidArgumentError, match="not numeric"):
        la.lookahead_test(s, "y", "llm", "txt")


# --- periods around the knowledge cutoff (§2.6) ---------------------------------------------------------

def test_split_by_cutoff_with_the_papers_windows():
    table = la.model_metadata()
    assert set(table["model"]) == {"llama-3.3-70b-instruct", "llama-2-70b"}
    l2 = table.set_index("model").loc["llama-2-70b"]
    assert (l2["knowledge_cutoff"], l2["in_sample_end"], l2["oos_start"], l2["oos_end"]) == \
        ("2022-09", "2022-09", "2023-09", "2024-12")
    dates = pd.Series(pd.to_datetime(["2011-12-30", "2012-01-03", "2022-09-30T15:59:00", "2022-10-03T00:00:00", "2023-08-31",
                                      "2023-09-01", "2024-12-31", "2025-01-02", None], format="mixed"), index=list("abcdefghi"))
    s = la.split_by_cutoff(dates, model="llama-2-70b")
    assert list(s.index) == list("abcdefghi")
    assert s["period"].tolist() == ["neither", "in_sample", "in_sample", "neither", "neither", "out_of_sample",
                                    "out_of_sample", "neither", "neither"]
    assert not (s["in_sample"] & s["out_of_sample"]).any()
    s3 = la.split_by_cutoff(dates, model="llama-3.3-70b-instruct")
    assert s3["out_of_sample"].sum() == 0 and s3["in_sample"].sum() == 5
    # explicit bounds: a day bound covers the whole day; they override the model's
    e = la.split_by_cutoff(dates.to_numpy(), is_end="2022-09-30", oos_start="2023-09-01")
    assert e["period"].tolist()[:3] == ["in_sample", "in_sample", "in_sample"]
    assert e["out_of_sample"].tolist()[-3:] == [True, True, False]
    o = la.split_by_cutoff(dates, model="llama-2-70b", oos_end="2023-12")
    assert o["out_of_sample"].sum() == 1
    tz = pd.Series(pd.to_datetime(["2022-09-30 23:30"]).tz_localize("US/Eastern"))
    assert la.split_by_cutoff(tz, model="llama-2-70b")["in_sample"].tolist() == [True]
    with pytest.raises(InvalidArgumentError, match="unknown model"):
        la.split_by_cutoff(dates, model="gpt-9")
    with pytest.raises(InvalidArgumentError, match="after the in-sample end"):
        la.split_by_cutoff(dates, is_end="2023-09", oos_start="2023-09")
    with pytest.raises(InvalidArgumentError, match="is_end"):
        la.split_by_cutoff(dates, is_end="September")
    with pytest.raises(InvalidArgumentError, match="model="):
        la.split_by_cutoff(dates)


@pytest.mark.parametrize("fes", [["firm"], ["firm", "date", "ind"]])
def test_bootstrap_with_one_or_three_fixed_effects(small, fes):
    s = small.copy()
    s["ind"] = s["firm"] % 7
    fml = "y ~ llm + lap + llm:lap | " + " + ".join(fes)
    b = la.bootstrap(s, "y", "llm", "lap", fe=fes, n_boot=3, seed=77, n_jobs=2)
    for rep in range(3):
        w = la.bootstrap_counts(len(s), 77, rep)
        dup = s.iloc[np.repeat(np.arange(len(s)), w.astype(int))]
        want = float(quiet_feols(fml, dup, fixef_rm="none").coef()["llm:lap"])
        assert b.draws[rep] == pytest.approx(want, rel=1e-9, abs=1e-10)


# --- old spellings (one release, with a FutureWarning) -----------------------------------------------

def test_old_spellings_warn_and_give_the_same_result(small):
    new = la.bootstrap(small, "y", "llm", "lap", n_boot=5, seed=3, reference=0.4)
    with pytest.warns(FutureWarning, match="`reps` is now called `n_boot`"):
        old = la.bootstrap(small, "y", "llm", "lap", reps=5, seed=3, reference=0.4)
    np.testing.assert_array_equal(old.draws, new.draws)
    with pytest.warns(FutureWarning, match="by name"):
        pos = la.bootstrap(small, "y", "llm", "lap", ("firm", "date"), 5, 3)
    np.testing.assert_array_equal(pos.draws, new.draws)
    with pytest.warns(FutureWarning, match="p_value_at"):
        assert new.pvalue(side="less") == new.p_value_at(side="less")
    with pytest.warns(FutureWarning, match="bootstrap_p_value"):
        assert la.bootstrap_pvalue([0.1, 0.9], 0.5, "less") == la.bootstrap_p_value([0.1, 0.9], 0.5, side="less")
    with pytest.warns(FutureWarning, match="by name"):
        t = la.lookahead_test(small, "y", "llm", "lap", ["firm", "date"], "firm")
    assert t.estimate == la.lookahead_test(small, "y", "llm", "lap", cluster="firm").estimate
    with pytest.warns(FutureWarning, match="by name"):
        s = la.split_by_cutoff(["2022-06-30", "2023-10-02"], "2022-09", "2023-09")
    assert s["period"].tolist() == ["in_sample", "out_of_sample"]
