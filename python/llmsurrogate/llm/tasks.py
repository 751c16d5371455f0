"""Immutable task objects: how a row of survey data becomes text, and what the model is asked.

A :class:`Task` holds the feature columns (:class:`Column`: short description and code-to-text
map), the target (column plus an optional :class:`Threshold`), the multiple-choice question
(:class:`MultipleChoiceQuestion` with :class:`AnswerOption` values), the numeric (verbalized)
question and the population description. Every object is a frozen dataclass: there is no global
registry and nothing mutates after construction (folktexts' global task registry was a source of
state bugs, docs/methods/risk.md §4.5/§5.6).

:func:`acs_income_task` builds the folktexts ACSIncome task from the bundled ACS codebooks
(docs/methods/risk.md §1.2-§1.4); its prompt for fixture row 1 is byte-identical to folktexts' golden prompt.

>>> task = acs_income_task()
>>> task.column("OCCP").render(4720.0)
'Cashiers'
>>> task.column("POBP").render(13)
'Georgia'
>>> [o.text for o in task.question.options]
['Below $50,000', 'Above $50,000']
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
import numbers
import operator
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

try:
    import tomllib
except ImportError:  # Python 3.10: the same parser as the tomli package (a dependency there)
    import tomli as tomllib

from .. import datasets
from .._positions import Located, at, located
from .._validation import check_template
from ..exceptions import ColumnNotFoundError, InvalidArgumentError, LLMSurrogateError

__all__ = [
    "Column", "AnswerOption", "MultipleChoiceQuestion", "NumericQuestion", "Threshold", "Task",
    "acs_income_task", "acs_columns", "TEMPLATE_VERSION", "TASK_LAYOUT", "ORDERS", "ALL_ORDERS_MAX_K", "SCALE_MAX_K",
    "ALL_ORDERS_LIMIT_K",
]

#: Bumped whenever a template changes the text it renders; part of every cache key.
TEMPLATE_VERSION = "folktexts-paper-1"

_FORMATS = {
    "int": lambda x, fmt: fmt.format(int(x)),
    "float": lambda x, fmt: fmt.format(float(x)),
    "money": lambda x, fmt: fmt.format(f"${int(x):,}"),
}


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, NaT; pd.NA raises TypeError on bool()
    except TypeError:
        return True


def _code_key(value: Any) -> Any:
    """Codes arrive as floats (``1.0`` when the column has NaNs): 1.0 and 1 and "1" look up alike."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)  # 1.5 and np.float64(1.5) and "1.5" look up alike
    if isinstance(value, str):
        s = value.strip()
        try:
            f = float(s)
        except ValueError:
            return s
        if math.isfinite(f):
            return int(f) if f.is_integer() else f
        return s
    return value


def _row_words(index, row: int) -> Located:
    """``row 3 (0-based)``, and the row's index label where it is not its position (a sorted or
    filtered frame)."""
    label = index[row]
    same = isinstance(label, numbers.Integral) and not isinstance(label, (bool, np.bool_)) and int(label) == row
    return located(at(row, "row", marked=True, note=None if same else f"index label {_plain(label)!r}"))


def _plain(value: Any) -> Any:
    """numpy scalars as Python's, so messages read ``2.5``, not ``np.float64(2.5)``."""
    return value.item() if isinstance(value, np.generic) else value


def _whole_key(value: Any) -> int | None:
    """A data value as the whole number it reads as (``1``, ``1.0``, ``"1"``, ``True``), else None."""
    if isinstance(value, np.bool_):
        return int(value)
    key = _code_key(value)
    return key if isinstance(key, int) else None


def _answer_codes(column_values, column: str, allowed, read, question, missing_ok: bool):
    """``(codes, missing)``: each row's ``read(value)`` looked up in ``allowed`` (a dict key -> code),
    and where the answer is missing; a value that is no option's is an error naming the column, the
    row and the value (``read`` returning None: not a whole number), a missing one too unless
    ``missing_ok``."""
    codes, uniques = column_values.factorize()  # a pandas Series; missing values get -1
    found = []
    for j, value in enumerate(uniques):
        key = read(value)
        if key is None or key not in allowed:
            row = _row_words(column_values.index, int(np.flatnonzero(codes == j)[0]))
            options = (f"the values of the answer options of {question.text!r:.60} "
                       f"({[_plain(o.value) for o in question.options]})" if question is not None
                       else "0 and 1 (a binary label)")
            what = (f"is not a whole number; the labels are {options}" if key is None and read is _whole_key
                    else f"is not one of {options}")
            raise InvalidArgumentError(located(f"column {column!r}: value {_plain(value)!r} at ", row, f" {what}; fix "
                                               "or drop that row (a row without an answer is left out of the "
                                               "evaluation)"))
        found.append(allowed[key])
    missing = codes < 0
    if missing.any() and not missing_ok:
        raise InvalidArgumentError(located(f"column {column!r} has a missing answer at ",
                                           _row_words(column_values.index, int(np.flatnonzero(missing)[0])),
                                           "; drop those rows first"))
    out = np.asarray(found, dtype=np.int64)[np.where(missing, 0, codes)] if found else np.zeros(len(codes), np.int64)
    return out, missing


def _option_index(question, column_values, column: str, missing_ok: bool = False):
    """Each row's answer option (its position in ``question.options``): a data value matches an
    option's value as in :meth:`MultipleChoiceQuestion.key_of` (``1.0``, ``1`` and ``"1"`` alike); a
    value that matches no option is an error naming the column, the row and the value, a missing one
    too unless ``missing_ok`` (then ``(index, missing)``, index 0 where missing)."""
    declared = {}
    for j, o in enumerate(question.options):
        declared.setdefault(_code_key(o.value), j)

    def read(value):
        try:
            key = _code_key(value)
            hash(key)
            return key
        except TypeError:
            return object()  # unhashable: no option's

    index, missing = _answer_codes(column_values, column, declared, read, question, missing_ok)
    return (index, missing) if missing_ok else index


