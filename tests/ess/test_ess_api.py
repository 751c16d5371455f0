"""ESS public API: built-in algorithms, scikit-learn estimators, results, save/load, backends, bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import llmsurrogate
from llmsurrogate import ess
from llmsurrogate.exceptions import (
    ColumnNotFoundError,
    InvalidArgumentError,
    NonFiniteError,
    ShapeError,
)

ESS_COLUMNS = ["n_train", "n_blocks", "algo_error", "algo_se", "llm_error", "diff", "diff_se", "z", "p_value",
               "reject", "regime", "v_train", "v_test", "cov_train_test"]
CURVE_COLUMNS = ["n_train", "n_blocks", "error", "se_fixed_n", "se_fixed_b", "se", "ci_low", "ci_high", "regime"]


def _reg_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] - 0.5 * X[:, 1] + rng.normal(scale=0.7, size=n)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["y"] = y
    df["llm"] = 0.8 * X[:, 0]
    return df


def _clf_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    p = 1 / (1 + np.exp(-(1.5 * X[:, 0])))
    y = (rng.random(n) < p).astype(float)
    df = pd.DataFrame(X, columns=["a", "b"])
    df["y"] = y
    df["llm"] = (X[:, 0] > 0.2).astype(float)
    df["llm_p"] = 1 / (1 + np.exp(-X[:, 0]))
    return df


def test_rf_and_lasso_regression_tables_and_results():
    df = _reg_data()
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm="lasso", grid=[1, 2, 5, 20, 50], seed=0,
                                     algorithm_options=None)
    assert list(res.table.columns[: len(ESS_COLUMNS)]) == ESS_COLUMNS or set(ESS_COLUMNS) <= set(res.table.columns)
    assert isinstance(res.lower_bound, int) and res.lower_bound >= 1
    assert res.status in {"stopped", "all_rejected", "not_rejected_at_first_grid_point"}
    assert res.llm_error == pytest.approx(float(np.mean((df["llm"] - df["y"]) ** 2)), rel=1e-12)
    # N = 1: every algorithm predicts the single training y
    row1 = res.table.iloc[0]
    y = df["y"].to_numpy()[ess.permutation(len(df), 0)]
    exp = np.mean([np.mean((np.delete(y, b) - y[b]) ** 2) for b in range(len(y))])
    assert row1["algo_error"] == pytest.approx(exp, rel=1e-12)
    res_rf = ess.equivalent_sample_size(df, "y", "llm", algorithm="rf", grid=[2, 20], seed=0,
                                        algorithm_options={"n_estimators": 20})
    assert res_rf.table["algo_error"].iloc[1] < res_rf.table["algo_error"].iloc[0]
    curve = ess.error_curve(df, "y", features=["a", "b", "c"], algorithm="lasso", grid=[5, 50], seed=0)
    assert set(CURVE_COLUMNS) <= set(curve.table.columns)
    assert (curve.table["ci_low"] < curve.table["error"]).all()
    assert "rmse" in curve.table
    np.testing.assert_allclose(curve.table["rmse_se"], curve.table["se"] / (2 * np.sqrt(curve.table["error"])))


def test_classification_logit_rf_brier_log_and_single_class_blocks():
    df = _clf_data()
    res = ess.equivalent_sample_size(df, "y", "llm", features=["a", "b"], algorithm="logit_l1", loss="zero_one",
                                     grid=[1, 2, 4, 30], seed=0)
    # tiny blocks are often single-class: the majority-class rule is used, never an error
    assert res.table["constant_blocks"].iloc[0] == res.table["n_blocks"].iloc[0]
    assert res.table["constant_blocks"].iloc[1] > 0
    assert 0 < res.table["algo_error"].iloc[-1] < 0.5
    resb = ess.equivalent_sample_size(df, "y", "llm_p", features=["a", "b"], algorithm="rf", loss="brier",
                                      grid=[5, 50], seed=0, algorithm_options={"n_estimators": 10})
    assert (resb.table["algo_error"] <= 1).all()
    with pytest.warns(UserWarning, match="clipped"):
        resl = ess.equivalent_sample_size(df, "y", "llm", features=["a", "b"], algorithm="logit_l1", loss="log",
                                          grid=[50], seed=0)
    assert resl.llm_error > 1  # hard 0/1 predictions under clipped log loss are very costly


def test_sklearn_pipeline_predictor_object_and_custom_loss():
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    df = _reg_data()

    class Rule:
        def predict(self, frame):
            return 0.8 * frame["a"].to_numpy()

    pipe = make_pipeline(StandardScaler(), Ridge(alpha=1.0))
    a = ess.equivalent_sample_size(df, "y", Rule(), features=["a", "b", "c"], algorithm=pipe, grid=[5, 20],
                                   seed=4, tuning="none")
    b = ess.equivalent_sample_size(df, "y", df["llm"].to_numpy(), features=["a", "b", "c"], algorithm=pipe,
                                   grid=[5, 20], seed=4, tuning="none")
    c = ess.equivalent_sample_size(df, "y", "llm", features=["a", "b", "c"], algorithm=pipe, grid=[5, 20],
                                   seed=4, tuning="none")
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.table, c.table)
    custom = ess.equivalent_sample_size(df, "y", "llm", features=["a", "b", "c"], algorithm=pipe, grid=[5, 20],
                                        seed=4, tuning="none", loss=lambda p, y: (p - y) ** 2)
    np.testing.assert_allclose(custom.table["algo_error"], a.table["algo_error"], rtol=1e-12)
    np.testing.assert_allclose(custom.table["diff_se"], a.table["diff_se"], rtol=1e-9)


def test_seed_none_keeps_order_and_variance_sum_is_more_conservative():
    df = _reg_data(400)
    r0 = ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[1, 4], seed=None)
    # seed=None: blocks are the data's own consecutive rows
    y = df["y"].to_numpy()
    means = y[:400].reshape(100, 4).mean(axis=1)
    e_b = [np.mean((np.delete(y, np.s_[4 * b:4 * b + 4]) - means[b]) ** 2) for b in range(100)]
    assert r0.table["algo_error"].iloc[1] == pytest.approx(np.mean(e_b), rel=1e-12)
    assert r0.permutation is None
    rs = ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[1, 4], seed=None, variance="sum")
    assert (rs.table["diff_se"] >= r0.table["diff_se"]).all()


def test_result_summary_tidy_plot_save_load(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    df = _reg_data(300)
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm="lasso", grid=[1, 5, 20], seed=9)
    text = res.summary().as_text()
    assert "ESS lower bound" in text and "sequential tests" in text
    assert res.tidy().shape[0] == 3
    fig = res.plot()  # a matplotlib Figure, as every result's plot() (issue 25, item 4)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "training size N"
    legends = [lg for lg in (ax.get_legend(), *fig.legends) if lg is not None]
    assert any("fixed rule" in t.get_text() for lg in legends for t in lg.get_texts())
    path = res.save(tmp_path / "ess.json")
    back = ess.EssResult.load(path)
    assert back == res and back.seed == 9 and back.grid == [1, 5, 20]
    assert back.versions["llmsurrogate"] and back.permutation_hash == res.permutation_hash
    np.testing.assert_array_equal(back.permutation, ess.permutation(300, 9))
    curve = ess.error_curve(df, "y", algorithm="mean", grid=[2, 10], seed=9)
    assert ess.ErrorCurve.load(curve.save(tmp_path / "c.json")) == curve
    curve.plot(scale="rmse")


def test_bias_correct_adds_two_v_test_over_b_minus_one(tmp_path):
    df = _reg_data(300)
    kw = dict(algorithm="mean", grid=[10, 30, 60], seed=1, regime="fixed_N")
    plain = ess.equivalent_sample_size(df, "y", "llm", **kw)
    bc = ess.equivalent_sample_size(df, "y", "llm", bias_correct=True, **kw)
    t, u = plain.table, bc.table
    B = t["n_blocks"].to_numpy()
    np.testing.assert_allclose(u["sigma2_diff_fixed_n"], t["sigma2_diff_fixed_n"] + 2 * t["v_test"] / (B - 1), rtol=1e-12)
    np.testing.assert_allclose(u["diff_se"], np.sqrt(u["sigma2_diff_fixed_n"] / u["n_used"]), rtol=1e-12)
    assert (u["diff_se"] > t["diff_se"]).all() and (u["algo_error"] == t["algo_error"]).all()
    assert bc.bias_correct and not plain.bias_correct and any("bias-corrected" in note for note in bc.notes)
    assert ess.EssResult.load(bc.save(tmp_path / "bc.json")) == bc
    c0 = ess.error_curve(df, "y", **kw)
    c1 = ess.error_curve(df, "y", bias_correct=True, **kw)
    np.testing.assert_allclose(c1.table["se_fixed_n"] ** 2 * c1.table["n_used"],
                               c0.table["sigma2_fixed_n"] + 2 * c0.table["v_test"] / (B - 1), rtol=1e-12)
    with pytest.raises(InvalidArgumentError, match="bias_correct"):
        ess.equivalent_sample_size(df, "y", "llm", bias_correct="yes", **kw)


def test_thread_count_and_joblib_backends_give_identical_results():
    df = _reg_data(500)
    kw = dict(algorithm="rf", grid=[3, 25], seed=2, algorithm_options={"n_estimators": 10})
    a = ess.equivalent_sample_size(df, "y", "llm", n_jobs=1, **kw)
    b = ess.equivalent_sample_size(df, "y", "llm", n_jobs=2, **kw)
    pd.testing.assert_frame_equal(a.table, b.table)
    # classification: grid tuning in worker processes, labels through the fast linear path
    rng = np.random.default_rng(4)
    cls = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400)})
    cls["y"] = (cls["a"] + rng.normal(size=400) > 0).astype(float)
    cls["llm"] = (cls["a"] > 0.3).astype(float)
    kw = dict(algorithm="logit_l1", loss="zero_one", grid=[2, 8, 40], seed=3)
    a = ess.equivalent_sample_size(cls, "y", "llm", n_jobs=1, **kw)
    b = ess.equivalent_sample_size(cls, "y", "llm", n_jobs=2, **kw)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.lower_bound == b.lower_bound


def test_n_jobs_none_means_the_package_count_and_changes_no_number():
    """Issue 20: n_jobs=None is llmsurrogate.num_threads()'s count (a joblib.parallel_config's
    n_jobs, then LLMSURROGATE_NUM_THREADS, then all cores), no longer one joblib worker; the
    numbers equal one job's."""
    import joblib

    from llmsurrogate import _workers

    df = _reg_data(300)
    kw = dict(algorithm="lasso", grid=[3, 10, 30], seed=5)
    one = ess.equivalent_sample_size(df, "y", "llm", n_jobs=1, **kw)
    default = ess.equivalent_sample_size(df, "y", "llm", **kw)
    pd.testing.assert_frame_equal(one.table, default.table)
    assert one.lower_bound == default.lower_bound
    assert _workers.local_n_jobs(None, prefer="processes") == llmsurrogate.num_threads()
    with joblib.parallel_config(n_jobs=2):
        assert _workers.local_n_jobs(None, prefer="processes") == 2
        curve = ess.error_curve(df, "y", ["a", "b"], algorithm="mean", grid=[2, 20], seed=1)
    pd.testing.assert_frame_equal(curve.table, ess.error_curve(df, "y", ["a", "b"], algorithm="mean", grid=[2, 20],
                                                               seed=1, n_jobs=1).table)


