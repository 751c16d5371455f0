"""``OpenAIBackend``: any OpenAI-compatible HTTP endpoint (OpenAI, Azure-style gateways, ``vllm
serve``, llama.cpp's server) through the official ``openai`` client (the ``openai`` extra).

The backend protocol (:mod:`.base`) speaks in token ids; an HTTP endpoint speaks in token *texts*.
This backend keeps a small virtual vocabulary: :meth:`OpenAIBackend.answer_tokens` and
:meth:`OpenAIBackend.digit_tokens` give every spelling a stable id (a hash of its text), and
:meth:`OpenAIBackend.next_token_logprobs` reads those spellings in the ``top_logprobs`` the server
returns for the first generated token.

Top-k truncation (docs/methods/risk.md §1.8). A server returns the log-probabilities of
its top ``k`` tokens only (``top_logprobs``; OpenAI allows at most 20). A requested spelling that
is not among them gets log-probability ``-inf`` -- the scoring layer then renormalises over the
spellings that were seen -- and it is *reported*, never silent: :meth:`OpenAIBackend.topk_report`
gives, per prompt, the mass seen on the requested spellings, the total mass of the top k and
``unseen_bound = 1 - top-k mass`` (no spelling outside the top k can have more), and the ledger
counts the prompts with a requested spelling outside the top k (a warning says how many).

Byte tokens. A server that keys ``top_logprobs`` by token *text* merges the distinct byte tokens
of a byte-level BPE vocabulary that decode to the same text (vLLM, with the package's tiny model:
800 tokens asked for, 673 keys summing to 0.84 came back), so the top-k mass and
``unseen_bound`` are wrong. Keyed by token id instead (``return_tokens_as_token_ids``, vLLM's
servers), each spelling's id found through the server's ``/tokenize`` (stored in the response cache
like every response), every token counts once. By default (``token_ids=None``) the backend asks the
server's model list (``GET /models``, once; the answer is stored in the response cache) and keys by
token id where the served model's card says ``owned_by: "vllm"``; ``token_ids=True`` / ``False``
(the command line's ``--token-ids`` / ``--no-token-ids``) decide without asking (a vLLM server behind
a gateway that rewrites the list; a server that is none). The unseen-mass bound is reported either
way (:meth:`OpenAIBackend.topk_report`, :meth:`OpenAIBackend.topk_summary`).

Token matching follows the risk-score spec: a key ``K`` is matched by the single tokens ``"K"``,
``" K"`` and ``"\\nK"`` (leading space or newline, §1.6), case-sensitively unless
``match_case=False`` (then ``"k"``, ``" k"`` and ``"\\nk"`` count for ``K`` too).

Prompt log-probabilities (:meth:`OpenAIBackend.prompt_logprobs`, the lookahead LAP) come from the
completions endpoint with ``echo=True`` and ``logprobs`` (vLLM, llama.cpp); a server that does not
echo them raises :class:`CapabilityError` naming what is missing. Generation is greedy
(temperature 0) with a fixed seed by default. :func:`parse_probability` reads a verbalized
probability from generated text (models without log-probabilities).

Throughput and cost (the transport, :mod:`._http`, the base class of :class:`OpenAIBackend`;
this module keeps the scoring on top of it): requests run on a thread pool (``concurrency``),
under client-side rate limits (requests and tokens per minute), with retries (exponential backoff
with full jitter, ``Retry-After`` honoured) on 429, 5xx, timeouts, dropped connections and
malformed bodies. The :class:`Ledger` (:mod:`._ledger`) counts requests, retries by cause, tokens (from each response's ``usage``) and
cost (from the user's ``prices``; none are built in). ``max_cost`` / ``max_tokens`` stop a run
cleanly with :class:`BudgetExceededError`: requests in flight finish and are stored, nothing new is
sent, and a rerun resumes.

Nothing lost: every response is written to the cache (one SQLite transaction, before it is used
or counted as done) under a key made of the endpoint URL, the model name, the prompt and every
request parameter; a rerun of a finished job sends no request. Responses are stored with a fixed
producer tag, so upgrading torch or llmsurrogate does not re-bill a paid API.

Nothing leaked: the API key is read from the environment variable ``api_key_env`` only. It is
never stored on the backend's attributes, its repr, the cache, the identity (cache keys and
results), logs or the text of an exception (messages are scrubbed, and errors are raised without
the client's exception chained). Credentials in ``base_url`` (``http://user:PASSWORD@host/v1``,
``?api_key=SECRET``) are used for the requests and shown nowhere: ``base_url``, the repr, the
identity and every message hold the URL redacted (:mod:`llmsurrogate._redact`), and the secrets
(with the HTTP Basic token of the userinfo) are scrubbed like the key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._redact import redact_url
from .._validation import check_choice, check_int
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ._http import (  # noqa: F401 - the transport's names stay importable from here
    RESPONSE_PRODUCER,
    RESPONSE_TEMPLATE,
    BudgetExceededError,
    CapabilityError,
    HTTPTransport,
    RateLimiter,
    RequestFailedError,
    _normalise_url,
    _ResponseCache,
    _retry_after,
    _Retryable,
    _Scrubber,
)
from ._ledger import Ledger
from .base import RaggedLogprobs, check_prompts

__all__ = ["OpenAIBackend", "Ledger", "BudgetExceededError", "CapabilityError", "RequestFailedError",
           "parse_probability", "token_id"]

log = logging.getLogger("llmsurrogate.llm.openai")


def token_id(text: str) -> int:
    """The stable virtual id of a token text (28 bits of its SHA-256): the same in every process.

    Examples
    --------
    >>> token_id(" A") == token_id(" A"), token_id(" A") == token_id("A"), token_id(" A") < 2**28
    (True, False, True)
    """
    return int(hashlib.sha256(("tok:" + text).encode("utf-8")).hexdigest()[:7], 16)


#: virtual id -> token text of every spelling handed out (by any backend of this process)
_VOCAB: dict[int, str] = {}
_VOCAB_LOCK = threading.Lock()


_NUM = re.compile(r"[-+]?\d*\.\d+|\d+")


def parse_probability(text: str, prefill: str = "") -> float | None:
    """A probability in [0, 1] read from generated text, or None.

    ``prefill`` is the text the prompt ended with (``"0."`` for the risk-score spec's numeric
    prompt, §1.7): the digits generated after ``"0."`` are its fractional part (``"75"`` -> 0.75).
    Otherwise the last number in the text is used (the spec's ladder, last match wins): a
    percentage (``"80%"``) or a value above 1 is divided by 100; a value outside [0, 1] after that
    is None.

    >>> parse_probability("75", prefill="0."), parse_probability("7 and more", prefill="0.")
    (0.75, 0.7)
    >>> parse_probability("I'd say 80%."), parse_probability("Probability: 0.35"), parse_probability("none")
    (0.8, 0.35, None)
    """
    if prefill.rstrip().endswith("0."):
        m = re.match(r"\s*(\d+)", text)
        return float("0." + m.group(1)) if m else None
    found = list(re.finditer(r"([-+]?\d*\.\d+|\d+)\s*(%?)", text))
    if not found:
        return None
    m = found[-1]
    v = float(m.group(1))
    if m.group(2) == "%" or v > 1:
        v /= 100.0
    return v if 0.0 <= v <= 1.0 else None


_TOPK_FIELDS = ("requested", "seen", "keys", "keys_unseen", "seen_mass", "topk_mass", "unseen_bound", "k")


class TopkRecords:
    """The top-k report of every prompt scored, in numeric columns (issue 37: a dict of dicts keyed by
    a SHA-256 hex string took some 600 bytes a prompt for the backend's life; these take 80): the
    first 16 bytes of each prompt's SHA-256 and its 8 numbers, appended in blocks. A prompt scored
    again has its newest record read (:meth:`get`) and counted once (:meth:`summary`).

    >>> r = TopkRecords()
    >>> r.add("Q?", dict(requested=2, seen=1, keys=2, keys_unseen=1, seen_mass=0.5, topk_mass=0.9, unseen_bound=0.1, k=5))
    >>> r.get("Q?")["unseen_bound"], r.get("other") is None, len(r)
    (0.1, True, 1)
    """

    _BLOCK = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self._used = 0   # rows used in the last block
        self._index: tuple[np.ndarray, np.ndarray] | None = None   # (sorted digests, their rows), built on demand

    @staticmethod
    def _digest(prompt: str) -> bytes:
        return hashlib.sha256(prompt.encode("utf-8")).digest()[:16]

    def add(self, prompt: str, rec: Mapping[str, float]) -> None:
        with self._lock:
            if not self._digests or self._used == self._BLOCK:
                self._digests.append(np.zeros(self._BLOCK, dtype="S16"))
                self._values.append(np.zeros((self._BLOCK, len(_TOPK_FIELDS)), dtype=np.float64))
                self._used = 0
            self._digests[-1][self._used] = self._digest(prompt)
            self._values[-1][self._used] = [rec[f] for f in _TOPK_FIELDS]
            self._used += 1
            self._index = None

    def _columns(self) -> tuple[np.ndarray, np.ndarray]:
        """(digests, values) of every record in the order added."""
        if not self._digests:
            return np.zeros(0, dtype="S16"), np.zeros((0, len(_TOPK_FIELDS)))
        d = np.concatenate(self._digests[:-1] + [self._digests[-1][:self._used]])
        v = np.concatenate(self._values[:-1] + [self._values[-1][:self._used]])
        return d, v

    def _newest(self) -> tuple[np.ndarray, np.ndarray]:
        """Each prompt's newest record: (sorted distinct digests, their values)."""
        with self._lock:
            if self._index is None:
                d, v = self._columns()
                order = np.argsort(d[::-1], kind="stable")   # newest first among equal digests
                d_sorted = d[::-1][order]
                first = np.r_[True, d_sorted[1:] != d_sorted[:-1]] if d_sorted.size else np.zeros(0, bool)
                self._index = (d_sorted[first], v[::-1][order][first])
            return self._index

    def get(self, prompt: str) -> dict[str, float] | None:
        digests, values = self._newest()
        key = np.array(self._digest(prompt), dtype="S16")
        i = int(np.searchsorted(digests, key))
        if i < digests.size and digests[i] == key:
            row = values[i]
            return {f: (int(x) if f in ("requested", "seen", "keys", "keys_unseen", "k") else float(x))
                    for f, x in zip(_TOPK_FIELDS, row)}
        return None

    def __len__(self) -> int:
        return int(self._newest()[0].size)

    def values(self) -> np.ndarray:
        """(prompts, 8) newest values, in the field order of ``_TOPK_FIELDS``."""
        return self._newest()[1]


class OpenAIBackend(HTTPTransport):
    """Score prompts with a model behind an OpenAI-compatible HTTP endpoint.

    Parameters
    ----------
    model : the model name the endpoint serves (``"gpt-4o-mini"``, the ``--served-model-name``).
    base_url : the endpoint (``"https://api.openai.com/v1"``, ``"http://127.0.0.1:8000/v1"``);
        requests go there and nowhere else, with its query (``?api-version=...``). Userinfo and
        secret query values are used, never shown: the attribute ``base_url`` holds the URL redacted.
    api_key_env : the environment variable holding the key (read once, never stored in the
        open); a local server without a key gets a placeholder.
    endpoint : ``"completions"`` (raw prompts, echo for prompt log-probabilities; vLLM,
        llama.cpp) or ``"chat"`` (the prompt is the user message; hosted chat models).
    top_logprobs : top-k log-probabilities asked for per generated token (OpenAI allows 20).
    match_case : match answer keys case-sensitively (default) or not.
    system : system message for ``endpoint="chat"``.
    temperature, seed : decoding of :meth:`generate` (greedy and seeded by default).
    concurrency : requests in flight at once (default 8).
    requests_per_minute, tokens_per_minute : client-side rate limits (``None``: none).
    max_retries : retries per request on 429, 5xx, timeouts, connection errors, malformed bodies.
    backoff, max_backoff : exponential backoff base and cap in seconds (full jitter).
    timeout : seconds per request.
    prices : ``{"input": $ per 1M prompt tokens, "output": $ per 1M completion tokens}``.
    max_cost, max_tokens : the run's budget (``max_cost`` needs ``prices``).
    cache : a folder or :class:`~llmsurrogate.llm.cache.Cache` for every response (``None``: kept
        in memory only; pass the run's cache folder to resume after a crash without paying twice).
    extra_body : extra JSON fields sent with every request (part of the cache key).
    token_ids : key next-token log-probabilities by token id (vLLM's ``return_tokens_as_token_ids``)
        and match the spellings through the server's ``/tokenize``; exact top-k mass with
        byte-level tokenizers. vLLM's servers only (``vllm serve``). ``None`` (default): decided
        on first use from the server's model list (vLLM: on), see :meth:`uses_token_ids`.

    Examples
    --------
    Making the backend sends no request:

    >>> backend = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1")  # vllm serve, llama.cpp, ...
    >>> backend
    OpenAIBackend(model='my-model', base_url='http://127.0.0.1:8000/v1', endpoint='completions')
    >>> [spelling for spelling, _ in backend.answer_tokens(["A"])["A"]]
    ['A', ' A', '\\nA']
    >>> OpenAIBackend("gpt-4o-mini", max_cost=5.0)
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: argument `max_cost` needs `prices` ...

    Scoring needs the server (not run here):

    >>> ids = [i for _, i in backend.answer_tokens(["A", "B"])["A"]]  # doctest: +SKIP
    >>> lp = backend.next_token_logprobs(["Question: Is it? A. No. B. Yes. Answer:"], ids)  # doctest: +SKIP
    >>> lp.shape == (1, len(ids))  # doctest: +SKIP
    True
    """

    def __init__(self, model: str, *, base_url: str = "https://api.openai.com/v1", api_key_env: str = "OPENAI_API_KEY",
                 endpoint: str = "completions", top_logprobs: int = 20, match_case: bool = True,
                 system: str | None = None, temperature: float = 0.0, seed: int | None = 0, concurrency: int = 8,
                 requests_per_minute: float | None = None, tokens_per_minute: float | None = None,
                 max_retries: int = 8, backoff: float = 0.5, max_backoff: float = 60.0, timeout: float = 60.0,
                 prices: Mapping[str, float] | None = None, max_cost: float | None = None,
                 max_tokens: int | None = None, cache: Any = None, extra_body: Mapping[str, Any] | None = None,
                 prompts_per_call: int = 256, token_ids: bool | None = None):
        if not isinstance(model, str) or not model:
            raise InvalidArgumentError("argument `model` must be the non-empty name of the served model")
        self.model = model
        url = _normalise_url(base_url)
        self.base_url = redact_url(url)  # shown and recorded; requests go to `url` (the client holds it)
        if not isinstance(api_key_env, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", api_key_env):
            raise InvalidArgumentError("argument `api_key_env` must be the NAME of an environment variable "
                                       "(the key itself is never passed as an argument)")
        self.api_key_env = api_key_env
        self.endpoint = check_choice(endpoint, "endpoint", ["completions", "chat"])
        self.top_logprobs = check_int(top_logprobs, "top_logprobs", minimum=0)
        self.match_case = bool(match_case)
        self.system = system
        self.temperature = float(temperature)
        self.seed = None if seed is None else int(seed)
        self._init_transport(concurrency=concurrency, requests_per_minute=requests_per_minute,
                             tokens_per_minute=tokens_per_minute, max_retries=max_retries, backoff=backoff,
                             max_backoff=max_backoff, timeout=timeout, prices=prices, max_cost=max_cost,
                             max_tokens=max_tokens)
        self.extra_body = dict(extra_body or {})
        self.prompts_per_call = check_int(prompts_per_call, "prompts_per_call", minimum=1)
        if token_ids is not None and not isinstance(token_ids, bool):
            raise InvalidArgumentError(f"argument `token_ids` must be True, False or None (ask the server); "
                                       f"got {token_ids!r}")
        #: keyed by token id (True), by text (False), or not decided yet (None: :meth:`uses_token_ids`)
        self.token_ids = token_ids
        self._server_ids: dict[str, int | None] = {}
        self._topk = TopkRecords()
        self._connect(cache, api_key_env, url)
        self._identity = {"backend": "openai", "model": self.model, "base_url": self._scrub(self.base_url),
                          "endpoint": self.endpoint, "top_logprobs": self.top_logprobs, "system": self.system,
                          "temperature": self.temperature, "seed": self.seed,
                          "extra_body": json.loads(self._scrub(json.dumps(self.extra_body, sort_keys=True)))}

    @property
    def identity(self) -> dict[str, Any]:
        """What the scoring layer's cache keys and the results' ``meta["backend"]`` hold: the model,
        the endpoint (redacted), the decoding settings and ``token_ids: True`` when keyed by token
        id (only then: text-keyed identities stay as they were). Reading it decides the keying
        (:meth:`uses_token_ids`: a request the first time, with ``token_ids=None``)."""
        ident = dict(self._identity)
        if self.uses_token_ids():
            ident["token_ids"] = True
        return ident

    def uses_token_ids(self, *, ask: bool = True) -> bool | None:
        """Whether next-token log-probabilities are keyed by token id: ``token_ids`` as given, or,
        with ``token_ids=None``, whether the server is vLLM's (its model list, ``GET /models``,
        says ``owned_by: "vllm"`` for the model; asked once, the answer stored in the response
        cache). ``ask=False``: None instead of a request while undecided.

        Examples
        --------
        >>> OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1", token_ids=False).uses_token_ids()
        False
        >>> OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1").uses_token_ids(ask=False) is None
        True
        """
        if self.token_ids is None:
            decided = self._detect_vllm(ask=ask)
            if decided is None:
                return None
            self.token_ids = decided
        return self.token_ids

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}, endpoint={self.endpoint!r})"

    def __getstate__(self):
        raise TypeError("OpenAIBackend cannot be pickled (it holds a client with the API key); build one per process")

    # ---------------------------------------------------------------- protocol

    def _spellings(self, key: str) -> list[str]:
        forms = [key]
        if not self.match_case:
            forms += [f for f in (key.lower(), key.upper()) if f not in forms]
        return [pre + f for f in forms for pre in ("", " ", "\n")]

    @staticmethod
    def _register(text: str) -> int:
        tid = token_id(text)
        with _VOCAB_LOCK:
            old = _VOCAB.setdefault(tid, text)
        if old != text:
            raise InvalidArgumentError(f"virtual token ids of {old!r} and {text!r} collide")
        return tid

    def answer_tokens(self, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        """Spellings ``K``, ``" K"``, ``"\\nK"`` of each key (other cases too with ``match_case=False``),
        each with its virtual id.

        Examples
        --------
        >>> backend = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1", match_case=False)
        >>> [text for text, _ in backend.answer_tokens(["A"])["A"]]
        ['A', ' A', '\\nA', 'a', ' a', '\\na']
        >>> backend.answer_tokens(["B"])["B"][1] == (" B", token_id(" B"))
        True
        """
        return {str(k): [(s, self._register(s)) for s in self._spellings(str(k))] for k in keys}

    def digit_tokens(self) -> list[tuple[str, int]]:
        """Digit strings of one and two characters (most tokenizers' digit tokens), virtual ids.

        Examples
        --------
        >>> digits = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1").digit_tokens()
        >>> len(digits), digits[0][0], digits[10][0], digits[-1][0]
        (110, '0', '00', '99')
        """
        texts = [str(d) for d in range(10)] + [f"{d:02d}" for d in range(100)]
        return [(t, self._register(t)) for t in texts]

    def _first_position(self, data: dict[str, Any]) -> dict[str, float] | None:
        """``{token text: logprob}`` of the first generated position, or None when absent."""
        ch = data["choices"][0]
        lp = ch.get("logprobs")
        if not lp:
            return None
        if isinstance(lp.get("content"), list):  # chat format
            if not lp["content"]:
                return None
            first = lp["content"][0]
            top = {t["token"]: float(t["logprob"]) for t in first.get("top_logprobs") or []}
            top.setdefault(first["token"], float(first["logprob"]))
            return top
        tops = lp.get("top_logprobs")
        if not tops or tops[0] is None:
            toks, vals = lp.get("tokens"), lp.get("token_logprobs")
            if toks and vals and vals[0] is not None:
                return {toks[0]: float(vals[0])}
            return None
        return {str(t): float(v) for t, v in tops[0].items()}

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int]) -> np.ndarray:
        """log p(t | prompt) for the requested (virtual) ids from the top-k of the first generated
        token: ``-inf`` where a spelling is outside the top k (recorded in :meth:`topk_report`).

        Examples
        --------
        Needs the server (not run here):

        >>> backend = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1")  # vllm serve, llama.cpp
        >>> ids = [i for k in "AB" for _, i in backend.answer_tokens([k])[k]]
        >>> backend.next_token_logprobs(["Question: Is it? A. No. B. Yes. Answer:"], ids).shape  # doctest: +SKIP
        (1, 6)
        """
        prompts = check_prompts(prompts)
        ids = [int(t) for t in token_ids]
        unknown = [t for t in ids if t not in _VOCAB]
        if unknown:
            raise InvalidArgumentError("OpenAIBackend has no tokenizer: ask for the ids of answer_tokens() or "
                                       f"digit_tokens(); unknown ids {unknown[:5]}")
        if self.top_logprobs < 1:
            raise CapabilityError("next-token probabilities need top_logprobs >= 1")
        texts = [_VOCAB[t] for t in ids]
        groups = [t.lstrip(" \n") if self.match_case else t.lstrip(" \n").casefold() for t in texts]
        params = self._next_token_params()
        # the keys the spellings have in the response: their texts, or "token_id:<server id>" (a
        # spelling that is not one token of the server's vocabulary is never among them)
        keys = [self._id_key(t) for t in texts] if self.uses_token_ids() else texts
        resp = self._run("next_token", prompts, params)
        out = np.full((len(prompts), len(ids)), -np.inf, dtype=np.float32)
        truncated = 0
        for i, (p, data) in enumerate(zip(prompts, resp)):
            top = self._first_position(data)
            if top is None:
                raise CapabilityError(f"{self.base_url} returned no log-probabilities for model {self.model!r} on the "
                                      f"{self.endpoint} endpoint: this server/model gives no logprobs/top_logprobs; "
                                      "use verbalized answers (generate + parse_probability) instead")
            seen = {j: top[s] for j, s in enumerate(keys) if s is not None and s in top}
            for j, v in seen.items():
                out[i, j] = v
            top_mass = float(sum(math.exp(v) for v in top.values()))
            # an answer key (its spellings grouped) with no spelling in the top k
            keys_unseen = len({g for g in groups} - {groups[j] for j in seen})
            rec = {"requested": len(ids), "seen": len(seen), "keys": len(set(groups)), "keys_unseen": keys_unseen,
                   "seen_mass": float(sum(math.exp(v) for v in seen.values())), "topk_mass": min(top_mass, 1.0),
                   "unseen_bound": max(0.0, 1.0 - top_mass), "k": len(top)}
            self._topk.add(p, rec)
            if keys_unseen and rec["unseen_bound"] > 0:
                truncated += 1
        if truncated:
            with self.ledger._lock:
                self.ledger.topk_truncated += truncated
            warnings.warn(f"{truncated} of {len(prompts)} prompts had requested tokens outside the top "
                          f"{self.top_logprobs} log-probabilities: their scores are renormalised over the tokens "
                          "seen; OpenAIBackend.topk_report gives each prompt's unseen mass bound",
                          LLMSurrogateWarning, stacklevel=2)
        return out

    def _next_token_params(self, token_ids: bool | None = None) -> dict[str, Any]:
        params = {"max_tokens": 1, "temperature": 0.0, "seed": self.seed, "logprobs": self.top_logprobs}
        if self.uses_token_ids() if token_ids is None else token_ids:
            params["token_ids"] = True
        return params

    def _id_key(self, text: str) -> str | None:
        """``"token_id:<id>"`` of the server's single token spelled ``text`` (None: not one token)."""
        if text not in self._server_ids:
            self._server_ids[text] = self._tokenize(text)
        sid = self._server_ids[text]
        return None if sid is None else f"token_id:{sid}"

    def topk_report(self, prompts: Sequence[str]):
        """Per prompt scored by :meth:`next_token_logprobs` through this backend object (a response
        read back from the response cache counts; a result the scoring layer's cache answered
        without calling the backend does not: NaN row): ``requested`` spellings, ``seen`` in the top k, answer ``keys`` (spellings grouped
        without their leading space/newline) and ``keys_unseen`` (no spelling in the top k),
        ``seen_mass`` on the spellings seen,
        ``topk_mass`` of all top-k tokens and ``unseen_bound = 1 - topk_mass`` (the most any
        spelling outside the top k can hold). A DataFrame, one row per prompt.

        Examples
        --------
        A prompt not scored by this object has a row of NaN (scoring one needs the server):

        >>> backend = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1")
        >>> report = backend.topk_report(["Question: Is it? A. No. B. Yes. Answer:"])
        >>> list(report.columns), int(report.isna().all(axis=1).sum())
        (['requested', 'seen', 'keys', 'keys_unseen', 'seen_mass', 'topk_mass', 'unseen_bound', 'k'], 1)
        """
        rows = []
        for p in check_prompts(prompts):
            rec = self._topk.get(p)
            rows.append(rec or dict.fromkeys(_TOPK_FIELDS, np.nan))
        return pd.DataFrame(rows, columns=list(_TOPK_FIELDS))

    def topk_summary(self) -> dict[str, Any]:
        """The top-k report of every prompt scored through this object, in a few numbers (what the
        command line writes to ``run.json`` as ``topk``): ``keyed_by`` (``"token id"``,
        ``"token text"``, or None while undecided), ``top_logprobs`` (k asked for), ``prompts``
        scored, and over them ``unseen_bound_max`` / ``unseen_bound_mean`` (the most mass outside
        the top k: ``1 - topk_mass``), ``topk_mass_min``, ``k_min`` (distinct tokens the server
        returned) and ``prompts_with_keys_unseen`` (an answer key with no spelling in the top k).

        Examples
        --------
        >>> OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1", token_ids=False).topk_summary()
        {'keyed_by': 'token text', 'top_logprobs': 20, 'prompts': 0}
        """
        decided = self.uses_token_ids(ask=False)
        out: dict[str, Any] = {"keyed_by": None if decided is None else ("token id" if decided else "token text"),
                               "top_logprobs": self.top_logprobs, "prompts": len(self._topk)}
        v = self._topk.values()
        if len(v):
            col = {f: v[:, i] for i, f in enumerate(_TOPK_FIELDS)}
            bounds = col["unseen_bound"]
            out.update(unseen_bound_max=float(bounds.max()), unseen_bound_mean=float(math.fsum(bounds) / len(bounds)),
                       topk_mass_min=float(col["topk_mass"].min()), k_min=int(col["k"].min()),
                       prompts_with_keys_unseen=int(np.count_nonzero(col["keys_unseen"])))
        return out

    def prompt_logprobs(self, prompts: Sequence[str]) -> RaggedLogprobs:
        """log p(token | tokens before) of every prompt token, from the completions endpoint with
        ``echo=True`` (first token NaN). Token ids are virtual (hashes of the token texts).

        Servers differ on the first token: vLLM echoes a BOS token (no value) and then the first
        prompt token with its value; llama-cpp-python drops BOS from the echo and gives the first
        prompt token no value either, so there one token fewer is scored (for LAP: n - 1 of n).

        Examples
        --------
        Needs the server (not run here):

        >>> backend = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1")  # vllm serve, llama.cpp
        >>> rl = backend.prompt_logprobs(["The quick brown fox"])  # doctest: +SKIP
        >>> len(rl), bool(np.isnan(rl[0][0])), bool((rl[0][1:] <= 0).all())  # doctest: +SKIP
        (1, True, True)
        """
        prompts = check_prompts(prompts)
        if self.endpoint != "completions":
            raise CapabilityError("prompt log-probabilities need the completions endpoint with echo=True "
                                  "(vLLM, llama.cpp); the chat endpoint cannot echo them")
        params = {"max_tokens": 1, "temperature": 0.0, "seed": self.seed, "logprobs": 0, "echo": True}
        resp = self._run("prompt_logprobs", prompts, params)
        vals, tids, lens = [], [], []
        for p, data in zip(prompts, resp):
            lp = data["choices"][0].get("logprobs") or {}
            toks, lps, offs = lp.get("tokens"), lp.get("token_logprobs"), lp.get("text_offset")
            if not toks or lps is None:
                raise CapabilityError(f"{self.base_url} did not echo the prompt's log-probabilities (completions with "
                                      "echo=True and logprobs): this server does not support prompt log-probabilities")
            if offs is not None and len(offs) == len(toks):
                n = sum(1 for o in offs if o < len(p))
            else:
                usage = data.get("usage") or {}
                n = int(usage.get("prompt_tokens") or len(toks) - 1)
            n = min(n, len(toks))
            if "".join(toks[:n]) != p and "".join(toks[:n]).strip() != p.strip():
                log.debug("echoed tokens do not spell the prompt exactly (%r...)", "".join(toks[:n])[:40])
            v = np.array([np.nan if x is None else float(x) for x in lps[:n]], dtype=np.float32)
            if n:
                v[0] = np.nan
            vals.append(v)
            tids.append(np.array([token_id(t) for t in toks[:n]], dtype=np.int32))
            lens.append(n)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        values = np.concatenate(vals) if vals else np.zeros(0, np.float32)
        token_ids = np.concatenate(tids) if tids else np.zeros(0, np.int32)
        return RaggedLogprobs(values=values.astype(np.float32), offsets=offsets, token_ids=token_ids)

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 16) -> list[str]:
        """Continuations (chat: the assistant's message) at the backend's temperature (0) and seed.

        Examples
        --------
        Needs the server (not run here):

        >>> backend = OpenAIBackend("gpt-4o-mini", endpoint="chat")  # reads OPENAI_API_KEY
        >>> backend.generate(["Answer with one word: the capital of France?"], max_new_tokens=4)  # doctest: +SKIP
        ['Paris']
        """
        prompts = check_prompts(prompts)
        params = {"max_tokens": int(max_new_tokens), "temperature": self.temperature, "seed": self.seed}
        resp = self._run("generate", prompts, params)
        out = []
        for data in resp:
            ch = data["choices"][0]
            text = ch.get("text")
            if text is None:
                text = (ch.get("message") or {}).get("content") or ""
            out.append(text)
        return out

    def verbalized(self, prompts: Sequence[str], *, prefill: str = "0.", max_new_tokens: int = 4) -> np.ndarray:
        """Probabilities parsed from generated text (:func:`parse_probability`; NaN where none)
        for models without log-probabilities: the numeric prompt ends with ``prefill``.

        Examples
        --------
        Needs the server (not run here):

        >>> backend = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1")
        >>> backend.verbalized(["... Answer (between 0 and 1): 0."])  # the model wrote "75"  # doctest: +SKIP
        array([0.75])
        """
        texts = self.generate(prompts, max_new_tokens=max_new_tokens)
        return np.array([np.nan if (v := parse_probability(t, prefill)) is None else v for t in texts])

    def is_cached(self, prompts: Sequence[str], kind: str = "next_token") -> list[bool]:
        """Whether each prompt's response of ``kind`` (``next_token``, ``prompt_logprobs``) is stored.
        Sends no request.

        Examples
        --------
        >>> backend = OpenAIBackend("my-model", base_url="http://127.0.0.1:8000/v1")
        >>> backend.is_cached(["Question: Is it? A. No. B. Yes. Answer:"]), backend.ledger.requests
        ([False], 0)
        """
        check_choice(kind, "kind", ["next_token", "prompt_logprobs"])
        prompts = check_prompts(prompts)
        echo = {"max_tokens": 1, "temperature": 0.0, "seed": self.seed, "logprobs": 0, "echo": True}
        if kind == "prompt_logprobs":
            variants = [echo]
        else:  # keyed as decided; undecided (nothing asked, nothing stored yet): stored either way
            decided = self.uses_token_ids(ask=False)
            variants = [self._next_token_params(t) for t in ([decided] if decided is not None else [False, True])]
        stored = [False] * len(prompts)
        for params in variants:
            keys = [self._request_key(kind, p, params) for p in prompts]
            found = self._cache.get_many(keys)
            stored = [s or k in found or k in self._memory for s, k in zip(stored, keys)]
        return stored