@dataclasses.dataclass(frozen=True)
class Column:
    """One feature column and how its values read as text.

    ``value_map`` is a mapping code -> text (keys normalised so ``1``, ``1.0`` and ``"1"`` agree),
    or a pair ``(kind, format)`` with kind ``"int"``, ``"float"`` or ``"money"`` and a
    ``str.format`` pattern (``("int", "{} years old")``), or a callable. Missing values (NaN,
    None) render as ``missing``. ``value_only`` columns render as ``- {text}`` (paper-era
    behaviour for FER, GCL, PUMA, docs/methods/risk.md §1.3).

    Examples
    --------
    >>> sex = Column("SEX", "sex", {1: "Male", 2: "Female"})
    >>> sex.render("2"), sex.line(1.0), sex.render(float("nan"))
    ('Female', '- The sex is: Male.', 'N/A')
    >>> Column("AGEP", "age", ("int", "{} years old")).line(37.0)
    '- The age is: 37 years old.'
    """

    name: str
    description: str
    value_map: Any
    missing: str = "N/A"
    value_only: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgumentError("Column `name` must be a non-empty string")
        vm = self.value_map
        if isinstance(vm, Mapping):
            object.__setattr__(self, "value_map", tuple((_code_key(k), str(v)) for k, v in vm.items()))
        elif isinstance(vm, (tuple, list)) and len(vm) == 2 and vm[0] in _FORMATS:
            try:  # a format from a task file: plain fields only (`{}` or `{0}`), never `{0.__class__}`
                names = check_template(vm[1], "format", fields=("", "0"))
                if names.count("") > 1 or ("" in names and "0" in names):
                    raise InvalidArgumentError("argument `format` takes one value: write {} once, or {0} as often as "
                                               "needed")
            except InvalidArgumentError as err:
                raise InvalidArgumentError(f"column {self.name!r}: {err}") from None
            object.__setattr__(self, "value_map", (str(vm[0]), str(vm[1])))
        elif isinstance(vm, (tuple, list)) and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in vm):
            object.__setattr__(self, "value_map", tuple((_code_key(k), str(v)) for k, v in vm))
        elif not callable(vm):
            raise InvalidArgumentError(
                f"Column {self.name!r}: `value_map` must be a mapping code -> text, a (kind, format) pair "
                f"with kind in {sorted(_FORMATS)}, or a callable; got {type(vm).__name__}")

    @functools.cached_property
    def _lookup(self) -> dict | None:
        vm = self.value_map
        if isinstance(vm, tuple) and vm and isinstance(vm[0], tuple):
            return dict(vm)
        if vm == ():
            return {}
        return None

    def render(self, value: Any) -> str:
        """The text for one value (``missing`` for NaN/None).

        Raises :class:`InvalidArgumentError` for a code the map does not know (folktexts
        silently writes "N/A"; an unknown code is almost always a data error).

        Examples
        --------
        >>> Column("SEX", "sex", {1: "Male", 2: "Female"}).render(2.0)
        'Female'
        >>> Column("PINCP", "yearly income", ("money", "{}")).render(52000)
        '$52,000'
        >>> Column("SEX", "sex", {1: "Male", 2: "Female"}).render(3)
        Traceback (most recent call last):
        ...
        llmsurrogate.exceptions.InvalidArgumentError: column 'SEX': code 3 is not in its value map (2 codes); fix the data or extend the map
        """
        if _is_missing(value):
            return self.missing
        lookup = self._lookup
        if lookup is not None:
            key = _code_key(value)
            try:
                return lookup[key]
            except (KeyError, TypeError):
                raise InvalidArgumentError(
                    f"column {self.name!r}: code {value!r} is not in its value map "
                    f"({len(lookup)} codes); fix the data or extend the map") from None
        if callable(self.value_map):
            return str(self.value_map(value))
        kind, fmt = self.value_map
        try:
            return _FORMATS[kind](value, fmt)
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"column {self.name!r}: cannot format {value!r} as {kind}: {err}") from None

    def line(self, value: Any, line_format: str | None = None) -> str:
        """The bullet line ``- The {description} is: {text}.`` (or ``- {text}`` for value-only);
        ``line_format`` (a task's, e.g. ``"- {description}: {value}"``) replaces the first form.

        Examples
        --------
        >>> age = Column("AGEP", "age", ("int", "{} years old"))
        >>> age.line(37), age.line(37, "- {description}: {value}")
        ('- The age is: 37 years old.', '- age: 37 years old')
        """
        text = self.render(value)
        if self.value_only:
            return f"- {text}"
        if line_format is not None:
            return line_format.format(description=self.description, value=text)
        return f"- The {self.description} is: {text}."

    def fingerprint(self) -> str:
        """The column's name, description, map and missing text as one string (part of
        :meth:`Task.fingerprint`); a callable map enters by its qualified name.

        Examples
        --------
        >>> Column("SEX", "sex", {1: "Male", 2: "Female"}).fingerprint()
        "('SEX', 'sex', ((1, 'Male'), (2, 'Female')), 'N/A', False)"
        """
        vm = self.value_map
        if callable(vm) and not isinstance(vm, tuple):
            vm = getattr(vm, "__qualname__", repr(vm))
        return repr((self.name, self.description, vm, self.missing, self.value_only))


@dataclasses.dataclass(frozen=True)
class AnswerOption:
    """One answer option: its text, the data value it stands for and its numeric value.

    ``numeric_value`` defaults to ``float(value)``; the binary risk score is the probability of
    the option with the highest numeric value (docs/methods/risk.md §1.6).

    Examples
    --------
    >>> AnswerOption("Above $50,000", 1).numeric_value
    1.0
    >>> AnswerOption("Often", "often", numeric_value=3).numeric_value
    3.0
    """

    text: str
    value: Any
    numeric_value: float | None = None

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text.strip():
            raise InvalidArgumentError("AnswerOption `text` must be a non-empty string")
        broken = [ch for ch in LINE_BREAKS if ch in self.text]
        if broken:  # "Yes.\nC. Maybe" would read as a third option line in the prompt
            raise InvalidArgumentError(
                f"AnswerOption `text` {self.text!r:.80} holds a line break ({broken[0]!r}); an option is one line of "
                f"the prompt, and a break would start a line that reads as another option: write it on one line")
        if self.numeric_value is None:
            try:
                object.__setattr__(self, "numeric_value", float(self.value))
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"AnswerOption {self.text!r}: give `numeric_value` (value {self.value!r} is not a number)") from None
        else:
            object.__setattr__(self, "numeric_value", float(self.numeric_value))


