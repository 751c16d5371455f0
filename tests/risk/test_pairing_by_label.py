"""Rows are paired by label everywhere, and results keep the user's labels (issue 34 §2).

A user's frame after ordinary work is sorted, shuffled or pivoted: its index is not 0..n-1 and its
probability columns may be in alphabetical order. Each test runs the call on such a frame and
compares it with the same call on aligned plain arrays (numpy, pairing by position), which is the
answer the user means. On the code before the fix every one of these gave another number with no
word, or relabelled columns silently.
"""

from __future__ import annotations

import math
import warnings
import zlib

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import risk, testing
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning
from llmsurrogate.llm.base import CallableBackend
from llmsurrogate.llm.tasks import AnswerOption, MultipleChoiceQuestion, Task, acs_columns

COLS = {c.name: c for c in acs_columns()}
SCALE = ("never", "rarely", "often")  # the scale's order; alphabetical is never, often, rarely


def person_backend():
    """A stand-in model whose answer depends on the person (the prompt): key B's probability is a
    hash of the prompt, so scores differ from row to row and a mispairing changes every metric."""

    def fn(prompt):
        p = 0.05 + 0.9 * (zlib.crc32(prompt.encode()) % 1000) / 1000
        return {" A": math.log(1 - p), " B": math.log(p)}

    return CallableBackend(fn)


def shuffled(n=120, seed=5):
    """A census frame after ``sample(frac=1)``: the index is a permutation of 0..n-1."""
    df = testing.synthetic_census(n, seed=seed)
    df["W"] = np.random.default_rng(seed).uniform(0.2, 5.0, n)
    return df, df.sample(frac=1, random_state=seed)


def test_risk_scores_table_keeps_the_data_index():
    _, mixed = shuffled()
    rs = risk.risk_scores(mixed, testing.synthetic_income_task(), person_backend())
    assert rs.table.index.equals(mixed.index)
    assert rs.table["row"].tolist() == list(range(len(mixed)))  # `row` stays the position
    assert rs.probabilities.index.equals(mixed.index)
    np.testing.assert_array_equal(rs.table["label"].to_numpy(), mixed["PINCP>50000"].to_numpy())


def test_risk_scores_evaluate_pairs_groups_by_label():
    df, mixed = shuffled()
    task, be = testing.synthetic_income_task(), person_backend()
    rs = risk.risk_scores(mixed, task, be)
    got = rs.evaluate(groups=mixed["SEX"], n_boot=0)
    want = risk.evaluate(mixed["PINCP>50000"].to_numpy(), rs.scores, mixed["SEX"].to_numpy(), n_boot=0)
    pd.testing.assert_frame_equal(got.groups, want.groups)
    # sorted by a column: the same
    srt = df.sort_values("AGEP", kind="stable")
    rs2 = risk.risk_scores(srt, task, be)
    got2 = rs2.evaluate(groups=srt["SEX"], n_boot=0)
    want2 = risk.evaluate(srt["PINCP>50000"].to_numpy(), rs2.scores, srt["SEX"].to_numpy(), n_boot=0)
    pd.testing.assert_frame_equal(got2.groups, want2.groups)


def test_weights_and_groups_pair_by_label_with_risk_scores_probabilities():
    _, mixed = shuffled()
    rs = risk.risk_scores(mixed, testing.synthetic_income_task(), person_backend())
    y, p, w, g = mixed["PINCP>50000"], rs.probabilities, mixed["W"], mixed["SEX"]
    got = risk.evaluate_multiclass(y, p, weights=w, n_boot=0)
    want = risk.evaluate_multiclass(y.to_numpy(), p.to_numpy(), weights=w.to_numpy(), n_boot=0)
    pd.testing.assert_frame_equal(got.metrics, want.metrics)
    got = risk.compare_answers(y, p, g, weights=w, n_boot=0)
    want = risk.compare_answers(y.to_numpy(), p.to_numpy(), g.to_numpy(), weights=w.to_numpy(), n_boot=0)
    pd.testing.assert_frame_equal(got.table, want.table)


