"""The HTTP side of :class:`~.openai_backend.OpenAIBackend`: transport, retries, rate limits, the
response store and the budget.

* :class:`HTTPTransport` -- sends a request body to an OpenAI-compatible endpoint (the official
  ``openai`` client) on a thread pool of ``concurrency`` requests, under client-side rate limits
  (:class:`RateLimiter`), with retries (exponential backoff with full jitter, ``Retry-After``
  honoured) on 429, 5xx, timeouts, dropped connections and malformed bodies; writes every response
  to the response cache before it is used or counted, counts it in the :class:`~._ledger.Ledger`
  and stops a run cleanly at the budget (``max_cost``, ``max_tokens``).
* The errors a run raises: :class:`CapabilityError`, :class:`BudgetExceededError`,
  :class:`RequestFailedError` (importable from :mod:`.openai_backend` as before).

:class:`HTTPTransport` is the base of :class:`~.openai_backend.OpenAIBackend`, which sets what a
request is made of (``model``, ``base_url``, ``endpoint``, ``system``, ``extra_body``,
``api_key_env`` and ``identity``) and calls :meth:`HTTPTransport._init_transport` and
:meth:`HTTPTransport._connect` from its ``__init__``; scoring (token spellings, top-k reading)
lives there, on top of :meth:`HTTPTransport._run`.

The API key is read from the environment only, and scrubbed (:class:`_Scrubber`) from every
message, log line and stored response. So are the credentials an endpoint URL may carry
(``http://user:PASSWORD@host/v1``, ``?api_key=SECRET``): the URL is shown, recorded and keyed
redacted (:func:`llmsurrogate._redact.redact_url`: no userinfo, no secret query value), and its
secrets are scrubbed like the key, with the HTTP Basic token a client makes of the userinfo. The
query of the URL goes with every request (the ``openai`` client's ``default_query``).
"""

from __future__ import annotations

import base64
import concurrent.futures as cf
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._optional import require
from .._redact import REDACTED, redact_logs, redact_text, url_secrets
from .._validation import check_int
from ..exceptions import ComputationError, InvalidArgumentError
from ._ledger import Ledger
from .cache import Cache, NullCache, as_cache

__all__ = ["RESPONSE_PRODUCER", "RESPONSE_TEMPLATE", "BudgetExceededError", "CapabilityError", "HTTPTransport",
           "RateLimiter", "RequestFailedError"]

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


class _Scrubber:
    """Replaces the API key's value and the endpoint URL's secrets (``others``: userinfo, secret
    query values, their Basic token; those shorter than 4 characters are left to the URL
    redaction) in any text (exception messages, logged lines), and redacts every URL in it."""

    def __init__(self, secret: str | None, others: list[str] | tuple[str, ...] = ()):
        self._secret = secret or None
        self._all = sorted({s for s in others if len(s) >= 4} | ({self._secret} if self._secret else set()),
                           key=len, reverse=True)

    def __call__(self, text: Any) -> str:
        s = redact_text(text)
        for secret in self._all:
            if secret in s:
                s = s.replace(secret, REDACTED)
        return s

    def stored(self, text: str) -> str:
        """``text`` (a response about to be stored) without the key and the URL's secrets of 8
        characters or more: a server that echoes them back leaves none in the cache, and a
        short one cannot alter a response by coincidence (the URL redaction is not applied:
        a prompt or an answer may hold a URL of its own)."""
        for secret in self._all:
            if (secret == self._secret or len(secret) >= 8) and secret in text:
                text = text.replace(secret, REDACTED)
        return text

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
        raise InvalidArgumentError(f"argument `base_url` must be an http(s) URL such as http://127.0.0.1:8000/v1; got "
                                   f"{redact_text(u)!r}")
    return u


def _split_query(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its query and fragment, and the query's parameters (for the ``openai``
    client's ``default_query``: a query left in its ``base_url`` would end up before the path)."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="", fragment="")).rstrip("/"), dict(parse_qsl(parts.query,
                                                                                     keep_blank_values=True))


