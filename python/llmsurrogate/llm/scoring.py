"""Answer-option probabilities and numeric decoding through a backend and the cache (docs/methods/risk.md §1.5-§1.7).

* :func:`option_probabilities` -- one forward pass per prompt; for every answer key the mass of
  all its single-token spellings, renormalised over the keys, plus the raw answer mass.
* :func:`numeric_expectations` -- verbalized probability from the digit distribution after
  ``Answer (between 0 and 1): 0.``: expected value (default) or folktexts' two greedy digits.
* :class:`LLMPredictor` -- a fixed prediction rule ``predict(frame) -> ndarray`` for ESS.
* The cached calls every capability uses (:func:`next_token_logprobs_cached`,
  :func:`prompt_logprobs_cached`, :func:`prompt_logprob_moments_cached`, :func:`generate_cached`,
  :func:`next_token_max_cached`, :func:`after_token_logprobs_cached`), keyed by
  :func:`backend_identity`.

``cache=`` is a folder path or a :class:`~llmsurrogate.llm.cache.Cache` (or None:
:func:`~llmsurrogate.llm.cache.as_cache`); a folder is opened once per call and closed at its end.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import check_choice, check_int
from ..exceptions import InvalidArgumentError
from .base import RaggedLogprobs, check_prompts
from .cache import (
    _SeenKeys,
    as_cache,
    cached_batches,
    cached_rows,
    cached_stream,
    using_cache,
)
from .factory import as_backend
from .prompts import (
    COT_CHAT_PREFILL,
    COT_PREFILL,
    MC_CHAT_PREFILL,
    MC_SYSTEM_PROMPT,
    NUMERIC_SYSTEM_PROMPT,
    few_shot_prompt,
    multiple_choice_prompt,
    numeric_prompt,
    persona_prompt,
    reasoning_of,
    rows_of,
)
from .tasks import TEMPLATE_VERSION, MultipleChoiceQuestion, Task

__all__ = ["option_probabilities", "numeric_expectations", "mc_risk", "cot_risk", "numeric_risk", "scale_risk",
           "LLMPredictor", "binary_probabilities",
           "SPELLING_MODES", "backend_identity", "prompt_logprobs_cached", "prompt_logprob_moments_cached",
           "generate_cached", "next_token_logprobs_cached", "next_token_max_cached", "after_token_logprobs_cached"]

log = logging.getLogger("llmsurrogate.llm")

SPELLING_MODES = ("sum", "best_prefix")

#: Results per cache transaction (the commit granularity), separate from the backend's batches:
#: a run killed at any point redoes fewer than COMMIT_EVERY finished-but-unwritten prompts plus
#: the backend batch in flight (a backend that returns results only per call: that call).
COMMIT_EVERY = 64

#: Prompts handed to a backend that streams its batches (``next_token_logprobs_batches``) per
#: call: the backend sorts them by length, groups shared prefixes and picks its own batch sizes
#: (token-budgeted on a GPU); results are written as each of its batches finishes.
WINDOW = 8192


def _window(backend, batch_size, commit_every, streaming: bool) -> int:
    """Prompts per backend call: ``batch_size`` is a floor (None: the backend chooses); a streaming
    backend gets WINDOW, another at least ``commit_every`` or its ``prompts_per_call``."""
    floor = max(int(batch_size or 1), 1)
    if streaming:
        return max(floor, WINDOW)
    return max(floor, int(commit_every), int(getattr(backend, "prompts_per_call", 0) or 0))


def backend_identity(backend) -> tuple[str, str]:
    """``(backend name, model identity)`` of a backend as its cache keys hold them: the name from its
    ``identity["backend"]`` (else its class name) and the rest of its ``identity`` (weights
    fingerprint or revision, dtype, ...) as text.

    Examples
    --------
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> backend_identity(CallableBackend(lambda prompt: {" A": 0.0}))
    ('callable', "[('model', 'callable')]")
    """
    ident = dict(getattr(backend, "identity", {}) or {})
    name = str(ident.pop("backend", type(backend).__name__))
    return name, repr(sorted(ident.items()))


_identity = backend_identity  # the old private name


#: Prompts made, keyed and looked up in the cache at a time by the scoring calls that stream
#: (:class:`PromptChunks`): with at most a window of missing prompts waiting besides, the memory a
#: run holds for its prompts does not grow with their number (issue 37).
PROMPT_CHUNK = 4096


class PromptChunks:
    """``n`` prompts made a chunk of at most ``size`` at a time: ``make(start, stop)`` returns the
    prompts ``start`` ... ``stop - 1``. Iterating gives the chunks (lists) in order, afresh each
    time, so that a scoring run never holds every prompt string at once. A list of prompts is
    wrapped with :meth:`of`.

    Examples
    --------
    >>> chunks = PromptChunks(5, lambda a, b: [f"prompt {i}" for i in range(a, b)], size=2)
    >>> len(chunks), [len(c) for c in chunks], list(chunks)[2]
    (5, [2, 2, 1], ['prompt 4'])
    >>> [p for c in chunks.map(lambda a, b, ps: [q + "!" for q in ps]) for p in c][:2]
    ['prompt 0!', 'prompt 1!']
    """

    def __init__(self, n: int, make: Callable[[int, int], list[str]], size: int | None = None):
        self.n = int(n)
        self.make = make
        self.size = max(1, int(PROMPT_CHUNK if size is None else size))

    @classmethod
    def of(cls, prompts) -> PromptChunks:
        """``prompts`` as it is when it already is a :class:`PromptChunks`; a list, checked
        (:func:`~llmsurrogate.llm.base.check_prompts`) and cut into chunks."""
        if isinstance(prompts, PromptChunks):
            return prompts
        prompts = check_prompts(prompts)
        return cls(len(prompts), lambda a, b: prompts[a:b])

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for a in range(0, self.n, self.size):
            b = min(a + self.size, self.n)
            chunk = check_prompts(self.make(a, b))
            if len(chunk) != b - a:
                raise RuntimeError(f"{len(chunk)} prompts were made for positions {a} to {b - 1}")
            yield chunk

    def map(self, fn: Callable[[int, int, list[str]], list[str]]) -> PromptChunks:
        """Prompts made from these: ``fn(start, stop, prompts)`` for each chunk."""
        return PromptChunks(self.n, lambda a, b: fn(a, b, self.make(a, b)), self.size)


def _rows_chunks(rows, n_per_row: int, render: Callable[[dict], list[str]]) -> PromptChunks:
    """The prompts of ``rows`` (a list of dicts, or :class:`~llmsurrogate.llm.prompts.RowChunks`),
    ``n_per_row`` for each row, row-major: ``render(row)`` gives one row's, made a chunk of rows
    at a time."""
    per = max(1, PROMPT_CHUNK // max(1, n_per_row))

    def make(a, b):  # a, b: multiples of n_per_row (the chunk size is)
        return [p for row in rows[a // n_per_row: b // n_per_row] for p in render(row)]

    return PromptChunks(len(rows) * n_per_row, make, size=per * n_per_row)


def next_token_logprobs_cached(backend, prompts, token_ids: Sequence[int], *, cache=None,
                               batch_size: int | None = None, progress=None,
                               commit_every: int = COMMIT_EVERY) -> np.ndarray:
    """``backend.next_token_logprobs`` with every prompt's result stored in ``cache``.

    A backend with ``next_token_logprobs_batches`` (TransformersBackend) gets up to ``WINDOW``
    prompts per call, batches them itself (sorted by length; results put back in input order
    here) and its results are written ``commit_every`` at a time as its batches finish; another
    backend gets ``max(batch_size, commit_every)`` prompts per call, written per call.
    ``prompts``: a list, or :class:`PromptChunks` (made, keyed and looked up a chunk at a time:
    the memory held does not grow with the number of prompts beyond the result, 4 bytes a token
    id and prompt, and 24 bytes a distinct prompt; :func:`~llmsurrogate.llm.cache.cached_rows`).

    Examples
    --------
    >>> import tempfile
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> backend = CallableBackend(lambda p: {"yes": -0.5, "no": -1.0}, vocab=["yes", "no"], normalise=False)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print(next_token_logprobs_cached(backend, ["Q1", "Q2"], [0, 1], cache=folder, progress=False))
    [[-0.5 -1. ]
     [-0.5 -1. ]]
    """
    chunks = PromptChunks.of(prompts)
    ids = [int(i) for i in token_ids]
    name, model = backend_identity(backend)
    stream = getattr(backend, "next_token_logprobs_batches", None)

    def compute(batch):
        if stream is not None:
            return iter(stream(batch, ids))
        return list(backend.next_token_logprobs(batch, ids))

    with using_cache(cache) as store:
        def make_keys(batch):
            return store.keys(backend=name, model=model, prompts=batch, template=TEMPLATE_VERSION,
                              params={"kind": "next_token_logprobs", "ids": ids})

        return cached_rows(store, chunks, len(chunks), len(ids), make_keys, compute,
                           window=_window(backend, batch_size, commit_every, stream is not None),
                           kind="next_token", progress=progress, commit_every=commit_every)


def prompt_logprobs_cached(backend, prompts: Sequence[str], *, cache=None, batch_size: int | None = None,
                           commit_every: int = COMMIT_EVERY, progress=None):
    """``backend.prompt_logprobs`` (per-token log-probabilities of each prompt, for lookahead
    tests) with every prompt's tokens and values stored in ``cache``. Returns
    :class:`~llmsurrogate.llm.base.RaggedLogprobs`.

    Examples
    --------
    >>> import tempfile
    >>> from llmsurrogate import testing
    >>> from llmsurrogate.llm import TransformersBackend
    >>> backend = TransformersBackend(testing.build_model("tiny-lm", "gpt2", hidden=16, layers=1))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     first = prompt_logprobs_cached(backend, ["a b c", "d e"], cache=folder, progress=False)
    ...     again = prompt_logprobs_cached(backend, ["a b c", "d e"], cache=folder, progress=False)  # from the cache
    >>> len(first), np.allclose(first.sums(), again.sums()), bool(np.isnan(again[0][0]))
    (2, True, True)
    """
    prompts = check_prompts(prompts)
    name, model = backend_identity(backend)

    def compute(idx):
        rag = backend.prompt_logprobs([prompts[i] for i in idx])
        # one float64 array per prompt: [token ids..., log-probs...] (ids are exact in float64); the
        # first token's NaN is stored as 0 (the cache refuses NaN) and restored on reading
        rows = []
        for j in range(len(idx)):
            v = rag[j].astype(np.float64)
            v[:1] = 0.0
            rows.append(np.concatenate([rag.token_ids[rag.offsets[j]: rag.offsets[j + 1]].astype(np.float64), v]))
        return rows

    with using_cache(cache) as store:
        keys = store.keys(backend=name, model=model, prompts=prompts, template=TEMPLATE_VERSION,
                          params={"kind": "prompt_logprobs"})
        rows = cached_batches(store, keys, compute, batch_size=_window(backend, batch_size, commit_every, False),
                              kind="prompt_logprobs", progress=progress)
    lens = np.array([len(r) // 2 for r in rows], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    values = np.concatenate([r[len(r) // 2:] for r in rows]).astype(np.float32) if rows else np.zeros(0, np.float32)
    values[offsets[:-1][lens > 0]] = np.nan  # the first token of a prompt has no context
    ids = np.concatenate([r[: len(r) // 2] for r in rows]).astype(np.int32) if rows else np.zeros(0, np.int32)
    return RaggedLogprobs(values=values, offsets=offsets, token_ids=ids)


def generate_cached(backend, prompts: Sequence[str], *, max_new_tokens: int = 16, cache=None,
                    batch_size: int | None = None) -> list[str]:
    """Greedy ``backend.generate`` with each continuation stored in ``cache`` (UTF-8 bytes).

    Examples
    --------
    >>> import tempfile
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> backend = CallableBackend(lambda p: {" 4": 0.0} if p.endswith("=") else {})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print(generate_cached(backend, ["2+2=", "Hi"], max_new_tokens=4, cache=folder))
    [' 4', '']
    """
    prompts = check_prompts(prompts)
    name, model = backend_identity(backend)

    def compute(idx):
        texts = backend.generate([prompts[i] for i in idx], max_new_tokens=max_new_tokens)
        return [np.frombuffer(t.encode("utf-8"), dtype=np.uint8) for t in texts]

    with using_cache(cache) as store:
        keys = store.keys(backend=name, model=model, prompts=prompts, template=TEMPLATE_VERSION,
                          params=_generate_params(max_new_tokens))
        rows = cached_batches(store, keys, compute, batch_size=_window(backend, batch_size, COMMIT_EVERY, False),
                              kind="generate")
    return [bytes(r).decode("utf-8") for r in rows]


def _generate_params(max_new_tokens: int) -> dict:
    """The cache-key parameters of a greedy generation of ``max_new_tokens`` tokens."""
    return {"kind": "generate", "max_new_tokens": int(max_new_tokens), "greedy": True}


def prompt_logprob_moments_cached(backend, texts: Sequence[str], *, cache=None, batch_size: int = 16,
                                  progress=None):
    """``backend.prompt_logprob_moments`` through the cache: ``(RaggedLogprobs, mu, sigma)``.

    Raises a clear error for a backend without vocabulary-wide moments (vLLM returns top-k
    log-probabilities only).

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate.llm.base import RaggedLogprobs
    >>> class ToyBackend:  # one token per word, log p = -len(word); vocabulary mean -2, sd 1 everywhere
    ...     def prompt_logprob_moments(self, prompts):
    ...         lp = [np.array([np.nan] + [-len(w) for w in p.split()[1:]], np.float32) for p in prompts]
    ...         off, m = np.cumsum([0] + [len(v) for v in lp]), sum(len(v) for v in lp)
    ...         return RaggedLogprobs(np.concatenate(lp), off, np.zeros(m, np.int32)), np.full(m, -2.0), np.ones(m)
    >>> rag, mu, sigma = prompt_logprob_moments_cached(ToyBackend(), ["the cat sat", "a hippopotamus"])
    >>> rag.values.tolist(), mu.tolist()
    ([nan, -3.0, -3.0, nan, -12.0], [nan, -2.0, -2.0, nan, -2.0])
    """
    fn = getattr(backend, "prompt_logprob_moments", None)
    if fn is None:
        raise InvalidArgumentError(
            f"method='min_k_plus_plus' needs the mean and variance of the log-probability over the whole vocabulary "
            f"at every prompt position, and {type(backend).__name__} cannot give them (it has no "
            f"`prompt_logprob_moments`; vLLM returns top-k log-probabilities only). Use TransformersBackend, or "
            f"method='min_k'")
    texts = check_prompts(texts)
    name, model = backend_identity(backend)

    def compute(idx):
        rag, mu, sigma = fn([texts[i] for i in idx])
        out = []
        for j in range(len(idx)):
            a, b = rag.offsets[j], rag.offsets[j + 1]
            parts = [rag.values[a:b].astype(np.float64), np.array(mu[a:b], np.float64), np.array(sigma[a:b], np.float64)]
            for arr in parts:  # the first token's NaNs are stored as 0 (the cache refuses NaN), restored on reading
                arr[:1] = 0.0
            out.append(np.concatenate([rag.token_ids[a:b].astype(np.float64), *parts]))
        return out

    with using_cache(cache) as store:
        keys = store.keys(backend=name, model=model, prompts=texts, template=TEMPLATE_VERSION,
                          params={"kind": "prompt_logprob_moments"})
        rows = cached_batches(store, keys, compute, batch_size=max(batch_size, COMMIT_EVERY),
                              kind="prompt_logprob_moments", progress=progress)
    lens = np.array([len(r) // 4 for r in rows], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)

    def part(p, dtype):
        if not rows:
            return np.zeros(0, dtype)
        return np.concatenate([r[p * (len(r) // 4): (p + 1) * (len(r) // 4)] for r in rows]).astype(dtype)

    first = offsets[:-1][lens > 0]
    values, mu, sigma = part(1, np.float32), part(2, np.float64), part(3, np.float64)
    for arr in (values, mu, sigma):
        arr[first] = np.nan
    return RaggedLogprobs(values=values, offsets=offsets, token_ids=part(0, np.int32)), mu, sigma


def next_token_max_cached(backend, prompts: Sequence[str], vocab: int, *, cache=None,
                          batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(max next-token log-prob, its token id)`` after each prompt: a scan of all ``vocab`` token
    ids through ``backend.next_token_logprobs``, only the maximum and its id stored in the cache.
    ``batch_size``: prompts per backend call (None: all in one).

    Examples
    --------
    >>> import math
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> backend = CallableBackend(lambda p: {" up": math.log(0.7), " down": math.log(0.3)}, vocab=[" up", " down"])
    >>> lp, ids = next_token_max_cached(backend, ["Up or down?"], vocab=2)
    >>> round(math.exp(lp[0]), 6), backend.vocab[ids[0]]
    (0.7, ' up')
    """
    name, model = backend_identity(backend)
    ids = np.arange(vocab, dtype=np.int64)

    def compute(idx):
        lp = np.asarray(backend.next_token_logprobs([prompts[i] for i in idx], ids))
        if lp.shape != (len(idx), vocab):
            raise InvalidArgumentError(f"{type(backend).__name__}.next_token_logprobs returned shape {lp.shape} for "
                                       f"{len(idx)} prompts and {vocab} token ids")
        arg = np.argmax(lp, axis=1)
        return [np.array([float(lp[r, arg[r]]), float(arg[r])]) for r in range(len(idx))]

    with using_cache(cache) as store:
        keys = store.keys(backend=name, model=model, prompts=prompts, template=TEMPLATE_VERSION,
                          params={"kind": "next_token_max", "vocab": int(vocab)})
        rows = cached_batches(store, keys, compute, batch_size=batch_size, kind="next_token_max")
    return np.array([r[0] for r in rows], dtype=np.float64), np.array([int(r[1]) for r in rows], dtype=np.int64)


