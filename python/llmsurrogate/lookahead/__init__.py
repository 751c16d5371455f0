"""Lookahead bias in LLM forecasts (Gao, Jiang & Yan 2026; the method as implemented:
``docs/methods/lookahead.md``).

* :func:`lap` -- Lookahead Propensity of each text: exp of the mean log-probability of its K% least
  likely prompt tokens (Min-K% Prob; ``method="mean"`` for all tokens, ``"min_k_plus_plus"`` for
  Min-K%++ z-scores on backends with vocabulary moments), per-token log-probabilities cached.
* :func:`lap_from_logprobs` -- the same from cached per-token log-probabilities (no model pass):
  a Rust reduction, parallel over texts.
* :func:`news_prompt`, :func:`earnings_call_prompt` -- the paper's two prompts (Figures I and II),
  byte for byte; :func:`parse_answer`, :func:`parse_answers` -- signal (-1/0/+1, or five CapEx
  levels) and confidence from the answers.

* :func:`lookahead_test` -- the fixed-effects regression of the outcome on the signal, LAP and
  their product (Tables II-VI), the interaction's t test with one- and two-sided p-values
  (:class:`LookaheadTest`); :func:`magnitudes` -- marginal effects at the mean (§2.3, §4).
* :func:`bootstrap` -- the pairs bootstrap of the interaction (Figure III; rows or date/firm
  blocks) through :func:`llmsurrogate.fe.bootstrap`, reproducible by seed for any thread count
  (:class:`LookaheadBootstrap`); :func:`bootstrap_p_value`, :func:`bootstrap_counts` (the weights
  of one replication, :func:`llmsurrogate.fe.bootstrap_counts`).
* :func:`split_by_cutoff` -- in- and out-of-sample masks around a model's knowledge cutoff
  (§2.6); :func:`model_metadata` -- the paper's models (Table A.1), package data.
* :func:`forecast` -- the paper's prompts rendered from a data frame (or given), answered through
  any backend with the cache (greedy), parsed: signal, confidence, raw answer, parse status (§3).
* :func:`answer_lap`, :func:`recall_prompt` -- the answer-probability LAP of the paper's later
  version: the next-token mass on directional answers to a date-only recall query (§1.5.1).

Command line: ``llmsurrogate lookahead lap`` and ``llmsurrogate lookahead test`` (``_cli``); demo:
``llmsurrogate demo lookahead`` (:mod:`llmsurrogate.lookahead.demo`).

Modules by role: ``_lap`` (LAP), ``_answer_lap`` (answer-probability LAP), ``_prompts`` (templates
and parsing), ``_forecast``, ``_data`` (the estimation sample), ``_regression`` (the test),
``_bootstrap``, ``_magnitudes``, ``_cutoff``, ``_results``, ``_cli``, ``demo``.

Examples
--------
>>> import numpy as np
>>> lp = np.array([np.nan, -0.5, -7.25, -0.01, -3.0], dtype=np.float32)  # one text, 4 scored tokens
>>> float(np.log(lap_from_logprobs((lp, [0, 5]), k=0.2)[0]))  # k = max(1, floor(0.8)) = 1 token
-7.25
>>> parse_answer("{bad}\\n{0.7}\\n{Weak guidance.}").signal
-1.0
"""

from ._answer_lap import RECALL_ANSWERS, RECALL_TEMPLATE, answer_lap, recall_prompt
from ._bootstrap import bootstrap, bootstrap_counts
from ._cutoff import model_metadata, split_by_cutoff
from ._lap import LAP_METHODS, SIGMA_FLOOR, lap, lap_from_logprobs, prompt_logprob_moments_cached
from ._prompts import (
    EARNINGS_CALL_LABELS,
    EARNINGS_CALL_TEMPLATE,
    NEWS_LABELS,
    NEWS_TEMPLATE,
    TRANSCRIPT_WORDS,
    ParsedAnswer,
    earnings_call_prompt,
    first_words,
    news_prompt,
    parse_answer,
    parse_answers,
)
from ._forecast import FORECAST_FIELDS, FORECAST_TEMPLATES, PARSE_STATUSES, forecast
from ._magnitudes import magnitudes
from ._regression import lookahead_test
from ._results import LookaheadBootstrap, LookaheadTest, bootstrap_p_value, bootstrap_pvalue  # noqa: F401 (old name, deprecated)

__all__ = [
    "lap", "lap_from_logprobs", "prompt_logprob_moments_cached", "LAP_METHODS", "SIGMA_FLOOR",
    "news_prompt", "earnings_call_prompt", "first_words", "parse_answer", "parse_answers", "ParsedAnswer",
    "NEWS_TEMPLATE", "EARNINGS_CALL_TEMPLATE", "NEWS_LABELS", "EARNINGS_CALL_LABELS", "TRANSCRIPT_WORDS",
    "lookahead_test", "LookaheadTest", "bootstrap", "bootstrap_counts", "bootstrap_p_value", "LookaheadBootstrap",
    "magnitudes", "split_by_cutoff", "model_metadata",
    "forecast", "FORECAST_TEMPLATES", "FORECAST_FIELDS", "PARSE_STATUSES",
    "answer_lap", "recall_prompt", "RECALL_TEMPLATE", "RECALL_ANSWERS",
]