def test_arguments_after_the_columns_by_position_still_work_with_a_warning():
    """Issue 20: keyword-only after the data and the column names; the old positional calls
    warn (FutureWarning) and give the same result until 0.3."""
    df = _reg_data(200)
    new = ess.equivalent_sample_size(df, "y", "llm", ["a"], algorithm="mean", grid=[2, 10], loss="squared",
                                     alpha=0.1, n_jobs=1)
    with pytest.warns(FutureWarning, match="by name"):
        old = ess.equivalent_sample_size(df, "y", "llm", ["a"], "mean", [2, 10], "squared", 0.1, n_jobs=1)
    pd.testing.assert_frame_equal(new.table, old.table)
    assert (new.lower_bound, new.alpha) == (old.lower_bound, old.alpha)
    new = ess.error_curve(df, "y", ["a"], algorithm="mean", grid=[2, 10], n_jobs=1)
    with pytest.warns(FutureWarning, match="algorithm"):
        old = ess.error_curve(df, "y", ["a"], "mean", [2, 10], n_jobs=1)
    pd.testing.assert_frame_equal(new.table, old.table)
    rng = np.random.default_rng(1)
    exp = pd.DataFrame({"x": rng.normal(size=200), "d": rng.integers(0, 2, 200)})
    exp["y"] = exp["d"] * (1 + exp["x"]) + rng.normal(size=200)
    exp["tau"] = 1 + exp["x"]
    new = ess.cate_ess(exp, "y", "d", "tau", propensity=0.5, features=["x"], algorithm="mean", grid=[2, 10], n_jobs=1)
    with pytest.warns(FutureWarning, match="propensity"):
        old = ess.cate_ess(exp, "y", "d", "tau", 0.5, ["x"], "mean", [2, 10], n_jobs=1)
    pd.testing.assert_frame_equal(new.table, old.table)
    with pytest.raises(TypeError):
        ess.equivalent_sample_size(df, "y", "llm", ["a"], "mean", algorithm="rf")