def after_token_logprobs_cached(backend, prompts: Sequence[str], after_ids: Sequence[int],
                                token_ids: Sequence[int], *, cache=None, batch_size: int | None = None,
                                texts: Sequence[str] | None = None) -> np.ndarray:
    """Next-token log-probs after each prompt extended by one token, for every token in
    ``after_ids``: array (n, len(after_ids), len(token_ids)). Uses the backend's
    ``next_token_logprobs_after`` (one prompt pass + KV-cache reuse) when it has one, else
    appends the tokens' ``texts`` to the prompt strings.

    Examples
    --------
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> backend = CallableBackend(lambda p: {"1": 0.0} if p.endswith("0") else {"0": 0.0}, vocab=["0", "1"])
    >>> np.exp(after_token_logprobs_cached(backend, ["x"], after_ids=[0, 1], token_ids=[0, 1], texts=["0", "1"]))
    array([[[0., 1.],
            [1., 0.]]], dtype=float32)
    """
    chunks = PromptChunks.of(prompts)
    after = [int(a) for a in after_ids]
    ids = [int(i) for i in token_ids]
    name, model = backend_identity(backend)
    fast = getattr(backend, "next_token_logprobs_after", None)

    def compute(batch):
        if fast is not None:
            arr = fast(batch, after, ids)
        else:
            if texts is None:
                raise InvalidArgumentError("this backend needs the texts of the appended tokens")
            ext = [p + t for p in batch for t in texts]
            arr = backend.next_token_logprobs(ext, ids).reshape(len(batch), len(after), len(ids))
        return [a.reshape(-1) for a in np.asarray(arr, dtype=np.float32)]

    # the backend batches internally (TransformersBackend: batch_size // 2 prompts per pass)
    with using_cache(cache) as store:
        def make_keys(batch):
            return store.keys(backend=name, model=model, prompts=batch, template=TEMPLATE_VERSION,
                              params={"kind": "after_token_logprobs", "after": after, "ids": ids})

        rows = cached_rows(store, chunks, len(chunks), len(after) * len(ids), make_keys, compute,
                           window=_window(backend, batch_size, COMMIT_EVERY, False), kind="after_token")
    return rows.reshape(len(chunks), len(after), len(ids))


