"""Chain-of-thought risk scores with answer extraction (issue 25's folktexts gap): the reasoning is generated
through the cache, cut where the model starts to answer, and the answer is read after it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmsurrogate import testing
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.llm import CallableBackend
from llmsurrogate.llm import prompts as P
from llmsurrogate.risk import risk_scores

TASK = testing.synthetic_income_task()
ROWS = testing.synthetic_census(30, seed=6)
VOCAB = [" A", " B", "A", "B", " educated", " not", "\nAnswer:", "\nInformation:", " x"]


def keys_for(prompt, p_above):
    above = "A" if "A. Above" in prompt else "B"
    below = "B" if above == "A" else "A"
    return {" " + above: math.log(p_above), " " + below: math.log(1 - p_above)}


def row_text(prompt):
    return prompt.split("Information:")[1].split("Question:")[0]  # the first record: the scored row


class Reasoner:
    """Reasons " educated" or " not educated" from the row, then (when `states`) writes "\\nAnswer:" and a
    letter; answers from its reasoning alone (0.9 / 0.1); records every prompt it sees."""

    def __init__(self, states=False):
        self.states, self.seen = states, []

    def __call__(self, prompt):
        self.seen.append(prompt)
        if prompt.endswith("step by step."):
            return {" educated": 0.0} if "Bachelor" in row_text(prompt) else {" not": 0.0}
        if prompt.endswith(" not"):
            return {" educated": 0.0}
        if prompt.endswith(" educated") and self.states:
            return {"\nAnswer:": 0.0}
        tail = prompt.rsplit("step by step.", 1)[-1]
        if prompt.endswith("\nAnswer:") and self.states and tail.count("Answer:") == 1:  # generating: state one
            return keys_for(prompt, 0.1 if "not educated" in tail else 0.9)
        if prompt.endswith("Answer:"):  # extraction
            return keys_for(prompt, 0.1 if "not educated" in tail else 0.9)
        return {}


def test_the_score_is_read_after_the_reasoning():
    model = Reasoner()
    rs = risk_scores(ROWS, TASK, CallableBackend(model, vocab=VOCAB), "chain_of_thought", max_new_tokens=5)
    bachelor = ROWS["SCHL"].eq(21).to_numpy()
    np.testing.assert_allclose(rs.scores, np.where(bachelor, 0.9, 0.1), atol=1e-12)
    assert rs.table["reasoning"].tolist() == [" educated" if b else " not educated" for b in bachelor]
    assert rs.table["stated_score"].isna().all()  # it never stated an answer
    row = ROWS.iloc[0].to_dict()
    start = P.multiple_choice_prompt(TASK, row, prefill=False) + "\nReasoning: Let's think step by step."
    assert start in model.seen  # the generation prompt: the question, then the reasoning line
    reasoning = rs.table["reasoning"].iloc[0]
    assert start + reasoning + "\nAnswer:" in model.seen  # the extraction prompt
    assert rs.meta["method"] == "chain_of_thought" and rs.meta["max_new_tokens"] == 5


def test_a_stated_answer_is_cut_from_the_reasoning_and_extracted():
    rs = risk_scores(ROWS, TASK, CallableBackend(Reasoner(states=True), vocab=VOCAB), "chain_of_thought",
                     max_new_tokens=6)
    bachelor = ROWS["SCHL"].eq(21).to_numpy()
    assert rs.table["reasoning"].tolist() == [" educated" if b else " not educated" for b in bachelor]
    # the letter it wrote after "Answer:" is the option it favoured: Above for the educated (both orders)
    assert rs.table["stated_score"].tolist() == [1.0 if b else 0.0 for b in bachelor]


def test_both_orders_are_generated_and_cached(tmp_path):
    model = Reasoner()
    first = risk_scores(ROWS.head(4), TASK, CallableBackend(model, vocab=VOCAB, name="r"), "chain_of_thought",
                        cache=tmp_path, max_new_tokens=4)
    starts = [p for p in model.seen if p.endswith("step by step.")]
    assert len({p for p in starts}) == 8  # 4 rows x 2 answer orders
    assert first.meta["cache_misses"] > 0

    def refuse(prompt):
        raise AssertionError("the model was asked again")

    again = risk_scores(ROWS.head(4), TASK, CallableBackend(refuse, vocab=VOCAB, name="r"), "chain_of_thought",
                        cache=tmp_path, max_new_tokens=4)
    assert again.table.equals(first.table) and again.meta["cache_misses"] == 0
    # another token budget is another generation: not read from the cache
    with pytest.raises(AssertionError, match="asked again"):
        risk_scores(ROWS.head(4), TASK, CallableBackend(refuse, vocab=VOCAB, name="r"), "chain_of_thought",
                    cache=tmp_path, max_new_tokens=5)


def test_few_shot_examples_precede_the_reasoning():
    model = Reasoner()
    shots = ROWS.iloc[[0, 1]]
    risk_scores(ROWS.iloc[2:4], TASK, CallableBackend(model, vocab=VOCAB), "chain_of_thought", few_shot=shots,
                max_new_tokens=3, correct_order_bias=False)
    row = ROWS.iloc[2].to_dict()
    labels = TASK.labels(shots).tolist()
    start = P.few_shot_prompt(TASK, row, shots.to_dict("records"), labels, prefill=False) + \
        "\nReasoning: Let's think step by step."
    assert start in model.seen


@pytest.mark.parametrize("text, reasoning, stated", [
    (" a b\nAnswer: B and more", " a b", "B"),
    (" a b\nAnswer:", " a b", None),
    (" so the answer is A.\n\nInformation: next", " so the answer is A.", "A"),
    (" The Answer is: (B)", " The Answer is: (B)", "B"),
    (" The Answer is: (b)", " The Answer is: (b)", None),  # lower case is not a key
    (" the answer is C", " the answer is C", None),  # C is not a key of a two-option question
    (" first B\nQuestion: again", " first B", None),
])
def test_reasoning_of_cuts_and_extracts(text, reasoning, stated):
    assert P.reasoning_of(text, TASK.question) == (reasoning, stated)


def test_bad_input():
    with pytest.raises(InvalidArgumentError, match="max_new_tokens"):
        risk_scores(ROWS.head(2), TASK, CallableBackend(Reasoner(), vocab=VOCAB), "chain_of_thought", max_new_tokens=0)
    with pytest.raises(InvalidArgumentError, match="chat"):
        risk_scores(ROWS.head(2), TASK, CallableBackend(Reasoner(), vocab=VOCAB), "chain_of_thought", chat=True)