def test_error_curve_level_and_the_old_alpha():
    """Issue 20: error_curve's intervals are at ``level`` (was ``alpha`` = 1 - level); the old
    argument and attribute warn (FutureWarning) and give the same numbers until 0.3."""
    df = _reg_data(200)
    kw = dict(algorithm="mean", grid=[2, 10], n_jobs=1)
    default = ess.error_curve(df, "y", ["a"], **kw)
    assert default.level == 0.95 and "level" in default.to_dict()["fields"]
    assert "alpha" not in default.to_dict()["fields"]
    for a in (0.05, 0.1, 0.2, 0.3217):
        new = ess.error_curve(df, "y", ["a"], level=1 - a, **kw)
        with pytest.warns(FutureWarning, match=r"`alpha` is now `level` \(level = 1 - alpha\)"):
            old = ess.error_curve(df, "y", ["a"], alpha=a, **kw)
        assert old == new and old.level == new.level == 1 - a
        pd.testing.assert_frame_equal(old.table, new.table, check_exact=True)
        with pytest.warns(FutureWarning, match="ErrorCurve.alpha is now ErrorCurve.level"):
            assert old.alpha == 1 - old.level
    pd.testing.assert_frame_equal(ess.error_curve(df, "y", ["a"], level=0.95, **kw).table, default.table,
                                  check_exact=True)
    # alpha's old place among the arguments passed by position
    with pytest.warns(FutureWarning) as record:
        pos = ess.error_curve(df, "y", ["a"], "mean", [2, 10], "squared", "hybrid", "per_n_subset", 0, 1, 0.1)
    assert pos == ess.error_curve(df, "y", ["a"], level=0.9, **kw)
    assert any("`alpha` is now `level`" in str(w.message) for w in record)
    with pytest.raises(InvalidArgumentError, match="`alpha` and `level`"):
        ess.error_curve(df, "y", ["a"], alpha=0.1, level=0.9, **kw)
    with pytest.warns(FutureWarning), pytest.raises(InvalidArgumentError, match="alpha"):
        ess.error_curve(df, "y", ["a"], alpha=0.7, **kw)
    for bad in (0.3, 1.5, float("nan"), True, "0.95"):
        with pytest.raises(InvalidArgumentError, match="level"):
            ess.error_curve(df, "y", ["a"], level=bad, **kw)
    assert default.summary().facts["CI level"] == "95% two-sided"
    # a curve saved before the rename ("alpha" in its JSON) loads, with level = 1 - alpha
    payload = default.to_dict()
    fields = {("alpha" if k == "level" else k): (0.05 if k == "level" else v) for k, v in payload["fields"].items()}
    assert llmsurrogate.results.Result.from_dict({**payload, "fields": fields}) == default
    assert ess.ErrorCurve.from_json(default.to_json()) == default


