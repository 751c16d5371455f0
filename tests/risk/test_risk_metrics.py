"""Risk-score metrics against scikit-learn, pandas and closed forms; Rust bootstrap vs NumPy."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsurrogate import _core, risk
from llmsurrogate.exceptions import InvalidArgumentError, ShapeError


def sample(n=400, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    r = rng.random(n)
    if ties:
        r = np.round(r * 8) / 8
    y = (rng.random(n) < r).astype(float)
    return y, r


def netcal_ece(y, r, bins=10):
    """netcal ECE(bins, equal_intervals=True) on [1-r, r]: clip, histogramdd edges, |acc-conf|."""
    eps = np.finfo(float).eps
    r = np.clip(r, eps, 1 - eps)
    edges = np.linspace(0, 1, bins + 1)
    hist, _ = np.histogramdd(r[:, None], bins=[edges])
    idx = np.digitize(r, edges[1:-1])  # [b_k, b_{k+1}), last closed (r <= 1-eps)
    total = 0.0
    for k in range(bins):
        m = idx == k
        if m.sum() >= 1:
            total += m.sum() / len(r) * abs(y[m].mean() - r[m].mean())
    assert hist.sum() == len(r)
    return total


@pytest.mark.parametrize("ties", [False, True])
def test_against_sklearn(ties):
    from sklearn import metrics as skm

    y, r = sample(ties=ties)
    assert risk.roc_auc(y, r) == pytest.approx(skm.roc_auc_score(y, r), abs=1e-12)
    ev = risk.evaluate(y, r, n_boot=0)
    assert ev.metric("brier") == pytest.approx(skm.brier_score_loss(y, r), abs=1e-12)
    assert ev.metric("log_loss") == pytest.approx(skm.log_loss(y, r), abs=1e-10)
    pred = (r >= 0.5).astype(int)
    assert ev.metric("accuracy") == pytest.approx(skm.accuracy_score(y, pred))
    assert ev.metric("balanced_accuracy") == pytest.approx(skm.balanced_accuracy_score(y, pred))
    assert ev.metric("precision") == pytest.approx(skm.precision_score(y, pred))
    assert ev.metric("ece") == pytest.approx(netcal_ece(y, r), abs=1e-12)


def test_ece_closed_forms_and_edges():
    y = np.array([1, 0, 0] * 10, float)
    assert risk.ece(y, np.full(30, 0.5)) == pytest.approx(1 / 6)
    y = np.array([1, 0, 0, 1, 0, 0, 1, 0, 0, 0], float)
    assert risk.ece(y, np.full(10, 0.5)) == pytest.approx(0.2)
    assert risk.ece(y, np.full(10, 0.3)) == pytest.approx(0.0, abs=1e-12)
    assert risk.ece(y, y) == pytest.approx(0.0, abs=1e-12)
    # 0.1 goes to the second bin, 1.0 to the last: bins of (0.1, y=1) and (0.15, y=0) pool when same bin
    assert risk.ece([1, 0], [0.1, 0.15]) == pytest.approx(abs(1 - 0.25) / 2)
    assert risk.ece([1, 0], [0.1, 0.05]) == pytest.approx((0.9 + 0.05) / 2)


def test_quantile_ece_matches_pandas_qcut_with_ties():
    y, r = sample(ties=True, seed=3)
    cats = pd.qcut(r, 10, duplicates="drop")
    df = pd.DataFrame({"y": y, "r": r, "b": cats})
    g = df.groupby("b", observed=True)
    expect = float((g.size() / len(df) * (g["y"].mean() - g["r"].mean()).abs()).sum())
    value, nbins = risk.ece_quantile(y, r)
    assert value == pytest.approx(expect, abs=1e-12)
    assert nbins == g.ngroups < 10


def test_confidence_bias_matches_pandas_cut_and_signs():
    y, r = sample(seed=5)
    df = pd.DataFrame({"y": y, "r": r, "b": pd.cut(r, 10)})
    g = df.groupby("b", observed=True)
    s, yb, w = g["r"].mean(), g["y"].mean(), g.size() / len(df)
    expect = float((w * np.where(s < 0.5, yb - s, s - yb)).sum())
    assert risk.confidence_bias(y, r) == pytest.approx(expect, abs=1e-12)
    # oracle with true p: over-confident sigma(3 logit p) > 0, under-confident sigma(0.3 logit p) < 0
    rng = np.random.default_rng(1)
    p = rng.beta(2, 3, 20000)
    y = (rng.random(p.size) < p).astype(float)
    lg = np.log(p / (1 - p))
    assert risk.confidence_bias(y, 1 / (1 + np.exp(-3 * lg))) > 0.05
    assert risk.confidence_bias(y, 1 / (1 + np.exp(-0.3 * lg))) < -0.05
    assert abs(risk.confidence_bias(y, p)) < 0.02


def test_sce_and_brier_decomposition():
    y, r = sample(ties=True, seed=2)
    assert risk.signed_calibration_error(y, r) == pytest.approx(r.mean() - y.mean())
    d = risk.brier_decomposition(y, r, bins=None)
    assert d["brier"] == pytest.approx(d["reliability"] - d["resolution"] + d["uncertainty"], abs=1e-12)
    assert d["residual"] == pytest.approx(0, abs=1e-12)
    # reliability by hand on distinct values
    df = pd.DataFrame({"y": y, "r": r}).groupby("r")["y"].agg(["mean", "size"])
    rel = float((df["size"] / len(y) * (df.index.to_numpy() - df["mean"]) ** 2).sum())
    assert d["reliability"] == pytest.approx(rel, abs=1e-12)


def test_delta_sce_by_hand():
    y = np.array([1, 0, 1, 0, 0, 1], float)
    r = np.array([.9, .2, .6, .5, .1, .3])
    g = np.array(["w", "w", "w", "b", "b", "b"])
    expect = (np.mean([.9, .2, .6]) - 2 / 3) - (np.mean([.5, .1, .3]) - 1 / 3)
    assert risk.delta_sce(y, r, g, "w", "b") == pytest.approx(expect)
    with pytest.raises(InvalidArgumentError, match="no rows"):
        risk.delta_sce(y, r, g, "w", "x")


def test_threshold_metric_conventions():
    m = risk.threshold_metrics([0, 0, 0], [0.1, 0.6, 0.5])
    assert m["tpr"] == 0 and m["fnr"] == 1 and m["fpr"] == pytest.approx(2 / 3)
    m = risk.threshold_metrics([1, 1], [0.2, 0.5])  # 0.5 >= 0.5 counts positive
    assert m["tpr"] == 0.5 and m["fpr"] == 1 and m["tnr"] == 0 and m["precision"] == 1 and m["ppr"] == 0.5


def test_best_threshold_equals_brute_force_youden():
    from sklearn.metrics import roc_curve

    y, r = sample(n=300, seed=9, ties=True)
    t = risk.best_threshold(y, r)
    fpr, tpr, thr = roc_curve(y, r)
    j = np.argmax(tpr - fpr)
    assert t == pytest.approx(min(thr[j], 1.0))
    best = max(risk.threshold_metrics(y, r, c)["accuracy"] for c in np.unique(r))
    assert risk.threshold_metrics(y, r, risk.best_threshold(y, r, "accuracy"))["accuracy"] == best


def test_auc_degenerate_cases_warn():
    with pytest.warns(Warning, match="one class"):
        assert math.isnan(risk.roc_auc([1, 1], [0.2, 0.3]))
    with pytest.warns(Warning, match="constant"):
        assert risk.roc_auc([0, 1], [0.3, 0.3]) == 0.5


def test_bad_inputs():
    with pytest.raises(ShapeError):
        risk.evaluate([0, 1], [0.5])
    with pytest.raises(InvalidArgumentError, match="0/1"):
        risk.evaluate([0, 2], [0.5, 0.5])
    with pytest.raises(InvalidArgumentError, match=r"\[0, 1\]"):
        risk.evaluate([0, 1], [0.5, 1.5])
    with pytest.raises(InvalidArgumentError):
        risk.evaluate([0, 1], [float("nan"), 0.5])


def test_bootstrap_matches_numpy_reference_with_documented_prng():
    y, r = sample(n=150, seed=4, ties=True)
    boot = _core.risk_bootstrap(y, r, 30, 7, 0.5, 10, np.finfo(float).eps, None)
    for b in (0, 13, 29):
        idx = np.asarray(_core.risk_bootstrap_indices(len(y), 7, b), dtype=np.int64)
        # reproduce the documented PRNG in Python: SplitMix64 + multiply-shift
        mask = (1 << 64) - 1

        def mix(state):
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
            return z ^ (z >> 31)

        state = mix((7 + 0x9E3779B97F4A7C15 * (b + 1)) & mask)  # the (b + 1)-th output for seed 7
        mine = []
        for _ in range(len(y)):
            state = (state + 0x9E3779B97F4A7C15) & mask
            mine.append((mix(state) * len(y)) >> 64)
        assert mine == idx.tolist()
        yb, rb = y[idx], r[idx]
        ref = [risk.threshold_metrics(yb, rb)["accuracy"], risk.threshold_metrics(yb, rb)["balanced_accuracy"],
               np.mean((rb - yb) ** 2), risk.log_loss(yb, rb), risk.roc_auc(yb, rb), risk.ece(yb, rb),
               rb.mean() - yb.mean()]
        np.testing.assert_allclose(boot[b], ref, rtol=1e-10, atol=1e-12)
    one = _core.risk_bootstrap(y, r, 30, 7, 0.5, 10, np.finfo(float).eps, 1)
    np.testing.assert_array_equal(boot, one)  # thread count does not change replicates


def test_evaluate_cis_cover_and_groups():
    y, r = sample(n=2000, seed=11)
    g = np.where(np.arange(2000) % 10 == 0, "small", np.where(np.arange(2000) % 2 == 0, "a", "b"))
    g[:50] = "tiny"  # 2.5% < 4%: skipped
    ev = risk.evaluate(y, r, groups=g, n_boot=200)
    row = ev.metrics.set_index("metric").loc["roc_auc"]
    assert row["ci_low"] < row["value"] < row["ci_high"] and 0 < row["se"] < 0.05
    assert set(ev.groups["group"]) == {"a", "b", "small"}
    for _, grp in ev.groups.iterrows():
        m = g == grp["group"]
        assert grp["ece"] == pytest.approx(risk.ece(y[m], r[m]))
    accs = ev.groups["accuracy"]
    assert ev.group_summary["accuracy_diff"] == pytest.approx(accs.max() - accs.min())
    assert ev.group_summary["equalized_odds_ratio"] == pytest.approx(
        min(ev.group_summary["fnr_ratio"], ev.group_summary["fpr_ratio"]))
    again = risk.RiskEvaluation.from_json(ev.to_json())
    assert again == ev
    assert "Risk score evaluation" in str(ev.summary())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 20)), min_size=2, max_size=60), st.randoms())
def test_properties(pairs, rnd):
    y = np.array([p[0] for p in pairs], float)
    r = np.array([p[1] / 20 for p in pairs])
    e = risk.ece(y, r)
    assert 0 <= e <= 1
    perm = list(range(len(y)))
    rnd.shuffle(perm)
    assert risk.ece(y[perm], r[perm]) == pytest.approx(e, abs=1e-12)
    if 0 < y.sum() < len(y):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert risk.roc_auc(y, 1 - r) == pytest.approx(1 - risk.roc_auc(y, r), abs=1e-12)


def test_recalibration_reduces_ece_out_of_fold():
    rng = np.random.default_rng(0)
    p = rng.beta(2, 3, 4000)
    y = (rng.random(p.size) < p).astype(float)
    lg = np.log(p / (1 - p))
    over = 1 / (1 + np.exp(-3 * lg))
    under = 1 / (1 + np.exp(-0.3 * lg))
    for raw, T in ((over, 3.0), (under, 0.3)):
        fit = risk.fit_recalibrator(y, raw, "temperature")
        assert fit.params["temperature"] == pytest.approx(T, rel=0.1)
        for method in ("temperature", "platt", "isotonic"):
            cal = risk.recalibrate(y, raw, method, folds=5)
            assert risk.ece(y, cal) < 0.04 < risk.ece(y, raw)
    # no leakage: flipping a row's own label leaves its cross-fitted score unchanged
    for method in ("platt", "isotonic"):
        base = risk.recalibrate(y[:400], over[:400], method, folds=4, seed=3)
        flipped = y[:400].copy()
        flipped[7] = 1 - flipped[7]
        again = risk.recalibrate(flipped, over[:400], method, folds=4, seed=3)
        assert again[7] == base[7]
        assert not np.allclose(again, base)  # other folds did see the flipped label


def test_calibration_curve_and_plots(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    y, r = sample(n=500, seed=8)
    tab = risk.calibration_curve(y, r, bins=10)
    assert tab["count"].sum() == 500 and len(tab) == 10
    assert (tab["ci_low"] <= tab["fraction_positive"]).all() and (tab["fraction_positive"] <= tab["ci_high"]).all()
    cats = pd.qcut(r, 10)
    np.testing.assert_allclose(tab["fraction_positive"], pd.Series(y).groupby(cats, observed=True).mean())
    fig = risk.plot_calibration(y, r, groups=np.arange(500) % 2)
    fig.savefig(tmp_path / "c.png")
    fig2 = risk.plot_score_histogram(r, groups=np.arange(500) % 2)
    fig2.savefig(tmp_path / "h.png")
    assert (tmp_path / "c.png").stat().st_size > 5000


# ---- issue 11, defect 1: silent wrong answers --------------------------------------------------------

def test_pandas_inputs_are_paired_by_label():
    y = pd.Series([0, 1], index=[0, 1])
    s = pd.Series([0.9, 0.1], index=[1, 0])  # by label: y=0 has 0.1, y=1 has 0.9
    assert risk.roc_auc(y, s) == 1.0
    y2, r2 = sample(60, seed=3)
    ys, rs = pd.Series(y2, index=np.arange(60) * 7), pd.Series(r2, index=np.arange(60) * 7)
    shuffled = rs.sample(frac=1.0, random_state=1)
    for fn in (risk.roc_auc, risk.ece, risk.log_loss, risk.signed_calibration_error, risk.confidence_bias,
               risk.best_threshold, risk.threshold_metrics, risk.brier_decomposition):
        assert fn(ys, shuffled) == fn(y2, r2), fn.__name__
    assert risk.ece_quantile(ys, shuffled) == risk.ece_quantile(y2, r2)
    pd.testing.assert_frame_equal(risk.calibration_curve(ys, shuffled), risk.calibration_curve(y2, r2))
    groups = pd.Series(np.where(np.arange(60) % 2 == 0, "a", "b"), index=np.arange(60) * 7)
    assert risk.delta_sce(ys, shuffled, groups.sample(frac=1.0, random_state=2), "a", "b") == \
        risk.delta_sce(y2, r2, groups.to_numpy(), "a", "b")
    ev1 = risk.evaluate(ys, shuffled, groups.sample(frac=1.0, random_state=4), n_boot=20)
    ev2 = risk.evaluate(y2, r2, groups.to_numpy(), n_boot=20)
    pd.testing.assert_frame_equal(ev1.metrics, ev2.metrics)
    pd.testing.assert_frame_equal(ev1.groups, ev2.groups)
    np.testing.assert_array_equal(risk.recalibrate(ys, shuffled, folds=3), risk.recalibrate(y2, r2, folds=3))
    with pytest.raises(InvalidArgumentError, match=r"`y` and `scores`.*reset_index"):
        risk.roc_auc(y, pd.Series([0.9, 0.1], index=[1, 2]))


@pytest.mark.parametrize("call, arg", [
    (lambda y, r: risk.threshold_metrics(y, r, threshold=float("nan")), "threshold"),
    (lambda y, r: risk.threshold_metrics(y, r, threshold=1.5), "threshold"),
    (lambda y, r: risk.log_loss(y, r, eps=0.6), "eps"),
    (lambda y, r: risk.log_loss(y, r, eps=0.0), "eps"),
    (lambda y, r: risk.evaluate(y, r, level=0), "level"),
    (lambda y, r: risk.evaluate(y, r, level=1.0), "level"),
    (lambda y, r: risk.evaluate(y, r, threshold=float("nan")), "threshold"),
    (lambda y, r: risk.evaluate(y, r, bins=0), "bins"),
    (lambda y, r: risk.evaluate(y, r, seed=-1), "seed"),
    (lambda y, r: risk.evaluate(y, r, min_group_share=2.0), "min_group_share"),
    (lambda y, r: risk.evaluate(y, r, n_boot=10**11), "n_boot"),
    (lambda y, r: risk.calibration_curve(y, r, bins=0), "bins"),
    (lambda y, r: risk.calibration_curve(y, r, bins=-1), "bins"),
    (lambda y, r: risk.calibration_curve(y, r, level=float("nan")), "level"),
    (lambda y, r: risk.calibration_curve(y, r, n_boot=-1), "n_boot"),
    (lambda y, r: risk.confidence_bias(y, r, bins=0), "bins"),
    (lambda y, r: risk.brier_decomposition(y, r, bins=-3), "bins"),
    (lambda y, r: risk.ece(y, r, bins=10**10), "bins"),
    (lambda y, r: risk.ece_quantile(y, r, bins=10**10), "bins"),
    (lambda y, r: risk.best_threshold(y, r, "cost", fp_cost=float("nan")), "fp_cost"),
    (lambda y, r: risk.group_metrics(y, r, np.zeros(len(y)), min_share=-0.1), "min_share"),
    (lambda y, r: risk.recalibrate(y, r, seed=-2), "seed"),
    (lambda y, r: risk.roc_auc(y.astype(complex), r), "y"),
    (lambda y, r: risk.roc_auc(y, np.array(r, dtype=object).astype(str)), "scores"),
])
def test_invalid_parameters_are_rejected(call, arg):
    y, r = sample(40, seed=1)
    with pytest.raises(InvalidArgumentError, match=rf"`{arg}`"):
        call(y, r)


def test_bootstrap_replicates_are_not_shifted_copies_of_one_stream():
    # Before the fix, replicate b started at seed ^ C*(b+1) and SplitMix64 adds C at every step, so
    # with seed 0 replicate b+1 repeated replicate b's draws shifted by one (and, for seed 42, 89 of
    # the 780 pairs among the first 40 replicates were shifted copies): the bootstrap's SEs were too small.
    n = 500
    for seed in (0, 42):
        reps = [np.asarray(_core.risk_bootstrap_indices(n, seed, b), dtype=np.int64) for b in range(40)]
        for i in range(40):
            for j in range(i + 1, 40):
                for shift in range(1, 40):
                    assert not np.array_equal(reps[i][shift:], reps[j][:-shift]), (seed, i, j, shift)
                    assert not np.array_equal(reps[j][shift:], reps[i][:-shift]), (seed, i, j, shift)
    # and the replicate SD of a mean matches the plug-in SD of the mean (independent replicates)
    rng = np.random.default_rng(1)
    y = (rng.random(n) < 0.3).astype(float)
    r = np.clip(y * 0.4 + rng.random(n) * 0.6, 0, 1)
    boot = np.asarray(_core.risk_bootstrap(y, r, 2000, 0, 0.5, 10, np.finfo(float).eps, None))
    sce_sd = boot[:, 6].std(ddof=1)
    plug_in = (r - y).std(ddof=1) / np.sqrt(n)
    assert abs(sce_sd / plug_in - 1) < 0.1


def test_summary_states_the_level_and_bins_that_were_used():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    r = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, 200), 0, 1)
    text = risk.evaluate(y, r, level=0.9, bins=5, n_boot=20).summary().as_text()
    assert "90% bootstrap CIs" in text and "ECE: 5 equal-width bins" in text
    assert "95%" not in text and "10 equal-width" not in text
    assert "no bootstrap CIs" in risk.evaluate(y, r, n_boot=0).summary().as_text()


def test_evaluate_table_options_by_position_still_work_with_a_warning():
    """Issue 20: keyword-only after (y, scores, groups); the old positional call warns
    (FutureWarning) and gives the same tables until 0.3."""
    y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    new = risk.evaluate_table(y, r, None, threshold=0.4, bins=5, n_boot=20, seed=3)
    with pytest.warns(FutureWarning, match="by name"):
        old = risk.evaluate_table(y, r, None, 0.4, 5, 20, 3)
    pd.testing.assert_frame_equal(new["metrics"], old["metrics"])
    pd.testing.assert_frame_equal(new["calibration"], old["calibration"])


def test_evaluate_n_jobs_none_equals_one_job():
    """Issue 20: n_jobs=None is llmsurrogate.num_threads()'s count; the bootstrap does not depend on it."""
    import joblib

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    r = np.clip(0.3 * y + rng.random(300) * 0.7, 0, 1)
    one = risk.evaluate(y, r, n_boot=100, n_jobs=1).metrics
    pd.testing.assert_frame_equal(one, risk.evaluate(y, r, n_boot=100).metrics)
    with joblib.parallel_config(n_jobs=2):
        pd.testing.assert_frame_equal(one, risk.evaluate(y, r, n_boot=100).metrics)