def _answer_ids(backend, keys: Sequence[str]):
    spell = backend.answer_tokens(list(keys))
    owner: dict[int, str] = {}
    for k in keys:
        if not spell.get(k):
            raise InvalidArgumentError(f"answer key {k!r} has no single-token spelling in the model's vocabulary")
        for _, tid in spell[k]:
            if tid in owner and owner[tid] != k:
                raise InvalidArgumentError(
                    f"answer keys {owner[tid]!r} and {k!r} share token id {tid}: the options cannot be told apart")
            owner[tid] = k
    return spell


def option_probabilities(backend, prompts: Sequence[str], keys: Sequence[str], *, model: str | None = None, cache=None,
                         batch_size: int | None = None, spelling: str = "sum", progress=None,
                         commit_every: int = COMMIT_EVERY):
    """Probabilities of the answer keys after each prompt, renormalised over the keys.

    ``spelling="sum"`` adds the mass of every single-token spelling of a key (``"A"``, ``" A"``,
    ``"▁A"``); ``"best_prefix"`` reproduces folktexts: per prefix variant the total mass over
    keys, and only the variant with the largest total is used. Rows with zero answer mass get
    uniform probabilities (1/K).

    Returns ``(probs (n, K) float64, answer_mass (n,) float64)``; ``answer_mass`` is the total
    next-token probability on the keys' spellings before renormalisation. ``backend``: a backend
    object, or a backend name with ``model=`` (:func:`~llmsurrogate.llm.factory.as_backend`).

    Examples
    --------
    >>> import math
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> backend = CallableBackend(lambda p: {" A": math.log(0.3), "A": math.log(0.1), " B": math.log(0.2),
    ...                                      " the": math.log(0.4)}, vocab=[" A", "A", " B", "B", " the"])
    >>> probs, mass = option_probabilities(backend, ["Answer:"], ["A", "B"], progress=False)
    >>> probs.round(3).tolist(), mass.round(3).tolist()  # 0.4 of the mass is on no key
    ([[0.667, 0.333]], [0.6])
    """
    backend = as_backend(backend, model)
    probs, total = _option_probabilities(backend, prompts, keys, cache=cache, batch_size=batch_size, spelling=spelling,
                                         progress=progress, commit_every=commit_every)
    _warn_low_mass(total)
    return probs, total


