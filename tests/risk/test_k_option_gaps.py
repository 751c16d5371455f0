"""Questions with K answer options whose values are words (issue 27 follow-up): ``Task.labels``
returns the options' values as declared, balanced few-shot examples spread over the K options,
and scoring, few-shot prompts, the K-option evaluation and ``llmsurrogate risk`` take such a task.

References: hashes and index lists of ``few_shot_examples`` saved from the code before this change
(binary tasks draw the same rows), the task fingerprints of that code, a stand-in model whose answer
distribution is known in closed form, the per-row log loss and Brier score written out, and the
answer key of each few-shot example read back from the option lines of its prompt.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import risk, testing
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.llm.base import CallableBackend
from llmsurrogate.llm.tasks import AnswerOption, Column, MultipleChoiceQuestion, Task, acs_columns, acs_income_task

COLS = {c.name: c for c in acs_columns()}
STATUS = ("employed", "unemployed", "not in labor force")
TEXTS = ("Employed", "Unemployed", "Not in labor force")


def status_task(values=STATUS):
    q = MultipleChoiceQuestion("What is this person's employment status?",
                               tuple(AnswerOption(t, v, i) for i, (t, v) in enumerate(zip(TEXTS, values))))
    return Task("Work", columns=(COLS["AGEP"], COLS["SEX"]), target="ESR", question=q)


#: the stand-in model's answer distribution over (Employed, Unemployed, Not in labor force), by sex
TRUTH = {"Female": (0.5, 0.1, 0.4), "Male": (0.7, 0.2, 0.1)}


def oracle(prompt):
    """The distribution of TRUTH for the last row of the prompt, whatever keys the options have."""
    tail = prompt.rsplit("Information:", 1)[1]
    sex = "Female" if "Female" in tail.split("Question:")[0] else "Male"
    keys = {line[3:-1]: line[0] for line in tail.split("Question:")[1].splitlines() if line[1:3] == ". "}
    return {" " + keys[t]: math.log(p) for t, p in zip(TEXTS, TRUTH[sex])}


def status_rows(n, seed):
    rows = testing.synthetic_census(n, seed=seed)
    rng = np.random.default_rng(seed)
    p = np.array([TRUTH["Female" if s == 2 else "Male"] for s in rows["SEX"]])
    rows["ESR"] = [STATUS[k] for k in (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)]
    return rows


# --- Task.labels ---------------------------------------------------------------------------------

def test_labels_are_the_declared_values_of_word_options():
    task = status_task()
    frame = pd.DataFrame({"ESR": ["unemployed", "employed ", "not in labor force", "employed"]})
    labels = task.labels(frame)
    assert labels.dtype == object and labels.tolist() == ["unemployed", "employed", "not in labor force", "employed"]
    # whole numbers match as in key_of (1.0, 1 and "1" alike) and come back as declared
    mixed = status_task(("employed", 1, 2.5))
    assert mixed.labels(pd.DataFrame({"ESR": ["1", 2.5, "employed", 1.0]})).tolist() == [1, 2.5, "employed", 1]
    floats = status_task((0.5, 1.5, 2.5))  # were truncated to 0, 1, 2 by the integer labels
    out = floats.labels(pd.DataFrame({"ESR": [2.5, 0.5, 1.5]}))
    assert out.dtype == np.float64 and out.tolist() == [2.5, 0.5, 1.5]


def test_binary_and_whole_number_labels_and_fingerprints_unchanged():
    acs = acs_income_task()
    out = acs.labels(pd.DataFrame({"PINCP": [20000, 90000, np.nan]}))
    assert out.dtype == np.int64 and out.tolist() == [0, 1, 0]
    assert acs.labels(pd.DataFrame({"PINCP>50000": [1.0, 0.0]})).tolist() == [1, 0]
    bands = status_task((1, 2, 3))  # whole-number options: integers, as before
    out = bands.labels(pd.DataFrame({"ESR": [3.0, 1.0]}))
    assert out.dtype == np.int64 and out.tolist() == [3, 1]
    # the fingerprints of the code before this change (labels do not enter them)
    assert acs.fingerprint() == "1cba04ced58f18c2"
    assert testing.synthetic_income_task().fingerprint() == "2e012372770aca54"
    assert status_task().fingerprint() == "5ab8dd8eb9f23b0c"


def test_labels_name_the_column_for_unknown_or_missing_answers():
    task = status_task()
    with pytest.raises(InvalidArgumentError, match=r"column 'ESR': value 'retired' at row 1 \(0-based\) is not one of "
                                                   r"the values .*'employed', 'unemployed', 'not in labor force'"):
        task.labels(pd.DataFrame({"ESR": ["employed", "retired"]}))
    with pytest.raises(InvalidArgumentError, match=r"column 'ESR' has a missing answer at row 2 \(0-based\)"):
        task.labels(pd.DataFrame({"ESR": ["employed", "unemployed", None]}))


# --- few-shot examples ----------------------------------------------------------------------------

def _own_task():
    return Task("Owner", columns=(COLS["AGEP"],), target="OWN",
                question=MultipleChoiceQuestion("Own?", (AnswerOption("Yes", 1), AnswerOption("No", 0))))


def test_binary_draws_are_those_of_the_code_before():
    rows = testing.synthetic_census(200, seed=1)
    task = testing.synthetic_income_task()
    saved = {(0, 1): [182], (0, 5): [173, 43, 198, 51, 158], (0, 6): [43, 148, 194, 198, 107, 173],
             (7, 9): [197, 178, 170, 82, 152, 18, 104, 94, 54]}
    for (seed, n), index in saved.items():
        assert few_shot_examples_index(rows, task, n, seed) == index
    # sha256 of every draw for seeds 0..39 and n = 1..9, saved from the code before: a thresholded
    # task, and a binary question without threshold whose options are listed 1 first
    own_rows = rows.assign(OWN=(rows["AGEP"] > 40).astype(int))
    for task, data, digest in ((task, rows, "47aa38d794eb53d154b1b1fddb4674d3acd493c533d78846bfd012862cc92585"),
                               (_own_task(), own_rows,
                                "eb0530c9a9585f3abfd1feac58dec21389b0ecf3a681d44da366bc3131e05b9e")):
        h = hashlib.sha256()
        for seed in range(40):
            for n in range(1, 10):
                h.update(np.asarray(few_shot_examples_index(data, task, n, seed), dtype=np.int64).tobytes())
        assert h.hexdigest() == digest


def few_shot_examples_index(data, task, n, seed):
    return risk.few_shot_examples(data, task, n, seed=seed).index.tolist()


@pytest.mark.parametrize("values", [STATUS, (1, 2, 3)])
@pytest.mark.parametrize("n", [2, 3, 7, 8])
def test_balanced_over_the_k_options(values, n):
    task = status_task(values)
    rows = status_rows(300, seed=2)
    rows["ESR"] = rows["ESR"].map(dict(zip(STATUS, values)))
    ex = risk.few_shot_examples(rows, task, n, seed=5)
    counts = ex["ESR"].value_counts().reindex(list(values), fill_value=0)
    assert len(ex) == n and ex.index.is_unique and sorted(counts) == sorted([n // 3 + (i < n % 3) for i in range(3)])
    pd.testing.assert_frame_equal(ex, rows.loc[ex.index])


def test_the_rows_left_over_go_to_options_drawn_at_random():
    rows = status_rows(300, seed=2)
    task = status_task()
    extra = [risk.few_shot_examples(rows, task, 4, seed=s)["ESR"].value_counts().idxmax() for s in range(600)]
    share = pd.Series(extra).value_counts(normalize=True).reindex(list(STATUS))
    assert (abs(share - 1 / 3) < 0.07).all()  # each option gets the fourth row about a third of the time
    twice = [set(risk.few_shot_examples(rows, task, 5, seed=s)["ESR"].value_counts()) for s in range(50)]
    assert all(c == {2, 1} for c in twice)  # n mod K = 2: two different options get one more row


def test_a_missing_option_is_an_error_naming_n():
    rows = status_rows(60, seed=3)
    rows = rows[rows["ESR"] != "unemployed"]
    with pytest.raises(InvalidArgumentError, match=r"argument `n`: 3 class-balanced .* label unemployed \(ESR\)"):
        risk.few_shot_examples(rows, status_task(), 3)
    assert len(risk.few_shot_examples(rows, status_task(), 3, balanced=False)) == 3


# --- scoring, few-shot prompts, evaluation ----------------------------------------------------------

def test_word_options_score_few_shot_and_evaluate_end_to_end():
    rows = status_rows(60, seed=4)
    task = status_task()
    ex = risk.few_shot_examples(rows, task, 4, seed=1)
    seen = []
    backend = CallableBackend(lambda prompt: seen.append(prompt) or oracle(prompt))
    scored = rows.drop(ex.index)
    rs = risk.risk_scores(scored, task, backend, few_shot=ex)
    assert rs.table["label"].tolist() == scored["ESR"].tolist()
    truth = np.array([TRUTH["Female" if s == 2 else "Male"] for s in scored["SEX"]])
    assert list(rs.probabilities.columns) == list(STATUS)
    np.testing.assert_allclose(rs.probabilities.to_numpy(), truth, rtol=0, atol=1e-7)  # log-probabilities as float32
    # every example's answer is the key of its own answer's option line in that prompt's (permuted) question
    assert len(seen) == 6 * len(scored.drop_duplicates(["AGEP", "SEX"]))
    for prompt in seen:
        blocks = prompt.split("Information:")[1:-1]
        assert len(blocks) == 4
        for block, answer in zip(blocks, ex["ESR"]):
            keys = {line[3:-1]: line[0] for line in block.splitlines() if line[1:3] == ". "}
            assert block.rstrip().endswith(f"Answer: {keys[TEXTS[STATUS.index(answer)]]}")
    # the K-option evaluation with the word labels: the losses written out
    code = np.array([STATUS.index(v) for v in rs.table["label"]])
    p = rs.probabilities.to_numpy()
    log_loss = -np.mean(np.log(p[np.arange(len(code)), code]))
    brier = np.mean(np.sum((p - np.eye(3)[code]) ** 2, axis=1))
    for probs, options in ((rs.probabilities, None), (rs.probabilities.to_numpy(), list(STATUS))):
        ev = risk.evaluate_multiclass(rs.table["label"], probs, options=options, n_boot=20)
        assert ev.metric("log_loss") == pytest.approx(log_loss, abs=1e-12)
        assert ev.metric("brier") == pytest.approx(brier, abs=1e-12)


TASK_FILE = """
name = "Work"
target = "ESR"

