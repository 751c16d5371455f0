"""Questions, tasks and scoring at the seams (issue 34 §4): the answers column is read as the
task's options or refused (naming the column, the row and the value), the task and the answers
are checked before any prompt is scored, rows without an answer are scored and left out of the
evaluation (and counted), ``orders="all"`` is bounded and ``orders=`` where it has no effect is an
error, and an option text cannot forge an option line.

References: a recording stand-in backend (``CallableBackend`` over a closed-form answer
distribution) that lists every prompt it is asked to score, so "no prompt was scored" is a fact
about the calls made, not about a flag; the metrics of the labelled rows alone, computed by
:func:`llmsurrogate.risk.evaluate` / ``evaluate_multiclass`` on that subset; a ``--model`` folder
that does not exist, so an error about the answers proves it came before the model was loaded.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import risk, testing
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning
from llmsurrogate.llm.base import CallableBackend
from llmsurrogate.llm.scoring import LLMPredictor
from llmsurrogate.llm.tasks import AnswerOption, MultipleChoiceQuestion, Task, acs_columns, acs_income_task

COLS = {c.name: c for c in acs_columns()}


def recording(p_b=0.7):
    """A stand-in model that puts ``p_b`` on key B (the rest spread over A, C, ...) and records every prompt."""
    seen = []

    def fn(prompt):
        seen.append(prompt)
        return {" A": math.log(1 - p_b), " B": math.log(p_b)}

    return CallableBackend(fn), seen


def bands_task(k=3, values=None):
    values = values if values is not None else tuple(range(1, k + 1))
    q = MultipleChoiceQuestion("How many?", tuple(AnswerOption(f"Band {i + 1}", v) for i, v in enumerate(values)))
    return Task("Bands", columns=(COLS["AGEP"], COLS["SEX"]), target="BAND", question=q)


def rows(n=6, seed=3):
    return testing.synthetic_census(n, seed=seed)[["AGEP", "SEX", "PINCP>50000"]]


def every_prompt(task, data):
    """The prompts of every row of ``data`` under every answer order risk_scores averages."""
    from llmsurrogate.llm.prompts import multiple_choice_prompt, rows_of

    return {multiple_choice_prompt(task, row, q) for row in rows_of(data, task) for q in task.question.orderings()}


# --- Task.labels: every value is one of the options, or an error naming column, row and value --------

def test_a_non_integral_label_for_whole_options_is_an_error_naming_column_row_and_value():
    task = bands_task()
    # 2.5 was cast to 2 and scored as answer 2
    with pytest.raises(InvalidArgumentError, match=r"column 'BAND': value 2.5 at row 1 \(0-based\) is not a whole"):
        task.labels(pd.DataFrame({"BAND": [1.0, 2.5, 3.0]}))
    # 7 is no option's value (was returned as the label 7)
    with pytest.raises(InvalidArgumentError, match=r"column 'BAND': value 7 at row 2 \(0-based\) is not one of the "
                                                   r"values of the answer options .*\[1, 2, 3\]"):
        task.labels(pd.DataFrame({"BAND": [1, 2, 7]}))
    # NaN became -9223372036854775808
    with pytest.raises(InvalidArgumentError, match=r"column 'BAND' has a missing answer at row 1 \(0-based\)"):
        task.labels(pd.DataFrame({"BAND": [1.0, np.nan, 3.0]}))
    # a sorted frame: the row is named by its position and by its index label
    with pytest.raises(InvalidArgumentError, match=r"value 2.5 at row 0 \(0-based; index label 11\)"):
        task.labels(pd.DataFrame({"BAND": [2.5, 1.0]}, index=[11, 4]))
    # the values users hold for these options read as the options, as before
    for column in ([3, 1, 2], [3.0, 1.0, 2.0], ["3", "1", " 2"], np.array([3, 1, 2], dtype=np.int8)):
        out = task.labels(pd.DataFrame({"BAND": column}))
        assert out.dtype == np.int64 and out.tolist() == [3, 1, 2]


def test_binary_labels_are_zero_or_one():
    acs = acs_income_task()
    assert acs.labels(pd.DataFrame({"PINCP>50000": [True, False, 1.0, 0]})).tolist() == [1, 0, 1, 0]
    with pytest.raises(InvalidArgumentError, match=r"column 'PINCP>50000': value 2 at row 1 \(0-based\)"):
        acs.labels(pd.DataFrame({"PINCP>50000": [1, 2]}))
    with pytest.raises(InvalidArgumentError, match=r"column 'PINCP>50000': value 0.5 at row 0 \(0-based\)"):
        acs.labels(pd.DataFrame({"PINCP>50000": [0.5, 1]}))
    with pytest.raises(InvalidArgumentError, match=r"column 'PINCP>50000' has a missing answer at row 1"):
        acs.labels(pd.DataFrame({"PINCP>50000": [1, None]}))


# --- the task and the answers are checked before any prompt is scored ----------------------------------

def test_bad_answers_are_refused_before_any_prompt_is_scored():
    task = bands_task()
    data = rows(4).assign(BAND=[1, 2, 2.5, 3])
    backend, seen = recording()
    with pytest.raises(InvalidArgumentError, match=r"column 'BAND': value 2.5 at row 2"):
        risk.risk_scores(data, task, backend)
    assert seen == []  # was: 24 prompts scored (4 rows x 6 orders), then 2.5 scored as answer 2
    backend, seen = recording()
    with pytest.raises(InvalidArgumentError, match=r"column 'BAND': value 'three' at row 0"):
        risk.risk_scores(rows(2).assign(BAND=["three", 1]), task, backend)
    assert seen == []


def test_options_whose_values_read_alike_are_refused_before_any_prompt_is_scored():
    backend, seen = recording()
    with pytest.raises(InvalidArgumentError, match=r"read alike"):
        # 1 and "1" are the same answer to Task.labels and key_of, and the same prob_1 column
        task = bands_task(values=(1, "1", 2))
        risk.risk_scores(rows(3), task, backend)
    assert seen == []  # was: every prompt scored, then the error from the probability columns
    for values in ((0, 0.0), (1, True), ("yes", " yes")):
        with pytest.raises(InvalidArgumentError, match=r"read alike"):
            MultipleChoiceQuestion("Q?", (AnswerOption("A", values[0], 0), AnswerOption("B", values[1], 1)))


# --- rows without an answer: scored, left out of the evaluation, counted -------------------------------

def test_rows_without_an_answer_are_scored_and_left_out_of_the_evaluation():
    acs = testing.synthetic_income_task()
    data = testing.synthetic_census(40, seed=5)
    model = lambda p: {" A": math.log(0.3), " B": math.log(0.7)} if "Female" in p else \
        {" A": math.log(0.6), " B": math.log(0.4)}
    full = risk.risk_scores(data, acs, CallableBackend(model))
    holes = data.copy()
    holes["PINCP>50000"] = holes["PINCP>50000"].astype(float)
    gone = [0, 7, 8, 30]
    holes.loc[gone, "PINCP>50000"] = np.nan
    seen = []
    res = risk.risk_scores(holes, acs, CallableBackend(lambda p: seen.append(p) or model(p)))
    assert set(seen) == every_prompt(acs, data)  # every row scored, both orders
    np.testing.assert_array_equal(res.scores, full.scores)
    assert res.unlabelled == 4 and res.meta["unlabelled_rows"] == 4 and full.unlabelled == 0
    assert res.table["label"].isna().tolist() == [i in gone for i in range(40)]
    kept = [i for i in range(40) if i not in gone]
    assert res.table["label"].dropna().astype(int).tolist() == data["PINCP>50000"].iloc[kept].tolist()
    assert "without an answer" in res.summary().as_text() and "4" in res.summary().as_text()
    with pytest.warns(LLMSurrogateWarning, match=r"4 of 40 rows have no answer"):
        ev = res.evaluate(groups=data["SEX"].to_numpy(), n_boot=20, seed=1)
    ref = risk.evaluate(data["PINCP>50000"].iloc[kept], full.scores[kept], data["SEX"].to_numpy()[kept],
                        n_boot=20, seed=1)
    pd.testing.assert_frame_equal(ev.metrics, ref.metrics)
    pd.testing.assert_frame_equal(ev.groups, ref.groups)
    assert ev.meta["n"] == 36
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full.evaluate(n_boot=0)  # every row labelled: no warning


def test_prompt_variations_judge_the_rows_with_an_answer():
    task = testing.synthetic_income_task()
    data = testing.synthetic_census(30, seed=2)
    model = lambda p: {" A": math.log(0.3), " B": math.log(0.7)} if "Female" in p.rsplit("Question", 1)[0] else \
        {" A": math.log(0.55), " B": math.log(0.45)}
    holes = data.astype({"PINCP>50000": float})
    holes.loc[[1, 4], "PINCP>50000"] = np.nan
    got = risk.prompt_variations(holes, task, CallableBackend(model), n_boot=30, seed=3)  # was: a pandas error
    ref = risk.prompt_variations(data.drop(index=[1, 4]), task, CallableBackend(model), n_boot=30, seed=3)
    pd.testing.assert_frame_equal(got.metrics, ref.metrics)


def test_k_option_rows_without_an_answer_are_scored_and_the_rest_evaluated():
    task = bands_task()
    data = rows(12, seed=4).assign(BAND=[1, 2, 3, None, 1, 2, 3, 3, None, 1, 2, 2])
    backend, seen = recording()
    res = risk.risk_scores(data, task, backend)
    assert set(seen) == every_prompt(task, data) and res.unlabelled == 2
    assert res.table["label"].isna().sum() == 2
    kept = res.table["label"].notna().to_numpy()
    ref = risk.evaluate_multiclass(data["BAND"][kept].astype(int).to_numpy(), res.probabilities[kept].to_numpy(),
                                   options=[1, 2, 3], n_boot=0)
    got = risk.evaluate_multiclass(res.table["label"][kept].astype(int).to_numpy(),
                                   res.probabilities[kept].to_numpy(), options=[1, 2, 3], n_boot=0)
    pd.testing.assert_frame_equal(got.metrics, ref.metrics)


# --- orders: bounded, and an error where it has no effect --------------------------------------------

def test_orders_all_is_refused_above_the_bound_before_any_work():
    task = bands_task(7)
    backend, seen = recording()
    with pytest.raises(InvalidArgumentError, match=r"orders='all'.*5,040 prompts per row for the 7 options.*orders='cyclic'"):
        risk.risk_scores(rows(1), task, backend, orders="all")
    assert seen == []  # was: 5,040 prompts for the one row
    from llmsurrogate.llm.tasks import ALL_ORDERS_LIMIT_K

    assert ALL_ORDERS_LIMIT_K == 6
    assert len(bands_task(6).question.orderings("all")) == 720
    with pytest.raises(InvalidArgumentError, match=r"orders='cyclic'"):
        bands_task(8).question.permutations()  # K = 12 exhausted memory in itertools.permutations
    with pytest.raises(InvalidArgumentError, match=r"orders='cyclic'"):
        LLMPredictor(backend, task, orders="all")
    assert len(task.question.orderings("cyclic")) == 7 and len(task.question.orderings()) == 7


def test_orders_where_it_has_no_effect_is_an_error():
    task = bands_task()
    for kwargs in ({"correct_order_bias": False}, {"method": "numeric_scale"}):
        backend, seen = recording()
        with pytest.raises(InvalidArgumentError, match=r"argument `orders`"):
            risk.risk_scores(rows(2), task, backend, orders="cyclic", **kwargs)
        assert seen == []
    backend, seen = recording()
    with pytest.raises(InvalidArgumentError, match=r"argument `orders`"):
        risk.risk_scores(testing.synthetic_census(2), testing.synthetic_income_task(), backend, method="numeric",
                         orders="all")
    # where it chooses the orders it is taken, and None stays the default
    backend, seen = recording()
    risk.risk_scores(rows(2), task, backend, orders="cyclic")
    assert len(seen) == 2 * 3


def test_orders_where_it_has_no_effect_is_an_error_for_the_predictor_and_mc_risk():
    from llmsurrogate.llm.prompts import rows_of
    from llmsurrogate.llm.scoring import mc_risk

    task = bands_task()
    backend, seen = recording()
    for kwargs in ({"method": "numeric_scale"}, {"correct_order_bias": False}):
        with pytest.raises(InvalidArgumentError, match=r"argument `orders`.*would do nothing"):
            LLMPredictor(backend, task, orders="cyclic", **kwargs)  # was: taken, and ignored
    with pytest.raises(InvalidArgumentError, match=r"argument `orders`.*would do nothing"):
        mc_risk(backend, task, rows_of(rows(2), task), orders="all", correct_order_bias=False)
    assert seen == []
    assert LLMPredictor(backend, task, orders="cyclic").orders == "cyclic"


# --- an option text cannot forge an option line -------------------------------------------------------

@pytest.mark.parametrize("text", ["Yes.\nC. Maybe", "Yes\r\nC. Maybe", "Yes\rC", "Yes\u2028C. Maybe", "Yes\x0bC"])
def test_an_option_text_with_a_line_break_is_refused(text):
    with pytest.raises(InvalidArgumentError, match=r"line break"):
        AnswerOption(text, 1)


def test_a_task_file_option_with_a_newline_is_refused(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('name = "T"\ntarget = "Y"\n[question]\ntext = "Q?"\n[[question.options]]\ntext = "No"\n'
                    'value = 0\n[[question.options]]\ntext = "Yes.\\nC. Maybe"\nvalue = 1\n'
                    '[[columns]]\nname = "AGEP"\n')
    with pytest.raises(InvalidArgumentError, match=r"t.toml.*line break"):
        Task.from_toml(path)


# --- the command: the same checks before the model is loaded, the count in its words ------------------

def _cli(tmp_path, data, task_text, *args, model=None):
    from click.testing import CliRunner

    from llmsurrogate.cli import cli

    data.to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "task.toml").write_text(task_text)
    return CliRunner().invoke(cli, ["risk", "--data", str(tmp_path / "rows.csv"), "--task", str(tmp_path / "task.toml"),
                                    "--model", str(model or tmp_path / "no-such-model"), "--cache",
                                    str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--n-boot", "20",
                                    "--no-plot", *args])


def test_the_command_refuses_bad_answers_and_orders_before_loading_the_model(tmp_path):
    # the model folder does not exist: an error about the answers proves nothing was loaded or scored
    res = _cli(tmp_path, rows(4).assign(BAND=[1, 2.5, 3, 1]), bands_task().to_toml())
    assert res.exit_code != 0
    assert "column 'BAND': value 2.5 at row 1" in res.output, res.output  # was: exit 0 with a model, 2.5 scored as 2
    res = _cli(tmp_path, rows(2).assign(BAND=[1, 2]), bands_task(7).to_toml(), "--orders", "all")
    assert res.exit_code != 0 and "--orders cyclic" in res.output and "5,040" in res.output, res.output


def test_the_command_scores_rows_without_an_answer_and_says_how_many_were_left_out(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from llmsurrogate.llm.factory import make_backend

    model = testing.build_model(tmp_path / "model", "gpt2", seed=11)
    data = testing.synthetic_census(30, seed=5)
    task = testing.synthetic_income_task()
    holes = data.astype({"PINCP>50000": float})
    holes.loc[[2, 3, 17], "PINCP>50000"] = np.nan
    res = _cli(tmp_path, holes, task.to_toml(), model=model)
    assert res.exit_code == 0, res.output
    assert "3 of 30 rows have no answer" in res.output
    meta = json.loads((tmp_path / "out" / "run.json").read_text())
    assert meta["unlabelled_rows"] == 3
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert len(scores) == 30 and scores["label"].isna().sum() == 3
    py = risk.risk_scores(data, task, make_backend("transformers", str(model), device="cpu"))
    np.testing.assert_allclose(scores["score"], py.scores, rtol=0, atol=1e-12)
    kept = [i for i in range(30) if i not in (2, 3, 17)]
    ref = risk.evaluate(data["PINCP>50000"].iloc[kept], py.scores[kept], n_boot=20, seed=42)
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv")
    np.testing.assert_allclose(metrics["value"], ref.metrics["value"], rtol=0, atol=1e-12)
