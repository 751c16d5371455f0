"""Questions with K answer options, ordered or not (issue 27 items 1 and 5; docs/methods/survey.md §7).

The references are independent of the code under test:

* brute force: a tiny real GPT-2 (``llmsurrogate.testing``), one explicit forward pass per prompt and
  option order, the keys' spellings read from the vocabulary (every token whose text is the key,
  blanks aside), renormalised by hand and put back in the question's option order;
* K = 2: values saved from the code before K-option prompting (CallableBackend, exact reprs), and the
  old code path written out (all K! orders, the option with the larger value);
* closed forms for a stand-in model with a pure position bias.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import risk, testing
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.llm.base import CallableBackend
from llmsurrogate.llm.cache import Cache
from llmsurrogate.llm.prompts import multiple_choice_prompt
from llmsurrogate.llm.scoring import LLMPredictor, mc_risk, option_probabilities, scale_risk
from llmsurrogate.llm.tasks import AnswerOption, Column, MultipleChoiceQuestion, Task, acs_columns, acs_income_task

COLS = {c.name: c for c in acs_columns()}
HOURS = ("How many hours does this person usually work per week?",
         (AnswerOption("Under 20 hours", 10), AnswerOption("20 to 34 hours", 27),
          AnswerOption("35 to 44 hours", 40), AnswerOption("45 hours or more", 50)))


def hours_task(k=4, ordered=True):
    return Task("Hours", columns=(COLS["AGEP"], COLS["SEX"], COLS["SCHL"]), target="WKHP",
                question=MultipleChoiceQuestion(HOURS[0], HOURS[1][:k], ordered=ordered),
                description="Synthetic US census respondent, 2018. Estimate the hours.")


#: three rows whose WKHP (the hours tasks' target, not a feature) holds answers of the options: a label that is
#: no option's value (the census hours, 38.0) is an error (issue 34 §4)
ROWS = testing.synthetic_census(3, seed=7).assign(WKHP=[40, 10, 27])


# --- the brute-force reference -------------------------------------------------------------------

@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from llmsurrogate.llm.hf import TransformersBackend

    import torch
    import transformers

    model = testing.build_model(tmp_path_factory.mktemp("k_options") / "gpt2", "gpt2", hidden=16, layers=1, seed=3)
    # random weights x 10 (layer norms aside): the key probabilities of one order move far from 1/K
    # and with the order (at the initial scale they are 1/K within 1e-5, which would test little)
    lm = transformers.AutoModelForCausalLM.from_pretrained(model, local_files_only=True)
    with torch.no_grad():
        for name, param in lm.named_parameters():
            if ".ln_" not in name and not name.startswith("transformer.ln_f"):
                param.mul_(10.0)
    with testing.quiet_transformers():
        lm.save_pretrained(model)
    return TransformersBackend(model, device="cpu")


_SPELLINGS = {}


def _spellings(backend):
    """key text -> the ids of every vocabulary token whose text, blanks aside, is it (read once per backend)."""
    if id(backend) not in _SPELLINGS:
        out = {}
        for i in range(backend.vocab_size):
            out.setdefault(backend.tokenizer.decode([i]).strip(), []).append(i)
        _SPELLINGS[id(backend)] = out
    return _SPELLINGS[id(backend)]


def forward_key_probs(backend, prompt, keys):
    """One explicit forward pass: the next-token probabilities of every token whose text is a key
    (blanks aside), summed per key and renormalised over the keys; and the raw key mass."""
    import torch

    tok = backend.tokenizer
    spellings = {k: _spellings(backend)[k] for k in keys}
    ids = tok(prompt, add_special_tokens=True)["input_ids"]
    with torch.no_grad():
        logits = backend.model(input_ids=torch.tensor([ids])).logits[0, -1, : backend.vocab_size]
    p = torch.softmax(logits.double(), -1).numpy()
    mass = np.array([p[spellings[k]].sum() for k in keys])
    return mass / mass.sum(), mass.sum()


def brute_force(backend, task, rows, orders):
    """(n, K) distribution in the question's order, (n, orders) per-order scores, (n,) mean key mass."""
    q = task.question
    opts = list(q.options)
    if orders == "all":
        perms = list(itertools.permutations(range(len(opts))))
    else:
        perms = [tuple((s + j) % len(opts) for j in range(len(opts))) for s in range(len(opts))]
    dist, per, mass = [], [], []
    for row in rows:
        d, s, m = np.zeros(len(opts)), [], []
        for perm in perms:
            qp = MultipleChoiceQuestion(q.text, tuple(opts[j] for j in perm), q.prefill, ordered=q.ordered)
            probs, total = forward_key_probs(backend, multiple_choice_prompt(task, row, qp), q.keys)
            back = np.zeros(len(opts))
            back[list(perm)] = probs  # the option at position j is option perm[j]
            d += back
            s.append(back @ np.array(q.values) if len(opts) > 2 else back[int(np.argmax(q.values))])
            m.append(total)
        dist.append(d / len(perms))
        per.append(s)
        mass.append(np.mean(m))
    return np.array(dist), np.array(per), np.array(mass)


