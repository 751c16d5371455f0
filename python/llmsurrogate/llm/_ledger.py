"""The request ledger of an HTTP backend (:class:`~.openai_backend.OpenAIBackend`): requests
sent, responses, retries by cause, responses reused from the cache, tokens and cost.

The ledger only counts; the transport (:mod:`._http`) feeds it and checks the run's budget
against it, and the command line prints :meth:`Ledger.summary` and stores :meth:`Ledger.as_dict`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

from ..exceptions import InvalidArgumentError

__all__ = ["Ledger"]


class Ledger:
    """Per-run counts: requests sent, responses, retries by cause, cache reuse, tokens and cost.

    Cost is computed from ``prices`` = ``{"input": $ per 1M prompt tokens, "output": $ per 1M
    completion tokens}`` (no price is built in; without prices the cost is ``None``).

    Examples
    --------
    >>> ledger = Ledger(prices={"input": 0.15, "output": 0.60})
    >>> ledger.requests += 1
    >>> ledger.add_usage({"prompt_tokens": 1200, "completion_tokens": 5})
    >>> ledger.tokens, ledger.cost
    (1205, 0.000183)
    """

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
        """Dollars for so many tokens at this ledger's prices (``None`` without prices).

        >>> Ledger({"input": 2.0, "output": 8.0}).cost_of(1_000_000, 250_000), Ledger().cost_of(10, 10)
        (4.0, None)
        """
        if self.prices is None:
            return None
        return (prompt_tokens * self.prices.get("input", 0.0) + completion_tokens * self.prices.get("output", 0.0)) / 1e6

    @property
    def cost(self) -> float | None:
        return self.cost_of(self.prompt_tokens, self.completion_tokens)

    def add_usage(self, usage: Mapping[str, Any] | None) -> None:
        """Count one response and its ``usage`` tokens (a response without usage adds none).

        >>> ledger = Ledger()
        >>> ledger.add_usage({"prompt_tokens": 30, "completion_tokens": 1}); ledger.add_usage(None)
        >>> ledger.responses, ledger.prompt_tokens, ledger.completion_tokens
        (2, 30, 1)
        """
        u = dict(usage or {})
        with self._lock:
            self.responses += 1
            self.prompt_tokens += int(u.get("prompt_tokens") or 0)
            self.completion_tokens += int(u.get("completion_tokens") or 0)

    def retry(self, cause: str) -> None:
        """Count one retry for ``cause`` (e.g. ``"429"``, ``"timeout"``).

        >>> ledger = Ledger()
        >>> ledger.retry("429"); ledger.retry("429"); ledger.retry("timeout")
        >>> ledger.retries
        {'429': 2, 'timeout': 1}
        """
        with self._lock:
            self.retries[cause] = self.retries.get(cause, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        """The counts as a JSON-ready dict (what a run stores).

        >>> ledger = Ledger({"input": 1.0, "output": 1.0})
        >>> ledger.add_usage({"prompt_tokens": 500_000, "completion_tokens": 0}); ledger.retry("500")
        >>> d = ledger.as_dict()
        >>> d["responses"], d["retries"], d["retries_total"], d["cost"]
        (1, {'500': 1}, 1, 0.5)
        """
        with self._lock:
            return {"requests": self.requests, "responses": self.responses, "cached_responses": self.cached,
                    "retries": dict(sorted(self.retries.items())), "retries_total": sum(self.retries.values()),
                    "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                    "tokens": self.tokens, "cost": self.cost, "prices_per_1m_tokens": self.prices,
                    "topk_truncated_prompts": self.topk_truncated}

    def summary(self) -> str:
        """One line for the end of a run.

        >>> ledger = Ledger()
        >>> ledger.requests, ledger.cached = 3, 2
        >>> ledger.add_usage({"prompt_tokens": 40, "completion_tokens": 2})
        >>> ledger.summary()
        '3 requests (0 retries), 2 responses reused from the cache, 42 tokens (40 prompt + 2 completion), cost unknown (no prices given)'
        """
        d = self.as_dict()
        cost = "cost unknown (no prices given)" if d["cost"] is None else f"cost ${d['cost']:.6f}"
        return (f"{d['requests']} requests ({d['retries_total']} retries), {d['cached_responses']} responses reused "
                f"from the cache, {d['tokens']} tokens ({d['prompt_tokens']} prompt + {d['completion_tokens']} "
                f"completion), {cost}")

    def __repr__(self) -> str:
        return f"Ledger({self.summary()})"
