"""The two forecasting prompts of Gao, Jiang & Yan (2026) and the parsing of their answers
(docs/methods/lookahead.md §3; spec ``lookahead.md`` §3.1-§3.3).

* :data:`NEWS_TEMPLATE` (Figure I) and :data:`EARNINGS_CALL_TEMPLATE` (Figure II): ``str.format``
  templates, byte for byte as the spec gives them (``{{``/``}}`` are literal braces; no trailing
  newline; Figure I's "(0-1)" with a hyphen, Figure II's "(0–1)" with an en dash).
* :func:`news_prompt`, :func:`earnings_call_prompt` fill them (the transcript is cut to its first
  512 whitespace-separated words, re-joined with single spaces).
* :func:`parse_answer` / :func:`parse_answers`: the label of the first line mapped to the signal
  (news: good +1, neutral 0, bad -1; CapEx: five levels from -1 to +1) and the confidence of the
  second brace block (or second line); unparseable parts are NaN and counted.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._validation import check_int
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning

__all__ = ["NEWS_TEMPLATE", "EARNINGS_CALL_TEMPLATE", "NEWS_LABELS", "EARNINGS_CALL_LABELS", "TRANSCRIPT_WORDS",
           "news_prompt", "earnings_call_prompt", "first_words", "ParsedAnswer", "parse_answer", "parse_answers"]

#: Figure I (news headline). ``variant="return"`` of :func:`news_prompt` replaces "stock price" by
#: "stock return" (the paper's footnote 5 robustness check).
NEWS_TEMPLATE = (
    'Here is a piece of news: "({date:%Y-%m-%d}) {headline}"\n'
    "Do you think this news is good, bad, or neutral for the stock price of {company_name} ({ticker}) "
    "in the short term?\n"
    "Write your answer as:\n"
    "{{good/ bad / neutral}}\n"
    "{{confidence (0-1):}}\n"
    "{{explanation (less than 25 words)}}"
)

#: Figure II (earnings-call excerpt; CapEx forecast).
EARNINGS_CALL_TEMPLATE = (
    "Here is an excerpt from the earnings call transcript of {company_name} ({ticker}):\n"
    "{event_title}\n"
    '"{first_512_words}"\n'
    "Do you think the company {company_name} ({ticker}) plans to increase or decrease its capital "
    "expenditures over the next year?\n"
    "Write your answer as:\n"
    "{{significantly_increase / slightly_increase / no_change / slightly_decrease / significantly_decrease}}\n"
    "{{confidence (0\u20131):}}\n"
    "{{explanation (less than 25 words):}}"
)

#: Answer labels and their signals (spec §3.3).
NEWS_LABELS = {"good": 1.0, "neutral": 0.0, "bad": -1.0}
EARNINGS_CALL_LABELS = {"significantly_increase": 1.0, "slightly_increase": 0.5, "no_change": 0.0,
                        "slightly_decrease": -0.5, "significantly_decrease": -1.0}
_LABELS = {"news": NEWS_LABELS, "earnings_call": EARNINGS_CALL_LABELS}

#: Words of the transcript put in the earnings-call prompt (paper §3.4; its §3.2 says 500).
TRANSCRIPT_WORDS = 512


def _date(value: Any) -> _dt.date:
    if type(value).__name__ == "NaTType":  # pandas' NaT is a datetime that strftime refuses
        raise InvalidArgumentError("argument `date` is missing (NaT); give a date, a datetime or an ISO string "
                                   "'YYYY-MM-DD'")
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            pass
    else:  # pandas Timestamp, numpy datetime64
        try:
            ts = pd.Timestamp(value)
            if not pd.isna(ts):
                return ts.date()
        except (TypeError, ValueError):
            pass
    raise InvalidArgumentError(f"argument `date` must be a date, a datetime or an ISO string 'YYYY-MM-DD'; got {value!r}")


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"argument `{name}` must be a non-empty string; got {value!r}")
    return value


def news_prompt(headline: str, date: Any, company_name: str, ticker: str, *, variant: str = "price") -> str:
    """The Figure I prompt for one headline.

    Examples
    --------
    >>> print(news_prompt("Kodak Triples on Loan to Make Covid-19 Drug Ingredients.", "2020-07-28",
    ...                   "Eastman Kodak Company", "KODK").splitlines()[0])
    Here is a piece of news: "(2020-07-28) Kodak Triples on Loan to Make Covid-19 Drug Ingredients."
    """
    if variant not in ("price", "return"):
        raise InvalidArgumentError(f"argument `variant` must be 'price' or 'return'; got {variant!r}")
    template = NEWS_TEMPLATE if variant == "price" else NEWS_TEMPLATE.replace("stock price", "stock return")
    return template.format(date=_date(date), headline=_text(headline, "headline"),
                           company_name=_text(company_name, "company_name"), ticker=_text(ticker, "ticker"))


def first_words(text: str, n: int = TRANSCRIPT_WORDS) -> str:
    """The first ``n`` whitespace-separated words of ``text``, joined with single spaces.

    Examples
    --------
    >>> first_words("  one two\\n three   four ", 3)
    'one two three'
    """
    n = check_int(n, "n", minimum=1)
    return " ".join(_text(text, "transcript").split()[:n])


def earnings_call_prompt(transcript: str, company_name: str, ticker: str, event_title: str, *,
                         words: int = TRANSCRIPT_WORDS) -> str:
    """The Figure II prompt: the first ``words`` words of the transcript (whitespace-split and
    re-joined with single spaces).

    Examples
    --------
    >>> prompt = earnings_call_prompt("Good morning.  We   expect capex to rise.", "Eastman Kodak Company", "KODK",
    ...                               "Q2 2020 Earnings Call", words=3)
    >>> prompt.splitlines()[1:3]
    ['Q2 2020 Earnings Call', '"Good morning. We"']
    """
    words = check_int(words, "words", minimum=1)
    return EARNINGS_CALL_TEMPLATE.format(company_name=_text(company_name, "company_name"),
                                         ticker=_text(ticker, "ticker"),
                                         event_title=_text(event_title, "event_title"),
                                         first_512_words=first_words(transcript, words))


@dataclasses.dataclass(frozen=True)
class ParsedAnswer:
    """One parsed answer: ``label`` (None when unparseable), ``signal`` (NaN when unparseable),
    ``confidence`` in [0, 1] (NaN when missing or out of range), ``confidence_rescaled`` (a value in
    (1, 100] divided by 100).

    Examples
    --------
    >>> answer = parse_answer("{neutral}\\n{0.6}\\n{Priced in.}")   # a ParsedAnswer
    >>> answer.label, answer.signal, answer.confidence
    ('neutral', 0.0, 0.6)
    """

    label: str | None
    signal: float
    confidence: float
    confidence_rescaled: bool = False


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")
_BLOCK = re.compile(r"\{([^{}]*)\}")
_RANGE = re.compile(r"\(\s*0\s*[-\u2013]\s*1\s*\)")


def _normalise(line: str) -> str:
    # lower case; spaces and hyphens between words become underscores ("slightly increase")
    return re.sub(r"[\s\-]+", "_", line.lower())


def _label(first_line: str, labels: dict[str, float]) -> str | None:
    text = _normalise(first_line)
    found = []
    for lab in labels:
        m = re.search(rf"(?<![a-z]){lab}(?![a-z])", text)
        if m:
            found.append((m.start(), lab))
    return min(found)[1] if found else None


def _confidence(text: str, lines: list[str]) -> tuple[float, bool]:
    blocks = _BLOCK.findall(text)
    if len(blocks) >= 2:
        source = blocks[1]
    elif len(lines) >= 2:
        source = lines[1]
    else:
        return math.nan, False
    # an echoed "confidence (0-1): 0.75": drop the template's range, read what follows the colon
    source = _RANGE.sub("", source)
    if ":" in source and _NUMBER.search(source.rsplit(":", 1)[1]):
        source = source.rsplit(":", 1)[1]
    m = _NUMBER.search(source)
    if not m:
        return math.nan, False
    v = float(m.group())
    if 0.0 <= v <= 1.0:
        return v, False
    if 1.0 < v <= 100.0:
        return v / 100.0, True
    return math.nan, False


def parse_answer(text: str, task: str = "news") -> ParsedAnswer:
    """Parse one answer (spec §3.3).

    Label: the first of the task's labels found in the first non-empty line, case-insensitive,
    with braces, punctuation and spaces around it ignored and "slightly increase" read as
    ``slightly_increase``. Confidence: the first number in the second ``{...}`` block (or, without
    braces, the second line), after the colon of an echoed ``confidence (0-1):``; a value in (1, 100] is divided by 100 (``confidence_rescaled``), one
    above 100 or missing is NaN.

    Examples
    --------
    >>> parse_answer("{good}\\n{1.0}\\n{Loan to produce Covid-19 drug ingredients boosts prospects.}")
    ParsedAnswer(label='good', signal=1.0, confidence=1.0, confidence_rescaled=False)
    >>> parse_answer("{slightly increase}\\n{85}", task="earnings_call")
    ParsedAnswer(label='slightly_increase', signal=0.5, confidence=0.85, confidence_rescaled=True)
    """
    if task not in _LABELS:
        raise InvalidArgumentError(f"argument `task` must be one of {sorted(_LABELS)}; got {task!r}")
    if not isinstance(text, str):
        return ParsedAnswer(None, math.nan, math.nan)
    labels = _LABELS[task]
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ParsedAnswer(None, math.nan, math.nan)
    lab = _label(lines[0], labels)
    conf, rescaled = _confidence(text, lines)
    return ParsedAnswer(lab, labels[lab] if lab is not None else math.nan, conf, rescaled)


def parse_answers(texts: Sequence[str], task: str = "news"):
    """Parse many answers into a data frame (``label``, ``signal``, ``confidence``,
    ``confidence_rescaled``); warns with the number of answers without a label, without a
    confidence, and with a confidence rescaled from a percentage.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     frame = parse_answers(["{good}\\n{0.9}", "{bad}\\n{80}", "no idea"])
    >>> frame[["signal", "confidence"]].values.tolist()
    [[1.0, 0.9], [-1.0, 0.8], [nan, nan]]
    >>> print(caught[0].message)
    1 of 3 answers have no news label (signal NaN), 1 no confidence in [0, 1] (NaN), 1 a confidence in
    (1, 100] read as a percentage
    """
    if isinstance(texts, str):
        raise InvalidArgumentError("argument `texts` must be a list of answers, not one string")
    rows = [dataclasses.asdict(parse_answer(t, task)) for t in texts]
    frame = pd.DataFrame(rows, columns=["label", "signal", "confidence", "confidence_rescaled"])
    n = len(frame)
    no_label = int(frame["label"].isna().sum())
    no_conf = int(frame["confidence"].isna().sum())
    rescaled = int(frame["confidence_rescaled"].sum())
    if no_label or no_conf or rescaled:
        warnings.warn(f"{no_label} of {n} answers have no {task} label (signal NaN), {no_conf} no confidence in "
                      f"[0, 1] (NaN), {rescaled} a confidence in (1, 100] read as a percentage",
                      LLMSurrogateWarning, stacklevel=2)
    frame.attrs.update(n=n, unparsed_label=no_label, missing_confidence=no_conf, rescaled_confidence=rescaled)
    return frame
