"""Equivalent sample size (ESS): how many domain observations is a fixed prediction rule worth?

Gao, Han & Liang (2026), "How Well Do LLMs Predict Human Behavior? A Measure of their Pretrained
Knowledge"; the method as implemented, with every departure from the paper: ``docs/methods/ess.md``.

* :func:`error_curve` -- block-out CV error curve N -> e_N with pointwise CIs (fixed-N, fixed-B or
  hybrid variance).
* :func:`equivalent_sample_size` -- one-sided tests of H_{0,N}: e_N <= e^LLM on the difference loss
  and the sequential lower confidence bound for N* (Algorithm 3.1).
* :func:`cate_ess` -- the ESS of an LLM's treatment-effect predictions via the IPW transformed
  outcome Y* = Y (D - pi) / (pi (1 - pi)) (§7).
* :func:`arm_ess` -- the arm-specific (potential-outcome) ESS (§7.2).

Modules by role: ``_estimators`` (the functions above), ``_engine`` (block-out CV, variances,
sequential test), ``_learners`` (built-in learners and tuning), ``_fast_predict`` (exact fast
prediction of the built-in learners), ``_results``, ``_cli`` (``llmsurrogate ess``), ``demo``.

Procedure: the data are permuted once with the documented SplitMix64/Fisher-Yates permutation of
``seed`` (``seed=None`` keeps the data's order); for each grid size N the first B*N rows are cut into
B = floor(n/N) blocks; the algorithm is fitted on each block (joblib over blocks; any joblib backend,
e.g. Dask) and evaluated on the complement; the Rust core streams the losses into the block errors
and the observation-level out-of-block losses and computes the variance components. ``n_jobs``:
workers/threads (None: see :func:`llmsurrogate.num_threads`); no number depends on it.

Words: ``seed`` (the permutation and every fit's seed), ``alpha`` the paper's significance level of
the one-sided tests of Algorithm 3.1 (the bound is a (1 - alpha) confidence bound), ``level`` the
confidence level of :func:`error_curve`'s two-sided intervals (0.95; was ``alpha`` = 1 - level), ``n_jobs``.
Arguments after the data and the column names are keyword-only.

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> df = pd.DataFrame({"y": rng.normal(size=400)})
>>> df["llm"] = 0.3                              # a constant "LLM" prediction, off by 0.3
>>> res = equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[1, 2, 5, 10, 20], seed=1)
>>> res.lower_bound >= 1
True
"""

from ._engine import HYBRID_MIN_BLOCKS, LOSSES, REGIMES, TUNINGS, VARIANCES, default_grid
from ._estimators import arm_ess, cate_ess, equivalent_sample_size, error_curve, permutation, transformed_outcome
from ._learners import LOGIT_C_GRID, RF_GRID
from ._results import ErrorCurve, EssResult

__all__ = ["error_curve", "equivalent_sample_size", "cate_ess", "arm_ess", "transformed_outcome", "permutation",
           "ErrorCurve", "EssResult", "default_grid", "LOSSES", "REGIMES", "TUNINGS", "VARIANCES",
           "RF_GRID", "LOGIT_C_GRID", "HYBRID_MIN_BLOCKS"]