KEYS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: the characters that end a line (``str.splitlines``'s): none may stand in an option's text
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"

#: how the answer orders of a K-option question are averaged (docs/methods/survey.md §7): every
#: one of the K! orders, or the K cyclic rotations of the question's order
ORDERS = ("all", "cyclic")

#: ``orders=None`` averages all K! orders up to this K, the K rotations above it (5! = 120 prompts per row)
ALL_ORDERS_MAX_K = 4

#: ``orders="all"`` is refused above this K: 6! = 720 prompts per row (K = 7 is 5,040 per row, 44 s a row on
#: a CPU tiny model, and the K! orders are built in memory: K = 12 is 479 million); ``orders="cyclic"`` has K
ALL_ORDERS_LIMIT_K = 6

#: the most options a numbered scale (``numeric_scale``) can have: one digit token per level
SCALE_MAX_K = 9


@dataclasses.dataclass(frozen=True)
class MultipleChoiceQuestion:
    """A multiple-choice question; keys A, B, ... go to the options in the order given.

    ``ordered``: the options are the levels of an ordered scale, in the scale's order (a Likert
    item); the K-option metrics then use the order (docs/methods/survey.md). ``numbered``: the
    keys are ``1`` ... ``K`` and the question asks for the level's number (the prompt of
    ``method="numeric_scale"``, made by :meth:`scale`); at most 9 options.

    Examples
    --------
    >>> q = MultipleChoiceQuestion("Is it?", (AnswerOption("No", 0), AnswerOption("Yes", 1)))
    >>> print(q.render())
    Question: Is it?
    A. No.
    B. Yes.
    Answer:
    >>> [tuple(o.text for o in p.options) for p in q.permutations()]
    [('No', 'Yes'), ('Yes', 'No')]
    """

    text: str
    options: tuple
    prefill: str = "Answer:"
    ordered: bool = False
    numbered: bool = False

    def __post_init__(self):
        opts = tuple(self.options)
        if len(opts) < 2:
            raise InvalidArgumentError("a MultipleChoiceQuestion needs at least 2 options")
        if len(opts) > len(KEYS):
            raise InvalidArgumentError(f"at most {len(KEYS)} options are supported")
        if not all(isinstance(o, AnswerOption) for o in opts):
            raise InvalidArgumentError("`options` must be AnswerOption objects")
        texts = [o.text for o in opts]
        if len(set(texts)) != len(texts):
            raise InvalidArgumentError(f"answer options must have distinct texts; got {texts}")
        seen = {}
        for o in opts:  # a data value is matched to an option as _code_key reads it (1, 1.0, "1" and True alike)
            try:
                key = _code_key(o.value)
                first = seen.setdefault(key, o)
            except TypeError:  # an unhashable value: matched by nothing
                raise InvalidArgumentError(f"AnswerOption {o.text!r}: `value` must be a number or a string; got "
                                           f"{o.value!r:.60}") from None
            if first is not o:
                raise InvalidArgumentError(
                    f"the answer options {first.text!r} and {o.text!r} have values that read alike ({first.value!r} "
                    f"and {o.value!r}): an answer in the data could not tell them apart; give each option a distinct "
                    f"value")
        for name in ("ordered", "numbered"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidArgumentError(f"argument `{name}` must be true or false; got {getattr(self, name)!r:.60}")
            object.__setattr__(self, name, bool(getattr(self, name)))
        if self.numbered and len(opts) > SCALE_MAX_K:
            raise InvalidArgumentError(
                f"argument `numbered`: a numbered scale reads one digit per level, so at most {SCALE_MAX_K} options; "
                f"this question has {len(opts)}")
        object.__setattr__(self, "options", opts)

    def __repr__(self) -> str:
        # the dataclass's repr, with ordered/numbered only when set: Task.fingerprint() hashes it,
        # and the fingerprints of questions without them stay as they were
        extra = "".join(f", {name}=True" for name in ("ordered", "numbered") if getattr(self, name))
        return (f"{type(self).__qualname__}(text={self.text!r}, options={self.options!r}, "
                f"prefill={self.prefill!r}{extra})")

    @property
    def keys(self) -> tuple[str, ...]:
        if self.numbered:
            return tuple(str(i + 1) for i in range(len(self.options)))
        return tuple(KEYS[: len(self.options)])

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(o.numeric_value for o in self.options)

    def render(self, prefill: bool = True) -> str:
        """The question, one line per option and (``prefill``) the ``Answer:`` line; a numbered
        scale adds the line asking for the level's number.

        Examples
        --------
        >>> q = MultipleChoiceQuestion("Own or rent?", (AnswerOption("Own", 1), AnswerOption("Rent", 0)))
        >>> print(q.render(prefill=False))
        Question: Own or rent?
        A. Own.
        B. Rent.
        """
        lines = [f"Question: {self.text}"] + [f"{k}. {o.text}." for k, o in zip(self.keys, self.options)]
        if self.numbered:
            lines.append(f"Answer with the number of the level, from 1 to {len(self.options)}.")
        body = "\n".join(lines)
        return body + ("\n" + self.prefill if prefill else "")

    def key_of(self, value: Any) -> str:
        """The answer key of a data value (for few-shot examples).

        Examples
        --------
        >>> q = MultipleChoiceQuestion("Own or rent?", (AnswerOption("Own", 1), AnswerOption("Rent", 0)))
        >>> q.key_of(0), q.key_of("1")
        ('B', 'A')
        """
        key = _code_key(value)
        for k, o in zip(self.keys, self.options):
            if _code_key(o.value) == key:
                return k
        raise InvalidArgumentError(f"value {value!r} matches no answer option of {self.text!r}")

    def permutations(self) -> list["MultipleChoiceQuestion"]:
        """All K! orderings (keys stay A, B, ... by position), the identity first; refused above
        K = 6 (:data:`ALL_ORDERS_LIMIT_K`, 720 orderings), where :meth:`rotations` is the way.

        Examples
        --------
        >>> q = MultipleChoiceQuestion("Size?", tuple(AnswerOption(t, i) for i, t in enumerate("SML")))
        >>> perms = q.permutations()
        >>> len(perms), [o.text for o in perms[1].options], perms[1].key_of(2)
        (6, ['S', 'L', 'M'], 'B')
        """
        self._check_all_orders()
        return [dataclasses.replace(self, options=tuple(p)) for p in itertools.permutations(self.options)]

    def _check_all_orders(self) -> None:
        k = len(self.options)
        if k > ALL_ORDERS_LIMIT_K:
            raise InvalidArgumentError(
                f"argument `orders`: orders='all' takes every one of the K! answer orders, {math.factorial(k):,} "
                f"prompts per row for the {k} options of {self.text!r:.60}; it is refused above "
                f"{ALL_ORDERS_LIMIT_K} options ({math.factorial(ALL_ORDERS_LIMIT_K)} orders). Use orders='cyclic' "
                f"(the {k} rotations: every option once at every key; the default above {ALL_ORDERS_MAX_K} options)")

    def rotations(self) -> list["MultipleChoiceQuestion"]:
        """The K cyclic rotations of the options (keys stay A, B, ... by position), the identity
        first: in rotation ``s`` option ``k`` has key ``(k - s) mod K``, so every option takes
        every key once. For K = 2 the same two orders as :meth:`permutations`, in the same order.

        Examples
        --------
        >>> q = MultipleChoiceQuestion("Size?", tuple(AnswerOption(t, i) for i, t in enumerate("SML")))
        >>> [[o.text for o in r.options] for r in q.rotations()]
        [['S', 'M', 'L'], ['M', 'L', 'S'], ['L', 'S', 'M']]
        """
        k = len(self.options)
        return [dataclasses.replace(self, options=self.options[s:] + self.options[:s]) for s in range(k)]

    def order_scheme(self, orders: str | None = None) -> str:
        """``orders`` checked and resolved: ``"all"`` (K! orders, at most K = 6: 720) or ``"cyclic"``
        (the K rotations); None: ``"all"`` up to K = 4 (24 orders), ``"cyclic"`` above (5! would be
        120 prompts per row).

        Examples
        --------
        >>> q = MultipleChoiceQuestion("Size?", tuple(AnswerOption(t, i) for i, t in enumerate("SMLXY")))
        >>> q.order_scheme(), q.order_scheme("all")
        ('cyclic', 'all')
        >>> q.order_scheme("some")
        Traceback (most recent call last):
        ...
        llmsurrogate.exceptions.InvalidArgumentError: argument `orders` must be one of ['all', 'cyclic'] (or None: 'all' up to 4 options, 'cyclic' above); got 'some'
        """
        if orders is None:
            return "all" if len(self.options) <= ALL_ORDERS_MAX_K else "cyclic"
        if not isinstance(orders, str) or orders not in ORDERS:
            raise InvalidArgumentError(
                f"argument `orders` must be one of {list(ORDERS)} (or None: 'all' up to {ALL_ORDERS_MAX_K} options, "
                f"'cyclic' above); got {orders!r:.60}")
        if orders == "all":
            self._check_all_orders()
        return orders

    def orderings(self, orders: str | None = None) -> list["MultipleChoiceQuestion"]:
        """The answer orders that option-order averaging uses (:meth:`order_scheme`): ``"all"``
        (:meth:`permutations`) or ``"cyclic"`` (:meth:`rotations`).

        Examples
        --------
        >>> q = MultipleChoiceQuestion("Size?", tuple(AnswerOption(t, i) for i, t in enumerate("SMLX")))
        >>> len(q.orderings()), len(q.orderings("cyclic")), len(q.orderings("all"))
        (24, 4, 24)
        """
        return self.permutations() if self.order_scheme(orders) == "all" else self.rotations()

    def scale(self) -> "MultipleChoiceQuestion":
        """The question as a numbered scale: keys ``1`` ... ``K`` in the options' order and a line
        asking for the level's number (``method="numeric_scale"``, docs/methods/survey.md §7).

        Examples
        --------
        >>> q = MultipleChoiceQuestion("How satisfied are you?", tuple(AnswerOption(t, i + 1) for i, t in
        ...                            enumerate(["Not at all", "Somewhat", "Very"])), ordered=True)
        >>> print(q.scale().render())
        Question: How satisfied are you?
        1. Not at all.
        2. Somewhat.
        3. Very.
        Answer with the number of the level, from 1 to 3.
        Answer:
        """
        if len(self.options) > SCALE_MAX_K:
            raise InvalidArgumentError(
                f"argument `method`: 'numeric_scale' reads one digit per level, so at most {SCALE_MAX_K} options; "
                f"the question {self.text!r:.60} has {len(self.options)} (use method='multiple_choice')")
        return dataclasses.replace(self, numbered=True)


@dataclasses.dataclass(frozen=True)
class NumericQuestion:
    """A verbalized-probability question ending in a numeric prefill (docs/methods/risk.md §1.7).

    Examples
    --------
    >>> print(NumericQuestion("What is the probability?").render())
    Question: What is the probability?
    Answer (between 0 and 1): 0.
    """

    text: str
    prefill: str = "Answer (between 0 and 1): 0."

    def render(self, prefill: bool = True) -> str:
        """The question line and (``prefill``) the numeric answer prefill.

        Examples
        --------
        >>> NumericQuestion("How likely?").render(prefill=False)
        'Question: How likely?'
        """
        return f"Question: {self.text}" + ("\n" + self.prefill if prefill else "")


_OPS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le, "==": operator.eq,
        "!=": operator.ne}


@dataclasses.dataclass(frozen=True)
class Threshold:
    """Binarises a raw target: ``Threshold(50000, ">")`` names the label ``PINCP>50000``.

    NaN compares False -> label 0 (folktexts' convention).

    Examples
    --------
    >>> t = Threshold(50000, ">")
    >>> t.name("PINCP"), t.apply([30000, 60000, float("nan")]).tolist()
    ('PINCP>50000', [0, 1, 0])
    """

    value: float
    op: str = ">"

    def __post_init__(self):
        if self.op not in _OPS:
            raise InvalidArgumentError(f"Threshold `op` must be one of {sorted(_OPS)}; got {self.op!r}")

    def name(self, target: str) -> str:
        """The label's name: target, operator, value (a whole float without ``.0``).

        Examples
        --------
        >>> Threshold(50000.0, ">").name("PINCP"), Threshold(2.5, "<=").name("SCORE")
        ('PINCP>50000', 'SCORE<=2.5')
        """
        v = self.value
        v = int(v) if isinstance(v, float) and v.is_integer() else v
        return f"{target}{self.op}{v}"

    def apply(self, values):
        """0/1 int64 labels: ``values op value`` (NaN gives 0).

        Examples
        --------
        >>> Threshold(18, ">=").apply([17, 18, float("nan")])
        array([0, 1, 0])
        """
        arr = np.asarray(values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            out = _OPS[self.op](arr, float(self.value))
        return np.where(np.isnan(arr), 0, out).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class Task:
    """A prediction task: feature columns, target, questions and population description.

    ``respondent``/``year`` fill the ACS description template (docs/methods/risk.md §1.4).
    ``line_format``: how a feature line reads, a template with the fields ``{description}`` and
    ``{value}`` (None: folktexts' ``- The {description} is: {value}.``); prompt variants
    (:func:`llmsurrogate.risk.prompt_variants`) change it.

    Examples
    --------
    >>> task = Task("Owner", columns=(Column("AGEP", "age", ("int", "{} years old")),), target="OWN",
    ...             question=MultipleChoiceQuestion("Does this person own a home?",
    ...                                             (AnswerOption("No", 0), AnswerOption("Yes", 1))))
    >>> task.features, task.label_name, task.question.keys
    (('AGEP',), 'OWN', ('A', 'B'))
    >>> task.column("AGEP").render(40)
    '40 years old'
    """

    name: str
    columns: tuple
    target: str
    question: MultipleChoiceQuestion | None = None
    numeric_question: NumericQuestion | None = None
    threshold: Threshold | None = None
    sensitive_attribute: str | None = None
    respondent: str = "a survey respondent"
    year: int | str = 2018
    population: str = "US residents"
    description: str | None = None
    line_format: str | None = None

    def __post_init__(self):
        if self.line_format is not None:
            check_template(self.line_format, "line_format", fields=("description", "value"))
        cols = tuple(self.columns)
        if not cols:
            raise InvalidArgumentError(f"task {self.name!r} needs at least one feature column")
        names = [c.name for c in cols]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"task {self.name!r}: duplicate columns {names}")
        object.__setattr__(self, "columns", cols)
        if self.question is None and self.numeric_question is None:
            raise InvalidArgumentError(f"task {self.name!r} needs a multiple-choice or a numeric question")

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def label_name(self) -> str:
        return self.threshold.name(self.target) if self.threshold else self.target

    def column(self, name: str) -> Column:
        """The feature column called ``name`` (an error naming the task's columns otherwise).

        Examples
        --------
        >>> acs_income_task().column("SEX").render(1)
        'Male'
        """
        for c in self.columns:
            if c.name == name:
                return c
        raise ColumnNotFoundError(f"task {self.name!r} has no column {name!r}; columns: {list(self.features)}")

    def labels(self, frame):
        """The labels of the rows of ``frame``: the label column if present, else the target
        (binarised by the threshold, if any).

        Binary tasks, and questions with K > 2 options whose values are all whole numbers: integer
        labels (0/1 for a binary task; a binary question with word values, ``"no"``/``"yes"``, gives 1
        for the option with the larger numeric value). A question with K > 2 options whose values are not all whole
        numbers (``"employed"``, ``2.5``): the options' values as declared, one per row, the labels
        of :attr:`RiskScores.probabilities`' columns. A data value matches an option as in
        :meth:`MultipleChoiceQuestion.key_of` (``1.0``, ``1``, ``"1"`` and ``True`` alike); a value
        that matches no option (``2.5`` for options 1, 2, 3; ``2`` for a 0/1 label), or a missing one,
        is an error naming the column, the row and the value (:func:`~llmsurrogate.risk.risk_scores`
        scores rows without an answer and leaves them out of the evaluation). A threshold reads the
        raw target: a missing target gives 0, as in folktexts.

        Examples
        --------
        >>> import pandas as pd
        >>> task = acs_income_task()
        >>> task.labels(pd.DataFrame({"PINCP": [20000, 90000]})), task.labels(pd.DataFrame({"PINCP>50000": [1, 0]}))
        (array([0, 1]), array([1, 0]))
        >>> status = MultipleChoiceQuestion("Employment?", tuple(AnswerOption(t, t.lower(), i) for i, t in
        ...                                 enumerate(["Employed", "Unemployed", "Not in labor force"])))
        >>> work = Task("Work", columns=task.columns[:1], target="ESR", question=status)
        >>> work.labels(pd.DataFrame({"ESR": ["unemployed", " employed"]})).tolist()
        ['unemployed', 'employed']
        >>> work.labels(pd.DataFrame({"ESR": ["employed", "retired"]}))
        Traceback (most recent call last):
        ...
        llmsurrogate.exceptions.InvalidArgumentError: column 'ESR': value 'retired' at row 1 (0-based) is not one of the values of the answer options of 'Employment?' (['employed', 'unemployed', 'not in labor force']); fix or drop that row (a row without an answer is left out of the evaluation)
        """
        labels, missing, column = self.labels_with_missing(frame)
        if missing.any():
            raise InvalidArgumentError(located(f"column {column!r} has a missing answer at ",
                                               _row_words(frame.index, int(np.flatnonzero(missing)[0])),
                                               "; drop those rows first"))
        return labels

    def labels_with_missing(self, frame):
        """``(labels, missing, column)``: :meth:`labels` with rows without an answer allowed:
        ``missing`` (bool, one per row) marks them and their entry of ``labels`` is a placeholder
        (0, or NaN / None for the options' own values); ``column`` is the column read. Every other
        value is checked as :meth:`labels` checks it.

        Examples
        --------
        >>> import pandas as pd
        >>> labels, missing, column = acs_income_task().labels_with_missing(pd.DataFrame({"PINCP>50000": [1, None, 0]}))
        >>> labels[~missing].tolist(), missing.tolist(), column
        ([1, 0], [False, True, False], 'PINCP>50000')
        """
        if self.label_name in frame.columns:
            column = self.label_name
        elif self.target not in frame.columns:
            raise ColumnNotFoundError(f"data has neither {self.label_name!r} nor {self.target!r}")
        elif self.threshold is not None:
            try:
                out = self.threshold.apply(frame[self.target])
            except (TypeError, ValueError):
                raise InvalidArgumentError(f"column {self.target!r} must hold numbers: the threshold "
                                           f"{self.label_name!r} reads it") from None
            return out, np.zeros(len(out), dtype=bool), self.target
        else:
            column = self.target
        q = self.question
        values = frame[column]
        whole = q is None or self.threshold is not None or all(
            isinstance(o.value, numbers.Real) and math.isfinite(float(o.value)) and float(o.value).is_integer()
            for o in q.options)
        if whole:  # whole-number option values (0/1 for most binary tasks): integers, as before K-option questions
            if q is None or self.threshold is not None:  # a 0/1 label
                allowed, about = {0: 0, 1: 1}, None
            else:
                allowed, about = {int(o.value): int(o.value) for o in q.options}, q
            return (*_answer_codes(values, column, allowed, _whole_key, about, missing_ok=True), column)
        index, missing = _option_index(q, values, column, missing_ok=True)
        if len(q.options) == 2:  # binary with word values: 1 for the option with the larger numeric value
            return (index == int(np.argmax(q.values))).astype(np.int64), missing, column
        declared = [o.value for o in q.options]
        plain = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in declared)
        out = np.array(declared, dtype=np.float64 if plain else object)[index]
        out[missing] = np.nan if plain else None
        return out, missing, column

    def with_features(self, subset: Sequence[str]) -> "Task":
        """The same task restricted to ``subset`` (in the task's column order).

        Examples
        --------
        >>> small = acs_income_task().with_features(["SEX", "AGEP"])
        >>> small.name, small.features
        ('ACSIncome_AGEP_SEX', ('AGEP', 'SEX'))
        """
        unknown = [s for s in subset if s not in self.features]
        if unknown:
            raise ColumnNotFoundError(f"task {self.name!r} has no columns {unknown}")
        cols = tuple(c for c in self.columns if c.name in set(subset))
        return dataclasses.replace(self, name=f"{self.name}_" + "_".join(sorted(subset)), columns=cols)

    def fingerprint(self) -> str:
        """A process-stable hash of everything that shapes the prompts (SHA-256, 16 hex chars).

        Examples
        --------
        >>> task = acs_income_task()
        >>> len(task.fingerprint()), task.fingerprint() == task.with_features(task.features[:-1]).fingerprint()
        (16, False)
        """
        parts = [self.name, self.target, repr(self.question), repr(self.numeric_question), repr(self.threshold),
                 self.respondent, str(self.year), self.population, repr(self.description),
                 *[c.fingerprint() for c in self.columns]]
        if self.line_format is not None:  # only then: the fingerprints of tasks without one stay as they were
            parts.append("line_format=" + self.line_format)
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]

    def to_toml(self, path=None) -> str:
        """The task as a TOML task file (the layout of docs/cli.md, "Task files"); written to ``path``
        when given. Returns the text.

        ``Task.from_toml`` (and ``llmsurrogate risk --task FILE``) reads it back to an equal task
        whose prompts are byte-identical. Every column is written out (codes and texts), so the
        file does not depend on the package's codebooks; only a built-in ACS column whose text
        comes from a function (POVPIP) is written as ``codebook = "POVPIP"``. A column whose map is
        another Python function cannot be saved (an error naming the column).

        Examples
        --------
        >>> task = Task("Owner", columns=(Column("SEX", "sex", {1: "Male", 2: "Female"}),), target="OWN",
        ...             question=MultipleChoiceQuestion("Does this person own a home?",
        ...                                             (AnswerOption("No", 0), AnswerOption("Yes", 1))))
        >>> print(task.to_toml())  # doctest: +ELLIPSIS
        # llmsurrogate task file: docs/cli.md, "Task files"
        layout = 1
        name = "Owner"
        target = "OWN"
        ...
        [question]
        text = "Does this person own a home?"
        prefill = "Answer:"
        <BLANKLINE>
        [[question.options]]
        text = "No"
        value = 0
        ...
        [[columns]]
        name = "SEX"
        description = "sex"
        <BLANKLINE>
        [columns.values]
        1 = "Male"
        2 = "Female"
        <BLANKLINE>
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     saved = task.to_toml(pathlib.Path(folder) / "owner.toml")
        ...     Task.from_toml(pathlib.Path(folder) / "owner.toml") == task
        True
        """
        text = _task_toml(self)
        if path is not None:
            from .._atomic import write_text

            write_text(path, text, what="task file")
        return text

    @classmethod
    def from_toml(cls, path) -> "Task":
        """Read a task from a TOML file (the layout of docs/cli.md, "Task files"; :meth:`to_toml`
        writes one).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "income.toml"
        ...     _ = acs_income_task().to_toml(path)
        ...     task = Task.from_toml(path)
        >>> task.name, task.label_name, task == acs_income_task()
        ('ACSIncome', 'PINCP>50000', True)
        """
        p = Path(path)
        try:
            spec = tomllib.loads(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError as err:
            raise InvalidArgumentError(f"could not read task file {p}: it is not UTF-8 text ({err})") from None
        except (OSError, tomllib.TOMLDecodeError) as err:
            raise InvalidArgumentError(f"could not read task file {p}: {err}") from err
        try:
            return task_from_dict(spec)
        except LLMSurrogateError as err:
            raise type(err)(f"task file {p}: {err}") from None


#: The task-file layout :meth:`Task.to_toml` writes (``layout = 1``); a file without ``layout`` is read as 1.
TASK_LAYOUT = 1

_TOP_KEYS = ("name", "target", "sensitive_attribute", "respondent", "year", "population", "description",
             "line_format")


def task_from_dict(spec: Mapping) -> Task:
    """A task from a plain dict: a task file's layout (docs/cli.md, "Task files")::

        layout = 1                     # optional: the layout version Task.to_toml writes
        preset = "ACSIncome"           # optional: start from a built-in task
        features = ["AGEP", "SEX"]     # optional, with preset: a subset of its columns
        name = "MyTask"; target = "Y"; respondent = "..."; year = 2020; population = "..."
        description = "..."            # optional: replaces the population sentence block
        sensitive_attribute = "SEX"    # optional
        [question]  text = "..."; prefill = "Answer:"; ordered = true   (ordered: optional, default false)
        [[question.options]] text = "No"; value = 0        (and numeric_value = ... where needed)
        [numeric_question] text = "..."; prefill = "Answer (between 0 and 1): 0."
        [threshold] value = 50000; op = ">"
        [[columns]] name = "AGEP"; description = "age"; format = "{} years old"; kind = "int"
        [[columns]] name = "SEX"; description = "sex"; values = {1 = "Male", 2 = "Female"}
        [[columns]] name = "OCCP"; codebook = "OCCP"       (a built-in ACS column; name may differ)
        [[columns]] name = "AGEP"                          (a built-in ACS column by its own name)

    Examples
    --------
    >>> task = task_from_dict({"preset": "ACSIncome", "features": ["SEX", "AGEP"], "name": "Short"})
    >>> task.name, task.features
    ('Short', ('AGEP', 'SEX'))
    """
    spec = dict(spec)
    layout = spec.pop("layout", TASK_LAYOUT)
    if layout != TASK_LAYOUT or isinstance(layout, bool):
        raise InvalidArgumentError(f"`layout = {layout!r}`: this version of llmsurrogate reads task files of "
                                   f"layout {TASK_LAYOUT}")
    preset = spec.pop("preset", None)
    if preset is not None:
        presets = {"ACSIncome": acs_income_task}
        if preset not in presets:
            raise InvalidArgumentError(f"task preset {preset!r} unknown; available: {sorted(presets)}")
        base = presets[preset]()
        if "features" in spec:
            features = spec.pop("features")
            if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
                raise InvalidArgumentError(f"`features` must be a list of column names; got {features!r:.60}")
            base = base.with_features(features)
        over = {k: spec.pop(k) for k in _TOP_KEYS if k in spec and k != "target"}
        if spec:
            raise InvalidArgumentError(f"a task file with `preset` takes only features and {list(_TOP_KEYS)} "
                                       f"but target; unknown or not allowed: {sorted(spec)}")
        return dataclasses.replace(base, **over)
    if "features" in spec:
        raise InvalidArgumentError("`features` selects columns of a `preset`; without one, list the [[columns]]")
    cols = []
    columns = spec.pop("columns", [])
    if not isinstance(columns, list) or not all(isinstance(c, Mapping) for c in columns):
        raise InvalidArgumentError("`columns` must be a list of tables ([[columns]] entries)")
    for i, c in enumerate(columns):
        cols.append(_column_from_dict(dict(c), i))
    q = spec.pop("question", None)
    question = None
    if q is not None:
        options = _need(q, "options", "[question]")
        if not isinstance(options, list):
            raise InvalidArgumentError("[question] `options` must be a list of tables {text = ..., value = ...}")
        opts = tuple(AnswerOption(_need(o, "text", f"[question] option {i + 1}"),
                                  _need(o, "value", f"[question] option {i + 1}"), o.get("numeric_value"))
                     for i, o in enumerate(options))
        _no_other_keys(q, ("text", "options", "prefill", "ordered", "numbered"), "[question]")
        for i, o in enumerate(options):
            _no_other_keys(o, ("text", "value", "numeric_value"), f"[question] option {i + 1}")
        flags = {name: q.get(name, False) for name in ("ordered", "numbered")}
        for name, flag in flags.items():
            if not isinstance(flag, bool):
                raise InvalidArgumentError(f"[question] `{name}` must be true or false; got {flag!r:.60}")
        question = MultipleChoiceQuestion(_need(q, "text", "[question]"), opts, q.get("prefill", "Answer:"), **flags)
    nq = spec.pop("numeric_question", None)
    numeric = None
    if nq is not None:
        _no_other_keys(nq, ("text", "prefill"), "[numeric_question]")
        numeric = NumericQuestion(_need(nq, "text", "[numeric_question]"),
                                  nq.get("prefill", "Answer (between 0 and 1): 0."))
    th = spec.pop("threshold", None)
    threshold = None
    if th is not None:
        _no_other_keys(th, ("value", "op"), "[threshold]")
        threshold = Threshold(_need(th, "value", "[threshold]"), th.get("op", ">"))
    for key in ("name", "target"):
        _need(spec, key, "the task file")
    _no_other_keys(spec, _TOP_KEYS, "the task file")
    return Task(columns=tuple(cols), question=question, numeric_question=numeric, threshold=threshold, **spec)


def _column_from_dict(c: dict, i: int) -> Column:
    name = _need(c, "name", f"[[columns]] entry {i + 1}")
    c.pop("name")
    known = {col.name: col for col in acs_columns()}
    if "codebook" in c or (not c and name in known):
        book = c.pop("codebook", name)
        if book not in known:
            raise InvalidArgumentError(f"column {name!r}: no built-in codebook {book!r}; built in: {sorted(known)}")
        _no_other_keys(c, ("description", "missing", "value_only"), f"column {name!r}")
        return dataclasses.replace(known[book], name=name, **c)
    desc = _need(c, "description", f"column {name!r}")
    c.pop("description")
    if "values" in c:
        vm = c.pop("values")
        if not isinstance(vm, Mapping):
            raise InvalidArgumentError(f"column {name!r}: `values` must be a table code -> text; got {vm!r:.60}")
    elif "format" in c:
        vm = (c.pop("kind", "int"), c.pop("format"))
        if vm[0] not in _FORMATS:
            raise InvalidArgumentError(f"column {name!r}: `kind` must be one of {sorted(_FORMATS)}; got {vm[0]!r}")
    else:
        raise InvalidArgumentError(f"column {name!r}: give `values`, `format` or `codebook`")
    col = Column(name, desc, vm, missing=c.pop("missing", "N/A"), value_only=c.pop("value_only", False))
    if c:
        raise InvalidArgumentError(f"column {name!r}: unknown keys {sorted(c)}")
    return col


def _no_other_keys(table: Mapping, allowed: Sequence[str], where: str) -> None:
    extra = sorted(set(table) - set(allowed))
    if extra:
        raise InvalidArgumentError(f"{where}: unknown keys {extra}; allowed: {list(allowed)}")


# --- writing a task file (Task.to_toml) ---------------------------------------------------------------------------

def _toml_str(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, plus DEL, which TOML wants escaped."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any, where: str) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        return repr(v) if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
    if isinstance(value, str):
        return _toml_str(value)
    raise InvalidArgumentError(f"{where}: {value!r:.60} ({type(value).__name__}) cannot be written to a task file "
                               f"(numbers, text and true/false only)")


def _toml_key(code: Any, where: str) -> str:
    if isinstance(code, numbers.Integral) and not isinstance(code, bool):
        return str(int(code))
    if isinstance(code, float) and math.isfinite(code):
        return _toml_str(repr(code))
    if isinstance(code, str):
        return _toml_str(code)
    raise InvalidArgumentError(f"{where}: code {code!r:.60} cannot be written to a task file (numbers and text only)")


def _task_toml(task: Task) -> str:
    out = ['# llmsurrogate task file: docs/cli.md, "Task files"', f"layout = {TASK_LAYOUT}"]

    def put(key, value, where):
        out.append(f"{key} = {_toml_value(value, where)}")

    put("name", task.name, "name")
    put("target", task.target, "target")
    if task.sensitive_attribute is not None:
        put("sensitive_attribute", task.sensitive_attribute, "sensitive_attribute")
    put("respondent", task.respondent, "respondent")
    put("year", task.year, "year")
    put("population", task.population, "population")
    if task.description is not None:
        put("description", task.description, "description")
    if task.line_format is not None:
        put("line_format", task.line_format, "line_format")
    if task.threshold is not None:
        out += ["", "[threshold]"]
        put("value", task.threshold.value, "[threshold] value")
        put("op", task.threshold.op, "[threshold] op")
    if task.question is not None:
        q = task.question
        out += ["", "[question]"]
        put("text", q.text, "[question] text")
        put("prefill", q.prefill, "[question] prefill")
        for name in ("ordered", "numbered"):  # only when set: the files of other questions stay as they were
            if getattr(q, name):
                put(name, True, f"[question] {name}")
        for i, o in enumerate(q.options):
            where = f"[question] option {o.text!r}"
            out += ["", "[[question.options]]"]
            put("text", o.text, where)
            put("value", o.value, where)
            try:
                implied = float(o.value)
            except (TypeError, ValueError):
                implied = None
            if implied != o.numeric_value:
                put("numeric_value", o.numeric_value, where)
    if task.numeric_question is not None:
        out += ["", "[numeric_question]"]
        put("text", task.numeric_question.text, "[numeric_question] text")
        put("prefill", task.numeric_question.prefill, "[numeric_question] prefill")
    known = {c.name: c for c in acs_columns()}
    for col in task.columns:
        where = f"column {col.name!r}"
        out += ["", "[[columns]]"]
        put("name", col.name, where)
        vm = col.value_map
        if callable(vm) and not isinstance(vm, tuple):
            book = next((b for b, c in known.items() if c.value_map is vm), None)
            if book is None:
                raise InvalidArgumentError(
                    f"{where}: its value map is a Python function ({getattr(vm, '__qualname__', vm)!r}), which a "
                    f"task file cannot hold; give a mapping code -> text or a (kind, format) pair")
            put("codebook", book, where)
            ref = known[book]
        else:
            ref = None
        if ref is None or col.description != ref.description:
            put("description", col.description, where)
        if (col.missing != "N/A") if ref is None else (col.missing != ref.missing):
            put("missing", col.missing, where)
        if col.value_only != (ref.value_only if ref is not None else False):
            put("value_only", col.value_only, where)
        if ref is not None:
            continue
        if col._lookup is None:
            put("kind", vm[0], where)
            put("format", vm[1], where)
        else:
            out += ["", "[columns.values]"]
            out += [f"{_toml_key(code, where)} = {_toml_value(text, where)}" for code, text in vm]
    return "\n".join(out) + "\n"


def _bad(msg):
    raise InvalidArgumentError(msg)


def _need(table: Any, key: str, where: str) -> Any:
    """``table[key]`` of a task file's table, or an error saying which key ``where`` lacks."""
    if not isinstance(table, Mapping):
        raise InvalidArgumentError(f"{where} must be a table (key = value pairs); got {table!r:.60}")
    if key not in table:
        raise InvalidArgumentError(f"{where} has no `{key}`; add `{key} = ...`")
    return table[key]


# --- the ACS columns (docs/methods/risk.md §1.3) -----------------------------------------------------------------

def _enum(*texts: str, start: int = 1) -> dict[int, str]:
    return {i + start: t for i, t in enumerate(texts)}


@functools.lru_cache(maxsize=None)
def _codebook(variable: str, transform: str) -> dict[int, str]:
    text = (datasets._data_dir() / "acs_fixture" / f"{variable}.txt").read_text(encoding="utf-8")
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        code, _, label = line.partition(" .")
        label = label.strip()
        if transform == "occp":
            label = label.split("-", 1)[1] if "-" in label else label
            label = label.lower().capitalize()
        elif transform == "before_slash":
            label = label.split("/", 1)[0]
        out[int(code.strip())] = label
    return out


def _povpip(x) -> str:
    r = int(x)
    ctx = ("below the poverty line" if r < 90 else "at or near the poverty line" if r < 110
           else "above the poverty line")
    return f"{r}% of the poverty line income, which is {ctx}"


@functools.lru_cache(maxsize=1)
def acs_columns() -> tuple[Column, ...]:
    """The ACS feature columns with their folktexts descriptions and code-to-text maps.

    Examples
    --------
    >>> columns = {c.name: c for c in acs_columns()}
    >>> columns["MAR"].line(5), columns["POVPIP"].render(250)
    ('- The marital status is: Never married.', '250% of the poverty line income, which is above the poverty line')
    """
    return (
        Column("AGEP", "age", ("int", "{} years old")),
        Column("COW", "class of worker", _enum(
            "Working for a for-profit private company or organization",
            "Working for a non-profit organization", "Working for the local government",
            "Working for the state government", "Working for the federal government",
            "Owner of non-incorporated business, professional practice, or farm",
            "Owner of incorporated business, professional practice, or farm",
            "Working without pay in a for-profit family business or farm",
            "Unemployed and last worked 5 years ago or earlier or never worked")),
        Column("SCHL", "highest educational attainment", _enum(
            "N/A - no schooling completed", "Nursery school / preschool", "Kindergarten", "1st grade only",
            "2nd grade", "3rd grade", "4th grade", "5th grade", "6th grade", "7th grade", "8th grade",
            "9th grade", "10th grade", "11th grade", "12th grade, no diploma", "Regular high school diploma",
            "GED or alternative credential", "Some college, less than 1 year",
            "Some college, 1 or more years, no degree", "Associate's degree", "Bachelor's degree",
            "Master's degree", "Professional degree beyond a bachelor's degree", "Doctorate degree")),
        Column("MAR", "marital status", _enum("Married", "Widowed", "Divorced", "Separated", "Never married")),
        Column("OCCP", "occupation", _codebook("OCCP", "occp")),
        Column("POBP", "place of birth", _codebook("POBP", "before_slash")),
        Column("RELP", "relationship to the reference person in the survey", _enum(
            "The reference person itself", "Husband/wife", "Biological son or daughter",
            "Adopted son or daughter", "Stepson or stepdaughter", "Brother or sister", "Father or mother",
            "Grandchild", "Parent-in-law", "Son-in-law or daughter-in-law", "Other relative",
            "Roomer or boarder", "Housemate or roommate", "Unmarried partner", "Foster child",
            "Other non-relative", "Institutionalized group quarters population",
            "Non-institutionalized group quarters population", start=0)),
        Column("WKHP", "usual number of hours worked per week", ("int", "{} hours"),
               missing="N/A (less than 16 years old, or did not work during the past 12 months)"),
        Column("SEX", "sex", _enum("Male", "Female")),
        Column("RAC1P", "race", _enum(
            "White", "Black or African American", "American Indian", "Alaska Native",
            "American Indian and Alaska Native tribes specified; or American Indian or Alaska Native, "
            "not specified and no other races", "Asian", "Native Hawaiian and Other Pacific Islander",
            "Some other race alone (non-White)", "Two or more races")),
        Column("PINCP", "yearly income", ("money", "{}"), missing="N/A (less than 15 years old)"),
        Column("ST", "resident state", _codebook("ST", "before_slash")),
        Column("DIS", "disability status", _enum("With a disability", "No disability")),
        Column("MIG", "mobility status over the last year", _enum(
            "Lived in the same house one year ago",
            "Lived in a different house, outside the United States and Puerto Rico, one year ago",
            "Lived in a different house in the United States one year ago")),
        Column("CIT", "citizenship status", _enum(
            "Born in the United States",
            "Born in Puerto Rico, Guam, the U.S. Virgin Islands, or the Northern Marianas",
            "Born abroad of American parents", "Naturalized US citizen", "Not a US citizen")),
        Column("JWMNP", "commute time", ("int", "{} minutes"),
               missing="N/A (not a worker, or worker who worked at home)"),
        Column("POVPIP", "income-to-poverty ratio", _povpip),
        Column("FER", "person has given birth within the last year", {
            1: "Person has given birth within the last year.",
            2: "Person has not given birth within the last year."},
            missing="N/A (less than 15 years old, or greater than 50 years old, or male)", value_only=True),
    )


ACS_INCOME_FEATURES = ("AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX", "RAC1P")


@functools.lru_cache(maxsize=1)
def acs_income_task() -> Task:
    """folktexts' ACSIncome task (docs/methods/risk.md §1.2): earns more than $50,000, ten features, RAC1P groups.

    Examples
    --------
    >>> task = acs_income_task()
    >>> task.label_name, len(task.features), task.sensitive_attribute
    ('PINCP>50000', 10, 'RAC1P')
    >>> task.threshold.apply([40000, 75000]).tolist()
    [0, 1]
    """
    by_name = {c.name: c for c in acs_columns()}
    return Task(
        name="ACSIncome",
        columns=tuple(by_name[f] for f in ACS_INCOME_FEATURES),
        target="PINCP",
        threshold=Threshold(50000, ">"),
        question=MultipleChoiceQuestion("What is this person's estimated yearly income?", (
            AnswerOption("Below $50,000", 0), AnswerOption("Above $50,000", 1))),
        numeric_question=NumericQuestion(
            "What is the probability that this person's estimated yearly income is above $50,000 ?"),
        sensitive_attribute="RAC1P",
    )
