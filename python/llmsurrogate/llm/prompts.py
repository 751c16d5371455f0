"""Prompts from rows (docs/methods/risk.md §1.4): multiple choice, numeric (verbalized), few-shot, chat, persona.

Every function takes a :class:`~llmsurrogate.llm.tasks.Task` and one row (a mapping column ->
value) and returns the exact prompt string. The zero-shot multiple-choice prompt for the ACS
fixture row 1 is byte-identical to folktexts' golden prompt::

    >>> from llmsurrogate import datasets
    >>> from llmsurrogate.llm.tasks import acs_income_task
    >>> row = datasets.load_acs_income_rows().iloc[0].to_dict()
    >>> multiple_choice_prompt(acs_income_task(), row) == datasets.load_acs_golden_prompt()
    True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._validation import as_frame, check_template, fill_template, require_columns
from ..exceptions import ColumnNotFoundError, EmptyInputError, InvalidArgumentError
from .tasks import AnswerOption, MultipleChoiceQuestion, NumericQuestion, Task  # noqa: F401 (AnswerOption: examples)

__all__ = [
    "task_description", "information_block", "multiple_choice_prompt", "numeric_prompt", "few_shot_prompt",
    "persona_prompt", "apply_chat_template", "rows_of", "RowChunks", "MC_SYSTEM_PROMPT", "MC_CHAT_PREFILL",
    "NUMERIC_SYSTEM_PROMPT", "COT_PREFILL", "COT_CHAT_PREFILL", "reasoning_of",
]

MC_SYSTEM_PROMPT = ("You are a helpful assistant. You answer multiple-choice questions based on the information "
                    "provided. Respond with a single answer choice.\n")
NUMERIC_SYSTEM_PROMPT = ("You are a helpful assistant. You provide numeric probability estimates based on the "
                         "information provided.\n")
MC_CHAT_PREFILL = "If had to select one of the options, my answer would be"  # (sic), folktexts HEAD
#: chain of thought (docs/methods/risk.md §1.10): the line the reasoning follows, raw and in a chat's assistant turn
COT_PREFILL = "Reasoning: Let's think step by step."
COT_CHAT_PREFILL = "Let's think step by step."


def task_description(task: Task, *, few_shot: bool = False) -> str:
    """The population sentence block, ending with a newline (the task's own ``description`` when
    it has one).

    Examples
    --------
    >>> from llmsurrogate.llm.tasks import acs_income_task
    >>> print(task_description(acs_income_task()), end="")
    The following data corresponds to a survey respondent. The survey was conducted among US residents in 2018. Please answer the question based on the information provided. The data provided is enough to reach an approximate answer.
    >>> task_description(acs_income_task(), few_shot=True).startswith("The following data corresponds to different")
    True
    """
    if task.description is not None:
        return task.description if task.description.endswith("\n") else task.description + "\n"
    if few_shot:
        respondent, phrase, suffix = "different survey respondents", "each question", " for each person"
    else:
        respondent, phrase, suffix = task.respondent, "the question", ""
    return (f"The following data corresponds to {respondent}. The survey was conducted among {task.population} "
            f"in {task.year}. Please answer {phrase} based on the information provided. The data provided is "
            f"enough to reach an approximate answer{suffix}.\n")


def _value(row: Mapping, name: str) -> Any:
    try:
        return row[name]
    except (KeyError, IndexError):
        raise ColumnNotFoundError(f"the row has no column {name!r} (needed by the task); "
                                  f"row columns: {list(row)[:20]}") from None


def information_block(task: Task, row: Mapping) -> str:
    """``Information:`` followed by one bullet line per task column.

    Examples
    --------
    >>> from llmsurrogate.testing import synthetic_income_task
    >>> print(information_block(synthetic_income_task(), {"AGEP": 37, "SCHL": 21, "WKHP": 40, "SEX": 2}))
    Information:
    - The age is: 37 years old.
    - The highest educational attainment is: Bachelor's degree.
    - The usual number of hours worked per week is: 40 hours.
    - The sex is: Female.
    """
    return "Information:\n" + "\n".join(c.line(_value(row, c.name), task.line_format) for c in task.columns)


def _mc(task: Task, question: MultipleChoiceQuestion | None) -> MultipleChoiceQuestion:
    q = question if question is not None else task.question
    if q is None:
        raise InvalidArgumentError(f"task {task.name!r} has no multiple-choice question")
    return q


def multiple_choice_prompt(task: Task, row: Mapping, question: MultipleChoiceQuestion | None = None, *,
                           prefill: bool = True) -> str:
    """Zero-shot multiple-choice prompt; ``question`` overrides the task's (e.g. a permutation).

    Examples
    --------
    >>> from llmsurrogate.testing import synthetic_income_task  # ACSIncome on four columns
    >>> task = synthetic_income_task()
    >>> row = {"AGEP": 37, "SCHL": 21, "WKHP": 40, "SEX": 2}
    >>> print(multiple_choice_prompt(task, row))
    Synthetic US census respondent, 2018. Estimate the income.
    <BLANKLINE>
    Information:
    - The age is: 37 years old.
    - The highest educational attainment is: Bachelor's degree.
    - The usual number of hours worked per week is: 40 hours.
    - The sex is: Female.
    <BLANKLINE>
    Question: What is this person's estimated yearly income?
    A. Below $50,000.
    B. Above $50,000.
    Answer:
    """
    q = _mc(task, question)
    return task_description(task) + "\n" + information_block(task, row) + "\n\n" + q.render(prefill)


def numeric_prompt(task: Task, row: Mapping, question: NumericQuestion | None = None, *,
                   prefill: bool = True) -> str:
    """Zero-shot verbalized-probability prompt ending in ``Answer (between 0 and 1): 0.``.

    Examples
    --------
    >>> from llmsurrogate.testing import synthetic_income_task  # ACSIncome on four columns
    >>> task = synthetic_income_task()
    >>> row = {"AGEP": 37, "SCHL": 21, "WKHP": 40, "SEX": 2}
    >>> print(numeric_prompt(task, row).splitlines()[-1])
    Answer (between 0 and 1): 0.
    """
    q = question if question is not None else task.numeric_question
    if q is None:
        raise InvalidArgumentError(f"task {task.name!r} has no numeric question")
    return task_description(task) + "\n" + information_block(task, row) + "\n\n" + q.render(prefill)


def few_shot_prompt(task: Task, row: Mapping, examples: Sequence[Mapping], labels: Sequence[Any],
                    question: MultipleChoiceQuestion | NumericQuestion | None = None, *,
                    show_question: bool = True, prefill: bool = True) -> str:
    """Few-shot prompt: each example is ``Information:…⏎⏎{question block} {label}⏎⏎``.

    The examples are rendered with the *same* question (and so the same option order) as the
    target row, fixing folktexts' permuted-label bug (docs/methods/risk.md §1.4). For a multiple-choice question
    the label is the answer key of the example's value; for a numeric one the raw label, after the
    prefill without its ``0.`` (``Answer (between 0 and 1): 1``).
    ``prefill=False`` leaves the target row's prefill off (the user turn of a chat prompt, whose
    assistant turn holds the prefill).

    Examples
    --------
    >>> from llmsurrogate.testing import synthetic_income_task  # ACSIncome on four columns
    >>> task = synthetic_income_task()
    >>> row = {"AGEP": 37, "SCHL": 21, "WKHP": 40, "SEX": 2}
    >>> example = {"AGEP": 50, "SCHL": 16, "WKHP": 20, "SEX": 1}
    >>> prompt = few_shot_prompt(task, row, examples=[example, row], labels=[0, 1])
    >>> [line for line in prompt.splitlines() if line.startswith("Answer:")]
    ['Answer: A', 'Answer: B', 'Answer:']
    """
    if len(examples) != len(labels):
        raise InvalidArgumentError(f"few-shot: {len(examples)} examples but {len(labels)} labels")
    q = question if question is not None else (task.question or task.numeric_question)
    if isinstance(q, MultipleChoiceQuestion):
        keys = [q.key_of(v) for v in labels]
    else:
        keys = [str(v) for v in labels]
    parts = [task_description(task, few_shot=True) + "\n"]
    if isinstance(q, NumericQuestion) and q.prefill.endswith("0."):
        answer = q.prefill[:-2].rstrip()  # an example's answer is its label, 0 or 1, not "0. 1"
    else:
        answer = q.prefill
    for ex, key in zip(examples, keys):
        block = q.render(prefill=False) + "\n" + answer if show_question else answer
        parts.append(information_block(task, ex) + "\n\n" + block + f" {key}\n\n")
    last = q.render(prefill) if show_question else (q.prefill if prefill else "")
    parts.append(information_block(task, row) + ("\n\n" + last if last else ""))
    return "".join(parts)


def persona_prompt(template: str, row: Mapping, task: Task | None = None) -> str:
    """A persona prompt in the style of the ESS paper's Prompt 1.

    ``template`` holds ``{COLUMN}`` placeholders; with a ``task`` each value is rendered through
    that column's code-to-text map, otherwise inserted as is (whole floats without ``.0``). Plain
    fields with format specs only (``{AGE:>3}``): attribute or index access (``{AGE.__class__}``),
    conversions (``!r``) and widths above 10,000 are errors naming ``template``.

    Examples
    --------
    >>> persona_prompt("Here is your persona: You are a {AGE}-year-old {SEX}. Do you own a house? "
    ...                "If you own, say 1; if you rent, say 5.", {"AGE": 37.0, "SEX": "male"})
    'Here is your persona: You are a 37-year-old male. Do you own a house? If you own, say 1; if you rent, say 5.'
    """
    if not isinstance(template, str) or not template.strip():
        raise EmptyInputError("argument `template` is empty; give the persona prompt text with {COLUMN} fields")
    names = check_template(template, "template")
    if any(n == "" or n.isdigit() for n in names):
        raise InvalidArgumentError("argument `template` has a positional field ({} or {0}); name the column, "
                                   "e.g. {AGE}")
    values = {}
    for n in names:
        v = _value(row, n)
        if task is not None and n in task.features:
            values[n] = task.column(n).render(v)
        elif isinstance(v, float) and v.is_integer():
            values[n] = str(int(v))
        else:
            values[n] = str(v)
    return fill_template(template, "template", **values)


def apply_chat_template(tokenizer, user: str, *, prefill: str, system: str | None = None) -> str:
    """Chat-formatted prompt ending right after the assistant ``prefill`` (docs/methods/risk.md §1.4).

    Renders ``[system?, user, assistant: prefill]`` with the tokenizer's chat template, then
    truncates after the last occurrence of ``prefill`` (drops end-of-turn tokens). A template
    that rejects the system role (Gemma) gets the system text dropped. Raises if the rendered
    text does not contain the prefill verbatim.

    Examples
    --------
    With the tiny ChatML tokenizer of :mod:`llmsurrogate.testing`:

    >>> import tempfile
    >>> from llmsurrogate.testing import build_tokenizer
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     tokenizer = build_tokenizer(folder)
    >>> print(apply_chat_template(tokenizer, "Is the sky blue?", prefill="Answer:", system="Be brief."))
    <|im_start|>system
    Be brief.<|im_end|>
    <|im_start|>user
    Is the sky blue?<|im_end|>
    <|im_start|>assistant
    Answer:
    """
    def render(messages):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)

    messages = [{"role": "user", "content": user}, {"role": "assistant", "content": prefill}]
    if system:
        try:
            render([{"role": "system", "content": system}, {"role": "user", "content": user}])
            messages = [{"role": "system", "content": system}] + messages
        except Exception:  # noqa: BLE001 - templates raise arbitrary errors for an unsupported role
            pass
    text = render(messages)
    cut = text.rfind(prefill)
    if cut < 0:
        raise InvalidArgumentError("the chat template dropped the assistant prefill; it cannot be used for scoring")
    return text[: cut + len(prefill)]


def reasoning_of(text: str, question: MultipleChoiceQuestion) -> tuple[str, str | None]:
    """A generated chain of thought, cut where the model starts to answer or to write the next
    record (at the question's prefill, ``Answer:``, or a new ``Information:``/``Question:`` line),
    and the answer key it states there or as "the answer is X" (None when it states none).

    Examples
    --------
    >>> q = MultipleChoiceQuestion("Is it?", (AnswerOption("No", 0), AnswerOption("Yes", 1)))
    >>> reasoning_of(" She works full time with a degree.\\nAnswer: B\\n\\nInformation: ...", q)
    (' She works full time with a degree.', 'B')
    >>> reasoning_of(" Young, so the answer is (A).", q)
    (' Young, so the answer is (A).', 'A')
    >>> reasoning_of(" Hard to say.", q)
    (' Hard to say.', None)
    """
    cut = len(text)
    for stop in (question.prefill, "\nInformation:", "\nQuestion:"):
        at = text.find(stop)
        if 0 <= at < cut:
            cut = at
    reasoning = text[:cut].rstrip("\n")
    keys = "".join(question.keys)
    stated = None
    m = re.match(r"\s*\(?([" + keys + r"])\b", text[cut + len(question.prefill):]) if text.startswith(
        question.prefill, cut) else None
    if m is None:
        found = re.findall(r"(?i:answer is):?\s*\(?([" + keys + r"])\b", reasoning)  # keys in upper case only
        stated = found[-1] if found else None
    else:
        stated = m.group(1)
    return reasoning, stated


def rows_of(frame, task: Task) -> list[dict]:
    """The task columns of ``frame`` as a list of dicts, after checking they exist.

    Examples
    --------
    >>> import pandas as pd
    >>> from llmsurrogate.testing import synthetic_income_task
    >>> frame = pd.DataFrame({"AGEP": [37, 50], "SCHL": [21, 16], "WKHP": [40, 20], "SEX": [2, 1], "PINCP": [1, 0]})
    >>> rows_of(frame, synthetic_income_task())[0]  # the label column is left out
    {'AGEP': 37, 'SCHL': 21, 'WKHP': 40, 'SEX': 2}
    """
    df = as_frame(frame, "data")
    if len(df) == 0:
        raise EmptyInputError("argument `data` has no rows")
    require_columns(df, list(task.features), name="data")
    return df[list(task.features)].to_dict("records")


class RowChunks(Sequence):
    """:func:`rows_of` made a slice at a time: the task columns of ``frame``'s rows as dicts, the
    same dicts, but only those of the rows asked for (``chunks[a:b]``, one row, or iterating, 4096
    rows at a time), so that scoring many rows never holds a dict for each (issue 37). The columns
    are checked at once.

    Examples
    --------
    >>> import pandas as pd
    >>> from llmsurrogate.testing import synthetic_income_task
    >>> frame = pd.DataFrame({"AGEP": [37, 50, 61], "SCHL": [21, 16, 1], "WKHP": [40, 20, 0], "SEX": [2, 1, 1]})
    >>> rows = RowChunks(frame, synthetic_income_task())
    >>> len(rows), rows[1:3] == rows_of(frame, synthetic_income_task())[1:3], rows[-1]["AGEP"]
    (3, True, 61)
    """

    #: rows made at a time when iterating
    STEP = 4096

    def __init__(self, frame, task: Task):
        df = as_frame(frame, "data")
        if len(df) == 0:
            raise EmptyInputError("argument `data` has no rows")
        require_columns(df, list(task.features), name="data")
        self._frame = df
        self._columns = list(task.features)

    def __len__(self) -> int:
        return len(self._frame)

    def __getitem__(self, item):
        if isinstance(item, slice):
            return self._frame.iloc[item][self._columns].to_dict("records")
        i = range(len(self))[item]  # an IndexError out of range, negative positions from the end
        return self._frame.iloc[i: i + 1][self._columns].to_dict("records")[0]

    def __iter__(self):
        for a in range(0, len(self), self.STEP):
            yield from self[a: a + self.STEP]