def _warn_low_mass(total: np.ndarray) -> None:
    low = np.flatnonzero(total < 0.1)
    if low.size:
        log.warning("%d of %d prompts put less than 10%% of the next-token mass on the answer keys", low.size,
                    len(total))


def _option_probabilities(backend, prompts, keys, *, cache, batch_size, spelling, progress,
                          commit_every: int = COMMIT_EVERY):
    """:func:`option_probabilities` without the warning about prompts with little mass on the keys."""
    if spelling not in SPELLING_MODES:
        raise InvalidArgumentError(f"argument `spelling` must be one of {SPELLING_MODES}; got {spelling!r}")
    spell = _answer_ids(backend, keys)
    ids = sorted({tid for k in keys for _, tid in spell[k]})
    col = {tid: j for j, tid in enumerate(ids)}
    lp = next_token_logprobs_cached(backend, prompts, ids, cache=cache, batch_size=batch_size, progress=progress,
                                    commit_every=commit_every)
    p = np.exp(lp.astype(np.float64))
    n, K = len(prompts), len(keys)
    if spelling == "sum":
        mass = np.zeros((n, K))
        for j, k in enumerate(keys):
            for _, tid in spell[k]:
                mass[:, j] += p[:, col[tid]]
    else:
        prefixes = sorted({s[: len(s) - len(k)] for k in keys for s, _ in spell[k]})
        per = np.zeros((len(prefixes), n, K))
        for a, pre in enumerate(prefixes):
            for j, k in enumerate(keys):
                for s, tid in spell[k]:
                    if s == pre + k:
                        per[a, :, j] += p[:, col[tid]]
        best = np.argmax(per.sum(axis=2), axis=0)
        mass = per[best, np.arange(n)]
    total = mass.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        probs = np.where(total[:, None] > 0, mass / total[:, None], 1.0 / K)
    return probs, total


def numeric_expectations(backend, prompts: Sequence[str], *, model: str | None = None, cache=None,
                         batch_size: int | None = None, decoding: str = "expected", progress=None):
    """Verbalized probability after a ``... 0.`` prefill from the digit-token distribution.

    ``decoding="expected"``: r = Σ_t P(t)·(val(t) + [t is one digit]·Σ_d P(d|t)·d/100), with
    val(t) = int(t)/10^len(t), both distributions restricted to digit tokens and renormalised
    (continuous scores, no ties). ``decoding="argmax"``: folktexts' two greedy digit passes,
    r = float("0." + d1 + d2). Returns ``(scores, digit_mass)`` where ``digit_mass`` is the
    first-pass probability on digit tokens. ``backend``: a backend object, or a backend name with
    ``model=`` (:func:`~llmsurrogate.llm.factory.as_backend`).

    Examples
    --------
    A model that writes ``7`` after ``0.`` and then ``5`` (``0.75``), or ``2`` then ``0`` or ``4``
    with equal probability:

    >>> from llmsurrogate.llm.base import CallableBackend
    >>> def model(prompt):
    ...     if prompt.endswith("0."):
    ...         return {"7": 0.0} if "high" in prompt else {"2": 0.0}
    ...     return {"5": 0.0} if prompt.endswith("7") else {"0": 0.0, "4": 0.0}
    >>> backend = CallableBackend(model)
    >>> scores, mass = numeric_expectations(backend, ["high? 0.", "low? 0."], progress=False)
    >>> scores.round(6).tolist(), mass.tolist()
    ([0.75, 0.22], [1.0, 1.0])
    """
    backend = as_backend(backend, model)
    if decoding not in ("expected", "argmax"):
        raise InvalidArgumentError(f"argument `decoding` must be 'expected' or 'argmax'; got {decoding!r}")
    prompts = PromptChunks.of(prompts)
    digits = backend.digit_tokens()
    if not digits:
        raise InvalidArgumentError("the model's vocabulary has no digit tokens; numeric prompting is impossible")
    with using_cache(cache) as store:  # one cache for both passes
        return _numeric_expectations(backend, prompts, digits, store, batch_size, decoding, progress)