# --- bad input ---------------------------------------------------------------------------------

def test_bad_inputs():
    df = _reg_data(100)
    with pytest.raises(NonFiniteError, match="outcome"):
        ess.equivalent_sample_size(df.assign(y=np.r_[np.nan, df["y"].iloc[1:]]), "y", "llm", algorithm="mean", grid=[2])
    with pytest.raises(NonFiniteError, match="outcome"):
        ess.error_curve(df.assign(y=np.r_[np.inf, df["y"].iloc[1:]]), "y", algorithm="mean", grid=[2])
    with pytest.raises(NonFiniteError, match="prediction"):
        ess.equivalent_sample_size(df.assign(llm=np.r_[df["llm"].iloc[:-1], np.inf]), "y", "llm", algorithm="mean", grid=[2])
    with pytest.raises(ShapeError, match="99 values"):
        ess.equivalent_sample_size(df, "y", df["llm"].to_numpy()[:99], algorithm="mean", grid=[2])
    with pytest.raises(InvalidArgumentError, match="exceeds n/2"):
        ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[2, 51])
    with pytest.raises(InvalidArgumentError, match=">= 1"):
        ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[0, 2])
    with pytest.raises(InvalidArgumentError, match="constant"):
        ess.equivalent_sample_size(df.assign(y=3.0), "y", "llm", algorithm="mean", grid=[2])
    with pytest.raises(InvalidArgumentError, match="binary outcome"):
        ess.equivalent_sample_size(df, "y", "llm", algorithm="rf", loss="brier", grid=[2])
    with pytest.raises(InvalidArgumentError, match="looks continuous"):
        ess.equivalent_sample_size(df, "y", "llm", algorithm="rf", loss="zero_one", grid=[2])
    with pytest.raises(InvalidArgumentError, match="regression"):
        ess.equivalent_sample_size(_clf_data(100), "y", "llm", algorithm="lasso", loss="zero_one", grid=[2])
    with pytest.raises(InvalidArgumentError, match="3 blocks"):
        ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[2, 40], regime="fixed_N")
    with pytest.raises(ColumnNotFoundError):
        ess.equivalent_sample_size(df, "y", "llmx", algorithm="mean", grid=[2])
    with pytest.raises(InvalidArgumentError, match="loss"):
        ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[2], loss="hinge")
    with pytest.raises(InvalidArgumentError, match="algorithm"):
        ess.equivalent_sample_size(df, "y", "llm", algorithm="xgb", grid=[2])
    with pytest.raises(InvalidArgumentError, match="propensity"):
        ess.cate_ess(df.assign(d=1.0), "y", "d", "llm", propensity=1.0, algorithm="mean", grid=[2])
    with pytest.raises(NonFiniteError, match="feature"):
        ess.equivalent_sample_size(df.assign(a=np.r_[np.nan, df["a"].iloc[1:]]), "y", "llm", algorithm="lasso", grid=[5])


