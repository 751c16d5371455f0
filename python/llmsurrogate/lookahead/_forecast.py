"""``forecast``: the paper's forecasting prompts through any backend, answers generated with the
cache and parsed (docs/methods/lookahead.md §3, §8.2; Gao, Jiang & Yan 2026, Figures I and II).

The prompts are rendered by :func:`~llmsurrogate.lookahead.news_prompt` /
:func:`~llmsurrogate.lookahead.earnings_call_prompt` (§3.1, §3.2), the answers generated greedily
(§3.3: ``do_sample=False``; at most ``max_new_tokens`` new tokens, 64 by default since the
explanation is under 25 words) through ``llm.scoring.generate_cached`` -- each prompt's answer is
stored in the cache, so a rerun or a resumed run generates nothing twice -- and parsed with
:func:`~llmsurrogate.lookahead.parse_answers` (§3.3). Unparseable answers are kept, with a NaN
signal and their ``status``, counted and reported, never dropped silently.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import InvalidArgumentError

__all__ = ["forecast", "FORECAST_TEMPLATES", "FORECAST_FIELDS", "PARSE_STATUSES"]

#: The two templates of §3 (``template=`` of :func:`forecast`).
FORECAST_TEMPLATES = ("news", "earnings_call")

#: Fields each template needs from a data frame (rename with ``columns={field: column}``).
FORECAST_FIELDS = {"news": ("headline", "date", "company_name", "ticker"),
                   "earnings_call": ("transcript", "company_name", "ticker", "event_title")}

#: ``status`` of a parsed answer: both parts read, the label only, the confidence only, neither.
PARSE_STATUSES = ("ok", "no_confidence", "no_label", "unparsed")

#: Answers generated per cache call (and per progress step).
CHUNK = 64


def _render(frame, template: str, columns: dict[str, str] | None, words: int | None) -> list[str]:
    from ._prompts import earnings_call_prompt, news_prompt

    fields = FORECAST_FIELDS[template]
    columns = dict(columns or {})
    unknown = sorted(set(columns) - set(fields))
    if unknown:
        raise InvalidArgumentError(f"argument `columns` maps {unknown}, which the {template!r} prompt does not use; "
                                   f"its fields are {list(fields)}")
    names = {f: columns.get(f, f) for f in fields}
    missing = [f"{col!r}" + (f" (field {f})" if col != f else "") for f, col in names.items() if col not in frame.columns]
    if missing:
        raise InvalidArgumentError(
            f"the {template!r} prompt needs the column(s) {', '.join(missing)} in the data frame, which has "
            f"{list(map(str, frame.columns))[:12]}; pass columns={{field: column}} to use other names, or pass "
            "the rendered prompts as a list of strings")
    out = []
    for i, row in enumerate(frame[[names[f] for f in fields]].itertuples(index=False, name=None)):
        kw = dict(zip(fields, row))
        try:
            if template == "news":
                out.append(news_prompt(kw["headline"], kw["date"], kw["company_name"], kw["ticker"]))
            else:
                extra = {} if words is None else {"words": words}
                out.append(earnings_call_prompt(kw["transcript"], kw["company_name"], kw["ticker"],
                                                kw["event_title"], **extra))
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"row {i} of the data frame: {err}") from None
    return out


def forecast(texts_or_frame: Any, backend, template: str = "news", *, cache=None, columns: dict[str, str] | None = None,
             max_new_tokens: int = 64, batch_size: int | None = None, words: int | None = None, progress=None):
    """LLM forecasts with the paper's prompts: render, generate (cached), parse (§3).

    Parameters
    ----------
    texts_or_frame : a pandas DataFrame with the template's fields (news: ``headline``, ``date``,
        ``company_name``, ``ticker``; earnings call: ``transcript``, ``company_name``, ``ticker``,
        ``event_title``; other column names through ``columns``), whose rows are rendered with
        :func:`news_prompt` / :func:`earnings_call_prompt`; or a list of prompts already rendered
        (e.g. wrapped in a chat template), sent as they are.
    backend : any ``llmsurrogate.llm`` backend with ``generate`` (TransformersBackend,
        VLLMBackend, CallableBackend).
    template : ``"news"`` (Figure I; answers good/neutral/bad -> +1/0/-1) or ``"earnings_call"``
        (Figure II; five CapEx levels from -1 to +1). It also chooses the parser's labels.
    cache : a :class:`~llmsurrogate.llm.cache.Cache` or a folder: each answer is stored there, so a
        second call (or a run resumed after a crash) generates nothing it already has.
    columns : ``{field: column}`` for a data frame whose columns are named otherwise.
    max_new_tokens : the longest answer generated (greedy decoding).
    batch_size : prompts per backend call (None: the backend's choice).
    words : earnings calls: words of the transcript in the prompt (default 512, §1.5).
    progress : None, True (a progress bar) or a callable ``progress(label, done, total)``.

    Returns
    -------
    pandas.DataFrame, one row per prompt (a data frame's index is kept): ``prompt``, ``answer``
    (the raw generated text), ``label``, ``signal``, ``confidence``, ``confidence_rescaled`` and
    ``status`` (one of :data:`PARSE_STATUSES`). ``attrs`` holds the counts (``n``,
    ``unparsed_label``, ``missing_confidence``, ``rescaled_confidence``); answers without a label
    or confidence are also reported in one warning.
    """
    import pandas as pd

    from .._progress import progress_reporter
    from .._validation import check_int
    from ..llm.base import check_prompts
    from ..llm.scoring import generate_cached
    from ._prompts import parse_answers

    if template not in FORECAST_TEMPLATES:
        raise InvalidArgumentError(f"argument `template` must be one of {FORECAST_TEMPLATES}; got {template!r}")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=1)
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    if not callable(getattr(backend, "generate", None)):
        raise InvalidArgumentError(f"argument `backend` ({type(backend).__name__}) has no `generate` method; "
                                   "use an llmsurrogate.llm backend")
    if isinstance(texts_or_frame, pd.DataFrame):
        prompts = _render(texts_or_frame, template, columns, words)
        index = texts_or_frame.index
    else:
        if isinstance(texts_or_frame, str):
            raise InvalidArgumentError("argument `texts_or_frame` must be a data frame or a list of prompts, not one "
                                       "string")
        if columns is not None or words is not None:
            raise InvalidArgumentError("`columns` and `words` apply to a data frame; the prompts given are sent as "
                                       "they are")
        prompts = check_prompts(texts_or_frame)
        index = pd.RangeIndex(len(prompts))
    answers: list[str] = []
    label = f"forecasts ({template})"
    with progress_reporter(progress) as report:
        report(label, 0, len(prompts))
        for start in range(0, len(prompts), CHUNK):
            answers += generate_cached(backend, prompts[start: start + CHUNK], max_new_tokens=max_new_tokens,
                                       cache=cache, batch_size=batch_size)
            report(label, len(answers), len(prompts))
    import warnings

    from ..exceptions import LLMSurrogateWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        parsed = parse_answers(answers, template)
    for w in caught:
        warnings.warn(str(w.message), LLMSurrogateWarning, stacklevel=2)
    has_label = parsed["label"].notna().to_numpy()
    has_conf = parsed["confidence"].notna().to_numpy()
    status = np.where(has_label & has_conf, "ok", np.where(has_label, "no_confidence",
                                                           np.where(has_conf, "no_label", "unparsed")))
    out = pd.DataFrame({"prompt": prompts, "answer": answers, "label": parsed["label"].to_numpy(),
                        "signal": parsed["signal"].to_numpy(np.float64),
                        "confidence": parsed["confidence"].to_numpy(np.float64),
                        "confidence_rescaled": parsed["confidence_rescaled"].to_numpy(bool), "status": status},
                       index=index)
    out.attrs.update(parsed.attrs)
    out.attrs["template"] = template
    return out