class HTTPTransport:
    """Requests to an OpenAI-compatible endpoint: cache first, then sent with retries, rate limits
    and the budget, stored before they are used. The base of
    :class:`~.openai_backend.OpenAIBackend` (see the module's docstring for what it sets)."""

    def _init_transport(self, *, concurrency: int, requests_per_minute: float | None, tokens_per_minute: float | None,
                        max_retries: int, backoff: float, max_backoff: float, timeout: float,
                        prices: Mapping[str, float] | None, max_cost: float | None, max_tokens: int | None) -> None:
        """Throughput, retries, the ledger and the budget (arguments as in OpenAIBackend)."""
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

    def _connect(self, cache: Any, api_key_env: str, url: str) -> None:
        """The response store, the stop flag, the progress callback and the client (the key is
        read from the environment variable ``api_key_env`` here and nowhere else) for the endpoint
        ``url`` as given (credentials and all; ``self.base_url`` is its redacted form)."""
        self._cache: Cache | NullCache = self._as_response_cache(cache)
        self._memory: dict[str, bytes] = {}
        self._budget_lock = threading.Lock()
        self._stop = threading.Event()
        #: optional ``progress(label, done, total)`` callback fed with the ledger after each response
        self.progress = None
        self._progress_lock = threading.Lock()
        key = os.environ.get(api_key_env)
        self._scrub = _Scrubber(key, url_secrets(url))
        self._endpoint = url  # the URL requests go to: never shown (self.base_url is)
        redact_logs()  # the HTTP clients' own log records (httpx logs each request's URL)
        openai = require("openai", purpose="OpenAIBackend")
        self._openai = openai
        # the client holds the key; it is never printed (see __repr__) and never leaves this object
        base, query = _split_query(url)
        self._client = openai.OpenAI(api_key=key or "no-key", base_url=base, max_retries=0, timeout=self.timeout,
                                     default_query=query or None)

    @staticmethod
    def _as_response_cache(cache):
        if cache is None:
            return NullCache()
        if isinstance(cache, NullCache):
            return cache
        if isinstance(cache, Cache):  # the caller's cache: one owner of its SQLite file, seen with the response tag
            return cache.with_producer(RESPONSE_PRODUCER)
        if isinstance(cache, (str, os.PathLike)):  # a folder: this backend opens (and owns) the cache
            return _ResponseCache(cache)
        return as_cache(cache)  # anything else: the one error message of `cache=`

    def use_cache(self, cache) -> None:
        """Store responses in ``cache`` (a folder or a Cache) from now on."""
        self._cache = self._as_response_cache(cache)


    def _request_key(self, kind: str, prompt: str, params: Mapping[str, Any]) -> str:
        head = {"url": self._identity["base_url"], "endpoint": self.endpoint, "model": self.model}
        return Cache.key(backend="openai-http", model=json.dumps(head, sort_keys=True), prompt=prompt,
                         template=RESPONSE_TEMPLATE, params={"kind": kind, **params,
                                                             "extra_body": self._identity["extra_body"]})

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
            if status in (401, 403) and not self._scrub._secret and "@" not in self._endpoint.split("/")[2]:
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

    def _store(self, key: str, data: dict[str, Any], kind: str = "openai_response") -> None:
        text = self._scrub.stored(json.dumps(data, sort_keys=True, separators=(",", ":")))  # a server echoing a secret
        blob = text.encode("utf-8")
        if isinstance(self._cache, NullCache):
            self._memory[key] = blob
        else:
            self._cache.put_many([(key, np.frombuffer(blob, dtype=np.uint8))], kind=kind)

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

    def _server_url(self, path: str, *, root: bool = False) -> tuple[str, dict[str, str]]:
        """The URL of ``path`` on the endpoint (``root``: beside ``/v1``, as vLLM's ``/tokenize``),
        without userinfo but with the endpoint's query, and the request's headers: HTTP Basic from
        the userinfo where there is one (as the ``openai`` client sends), else the key as Bearer."""
        from urllib.parse import unquote, urlsplit, urlunsplit

        parts = urlsplit(self._endpoint)
        userinfo, _, host = parts.netloc.rpartition("@")
        prefix = parts.path.rstrip("/")
        if root and prefix.endswith("/v1"):
            prefix = prefix[:-3]
        url = urlunsplit((parts.scheme, host, prefix + path, parts.query, ""))
        headers = {"Content-Type": "application/json"}
        if userinfo:
            user, _, password = userinfo.partition(":")
            token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode("utf-8")).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        elif self._scrub._secret:
            headers["Authorization"] = f"Bearer {self._scrub._secret}"
        return url, headers

    def _server_json(self, path: str, body: dict[str, Any] | None, *, kind: str, root: bool = False,
                     valid=lambda data: isinstance(data, dict)) -> tuple[int, Any]:
        """``(200, JSON)`` of a GET (``body`` None) or POST to ``path`` on the server (outside the
        ``openai`` client: vLLM's ``/tokenize``, the model list), or ``(status, None)`` for an HTTP
        error that retrying cannot fix; connection errors, timeouts, 5xx, 408, 429 and bodies that
        are not ``valid`` JSON are retried as every request is (counted in the ledger under
        ``kind``). :class:`RequestFailedError` when the retries are spent."""
        import urllib.error
        import urllib.request

        url, headers = self._server_url(path, root=root)
        data_bytes = None if body is None else json.dumps(body).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            with self.ledger._lock:
                self.ledger.requests += 1
            try:
                with urllib.request.urlopen(urllib.request.Request(url, data=data_bytes, headers=headers),
                                            timeout=self.timeout) as r:
                    data = json.loads(r.read())
                if valid(data):
                    return 200, data
            except urllib.error.HTTPError as err:
                if err.code < 500 and err.code not in (408, 429):
                    return err.code, None
            except (OSError, ValueError):  # connection, timeout, truncated or malformed body: retried
                pass
            if attempt < self.max_retries:
                self.ledger.retry(kind)
                self._sleep(random.uniform(0.0, min(self.max_backoff, self.backoff * 2 ** attempt)))
        raise RequestFailedError(f"{self.base_url}: {path} failed after {self.max_retries + 1} attempts")

    def _detect_vllm(self, *, ask: bool = True) -> bool | None:
        """Whether the endpoint is vLLM's OpenAI server, from its model list (``GET /models``):
        vLLM's cards say ``owned_by: "vllm"`` (llama.cpp's ``"me"`` or ``"llamacpp"``, OpenAI's
        ``"openai"``/``"system"``). The answer is stored in the response cache (a rerun asks
        nothing); a list refused with 401/403 counts as no for this object only (a key set later
        may open it). ``ask=False``: None where nothing is stored yet, and no request."""
        key = self._request_key("models", self.model, {})
        data = self._lookup(key)
        if data is None:
            if not ask:
                return None
            try:
                status, listing = self._server_json("/models", None, kind="models", valid=lambda d: True)
            except RequestFailedError as err:
                raise RequestFailedError(f"{err} (the model list tells a vLLM server, whose log-probabilities are "
                                         "keyed by token id; pass token_ids=True or False to skip the check)") from None
            if status in (401, 403):
                return False
            cards = [m for m in ((listing or {}).get("data") if isinstance(listing, dict) else None) or []
                     if isinstance(m, dict)]
            mine = [m for m in cards if m.get("id") == self.model] or cards
            owners = sorted({str(m.get("owned_by")) for m in mine})
            data = {"status": status, "owned_by": owners, "vllm": "vllm" in owners}
            self._store(key, data, kind="openai_models")
            log.info("%s serves %r (owned_by %s): %s", self.base_url, self.model, owners or "unknown",
                     "vLLM, log-probabilities keyed by token id" if data["vllm"] else "keyed by token text")
        return bool(data["vllm"])

    def _tokenize(self, text: str) -> int | None:
        """The id of ``text`` as one token, from the server's ``/tokenize`` (vLLM; no special tokens);
        None where it is several tokens. Stored in the response cache: a rerun sends nothing."""
        key = self._request_key("tokenize", text, {})
        data = self._lookup(key)
        if data is None:
            status, data = self._server_json("/tokenize", {"model": self.model, "prompt": text,
                                                           "add_special_tokens": False}, kind="tokenize", root=True,
                                             valid=lambda d: isinstance(d, dict) and isinstance(d.get("tokens"), list))
            if data is None:
                raise CapabilityError(f"{self.base_url} has no /tokenize (HTTP {status}): token_ids=True "
                                      "needs a vLLM server (token_ids=False, --no-token-ids: keyed by token text)")
            self._store(key, {"tokens": [int(t) for t in data["tokens"]]})
        toks = data["tokens"]
        return int(toks[0]) if len(toks) == 1 else None
