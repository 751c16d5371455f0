"""``OpenAIBackend``: any OpenAI-compatible HTTP endpoint (OpenAI, Azure-style gateways, ``vllm
serve``, llama.cpp's server) through the official ``openai`` client (the ``openai`` extra).

The backend protocol (:mod:`.base`) speaks in token ids; an HTTP endpoint speaks in token *texts*.
This backend keeps a small virtual vocabulary: :meth:`OpenAIBackend.answer_tokens` and
:meth:`OpenAIBackend.digit_tokens` give every spelling a stable id (a hash of its text), and
:meth:`OpenAIBackend.next_token_logprobs` reads those spellings in the ``top_logprobs`` the server
returns for the first generated token.

Top-k truncation (docs/methods/risk-scores.md §1.8). A server returns the log-probabilities of
its top ``k`` tokens only (``top_logprobs``; OpenAI allows at most 20). A requested spelling that
is not among them gets log-probability ``-inf`` -- the scoring layer then renormalises over the
spellings that were seen -- and it is *reported*, never silent: :meth:`OpenAIBackend.topk_report`
gives, per prompt, the mass seen on the requested spellings, the total mass of the top k and
``unseen_bound = 1 - top-k mass`` (no spelling outside the top k can have more), and the ledger
counts the prompts with a requested spelling outside the top k (a warning says how many).

Byte tokens. A server that keys ``top_logprobs`` by token *text* merges the distinct byte tokens
of a byte-level BPE vocabulary that decode to the same text (vLLM, with the package's tiny model:
800 tokens asked for, 673 keys summing to 0.84 came back), so the top-k mass and
``unseen_bound`` are wrong. ``token_ids=True`` (vLLM's servers) asks for keys by token id instead
(``return_tokens_as_token_ids``) and finds each spelling's id through the server's ``/tokenize``
(stored in the response cache like every response): every token counts once.

Token matching follows the risk-score spec: a key ``K`` is matched by the single tokens ``"K"``,
``" K"`` and ``"\\nK"`` (leading space or newline, §1.6), case-sensitively unless
``match_case=False`` (then ``"k"``, ``" k"`` and ``"\\nk"`` count for ``K`` too).

Prompt log-probabilities (:meth:`OpenAIBackend.prompt_logprobs`, the lookahead LAP) come from the
completions endpoint with ``echo=True`` and ``logprobs`` (vLLM, llama.cpp); a server that does not
echo them raises :class:`CapabilityError` naming what is missing. Generation is greedy
(temperature 0) with a fixed seed by default. :func:`parse_probability` reads a verbalized
probability from generated text (models without log-probabilities).

Throughput and cost: requests run on a thread pool (``concurrency``), under client-side rate
limits (requests and tokens per minute), with retries (exponential backoff with full jitter,
``Retry-After`` honoured) on 429, 5xx, timeouts, dropped connections and malformed bodies. The
:class:`Ledger` counts requests, retries by cause, tokens (from each response's ``usage``) and
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
the client's exception chained).
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import logging
import math
import os
import random
import re
import threading
import time
import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._optional import require
from ..exceptions import ComputationError, InvalidArgumentError, LLMSurrogateWarning
from .base import RaggedLogprobs, check_prompts
from .cache import Cache, NullCache, as_cache

__all__ = ["OpenAIBackend", "Ledger", "BudgetExceededError", "CapabilityError", "RequestFailedError",
           "parse_probability", "token_id"]

log = logging.getLogger("llmsurrogate.llm.openai")

#: Producer tag of stored responses: a response does not depend on the local torch/vllm versions.
RESPONSE_PRODUCER = "openai-http-response-v1"
RESPONSE_TEMPLATE = "openai-response-v1"


class CapabilityError(InvalidArgumentError):
    """The endpoint cannot give what was asked (log-probabilities, echoed prompt log-probabilities)."""


class BudgetExceededError(ComputationError):
    """The run's ``max_cost`` or ``max_tokens`` is spent; every response received is in the cache."""


