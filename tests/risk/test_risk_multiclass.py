"""K-option metrics (risk._multiclass) against scikit-learn, hand formulas and the binary metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from llmsurrogate import _core
from llmsurrogate.exceptions import InvalidArgumentError, ShapeError
from llmsurrogate.risk import evaluate, fit_recalibrator
from llmsurrogate.risk import _metrics as binary
from llmsurrogate.risk import _multiclass as mc


def _data(n=300, k=4, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 1.5, size=n)
    if ties:  # coarse probabilities: many tied scores for the AUC
        p = np.round(p, 1)
        p[:, -1] = 1 - p[:, :-1].sum(axis=1)
        p = np.clip(p, 0, 1)
        p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    w = rng.gamma(2.0, 50.0, size=n)  # survey-weight-like: positive, skewed
    return y, p, w


@pytest.mark.parametrize("weighted", [False, True])
def test_log_loss_brier_accuracy_match_sklearn(weighted):
    y, p, w = _data()
    sw = w if weighted else None
    kw = {"weights": sw}
    assert mc.multiclass_log_loss(y, p, **kw) == pytest.approx(skm.log_loss(y, p, sample_weight=sw), rel=1e-12)
    per_class = sum(skm.brier_score_loss(y == j, p[:, j], sample_weight=sw) for j in range(p.shape[1]))
    assert mc.multiclass_brier(y, p, **kw) == pytest.approx(per_class, rel=1e-12)
    assert mc.multiclass_brier(y, p, **kw) == pytest.approx(
        skm.brier_score_loss(y, p, sample_weight=sw, scale_by_half=False), rel=1e-12)
    assert mc.multiclass_accuracy(y, p, **kw) == pytest.approx(
        skm.accuracy_score(y, p.argmax(axis=1), sample_weight=sw), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_ovr_auc_matches_sklearn(weighted, ties, average):
    y, p, w = _data(ties=ties, seed=3)
    sw = w if weighted else None
    ours = mc.ovr_roc_auc(y, p, average=average, weights=sw)
    ref = skm.roc_auc_score(y, p, multi_class="ovr", average=average, sample_weight=sw)
    assert ours == pytest.approx(ref, rel=1e-10)
    per = mc.ovr_roc_auc(y, p, average=None, weights=sw)
    for j in range(p.shape[1]):
        assert per[j] == pytest.approx(skm.roc_auc_score(y == j, p[:, j], sample_weight=sw), rel=1e-10)


def test_integer_weights_equal_repeated_rows():
    """A weight of m is m copies of the row: every metric, AUCs and ECEs included."""
    y, p, _ = _data(n=120, k=3, seed=5)
    m = np.random.default_rng(1).integers(1, 4, size=len(y))
    rep = np.repeat(np.arange(len(y)), m)
    a = mc._metric_values(y, p, m.astype(float), True, 10)
    b = mc._metric_values(y[rep], p[rep], np.ones(len(rep)), True, 10)
    assert a == pytest.approx(b, rel=1e-12)


def test_rps_and_classwise_ece_by_hand():
    y, p, w = _data(n=80, k=5, seed=7)
    k = p.shape[1]
    rps = [sum((p[i, :j + 1].sum() - float(y[i] <= j)) ** 2 for j in range(k - 1)) / (k - 1) for i in range(len(y))]
    assert mc.ranked_probability_score(y, p, weights=w) == pytest.approx(np.average(rps, weights=w), rel=1e-12)
    bins = 7
    per = []
    for j in range(k):  # loops, not bincount: bin = floor(clip(p) * bins), last bin closed
        tot = 0.0
        for b in range(bins):
            rows = [i for i in range(len(y)) if min(int(np.clip(p[i, j], mc.EPS, 1 - mc.EPS) * bins), bins - 1) == b]
            tot += abs(sum(w[i] * ((y[i] == j) - np.clip(p[i, j], mc.EPS, 1 - mc.EPS)) for i in rows))
        per.append(tot / w.sum())
    assert mc.classwise_ece(y, p, bins=bins, weights=w, average=False) == pytest.approx(per, rel=1e-12)
    assert mc.classwise_ece(y, p, bins=bins, weights=w) == pytest.approx(np.mean(per), rel=1e-12)
    # top label: confidence of the argmax against a correct argmax
    conf, hit = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    tot = 0.0
    for b in range(bins):
        rows = np.minimum((np.clip(conf, mc.EPS, 1 - mc.EPS) * bins).astype(int), bins - 1) == b
        tot += abs(np.sum(w[rows] * (hit[rows] - conf[rows])))
    assert mc.top_label_ece(y, p, bins=bins, weights=w) == pytest.approx(tot / w.sum(), rel=1e-12)


def test_binary_case_gives_the_binary_metrics():
    rng = np.random.default_rng(11)
    r = np.round(rng.uniform(size=500), 2)  # ties, and exact 0.5 scores
    r[:5] = [0.5, 0.0, 1.0, 0.5, 0.25]
    y = (rng.uniform(size=500) < r).astype(float)
    p = np.column_stack([1 - r, r])
    c = y.astype(int)
    assert mc.multiclass_log_loss(c, p) == pytest.approx(binary.log_loss(y, r), rel=1e-13)
    assert mc.ranked_probability_score(c, p) == pytest.approx(binary.brier_decomposition(y, r)["brier"], rel=1e-13)
    assert mc.multiclass_brier(c, p) == pytest.approx(2 * binary.brier_decomposition(y, r)["brier"], rel=1e-13)
    assert mc.multiclass_accuracy(c, p) == binary.threshold_metrics(y, r, 0.5)["accuracy"]
    assert mc.ovr_roc_auc(c, p, average=None)[1] == pytest.approx(binary.roc_auc(y, r), rel=1e-13)
    assert mc.ovr_roc_auc(c, p) == pytest.approx(binary.roc_auc(y, r), rel=1e-13)
    assert mc.classwise_ece(c, p, average=False)[1] == pytest.approx(binary.ece(y, r), rel=1e-12)
    # the bootstrap draws the rows risk.evaluate draws: the same replicates of the same statistic
    ev_bin = evaluate(y, r, n_boot=40, seed=9, n_jobs=1).metrics.set_index("metric")
    ev_mc = mc.evaluate_multiclass(c, p, n_boot=40, seed=9).metrics.set_index("metric")
    for ours, theirs in (("log_loss", "log_loss"), ("accuracy", "accuracy"), ("roc_auc_macro", "roc_auc")):
        assert ev_mc.loc[ours].to_numpy() == pytest.approx(ev_bin.loc[theirs].to_numpy(), rel=1e-9), ours


def test_temperature_scaling_k2_is_the_binary_temperature():
    rng = np.random.default_rng(4)
    z = rng.normal(0, 2, size=400)
    y = (rng.uniform(size=400) < 1 / (1 + np.exp(-z / 2.5))).astype(int)  # scores too confident by T = 2.5
    r = 1 / (1 + np.exp(-z))
    t2 = mc.TemperatureScaling().fit(y, np.column_stack([1 - r, r]))
    t_bin = fit_recalibrator(y, r, "temperature").params["temperature"]
    assert t2.params_["temperature"] == pytest.approx(t_bin, rel=1e-5)
    assert t2.transform(np.column_stack([1 - r, r]))[:, 1] == pytest.approx(
        fit_recalibrator(y, r, "temperature")(r), abs=1e-6)


def test_scalings_recover_a_known_distortion_and_respect_weights():
    rng = np.random.default_rng(8)
    n, k = 4000, 3
    truth = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=row) for row in truth])
    sharp = truth ** 2 / (truth ** 2).sum(axis=1, keepdims=True)  # temperature 1/2 exactly in log space
    t = mc.TemperatureScaling().fit(y, sharp)
    assert t.params_["temperature"] == pytest.approx(2.0, rel=0.1)
    v = mc.VectorScaling().fit(y, sharp)
    assert v.params_["scale"] == pytest.approx([0.5] * k, rel=0.15)
    assert mc.multiclass_log_loss(y, v.transform(sharp)) < mc.multiclass_log_loss(y, sharp)
    # integer weights = repeated rows
    m = rng.integers(1, 3, size=300)
    rep = np.repeat(np.arange(300), m)
    a = mc.VectorScaling().fit(y[:300], sharp[:300], weights=m).params_
    b = mc.VectorScaling().fit(y[rep], sharp[rep]).params_
    assert a["scale"] == pytest.approx(b["scale"], abs=1e-4) and a["bias"] == pytest.approx(b["bias"], abs=1e-4)
    with pytest.raises(InvalidArgumentError, match="not fitted"):
        mc.TemperatureScaling().transform(sharp)
    with pytest.raises(ShapeError, match="fitted on 3"):
        t.transform(np.full((2, 4), 0.25))


def test_evaluate_multiclass_bootstrap_is_the_documented_resampling():
    y, p, w = _data(n=60, k=3, seed=2)
    ev = mc.evaluate_multiclass(y, p, weights=w, ordered=True, n_boot=30, seed=5, level=0.9)
    reps = []
    for b in range(30):
        rows = np.asarray(_core.risk_bootstrap_indices(60, 5, b), dtype=int)
        reps.append(mc.ranked_probability_score(y[rows], p[rows], weights=w[rows]))
    row = ev.metrics.set_index("metric").loc["rps"]
    assert row["se"] == pytest.approx(np.std(reps, ddof=1), rel=1e-12)
    assert row["ci_low"] == pytest.approx(np.quantile(reps, 0.05), rel=1e-12)
    assert row["value"] == pytest.approx(mc.ranked_probability_score(y, p, weights=w), rel=1e-12)
    assert ev.per_option["share"].sum() == pytest.approx(1.0)
    assert "rps" not in mc.evaluate_multiclass(y, p, n_boot=0).metrics["metric"].tolist()
    assert str(ev.summary()).startswith("K-option evaluation")


def test_reliability_table_by_hand():
    y, p, w = _data(n=200, k=3, seed=6)
    t = mc.reliability_table(y, p, kind="classwise", bins=4, weights=w, n_boot=0)
    sub = t[t["option"] == 2]
    x = np.clip(p[:, 2], mc.EPS, 1 - mc.EPS)
    idx = np.minimum((x * 4).astype(int), 3)
    for _, row in sub.iterrows():
        m = idx == row["bin"]
        assert row["frequency"] == pytest.approx(np.average(y[m] == 2, weights=w[m]))
        assert row["mean_probability"] == pytest.approx(np.average(x[m], weights=w[m]))
        assert row["count"] == m.sum() and row["weight"] == pytest.approx(w[m].sum())
    tb = mc.reliability_table(y, p, bins=4, n_boot=50)
    assert ((tb["ci_low"] <= tb["frequency"] + 1e-12) & (tb["frequency"] <= tb["ci_high"] + 1e-12)).all()


def test_labels_options_and_alignment():
    probs = pd.DataFrame({"agree": [.6, .1, .3], "neutral": [.3, .3, .3], "disagree": [.1, .6, .4]}, index=[5, 6, 7])
    y = pd.Series(["disagree", "agree", "neutral"], index=[7, 5, 6])
    w = pd.Series([1.0, 2.0, 3.0], index=[6, 7, 5])
    got = mc.multiclass_log_loss(y, probs, weights=w)
    # by hand, pairing rows by label: 5 agree .6 w3, 6 neutral .3 w1, 7 disagree .4 w2
    assert got == pytest.approx(-(3 * np.log(.6) + np.log(.3) + 2 * np.log(.4)) / 6, rel=1e-12)
    assert mc.multiclass_log_loss(["c", "a"], [[.2, .2, .6], [.5, .3, .2]], options=["a", "b", "c"]) == pytest.approx(
        -(np.log(.6) + np.log(.5)) / 2, rel=1e-12)
    with pytest.raises(InvalidArgumentError, match="not an option"):
        mc.multiclass_log_loss(["agree", "maybe", "agree"], probs.to_numpy(), options=["agree", "neutral", "disagree"])
    with pytest.raises(InvalidArgumentError, match="row labels disagree"):
        mc.multiclass_brier(pd.Series(["agree"] * 3, index=[1, 2, 3]), probs)


@pytest.mark.parametrize("bad, match", [
    (dict(probs=[[.5, .6], [.5, .5]]), "sum to 1"),
    (dict(probs=[[1.2, -.2], [.5, .5]]), r"\[0, 1\]"),
    (dict(probs=[[np.nan, 1], [.5, .5]]), "missing"),
    (dict(probs=[1.0, 0.0]), "n x K"),
    (dict(probs=[[1.0], [1.0]]), "K >= 2"),
    (dict(y=[0, 2]), "not an option"),
    (dict(y=[0, None]), "missing answer"),
    (dict(weights=[1.0, -1.0]), "non-negative"),
    (dict(weights=[0.0, 0.0]), "sums to 0"),
    (dict(weights=[1.0]), "one weight per row"),
    (dict(y=[0, 1, 1]), "same number of rows"),
])
def test_bad_inputs_name_the_argument(bad, match):
    args = {"y": [0, 1], "probs": [[.5, .5], [.2, .8]], "weights": None}
    args.update(bad)
    with pytest.raises(InvalidArgumentError, match=match):
        mc.multiclass_log_loss(args["y"], args["probs"], weights=args["weights"])


def test_absent_option_auc_is_nan_with_a_warning():
    with pytest.warns(UserWarning, match="undefined"):
        assert np.isnan(mc.ovr_roc_auc([0, 1, 0], [[.5, .3, .2], [.2, .5, .3], [.6, .2, .2]]))


def test_boolean_answers_are_the_codes_0_1_and_zero_weight_replicates_are_dropped():
    p = [[.5, .5], [.2, .8], [.9, .1]]
    assert mc.multiclass_log_loss([False, True, False], p) == mc.multiclass_log_loss([0, 1, 0], p)
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(3), size=12)
    w = np.zeros(12)
    w[0] = 1.0  # one weighted row: about a third of the replicates miss it; those are NaN and dropped, no warning
    with np.errstate(all="raise"):
        ev = mc.evaluate_multiclass(np.arange(12) % 3, probs, weights=w, n_boot=60)
    row = ev.metrics.set_index("metric").loc["brier"]
    assert np.isfinite(row[["se", "ci_low", "ci_high"]].astype(float)).all()
