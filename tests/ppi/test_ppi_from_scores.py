"""``ppi.from_scores``: PPI straight from a RiskScores or a frame of scores (docs/methods/ppi.md §13).

Rows pair by label, never by position: a permuted index, answers stored as floats or nullable
integers, NaN answers (unlabelled rows) and answers given for a subset of the labels all give the
result of ``ppi.mean`` / ``ppi.ols`` on the arrays paired by hand.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import ppi, testing
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.llm import CallableBackend
from llmsurrogate.risk import risk_scores


def _backend():
    """A stand-in model whose answer depends on the prompt (so each row gets its own score)."""
    def answer(prompt):
        p = 0.05 + 0.9 * (zlib.crc32(prompt.encode()) % 1000) / 1000
        return {" A": math.log(1 - p), " B": math.log(p)}
    return CallableBackend(answer)


@pytest.fixture(scope="module")
def scored():
    df = testing.synthetic_census(80, seed=3)
    df.index = [f"p{i}" for i in range(80)]
    df["PINCP>50000"] = df["PINCP>50000"].astype(float)
    df.loc[df.index[30:], "PINCP>50000"] = np.nan        # 30 rows with a human answer, 50 without
    return df, risk_scores(df, testing.synthetic_income_task(), _backend())


def test_risk_scores_labels_are_the_labelled_rows(scored):
    df, rs = scored
    assert rs.unlabelled == 50
    res = ppi.from_scores(rs)
    t = rs.table
    lab = t["label"].notna().to_numpy()
    want = ppi.mean(t["label"][lab].astype(float).to_numpy(), t["score"][lab].to_numpy(), t["score"][~lab].to_numpy())
    assert (res.n, res.N) == (30, 50)
    np.testing.assert_allclose(res.table[["estimate", "std_error", "ci_low", "ci_high"]].to_numpy(),
                               want.table[["estimate", "std_error", "ci_low", "ci_high"]].to_numpy(), rtol=1e-12)
    assert any("paired by row label" in note for note in res.notes)
    # the same answers from outside, as a float Series in another order: the same result
    answers = df["PINCP>50000"].dropna().sample(frac=1.0, random_state=0)
    got = ppi.from_scores(rs, answers)
    np.testing.assert_allclose(got.estimate, res.estimate, rtol=1e-12)
    assert got.terms == ["PINCP>50000"]


def _frame(seed=0, m=600, n=150):
    rng = np.random.default_rng(seed)
    truth = rng.binomial(1, 0.35, m).astype(float)
    x = rng.normal(size=m)
    table = pd.DataFrame({"score": np.clip(0.6 * truth + 0.2 + 0.05 * x + rng.normal(0, 0.15, m), 0, 1), "x": x,
                          "region": rng.choice(["n", "s", "e"], m)}, index=rng.permutation(m) * 7 + 3)
    y = pd.Series(np.where(np.arange(m) < n, truth, np.nan), index=table.index, name="vote")
    return table, y


def test_a_permuted_index_gives_the_same_answer():
    table, y = _frame()
    base = ppi.from_scores(table, y)
    lab = y.notna().to_numpy()
    want = ppi.mean(y[lab].to_numpy(), table["score"][lab].to_numpy(), table["score"][~lab].to_numpy())
    assert base.estimate == pytest.approx(want.estimate, rel=1e-12) and base.se == pytest.approx(want.se, rel=1e-12)
    perm = np.random.default_rng(1).permutation(len(table))
    shuffled_table = table.iloc[perm]
    for yy in (y, y.iloc[perm[::-1]], y.dropna(), y.dropna().astype("Int64"), y.dropna().astype(bool)):
        got = ppi.from_scores(shuffled_table, yy)
        assert got.estimate == pytest.approx(base.estimate, rel=1e-12)
        assert got.se == pytest.approx(base.se, rel=1e-12)
        assert (got.n, got.N) == (150, 450)
    # y as a column of the frame, NaN where unlabelled
    got = ppi.from_scores(table.assign(answer=y), "answer")
    assert got.estimate == pytest.approx(base.estimate, rel=1e-12) and got.terms == ["answer"]
    # a Series of scores
    assert ppi.from_scores(table["score"], y).estimate == pytest.approx(base.estimate, rel=1e-12)


def test_regressions_with_a_formula_pair_the_regressors_by_label():
    table, y = _frame(seed=2)
    res = ppi.from_scores(table, y, estimand="ols", formula="~ x + C(region)")
    lab = y.notna().to_numpy()
    X = pd.get_dummies(table[["x", "region"]], columns=["region"], drop_first=True, dtype=float)
    X.insert(0, "Intercept", 1.0)
    want = ppi.ols(X[lab].to_numpy(), y[lab].to_numpy(), table["score"][lab].to_numpy(), X[~lab].to_numpy(),
                   table["score"][~lab].to_numpy())
    assert res.terms[0] == "Intercept" and len(res.terms) == 4
    np.testing.assert_allclose(res.estimate, want.estimate, rtol=1e-9)
    np.testing.assert_allclose(res.se, want.se, rtol=1e-9)
    perm = np.random.default_rng(4).permutation(len(table))
    again = ppi.from_scores(table[["score"]].iloc[perm], y.dropna(), estimand="ols", formula="x + C(region)",
                            data=table.iloc[perm[::-1]])
    np.testing.assert_allclose(again.estimate, res.estimate, rtol=1e-9)
    logit = ppi.from_scores(table, y, estimand="logistic", formula="~ x", coord="x")
    assert logit.terms == ["Intercept", "x"] and logit.coord == "x"


def test_weights_by_column_or_label():
    table, y = _frame(seed=5)
    w = pd.Series(np.random.default_rng(0).uniform(0.5, 2, len(table)), index=table.index)
    a = ppi.from_scores(table.assign(w=w), y, weights="w")
    b = ppi.from_scores(table, y, weights=w.sample(frac=1.0, random_state=2))
    assert a.weighted and a.estimate == pytest.approx(b.estimate, rel=1e-12)


@pytest.mark.parametrize("make, match", [
    (lambda t, y: ppi.from_scores(t, y.to_numpy()), "`y` must be a pandas Series.*never by position"),
    (lambda t, y: ppi.from_scores(t, y.set_axis(np.arange(len(y)) + 10**6)), "`y` has the row label"),
    (lambda t, y: ppi.from_scores(t), "`y` is needed"),
    (lambda t, y: ppi.from_scores(t, "nope"), "`y`: 'nope' is not a column"),
    (lambda t, y: ppi.from_scores(t, y, score="prob"), "`score`: 'prob'"),
    (lambda t, y: ppi.from_scores(t.to_numpy(), y), "`scores` must be"),
    (lambda t, y: ppi.from_scores(t.assign(score=t["score"].where(t.index != t.index[-1])), y),
     "`scores` has a missing score at row label"),
    (lambda t, y: ppi.from_scores(t, y.astype(object).where(y.index != y.index[0], "yes")), "`y` must hold numbers"),
    (lambda t, y: ppi.from_scores(pd.concat([t, t.iloc[:1]]), y), "`scores` has the row label .* twice"),
    (lambda t, y: ppi.from_scores(t, y, estimand="ols"), "`formula` is needed"),
    (lambda t, y: ppi.from_scores(t, y, estimand="ols", formula="~ nope"), "`formula`"),
    (lambda t, y: ppi.from_scores(t, y, estimand="ols", formula="vote ~ x | region"), "`formula`"),
    (lambda t, y: ppi.from_scores(t, y, formula="~ x"), "`formula` / `data`"),
    (lambda t, y: ppi.from_scores(t, y, coord="x"), "`coord`"),
    (lambda t, y: ppi.from_scores(t, y, estimand="median"), "`estimand`"),
    (lambda t, y: ppi.from_scores(t, y, weights=[1.0] * len(t)), "`weights`"),
    (lambda t, y: ppi.from_scores(t, y, estimand="ols", formula="~ x", data=t.iloc[1:]), "`data` has no row"),
    (lambda t, y: ppi.from_scores(t, y.where(y.index == y.index[0])), "`y` has 1 labelled row"),
])
def test_bad_inputs_are_named(make, match):
    table, y = _frame(seed=7, m=60, n=20)
    with pytest.raises(InvalidArgumentError, match=match):
        make(table, y)
