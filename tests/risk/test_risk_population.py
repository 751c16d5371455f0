"""LLM answers against the population (risk._population): distances against scipy and hand
formulas, weights, grouping, bootstrap, bad inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wasserstein_distance

from llmsurrogate import _core
from llmsurrogate.exceptions import InvalidArgumentError, ShapeError
from llmsurrogate.risk import _population as pop


def _data(n=300, k=4, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 2, size=n)
    y = rng.integers(0, k, size=n)
    g = rng.choice(["north", "south", "west"], size=n)
    w = rng.gamma(2.0, 30.0, size=n)
    return y, p, g, w


def test_distances_match_scipy():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        v = np.sort(rng.uniform(0, 10, size=5))
        assert pop.wasserstein1(a, b, values=v) == pytest.approx(wasserstein_distance(v, v, a, b), rel=1e-10)
        assert pop.wasserstein1(a, b) == pytest.approx(wasserstein_distance(np.arange(5), np.arange(5), a, b), rel=1e-10)
        # TV: the largest difference over the 2^K sets of answers (brute force)
        best = max(abs(sum(a[i] - b[i] for i in range(5) if m >> i & 1)) for m in range(32))
        assert pop.total_variation(a, b) == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("llm_answer", ["probabilities", "argmax"])
def test_group_and_pooled_distances_by_hand(llm_answer):
    y, p, g, w = _data()
    res = pop.compare_answers(y, p, g, weights=w, ordered=True, llm_answer=llm_answer, n_boot=0)
    llm = p if llm_answer == "probabilities" else np.eye(4)[p.argmax(axis=1)]
    t = res.table.set_index(["scope", "group", "distance"])["value"]
    tv_groups, shares = [], []
    for lab in ("north", "south", "west"):
        m = g == lab
        h = np.array([w[m][y[m] == k].sum() for k in range(4)]) / w[m].sum()
        q = (w[m] @ llm[m]) / w[m].sum()
        assert t["group", lab, "tv"] == pytest.approx(0.5 * np.abs(h - q).sum(), rel=1e-12)
        assert t["group", lab, "w1"] == pytest.approx(wasserstein_distance(range(4), range(4), h, q), rel=1e-10)
        tv_groups.append(0.5 * np.abs(h - q).sum())
        shares.append(w[m].sum() / w.sum())
    h = np.array([w[y == k].sum() for k in range(4)]) / w.sum()
    q = (w @ llm) / w.sum()
    assert t["pooled", "all rows", "tv"] == pytest.approx(0.5 * np.abs(h - q).sum(), rel=1e-12)
    assert t["group_mean", "mean of groups", "tv"] == pytest.approx(np.dot(shares, tv_groups), rel=1e-12)
    d = res.distributions
    assert d[d["group"] == "all rows"]["human"].to_numpy() == pytest.approx(h)
    assert "w1" not in pop.compare_answers(y, p, g, n_boot=0).table["distance"].tolist()


def test_argmax_breaks_ties_like_the_binary_rule():
    res = pop.compare_answers([0, 1], [[.5, .5], [.5, .5]], llm_answer="argmax", n_boot=0)
    assert res.distributions["llm"].tolist() == [0.0, 1.0]


def test_weights_change_the_answer_and_integer_weights_are_copies():
    y, p, g, _ = _data(n=200, seed=3)
    m = np.random.default_rng(2).integers(1, 4, size=200)
    rep = np.repeat(np.arange(200), m)
    a = pop.compare_answers(y, p, g, weights=m, ordered=True, n_boot=0).table["value"].to_numpy()
    b = pop.compare_answers(y[rep], p[rep], g[rep], ordered=True, n_boot=0).table["value"].to_numpy()
    assert a == pytest.approx(b, rel=1e-12)
    u = pop.compare_answers(y, p, g, ordered=True, n_boot=0).table["value"].to_numpy()
    assert not np.allclose(a, u)


def test_bootstrap_is_the_documented_resampling_and_intervals():
    y, p, g, w = _data(n=150, seed=4)
    res = pop.compare_answers(y, p, g, weights=w, n_boot=40, seed=7, interval="percentile", level=0.9)
    basic = pop.compare_answers(y, p, g, weights=w, n_boot=40, seed=7, level=0.9, interval="basic")
    hull = pop.compare_answers(y, p, g, weights=w, n_boot=40, seed=7, level=0.9)
    reps = []
    for b in range(40):
        rows = np.asarray(_core.risk_bootstrap_indices(150, 7, b), dtype=int)
        m = g[rows] == "south"
        yy, pp, ww = y[rows][m], p[rows][m], w[rows][m]
        h = np.bincount(yy, weights=ww, minlength=4) / ww.sum()
        reps.append(0.5 * np.abs(h - ww @ pp / ww.sum()).sum())
    row = res.table.set_index(["scope", "group"]).loc[("group", "south")]
    assert row["se"] == pytest.approx(np.std(reps, ddof=1), rel=1e-10)
    assert row["ci_low"] == pytest.approx(np.quantile(reps, 0.05), rel=1e-10)
    assert row["bias"] == pytest.approx(np.mean(reps) - row["value"], rel=1e-10)
    brow = basic.table.set_index(["scope", "group"]).loc[("group", "south")]
    assert brow["ci_low"] == pytest.approx(max(0.0, 2 * row["value"] - np.quantile(reps, 0.95)), abs=1e-12)
    assert brow["ci_high"] == pytest.approx(2 * row["value"] - np.quantile(reps, 0.05), rel=1e-10)
    hrow = hull.table.set_index(["scope", "group"]).loc[("group", "south")]
    assert hrow["ci_low"] == min(brow["ci_low"], row["ci_low"]) and hrow["ci_high"] == max(brow["ci_high"], row["ci_high"])
    assert hull.meta["interval"] == "hull"


def test_pandas_inputs_are_paired_by_label():
    y, p, g, w = _data(n=60, seed=5)
    idx = np.arange(100, 160)
    probs = pd.DataFrame(p, index=idx, columns=list("abcd"))
    ys = pd.Series(np.array(list("abcd"))[y], index=idx)
    perm = np.random.default_rng(0).permutation(60)
    gs, ws = pd.Series(g, index=idx).iloc[perm], pd.Series(w, index=idx).iloc[perm]
    a = pop.compare_answers(ys, probs, gs, weights=ws, n_boot=0).table["value"].to_numpy()
    b = pop.compare_answers(y, p, g, weights=w, n_boot=0).table["value"].to_numpy()
    assert a == pytest.approx(b, rel=1e-12)
    with pytest.raises(InvalidArgumentError, match="row labels disagree"):
        pop.compare_answers(ys, probs, pd.Series(g, index=idx + 1), n_boot=0)


def test_result_object():
    import matplotlib
    matplotlib.use("Agg")
    y, p, g, w = _data(n=90, seed=6)
    res = pop.compare_answers(y, p, g, weights=w, ordered=True, n_boot=20)
    assert str(res.summary()).startswith("LLM answers against the population")
    assert res.tidy().equals(res.table)
    assert res.distance("w1", group="west") == res.table.query("group == 'west' and distance == 'w1'")["value"].iloc[0]
    fig = res.plot(distance="w1")
    assert len(fig.axes[0].get_yticklabels()) == 4  # 3 groups and every row
    assert res.plot_distributions(group="west").axes[0].get_title() == "Answers: west"
    assert pop.AnswerComparison.from_json(res.to_json()) == res


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(groups=["a", None, "b"]), InvalidArgumentError, "missing label"),
    (dict(groups=["a", "b"]), ShapeError, "one label per row"),
    (dict(values=[0, 1, 2]), InvalidArgumentError, "ordered=True"),
    (dict(values=[0, 2, 1], ordered=True), InvalidArgumentError, "increase"),
    (dict(llm_answer="mode"), InvalidArgumentError, "llm_answer"),
    (dict(interval="bca"), InvalidArgumentError, "interval"),
    (dict(weights=[1, 1, -1]), InvalidArgumentError, "non-negative"),
])
def test_bad_inputs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pop.compare_answers([0, 1, 2], np.full((3, 3), 1 / 3), **{"n_boot": 0, **kwargs})


def test_zero_weight_group_is_nan_with_a_warning():
    y, p, g, w = _data(n=60, seed=8)
    w = np.where(g == "west", 0.0, w)
    with pytest.warns(UserWarning, match="zero total weight"):
        res = pop.compare_answers(y, p, g, weights=w, n_boot=20)
    t = res.table.set_index(["scope", "group"])
    assert np.isnan(t.loc[("group", "west"), "value"]) and np.isfinite(t.loc[("pooled", "all rows"), "value"])
    keep = g != "west"
    ref = pop.compare_answers(y[keep], p[keep], n_boot=0, weights=w[keep]).distance("tv")
    assert res.distance("tv") == pytest.approx(ref, rel=1e-12)