@pytest.mark.parametrize("index", [[0, 1, 1, 2, 3, 4], ["a", "b", "c", "a", "d", "e"]])
def test_risk_scores_refuses_a_duplicated_index_and_says_what_to_do(index):
    data = testing.synthetic_census(6, seed=1).set_axis(index)
    with pytest.raises(InvalidArgumentError, match=r"`data`.*reset_index"):
        risk.risk_scores(data, testing.synthetic_income_task(), person_backend())


def three_options(n=300, seed=0, alphabetical=True):
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet([2, 1, 1], size=n)
    y = np.array([SCALE[rng.choice(3, p=row)] for row in truth])
    probs = pd.DataFrame(truth ** 2 / (truth ** 2).sum(axis=1, keepdims=True), columns=list(SCALE))
    if alphabetical:  # as after a pivot
        probs = probs[sorted(SCALE)]
    return y, probs


def test_recalibrate_multiclass_returns_a_frame_with_the_probs_index_and_options():
    y, probs = three_options()
    idx = np.random.default_rng(1).permutation(len(y)) + 1000
    probs = probs.set_axis(idx)
    ys = pd.Series(y, index=idx).sample(frac=1, random_state=2)  # another order: paired by label
    out = risk.recalibrate_multiclass(ys, probs, folds=3)
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(probs.index) and list(out.columns) == list(probs.columns)
    want = risk.recalibrate_multiclass(ys.loc[probs.index].to_numpy(), probs.to_numpy(), folds=3,
                                       options=list(probs.columns))
    np.testing.assert_allclose(out.to_numpy(), np.asarray(want), rtol=1e-12, atol=0)
    # an array in: the frame is numbered 0..n-1 and its columns are the options
    arr = risk.recalibrate_multiclass(y, probs.to_numpy(), folds=3, options=list(probs.columns))
    assert list(arr.columns) == list(probs.columns) and arr.index.equals(pd.RangeIndex(len(y)))


@pytest.mark.parametrize("cls", [risk.VectorScaling, risk.TemperatureScaling])
def test_scaling_transform_matches_option_names(cls):
    y, probs = three_options()
    sc = cls().fit(y, probs)
    base = sc.transform(probs)
    moved = probs[["often", "never", "rarely"]]
    out = sc.transform(moved)  # the same options in another order: matched by name
    assert list(out.columns) == ["often", "never", "rarely"]
    np.testing.assert_allclose(out.to_numpy(), base[["often", "never", "rarely"]].to_numpy(), rtol=1e-12, atol=1e-15)
    with pytest.raises(InvalidArgumentError, match=r"`probs`.*'sometimes'"):
        sc.transform(probs.set_axis(["never", "sometimes", "often"], axis=1))


def test_options_reorder_named_columns_by_name():
    y, probs = three_options(alphabetical=True)  # columns never, often, rarely
    in_scale = probs[list(SCALE)]
    got = risk.evaluate_multiclass(y, probs, options=list(SCALE), ordered=True, n_boot=0)
    want = risk.evaluate_multiclass(y, in_scale.to_numpy(), options=list(SCALE), ordered=True, n_boot=0)
    pd.testing.assert_frame_equal(got.metrics, want.metrics)
    assert got.meta["options"] == list(SCALE)
    got = risk.compare_answers(y, probs, options=list(SCALE), ordered=True, n_boot=0)
    want = risk.compare_answers(y, in_scale.to_numpy(), options=list(SCALE), ordered=True, n_boot=0)
    pd.testing.assert_frame_equal(got.table, want.table)


def test_options_that_name_other_columns_are_an_error_naming_both():
    y, probs = three_options()
    for fn in (risk.evaluate_multiclass, risk.compare_answers):
        with pytest.raises(InvalidArgumentError, match=r"`options`.*`probs`.*'sometimes'"):
            fn(y, probs, options=["never", "sometimes", "often"], n_boot=0)


