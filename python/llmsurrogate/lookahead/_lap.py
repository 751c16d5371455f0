"""Lookahead Propensity (LAP) of texts: Min-K% Prob of their prompt tokens (docs/methods/lookahead.md §1).

* :func:`lap` -- one score per text through a backend, with the per-token log-probabilities
  cached (``llm.scoring.prompt_logprobs_cached``; Min-K%++ through
  ``llm.scoring.prompt_logprob_moments_cached``, re-exported here), so another ``k``, ``method`` or
  ``agg`` needs no model pass.
* :func:`lap_from_logprobs` -- the same score from per-token log-probabilities already computed
  (a :class:`~llmsurrogate.llm.base.RaggedLogprobs`, or ``(values, offsets)``): the reduction is the
  Rust kernel ``_core.lookahead_min_k_*`` (parallel over texts, GIL released; float32 selects with
  AVX-512 where the CPU has it, chosen at run time: the same bits for any thread count and either
  path; rust/lookahead/select.rs).

Conventions (spec §1.3): the first token of a text has no context and is not scored, so a text of
``T`` tokens has ``n = T - 1`` scored tokens; ``k = max(1, floor(K * n))`` (the reference code's
``int(n * K)``, guarded); LAP = exp(mean of the ``k`` lowest log-probabilities). A text with no
scored token (one token) gets NaN and a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import _core
from .._positions import at, located
from .._validation import (
    as_float_array,
    check_flag,
    check_int,
    reject_lossy,
)
from .._workers import resolve_n_jobs
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning, ShapeError
from ..llm.base import check_prompts
from ..llm.factory import as_backend
from ..llm.scoring import prompt_logprob_moments_cached, prompt_logprobs_cached

__all__ = ["lap", "lap_from_logprobs", "LAP_METHODS", "SIGMA_FLOOR", "prompt_logprob_moments_cached"]

#: ``"min_k"``: exp(mean of the K% lowest log-probabilities) -- LAP, eq. (1) of the paper;
#: ``"mean"``: exp(mean of all log-probabilities) (K = 1); ``"min_k_plus_plus"``: mean of the K%
#: lowest Min-K%++ z-scores (Zhang et al. 2024; not exponentiated; needs vocabulary moments).
LAP_METHODS = ("min_k", "mean", "min_k_plus_plus")

#: Floor of the per-position standard deviation in the Min-K%++ z-score (spec §1.4).
SIGMA_FLOOR = 1e-12


def _check_k(k: Any) -> float:
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"argument `k` must be a number in (0, 1]; got {k!r}")
    k = float(k)
    if not (0.0 < k <= 1.0):
        hint = f" (did you mean {k / 100:g}? K is a fraction, not a percentage)" if 1.0 < k <= 100.0 else ""
        raise InvalidArgumentError(f"argument `k` is the fraction of least likely tokens kept and must lie in "
                                   f"(0, 1] (0.2 = the paper's 20%); got {k:g}{hint}")
    return k


def _check_method(method: str, agg: str) -> None:
    if method not in LAP_METHODS:
        raise InvalidArgumentError(f"argument `method` must be one of {LAP_METHODS}; got {method!r}")
    if agg not in ("geometric", "arith"):
        raise InvalidArgumentError(f"argument `agg` must be 'geometric' or 'arith'; got {agg!r}")
    if method == "min_k_plus_plus" and agg != "geometric":
        raise InvalidArgumentError("agg='arith' averages probabilities; Min-K%++ averages z-scores (use agg='geometric')")


def _ragged(logprobs) -> tuple[np.ndarray, np.ndarray]:
    if hasattr(logprobs, "values") and hasattr(logprobs, "offsets"):
        values, offsets = logprobs.values, logprobs.offsets
    elif isinstance(logprobs, tuple) and len(logprobs) == 2:
        values, offsets = logprobs
    else:
        raise InvalidArgumentError("argument `logprobs` must be a RaggedLogprobs or a tuple (values, offsets)")
    if isinstance(values, np.ndarray) and values.dtype == np.float32 and values.ndim == 1:
        reject_lossy(values, "logprobs")   # a masked array
    else:
        values = as_float_array(values, "logprobs", allow_empty=True)
    # one reading pass (fmax skips NaN); the positions only on the error path
    if values.size and np.fmax.reduce(values, axis=None) > 0:
        positive = np.flatnonzero(values > 0)
        i = int(positive[0])
        raise InvalidArgumentError(located(f"argument `logprobs` holds a positive log-probability ({values[i]:g} at ",
                                           at(i), f", {positive.size} in all); log-probabilities are <= 0 (pass log(p), "
                                           "not p or -log(p))"))
    raw = offsets
    offsets = as_float_array(offsets, "offsets", allow_nan=False, allow_empty=True)
    if not np.all(offsets == np.floor(offsets)):
        raise InvalidArgumentError(f"argument `offsets` must hold whole numbers (positions in `logprobs`); got {raw!r:.80}")
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    # the kernel names empty, negative, decreasing and too large offsets; here: values outside every text
    if offsets.size and offsets[-1] <= values.size and np.all(np.diff(offsets) >= 0) and \
            (offsets[0] > 0 or offsets[-1] < values.size):
        raise InvalidArgumentError(
            f"argument `offsets` must run from 0 to the number of values in `logprobs` ({values.size}), so that "
            f"every value belongs to a text; got {offsets[0]} .. {offsets[-1]}")
    return np.ascontiguousarray(values), offsets


def lap_from_logprobs(logprobs, k: float = 0.2, method: str = "min_k", *, moments=None, agg: str = "geometric",
                      skip_first: bool = True, details: bool = False, n_jobs: int | None = None):
    """LAP of each text from per-token log-probabilities (no model pass).

    Parameters
    ----------
    logprobs : RaggedLogprobs (what ``backend.prompt_logprobs`` and ``prompt_logprobs_cached``
        return) or a tuple ``(values, offsets)``: text ``i`` holds ``values[offsets[i]:offsets[i+1]]``.
    k : the fraction K in (0, 1] of least likely tokens averaged (default 0.2, the paper's 20%).
    method : ``"min_k"`` (LAP, default), ``"mean"`` (all tokens) or ``"min_k_plus_plus"``.
    moments : for ``"min_k_plus_plus"``: ``(mu, sigma)``, flat arrays aligned with the values (the
        vocabulary mean and standard deviation of the log-probability at each position, as
        :func:`prompt_logprob_moments_cached` returns them).
    agg : ``"geometric"`` (default, eq. 1: exp of the mean log-probability) or ``"arith"`` (the mean
        of the bottom probabilities, the paper's prose).
    skip_first : the first value of each text is the first token's (no context, NaN) and is not
        scored (default); pass False for arrays that hold scored values only.
    details : return a data frame with ``score``, ``min_k`` (mean bottom log-probability or
        z-score), ``min_k_arith``, ``n_scored``, ``k`` instead of the scores alone.

    Returns
    -------
    numpy.ndarray (float64, one score per text), or a pandas DataFrame with ``details=True``.

    Examples
    --------
    >>> import numpy as np
    >>> lp = np.array([np.nan, -1, -2, -3, -4, -5, -0.1, -0.2, -0.3, -0.4, -0.5], dtype=np.float32)
    >>> round(float(lap_from_logprobs((lp, [0, 11]), k=0.2)[0]), 9)  # exp(-4.5)
    0.011108997
    """
    k = _check_k(k)
    _check_method(method, agg)
    skip_first = check_flag(skip_first, "skip_first")
    values, offsets = _ragged(logprobs)
    if method == "min_k_plus_plus":
        if moments is None:
            raise InvalidArgumentError(
                "method='min_k_plus_plus' needs `moments` = (mu, sigma): the vocabulary mean and standard deviation "
                "of the log-probability at each position (lap(..., method='min_k_plus_plus') gets them from a "
                "backend with `prompt_logprob_moments`)")
        mu, sigma = (np.asarray(m, dtype=np.float64) for m in moments)
        if mu.shape != values.shape or sigma.shape != values.shape:
            raise ShapeError(f"`moments` arrays must match the log-probabilities' shape {values.shape}; "
                             f"got {mu.shape} and {sigma.shape}")
        values = np.ascontiguousarray((values.astype(np.float64) - mu) / np.maximum(sigma, SIGMA_FLOOR))
    elif moments is not None:
        raise InvalidArgumentError(f"`moments` are used by method='min_k_plus_plus' only; got method={method!r}")
    frac = 1.0 if method == "mean" else k
    kernel = _core.lookahead_min_k_f32 if values.dtype == np.float32 else _core.lookahead_min_k_f64
    # the arithmetic mean costs one exp per bottom value: computed only where it is returned
    arith = method != "min_k_plus_plus" and (agg == "arith" or bool(details))
    min_k, min_k_arith, n_scored, k_used = kernel(values, offsets, frac, skip_first, resolve_n_jobs(n_jobs), arith)
    if method == "min_k_plus_plus":
        score, min_k_arith = min_k, np.full_like(min_k, np.nan)
    elif agg == "geometric":
        score = np.exp(min_k)
    else:
        score = min_k_arith
    empty = int((n_scored == 0).sum())
    if empty:
        first = int(np.flatnonzero(n_scored == 0)[0])
        warnings.warn(located(f"{empty} of {len(n_scored)} texts have no scored token (one token or none; the first "
                              "token has no context), first at ", at(first), ": their LAP is NaN"),
                      LLMSurrogateWarning, stacklevel=2)
    if not details:
        return score
    return pd.DataFrame({"score": score, "min_k": min_k, "min_k_arith": min_k_arith,
                         "n_scored": n_scored.astype(np.int64), "k": k_used.astype(np.int64)})


def lap(texts: Sequence[str], backend, k: float = 0.2, method: str = "min_k", *, model: str | None = None, cache=None,
        batch_size: int = 16, agg: str = "geometric", details: bool = False, progress=None, n_jobs: int | None = None):
    """Lookahead Propensity of each text: Min-K% Prob of its tokens under ``backend`` (spec §1.3).

    Parameters
    ----------
    texts : the prompts exactly as given to the model (the whole prompt is scored, spec §1.5).
    backend : an ``llmsurrogate.llm`` backend with ``prompt_logprobs`` (TransformersBackend,
        VLLMBackend); ``method="min_k_plus_plus"`` needs ``prompt_logprob_moments``
        (TransformersBackend); or a backend name with ``model=`` (:func:`~llmsurrogate.llm.factory.as_backend`).
    k : fraction K in (0, 1] of the least likely tokens averaged (0.2 = the paper's 20%).
    method : ``"min_k"`` (default), ``"mean"`` or ``"min_k_plus_plus"`` (see :data:`LAP_METHODS`).
    model : with a backend name: the local model folder (openai: the served model's name).
    cache : a :class:`~llmsurrogate.llm.cache.Cache` or a folder: per-token log-probabilities (and
        moments) are stored per text, so a second call, or another ``k``/``method``/``agg`` on the
        same texts, runs no model pass.
    batch_size : texts per backend call and cache transaction (at least ``COMMIT_EVERY``).
    agg, details, n_jobs : as in :func:`lap_from_logprobs`.

    Returns
    -------
    numpy.ndarray of float64 (one score per text; larger = more familiar), or a DataFrame with
    ``details=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate.llm.base import RaggedLogprobs
    >>> class ToyBackend:  # one token per word, log p = -len(word) (a real model: TransformersBackend)
    ...     def prompt_logprobs(self, prompts):
    ...         lp = [np.array([np.nan] + [-len(w) for w in p.split()[1:]], np.float32) for p in prompts]
    ...         off = np.cumsum([0] + [len(v) for v in lp])
    ...         return RaggedLogprobs(np.concatenate(lp), off, np.zeros(off[-1], np.int32))
    >>> np.log(lap(["the cat sat on the mat", "a big hippopotamus"], ToyBackend(), k=0.2)).tolist()
    [-3.0, -12.0]
    """
    backend = as_backend(backend, model)
    k = _check_k(k)
    _check_method(method, agg)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    texts = check_prompts(texts)
    if method == "min_k_plus_plus":
        rag, mu, sigma = prompt_logprob_moments_cached(backend, texts, cache=cache, batch_size=batch_size,
                                                       progress=progress)
        return lap_from_logprobs(rag, k, method, moments=(mu, sigma), details=details, n_jobs=n_jobs)
    rag = prompt_logprobs_cached(backend, texts, cache=cache, batch_size=batch_size, progress=progress)
    return lap_from_logprobs(rag, k, method, agg=agg, details=details, n_jobs=n_jobs)
