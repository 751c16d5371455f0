"""``forecast``: the paper's forecasting prompts through any backend, answers generated with the
cache and parsed (docs/methods/lookahead.md §3, §8.2; Gao, Jiang & Yan 2026, Figures I and II).

The prompts are rendered by :func:`~llmsurrogate.lookahead.news_prompt` /
:func:`~llmsurrogate.lookahead.earnings_call_prompt` (§3.1, §3.2), the answers generated greedily
(§3.3: ``do_sample=False``; at most ``max_new_tokens`` new tokens, 64 by default since the
explanation is under 25 words) through ``llm.scoring.generate_cached`` -- each prompt's answer is
stored in the cache, so a rerun or a resumed run generates nothing twice -- and parsed with
:func:`~llmsurrogate.lookahead.parse_answers` (§3.3). Unparseable answers are kept, with a NaN
signal and their ``status``, counted and reported, never dropped silently.

The two first-token probabilities of the paper's Table IV (§3.3, §8.2), each from one more
forward pass per prompt, cached like the answers:

* ``p_first_token`` -- the probability of the first generated token. Under greedy decoding that
  token is the argmax of the next-token distribution after the prompt, so its probability is the
  *maximum* of that distribution: it is read by a scan of the whole vocabulary
  (``backend.next_token_logprobs(prompts, range(V))``; only the maximum and its token id are
  kept in the cache). Exact, with no tokenisation of the answer. The argmax token is checked
  against the answer (its text must begin the answer, whitespace aside; a special token such as
  EOS passes) where the backend can spell it. The scan needs a backend whose
  ``next_token_logprobs`` gives every id exactly in one pass: TransformersBackend (the
  log-softmax over the vocabulary is computed anyway; the scan adds a copy of V floats per
  prompt), CallableBackend, or any backend declaring ``full_vocabulary_scan = V``. VLLMBackend
  (top-k log-probabilities: a scan would run one engine sequence per vocabulary token) and HTTP
  backends (top-20 at most) cannot scan: there the candidates are the tokens spelled by a prefix
  of the answer's first ``FIRST_TOKEN_CHARS`` characters (``answer_tokens``), and the likeliest is
  kept only where its probability exceeds 1/2 -- no other token can then be the argmax, so it is
  the generated one; elsewhere ``p_first_token`` is NaN (``first_token_uncertain``), counted in a
  warning. ``attrs["p_first_token_method"]`` says which (``"scan"``, ``"above_half"``).
* ``p_label_token`` -- the probability of the first token of the parsed label word, after the
  prompt followed by the answer text before that word (``"{"`` in ``"{good}"``). The word is
  taken as written (its case kept: ``"Good"`` is not ``"good"``); one space right before it is
  part of its first token (``"{ good}"``: the token ``" good"`` after ``"{"``), as in byte-level
  BPE and SentencePiece vocabularies -- unless no token begins with that space, in which case the
  space ends the text before the word. The candidates for its first token are the vocabulary
  tokens spelled by a prefix of the written word (``"g"``, ``"go"``, ``"goo"``, ``"good"``, found
  with ``backend.answer_tokens``, matched by their exact text); the generated one is the argmax
  of the next-token distribution under greedy decoding, so ``p_label_token`` is the largest
  candidate probability -- exact whenever the model generated the label word from a token
  boundary and the prompt plus that prefix encodes to the tokens it generated.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._positions import at, located, message_of
from .._progress import progress_reporter
from .._validation import _is_polars, as_frame, check_int
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..llm.base import CallableBackend, check_prompts
from ..llm.cache import using_cache
from ..llm.factory import as_backend
from ..llm.hf import TransformersBackend
from ..llm.scoring import (
    generate_cached,
    next_token_logprobs_cached,
    next_token_max_cached,
)
from ._prompts import earnings_call_prompt, news_prompt, parse_answers

__all__ = ["forecast", "FORECAST_TEMPLATES", "FORECAST_FIELDS", "PARSE_STATUSES", "TOKEN_STATUSES"]

#: The two templates of §3 (``template=`` of :func:`forecast`).
FORECAST_TEMPLATES = ("news", "earnings_call")

#: Fields each template needs from a data frame (rename with ``columns={field: column}``).
FORECAST_FIELDS = {"news": ("headline", "date", "company_name", "ticker"),
                   "earnings_call": ("transcript", "company_name", "ticker", "event_title")}

#: ``status`` of a parsed answer: both parts read, the label only, the confidence only, neither.
PARSE_STATUSES = ("ok", "no_confidence", "no_label", "unparsed")

#: ``token_status`` of the token probabilities: both read, or why one is NaN -- the answer has no
#: label, no vocabulary token spells the start of the label word, the label token's log-probability
#: is -inf (outside a backend's top k, or the prompt plus the answer's prefix encodes to other tokens
#: than the generated ones), the backend has no ``answer_tokens``/``next_token_logprobs``, no token
#: has positive probability after the prompt (nothing generated), the argmax after the prompt does
#: not begin the answer (generation was not plain greedy decoding), a backend that cannot scan its
#: vocabulary gives no token spelled by the answer's start a probability above 1/2, or the backend
#: has no next-token scoring at all. Several reasons are joined by ``", "``; ``"off"`` with
#: ``token_probabilities=False``.
TOKEN_STATUSES = ("ok", "no_label", "no_label_token", "label_token_unseen", "label_token_unavailable",
                  "no_first_token", "first_token_mismatch", "first_token_uncertain", "first_token_unavailable", "off")

#: Answers generated per cache call (and per progress step).
CHUNK = 64


def _render(frame, template: str, columns: dict[str, str] | None, words: int | None) -> list[str]:

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
            raise InvalidArgumentError(located(at(i, "row"), " of the data frame: ", message_of(err))) from None
    return out


# --- token probabilities (§3.3, Table IV) --------------------------------------------------------

def _scan_size(backend) -> tuple[int | None, str]:
    """``(V, "")`` when ``backend.next_token_logprobs`` gives all V ids exactly in one pass, else
    ``(None, why not)``."""
    name = type(backend).__name__
    if not callable(getattr(backend, "next_token_logprobs", None)):
        return None, f"{name} has no next_token_logprobs"
    declared = getattr(backend, "full_vocabulary_scan", None)
    if declared is not None:
        return check_int(declared, "full_vocabulary_scan", minimum=1), ""
    if isinstance(backend, CallableBackend):
        return len(backend.vocab), ""
    if isinstance(backend, TransformersBackend):
        return int(backend.vocab_size), ""
    return None, (f"{name} cannot scan its whole vocabulary in one exact pass (a top-k backend such as VLLMBackend "
                  "or an HTTP endpoint): p_first_token is read only where a token spelled by the start of the "
                  "answer has probability above 1/2 (then it is the argmax); TransformersBackend, CallableBackend "
                  "or a backend declaring `full_vocabulary_scan = V` give it everywhere")


def _token_text(backend, tid: int) -> str | None:
    """The text of token ``tid`` where the backend can spell it ('' for a special token), else None."""
    if isinstance(backend, CallableBackend):
        return backend.vocab[tid]
    tok = getattr(backend, "tokenizer", None)
    if tok is None or not callable(getattr(tok, "decode", None)):
        return None
    if tid in set(getattr(tok, "all_special_ids", ()) or ()):
        return ""
    return tok.decode([tid])


def _begins(answer: str, text: str | None) -> bool:
    """Whether a first token's text begins the answer (whitespace aside; unknown or partial-UTF-8
    texts pass)."""
    if text is None or "\ufffd" in text or not text.strip():
        return True
    return answer.lstrip().startswith(text.strip())


def _first_token(backend, prompts: list[str], vocab: int, cache, batch_size):
    """(max next-token log-prob, its token id) after each prompt: a scan of all ``vocab`` ids,
    only the maximum and its id stored in the cache."""
    return next_token_max_cached(backend, prompts, vocab, cache=cache, batch_size=batch_size)


#: Characters at the start of an answer whose prefixes are looked up (``answer_tokens``) as the
#: candidates for its first token, on a backend that cannot scan its vocabulary.
FIRST_TOKEN_CHARS = 16


def _first_token_certified(backend, prompts: list[str], answers: list[str], cache, batch_size):
    """p of the first generated token without a vocabulary scan: the likeliest token spelled by a
    prefix of the answer, kept only where its probability exceeds 1/2 -- then no other token can be
    the argmax, so it is the greedy first token. Returns (p, status)."""
    n = len(prompts)
    p = np.full(n, np.nan)
    status = ["first_token_uncertain"] * n
    starts = [a[:FIRST_TOKEN_CHARS] for a in answers]
    keys = sorted({a[:j] for a in starts for j in range(1, len(a) + 1)})
    spell = backend.answer_tokens(keys) if keys else {}
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, a in enumerate(starts):
        cands = {int(tid) for j in range(1, len(a) + 1) for text, tid in spell.get(a[:j], ())
                 if text and answers[i].startswith(text)}
        if cands:
            groups.setdefault(tuple(sorted(cands)), []).append(i)
    for ids, rows in groups.items():
        lp = next_token_logprobs_cached(backend, [prompts[i] for i in rows], list(ids), cache=cache,
                                        batch_size=batch_size)
        for i, v in zip(rows, np.asarray(lp, dtype=np.float64).max(axis=1)):
            if np.isfinite(v) and math.exp(v) > 0.5:
                p[i], status[i] = math.exp(v), "ok"
    return p, status


def _label_span(answer: str, label: str) -> tuple[int, str, str] | None:
    """Where the parsed label word starts in the answer: ``(end of the text before it, leading
    space, the word as written)``; the word is searched in the first non-empty line as the parser
    reads it (case-insensitive; ``_`` also matches spaces or hyphens)."""
    offset = 0
    for line in answer.splitlines(keepends=True):
        if line.strip():
            break
        offset += len(line)
    else:
        return None
    pattern = r"(?:[\s\-]+|_)".join(re.escape(part) for part in label.split("_"))
    m = re.search(rf"(?<![a-z]){pattern}(?![a-z])", line, flags=re.IGNORECASE)
    if m is None:
        return None
    start = offset + m.start()
    if start > 0 and answer[start - 1] == " ":
        return start - 1, " ", m.group()
    return start, "", m.group()


def _label_token(backend, prompts: list[str], answers: list[str], labels: list, cache, batch_size):
    """p of the first token of each parsed label word after prompt + the answer text before it
    (largest over the tokens spelled by a prefix of the written word), and the row's status."""
    n = len(prompts)
    p = np.full(n, np.nan)
    status = ["no_label"] * n
    spans = {}
    for i, lab in enumerate(labels):
        if isinstance(lab, str):
            span = _label_span(answers[i], lab)
            if span is None:  # the parser found it; the search should too
                status[i] = "no_label_token"
            else:
                spans[i] = span
    if not spans:
        return p, status
    keys = sorted({word[:j] for _, _, word in spans.values() for j in range(1, len(word) + 1)})
    spell = backend.answer_tokens(keys)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (cut, lead, word) in spans.items():
        def spelled(lead):
            return {int(tid) for j in range(1, len(word) + 1) for text, tid in spell.get(word[:j], ())
                    if text == lead + word[:j]}

        cands = spelled(lead)
        if not cands and lead:  # no token starts with the space: it ends the text before the word
            cands, spans[i] = spelled(""), (cut + len(lead), "", word)
        if cands:
            groups.setdefault(tuple(sorted(cands)), []).append(i)
        else:
            status[i] = "no_label_token"
    for ids, rows in groups.items():
        ext = [prompts[i] + answers[i][: spans[i][0]] for i in rows]
        lp = next_token_logprobs_cached(backend, ext, list(ids), cache=cache, batch_size=batch_size)
        best = np.asarray(lp, dtype=np.float64).max(axis=1)
        for i, v in zip(rows, best):
            if np.isfinite(v):
                p[i], status[i] = float(np.exp(v)), "ok"
            else:
                status[i] = "label_token_unseen"
    return p, status


