"""Survey weights on the binary risk metrics (issue 27, item 3; docs/methods/risk.md §2.11): against
scikit-learn's ``sample_weight``, hand loops, row duplication, a NumPy reference of the weighted
bootstrap, and the unweighted results of the code before weights (byte for byte)."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import _core, risk
from llmsurrogate.exceptions import LLMSurrogateError
from llmsurrogate.risk._metrics import bootstrap_ci, weighted_sample_values
from llmsurrogate.risk._plots import curve_tables

EPS = float(np.finfo(float).eps)


def sample(n=300, seed=0, ties=True, zeros=True):
    rng = np.random.default_rng(seed)
    r = rng.random(n)
    if ties:
        r = np.round(r * 16) / 16
    y = (rng.random(n) < r).astype(float)
    w = rng.gamma(2.0, 1.5, n)
    if zeros:
        w[rng.random(n) < 0.1] = 0.0
    return y, r, w


# --- unweighted: byte for byte the results of the code before weights ---------------------------

def _sha(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return h.hexdigest()[:16]


def _fingerprint_data():
    rng = np.random.default_rng(2718)
    r = np.round(rng.random(80) * 12) / 12
    y = (rng.random(80) < r).astype(float)
    g = np.array(["a", "b", "c"])[rng.integers(0, 3, 80)]
    return y, r, g


def _fingerprint():
    """Every unweighted output, hashed (log losses apart: ``log`` may differ in the last bit
    between platforms' libm)."""
    y, r, g = _fingerprint_data()
    out = {}
    boot = np.asarray(_core.risk_bootstrap(y, r, 8, 7, 0.5, 10, EPS, 1))
    out["boot"] = _sha(np.delete(boot, 3, axis=1))
    out["boot_log_loss"] = boot[:, 3].tolist()
    ev = risk.evaluate(y, r, g, n_boot=40, n_jobs=1)
    m = ev.metrics.set_index("metric")
    out["metrics"] = _sha(m.drop(index="log_loss").to_numpy(float))
    out["metrics_log_loss"] = m.loc["log_loss"].to_numpy(float).tolist()
    out["groups"] = _sha(ev.groups.drop(columns=["group", "log_loss"]).to_numpy(float))
    out["groups_log_loss"] = ev.groups["log_loss"].tolist()
    out["group_summary"] = _sha([ev.group_summary[k] for k in sorted(ev.group_summary)])
    out["calibration"] = _sha(ev.calibration.to_numpy(float))
    out["roc"] = _sha(ev.roc.drop(columns="group").to_numpy(float))
    out["group_calibration"] = _sha(ev.group_calibration.drop(columns="group").to_numpy(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        singles = [risk.roc_auc(y, r), risk.ece(y, r, 7), *risk.ece_quantile(y, r, 6),
                   *risk.brier_decomposition(y, r, None).values(), *risk.brier_decomposition(y, r, 5).values(),
                   risk.confidence_bias(y, r, 6), risk.signed_calibration_error(y, r),
                   risk.delta_sce(y, r, g, "a", "c"), *risk.threshold_metrics(y, r, 0.4).values(),
                   *[risk.best_threshold(y, r, o, fn_cost=3.0) for o in ("balanced_accuracy", "accuracy", "f1", "cost")]]
    out["singles"] = _sha(singles)
    out["log_loss"] = risk.log_loss(y, r)
    out["curve_uniform"] = _sha(risk.calibration_curve(y, r, bins=5, strategy="uniform", n_boot=30, seed=3)
                                .to_numpy(float))
    return out


#: computed with the code before weights (commit 5cfd6b7), by this very function
BEFORE = {
    "boot": "0ac86eb9f0b23a3f",
    "boot_log_loss": [0.4599214077775281, 0.5028893885761347, 0.46152473328110205, 0.42606537190404997,
                      0.5011299842108479, 0.4589294358823386, 0.40643533777269003, 0.511225404084754],
    "metrics": "e4a5142874883ada",
    "metrics_log_loss": [0.48677811338724464, 0.050295397265173215, 0.3984110805292973, 0.5657017770601428],
    "groups": "3d87b157314143b1",
    "groups_log_loss": [0.3601711535322839, 0.688207392723588, 0.4501654803483804],
    "group_summary": "2993b78817ab9743",
    "calibration": "2e71b59ca7e47127",
    "roc": "eac10493e118b92c",
    "group_calibration": "ef16a2f6c2b08827",
    "singles": "d44d0303234e59a3",
    "log_loss": 0.48677811338724464,
    "curve_uniform": "6033399db3a71af9",
}


def test_unweighted_results_are_those_of_the_code_before_weights():
    now = _fingerprint()
    for key, want in BEFORE.items():
        if "log_loss" in key:
            assert now[key] == pytest.approx(want, rel=1e-14, abs=0), key
        else:
            assert now[key] == want, key


def test_unit_weights_give_the_unweighted_evaluation():
    y, r, g = _fingerprint_data()
    ones = np.ones(len(y))
    # the Rust bootstrap: the same rows, the same additions, so the same bits
    a = np.asarray(_core.risk_bootstrap(y, r, 30, 5, 0.5, 10, EPS, 1))
    b = np.asarray(_core.risk_bootstrap(y, r, 30, 5, 0.5, 10, EPS, 1, weights=ones))
    assert a.tobytes() == b.tobytes()
    plain = risk.evaluate(y, r, g, n_boot=40, n_jobs=1)
    unit = risk.evaluate(y, r, g, n_boot=40, n_jobs=1, weights=ones)
    np.testing.assert_allclose(unit.metrics[["value", "se", "ci_low", "ci_high"]].to_numpy(float),
                               plain.metrics[["value", "se", "ci_low", "ci_high"]].to_numpy(float), rtol=0, atol=1e-12)
    for name in ("calibration", "group_calibration", "groups"):
        got = getattr(unit, name).drop(columns=["weight"])
        pd.testing.assert_frame_equal(got, getattr(plain, name), check_exact=False, rtol=0, atol=1e-12)
    pd.testing.assert_frame_equal(unit.roc, plain.roc, check_exact=False, rtol=0, atol=1e-12)
    assert unit.group_summary == pytest.approx(plain.group_summary, abs=1e-12)
    assert (plain.meta["weighted"], plain.meta["n_eff"]) == (False, 80.0)
    assert (unit.meta["weighted"], unit.meta["n_eff"]) == (True, 80.0)


# --- point metrics against scikit-learn and hand loops -------------------------------------------

@pytest.mark.parametrize("seed", [0, 1])
def test_against_sklearn_sample_weight(seed):
    from sklearn import metrics as skm

    y, r, w = sample(seed=seed)
    pred = (r >= 0.5).astype(int)
    assert risk.log_loss(y, r, weights=w) == pytest.approx(skm.log_loss(y, r, sample_weight=w), abs=1e-12)
    assert risk.roc_auc(y, r, weights=w) == pytest.approx(skm.roc_auc_score(y, r, sample_weight=w), abs=1e-12)
    m = risk.threshold_metrics(y, r, weights=w)
    assert m["accuracy"] == pytest.approx(skm.accuracy_score(y, pred, sample_weight=w), abs=1e-12)
    tpr = skm.recall_score(y, pred, pos_label=1, sample_weight=w)
    tnr = skm.recall_score(y, pred, pos_label=0, sample_weight=w)
    assert (m["tpr"], m["tnr"]) == pytest.approx((tpr, tnr), abs=1e-12)
    assert m["balanced_accuracy"] == pytest.approx((tpr + tnr) / 2, abs=1e-12)
    assert m["balanced_accuracy"] == pytest.approx(skm.balanced_accuracy_score(y, pred, sample_weight=w), abs=1e-12)
    assert m["precision"] == pytest.approx(skm.precision_score(y, pred, sample_weight=w), abs=1e-12)
    d = risk.brier_decomposition(y, r, None, weights=w)
    assert d["brier"] == pytest.approx(skm.brier_score_loss(y, r, sample_weight=w), abs=1e-12)
    assert abs(d["residual"]) < 1e-12  # Murphy's identity holds weighted, by distinct scores
    ev = risk.evaluate(y, r, n_boot=0, weights=w)
    assert ev.metric("brier") == pytest.approx(skm.brier_score_loss(y, r, sample_weight=w), abs=1e-12)
    assert ev.metric("roc_auc") == pytest.approx(skm.roc_auc_score(y, r, sample_weight=w), abs=1e-12)
    for drop in (True, False):
        fpr, tpr_curve, thr = skm.roc_curve(y, r, sample_weight=w, drop_intermediate=drop)
        t = risk.roc_table(y, r, weights=w, drop_intermediate=drop)
        np.testing.assert_allclose(t["fpr"], fpr, atol=1e-12)
        np.testing.assert_allclose(t["tpr"], tpr_curve, atol=1e-12)
        np.testing.assert_array_equal(t["threshold"].to_numpy()[1:], thr[1:])


def _hand_binned(y, r, w, bin_of):
    """Σ_bins |Σ w (y − r)| / Σ w, bins by ``bin_of`` one row at a time."""
    gaps = {}
    for yi, ri, wi in zip(y, r, w):
        k = bin_of(ri)
        gaps[k] = gaps.get(k, 0.0) + wi * (yi - ri)
    return sum(abs(v) for v in gaps.values()) / sum(w)


def _hand_edges(r, w, bins):
    """The documented weighted edges: NumPy's quantiles of E_k = min{r : F_w(r) > k/m}."""
    keep = w > 0
    r, w = r[keep], w[keep]
    m = len(r)
    values = sorted(set(r))
    F = [sum(w[r <= v]) / sum(w) for v in values]
    E = [next(v for v, f in zip(values, F) if f > k / m + 1e-15) for k in range(m)]
    return np.unique(np.quantile(E, np.linspace(0, 1, bins + 1)))


def test_weighted_ece_and_quantile_ece_by_hand():
    y, r, w = sample(n=200, seed=3)
    clip = lambda x: min(max(x, EPS), 1 - EPS)
    for bins in (5, 10, 15):
        want = _hand_binned(y, [clip(x) for x in r], w, lambda x, bins=bins: min(int(x * bins), bins - 1))
        assert risk.ece(y, r, bins, weights=w) == pytest.approx(want, abs=1e-12)
        edges = _hand_edges(r, w, bins)
        assert len(edges) >= 3
        bin_of = lambda x, edges=edges: max(int(np.searchsorted(edges, x, side="left")) - 1, 0)
        want_q = _hand_binned(y, r, w, bin_of)
        value, n_bins = risk.ece_quantile(y, r, bins, weights=w)
        assert value == pytest.approx(want_q, abs=1e-12)
        assert n_bins == len({bin_of(x) for x in r[w > 0]})  # the occupied bins


def test_weighted_quantile_edges_split_the_weight():
    rng = np.random.default_rng(8)
    r = rng.random(4000)
    w = np.where(r > 0.5, 4.0, 1.0)  # the upper half of the scores carries 4/5 of the weight
    y = (rng.random(4000) < r).astype(float)
    t = risk.calibration_curve(y, r, bins=10, n_boot=0, weights=w)
    np.testing.assert_allclose(t["weight"] / w.sum(), 0.1, atol=0.01)
    assert t["count"].iloc[0] > 2 * t["count"].iloc[-1]  # unequal counts: the bins follow the weight
    np.testing.assert_array_equal(weighted_sample_values(r, np.ones(4000)), np.sort(r))


def test_weighted_calibration_curve_and_bootstrap_against_numpy():
    y, r, w = sample(n=150, seed=4)
    for strategy in ("quantile", "uniform"):
        t = risk.calibration_curve(y, r, bins=6, strategy=strategy, n_boot=50, seed=9, weights=w)
        keep = w > 0
        yk, rk, wk = y[keep], r[keep], w[keep]
        if strategy == "quantile":
            edges = _hand_edges(r, w, 6)
            idx = np.clip(np.searchsorted(edges, rk, side="left") - 1, 0, len(edges) - 2)
        else:
            idx = np.minimum((np.clip(rk, EPS, 1 - EPS) * 6).astype(int), 5)
        rng = np.random.default_rng(9)
        for row, k in zip(t.itertuples(), np.unique(idx)):
            m = idx == k
            assert row.bin == k and row.count == m.sum()
            assert row.weight == pytest.approx(wk[m].sum(), rel=1e-12)
            assert row.mean_score == pytest.approx(np.sum(wk[m] * rk[m]) / wk[m].sum(), abs=1e-12)
            assert row.fraction_positive == pytest.approx(np.sum(wk[m] * yk[m]) / wk[m].sum(), abs=1e-12)
            boots = []
            draws = rng.integers(0, m.sum(), size=(50, m.sum()))
            for d in draws:  # a drawn row keeps its weight
                boots.append(np.sum(wk[m][d] * yk[m][d]) / np.sum(wk[m][d]))
            assert (row.ci_low, row.ci_high) == pytest.approx(tuple(np.quantile(boots, [0.025, 0.975])), abs=1e-12)


def test_weighted_confidence_bias_and_sce_by_hand():
    y, r, w = sample(n=120, seed=5)
    keep = w > 0
    yk, rk, wk = y[keep], r[keep], w[keep]
    lo, hi = rk.min(), rk.max()
    edges = np.linspace(lo, hi, 7)
    edges[0] -= (hi - lo) * 0.001
    idx = np.clip(np.searchsorted(edges, rk, side="left") - 1, 0, 5)
    want = 0.0
    for k in np.unique(idx):
        m = idx == k
        s, a = np.average(rk[m], weights=wk[m]), np.average(yk[m], weights=wk[m])
        want += wk[m].sum() / wk.sum() * ((a - s) if s < 0.5 else (s - a))
    assert risk.confidence_bias(y, r, 6, weights=w) == pytest.approx(want, abs=1e-12)
    assert risk.signed_calibration_error(y, r, weights=w) == pytest.approx(
        np.average(r, weights=w) - np.average(y, weights=w), abs=1e-12)
    g = np.array(["u", "v"])[np.arange(120) % 2]
    ga, gb = g == "u", g == "v"
    assert risk.delta_sce(y, r, g, "u", "v", weights=w) == pytest.approx(
        np.average(r[ga] - y[ga], weights=w[ga]) - np.average(r[gb] - y[gb], weights=w[gb]), abs=1e-12)


# --- integer weights = duplicated rows; scale; weight 0 = row absent -----------------------------

def _point_values(y, r, g, weights=None):
    """Every point metric as one flat dict (``score_sd``, ``ece_quantile`` apart: see the test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {}
        out.update({f"tm_{k}": v for k, v in risk.threshold_metrics(y, r, 0.45, weights=weights).items()})
        out["auc"] = risk.roc_auc(y, r, weights=weights)
        for bins in (4, 10):
            out[f"ece{bins}"] = risk.ece(y, r, bins, weights=weights)
            out[f"cb{bins}"] = risk.confidence_bias(y, r, bins, weights=weights)
        out["log_loss"] = risk.log_loss(y, r, weights=weights)
        for bins in (None, 5):
            out.update({f"bd{bins}_{k}": v for k, v in risk.brier_decomposition(y, r, bins, weights=weights).items()})
        out["sce"] = risk.signed_calibration_error(y, r, weights=weights)
        out["dsce"] = risk.delta_sce(y, r, g, "a", "b", weights=weights)
        for obj in ("balanced_accuracy", "accuracy", "f1", "cost"):
            out[f"best_{obj}"] = risk.best_threshold(y, r, obj, fn_cost=2.5, weights=weights)
        t = risk.calibration_curve(y, r, bins=5, strategy="uniform", n_boot=0, weights=weights)
        out.update({f"cu_{i}": v for i, v in enumerate(t[["mean_score", "fraction_positive"]].to_numpy().ravel())})
        frame, summary = risk.group_metrics(y, r, g, 0.45, weights=weights)
        cols = [c for c in frame.columns if c not in ("group", "n", "weight", "score_sd", "ece_quantile",
                                                      "ece_quantile_bins", "brier_residual")]
        out.update({f"gm_{i}": v for i, v in enumerate(frame[cols].to_numpy(float).ravel())})
        out.update({f"gs_{k}": v for k, v in summary.items()})
        ev = risk.evaluate(y, r, n_boot=0, weights=weights).metrics.set_index("metric")["value"]
        out.update({f"ev_{k}": v for k, v in ev.drop(["score_sd", "ece_quantile", "ece_quantile_bins"]).items()})
    return out


def test_integer_weights_equal_duplicated_rows():
    rng = np.random.default_rng(11)
    y, r, _ = sample(n=90, seed=6, zeros=False)
    g = np.array(["a", "b", "c"])[rng.integers(0, 3, 90)]
    w = rng.integers(1, 5, 90).astype(float)
    rep = np.repeat(np.arange(90), w.astype(int))
    got = _point_values(y, r, g, weights=w)
    want = _point_values(y[rep], r[rep], g[rep])
    assert got.keys() == want.keys()
    for k in got:
        assert got[k] == pytest.approx(want[k], abs=1e-12, nan_ok=True), k


def test_scale_of_the_weights_and_zero_weights():
    rng = np.random.default_rng(12)
    y, r, w = sample(n=90, seed=7)
    g = np.array(["a", "b", "c"])[rng.integers(0, 3, 90)]
    w = np.round(w * 4)  # integers, some 0
    base = risk.evaluate(y, r, g, n_boot=0, weights=w)
    scaled = risk.evaluate(y, r, g, n_boot=0, weights=w * 1000)
    np.testing.assert_allclose(scaled.metrics["value"], base.metrics["value"], rtol=1e-12, atol=1e-12)
    # a row of weight 0 is a row absent, for every point metric (quantile bins and sd included)
    keep = w > 0
    dropped = risk.evaluate(y[keep], r[keep], g[keep], n_boot=0, weights=w[keep])
    pd.testing.assert_frame_equal(base.metrics, dropped.metrics, check_exact=False, rtol=0, atol=1e-12)
    pd.testing.assert_frame_equal(base.calibration, dropped.calibration, check_exact=False, rtol=0, atol=1e-12)
    pd.testing.assert_frame_equal(base.groups, dropped.groups, check_exact=False, rtol=0, atol=1e-12)
    # the weighted sd: ddof = 1 for unit weights, the reliability-weights form otherwise
    sd = base.metrics.set_index("metric").loc["score_sd", "value"]
    mean = np.average(r, weights=w)
    assert sd == pytest.approx(np.sqrt(np.sum(w * (r - mean) ** 2) / (w.sum() - np.sum(w**2) / w.sum())), rel=1e-12)


# --- the bootstrap: weights travel with their rows ------------------------------------------------

def _reference_replicate(y, r, w, bins=10):
    """The seven headline metrics of one weighted resample, by scikit-learn and a hand ECE."""
    from sklearn import metrics as skm

    pred = (r >= 0.5).astype(int)
    tpr = np.sum(w * (pred == 1) * (y == 1)) / np.sum(w * (y == 1))
    tnr = np.sum(w * (pred == 0) * (y == 0)) / np.sum(w * (y == 0))
    clip = np.clip(r, EPS, 1 - EPS)
    return [skm.accuracy_score(y, pred, sample_weight=w), (tpr + tnr) / 2,
            skm.brier_score_loss(y, r, sample_weight=w), skm.log_loss(y, r, sample_weight=w, labels=[0, 1]),
            skm.roc_auc_score(y, r, sample_weight=w),
            _hand_binned(y, clip, w, lambda x: min(int(x * bins), bins - 1)),
            np.average(r - y, weights=w)]


def test_weighted_bootstrap_matches_a_numpy_reference():
    y, r, w = sample(n=160, seed=10)
    n_boot, seed = 60, 21
    ev = risk.evaluate(y, r, n_boot=n_boot, seed=seed, n_jobs=2, weights=w).metrics.set_index("metric")
    plain = risk.evaluate(y, r, n_boot=n_boot, seed=seed, n_jobs=2).metrics.set_index("metric")
    reps = []
    for b in range(n_boot):  # the documented rows of replicate b, each keeping its weight
        rows = np.asarray(_core.risk_bootstrap_indices(len(y), seed, b), dtype=np.int64)
        reps.append(_reference_replicate(y[rows], r[rows], w[rows]))
    reps = np.array(reps)
    for j, name in enumerate(risk._metrics.BOOT_METRICS):
        se, lo, hi = bootstrap_ci(reps[:, j], 0.95)
        assert (ev.loc[name, "se"], ev.loc[name, "ci_low"], ev.loc[name, "ci_high"]) == pytest.approx(
            (se, lo, hi), abs=1e-10), name
        assert ev.loc[name, "se"] != pytest.approx(plain.loc[name, "se"], rel=1e-6), name  # the weights count


# --- inputs, meta and print ----------------------------------------------------------------------

def test_pandas_weights_pair_by_label():
    y, r, w = sample(n=50, seed=13)
    idx = pd.Index(np.arange(50) * 3 + 7)
    perm = np.random.default_rng(0).permutation(50)
    ys = pd.Series(y, index=idx)
    ws = pd.Series(w, index=idx).iloc[perm]  # another order: paired by label
    assert risk.log_loss(ys, pd.Series(r, index=idx), weights=ws) == pytest.approx(risk.log_loss(y, r, weights=w))
    ev = risk.evaluate(ys, pd.Series(r, index=idx), n_boot=0, weights=ws)
    assert ev.metric("roc_auc") == pytest.approx(risk.roc_auc(y, r, weights=w))
    with pytest.raises(LLMSurrogateError, match="`weights`"):
        risk.ece(ys, r, weights=pd.Series(w, index=idx + 1))


def test_meta_and_print_record_the_weights():
    y, r, w = sample(n=40, seed=14, zeros=False)
    ev = risk.evaluate(y, r, n_boot=0, weights=w)
    assert ev.meta["weighted"] is True
    assert ev.meta["n_eff"] == pytest.approx(w.sum() ** 2 / np.sum(w**2))
    assert f"Kish effective sample size {ev.meta['n_eff']:.1f}" in ev.summary().as_text()
    assert "survey weights" not in risk.evaluate(y, r, n_boot=0).summary().as_text()
    tables = risk.evaluate_table(y, r, n_boot=0, weights=w)
    assert tables["metrics"]["value"].tolist() == ev.metrics["value"].tolist()


BAD_WEIGHTS = [
    ([1.0] * 9, "one weight per row"),
    ([1.0] * 9 + [-1.0], "non-negative"),
    ([1.0] * 9 + [np.nan], "non-finite"),
    ([0.0] * 10, "sums to 0"),
    ("1111111111", "string"),
]
FUNCTIONS = [
    lambda y, r, w: risk.threshold_metrics(y, r, weights=w),
    lambda y, r, w: risk.roc_auc(y, r, weights=w),
    lambda y, r, w: risk.ece(y, r, weights=w),
    lambda y, r, w: risk.ece_quantile(y, r, weights=w),
    lambda y, r, w: risk.log_loss(y, r, weights=w),
    lambda y, r, w: risk.brier_decomposition(y, r, weights=w),
    lambda y, r, w: risk.confidence_bias(y, r, weights=w),
    lambda y, r, w: risk.signed_calibration_error(y, r, weights=w),
    lambda y, r, w: risk.delta_sce(y, r, ["a", "b"] * 5, "a", "b", weights=w),
    lambda y, r, w: risk.best_threshold(y, r, weights=w),
    lambda y, r, w: risk.calibration_curve(y, r, weights=w),
    lambda y, r, w: risk.group_metrics(y, r, ["a", "b"] * 5, weights=w),
    lambda y, r, w: risk.evaluate(y, r, ["a", "b"] * 5, n_boot=5, weights=w),
    lambda y, r, w: risk.evaluate_table(y, r, n_boot=5, weights=w),
    lambda y, r, w: risk.roc_table(y, r, weights=w),
    lambda y, r, w: curve_tables(y, r, ["a", "b"] * 5, weights=w),
]


@pytest.mark.parametrize("bad, words", BAD_WEIGHTS)
def test_bad_weights_are_errors_naming_weights(bad, words):
    y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    for f in FUNCTIONS:
        with pytest.raises(LLMSurrogateError, match="`weights`") as err:
            f(y, r, bad)
        assert words in str(err.value)


def test_the_rust_bootstrap_refuses_bad_weights():
    y, r = np.array([0.0, 1.0, 1.0]), np.array([0.2, 0.7, 0.4])
    for bad in (np.array([1.0, -1.0, 1.0]), np.array([1.0, np.nan, 1.0]), np.zeros(3), np.ones(2)):
        with pytest.raises(LLMSurrogateError, match="`weights`"):
            _core.risk_bootstrap(y, r, 5, 1, 0.5, 10, EPS, 1, weights=bad)


def test_weighted_figures():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y, r, w = sample(n=120, seed=15)
    fig = risk.plot_roc(y, r, weights=w)
    label = fig.axes[0].get_legend().get_texts()[0].get_text()
    assert label == f"all (AUC {risk.roc_auc(y, r, weights=w):.3f})"
    plt.close(fig)
    g = np.array(["a", "b"])[np.arange(120) % 2]
    fig = risk.plot_calibration(y, r, g, bins=4, weights=w)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["all", "a", "b"]
    plt.close(fig)


def test_two_options_agree_with_the_weighted_k_option_evaluation():
    """The K-option code (risk._multiclass, written apart) with K = 2 on (1 - r, r): the same
    weighted values and, drawing the same replicates with the weights kept, the same bootstrap."""
    y, r, w = sample(n=140, seed=16)
    n_boot = 40
    ev = risk.evaluate(y, r, n_boot=n_boot, seed=3, weights=w).metrics.set_index("metric")
    mc = risk.evaluate_multiclass(y.astype(int), np.column_stack([1 - r, r]), weights=w, n_boot=n_boot,
                                  seed=3).metrics.set_index("metric")
    for binary, k_option, factor in (("log_loss", "log_loss", 1.0), ("accuracy", "accuracy", 1.0),
                                     ("brier", "brier", 2.0), ("roc_auc", "roc_auc_macro", 1.0)):
        for col in ("value", "se", "ci_low", "ci_high"):
            assert factor * ev.loc[binary, col] == pytest.approx(mc.loc[k_option, col], abs=1e-10), (binary, col)
