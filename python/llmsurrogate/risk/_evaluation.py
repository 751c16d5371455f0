"""All risk-score metrics at once, with row-bootstrap CIs (:func:`evaluate`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import _core
from .._deprecation import deprecated_arguments
from .._validation import check_allocation, check_int, check_real
from .._workers import resolve_n_jobs
from ..exceptions import EmptyInputError
from ._metrics import (
    BOOT_METRICS,
    EPS,
    _all_metrics,
    _bins,
    _level,
    _seed,
    _threshold,
    _yrgw,
    _yrw,
    bootstrap_ci,
    calibration_curve,
    group_metrics,
    kish_n_eff,
)
from ._plots import curve_tables
from ._results import RiskEvaluation


def evaluate(y, scores, groups=None, *, threshold: float = 0.5, bins: int = 10, n_boot: int = 200,
             seed: int = 42, level: float = 0.95, min_group_share: float = 0.04, n_jobs: int | None = None,
             weights=None) -> RiskEvaluation:
    """All docs/methods/risk.md §2 metrics of ``scores`` against 0/1 labels ``y``, with bootstrap CIs.

    The headline metrics (accuracy, balanced accuracy, Brier, log loss, ROC AUC, ECE, SCE) get
    ``n_boot`` row-bootstrap replicates (Rust, parallel, seed ``seed``; PRNG documented in
    ``rust/risk/mod.rs``): ``se`` is their standard deviation, the CI their percentiles, the
    two-sided ``level`` (a confidence level, 0.95) interval. ``n_jobs``: workers/threads (None: see
    :func:`llmsurrogate.num_threads`); no number depends on it.

    ``weights``: survey weights (one per row, paired with ``y`` by pandas label), giving the
    population metrics (docs/methods/risk.md §2.11); every table is weighted, replicate ``b`` draws
    the same rows as without weights and each drawn row keeps its weight. ``meta`` records
    ``weighted`` and Kish's effective sample size ``n_eff`` = (Σw)²/Σw² (``n`` without weights).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> ev = evaluate(y, r, n_boot=20, n_jobs=1)
    >>> ev.metrics.head(3).round(3)
         metric  value     se  ci_low  ci_high
    0  accuracy   0.80  0.137     0.6      1.0
    1       tpr   0.75    NaN     NaN      NaN
    2       fnr   0.25    NaN     NaN      NaN
    >>> round(ev.metric("roc_auc"), 4), round(ev.metric("brier"), 4)
    (0.9167, 0.1153)
    >>> wev = evaluate(y, r, n_boot=20, n_jobs=1, weights=[1, 1, 1, 1, 1, 3, 1, 1, 1, 1])
    >>> round(wev.metric("tpr"), 2), wev.meta["n_eff"]  # (sum w)^2 / sum w^2 = 144 / 18
    (0.5, 8.0)
    """
    if groups is not None:
        yy, rr, groups, w = _yrgw(y, scores, groups, weights)
    else:
        yy, rr, w = _yrw(y, scores, weights)
    if len(yy) == 0:
        raise EmptyInputError("argument `y` is empty")
    threshold, bins, seed, level = _threshold(threshold), _bins(bins), _seed(seed), _level(level)
    min_group_share = check_real(min_group_share, "min_group_share", low=0.0, high=1.0)
    n_jobs = resolve_n_jobs(n_jobs)
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    check_allocation(8.0 * n_boot * (len(BOOT_METRICS) + 1), "n_boot", n_boot, "the bootstrap replicates")
    point = _all_metrics(yy, rr, threshold, bins, w)
    boot = None
    if n_boot > 0:
        boot = np.asarray(_core.risk_bootstrap(yy, rr, n_boot, int(seed), float(threshold), int(bins), EPS, n_jobs,
                                               weights=w))
    rows = []
    for name, value in point.items():
        se = lo = hi = float("nan")
        if boot is not None and name in BOOT_METRICS:
            se, lo, hi = bootstrap_ci(boot[:, BOOT_METRICS.index(name)], level)
        rows.append({"metric": name, "value": float(value), "se": se, "ci_low": lo, "ci_high": hi})
    metrics = pd.DataFrame(rows)
    groups_frame, gsum = (pd.DataFrame(), {})
    if groups is not None:
        groups_frame, gsum = group_metrics(yy, rr, groups, threshold, min_group_share, bins, weights=w)
    calib = calibration_curve(yy, rr, bins=bins, strategy="quantile", seed=seed, weights=w)
    meta = {"n": int(len(yy)), "threshold": float(threshold), "n_boot": n_boot, "seed": int(seed), "bins": int(bins),
            "level": float(level), "weighted": w is not None, "n_eff": kish_n_eff(w, len(yy))}
    curves = curve_tables(yy, rr, groups, bins=bins, seed=seed, min_share=min_group_share, weights=w)
    return RiskEvaluation(metrics=metrics, groups=groups_frame, group_summary=gsum, calibration=calib, meta=meta,
                          **curves)


@deprecated_arguments(positional=3)
def evaluate_table(y, scores, groups=None, *, threshold: float = 0.5, bins: int = 10, n_boot: int = 200,
                   seed: int = 42, weights=None):
    """:func:`evaluate` as plain tables: ``{"metrics": DataFrame, "groups": DataFrame,
    "group_summary": dict, "calibration": DataFrame}``. Arguments after ``groups`` are keyword-only
    (by position they still work until 0.3, with a ``FutureWarning``); ``weights``: survey weights,
    as in :func:`evaluate`.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> tables = evaluate_table(y, r, groups=["a", "b"] * 5, n_boot=20)
    >>> sorted(tables), tables["metrics"].columns.tolist()
    (['calibration', 'group_summary', 'groups', 'metrics'], ['metric', 'value', 'se', 'ci_low', 'ci_high'])
    >>> tables["groups"]["accuracy"].tolist()
    [1.0, 0.6]
    """
    ev = evaluate(y, scores, groups, threshold=threshold, bins=bins, n_boot=n_boot, seed=seed, weights=weights)
    return {"metrics": ev.metrics, "groups": ev.groups, "group_summary": ev.group_summary,
            "calibration": ev.calibration}