class RequestFailedError(ComputationError):
    """A request failed for good (retries exhausted, or an error that retrying cannot fix)."""


def token_id(text: str) -> int:
    """The stable virtual id of a token text (28 bits of its SHA-256): the same in every process."""
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


class _Scrubber:
    """Replaces the API key's value in any text (exception messages, logged lines)."""

    def __init__(self, secret: str | None):
        self._secret = secret or None

    def __call__(self, text: Any) -> str:
        s = str(text)
        if self._secret and self._secret in s:
            s = s.replace(self._secret, "***")
        return s

    def __repr__(self) -> str:
        return "_Scrubber(***)"


class RateLimiter:
    """Client-side limits over a sliding 60-second window: requests per minute and tokens per
    minute (``None``: no limit). ``acquire(tokens)`` blocks until both allow the request."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None, *, clock=time.monotonic, sleep=time.sleep):
        self.rpm, self.tpm = rpm, tpm
        self._events: deque = deque()  # (time, tokens)
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        self.waited = 0.0

    def acquire(self, tokens: int) -> None:
        if self.rpm is None and self.tpm is None:
            return
        if self.tpm is not None and tokens > self.tpm:
            raise InvalidArgumentError(f"one request needs about {tokens} tokens, more than tokens_per_minute={self.tpm}")
        while True:
            with self._lock:
                now = self._clock()
                while self._events and now - self._events[0][0] >= 60.0:
                    self._events.popleft()
                n = len(self._events)
                used = sum(t for _, t in self._events)
                ok_r = self.rpm is None or n + 1 <= self.rpm
                ok_t = self.tpm is None or used + tokens <= self.tpm
                if ok_r and ok_t:
                    self._events.append((now, tokens))
                    return
                wait = 60.0 - (now - self._events[0][0]) + 1e-3
            wait = min(max(wait, 0.01), 60.0)
            self.waited += wait
            self._sleep(wait)


class Ledger:
    """Per-run counts: requests sent, responses, retries by cause, cache reuse, tokens and cost.

    Cost is computed from ``prices`` = ``{"input": $ per 1M prompt tokens, "output": $ per 1M
    completion tokens}`` (no price is built in; without prices the cost is ``None``)."""

    def __init__(self, prices: Mapping[str, float] | None = None):
        self.prices = None if prices is None else {k: float(v) for k, v in dict(prices).items()}
        if self.prices is not None:
            bad = set(self.prices) - {"input", "output"}
            if bad or any(v < 0 or not math.isfinite(v) for v in self.prices.values()):
                raise InvalidArgumentError("argument `prices` must be {'input': $/1M tokens, 'output': $/1M tokens} "
                                           "with finite non-negative values")
        self._lock = threading.Lock()
        self.requests = 0
        self.responses = 0
        self.cached = 0
        self.retries: dict[str, int] = {}
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.topk_truncated = 0
        self.reserved_tokens = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def cost_of(self, prompt_tokens: float, completion_tokens: float) -> float | None:
        if self.prices is None:
            return None
        return (prompt_tokens * self.prices.get("input", 0.0) + completion_tokens * self.prices.get("output", 0.0)) / 1e6

    @property
    def cost(self) -> float | None:
        return self.cost_of(self.prompt_tokens, self.completion_tokens)

    def add_usage(self, usage: Mapping[str, Any] | None) -> None:
        u = dict(usage or {})
        with self._lock:
            self.responses += 1
            self.prompt_tokens += int(u.get("prompt_tokens") or 0)
            self.completion_tokens += int(u.get("completion_tokens") or 0)

    def retry(self, cause: str) -> None:
        with self._lock:
            self.retries[cause] = self.retries.get(cause, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": self.requests, "responses": self.responses, "cached_responses": self.cached,
                    "retries": dict(sorted(self.retries.items())), "retries_total": sum(self.retries.values()),
                    "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                    "tokens": self.tokens, "cost": self.cost, "prices_per_1m_tokens": self.prices,
                    "topk_truncated_prompts": self.topk_truncated}

    def summary(self) -> str:
        d = self.as_dict()
        cost = "cost unknown (no prices given)" if d["cost"] is None else f"cost ${d['cost']:.6f}"
        return (f"{d['requests']} requests ({d['retries_total']} retries), {d['cached_responses']} responses reused "
                f"from the cache, {d['tokens']} tokens ({d['prompt_tokens']} prompt + {d['completion_tokens']} "
                f"completion), {cost}")

    def __repr__(self) -> str:
        return f"Ledger({self.summary()})"


class _ResponseCache(Cache):
    """The package's SQLite cache with a fixed producer tag for HTTP responses."""

    def __init__(self, directory, **kw):
        super().__init__(directory, **kw)
        self.producer = RESPONSE_PRODUCER


