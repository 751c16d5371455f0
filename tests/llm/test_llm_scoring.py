"""Answer probabilities, order-bias correction and numeric decoding against hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmsurrogate import datasets
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.llm.base import CallableBackend
from llmsurrogate.llm.cache import Cache
from llmsurrogate.llm.scoring import LLMPredictor, mc_risk, numeric_expectations, option_probabilities
from llmsurrogate.llm.tasks import AnswerOption, Column, MultipleChoiceQuestion, Task, acs_income_task

ROWS = datasets.load_acs_income_rows()
TASK = acs_income_task()


def true_p(prompt: str) -> float:
    """A synthetic P(Y=1 | x) read off the prompt text."""
    p = 0.3
    if "Male" in prompt:
        p += 0.3
    if "40 hours" in prompt:
        p += 0.2
    return p


def letter_of(prompt: str, option: str) -> str:
    for line in prompt.splitlines():
        if line.endswith(option + "."):
            return line[0]
    raise AssertionError(option)


def oracle(delta: float = 0.0):
    """P(Above) = true_p; adds log-weight +delta to whichever letter is 'A' (order bias)."""
    def fn(prompt):
        p = true_p(prompt)
        above, below = letter_of(prompt, "Above $50,000"), letter_of(prompt, "Below $50,000")
        w = {" " + above: math.log(p), " " + below: math.log(1 - p)}
        w[" A"] += delta
        return w
    return fn


def test_oracle_scores_equal_truth_and_bias_cancels_exactly():
    rows = ROWS.to_dict("records")
    truth = np.array([true_p(f"{'Male' if r['SEX'] == 1 else 'Female'} {int(r['WKHP'])} hours") for r in rows])
    fair, _, _ = mc_risk(CallableBackend(oracle()), TASK, rows)
    np.testing.assert_allclose(fair, truth, atol=1e-6)
    # with an additive logit bias delta on "A" the two orders give sigma(l+d), sigma(l-d)... not equal to
    # truth unless we average in probability space; check the exact hand value.
    d = 0.7
    biased, mass, per = mc_risk(CallableBackend(oracle(d)), TASK, rows)
    lo = np.log(truth / (1 - truth))
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    np.testing.assert_allclose(per[:, 0], sig(lo - d), atol=1e-6)  # Above is B in the original order
    np.testing.assert_allclose(per[:, 1], sig(lo + d), atol=1e-6)
    np.testing.assert_allclose(biased, (sig(lo - d) + sig(lo + d)) / 2, atol=1e-6)
    np.testing.assert_allclose(mass, 1.0, atol=1e-6)
    uncorrected, _, _ = mc_risk(CallableBackend(oracle(d)), TASK, rows, correct_order_bias=False)
    np.testing.assert_allclose(uncorrected, sig(lo - d), atol=1e-6)


def test_order_bias_on_probability_scale_cancels_exactly_for_k3():
    q = MultipleChoiceQuestion("How many?", (AnswerOption("none", 0), AnswerOption("one", 1), AnswerOption("two", 2)))
    task = Task("K3", (Column("X", "x", {1: "one"}),), "Y", question=q)
    true = {"none": 0.2, "one": 0.5, "two": 0.3}
    bias = {"A": 0.1, "B": -0.05, "C": -0.05}

    def fn(prompt):
        out = {}
        for line in prompt.splitlines():
            if len(line) > 3 and line[1] == "." and line[0] in "ABC":
                out[" " + line[0]] = math.log(true[line[3:-1]])
        # shift probabilities additively by position (sums to zero), then log
        return {k: math.log(math.exp(v) + bias[k[1]]) for k, v in out.items()}

    score, _, per = mc_risk(CallableBackend(fn), task, [{"X": 1}])
    assert per.shape == (1, 6)
    # additive position bias averages out over all 6 orders: expected value = sum v * p
    assert score[0] == pytest.approx(0 * 0.2 + 1 * 0.5 + 2 * 0.3, abs=1e-9)


def test_spelling_sum_vs_best_prefix_by_hand():
    def fn(_):
        return {" A": math.log(0.3), " B": math.log(0.1), "A": math.log(0.05), "B": math.log(0.15)}

    b = CallableBackend(fn, normalise=False)
    probs, mass = option_probabilities(b, ["x"], ["A", "B"])
    np.testing.assert_allclose(probs[0], [0.35 / 0.6, 0.25 / 0.6])
    assert mass[0] == pytest.approx(0.6, rel=1e-6)
    probs, mass = option_probabilities(b, ["x"], ["A", "B"], spelling="best_prefix")
    np.testing.assert_allclose(probs[0], [0.75, 0.25])  # " " variant has mass 0.4 > 0.2
    assert mass[0] == pytest.approx(0.4, rel=1e-6)


def test_zero_mass_gives_uniform_and_collisions_raise():
    b = CallableBackend(lambda p: {" C": 0.0})
    probs, mass = option_probabilities(b, ["x"], ["A", "B"])
    assert probs.tolist() == [[0.5, 0.5]] and mass[0] == 0

    class Colliding(CallableBackend):
        def answer_tokens(self, keys):
            return {k: [(" A", self.index[" A"])] for k in keys}

    with pytest.raises(InvalidArgumentError, match="share token"):
        option_probabilities(Colliding(lambda p: {}), ["x"], ["A", "B"])
    with pytest.raises(InvalidArgumentError, match="empty"):
        option_probabilities(b, [""], ["A", "B"])


def test_numeric_expected_value_and_argmax_by_hand():
    # first digit: 7 w.p. .6, 2 w.p. .4; after "7": 5 w.p. 1; after "2": 0 w.p. .5, 9 w.p. .5
    def fn(prompt):
        if prompt.endswith("0."):
            return {"7": math.log(0.6), "2": math.log(0.4), " A": math.log(5.0)}  # non-digit mass ignored
        if prompt.endswith("0.7"):
            return {"5": 0.0}
        return {"0": math.log(0.5), "9": math.log(0.5)}

    b = CallableBackend(fn)
    r, mass = numeric_expectations(b, ["p 0."])
    assert r[0] == pytest.approx(0.6 * 0.75 + 0.4 * (0.2 + 0.5 * 0.0 + 0.5 * 0.09), abs=1e-6)
    assert mass[0] == pytest.approx(1.0 / 6.0, rel=1e-5)
    r, _ = numeric_expectations(b, ["p 0."], decoding="argmax")
    assert r[0] == pytest.approx(0.75)


def test_numeric_multi_digit_tokens():
    b = CallableBackend(lambda p: {"75": math.log(0.5), "5": math.log(0.5)} if p.endswith("0.") else {"0": 0.0})
    r, _ = numeric_expectations(b, ["0."])
    assert r[0] == pytest.approx(0.5 * 0.75 + 0.5 * 0.5)


def test_predictor_uses_the_cache(tmp_path):
    calls = []

    def fn(prompt):
        calls.append(prompt)
        return oracle()(prompt)

    pred = LLMPredictor(CallableBackend(fn, name="counted"), TASK, cache=Cache(tmp_path))
    first = pred.predict(ROWS)
    assert len(calls) == 18  # fixture rows 424 and 623 are identical: their prompts are computed once
    second = LLMPredictor(CallableBackend(fn, name="counted"), TASK, cache=Cache(tmp_path)).predict(ROWS)
    assert len(calls) == 18
    np.testing.assert_array_equal(first, second)
    other = LLMPredictor(CallableBackend(fn, name="other-model"), TASK, cache=Cache(tmp_path))
    other.predict(ROWS.iloc[:2])
    assert len(calls) == 22  # a different model identity is a different key


def test_persona_predictor_expected_answer_value(tmp_path):
    template = ("Here is your persona: You are a {AGEP}-year-old. Your sex is {SEX}.\n"
                "Given your persona, do you earn more than $50,000? If yes, say 1; if no, say 5.")

    def fn(prompt):
        assert prompt.endswith("say 5.\nAnswer:")
        p = 0.8 if "Male" in prompt else 0.3
        return {" 1": math.log(p), " 5": math.log(1 - p) - 0.0, " A": 0.0}  # A: mass off the answers

    pred = LLMPredictor(CallableBackend(fn), TASK, method="persona", persona_template=template,
                        answers={"1": 1.0, "5": 0.0}, cache=Cache(tmp_path))
    out = pred.predict(ROWS)
    expect = np.where(ROWS["SEX"] == 1, 0.8, 0.3)
    np.testing.assert_allclose(out, expect, atol=1e-9)
    with pytest.raises(InvalidArgumentError, match="persona_template"):
        LLMPredictor(CallableBackend(fn), TASK, method="persona")


def test_few_shot_examples_follow_the_permuted_question():
    from llmsurrogate import risk

    seen = []

    def fn(prompt):
        seen.append(prompt)
        # the examples' answer letters must match each prompt's own option order
        blocks = prompt.split("Information:\n")[1:-1]
        for blk, label in zip(blocks, (1, 0)):
            opt = "Above $50,000" if label == 1 else "Below $50,000"
            assert blk.rstrip().endswith("Answer: " + letter_of(blk, opt))
        return oracle()(prompt.split("Information:\n")[0] + "Information:\n" + prompt.split("Information:\n")[-1])

    shots = ROWS.iloc[[5, 0]]
    res = risk.risk_scores(ROWS.iloc[1:4], TASK, CallableBackend(fn), few_shot=shots)
    assert len(seen) == 6 and res.meta["few_shot"] == 2
    plain = risk.risk_scores(ROWS.iloc[1:4], TASK, CallableBackend(oracle()))
    np.testing.assert_allclose(res.scores, plain.scores, atol=1e-9)
    num = risk.risk_scores(ROWS.iloc[1:2], TASK, CallableBackend(lambda p: {"5": 0.0}), method="numeric",
                           few_shot=shots)
    assert num.scores[0] == pytest.approx(0.5 + 0.05)  # "5" then "5": 0.5 + 0.5/10


def test_risk_scores_meta_counts_hits_misses_and_rejected_entries(tmp_path):
    import sqlite3

    from llmsurrogate import risk

    rows = ROWS.iloc[1:4]
    first = risk.risk_scores(rows, TASK, CallableBackend(oracle()), cache=tmp_path)
    assert first.meta["cache_misses"] == 6 and first.meta["cache_hits"] == 0 and first.meta["cache_rejected"] == 0
    with sqlite3.connect(Cache(tmp_path).path) as conn:  # damage one stored output
        (key,), = conn.execute("SELECT key FROM outputs LIMIT 1").fetchall()
        conn.execute("UPDATE outputs SET checksum = 'x' WHERE key = ?", (key,))
    with pytest.warns(Warning):
        again = risk.risk_scores(rows, TASK, CallableBackend(oracle()), cache=tmp_path)
    assert (again.meta["cache_hits"], again.meta["cache_misses"], again.meta["cache_rejected"]) == (5, 1, 1)
    np.testing.assert_array_equal(again.scores, first.scores)


def test_a_cache_folder_is_opened_once_per_call_and_closed(tmp_path, monkeypatch):
    """``cache=<folder>``: one Cache per call (both numeric passes share it), closed at the end; a
    Cache passed in is used as it is and left open (issue 20)."""
    opened, closed = [], []
    init, close = Cache.__init__, Cache.close

    def counting_init(self, *a, **kw):
        opened.append(self)
        init(self, *a, **kw)

    def counting_close(self):
        closed.append(self)
        close(self)

    monkeypatch.setattr(Cache, "__init__", counting_init)
    monkeypatch.setattr(Cache, "close", counting_close)
    b = CallableBackend(lambda p: {"7": math.log(0.6), "2": math.log(0.4)} if p.endswith("0.") else {"5": 0.0})
    first = numeric_expectations(b, ["p 0.", "q 0."], cache=tmp_path)
    assert len(opened) == 1 and closed == opened
    option_probabilities(CallableBackend(lambda p: {" A": math.log(0.3), " B": math.log(0.7)}), ["x", "y"], ["A", "B"],
                         cache=tmp_path)
    assert len(opened) == 2 and closed == opened
    mine = Cache(tmp_path)
    opened.clear(), closed.clear()
    again = numeric_expectations(b, ["p 0.", "q 0."], cache=mine)
    assert opened == [] and closed == [] and mine.hits == 2 + 2 and mine.misses == 0
    np.testing.assert_array_equal(again[0], first[0])


def test_lookahead_uses_public_llm_names_only():
    """The LLM-cache helpers live in llm.scoring; lookahead imports no private llm name (issue 20),
    and the old import paths still work."""
    import ast
    from pathlib import Path

    import llmsurrogate.lookahead as la
    from llmsurrogate.llm import scoring
    from llmsurrogate.lookahead._lap import prompt_logprob_moments_cached

    root = Path(la.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level and (node.module or "").startswith("llm"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private and not any(p.startswith("_") for p in node.module.split(".")), \
                    (path.name, node.module, private)
    assert la.prompt_logprob_moments_cached is prompt_logprob_moments_cached is scoring.prompt_logprob_moments_cached
    assert scoring._identity is scoring.backend_identity
    assert scoring.backend_identity(CallableBackend(oracle()))[0] == "callable"
