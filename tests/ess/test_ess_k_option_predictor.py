"""The ESS with an ``LLMPredictor`` over a question with K answer options (issue 27 follow-up;
docs/methods/ess.md §1.6): the predictor's ``classes_`` (the options' values) label the columns of
its ``predict_proba``, so ``prediction=predictor`` gives the same numbers as its (n, K) array passed
with ``options=`` those values. Reference: a stand-in model whose answer distribution is known in
closed form, whose probabilities are passed directly, with the labels written out.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from llmsurrogate import ess, testing
from llmsurrogate.llm.base import CallableBackend
from llmsurrogate.llm.scoring import LLMPredictor
from llmsurrogate.llm.tasks import AnswerOption, MultipleChoiceQuestion, Task, acs_columns

COLS = {c.name: c for c in acs_columns()}
STATUS = ("employed", "unemployed", "not in labor force")
TEXTS = ("Employed", "Unemployed", "Not in labor force")
#: the stand-in model's answer distribution over TEXTS, by sex
TRUTH = {"Female": (0.5, 0.1, 0.4), "Male": (0.7, 0.2, 0.1)}
TASK = Task("Work", columns=(COLS["AGEP"], COLS["SEX"]), target="ESR",
            question=MultipleChoiceQuestion("What is this person's employment status?",
                                            tuple(AnswerOption(t, v, i) for i, (t, v) in enumerate(zip(TEXTS, STATUS)))))


def oracle(prompt):
    """TRUTH for the row's sex, whatever keys the options have in this order."""
    sex = "Female" if "Female" in prompt.split("Question:")[0] else "Male"
    keys = {line[3:-1]: line[0] for line in prompt.split("Question:")[1].splitlines() if line[1:3] == ". "}
    return {" " + keys[t]: math.log(p) for t, p in zip(TEXTS, TRUTH[sex])}


@pytest.fixture(scope="module")
def study():
    rows = testing.synthetic_census(240, seed=9)[["AGEP", "SEX", "SCHL"]]
    probs = np.array([TRUTH["Female" if s == 2 else "Male"] for s in rows["SEX"]])
    rng = np.random.default_rng(9)
    rows["ESR"] = [STATUS[k] for k in (rng.random(len(rows))[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)]
    return rows, probs, LLMPredictor(CallableBackend(oracle), TASK)


def _same(a, b):
    pd.testing.assert_frame_equal(a.table, b.table)
    assert (a.lower_bound, a.llm_error, a.llm_se, a.status) == (b.lower_bound, b.llm_error, b.llm_se, b.status)


@pytest.mark.parametrize("loss", ["multiclass_log", "multiclass_brier"])
def test_predictor_equals_its_probabilities_passed_directly(study, loss):
    rows, probs, predictor = study
    assert predictor.classes_ == list(STATUS)
    np.testing.assert_allclose(predictor.predict_proba(rows), probs, rtol=0, atol=1e-7)
    common = dict(features=["AGEP", "SCHL"], algorithm="mean", grid=[5, 20, 60], loss=loss)
    via_predictor = ess.equivalent_sample_size(rows, "ESR", predictor, **common)
    direct = ess.equivalent_sample_size(rows, "ESR", predictor.predict_proba(rows), options=list(STATUS), **common)
    _same(via_predictor, direct)
    # the LLM's error is the mean loss of the closed-form probabilities at the observed answers
    code = np.array([STATUS.index(v) for v in rows["ESR"]])
    per_row = (-np.log(probs[np.arange(len(code)), code]) if loss == "multiclass_log"
               else np.sum((probs - np.eye(3)[code]) ** 2, axis=1))
    assert via_predictor.llm_error == pytest.approx(per_row.mean(), abs=1e-6)


def test_classes_beat_a_categorical_outcome_in_another_order(study):
    """The predictor's columns are in the question's order; a categorical outcome listing the
    categories in another order must not relabel them (it did before classes_ was read)."""
    rows, probs, predictor = study
    shuffled = rows.assign(ESR=pd.Categorical(rows["ESR"], categories=list(reversed(STATUS))))
    common = dict(features=["AGEP", "SCHL"], algorithm="mean", grid=[5, 20, 60], loss="multiclass_log")
    via_predictor = ess.equivalent_sample_size(shuffled, "ESR", predictor, **common)
    direct = ess.equivalent_sample_size(shuffled, "ESR", predictor.predict_proba(rows), options=list(STATUS),
                                        **common)
    _same(via_predictor, direct)
    relabelled = ess.equivalent_sample_size(shuffled, "ESR", probs, **common)  # the categories' order: wrong
    assert abs(relabelled.llm_error - via_predictor.llm_error) > 0.1


def test_a_scikit_learn_classifier_is_read_by_its_classes_too(study):
    rows, _probs, _ = study
    clf = LogisticRegression(max_iter=500).fit(rows[["SEX"]], rows["ESR"])  # classes_ sorted: not STATUS's order
    assert list(clf.classes_) != list(STATUS)

    class OnSex:  # the classifier reading the frame's SEX column
        classes_ = clf.classes_

        def predict_proba(self, frame):
            return clf.predict_proba(frame[["SEX"]])

    common = dict(features=["AGEP", "SCHL"], algorithm="mean", grid=[5, 20], loss="multiclass_brier")
    _same(ess.equivalent_sample_size(rows, "ESR", OnSex(), **common),
          ess.equivalent_sample_size(rows, "ESR", clf.predict_proba(rows[["SEX"]]), options=list(clf.classes_),
                                     **common))