def _token_probabilities(backend, prompts, answers, labels, cache, batch_size, vocab: int | None):
    """``(p_first_token, p_label_token, token_status)`` of one chunk of rows."""
    n = len(prompts)
    first = np.full(n, np.nan)
    first_status = ["first_token_unavailable"] * n
    scores = all(callable(getattr(backend, m, None)) for m in ("answer_tokens", "next_token_logprobs"))
    if vocab is None and scores:
        first, first_status = _first_token_certified(backend, prompts, answers, cache, batch_size)
    elif vocab is not None:
        lp, arg = _first_token(backend, prompts, vocab, cache, batch_size)
        for i in range(n):
            if not np.isfinite(lp[i]):  # no token has positive probability: nothing was generated
                first_status[i] = "no_first_token"
                continue
            if _begins(answers[i], _token_text(backend, int(arg[i]))):
                first[i], first_status[i] = float(np.exp(lp[i])), "ok"
            else:
                first_status[i] = "first_token_mismatch"
    if scores:
        label, label_status = _label_token(backend, prompts, answers, labels, cache, batch_size)
    else:
        label = np.full(n, np.nan)
        label_status = ["no_label" if not isinstance(lab, str) else "label_token_unavailable" for lab in labels]
    status = []
    for a, b in zip(first_status, label_status):
        reasons = [r for r in (a, b) if r != "ok"]
        status.append(", ".join(sorted(reasons, key=TOKEN_STATUSES.index)) if reasons else "ok")
    return first, label, status


