"""The backend protocol every LLM backend implements, and a pure-Python backend.

A backend scores prompts; it knows nothing about tasks or rows:

* ``identity`` -- a dict (backend name, model path, weights hash or revision, dtype) that goes
  into every cache key;
* ``answer_tokens(keys)`` -- for each answer key (``"A"``, ``"B"``) the single-token spellings
  the model may use next (``"A"``, ``" A"``, ``"▁A"``...), as ``[(spelling, token_id), ...]``;
* ``digit_tokens()`` -- ``[(text, token_id)]`` of every token made of decimal digits only;
* ``next_token_logprobs(prompts, token_ids)`` -- float32 array (n, m): log-softmax of the
  next-token logits (float32, untempered) at the given ids, one forward pass per prompt;
* ``prompt_logprobs(prompts)`` -- :class:`RaggedLogprobs`: log p of every prompt token given the
  ones before (flat float32 values + int64 offsets, no Python object per token);
* ``generate(prompts, max_new_tokens)`` -- greedy continuations (text).
* optional, ``prompt_logprob_moments(prompts)`` -- ``(RaggedLogprobs, mu, sigma)``: also the mean
  and standard deviation of the log-probability over the whole vocabulary at every position
  (Min-K%++ in ``llmsurrogate.lookahead``); TransformersBackend has it, vLLM cannot give it.

:class:`CallableBackend` implements the protocol from a Python function of the prompt text: an
exact "oracle" for tests and examples without torch, and a way to plug any scorer in.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..exceptions import InvalidArgumentError

__all__ = ["Backend", "RaggedLogprobs", "CallableBackend", "check_prompts"]


@dataclasses.dataclass(frozen=True)
class RaggedLogprobs:
    """Per-token log-probabilities of many prompts, flat.

    Prompt ``i`` has tokens ``token_ids[offsets[i]:offsets[i+1]]`` and log-probabilities
    ``values[offsets[i]:offsets[i+1]]``; the first token of a prompt has no context and gets NaN.

    Examples
    --------
    >>> rl = RaggedLogprobs(values=np.array([np.nan, -1.0, -2.0, np.nan, -0.5], dtype=np.float32),
    ...                     offsets=np.array([0, 3, 5]), token_ids=np.array([7, 8, 9, 7, 4]))
    >>> len(rl), rl[1].tolist(), rl.sums().tolist()
    (2, [nan, -0.5], [-3.0, -0.5])
    """

    values: np.ndarray
    offsets: np.ndarray
    token_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i]: self.offsets[i + 1]]

    def sums(self) -> np.ndarray:
        """Total log-probability of each prompt (NaN first tokens excluded).

        Examples
        --------
        >>> rl = RaggedLogprobs(values=np.array([np.nan, -1.0, -2.0], dtype=np.float32),
        ...                     offsets=np.array([0, 1, 3]), token_ids=np.array([5, 5, 6]))
        >>> rl.sums().tolist()  # a one-token prompt has no scored token: 0
        [0.0, -3.0]
        """
        v = np.where(np.isnan(self.values), 0.0, self.values.astype(np.float64))
        c = np.concatenate([[0.0], np.cumsum(v)])
        return c[self.offsets[1:]] - c[self.offsets[:-1]]


@runtime_checkable
class Backend(Protocol):
    """What every backend provides (see the module text): ``identity``, ``answer_tokens``,
    ``digit_tokens``, ``next_token_logprobs``, ``prompt_logprobs`` and ``generate``.

    Examples
    --------
    >>> backend = CallableBackend(lambda prompt: {" A": 0.0})
    >>> isinstance(backend, Backend), isinstance("not a backend", Backend)
    (True, False)
    """

    identity: Mapping[str, Any]

    def answer_tokens(self, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        """For each answer key, its single-token spellings in the vocabulary as ``[(spelling, token_id)]``.

        >>> CallableBackend(lambda p: {}).answer_tokens(["A"])
        {'A': [('A', 26), (' A', 0)]}
        """
        ...

    def digit_tokens(self) -> list[tuple[str, int]]:
        """``[(text, token_id)]`` of every token made of decimal digits only.

        >>> CallableBackend(lambda p: {}, vocab=["1", " 2", "x", "34"]).digit_tokens()
        [('1', 0), ('34', 3)]
        """
        ...

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int]) -> np.ndarray:
        """float32 ``(len(prompts), len(token_ids))``: log p of each token id coming next.

        >>> b = CallableBackend(lambda p: {"yes": -0.1, "no": -2.4}, vocab=["yes", "no"], normalise=False)
        >>> b.next_token_logprobs(["Is it?", "Really?"], [1, 0])
        array([[-2.4, -0.1],
               [-2.4, -0.1]], dtype=float32)
        """
        ...

    def prompt_logprobs(self, prompts: Sequence[str]) -> RaggedLogprobs:
        """log p of every prompt token given the ones before, as :class:`RaggedLogprobs` (needs a
        tokenizer: a model backend such as :class:`~llmsurrogate.llm.TransformersBackend`).

        >>> from llmsurrogate import testing
        >>> from llmsurrogate.llm import TransformersBackend
        >>> backend = TransformersBackend(testing.build_model("tiny-lm", "gpt2", hidden=16, layers=1))
        >>> rl = backend.prompt_logprobs(["one two three"])
        >>> len(rl), bool(np.isnan(rl[0][0])), bool((rl[0][1:] < 0).all())
        (1, True, True)
        """
        ...

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 16) -> list[str]:
        """Greedy continuations of the prompts (text, at most ``max_new_tokens`` tokens each).

        >>> CallableBackend(lambda p: {"!": 0.0} if len(p) < 4 else {}, vocab=["!"]).generate(["Hi"])
        ['!!']
        """
        ...


def check_prompts(prompts: Sequence[str]) -> list[str]:
    """A list of non-empty strings, or an error naming the first bad one.

    Examples
    --------
    >>> check_prompts(("a", "b"))
    ['a', 'b']
    >>> check_prompts(["a", ""])
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: prompt 1 is empty; a prompt needs at least one character
    """
    if isinstance(prompts, str):
        raise InvalidArgumentError("argument `prompts` must be a list of strings, not one string")
    out = list(prompts)
    for i, p in enumerate(out):
        if not isinstance(p, str):
            raise InvalidArgumentError(f"prompt {i} is a {type(p).__name__}, not a string")
        if not p:
            raise InvalidArgumentError(f"prompt {i} is empty; a prompt needs at least one character")
    return out


class CallableBackend:
    """A backend over a synthetic vocabulary driven by ``fn(prompt) -> {token: logprob}``.

    ``fn`` returns log-probabilities (or unnormalised log-weights, normalised here) of the next
    token for some vocabulary strings; tokens not returned get probability 0. The vocabulary is
    ``vocab`` (default: ``" A"`` ... ``" Z"``, ``"A"`` ... ``"Z"``, the digits, ``"10"``-``"99"``
    and ``" 0"``-``" 9"``). Deterministic, no torch.

    Examples
    --------
    >>> import math
    >>> b = CallableBackend(lambda p: {" A": math.log(0.25), " B": math.log(0.75)}, name="demo")
    >>> ids = [i for _, i in b.answer_tokens(["A", "B"])["B"]]
    >>> round(float(np.exp(b.next_token_logprobs(["x"], ids)).sum()), 6)
    0.75
    """

    def __init__(self, fn: Callable[[str], Mapping[str, float]], *, name: str = "callable",
                 vocab: Sequence[str] | None = None, normalise: bool = True):
        if not callable(fn):
            raise InvalidArgumentError("argument `fn` must be callable: prompt -> {token: logprob}")
        if vocab is None:
            letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
            vocab = [" " + c for c in letters] + letters + [str(d) for d in range(10)] + \
                [str(d) for d in range(10, 100)] + [" " + str(d) for d in range(10)] + [".", " "]
        self.vocab = list(dict.fromkeys(vocab))
        self.index = {t: i for i, t in enumerate(self.vocab)}
        self.fn = fn
        self.normalise = normalise
        self.identity = {"backend": "callable", "model": name}

    def answer_tokens(self, keys):
        """Each key's spellings ``k`` and ``" " + k`` found in the vocabulary, with their ids.

        >>> CallableBackend(lambda p: {}).answer_tokens(["B", "10"])
        {'B': [('B', 27), (' B', 1)], '10': [('10', 62)]}
        """
        out = {}
        for k in keys:
            out[k] = [(s, self.index[s]) for s in (k, " " + k) if s in self.index]
        return out

    def digit_tokens(self):
        """The vocabulary's all-digit tokens (``" 7"`` is not one: it has a space).

        >>> [t for t, _ in CallableBackend(lambda p: {}).digit_tokens()][:12]
        ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11']
        """
        return [(t, i) for t, i in self.index.items() if t.isdecimal()]

    def _dist(self, prompt: str) -> np.ndarray:
        lp = np.full(len(self.vocab), -np.inf)
        for tok, v in dict(self.fn(prompt)).items():
            if tok not in self.index:
                raise InvalidArgumentError(f"CallableBackend: token {tok!r} is not in the vocabulary")
            lp[self.index[tok]] = float(v)
        if self.normalise:
            m = np.max(lp)
            if np.isfinite(m):
                lp = lp - (m + math.log(np.exp(lp - m).sum()))
        return lp

    def next_token_logprobs(self, prompts, token_ids):
        """``fn``'s (normalised) log-probabilities at ``token_ids``, float32 ``(n, m)``.

        >>> b = CallableBackend(lambda p: {" A": 0.0, " B": 0.0} if "?" in p else {" A": 0.0})
        >>> np.exp(b.next_token_logprobs(["Which?", "Sure."], [0, 1]))  # token ids of " A", " B"
        array([[0.5, 0.5],
               [1. , 0. ]], dtype=float32)
        """
        prompts = check_prompts(prompts)
        ids = np.asarray(token_ids, dtype=np.int64)
        return np.stack([self._dist(p)[ids] for p in prompts]).astype(np.float32) if prompts else \
            np.zeros((0, len(ids)), np.float32)

    def prompt_logprobs(self, prompts):
        """Not available: a function of the prompt text has no tokenizer.

        >>> CallableBackend(lambda p: {}).prompt_logprobs(["a b"])
        Traceback (most recent call last):
        ...
        llmsurrogate.exceptions.InvalidArgumentError: CallableBackend has no tokenizer: prompt log-probabilities need a model backend
        """
        raise InvalidArgumentError("CallableBackend has no tokenizer: prompt log-probabilities need a model backend")

    def generate(self, prompts, max_new_tokens: int = 16):
        """Greedy decoding: append ``fn``'s most likely token until ``fn`` returns nothing or
        ``max_new_tokens`` tokens are written.

        >>> b = CallableBackend(lambda p: {" 4": 0.0} if p.endswith("=") else {})
        >>> b.generate(["2+2=", "Hello"], max_new_tokens=5)
        [' 4', '']
        """
        out = []
        for p in check_prompts(prompts):
            text = ""
            for _ in range(max_new_tokens):
                d = self._dist(p + text)
                if not np.isfinite(d.max()):
                    break
                text += self.vocab[int(np.argmax(d))]
            out.append(text)
        return out
