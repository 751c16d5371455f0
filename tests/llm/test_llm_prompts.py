"""Prompts from rows: the folktexts golden prompt byte for byte, variants, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _samples import TASK_TOML
from llmsurrogate import datasets
from llmsurrogate.exceptions import (
    ColumnNotFoundError,
    EmptyInputError,
    InvalidArgumentError,
)
from llmsurrogate.llm import prompts as P
from llmsurrogate.llm.tasks import (
    AnswerOption,
    Column,
    MultipleChoiceQuestion,
    Task,
    Threshold,
    acs_income_task,
    task_from_dict,
)

ROWS = datasets.load_acs_income_rows()
TASK = acs_income_task()


def test_golden_prompt_byte_for_byte():
    golden = datasets.load_acs_golden_prompt()
    prompt = P.multiple_choice_prompt(TASK, ROWS.iloc[0].to_dict())
    assert prompt.encode("utf-8") == golden.encode("utf-8")
    assert prompt.endswith("Answer:")


def test_every_fixture_row_renders_codebook_text():
    texts = [P.multiple_choice_prompt(TASK, r) for r in ROWS.to_dict("records")]
    # docs/methods/risk.md §6.5 codebook entries
    assert "- The occupation is: Orderlies and psychiatric aides." in texts[1]
    assert "- The place of birth is: Indiana." in texts[1]
    assert "- The occupation is: Police officers." in texts[4]
    assert "- The place of birth is: Florida." in texts[4]
    assert "- The occupation is: Social and community service managers." in texts[5]
    assert "- The place of birth is: Mexico." in texts[8]
    assert "- The occupation is: Electricians." in texts[9]
    assert all("N/A" not in t for t in texts)


def test_float_codes_map_like_ints_and_nan_uses_fill():
    row = ROWS.iloc[0].to_dict()
    as_int = {k: (int(v) if isinstance(v, float) else v) for k, v in row.items()}
    assert P.multiple_choice_prompt(TASK, as_int) == P.multiple_choice_prompt(TASK, row)
    row["WKHP"] = float("nan")
    text = P.multiple_choice_prompt(TASK, row)
    assert ("- The usual number of hours worked per week is: N/A (less than 16 years old, or did not work "
            "during the past 12 months).") in text
    row["COW"] = None
    assert "- The class of worker is: N/A." in P.multiple_choice_prompt(TASK, row)


def test_numeric_prompt_ends_with_prefill():
    text = P.numeric_prompt(TASK, ROWS.iloc[0].to_dict())
    golden = datasets.load_acs_golden_prompt()
    head = golden[: golden.index("Question:")]
    assert text == head + ("Question: What is the probability that this person's estimated yearly income is "
                           "above $50,000 ?\nAnswer (between 0 and 1): 0.")


def test_permutation_swaps_choices():
    q1, q2 = TASK.question.permutations()
    t2 = P.multiple_choice_prompt(TASK, ROWS.iloc[0].to_dict(), q2)
    assert t2.endswith("A. Above $50,000.\nB. Below $50,000.\nAnswer:")
    assert q1 == TASK.question
    three = MultipleChoiceQuestion("Q?", (AnswerOption("a", 0), AnswerOption("b", 1), AnswerOption("c", 2)))
    perms = three.permutations()
    assert len(perms) == 6 and len({tuple(o.text for o in p.options) for p in perms}) == 6


def test_few_shot_uses_the_permuted_question_for_examples():
    ex = ROWS.iloc[[5, 0]].to_dict("records")
    labels = [1, 0]
    _, swapped = TASK.question.permutations()
    text = P.few_shot_prompt(TASK, ROWS.iloc[1].to_dict(), ex, labels, swapped)
    assert text.startswith("The following data corresponds to different survey respondents. The survey was "
                           "conducted among US residents in 2018. Please answer each question based on the "
                           "information provided. The data provided is enough to reach an approximate answer "
                           "for each person.\n\nInformation:\n- The age is: 52 years old.")
    blocks = text.split("Information:\n")
    assert len(blocks) == 4
    # label 1 = "Above" which is key A in the swapped question; label 0 -> B
    assert blocks[1].endswith("A. Above $50,000.\nB. Below $50,000.\nAnswer: A\n\n")
    assert blocks[2].endswith("Answer: B\n\n")
    assert blocks[3].endswith("Answer:")
    assert P.information_block(TASK, ROWS.iloc[1].to_dict()) == "Information:\n" + blocks[3].split("\n\n")[0]


def test_value_only_column_renders_paper_style():
    fer = Column("FER", "person has given birth within the last year",
                 {1: "Person has given birth within the last year."}, value_only=True)
    assert fer.line(1.0) == "- Person has given birth within the last year."


def test_persona_prompt_like_ess_prompt_1():
    template = ("Here is your persona: You are a {AGEP}-year-old living in {POBP}. Your sex is {SEX}.\n"
                "Given your persona, do you earn more than $50,000? If yes, say 1; if no, say 0.")
    text = P.persona_prompt(template, ROWS.iloc[0].to_dict(), TASK)
    assert text.startswith("Here is your persona: You are a 18 years old-year-old")  # column rendering applies
    plain = P.persona_prompt(template, {"AGEP": 37.0, "POBP": "Tennessee", "SEX": "male"})
    assert plain.startswith("Here is your persona: You are a 37-year-old living in Tennessee. Your sex is male.")
    with pytest.raises(ColumnNotFoundError):
        P.persona_prompt(template, {"AGEP": 3})
    with pytest.raises(EmptyInputError):
        P.persona_prompt("  ", {})


def test_bad_input():
    with pytest.raises(ColumnNotFoundError, match="did you mean"):
        P.rows_of(ROWS.rename(columns={"OCCP": "OCCP2"}), TASK)
    with pytest.raises(EmptyInputError):
        P.rows_of(ROWS.iloc[:0], TASK)
    bad = ROWS.iloc[0].to_dict()
    bad["OCCP"] = 1.0  # no such occupation code
    with pytest.raises(InvalidArgumentError, match="OCCP"):
        P.multiple_choice_prompt(TASK, bad)
    with pytest.raises(InvalidArgumentError, match="distinct"):
        MultipleChoiceQuestion("Q", (AnswerOption("x", 0), AnswerOption("x", 1)))
    with pytest.raises(InvalidArgumentError):
        Task("t", (), "y", question=TASK.question)


def test_threshold_and_labels():
    th = Threshold(50000, ">")
    assert th.name("PINCP") == "PINCP>50000"
    assert th.apply([60000, 50000, np.nan]).tolist() == [1, 0, 0]
    assert TASK.labels(ROWS).tolist() == ROWS["PINCP>50000"].tolist()
    assert TASK.labels(pd.DataFrame({"PINCP": [1e5, 10.0]})).tolist() == [1, 0]




def test_task_from_toml(tmp_path):
    f = tmp_path / "task.toml"
    f.write_text(TASK_TOML)
    task = Task.from_toml(f)
    text = P.multiple_choice_prompt(task, {"AGEP": 30, "SEX": 2})
    assert "conducted among US adults in 2021" in text
    assert "- The age is: 30 years old.\n- The sex is: Female.\n\nQuestion: Does this person smoke?" in text
    preset = task_from_dict({"preset": "ACSIncome", "features": ["SEX", "AGEP"]})
    assert preset.features == ("AGEP", "SEX") and preset.name == "ACSIncome_AGEP_SEX"
    assert preset.fingerprint() != TASK.fingerprint()
    assert acs_income_task().fingerprint() == TASK.fingerprint()


def test_few_shot_prompt_numeric_answers_and_no_prefill():
    """A numeric example's answer is its label after the prefill without "0." (it read "0. 1" before);
    prefill=False ends the prompt at the row's question (a chat prompt's user turn)."""
    rows = ROWS.to_dict("records")
    text = P.few_shot_prompt(TASK, rows[0], rows[1:3], [1, 0], TASK.numeric_question)
    assert [line for line in text.splitlines() if line.startswith("Answer")] == [
        "Answer (between 0 and 1): 1", "Answer (between 0 and 1): 0", "Answer (between 0 and 1): 0."]
    full = P.few_shot_prompt(TASK, rows[0], rows[1:3], [1, 0])
    cut = P.few_shot_prompt(TASK, rows[0], rows[1:3], [1, 0], prefill=False)
    assert full == cut + "\nAnswer:" and cut.endswith("B. Above $50,000.")
    zero = P.multiple_choice_prompt(TASK, rows[0], prefill=False)
    assert cut.endswith(zero[zero.index("Information:"):])  # the row's block is the zero-shot one