def forecast(texts_or_frame: Any, backend, template: str = "news", *, model: str | None = None, cache=None,
             columns: dict[str, str] | None = None, max_new_tokens: int = 64, batch_size: int | None = None,
             words: int | None = None, progress=None, token_probabilities: bool = True):
    """LLM forecasts with the paper's prompts: render, generate (cached), parse (§3).

    Parameters
    ----------
    texts_or_frame : a pandas DataFrame with the template's fields (news: ``headline``, ``date``,
        ``company_name``, ``ticker``; earnings call: ``transcript``, ``company_name``, ``ticker``,
        ``event_title``; other column names through ``columns``), whose rows are rendered with
        :func:`news_prompt` / :func:`earnings_call_prompt`; or a list of prompts already rendered
        (e.g. wrapped in a chat template), sent as they are.
    backend : any ``llmsurrogate.llm`` backend with ``generate`` (TransformersBackend,
        VLLMBackend, CallableBackend), or a backend name with ``model=``
        (:func:`~llmsurrogate.llm.factory.as_backend`).
    template : ``"news"`` (Figure I; answers good/neutral/bad -> +1/0/-1) or ``"earnings_call"``
        (Figure II; five CapEx levels from -1 to +1). It also chooses the parser's labels.
    model : with a backend name: the local model folder (openai: the served model's name).
    cache : a :class:`~llmsurrogate.llm.cache.Cache` or a folder: each answer is stored there, so a
        second call (or a run resumed after a crash) generates nothing it already has.
    columns : ``{field: column}`` for a data frame whose columns are named otherwise.
    max_new_tokens : the longest answer generated (greedy decoding).
    batch_size : prompts per backend call (None: the backend's choice).
    words : earnings calls: words of the transcript in the prompt (default 512, §1.5).
    progress : None, True (a progress bar) or a callable ``progress(label, done, total)``.
    token_probabilities : add ``p_first_token`` and ``p_label_token`` (Table IV; module docstring,
        docs §8.2). Each costs one more forward pass per prompt (cached: a rerun makes no model
        call); ``False`` skips both (NaN, ``token_status`` ``"off"``).

    Returns
    -------
    pandas.DataFrame, one row per prompt (a data frame's index is kept): ``prompt``, ``answer``
    (the raw generated text), ``label``, ``signal``, ``confidence``, ``confidence_rescaled`` and
    ``status`` (one of :data:`PARSE_STATUSES`), ``p_first_token`` (probability of the first
    generated token), ``p_label_token`` (probability of the first token of the label word; NaN
    where the answer has no label) and ``token_status`` (``"ok"``, or why a probability is NaN:
    :data:`TOKEN_STATUSES`). ``attrs`` holds the counts (``n``, ``unparsed_label``,
    ``missing_confidence``, ``rescaled_confidence``), ``token_probabilities`` (``"ok"``,
    ``"off"`` or why the backend cannot scan its vocabulary) and ``p_first_token_method``
    (``"scan"``, ``"above_half"``, ``"none"``, ``"off"``); answers without a label or confidence
    are also reported in one warning, as are token probabilities a backend cannot give.

    Examples
    --------
    >>> import pandas as pd
    >>> from llmsurrogate.llm import CallableBackend
    >>> answer = "{good}\\n{0.8}\\n{A federal loan.}"
    >>> backend = CallableBackend(lambda p: {} if p.endswith(answer) else {answer: 0.0}, vocab=[answer])  # one answer
    >>> news = pd.DataFrame({"headline": ["Kodak wins a federal loan"], "date": ["2020-07-28"],
    ...                      "company_name": ["Eastman Kodak Company"], "ticker": ["KODK"]})
    >>> forecast(news, backend, token_probabilities=False)[["label", "signal", "confidence", "status"]]
      label  signal  confidence status
    0  good     1.0         0.8     ok
    """
    if template not in FORECAST_TEMPLATES:
        raise InvalidArgumentError(f"argument `template` must be one of {FORECAST_TEMPLATES}; got {template!r}")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=1)
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    if not isinstance(token_probabilities, (bool, np.bool_)):
        raise InvalidArgumentError(f"argument `token_probabilities` must be True or False; got {token_probabilities!r}")
    backend = as_backend(backend, model)
    if not callable(getattr(backend, "generate", None)):
        raise InvalidArgumentError(f"argument `backend` ({type(backend).__name__}) has no `generate` method; "
                                   "use an llmsurrogate.llm backend")
    if _is_polars(texts_or_frame) and hasattr(texts_or_frame, "get_column"):   # a polars frame
        texts_or_frame = as_frame(texts_or_frame, "texts_or_frame")
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
    with using_cache(cache) as store:  # one cache for the answers and the token probabilities
        return _forecast(backend, template, store, prompts, index, max_new_tokens, batch_size, progress,
                         token_probabilities)