def _numeric_expectations(backend, prompts, digits, cache, batch_size, decoding, progress):
    texts = [t for t, _ in digits]
    ids = [i for _, i in digits]
    lp1 = next_token_logprobs_cached(backend, prompts, ids, cache=cache, batch_size=batch_size, progress=progress)
    p1 = np.exp(lp1.astype(np.float64))
    mass = p1.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        q1 = np.where(mass[:, None] > 0, p1 / mass[:, None], 1.0 / len(ids))
    vals = np.array([int(t) / 10 ** len(t) for t in texts])
    single = np.array([len(t) == 1 for t in texts])
    n = len(prompts)
    if decoding == "argmax":
        first = np.argmax(q1, axis=1)
        second_prompts = prompts.map(lambda a, b, chunk: [p + texts[first[i]] for i, p in zip(range(a, b), chunk)])
        lp2 = next_token_logprobs_cached(backend, second_prompts, ids, cache=cache, batch_size=batch_size)
        second = np.argmax(lp2, axis=1)
        scores = np.array([float("0." + texts[first[i]] + texts[second[i]]) for i in range(n)])
        return scores, mass
    # expected value: second pass after every single-digit first token (by token id)
    singles = [j for j in range(len(texts)) if single[j]]
    scores = (q1 * vals).sum(axis=1)
    if singles:
        lp2 = after_token_logprobs_cached(backend, prompts, [ids[j] for j in singles], ids, cache=cache,
                                          batch_size=batch_size, texts=[texts[j] for j in singles])
        p2 = np.exp(lp2.astype(np.float64))  # (n, S, m)
        m2 = p2.sum(axis=2, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            q2 = np.where(m2 > 0, p2 / m2, 1.0 / len(ids))
        tail = (q2 * vals).sum(axis=2) / 10.0  # (n, S)
        scores += (q1[:, singles] * tail).sum(axis=1)
    return np.clip(scores, 0.0, 1.0), mass


def _positive_weights(question: MultipleChoiceQuestion) -> np.ndarray:
    v = np.asarray(question.values, dtype=np.float64)
    if len(v) == 2:
        w = np.zeros(2)
        w[int(np.argmax(v))] = 1.0
        return w
    return v


def mc_risk(backend, task: Task, rows: Sequence[dict], *, cache=None, batch_size: int | None = None,
            correct_order_bias: bool = True, spelling: str = "sum", prompt_fn: Callable | None = None,
            progress=None, commit_every: int = COMMIT_EVERY, orders: str | None = None,
            return_probabilities: bool = False):
    """Multiple-choice risk scores, averaged over option orders when ``correct_order_bias``.

    ``orders``: ``"all"`` (the K! orders), ``"cyclic"`` (the K rotations, every option once at
    every key) or None: ``"all"`` up to K = 4, ``"cyclic"`` above
    (:meth:`~llmsurrogate.llm.tasks.MultipleChoiceQuestion.orderings`; for K = 2 the two are the
    same). Binary: r = probability of the option with the larger numeric value; K > 2:
    r = Σ_k q_k v_k. Returns ``(scores, answer_mass, per_order_scores (n, n_orders))``, and with
    ``return_probabilities`` a fourth: ``(n, K)`` the answer distribution, each order's
    renormalised key probabilities put back in the question's option order and averaged over
    the orders (docs/methods/survey.md §7).

    Examples
    --------
    A model biased to answer ``A`` whatever the options say: averaged over both option orders it
    says 0.5.

    >>> import math
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> from llmsurrogate.testing import synthetic_income_task
    >>> backend = CallableBackend(lambda p: {" A": math.log(0.8), " B": math.log(0.2)})
    >>> scores, mass, per = mc_risk(backend, synthetic_income_task(), [{"AGEP": 40, "SCHL": 21, "WKHP": 40, "SEX": 1}])
    >>> scores.round(3).tolist(), per.round(3).tolist()
    ([0.5], [[0.2, 0.8]])
    >>> mc_risk(backend, synthetic_income_task(), [{"AGEP": 40, "SCHL": 21, "WKHP": 40, "SEX": 1}],
    ...         return_probabilities=True)[3].round(3).tolist()  # Below, Above
    [[0.5, 0.5]]
    """
    if task.question is None:
        raise InvalidArgumentError(f"task {task.name!r} has no multiple-choice question")
    questions = _orderings(task.question, correct_order_bias, orders)
    render = prompt_fn or (lambda row, q: multiple_choice_prompt(task, row, q))
    # row-major: the answer orders of one row are neighbours (they share a long prefix); made a
    # chunk of rows at a time
    prompts = _rows_chunks(rows, len(questions), lambda row: [render(row, q) for q in questions])
    n = len(rows)
    probs, mass = option_probabilities(backend, prompts, task.question.keys, cache=cache, batch_size=batch_size,
                                       spelling=spelling, progress=progress, commit_every=commit_every)
    out = _order_scores(probs, mass, questions, n)
    if return_probabilities:
        return (*out, _order_distribution(probs, questions, task.question, n))
    return out


def _orderings(question: MultipleChoiceQuestion, correct_order_bias: bool, orders: str | None):
    """The answer orders to score: all K! or the K rotations (``orders``), or the question's own only."""
    if orders is not None and not correct_order_bias:
        raise InvalidArgumentError("argument `orders` chooses the answer orders that correct_order_bias=True "
                                   "averages; with correct_order_bias=False only the question's own order is "
                                   "scored, so `orders` would do nothing: leave it out")
    scheme = question.order_scheme(orders)
    return question.orderings(scheme) if correct_order_bias else [question]


def _order_scores(probs, mass, questions, n):
    """(scores, answer_mass, per_order) from row-major option probabilities of ``n`` rows x orders."""
    k = len(questions)
    per = np.empty((n, k))
    for a, q in enumerate(questions):
        per[:, a] = probs[a::k] @ _positive_weights(q)
    if len(questions[0].options) == 2:
        np.clip(per, 0.0, None, out=per)  # a no-op on probabilities; K > 2: values may be negative (a -2..2 scale)
    masses = mass.reshape(n, k).mean(axis=1)
    return per.mean(axis=1), masses, per


def _order_distribution(probs, questions, question: MultipleChoiceQuestion, n):
    """(n, K): the row-major key probabilities of ``n`` rows x orders, each order's put back in
    ``question``'s option order (options are told apart by their distinct texts), averaged."""
    k = len(questions)
    where = {o.text: j for j, o in enumerate(question.options)}
    dist = np.zeros((n, len(question.options)))
    for a, q in enumerate(questions):
        dist[:, [where[o.text] for o in q.options]] += probs[a::k]
    return dist / k


def scale_risk(backend, task: Task, rows: Sequence[dict], *, cache=None, batch_size: int | None = None,
               spelling: str = "sum", prompt_fn: Callable | None = None, progress=None,
               commit_every: int = COMMIT_EVERY):
    """Verbalized answers on an ordered scale (``method="numeric_scale"``, docs/methods/survey.md §7):
    the prompt numbers the levels 1 ... K in the question's order
    (:meth:`~llmsurrogate.llm.tasks.MultipleChoiceQuestion.scale`) and asks for the level's
    number; the next-token probabilities of the digits ``1`` ... ``K`` (every single-token
    spelling, as for answer keys), renormalised, are the distribution over the levels. One order
    (the scale's), one prompt per row, through the cache.

    The score is the expected level in the options' numeric values, Σ_k q_k v_k (binary: the
    probability of the option with the larger value, as in :func:`mc_risk`). The question must be
    ordered (``ordered=True``) unless it has two options; at most 9 levels. Returns ``(scores,
    digit_mass, probabilities (n, K))``; ``digit_mass`` is the next-token mass on the K digits
    before renormalising.

    Examples
    --------
    >>> import math
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> from llmsurrogate.llm.tasks import AnswerOption, Column, MultipleChoiceQuestion, Task
    >>> task = Task("Trust", columns=(Column("AGE", "age", ("int", "{} years old")),), target="TRUST",
    ...             question=MultipleChoiceQuestion("How much do you trust others?", (AnswerOption("Not at all", 1),
    ...                 AnswerOption("Somewhat", 2), AnswerOption("Completely", 3)), ordered=True))
    >>> backend = CallableBackend(lambda p: {" 2": math.log(0.6), " 3": math.log(0.3), " the": 0.0},
    ...                           vocab=[" 1", " 2", " 3", " the"])
    >>> scores, mass, probs = scale_risk(backend, task, [{"AGE": 40}])
    >>> scores.round(4).tolist(), probs.round(4).tolist()  # 2 x 2/3 + 3 x 1/3
    ([2.3333], [[0.0, 0.6667, 0.3333]])
    """
    if task.question is None:
        raise InvalidArgumentError(f"task {task.name!r} has no multiple-choice question")
    if not task.question.ordered and len(task.question.options) > 2:
        raise InvalidArgumentError(
            f"argument `method`: 'numeric_scale' asks for a level of an ordered scale, and the question of task "
            f"{task.name!r} is not ordered; mark it ordered (ordered = true in the task file's [question], "
            f"MultipleChoiceQuestion(..., ordered=True)) or use method='multiple_choice'")
    q = task.question.scale()
    render = prompt_fn or (lambda row, q: multiple_choice_prompt(task, row, q))
    prompts = _rows_chunks(rows, 1, lambda row: [render(row, q)])
    probs, mass = option_probabilities(backend, prompts, q.keys, cache=cache, batch_size=batch_size,
                                       spelling=spelling, progress=progress, commit_every=commit_every)
    return probs @ _positive_weights(q), mass, probs


def cot_risk(backend, task: Task, rows: Sequence[dict], *, cache=None, batch_size: int | None = None,
             correct_order_bias: bool = True, spelling: str = "sum", max_new_tokens: int = 256,
             user_fn: Callable | None = None, chat: bool = False, system: str | None = None, progress=None,
             orders: str | None = None, return_probabilities: bool = False):
    """Chain-of-thought risk scores (docs/methods/risk.md §1.10): the model first writes its reasoning,
    then the answer is read as next-token probabilities of the keys after it.

    For every row and answer order: the multiple-choice prompt without its prefill (or
    ``user_fn(row, q)``, e.g. a few-shot prompt), then ``Reasoning: Let's think step by step.``
    (with ``chat``: the user turn, and the assistant turn prefilled with ``Let's think step by
    step.``); ``max_new_tokens`` greedy tokens (:func:`generate_cached`); the reasoning cut where the
    model starts to answer (:func:`~llmsurrogate.llm.prompts.reasoning_of`); then the prompt, the
    reasoning and the question's prefill (``Answer:``), after which the answer keys' probabilities
    give the score as in :func:`mc_risk`. Both steps go through the cache.

    In constant memory per prompt (issue 37): the prompts are made a chunk of rows at a time, twice
    (first for their keys, which tell the repeated ones, then to be generated: ``user_fn`` must
    give the same prompt for a row and order each time); the texts come a window at a time
    (:func:`~llmsurrogate.llm.cache.cached_stream`, the windows of :func:`generate_cached`) and each
    is dropped once its scoring prompt is made, scored as :func:`option_probabilities` streams. A
    repeated prompt is generated and scored once and takes its first occurrence's results.

    Returns ``(scores, answer_mass, per_order_scores, reasoning, stated)``: ``reasoning`` the
    first order's reasoning per row, ``stated`` (n, orders) 1.0 / 0.0 where the generated text
    states the option with the larger value or another one, NaN where it states none.
    ``orders`` and ``return_probabilities`` (a sixth element, the (n, K) answer distribution) as in
    :func:`mc_risk`.

    Examples
    --------
    A stand-in model that reasons "educated" or "not educated" and then answers from its reasoning:

    >>> import math
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> from llmsurrogate.testing import synthetic_income_task
    >>> def model(prompt):
    ...     if prompt.endswith("step by step."):
    ...         return {" educated": 0.0} if "Bachelor" in prompt.split("Information:")[-1] else {" not": 0.0}
    ...     if prompt.endswith(" not"):
    ...         return {" educated": 0.0}
    ...     if prompt.endswith("Answer:"):
    ...         p = 0.1 if "not educated" in prompt else 0.9
    ...         above = "A" if "A. Above" in prompt else "B"
    ...         return {" " + above: math.log(p), " " + ("B" if above == "A" else "A"): math.log(1 - p)}
    ...     return {}
    >>> backend = CallableBackend(model, vocab=[" A", " B", "A", "B", " educated", " not"])
    >>> rows = [{"AGEP": 40, "SCHL": 21, "WKHP": 40, "SEX": 1}, {"AGEP": 40, "SCHL": 16, "WKHP": 40, "SEX": 1}]
    >>> scores, mass, per, reasoning, stated = cot_risk(backend, synthetic_income_task(), rows)
    >>> scores.round(3).tolist(), reasoning
    ([0.9, 0.1], [' educated', ' not educated'])
    """
    if task.question is None:
        raise InvalidArgumentError(f"task {task.name!r} has no multiple-choice question")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=1)
    questions = _orderings(task.question, correct_order_bias, orders)
    user = user_fn or (lambda row, q: multiple_choice_prompt(task, row, q, prefill=False))
    if chat:
        if not hasattr(backend, "chat_prompt"):
            raise InvalidArgumentError(f"{type(backend).__name__} has no chat template support")
        sys_text = MC_SYSTEM_PROMPT if system is None else system

        def start(row, q):
            return backend.chat_prompt(user(row, q), prefill=COT_CHAT_PREFILL, system=sys_text or None)
    else:
        def start(row, q):
            return user(row, q) + "\n" + COT_PREFILL
    n, k = len(rows), len(questions)
    name, model = backend_identity(backend)
    # row-major, the orders of a row neighbours; made a chunk of rows at a time, twice: once for
    # their keys (which prompts repeat), once to be generated
    starts = _rows_chunks(rows, k, lambda row: [start(row, q) for q in questions])
    with using_cache(cache) as store:
        def start_keys(batch):
            return store.keys(backend=name, model=model, prompts=batch, template=TEMPLATE_VERSION,
                              params=_generate_params(max_new_tokens))

        first, where = _first_occurrences(starts, start_keys)
        n_distinct = len(where)
        # the distinct prompts whose reasoning a row's first order shows
        shown = np.zeros(n_distinct, dtype=bool)
        shown[first[::k]] = True
        is_first = np.zeros(len(first), dtype=bool)
        is_first[where] = True

        def distinct_starts():
            a = 0
            for chunk in starts:
                b = a + len(chunk)
                yield [p for p, f in zip(chunk, is_first[a:b]) if f]
                a = b

        def generate(batch):
            texts = backend.generate(batch, max_new_tokens=max_new_tokens)
            return [np.frombuffer(t.encode("utf-8"), dtype=np.uint8) for t in texts]

        # generated texts in order, a window at a time, each dropped once its scoring prompt is made
        generated = cached_stream(store, distinct_starts(), start_keys, generate,
                                  window=_window(backend, batch_size, COMMIT_EVERY, False), kind="generate")
        stated_key = np.full(n_distinct, -1, dtype=np.int8)  # the key the text states (index), -1: none
        reasoning: list[str | None] = [None] * n
        other: dict[int, str] = {}  # shown reasoning first generated at another order (a user_fn ignoring it)

        def finals(a, b):  # the scoring prompts of distinct prompts a ... b - 1, asked for in order
            out = []
            for d, (prompt, text) in zip(range(a, b), generated):
                pos = int(where[d])
                q = questions[pos % k]
                r, key = reasoning_of(bytes(text).decode("utf-8"), q)
                if key is not None:
                    stated_key[d] = q.keys.index(key)
                if shown[d]:
                    if pos % k == 0:
                        reasoning[pos // k] = r
                    else:
                        other[d] = r
                out.append(prompt + r + "\n" + q.prefill)
            return out

        with contextlib.closing(generated):
            probs, mass = _option_probabilities(backend, PromptChunks(n_distinct, finals), task.question.keys,
                                                cache=store, batch_size=batch_size, spelling=spelling,
                                                progress=progress)
    # a repeated prompt has its first occurrence's text, reasoning and scores (as the cache gave
    # them before); only the value of the key it states depends on its order
    probs, mass = probs[first], mass[first]
    _warn_low_mass(mass)
    scores, masses, per = _order_scores(probs, mass, questions, n)
    keys_stated = stated_key[first].reshape(n, k)
    stated = np.full((n, k), np.nan)
    for a, q in enumerate(questions):
        values = _positive_weights(q) if len(q.options) == 2 else \
            np.array([o.numeric_value for o in q.options], dtype=np.float64)
        has = keys_stated[:, a] >= 0
        stated[has, a] = values[keys_stated[has, a]]
    for r in range(n):
        if reasoning[r] is None:  # the same prompt as an earlier one
            d = int(first[r * k])
            pos = int(where[d])
            reasoning[r] = reasoning[pos // k] if pos % k == 0 else other[d]
    if return_probabilities:
        return scores, masses, per, reasoning, stated, _order_distribution(probs, questions, task.question, n)
    return scores, masses, per, reasoning, stated


def _first_occurrences(chunks: PromptChunks, make_keys) -> tuple[np.ndarray, np.ndarray]:
    """Which of the prompts repeat: ``(first, where)``, ``first[i]`` the number of prompt ``i``'s
    distinct prompt (numbered in the order of their first occurrence) and ``where[d]`` the
    position of distinct prompt ``d``'s first occurrence. The prompts are made and keyed a chunk
    at a time and told apart by 128 bits of their keys (as :func:`~llmsurrogate.llm.cache.cached_rows`
    does): 16 bytes a prompt while sorting, 4 (8 beyond 2^31 prompts) kept.

    >>> from llmsurrogate.llm.cache import Cache
    >>> chunks = PromptChunks(5, lambda a, b: ["x", "y", "x", "z", "y"][a:b], size=2)
    >>> first, where = _first_occurrences(chunks, lambda ps: Cache.keys(backend="b", model="m", prompts=ps,
    ...                                                                   template="t", params={}))
    >>> first.tolist(), where.tolist()
    ([0, 1, 0, 2, 1], [0, 1, 3])
    """
    n = len(chunks)
    digests = np.empty(n, dtype="S16")
    a = 0
    for chunk in chunks:
        digests[a: a + len(chunk)] = _SeenKeys.digests_of(make_keys(chunk))
        a += len(chunk)
    index = np.int32 if n < 2**31 else np.int64
    order = np.argsort(digests, kind="stable").astype(index)
    sorted_digests = digests[order]
    del digests
    starts = np.ones(n, dtype=bool)
    starts[1:] = sorted_digests[1:] != sorted_digests[:-1]
    del sorted_digests
    group = (np.cumsum(starts, dtype=np.int64) - 1).astype(index)  # the group of each sorted prompt
    where = order[starts]  # each group's first position (stable: the smallest)
    by_position = np.argsort(where, kind="stable")
    rank = np.empty(len(where), dtype=index)
    rank[by_position] = np.arange(len(where), dtype=index)
    first = np.empty(n, dtype=index)
    first[order] = rank[group]
    return first, where[by_position]


def chat_prompt_fn(backend, task: Task, method: str = "multiple_choice", system: str | None = None, *,
                   few_shot: tuple[Sequence[dict], Sequence[Any]] | None = None):
    """A prompt renderer that wraps the zero-shot prompt in the backend's chat template (docs/methods/risk.md
    §1.4): the user turn is the prompt without its prefill; the assistant turn is the prefill
    (``If had to select one of the options, my answer would be`` for multiple choice, ``Answer
    (between 0 and 1): 0.`` for numeric), cut right after it. ``few_shot=(rows, labels)``: the user
    turn is the few-shot prompt instead (the examples with their answers, then the row), rendered
    with the same question, so the same option order, as the row."""
    if not hasattr(backend, "chat_prompt"):
        raise InvalidArgumentError(f"{type(backend).__name__} has no chat template support")
    if method == "multiple_choice":
        sys_text = MC_SYSTEM_PROMPT if system is None else system
        if few_shot is not None:
            ex_rows, ex_labels = few_shot
            return lambda row, q: backend.chat_prompt(
                few_shot_prompt(task, row, ex_rows, ex_labels, q, prefill=False), prefill=MC_CHAT_PREFILL,
                system=sys_text or None)
        return lambda row, q: backend.chat_prompt(multiple_choice_prompt(task, row, q, prefill=False),
                                                  prefill=MC_CHAT_PREFILL, system=sys_text or None)
    sys_text = NUMERIC_SYSTEM_PROMPT if system is None else system
    if task.numeric_question is None:
        raise InvalidArgumentError(f"task {task.name!r} has no numeric question")
    nq = task.numeric_question
    if few_shot is not None:
        ex_rows, ex_labels = few_shot
        return lambda row, q=None: backend.chat_prompt(
            few_shot_prompt(task, row, ex_rows, ex_labels, nq, prefill=False), prefill=nq.prefill,
            system=sys_text or None)
    return lambda row, q=None: backend.chat_prompt(numeric_prompt(task, row, prefill=False), prefill=nq.prefill,
                                                   system=sys_text or None)


def numeric_risk(backend, task: Task, rows: Sequence[dict], *, cache=None, batch_size: int | None = None,
                 decoding: str = "expected", progress=None, prompt_fn: Callable | None = None):
    """Verbalized-probability risk scores: :func:`numeric_expectations` after each row's numeric
    prompt (:func:`~llmsurrogate.llm.prompts.numeric_prompt`, or ``prompt_fn(row)``). Returns
    ``(scores, digit_mass)``.

    Examples
    --------
    >>> from llmsurrogate.llm.base import CallableBackend
    >>> from llmsurrogate.testing import synthetic_income_task
    >>> backend = CallableBackend(lambda p: {"8": 0.0} if "Bachelor" in p else {"3": 0.0})
    >>> rows = [{"AGEP": 40, "SCHL": 21, "WKHP": 40, "SEX": 1}, {"AGEP": 40, "SCHL": 16, "WKHP": 40, "SEX": 1}]
    >>> numeric_risk(backend, synthetic_income_task(), rows, decoding="argmax")[0].tolist()  # "0.88", "0.33"
    [0.88, 0.33]
    """
    render = prompt_fn or (lambda row, q=None: numeric_prompt(task, row))
    prompts = _rows_chunks(rows, 1, lambda row: [render(row)])
    return numeric_expectations(backend, prompts, cache=cache, batch_size=batch_size, decoding=decoding,
                                progress=progress)


def persona_risk(backend, template: str, rows: Sequence[dict], answers: dict, *, task: Task | None = None,
                 suffix: str = "\nAnswer:", cache=None, batch_size: int | None = None, progress=None,
                 return_probabilities: bool = False):
    """Expected answer value for persona prompts in the style of the ESS paper's Prompt 1.

    ``template`` has ``{COLUMN}`` fields (rendered through ``task``'s code maps when given) and
    asks for an answer from a fixed set, e.g. "If you own, say 1; if you rent, say 5"; ``answers``
    maps each answer key to its value ({"1": 1.0, "5": 0.0}). The prediction is Σ_k q_k v_k with q
    the next-token probabilities of the keys after ``template + suffix``, renormalised over the
    keys. Returns ``(predictions, answer_mass)``, and with ``return_probabilities`` a third:
    ``q`` (n, number of answers), the columns in ``answers``' order."""
    if not answers or len(answers) < 2:
        raise InvalidArgumentError("argument `answers` must map at least two answer keys to values")
    keys = [str(k) for k in answers]
    vals = np.array([float(v) for v in answers.values()])
    prompts = [persona_prompt(template, row, task) + suffix for row in rows]
    probs, mass = option_probabilities(backend, prompts, keys, cache=cache, batch_size=batch_size, progress=progress)
    if return_probabilities:
        return probs @ vals, mass, probs
    return probs @ vals, mass


class LLMPredictor:
    """An LLM as a fixed prediction rule: ``predict(frame)`` returns its risk scores,
    ``predict_proba(frame)`` its answer distribution.

    ``method``: ``multiple_choice`` / ``numeric`` / ``numeric_argmax`` / ``numeric_scale`` (the
    task's prompts; :func:`mc_risk`, :func:`numeric_risk`, :func:`scale_risk`), or ``persona``
    (``persona_template`` with ``{COLUMN}`` fields and ``answers`` key -> value, see
    :func:`persona_risk`; the prediction is the expected answer value). ``orders``: the option
    orders multiple choice averages (:func:`mc_risk`; None: all K! up to K = 4, the K rotations
    above).

    Predictions come from (and go to) the cache, so refitting anything downstream (ESS error
    curves, cross-validation) never queries the model twice for a prompt.

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> from llmsurrogate.llm import CallableBackend, acs_income_task
    >>> import math
    >>> def oracle(prompt):  # P(above $50k) = 0.2 for women, 0.7 for men, whatever the option order
    ...     p = 0.2 if "Female" in prompt else 0.7
    ...     above = "A" if "A. Above" in prompt else "B"
    ...     below = "B" if above == "A" else "A"
    ...     return {" " + above: math.log(p), " " + below: math.log(1 - p)}
    >>> pred = LLMPredictor(CallableBackend(oracle), acs_income_task())
    >>> pred.predict(datasets.load_acs_income_rows()).round(3)[:3]
    array([0.2, 0.7, 0.7])
    >>> pred.classes_, pred.predict_proba(datasets.load_acs_income_rows()).round(3)[:2].tolist()
    ([0, 1], [[0.8, 0.2], [0.3, 0.7]])
    """

    def __init__(self, backend, task: Task, *, method: str = "multiple_choice", cache=None, batch_size: int | None = None,
                 correct_order_bias: bool = True, persona_template: str | None = None,
                 answers: dict | None = None, orders: str | None = None):
        self.backend = backend
        self.task = task
        self.method = check_choice(method, "method", ["multiple_choice", "numeric", "numeric_argmax", "numeric_scale",
                                                      "persona"])
        if self.method == "persona" and (persona_template is None or answers is None):
            raise InvalidArgumentError("method='persona' needs `persona_template` and `answers`")
        if self.method in ("multiple_choice", "numeric_scale") and task.question is None:
            raise InvalidArgumentError(f"argument `method`: {self.method!r} needs a multiple-choice question, and "
                                       f"task {task.name!r} has none")
        if orders is not None and (self.method != "multiple_choice" or not correct_order_bias):
            raise InvalidArgumentError(
                f"argument `orders` chooses the answer orders that method='multiple_choice' with "
                f"correct_order_bias=True averages; here (method={self.method!r}, correct_order_bias="
                f"{bool(correct_order_bias)}) it would do nothing: leave it out")
        if task.question is not None:
            task.question.order_scheme(orders)  # checks `orders` now, not at the first prediction
        if self.method == "numeric_scale" and task.question is not None:
            task.question.scale()  # at most 9 levels
        self.persona_template = persona_template
        self.answers = dict(answers) if answers else None
        self.cache = as_cache(cache)
        self.batch_size = batch_size
        self.correct_order_bias = correct_order_bias
        self.orders = orders

    @property
    def classes_(self) -> list:
        """The labels ``predict_proba``'s columns stand for, in its column order: the question's
        option values (``persona``: the values of ``answers``), as scikit-learn's ``classes_``."""
        if self.method == "persona":
            return list(self.answers.values())
        if self.task.question is None:
            return [0, 1]
        return [o.value for o in self.task.question.options]

    def predict(self, frame: Any) -> np.ndarray:
        """The risk scores of the rows of ``frame`` (float64, one per row), through the cache.

        Examples
        --------
        >>> import pandas as pd
        >>> from llmsurrogate.llm.base import CallableBackend
        >>> from llmsurrogate.testing import synthetic_income_task
        >>> backend = CallableBackend(lambda p: {"9": 0.0} if p.endswith("0.") else {"0": 0.0})
        >>> frame = pd.DataFrame({"AGEP": [30, 60], "SCHL": [21, 16], "WKHP": [40, 10], "SEX": [1, 2]})
        >>> LLMPredictor(backend, synthetic_income_task(), method="numeric").predict(frame).round(6)
        array([0.9, 0.9])
        """
        return self._run(frame)[0]

    def predict_proba(self, frame: Any) -> np.ndarray:
        """The answer distribution of each row of ``frame``: (n, K) float64, rows summing to 1, the
        columns in the question's option order (:attr:`classes_`), through the cache.

        ``multiple_choice`` with K > 2 options and ``numeric_scale``: the distribution the scores
        are read from (:func:`mc_risk`'s, averaged over the option orders; :func:`scale_risk`'s).
        Binary tasks (every method): the column of the option with the larger numeric value is
        :meth:`predict`, the other one minus it, so the two never disagree. ``persona``: the
        answers' probabilities, in ``answers``' order. ``numeric`` with K > 2 options is an error
        (a stated probability is not a distribution over K options).

        Examples
        --------
        >>> import math
        >>> import pandas as pd
        >>> from llmsurrogate.llm.base import CallableBackend
        >>> from llmsurrogate.llm.tasks import AnswerOption, Column, MultipleChoiceQuestion, Task
        >>> task = Task("Vote", columns=(Column("AGE", "age", ("int", "{} years old")),), target="VOTE",
        ...             question=MultipleChoiceQuestion("Whom will you vote for?", (AnswerOption("Red", "red", 0),
        ...                 AnswerOption("Blue", "blue", 0), AnswerOption("Green", "green", 0))))
        >>> def model(prompt):  # Blue 0.6, Red 0.3, Green 0.1, whatever the keys
        ...     key = {line[3:-1]: line[0] for line in prompt.splitlines() if line[1:3] == ". "}
        ...     return {" " + key[t]: math.log(p) for t, p in (("Red", 0.3), ("Blue", 0.6), ("Green", 0.1))}
        >>> pred = LLMPredictor(CallableBackend(model), task)
        >>> pred.classes_, pred.predict_proba(pd.DataFrame({"AGE": [30]})).round(6).tolist()
        (['red', 'blue', 'green'], [[0.3, 0.6, 0.1]])
        """
        q = self.task.question
        if self.method in ("numeric", "numeric_argmax") and q is not None and len(q.options) > 2:
            raise InvalidArgumentError(
                f"predict_proba: method={self.method!r} gives one number per row, not a distribution over the "
                f"{len(q.options)} options of task {self.task.name!r}; use method='multiple_choice' or 'numeric_scale'")
        scores, probs = self._run(frame, proba=True)
        if probs is not None:
            return np.asarray(probs, dtype=np.float64)
        return binary_probabilities(scores, None if q is None else q.values)

    def _run(self, frame: Any, proba: bool = False):
        """(scores, probabilities or None) of the rows of ``frame``."""
        rows = rows_of(frame, self.task)
        probs = None
        if self.method == "persona":
            scores, _, probs = persona_risk(self.backend, self.persona_template, rows, self.answers, task=self.task,
                                            cache=self.cache, batch_size=self.batch_size, return_probabilities=True)
        elif self.method == "multiple_choice":
            want = proba and len(self.task.question.options) > 2
            out = mc_risk(self.backend, self.task, rows, cache=self.cache, batch_size=self.batch_size,
                          correct_order_bias=self.correct_order_bias, orders=self.orders, return_probabilities=want)
            scores, probs = out[0], (out[3] if want else None)
        elif self.method == "numeric_scale":
            scores, _, probs = scale_risk(self.backend, self.task, rows, cache=self.cache, batch_size=self.batch_size)
        else:
            decoding = "argmax" if self.method == "numeric_argmax" else "expected"
            scores, _ = numeric_risk(self.backend, self.task, rows, cache=self.cache, batch_size=self.batch_size,
                                     decoding=decoding)
        return np.asarray(scores, dtype=np.float64), probs

    __call__ = predict

    def __repr__(self) -> str:
        return f"LLMPredictor({self.backend.identity}, task={self.task.name!r}, method={self.method!r})"


def binary_probabilities(scores, values: Sequence[float] | None = None) -> np.ndarray:
    """(n, 2) answer probabilities of a binary question from its risk scores: the option with the
    larger numeric value (``values``, the two options' numeric values in the question's order) gets
    the score, the other one minus it; columns in the question's option order (no ``values``:
    ``[1 - r, r]``). The scores are not touched, so a binary number never changes.

    Examples
    --------
    >>> binary_probabilities([0.25, 0.9], values=[1.0, 0.0]).tolist()  # "Own" (1) listed before "Rent" (0)
    [[0.25, 0.75], [0.9, 0.09999999999999998]]
    """
    r = np.asarray(scores, dtype=np.float64)
    if values is not None and len(values) != 2:
        raise InvalidArgumentError(f"argument `values`: a binary question has 2 options; got {len(values)} values")
    hi = 1 if values is None else int(np.argmax(np.asarray(values, dtype=np.float64)))
    out = np.empty((len(r), 2))
    out[:, hi], out[:, 1 - hi] = r, 1.0 - r
    return out
