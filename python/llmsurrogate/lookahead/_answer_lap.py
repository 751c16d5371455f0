"""The answer-probability LAP of the paper's later version (docs/methods/lookahead.md §1.5.1).

Gao, Jiang & Yan's second version (arXiv 2512.23847v2, June 2026) replaces the prompt Min-K%
statistic by a **recall query**: for a firm-date pair the model is asked a date-only question
about the stock, and LAP is the probability it puts on the directional answers -- the
probability "that the LLM has internalized information about the realized outcome"; after the
training cutoff it "collapses essentially to zero". The package's text of that version is a
secondary description (docs §1.5.1), not the paper itself, so the query wording below is the
package's own, and the construction is deliberately the plain one the description gives:

    answer_LAP(query) = Σ_{a ∈ answers} Σ_{s ∈ spellings(a)} P(next token = s | query)

the next-token probability mass on the single-token spellings of the directional answers
(``"up"``, ``" up"``, ...), one forward pass per query, through ``llm.scoring.option_probabilities``
and the cache. ``details=True`` also gives the mass of each answer, e.g. to take the probability
of the realised direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_template, fill_template
from ..exceptions import InvalidArgumentError
from ..llm.factory import as_backend
from ..llm.scoring import option_probabilities
from ._prompts import _date, _text

__all__ = ["answer_lap", "recall_prompt", "RECALL_TEMPLATE", "RECALL_ANSWERS"]

#: The package's date-only recall query (the paper's v2 wording is not available; docs §1.5.1).
RECALL_TEMPLATE = ("On {date:%Y-%m-%d}, did the stock price of {company_name} ({ticker}) go up or down? "
                   "Answer with one word, up or down.\nAnswer:")

#: The directional answers whose probability mass is the answer-probability LAP.
RECALL_ANSWERS = ("up", "down")


def recall_prompt(date: Any, company_name: str, ticker: str, *, template: str = RECALL_TEMPLATE) -> str:
    """The date-only recall query of a firm-date pair (no headline, no outcome).

    ``template`` is a ``str.format`` template with the fields ``{date}`` (a :class:`datetime.date`,
    so ``{date:%Y-%m-%d}`` works), ``{company_name}`` and ``{ticker}``: plain fields and format
    specs only (attribute or index access such as ``{date.__class__}`` is an error).

    Examples
    --------
    >>> recall_prompt("2020-07-28", "Eastman Kodak Company", "KODK").splitlines()[0]
    'On 2020-07-28, did the stock price of Eastman Kodak Company (KODK) go up or down? Answer with one word, up or down.'
    """
    if not isinstance(template, str) or "{date" not in template:
        raise InvalidArgumentError("argument `template` must be a str.format template with a {date...} field")
    check_template(template, "template", fields=("date", "company_name", "ticker"))
    return fill_template(template, "template", date=_date(date), company_name=_text(company_name, "company_name"),
                         ticker=_text(ticker, "ticker"))


def answer_lap(prompts: Sequence[str], backend, answers: Sequence[str] = RECALL_ANSWERS, *, model: str | None = None,
               cache=None, batch_size: int | None = None, details: bool = False, progress=None):
    """Answer-probability LAP of each recall query: the next-token probability mass on the
    directional ``answers`` (every single-token spelling of each, e.g. ``"up"``, ``" up"``,
    ``"▁up"``), one forward pass per query (docs/methods/lookahead.md §1.5.1).

    Parameters
    ----------
    prompts : the recall queries exactly as given to the model (:func:`recall_prompt`, or chat-rendered).
    backend : any ``llmsurrogate.llm`` backend (``next_token_logprobs`` and ``answer_tokens``), or a
        backend name with ``model=`` (:func:`~llmsurrogate.llm.factory.as_backend`).
    answers : the directional answers (default ``("up", "down")``); each needs a single-token
        spelling in the model's vocabulary, and no two may share a token (a clear error otherwise).
    model : with a backend name: the local model folder (openai: the served model's name).
    cache : a :class:`~llmsurrogate.llm.cache.Cache` or a folder (next-token log-probabilities are
        stored per query; a rerun runs no model pass).
    details : return a data frame with ``score`` and one ``p_<answer>`` column per answer (its mass)
        instead of the scores alone.

    Returns
    -------
    numpy.ndarray of float64 in [0, 1] (larger = the model commits more to a direction for that
    firm-date), or a DataFrame with ``details=True``.

    Examples
    --------
    >>> import math
    >>> from llmsurrogate.llm import CallableBackend
    >>> backend = CallableBackend(lambda p: {"up": math.log(0.5), " down": math.log(0.2), " A": math.log(0.3)},
    ...                           vocab=["up", " up", "down", " down", " A"])
    >>> query = recall_prompt("2020-07-28", "Eastman Kodak Company", "KODK")
    >>> answer_lap([query], backend, details=True).round(3)
       score  p_up  p_down
    0    0.7   0.5     0.2
    """
    backend = as_backend(backend, model)
    if isinstance(answers, str) or not isinstance(answers, Sequence):
        raise InvalidArgumentError(f"argument `answers` must be a list of answer words such as ['up', 'down']; "
                                   f"got {answers!r}")
    answers = list(answers)
    if not answers or not all(isinstance(a, str) and a.strip() for a in answers):
        raise InvalidArgumentError(f"argument `answers` must hold non-empty strings; got {answers!r}")
    if len(set(answers)) != len(answers):
        raise InvalidArgumentError(f"argument `answers` repeats an answer: {answers!r}")
    probs, total = option_probabilities(backend, prompts, answers, cache=cache, batch_size=batch_size,
                                        progress=progress)
    score = np.asarray(total, dtype=np.float64)
    if not details:
        return score
    frame = pd.DataFrame({"score": score})
    for j, a in enumerate(answers):
        frame[f"p_{a}"] = probs[:, j] * score
    return frame