def _forecast(backend, template, cache, prompts, index, max_new_tokens, batch_size, progress, token_probabilities):
    answers: list[str] = []
    label = f"forecasts ({template})"
    with progress_reporter(progress) as report:
        report(label, 0, len(prompts))
        for start in range(0, len(prompts), CHUNK):
            answers += generate_cached(backend, prompts[start: start + CHUNK], max_new_tokens=max_new_tokens,
                                       cache=cache, batch_size=batch_size)
            report(label, len(answers), len(prompts))
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
    n = len(prompts)
    if token_probabilities:
        vocab, why = _scan_size(backend)
        labels = [lab if isinstance(lab, str) else None for lab in parsed["label"]]
        first, lab_p, tok_status = np.full(n, np.nan), np.full(n, np.nan), []
        step = f"token probabilities ({template})"
        with progress_reporter(progress) as report:
            report(step, 0, n)
            for start in range(0, n, CHUNK):
                sl = slice(start, start + CHUNK)
                f, b, st = _token_probabilities(backend, prompts[sl], answers[sl], labels[sl], cache, batch_size, vocab)
                first[sl], lab_p[sl] = f, b
                tok_status += st
                report(step, min(start + CHUNK, n), n)
        scores = all(callable(getattr(backend, m, None)) for m in ("answer_tokens", "next_token_logprobs"))
        missed = sum(("first_token_uncertain" in st or "first_token_unavailable" in st) for st in tok_status)
        if missed:
            warnings.warn(f"p_first_token is NaN for {missed} of {n} answers: {why}", LLMSurrogateWarning, stacklevel=2)
        if n and not scores:
            warnings.warn(f"p_label_token is NaN: {type(backend).__name__} has no answer_tokens/next_token_logprobs",
                          LLMSurrogateWarning, stacklevel=2)
        out["p_first_token"], out["p_label_token"], out["token_status"] = first, lab_p, tok_status
        out.attrs["token_probabilities"] = why or "ok"
        out.attrs["p_first_token_method"] = "scan" if vocab is not None else ("above_half" if scores else "none")
    else:
        out["p_first_token"], out["p_label_token"], out["token_status"] = np.nan, np.nan, "off"
        out.attrs["token_probabilities"] = out.attrs["p_first_token_method"] = "off"
    out.attrs.update(parsed.attrs)
    out.attrs["template"] = template
    return out