@pytest.mark.parametrize("k,orders,n_orders", [(3, "all", 6), (4, "all", 24), (4, "cyclic", 4), (3, None, 6)])
def test_distribution_equals_explicit_forward_passes_over_every_order(hf, k, orders, n_orders, tmp_path):
    task = hours_task(k)
    rs = risk.risk_scores(ROWS, task, hf, orders=orders, cache=tmp_path / "c")
    ref_dist, ref_per, ref_mass = brute_force(hf, task, ROWS[list(task.features)].to_dict("records"),
                                              orders or "all")
    names = [f"prob_{o.value}" for o in task.question.options]
    assert rs.table.columns.tolist() == (["row", "score", "answer_mass"] + [f"score_order_{i}" for i in range(n_orders)]
                                         + names + ["label"] * ("WKHP" in ROWS))
    np.testing.assert_allclose(rs.table[names].to_numpy(), ref_dist, atol=2e-6)
    np.testing.assert_allclose(rs.probabilities.to_numpy(), ref_dist, atol=2e-6)
    assert rs.probabilities.columns.tolist() == [o.value for o in task.question.options]
    np.testing.assert_allclose(rs.probabilities.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(rs.table[[f"score_order_{i}" for i in range(n_orders)]].to_numpy(), ref_per, atol=1e-4)
    np.testing.assert_allclose(rs.scores, ref_dist @ np.array(task.question.values), atol=1e-4)
    np.testing.assert_allclose(rs.table["answer_mass"], ref_mass, rtol=1e-5)
    assert rs.meta["orders"] == (orders or "all") and rs.meta["ordered"] is True
    assert rs.meta["cache_misses"] == len(ROWS) * n_orders
    again = risk.risk_scores(ROWS, task, hf, orders=orders, cache=tmp_path / "c")  # the cache: nothing recomputed
    assert again.meta["cache_misses"] == 0 and again.meta["cache_hits"] == len(ROWS) * n_orders
    pd.testing.assert_frame_equal(again.table, rs.table)


def test_cyclic_and_all_differ_for_k_above_2_and_the_default_switches_at_5(hf):
    task = hours_task(4)
    rows = ROWS[list(task.features)].to_dict("records")
    _, _, _, p_all = mc_risk(hf, task, rows, orders="all", return_probabilities=True)
    _, _, per_cyc, p_cyc = mc_risk(hf, task, rows, orders="cyclic", return_probabilities=True)
    assert per_cyc.shape == (3, 4) and np.abs(p_all - p_cyc).max() > 1e-3  # a real model is not linear in the order
    five = dataclasses_replace_options(task, HOURS[1] + (AnswerOption("No hours", 0),))
    assert len(five.question.orderings()) == 5 and len(task.question.orderings()) == 24
    _, _, per5 = mc_risk(CallableBackend(lambda p: {" A": 0.0}), five, rows[:1])
    assert per5.shape == (1, 5)


def dataclasses_replace_options(task, options):
    import dataclasses

    return dataclasses.replace(task, question=dataclasses.replace(task.question, options=options))


# --- K = 2: nothing changes -------------------------------------------------------------------------

def _hashed(prompt):
    h = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
    a = 0.05 + 0.9 * (h % 1000) / 1000
    return {" A": math.log(a * 0.7), "A": math.log(a * 0.3), " B": math.log(1 - a), " C": math.log(0.2)}


#: risk_scores(synthetic_census(6, seed=3), synthetic_income_task(), CallableBackend(_hashed)) before this change
SAVED_BINARY = {
    "score": ["0.24844999917963645", "0.21514999900362577", "0.6035000077670856", "0.12334999584797766",
              "0.7250000013324714", "0.5904499931575251"],
    "answer_mass": ["0.8333333291298306", "0.8333333355538134", "0.8333333327412898", "0.8333333377938468",
                    "0.8333333286390201", "0.833333308380279"],
    "score_order_0": ["0.07160000935700982", "0.2173999936618751", "0.6125000134965028", "0.10489999049795948",
                      "0.7772000010050456", "0.6836000006748799"],
    "score_order_1": ["0.42529998900226307", "0.21290000434537645", "0.5945000020376682", "0.14180000119799585",
                      "0.6728000016598973", "0.4972999856401703"],
}
#: Task.fingerprint() before this change
SAVED_FINGERPRINTS = {"acs": "1cba04ced58f18c2", "synth": "2e012372770aca54", "three": "f4cb0b9833829fc5"}
#: mc_risk on a K = 3 question before this change (the K! orders, the default for K = 3 still)
SAVED_THREE = {"score": ["0.9938884985883218", "0.8748114990107907"],
               "per_order_0": ["1.288602948077352", "1.0059523987178751", "0.26710097295411594", "0.8583815088373744",
                               "1.0505747260709932", "1.4927184368722204"]}


def _three():
    return Task("Three", columns=(Column("X", "x", {1: "one", 2: "two"}),), target="Y",
                question=MultipleChoiceQuestion("Size?", (AnswerOption("Small", 0), AnswerOption("Medium", 1),
                                                          AnswerOption("Large", 2))))


def _weights3(prompt):
    h = hashlib.sha256(prompt.encode()).digest()
    return {" A": math.log(1 + h[0]), " B": math.log(1 + h[1]), " C": math.log(1 + h[2]), " D": 0.0}


def test_binary_scores_byte_identical_to_the_saved_values_whatever_orders():
    frame = testing.synthetic_census(6, seed=3)
    for orders in (None, "all", "cyclic"):
        rs = risk.risk_scores(frame, testing.synthetic_income_task(), CallableBackend(_hashed), orders=orders)
        assert rs.table.columns.tolist() == ["row", "score", "answer_mass", "score_order_0", "score_order_1", "label"]
        for col, saved in SAVED_BINARY.items():
            assert [repr(float(x)) for x in rs.table[col]] == saved, (orders, col)
        probs = rs.probabilities  # derived from the scores: "Above $50,000" (value 1) is the second option
        assert probs.columns.tolist() == [0, 1]
        np.testing.assert_array_equal(probs[1].to_numpy(), rs.scores)
        np.testing.assert_array_equal(probs[0].to_numpy(), 1.0 - rs.scores)
    assert {"acs": acs_income_task().fingerprint(), "synth": testing.synthetic_income_task().fingerprint(),
            "three": _three().fingerprint()} == SAVED_FINGERPRINTS
    s3, _, per3 = mc_risk(CallableBackend(_weights3), _three(), [{"X": 1}, {"X": 2}])
    assert [repr(float(x)) for x in s3] == SAVED_THREE["score"]
    assert [repr(float(x)) for x in per3[0]] == SAVED_THREE["per_order_0"]


def test_binary_equals_the_old_code_path_on_a_real_model(hf, tmp_path):
    """The old path written out: every permutation, option_probabilities, P(larger option), the mean."""
    task = testing.synthetic_income_task()
    rows = ROWS[list(task.features)].to_dict("records")
    qs = list(task.question.permutations())
    probs, mass = option_probabilities(hf, [multiple_choice_prompt(task, r, q) for r in rows for q in qs],
                                       task.question.keys)
    per = np.stack([probs[a::2][:, [o.numeric_value for o in q.options].index(1.0)] for a, q in enumerate(qs)], 1)
    cache = Cache(tmp_path / "c")
    for orders in ("all", "cyclic"):
        rs = risk.risk_scores(ROWS, task, hf, orders=orders, cache=cache)
        np.testing.assert_array_equal(rs.table[["score_order_0", "score_order_1"]].to_numpy(), per)
        np.testing.assert_array_equal(rs.scores, per.mean(axis=1))
        np.testing.assert_array_equal(rs.table["answer_mass"], mass.reshape(3, 2).mean(axis=1))
    assert rs.meta["cache_misses"] == 0  # cyclic asked the same prompts as all


# --- position bias: averaging removes it exactly -----------------------------------------------------

TRUE = {"Under 20 hours": 0.1, "20 to 34 hours": 0.2, "35 to 44 hours": 0.3, "45 hours or more": 0.4}
BIAS = np.array([0.7, 0.1, 0.15, 0.05])  # the keys A..D, whatever they stand for
LAM = 0.4


def _biased(prompt):
    """q(key j) = (1 - λ) p_true(option at j) + λ b_j: averaged over orders in which every option
    takes every key equally often, option i gets (1 - λ) p_i + λ / K, whatever b."""
    at = {line[0]: line[3:-1] for line in prompt.splitlines() if line[1:3] == ". "}
    return {" " + k: math.log((1 - LAM) * TRUE[at[k]] + LAM * BIAS["ABCD".index(k)]) for k in "ABCD"}


@pytest.mark.parametrize("orders", ["all", "cyclic"])
def test_position_bias_removed_exactly_by_either_averaging(orders):
    task = hours_task(4)
    rows = ROWS[list(task.features)].to_dict("records")
    p_true = np.array([TRUE[o.text] for o in task.question.options])
    _, _, _, dist = mc_risk(CallableBackend(_biased), task, rows, orders=orders, return_probabilities=True)
    np.testing.assert_allclose(dist, np.tile((1 - LAM) * p_true + LAM / 4, (3, 1)), atol=1e-6)
    _, _, _, one = mc_risk(CallableBackend(_biased), task, rows, correct_order_bias=False, return_probabilities=True)
    np.testing.assert_allclose(one, np.tile((1 - LAM) * p_true + LAM * BIAS, (3, 1)), atol=1e-6)
    pure = CallableBackend(lambda p: {" " + k: math.log(b) for k, b in zip("ABCD", BIAS)})  # answers by position only
    _, _, _, flat = mc_risk(pure, task, rows, orders=orders, return_probabilities=True)
    np.testing.assert_allclose(flat, 0.25, atol=1e-6)


def test_k_above_2_scores_may_be_negative():
    """A -2..2 scale: Σ q_k v_k < 0 is the score (the code before clipped every order's score at 0)."""
    task = Task("Mood", columns=(Column("X", "x", {1: "one"}),), target="Y", question=MultipleChoiceQuestion(
        "Mood?", tuple(AnswerOption(t, v) for t, v in (("Bad", -2), ("Meh", 0), ("Good", 2)))))
    at = {"Bad": 0.7, "Meh": 0.2, "Good": 0.1}

    def model(prompt):
        keys = {line[3:-1]: line[0] for line in prompt.splitlines() if line[1:3] == ". "}
        return {" " + keys[t]: math.log(p) for t, p in at.items()}

    s, _, per = mc_risk(CallableBackend(model), task, [{"X": 1}])
    np.testing.assert_allclose(s, [-1.2], atol=1e-6)
    np.testing.assert_allclose(per, -1.2, atol=1e-6)


# --- numeric_scale ----------------------------------------------------------------------------------

def test_numeric_scale_equals_explicit_forward_passes(hf, tmp_path):
    task = hours_task(4)
    rows = ROWS[list(task.features)].to_dict("records")
    rs = risk.risk_scores(ROWS, task, hf, "numeric_scale", cache=tmp_path / "c")
    prompt = multiple_choice_prompt(task, rows[0], task.question.scale())
    assert prompt.endswith("Question: How many hours does this person usually work per week?\n1. Under 20 hours.\n"
                           "2. 20 to 34 hours.\n3. 35 to 44 hours.\n4. 45 hours or more.\n"
                           "Answer with the number of the level, from 1 to 4.\nAnswer:")
    ref = [forward_key_probs(hf, multiple_choice_prompt(task, r, task.question.scale()), ["1", "2", "3", "4"])
           for r in rows]
    dist = np.array([p for p, _ in ref])
    names = [f"prob_{o.value}" for o in task.question.options]
    assert rs.table.columns.tolist() == ["row", "score", "answer_mass"] + names + ["label"] * ("WKHP" in ROWS)
    np.testing.assert_allclose(rs.table[names].to_numpy(), dist, atol=2e-6)
    np.testing.assert_allclose(rs.scores, dist @ np.array([10, 27, 40, 50]), atol=1e-4)  # the expected level
    np.testing.assert_allclose(rs.table["answer_mass"], [m for _, m in ref], rtol=1e-5)
    assert rs.meta["cache_misses"] == 3 and "orders" not in rs.meta
    again = risk.risk_scores(ROWS, task, hf, "numeric_scale", cache=tmp_path / "c")
    assert again.meta["cache_misses"] == 0
    pd.testing.assert_frame_equal(again.table, rs.table)


def test_numeric_scale_reads_the_digits_of_a_stand_in_model():
    task = hours_task(3)
    backend = CallableBackend(lambda p: {"2": math.log(0.3), " 2": math.log(0.3), " 3": math.log(0.2), " x": 0.0},
                              vocab=["1", " 1", "2", " 2", "3", " 3", " x"])
    scores, mass, probs = scale_risk(backend, task, [{"AGEP": 30, "SEX": 1, "SCHL": 16}])
    np.testing.assert_allclose(probs, [[0.0, 0.75, 0.25]], atol=1e-6)
    np.testing.assert_allclose(scores, [0.75 * 27 + 0.25 * 40], atol=1e-5)
    np.testing.assert_allclose(mass, [0.8 / 1.8], atol=1e-6)


def test_numeric_scale_few_shot_examples_answer_with_level_numbers_and_chat_prefills(hf):
    task = hours_task(4)
    frame = ROWS.assign(WKHP=[40, 10, 50])  # labels: the options' values
    seen = []

    def model(prompt):
        seen.append(prompt)
        return {" 3": 0.0}

    rs = risk.risk_scores(frame.iloc[2:], task, CallableBackend(model), "numeric_scale", few_shot=frame.iloc[:2])
    answers = [line for line in seen[0].splitlines() if line.startswith("Answer")]
    ask = "Answer with the number of the level, from 1 to 4."
    assert answers == [ask, "Answer: 3", ask, "Answer: 1", ask, "Answer:"]  # 40 hours: level 3; 10 hours: level 1
    assert rs.scores.tolist() == [40.0] and rs.meta["few_shot"] == 2
    from llmsurrogate.llm.prompts import MC_CHAT_PREFILL, MC_SYSTEM_PROMPT

    chat = risk.risk_scores(ROWS.iloc[:1], task, hf, "numeric_scale", chat=True)
    row = ROWS[list(task.features)].to_dict("records")[0]
    prompt = hf.chat_prompt(multiple_choice_prompt(task, row, task.question.scale(), prefill=False),
                            prefill=MC_CHAT_PREFILL, system=MC_SYSTEM_PROMPT)
    assert prompt.endswith("from 1 to 4.<|im_end|>\n<|im_start|>assistant\n" + MC_CHAT_PREFILL)
    ref, _ = forward_key_probs(hf, prompt, ["1", "2", "3", "4"])
    np.testing.assert_allclose(chat.probabilities.to_numpy()[0], ref, atol=2e-6)


# --- LLMPredictor.predict_proba -----------------------------------------------------------------------

def test_predict_proba_columns_in_option_order_and_binary_matches_predict(hf):
    task = hours_task(4)
    frame = ROWS
    pred = LLMPredictor(hf, task)
    p = pred.predict_proba(frame)
    rs = risk.risk_scores(frame, task, hf)
    assert p.shape == (3, 4) and pred.classes_ == [10, 27, 40, 50]
    np.testing.assert_array_equal(p, rs.probabilities.to_numpy())
    np.testing.assert_array_equal(pred.predict(frame), rs.scores)
    scale = LLMPredictor(hf, task, method="numeric_scale")
    np.testing.assert_array_equal(scale.predict_proba(frame), risk.risk_scores(frame, task, hf, "numeric_scale")
                                  .probabilities.to_numpy())
    binary = testing.synthetic_income_task()
    for method in ("multiple_choice", "numeric"):
        b = LLMPredictor(hf, binary, method=method)
        pb, r = b.predict_proba(frame), b.predict(frame)
        assert pb.shape == (3, 2) and b.classes_ == [0, 1]
        np.testing.assert_array_equal(pb[:, 1], r)  # "Above $50,000" (value 1) is the second option
        np.testing.assert_array_equal(pb[:, 0], 1.0 - r)
    persona = LLMPredictor(hf, binary, method="persona", persona_template="A {AGEP}-year-old. Own (1) or rent (5)?",
                           answers={"1": 1.0, "5": 0.0})
    pp = persona.predict_proba(frame)
    assert persona.classes_ == [1.0, 0.0] and pp.shape == (3, 2)
    np.testing.assert_allclose(pp @ np.array([1.0, 0.0]), persona.predict(frame), atol=1e-12)


# --- task files and bad input -------------------------------------------------------------------------

def test_toml_round_trip_keeps_ordered_and_unordered_files_unchanged(tmp_path):
    ordered, plain = hours_task(4, ordered=True), hours_task(4, ordered=False)
    text = ordered.to_toml(tmp_path / "o.toml")
    assert "\nordered = true\n" in text and "ordered" not in plain.to_toml()
    back = Task.from_toml(tmp_path / "o.toml")
    assert back == ordered and back.question.ordered is True and back.fingerprint() == ordered.fingerprint()
    assert ordered.fingerprint() != plain.fingerprint()
    assert repr(plain.question).endswith("prefill='Answer:')") and repr(ordered.question).endswith("ordered=True)")
    import dataclasses

    numbered = dataclasses.replace(ordered, question=ordered.question.scale())
    numbered.to_toml(tmp_path / "n.toml")
    assert Task.from_toml(tmp_path / "n.toml") == numbered
    (tmp_path / "bad.toml").write_text(text.replace("ordered = true", 'ordered = "yes"'))
    with pytest.raises(InvalidArgumentError, match="`ordered` must be true or false"):
        Task.from_toml(tmp_path / "bad.toml")


def test_bad_input_names_the_argument():
    task = hours_task(4)
    rows = ROWS[list(task.features)].to_dict("records")
    be = CallableBackend(lambda p: {" A": 0.0, " 1": 0.0})
    with pytest.raises(InvalidArgumentError, match="argument `orders`"):
        risk.risk_scores(ROWS, task, be, orders="x")
    with pytest.raises(InvalidArgumentError, match="argument `orders`"):
        mc_risk(be, task, rows, orders="rotations", correct_order_bias=False)
    with pytest.raises(InvalidArgumentError, match="argument `orders`"):
        LLMPredictor(be, task, orders=3)
    ten = dataclasses_replace_options(task, tuple(AnswerOption(f"level {i}", i) for i in range(10)))
    with pytest.raises(InvalidArgumentError, match="argument `method`.*at most 9"):
        risk.risk_scores(ROWS, ten, be, "numeric_scale")
    with pytest.raises(InvalidArgumentError, match="argument `method`.*at most 9"):
        LLMPredictor(be, ten, method="numeric_scale")
    with pytest.raises(InvalidArgumentError, match="argument `method`.*not ordered"):
        risk.risk_scores(ROWS, hours_task(4, ordered=False), be, "numeric_scale")
    with pytest.raises(InvalidArgumentError, match="argument `ordered`"):
        MultipleChoiceQuestion("Q?", HOURS[1], ordered="yes")
    numeric_three = Task("N", columns=task.columns, target="WKHP", question=task.question,
                         numeric_question=testing.synthetic_income_task().numeric_question)
    with pytest.raises(InvalidArgumentError, match="predict_proba.*4 options"):
        LLMPredictor(CallableBackend(lambda p: {"5": 0.0}), numeric_three, method="numeric").predict_proba(ROWS)
    with pytest.raises(InvalidArgumentError, match="no answer distribution"):
        risk.risk_scores(ROWS, numeric_three, CallableBackend(lambda p: {"5": 0.0}), "numeric").probabilities


# --- the other backends: the same cached next-token path ---------------------------------------------

@pytest.mark.vllm
def test_vllm_k_options_agree_with_transformers(tmp_path_factory):
    """The real engine (make test-vllm) on a tiny Llama: the K-option distribution (all orders and
    numeric_scale) equals TransformersBackend's on the same weights (float32 both)."""
    pytest.importorskip("torch")
    pytest.importorskip("vllm")
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.vllm import VLLMBackend

    llama = testing.build_model(tmp_path_factory.mktemp("vllm_k") / "m", "llama", seed=1)
    vl = VLLMBackend(llama, dtype="float32", enforce_eager=True)
    try:
        hf = TransformersBackend(llama, device="cpu")
        atol = 1e-5 if vl.device == "cpu" else 1e-4  # tests/llm/test_llm_vllm.py's score tolerances
        task = hours_task(3)
        for method in ("multiple_choice", "numeric_scale"):
            a = risk.risk_scores(ROWS, task, vl, method).probabilities.to_numpy()
            b = risk.risk_scores(ROWS, task, hf, method).probabilities.to_numpy()
            print(f"vLLM ({vl.device}) vs transformers, {method}: max |Δ prob| {np.abs(a - b).max():.1e}")
            np.testing.assert_allclose(a, b, atol=atol)
    finally:
        vl.close()


def test_llama_cpp_server_k_options_agree_with_transformers(hf, tmp_path):
    """llama.cpp's OpenAI-compatible server (tests/test_llm_openai.py's) on the same tiny GPT-2: the
    K-option distribution through OpenAIBackend equals TransformersBackend's on "<BOS>" + prompt."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _llama_server import MODEL_ALIAS, LlamaServer, gpt2_to_gguf, llama_cpp_available

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed (pip install 'llmsurrogate[serve]'; make test installs it)")
    from llmsurrogate.llm.openai_backend import OpenAIBackend

    gguf = gpt2_to_gguf(hf.path, tmp_path / "gpt2.gguf")
    task = hours_task(3)
    rows = ROWS[list(task.features)].to_dict("records")
    with LlamaServer(gguf, log_path=tmp_path / "server.log") as srv:
        be = OpenAIBackend(MODEL_ALIAS, base_url=srv.url, timeout=30.0, top_logprobs=800, cache=tmp_path / "c")
        _, _, _, got = mc_risk(be, task, rows, return_probabilities=True)
    _, _, _, ref = mc_risk(hf, task, rows, return_probabilities=True,
                           prompt_fn=lambda row, q: "<|endoftext|>" + multiple_choice_prompt(task, row, q))
    print(f"llama.cpp vs transformers: max |Δ prob| {np.abs(got - ref).max():.1e}")
    np.testing.assert_allclose(got, ref, atol=2e-4)  # test_llm_openai.py's PROB_ATOL