def test_ess_llm_error_options_reorder_named_columns():
    from llmsurrogate import ess

    y, probs = three_options(n=80)
    data = pd.DataFrame({"y": y, "x": np.random.default_rng(3).normal(size=len(y))})
    kw = {"outcome": "y", "loss": "multiclass_log", "features": ["x"], "grid": [20, 40], "seed": 0,
          "algorithm": "majority"}
    got = ess.equivalent_sample_size(data, prediction=probs, options=list(SCALE), **kw)
    want = ess.equivalent_sample_size(data, prediction=probs[list(SCALE)].to_numpy(), options=list(SCALE), **kw)
    assert got.llm_error == pytest.approx(want.llm_error, rel=1e-12)
    with pytest.raises(InvalidArgumentError, match=r"`options`.*`prediction`.*'sometimes'"):
        ess.equivalent_sample_size(data, prediction=probs, options=["never", "sometimes", "often"], **kw)


def test_compare_answers_keeps_group_labels_as_they_are():
    y, probs = three_options(n=60)
    groups = np.array([1, "1", "all rows"] * 20, dtype=object)
    cmp = risk.compare_answers(y, probs, groups, n_boot=0)
    tv = cmp.table[cmp.table["distance"] == "tv"]
    assert tv["scope"].tolist() == ["group", "group", "group", "pooled", "group_mean"]
    labels = tv.loc[tv["scope"] == "group", "group"].tolist()
    assert len(labels) == 3 and 1 in labels and "1" in labels and "all rows" in labels
    assert any(type(v) is int for v in labels)
    for lab in (1, "1", "all rows"):
        sel = np.array([g == lab and type(g) is type(lab) for g in groups])
        want = risk.compare_answers(y[sel], probs[sel], n_boot=0).distance("tv")
        got = tv[(tv["scope"] == "group") & tv["group"].map(lambda v, lab=lab: v == lab and type(v) is type(lab))]
        assert got["value"].item() == pytest.approx(want, rel=1e-12)
    d = cmp.distributions
    assert (d["scope"] == "pooled").sum() == 3 and ((d["scope"] == "group") & (d["group"] == "all rows")).sum() == 3
    pooled = d[d["scope"] == "pooled"]["human"].to_numpy()
    np.testing.assert_allclose(pooled, [np.mean(y == o) for o in probs.columns])


def test_ordered_is_taken_from_risk_scores_and_ordered_categorical_y():
    y, probs = three_options()
    cat = pd.Series(pd.Categorical(y, categories=list(SCALE), ordered=True))
    ev = risk.evaluate_multiclass(cat, probs, n_boot=0)
    assert ev.meta["ordered"] and "rps" in ev.metrics["metric"].tolist()
    cmp = risk.compare_answers(cat, probs, n_boot=0)
    assert cmp.meta["ordered"] and "w1" in cmp.table["distance"].tolist()
    assert not risk.evaluate_multiclass(cat, probs, ordered=False, n_boot=0).meta["ordered"]
    # a RiskScores of an ordered question passed as `probs`
    q = MultipleChoiceQuestion("How often?", tuple(AnswerOption(t.title(), t, i) for i, t in enumerate(SCALE)),
                               ordered=True)
    task = Task("Often", columns=(COLS["AGEP"], COLS["SEX"]), target="OFTEN", question=q)
    data = testing.synthetic_census(30, seed=2)[["AGEP", "SEX"]].assign(OFTEN=np.resize(SCALE, 30))
    rs = risk.risk_scores(data, task, person_backend(), correct_order_bias=False)
    ev = risk.evaluate_multiclass(data["OFTEN"], rs, n_boot=0)
    ref = risk.evaluate_multiclass(data["OFTEN"].to_numpy(), rs.probabilities.to_numpy(), options=list(SCALE),
                                   ordered=True, n_boot=0)
    assert ev.meta["ordered"]
    pd.testing.assert_frame_equal(ev.metrics, ref.metrics)
    assert risk.compare_answers(data["OFTEN"], rs, n_boot=0).meta["ordered"]