class _WorseWithN:
    """A deliberately bad learner: the block mean plus a bias that grows with the block size."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **kw):
        return self

    def fit(self, X, y):
        self.value_ = float(np.mean(y)) + len(y) / 10.0
        return self

    def predict(self, X):
        return np.full(len(X), self.value_)


def test_monotonicity_diagnostic_fires_on_a_rising_curve():
    df = _reg_data(2000)
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm=_WorseWithN(), grid=[1, 5, 20], seed=0,
                                     tuning="none")
    assert [1, 20] in res.monotonicity_violations and [5, 20] in res.monotonicity_violations
    assert "monotonicity diagnostic fired" in res.summary().as_text()
    curve = ess.error_curve(df, "y", algorithm="mean", grid=[1, 5, 20], seed=0)
    assert curve.monotonicity_violations == []


def test_regimes_choose_the_documented_variance():
    df = _reg_data(400)
    kw = dict(algorithm="mean", grid=[2, 20], seed=1)
    hyb = ess.error_curve(df, "y", **kw).table
    assert list(hyb["regime"]) == ["fixed_N", "fixed_B"]          # B = 200 >= 40, B = 20 < 40
    np.testing.assert_allclose(hyb["se"], [hyb["se_fixed_n"][0], hyb["se_fixed_b"][1]])
    fb = ess.error_curve(df, "y", regime="fixed_B", **kw).table
    np.testing.assert_allclose(fb["se"], fb["se_fixed_b"])
    np.testing.assert_allclose(hyb["se_fixed_n"], np.sqrt(hyb["sigma2_fixed_n"] / hyb["n_used"]))


def test_missing_drop_equals_running_on_the_complete_rows():
    df = _reg_data(300)
    bad = df.copy()
    bad.loc[[3, 50], "llm"] = np.nan
    bad.loc[7, "y"] = np.inf
    kw = dict(algorithm="lasso", grid=[2, 10], seed=4)
    with pytest.raises(NonFiniteError):
        ess.equivalent_sample_size(bad, "y", "llm", **kw)
    with pytest.warns(UserWarning, match="removed 3 of 300"):
        got = ess.equivalent_sample_size(bad, "y", "llm", missing="drop", **kw)
    want = ess.equivalent_sample_size(df.drop(index=[3, 7, 50]).reset_index(drop=True), "y", "llm", **kw)
    pd.testing.assert_frame_equal(got.table, want.table)
    assert got.n == 297


def test_survey_weights_are_refused_by_every_ess_function():
    """docs/methods/survey.md §5: neither the ESS estimate nor its variance holds with survey weights,
    so weights= is refused with the reason (not ignored, not an unexpected-argument error)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=120), "d": rng.integers(0, 2, 120)})
    df["y"] = df["x"] + rng.normal(size=120)
    df["llm"] = df["x"]
    w = rng.uniform(0.5, 2.0, 120)
    calls = [
        lambda: ess.error_curve(df, "y", ["x"], algorithm="mean", grid=[5], weights=w),
        lambda: ess.equivalent_sample_size(df, "y", "llm", ["x"], algorithm="mean", grid=[5], weights=w),
        lambda: ess.cate_ess(df, "y", "d", "llm", propensity=0.5, features=["x"], algorithm="mean", grid=[5],
                             weights=w),
        lambda: ess.arm_ess(df, "y", "d", 1, "llm", ["x"], algorithm="mean", grid=[5], weights=w),
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match=r"argument `weights`: survey weights are not supported.*§5"):
            call()