class _Retryable(Exception):
    def __init__(self, cause: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.cause, self.retry_after = cause, retry_after


def _retry_after(headers) -> float | None:
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(float(ms) / 1000.0, 0.0)
        v = headers.get("retry-after")
        if v is None:
            return None
        try:
            return max(float(v), 0.0)
        except ValueError:
            from email.utils import parsedate_to_datetime

            return max(parsedate_to_datetime(v).timestamp() - time.time(), 0.0)
    except Exception:  # noqa: BLE001 - a malformed header is ignored, the backoff applies
        return None


def _normalise_url(url: str) -> str:
    u = str(url).strip().rstrip("/")
    if not re.match(r"^https?://[^\s/]+", u):
        raise InvalidArgumentError(f"argument `base_url` must be an http(s) URL such as http://127.0.0.1:8000/v1; got {u!r}")
    return u


class OpenAIBackend:
    """Score prompts with a model behind an OpenAI-compatible HTTP endpoint.

    Parameters
    ----------
    model : the model name the endpoint serves (``"gpt-4o-mini"``, the ``--served-model-name``).
    base_url : the endpoint (``"https://api.openai.com/v1"``, ``"http://127.0.0.1:8000/v1"``);
        requests go there and nowhere else.
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
        byte-level tokenizers. vLLM's servers only (``vllm serve``); default off.

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
                 prompts_per_call: int = 256, token_ids: bool = False):
        from .._validation import check_choice, check_int

        if not isinstance(model, str) or not model:
            raise InvalidArgumentError("argument `model` must be the non-empty name of the served model")
        self.model = model
        self.base_url = _normalise_url(base_url)
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
        self.concurrency = check_int(concurrency, "concurrency", minimum=1)
        self.max_retries = check_int(max_retries, "max_retries", minimum=0)
        self.backoff, self.max_backoff, self.timeout = float(backoff), float(max_backoff), float(timeout)
        if self.timeout <= 0 or self.backoff < 0 or self.max_backoff < 0:
            raise InvalidArgumentError("`timeout` must be > 0 and `backoff`, `max_backoff` >= 0")
        self.ledger = Ledger(prices)
        if max_cost is not None:
            max_cost = float(max_cost)
            if not max_cost >= 0:
                raise InvalidArgumentError("argument `max_cost` must be >= 0")
            if self.ledger.prices is None:
                raise InvalidArgumentError("argument `max_cost` needs `prices` ({'input': ..., 'output': ...} in $ per "
                                           "1M tokens): no price is built in")
        self.max_cost = max_cost
        self.max_tokens = None if max_tokens is None else check_int(max_tokens, "max_tokens", minimum=0)
        self.limiter = RateLimiter(requests_per_minute, tokens_per_minute)
        self.extra_body = dict(extra_body or {})
        self.prompts_per_call = check_int(prompts_per_call, "prompts_per_call", minimum=1)
        if not isinstance(token_ids, bool):
            raise InvalidArgumentError(f"argument `token_ids` must be True or False; got {token_ids!r}")
        self.token_ids = token_ids
        self._server_ids: dict[str, int | None] = {}
        self._cache: Cache | NullCache = self._as_response_cache(cache)
        self._memory: dict[str, bytes] = {}
        self._topk: dict[str, dict[str, Any]] = {}
        self._budget_lock = threading.Lock()
        self._stop = threading.Event()
        #: optional ``progress(label, done, total)`` callback fed with the ledger after each response
        self.progress = None
        self._progress_lock = threading.Lock()
        key = os.environ.get(api_key_env)
        self._scrub = _Scrubber(key)
        openai = require("openai", purpose="OpenAIBackend")
        self._openai = openai
        # the client holds the key; it is never printed (see __repr__) and never leaves this object
        self._client = openai.OpenAI(api_key=key or "no-key", base_url=self.base_url, max_retries=0,
                                     timeout=self.timeout)
        self.identity = {"backend": "openai", "model": self.model, "base_url": self._scrub(self.base_url),
                         "endpoint": self.endpoint, "top_logprobs": self.top_logprobs, "system": self.system,
                         "temperature": self.temperature, "seed": self.seed,
                         "extra_body": json.loads(self._scrub(json.dumps(self.extra_body, sort_keys=True)))}
        if self.token_ids:  # only then: the identities (and cache keys) of text-keyed runs stay as they were
            self.identity["token_ids"] = True

    # ---------------------------------------------------------------- plumbing

    @staticmethod
    def _as_response_cache(cache):
        if cache is None:
            return NullCache()
        if isinstance(cache, NullCache):
            return cache
        if isinstance(cache, Cache):
            return _ResponseCache(cache.directory)
        c = as_cache(cache)
        return _ResponseCache(c.directory) if isinstance(c, Cache) else c

    def use_cache(self, cache) -> None:
        """Store responses in ``cache`` (a folder or a Cache) from now on."""
        self._cache = self._as_response_cache(cache)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={self.identity['base_url']!r}, endpoint={self.endpoint!r})"

    def __getstate__(self):
        raise TypeError("OpenAIBackend cannot be pickled (it holds a client with the API key); build one per process")

    def _request_key(self, kind: str, prompt: str, params: Mapping[str, Any]) -> str:
        head = {"url": self.identity["base_url"], "endpoint": self.endpoint, "model": self.model}
        return Cache.key(backend="openai-http", model=json.dumps(head, sort_keys=True), prompt=prompt,
                         template=RESPONSE_TEMPLATE, params={"kind": kind, **params, "extra_body": self.identity["extra_body"]})

    def _body(self, prompt: str, params: Mapping[str, Any]) -> dict[str, Any]:
        p = dict(params)
        body: dict[str, Any] = {"model": self.model, "max_tokens": p.pop("max_tokens"),
                                "temperature": p.pop("temperature")}
        if p.get("seed") is not None:
            body["seed"] = p.pop("seed")
        p.pop("seed", None)
        if self.endpoint == "chat":
            msgs = ([{"role": "system", "content": self.system}] if self.system else []) + \
                [{"role": "user", "content": prompt}]
            body["messages"] = msgs
            k = p.pop("logprobs", None)
            if k is not None:
                body["logprobs"] = True
                body["top_logprobs"] = int(k)
            if p.pop("echo", False):
                raise CapabilityError("the chat endpoint cannot echo the prompt's log-probabilities")
        else:
            body["prompt"] = prompt
            k = p.pop("logprobs", None)
            if k is not None:
                body["logprobs"] = int(k)
            if p.pop("echo", False):
                body["echo"] = True
        extra = dict(self.extra_body)
        if p.pop("token_ids", False):
            extra["return_tokens_as_token_ids"] = True
        if extra:
            body["extra_body"] = extra
        return body

    @staticmethod
    def _estimate_prompt_tokens(prompt: str) -> int:
        """An overestimate of a prompt's tokens (3 UTF-8 bytes per token, plus template tokens)."""
        return int(math.ceil(len(prompt.encode("utf-8")) / 3.0)) + 8

    def _check_budget(self, estimate: int, prompt_est: int, completion_est: int) -> None:
        """Reserve ``estimate`` tokens, or raise BudgetExceededError (and stop the run)."""
        led = self.ledger
        with self._budget_lock:
            if self._stop.is_set():
                raise BudgetExceededError("stopped")
            spent_t = led.tokens + led.reserved_tokens
            if self.max_tokens is not None and spent_t + estimate > self.max_tokens:
                self._stop.set()
                raise BudgetExceededError(f"token budget max_tokens={self.max_tokens} reached: {led.tokens} tokens used "
                                          f"(+{led.reserved_tokens} in flight); the next request needs about {estimate}")
            if self.max_cost is not None:
                spent_c = led.cost_of(led.prompt_tokens + led.reserved_tokens, led.completion_tokens) or 0.0
                worst = led.cost_of(prompt_est, completion_est) or 0.0
                if spent_c + worst > self.max_cost:
                    self._stop.set()
                    raise BudgetExceededError(f"cost budget max_cost=${self.max_cost:g} reached: ${led.cost:.6f} spent "
                                              f"(+ requests in flight); the next request may cost up to ${worst:.6f}")
            led.reserved_tokens += estimate

    def _release(self, estimate: int) -> None:
        with self._budget_lock:
            self.ledger.reserved_tokens -= estimate

    def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One HTTP request; a dict of the JSON response, or _Retryable / RequestFailedError."""
        oa = self._openai
        try:
            if self.endpoint == "chat":
                raw = self._client.chat.completions.with_raw_response.create(**body)
            else:
                raw = self._client.completions.with_raw_response.create(**body)
            text = raw.text if hasattr(raw, "text") else raw.http_response.text
            data = json.loads(text)
        except oa.RateLimitError as err:
            raise _Retryable("429", self._describe(err), _retry_after(getattr(err.response, "headers", None))) from None
        except oa.APITimeoutError as err:
            raise _Retryable("timeout", self._describe(err)) from None
        except oa.APIConnectionError as err:
            raise _Retryable("connection", self._describe(err)) from None
        except oa.APIStatusError as err:
            status = int(getattr(err, "status_code", 0) or 0)
            if status >= 500 or status in (408, 409):
                raise _Retryable(f"http_{status}", self._describe(err),
                                 _retry_after(getattr(err.response, "headers", None))) from None
            msg = self._describe(err)
            if status == 400 and ("logprob" in msg.lower() or "echo" in msg.lower()):
                raise CapabilityError(f"{self.base_url} refused the request's log-probability options "
                                      f"(logprobs/top_logprobs/echo): {msg}") from None
            hint = ""
            if status in (401, 403) and not self._scrub._secret:
                hint = f" (the environment variable {self.api_key_env} is not set)"
            raise RequestFailedError(f"{self.base_url} answered HTTP {status}{hint}: {msg}") from None
        except (ValueError, oa.APIResponseValidationError) as err:  # truncated or malformed JSON
            raise _Retryable("malformed_response", f"malformed response body ({type(err).__name__}: "
                                                   f"{self._scrub(str(err))[:200]})") from None
        if not isinstance(data, dict) or not data.get("choices"):
            raise _Retryable("malformed_response", "response without choices")
        if isinstance(data.get("error"), dict):
            raise _Retryable("error_body", self._scrub(json.dumps(data["error"]))[:300])
        return data

    def _describe(self, err: Exception) -> str:
        status = getattr(err, "status_code", None)
        body = getattr(err, "body", None)
        detail = body if body is not None else str(err)
        s = f"{type(err).__name__}" + (f" (HTTP {status})" if status else "") + f": {detail}"
        return self._scrub(s)[:500]

    def _request(self, kind: str, prompt: str, params: dict[str, Any]) -> dict[str, Any]:
        """The response to (prompt, params): from the cache, or sent (with retries, rate limits
        and the budget) and written to the cache before it is returned."""
        key = self._request_key(kind, prompt, params)
        got = self._lookup(key)
        if got is not None:
            with self.ledger._lock:
                self.ledger.cached += 1
            return got
        body = self._body(prompt, params)
        prompt_est = self._estimate_prompt_tokens(prompt)
        estimate = prompt_est + int(params["max_tokens"])
        attempt = 0
        while True:
            self._check_budget(estimate, prompt_est, int(params["max_tokens"]))
            try:
                self.limiter.acquire(estimate)
                with self.ledger._lock:
                    self.ledger.requests += 1
                try:
                    data = self._send(body)
                except _Retryable as err:
                    if attempt >= self.max_retries:
                        raise RequestFailedError(f"request to {self.base_url} failed after {attempt + 1} attempts "
                                                 f"(last: {err.cause}: {err}); responses received so far are cached, "
                                                 "run again to resume") from None
                    self.ledger.retry(err.cause)
                    delay = random.uniform(0.0, min(self.max_backoff, self.backoff * 2 ** attempt))
                    if err.retry_after is not None:
                        delay = max(delay, min(err.retry_after, max(self.max_backoff, err.retry_after)))
                    log.info("retry %d after %.2fs: %s", attempt + 1, delay, err.cause)
                    attempt += 1
                    self._sleep(delay)
                    continue
                # counts only once stored: a crash after this line loses nothing paid for
                self._store(key, data)
                self.ledger.add_usage(data.get("usage"))
                self._report()
                return data
            finally:
                self._release(estimate)

    def _report(self) -> None:
        """The ledger to ``self.progress`` (a ``progress(label, done, total)`` callback, e.g. the
        command line's bar): responses received, tokens used (of ``max_tokens`` when set) and the cost
        so far in cents (of ``max_cost`` when set; shown when prices or a cost budget are given)."""
        if self.progress is None:
            return
        try:
            with self._progress_lock:
                led = self.ledger
                self.progress("HTTP responses", led.responses, None)
                self.progress("tokens used", led.tokens, self.max_tokens)
                if led.cost is not None or self.max_cost:  # the cost itself, in cents of the price unit
                    self.progress("cost (cents)", int(round(100 * (led.cost or 0.0))),
                                  int(round(100 * self.max_cost)) if self.max_cost else None)
        except Exception:  # noqa: BLE001 - a display problem never stops the run
            pass

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stop.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.2))
        raise BudgetExceededError("stopped")

    def _lookup(self, key: str) -> dict[str, Any] | None:
        if key in self._memory:
            return json.loads(self._memory[key])
        got = self._cache.get_many([key]).get(key)
        if got is None:
            return None
        return json.loads(bytes(got).decode("utf-8"))

    def _store(self, key: str, data: dict[str, Any]) -> None:
        blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")
        if self._scrub._secret and self._scrub._secret.encode("utf-8") in blob:  # a server echoing the key back
            blob = self._scrub(blob.decode("utf-8")).encode("utf-8")
        if isinstance(self._cache, NullCache):
            self._memory[key] = blob
        else:
            self._cache.put_many([(key, np.frombuffer(blob, dtype=np.uint8))], kind="openai_response")

    def _run(self, kind: str, prompts: list[str], params: dict[str, Any]) -> list[dict[str, Any]]:
        """Responses for every prompt, ``concurrency`` requests at a time. On a budget stop or a
        failed request nothing new is sent; requests in flight finish (and are stored) first."""
        self._stop.clear()
        out: list[dict[str, Any] | None] = [None] * len(prompts)
        if not prompts:
            return []
        # cached first, without threads
        keys = [self._request_key(kind, p, params) for p in prompts]
        found = self._cache.get_many(keys) if not isinstance(self._cache, NullCache) else {}
        todo = []
        for i, k in enumerate(keys):
            if k in found:
                out[i] = json.loads(bytes(found[k]).decode("utf-8"))
                self.ledger.cached += 1
            elif k in self._memory:
                out[i] = json.loads(self._memory[k])
                self.ledger.cached += 1
            else:
                todo.append(i)
        # identical prompts are requested once
        first: dict[str, int] = {}
        for i in todo:
            first.setdefault(keys[i], i)
        uniq = list(first.values())
        error: Exception | None = None
        if self.concurrency == 1 or len(uniq) == 1:
            for i in uniq:
                try:
                    out[i] = self._request(kind, prompts[i], params)
                except Exception as err:  # noqa: BLE001 - reported below, after the answered ones
                    error = err
                    break
        else:
            pool = cf.ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="openai")
            try:
                futs = {pool.submit(self._request, kind, prompts[i], params): i for i in uniq}
                for f in cf.as_completed(futs):
                    try:
                        out[futs[f]] = f.result()
                    except Exception as err:  # noqa: BLE001 - the first real error is reported
                        if error is None or (isinstance(error, BudgetExceededError) and str(error) == "stopped"):
                            error = err
                        self._stop.set()
            except BaseException:  # Ctrl-C: send nothing new, let the requests in flight be stored
                self._stop.set()
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        if error is not None:
            done = sum(o is not None for o in out)
            if isinstance(error, BudgetExceededError):
                raise BudgetExceededError(
                    f"{error}. Stopped cleanly: {done} of {len(prompts)} prompts of this call answered; every response "
                    f"received is in the cache ({self._where()}); run again (with a larger budget) to resume. "
                    f"Ledger: {self.ledger.summary()}") from None
            if isinstance(error, (RequestFailedError, CapabilityError)):
                raise error
            raise RequestFailedError(f"request failed: {self._scrub(repr(error))[:400]}") from None
        for i in todo:
            if out[i] is None:
                out[i] = out[first[keys[i]]]
        return out  # type: ignore[return-value]

    def _where(self) -> str:
        return str(getattr(self._cache, "path", "memory only: pass cache= to keep them"))

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
        each with its virtual id."""
        return {str(k): [(s, self._register(s)) for s in self._spellings(str(k))] for k in keys}

    def digit_tokens(self) -> list[tuple[str, int]]:
        """Digit strings of one and two characters (most tokenizers' digit tokens), virtual ids."""
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
        token: ``-inf`` where a spelling is outside the top k (recorded in :meth:`topk_report`)."""
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
        keys = [self._id_key(t) for t in texts] if self.token_ids else texts
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
            self._topk[hashlib.sha256(p.encode("utf-8")).hexdigest()] = rec
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

    def _next_token_params(self) -> dict[str, Any]:
        params = {"max_tokens": 1, "temperature": 0.0, "seed": self.seed, "logprobs": self.top_logprobs}
        if self.token_ids:
            params["token_ids"] = True
        return params

    def _id_key(self, text: str) -> str | None:
        """``"token_id:<id>"`` of the server's single token spelled ``text`` (None: not one token)."""
        if text not in self._server_ids:
            self._server_ids[text] = self._tokenize(text)
        sid = self._server_ids[text]
        return None if sid is None else f"token_id:{sid}"

    def _tokenize(self, text: str) -> int | None:
        """The id of ``text`` as one token, from the server's ``/tokenize`` (vLLM; no special tokens);
        None where it is several tokens. Stored in the response cache: a rerun sends nothing."""
        import urllib.error
        import urllib.request

        key = self._request_key("tokenize", text, {})
        data = self._lookup(key)
        if data is None:
            url = (self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url) + "/tokenize"
            headers = {"Content-Type": "application/json"}
            if self._scrub._secret:
                headers["Authorization"] = f"Bearer {self._scrub._secret}"
            body = json.dumps({"model": self.model, "prompt": text, "add_special_tokens": False}).encode("utf-8")
            for attempt in range(self.max_retries + 1):
                with self.ledger._lock:
                    self.ledger.requests += 1
                try:
                    with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers),
                                                timeout=self.timeout) as r:
                        data = json.loads(r.read())
                    if isinstance(data, dict) and isinstance(data.get("tokens"), list):
                        break
                except urllib.error.HTTPError as err:
                    if err.code < 500 and err.code not in (408, 429):
                        raise CapabilityError(f"{self.base_url} has no /tokenize (HTTP {err.code}): token_ids=True "
                                              "needs a vLLM server") from None
                except (OSError, ValueError):  # connection, timeout, truncated or malformed body: retried
                    pass
                data = None
                if attempt < self.max_retries:
                    self.ledger.retry("tokenize")
                    self._sleep(random.uniform(0.0, min(self.max_backoff, self.backoff * 2 ** attempt)))
            if data is None:
                raise RequestFailedError(f"{self.base_url}: /tokenize failed after {self.max_retries + 1} attempts")
            self._store(key, {"tokens": [int(t) for t in data["tokens"]]})
        toks = data["tokens"]
        return int(toks[0]) if len(toks) == 1 else None

    def topk_report(self, prompts: Sequence[str]):
        """Per prompt scored by :meth:`next_token_logprobs` through this backend object (a response
        read back from the response cache counts; a result the scoring layer's cache answered
        without calling the backend does not: NaN row): ``requested`` spellings, ``seen`` in the top k, answer ``keys`` (spellings grouped
        without their leading space/newline) and ``keys_unseen`` (no spelling in the top k),
        ``seen_mass`` on the spellings seen,
        ``topk_mass`` of all top-k tokens and ``unseen_bound = 1 - topk_mass`` (the most any
        spelling outside the top k can hold). A DataFrame, one row per prompt."""
        import pandas as pd

        cols = ("requested", "seen", "keys", "keys_unseen", "seen_mass", "topk_mass", "unseen_bound", "k")
        rows = []
        for p in check_prompts(prompts):
            rec = self._topk.get(hashlib.sha256(p.encode("utf-8")).hexdigest())
            rows.append(rec or dict.fromkeys(cols, np.nan))
        return pd.DataFrame(rows)

    def prompt_logprobs(self, prompts: Sequence[str]) -> RaggedLogprobs:
        """log p(token | tokens before) of every prompt token, from the completions endpoint with
        ``echo=True`` (first token NaN). Token ids are virtual (hashes of the token texts).

        Servers differ on the first token: vLLM echoes a BOS token (no value) and then the first
        prompt token with its value; llama-cpp-python drops BOS from the echo and gives the first
        prompt token no value either, so there one token fewer is scored (for LAP: n - 1 of n)."""
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
        """Continuations (chat: the assistant's message) at the backend's temperature (0) and seed."""
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
        for models without log-probabilities: the numeric prompt ends with ``prefill``."""
        texts = self.generate(prompts, max_new_tokens=max_new_tokens)
        return np.array([np.nan if (v := parse_probability(t, prefill)) is None else v for t in texts])

    def is_cached(self, prompts: Sequence[str], kind: str = "next_token") -> list[bool]:
        """Whether each prompt's response of ``kind`` (``next_token``, ``prompt_logprobs``) is stored."""
        params = {"next_token": self._next_token_params(),
                  "prompt_logprobs": {"max_tokens": 1, "temperature": 0.0, "seed": self.seed, "logprobs": 0,
                                      "echo": True}}[kind]
        keys = [self._request_key(kind, p, params) for p in check_prompts(prompts)]
        found = self._cache.get_many(keys)
        return [k in found or k in self._memory for k in keys]