def test_temperature_scaling_warns_when_the_fit_runs_off():
    import itertools

    # no signal: every prediction (the 6 orders of .6/.3/.1) meets every answer equally often, so
    # the likelihood rises as T grows without bound (the old code returned T = 1.3e6 with no word)
    perms = list(itertools.permutations([.6, .3, .1]))
    probs = np.array([p for p in perms for _ in range(3)] * 10)
    y = np.array([k for _ in perms for k in range(3)] * 10)
    with pytest.warns(LLMSurrogateWarning, match="ran off"):
        ts = risk.TemperatureScaling().fit(y, probs)
    assert ts.params_["temperature"] > 1e3
    np.testing.assert_allclose(ts.transform(probs), 1 / 3, atol=1e-3)
    rng = np.random.default_rng(4)
    with warnings.catch_warnings():  # a model with signal: no word
        warnings.simplefilter("error", LLMSurrogateWarning)
        truth = rng.dirichlet([1, 1, 1], size=400)
        yy = np.array([rng.choice(3, p=row) for row in truth])
        risk.TemperatureScaling().fit(yy, truth)


def test_binary_temperature_warns_when_the_fit_runs_off():
    """The binary ``fit_recalibrator(method="temperature")`` ran off the same way (T = 1.7e14 on
    scores that carry no signal, with no word)."""
    r = np.array([.2, .8] * 50)
    y = np.array([0, 0, 1, 1] * 25)  # every score meets each label equally often
    with pytest.warns(LLMSurrogateWarning, match="ran off"):
        rec = risk.fit_recalibrator(y, r, "temperature")
    assert rec.params["temperature"] > 1e3
    np.testing.assert_allclose(rec(r), 0.5, atol=1e-3)
    with warnings.catch_warnings():  # scores with signal: no word
        warnings.simplefilter("error", LLMSurrogateWarning)
        rng = np.random.default_rng(0)
        p = rng.uniform(0.05, 0.95, 300)
        risk.fit_recalibrator((rng.random(300) < p).astype(int), p, "temperature")


def test_saved_scores_keep_their_row_labels():
    """A RiskScores saved to JSON and loaded again kept its rows but lost its labels (RangeIndex), so
    groups from the shuffled frame paired with other people after ``from_json``."""
    _, mixed = shuffled(n=60)
    rs = risk.risk_scores(mixed, testing.synthetic_income_task(), person_backend())
    back = risk.RiskScores.from_json(rs.to_json())
    assert back.table.index.equals(mixed.index)
    pd.testing.assert_frame_equal(back.evaluate(groups=mixed["SEX"], n_boot=0).groups,
                                  rs.evaluate(groups=mixed["SEX"], n_boot=0).groups)
    text = rs.table.set_axis([f"p{i}" for i in range(60)])  # text labels, and a named index
    text.index.name = "person"
    again = risk.RiskScores.from_json(risk.RiskScores(table=text, meta=rs.meta).to_json()).table
    assert again.index.equals(text.index) and again.index.name == "person"


def test_ordered_categorical_y_orders_named_columns_by_its_levels():
    """An ordered y (low < mid < high) with probability columns in alphabetical order (high, low, mid,
    as a pivot leaves them): RPS and W1 follow y's scale, matched by name (they followed the columns'
    order); a level without a column is an error naming both."""
    from llmsurrogate.exceptions import InvalidArgumentError
    from llmsurrogate.risk import compare_answers, evaluate_multiclass

    scale = ["low", "mid", "high"]
    y = pd.Series(pd.Categorical(["low", "mid", "high", "mid"], categories=scale, ordered=True))
    probs = pd.DataFrame({"high": [.1, .2, .6, .3], "low": [.6, .3, .1, .2], "mid": [.3, .5, .3, .5]})
    q = probs[scale].to_numpy()
    o = np.eye(3)[y.cat.codes.to_numpy()]
    rps = float(((np.cumsum(q, 1) - np.cumsum(o, 1))[:, :2] ** 2).sum(1).mean() / 2)  # Epstein, normalised
    w1 = float(np.abs(np.cumsum(q.mean(0) - o.mean(0))[:2]).sum())
    ev = evaluate_multiclass(y, probs, n_boot=20).tidy().set_index("metric")
    assert ev.loc["rps", "value"] == pytest.approx(rps, abs=1e-12)
    assert compare_answers(y, probs, n_boot=20).distance("w1") == pytest.approx(w1, abs=1e-12)
    unused = pd.Series(pd.Categorical(["low", "mid"], categories=scale + ["extreme"], ordered=True))
    with pytest.raises(InvalidArgumentError, match="extreme"):
        evaluate_multiclass(unused, probs.iloc[:2], n_boot=20)