[question]
text = "What is this person's employment status?"

[[question.options]]
text = "Employed"
value = "employed"
numeric_value = 0

[[question.options]]
text = "Unemployed"
value = "unemployed"
numeric_value = 1

[[question.options]]
text = "Not in labor force"
value = "not in labor force"
numeric_value = 2

[[columns]]
name = "AGEP"

[[columns]]
name = "SEX"
"""


def test_the_risk_command_takes_word_options(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from click.testing import CliRunner

    from llmsurrogate.cli import cli
    from llmsurrogate.llm.factory import load_task, make_backend

    model = testing.build_model(tmp_path / "model", "gpt2", seed=11)
    rows = status_rows(24, seed=5)
    rows.to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "work.toml").write_text(TASK_FILE)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["risk", "--data", str(tmp_path / "rows.csv"), "--model", str(model), "--task",
                                   str(tmp_path / "work.toml"), "--cache", str(tmp_path / "cache"), "--out", str(out),
                                   "--n-boot", "20", "--few-shot", "3", "--no-plot"])
    assert res.exit_code == 0, res.output
    scores = pd.read_csv(out / "scores.csv")
    probs = [f"prob_{v}" for v in STATUS]
    assert set(scores["label"]) <= set(STATUS)
    # the metrics are Python's K-option evaluation of the scores file's probabilities and labels
    ev = risk.evaluate_multiclass(scores["label"], scores[probs].to_numpy(), options=list(STATUS), n_boot=20, seed=42)
    metrics = pd.read_csv(out / "metrics.csv")
    np.testing.assert_allclose(metrics["value"], ev.metrics["value"], rtol=0, atol=1e-12)
    # and the probabilities are risk_scores' with the same few-shot rows
    import json

    few = json.loads((out / "run.json").read_text())["few_shot_rows"]
    task = load_task(str(tmp_path / "work.toml"))
    backend = make_backend("transformers", str(model), device="cpu")
    py = risk.risk_scores(rows.drop(few), task, backend, few_shot=rows.loc[few], cache=tmp_path / "py-cache")
    np.testing.assert_allclose(scores[probs], py.table[probs], rtol=0, atol=1e-12)


# --- one check of K probabilities, one check of survey weights --------------------------------------

def test_probability_and_weight_errors_print_plain_numbers_and_match_the_binary_metrics():
    y = [0, 1, 2]
    p = np.array([[0.2, 0.3, 0.4], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    with pytest.raises(InvalidArgumentError) as err:
        risk.evaluate_multiclass(y, p, n_boot=10)
    assert "row 0 (0-based) sums to 0.9. Normalise" in str(err.value) and "np.float64" not in str(err.value)
    with pytest.raises(InvalidArgumentError, match=r"in \[0, 1\]; got 1.5 at row 1 \(0-based\), column 0"):
        risk.multiclass_brier(y, np.array([[0.2, 0.3, 0.5], [1.5, -0.5, 0.0], [0.1, 0.1, 0.8]]))
    good = p / p.sum(axis=1, keepdims=True)
    for weights in ([1.0, -1.0, 1.0], [1.0, 1.0], "w", [0.0, 0.0, 0.0]):
        with pytest.raises(Exception) as k_option:
            risk.multiclass_log_loss(y, good, weights=weights)
        with pytest.raises(Exception) as binary:
            risk.evaluate([0, 1, 1], [0.2, 0.7, 0.6], weights=weights, n_boot=10)
        assert type(k_option.value) is type(binary.value) and str(k_option.value) == str(binary.value)


def test_binary_word_values_label_the_larger_option_one_and_bad_labels_are_clear_errors():
    """A binary question with word values ("no"/"yes", numeric values 0/1) labels rows 1 for the
    option with the larger numeric value (it was a bare ValueError from int conversion); a value of
    no option, and a non-numeric column for whole-number options, are errors naming the column."""
    from llmsurrogate.llm.tasks import AnswerOption, MultipleChoiceQuestion, Task, acs_income_task

    base = acs_income_task()
    q = MultipleChoiceQuestion("Smokes?", (AnswerOption("Yes", "yes", 1), AnswerOption("No", "no", 0)))
    task = Task("Smoking", columns=base.columns[:1], target="SMOKES", question=q)
    assert task.labels(pd.DataFrame({"SMOKES": ["yes", "no", "no", "yes"]})).tolist() == [1, 0, 0, 1]
    with pytest.raises(InvalidArgumentError, match="column 'SMOKES': value 'maybe' at row 1"):
        task.labels(pd.DataFrame({"SMOKES": ["yes", "maybe"]}))
    with pytest.raises(InvalidArgumentError, match="column 'PINCP>50000': value 'high' at row 0 .* is not a whole "
                                                   "number; the labels are 0 and 1"):
        base.labels(pd.DataFrame({"PINCP>50000": ["high", "low"]}))


def test_evaluate_of_k_option_scores_points_to_evaluate_multiclass():
    """Issue 34 (a side finding): RiskScores.evaluate() on a K > 2 question failed with "argument `y`
    must hold 0/1 labels; got 'employed'"; it now names the K-option evaluation, and the call it names
    works as written."""
    rows = status_rows(24, seed=5)
    rs = risk.risk_scores(rows, status_task(), CallableBackend(oracle))
    with pytest.raises(InvalidArgumentError, match=r"3 options.*evaluate_multiclass\(rs\.table\['label'\], rs\)"):
        rs.evaluate()
    ev = risk.evaluate_multiclass(rs.table["label"], rs, n_boot=0)
    code = np.array([STATUS.index(v) for v in rs.table["label"]])
    p = rs.probabilities.to_numpy()
    assert ev.metric("log_loss") == pytest.approx(-np.mean(np.log(p[np.arange(len(code)), code])), abs=1e-12)
