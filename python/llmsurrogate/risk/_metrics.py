"""Risk-score metrics with the exact conventions of docs/methods/risk.md §2: accuracy at
``r >= threshold``, balanced accuracy, ECE (equal-width and quantile bins), Brier and its Murphy
decomposition, log loss, ROC AUC with ties ½, confidence bias, signed calibration error, calibration
curves and group metrics. The heavy loops are Rust kernels (``rust/risk/``).

Every metric takes ``weights=`` (survey weights, docs/methods/risk.md §2.11): one finite,
non-negative weight per row with a positive total, paired with ``y`` by pandas label like
``scores``. The metric is then the population quantity: every count becomes a sum of weights and
every mean a weighted mean (rows of weight 0 count as absent). ``weights=None`` runs the
unweighted code, unchanged."""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import pandas as pd

from .. import _core
from .._positions import at, located
from .._validation import (
    align_by_label,
    as_float_array,
    check_allocation,
    check_choice,
    check_int,
    check_real,
)
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning, ShapeError

log = logging.getLogger("llmsurrogate.risk")

BOOT_METRICS = tuple(_core.RISK_BOOT_METRICS)
EPS = float(np.finfo(np.float64).eps)


# --- inputs --------------------------------------------------------------------------------------

def _yr(y, scores) -> tuple[np.ndarray, np.ndarray]:
    y, scores = align_by_label(("y", y), ("scores", scores))
    yy = as_float_array(y, "y", allow_nan=False)
    rr = as_float_array(scores, "scores", allow_nan=False)
    if yy.shape != rr.shape:
        raise ShapeError(f"arguments `y` (length {yy.size}) and `scores` (length {rr.size}) must have the same length")
    bad = np.flatnonzero((yy != 0) & (yy != 1))
    if bad.size:
        raise InvalidArgumentError(located(f"argument `y` must hold 0/1 labels; got {yy[bad[0]]} at ", at(bad[0])))
    bad = np.flatnonzero((rr < 0) | (rr > 1))
    if bad.size:
        raise InvalidArgumentError(located(f"argument `scores` must lie in [0, 1]; got {rr[bad[0]]} at ", at(bad[0])))
    return yy, rr


def _weights(weights, n: int) -> np.ndarray:
    """Survey weights: one per row, finite, non-negative, with a positive total (the rules of the
    K-option metrics); ones for ``None``."""
    if weights is None:
        return np.ones(n)
    if isinstance(weights, (str, bytes)):
        raise InvalidArgumentError("argument `weights` must be a sequence with one survey weight per row; got a string")
    w = as_float_array(weights, "weights", allow_nan=False, allow_empty=True)
    if w.ndim != 1 or w.size != n:
        raise ShapeError(f"argument `weights` (length {w.size}) must have one weight per row ({n})")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise InvalidArgumentError(located(f"argument `weights` must be finite and non-negative; got {w[bad[0]]} at ",
                                           at(bad[0])))
    if n and not w.sum() > 0:
        raise InvalidArgumentError("argument `weights` sums to 0: no row carries weight")
    return w


def _yrw(y, scores, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``y``, ``scores`` and the checked ``weights`` (None without weights), paired by label or
    position; every row kept (the bootstrap resamples rows of weight 0 too)."""
    if weights is None:
        return (*_yr(y, scores), None)
    y, scores, weights = align_by_label(("y", y), ("scores", scores), ("weights", weights))
    yy, rr = _yr(y, scores)
    return yy, rr, _weights(weights, len(yy))


def _carrying(w: np.ndarray | None, *arrays: np.ndarray) -> tuple:
    """``(*arrays, w)`` with the rows of weight 0 left out (a row of weight 0 is not in the
    population the weights describe); unchanged without weights."""
    if w is None or w.all():
        return (*arrays, w)
    keep = w > 0
    return (*(a[keep] for a in arrays), w[keep])


def _inputs(y, scores, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rows a point metric uses: :func:`_yrw`, rows of weight 0 left out."""
    yy, rr, w = _yrw(y, scores, weights)
    return _carrying(w, yy, rr)


def _mean(x: np.ndarray, w: np.ndarray | None) -> float:
    """``x.mean()``, or the weighted mean Σ w x / Σ w."""
    return float(x.mean()) if w is None else float(np.dot(w, x) / w.sum())


def kish_n_eff(w: np.ndarray | None, n: int) -> float:
    """Kish's effective sample size (Σw)² / Σw² (``n`` without weights).

    Examples
    --------
    >>> kish_n_eff(np.array([1.0, 1.0, 2.0, 4.0]), 4)  # 64 / 22
    2.909090909090909
    """
    return float(n) if w is None else float(w.sum() ** 2 / np.dot(w, w))


def _yrg(y, scores, groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``y``, ``scores`` and ``groups`` paired by label (pandas) or position, groups as an object array."""
    y, scores, groups = align_by_label(("y", y), ("scores", scores), ("groups", groups))
    yy, rr = _yr(y, scores)
    if groups is None or isinstance(groups, (str, bytes)):
        raise InvalidArgumentError("argument `groups` must be a sequence with one group label per row")
    if hasattr(groups, "to_numpy"):
        groups = groups.to_numpy()
    g = np.asarray(groups, dtype=object)
    if g.ndim != 1 or g.shape != yy.shape:
        raise ShapeError(f"argument `groups` (length {g.size}) must have the length of `y` ({yy.size})")
    missing = np.flatnonzero(pd.isna(g))
    if missing.size:  # a missing label is no group: never pooled into a group of its own
        raise InvalidArgumentError(located(f"argument `groups` has {missing.size} missing label(s) (None/NaN), the first "
                                           "at ", at(missing[0]), "; drop those rows or give them a label (e.g. "
                                           "'unknown')"))
    return yy, rr, g


def _yrgw(y, scores, groups, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`_yrg` with the checked ``weights`` (None without), all four paired by label."""
    if weights is None:
        return (*_yrg(y, scores, groups), None)
    y, scores, groups, weights = align_by_label(("y", y), ("scores", scores), ("groups", groups), ("weights", weights))
    yy, rr, g = _yrg(y, scores, groups)
    return yy, rr, g, _weights(weights, len(yy))


def _threshold(threshold) -> float:
    return check_real(threshold, "threshold", low=0.0, high=1.0)


def _bins(bins, n: int = 0, name: str = "bins") -> int:
    """A bin count >= 1 whose per-bin arrays (a few float64 each) fit in memory."""
    b = check_int(bins, name, minimum=1)
    check_allocation(32.0 * (b + 1), name, b, "the per-bin arrays")
    return b


def _seed(seed) -> int:
    return check_int(seed, "seed", minimum=0, maximum=2**64 - 1)


def _level(level) -> float:
    return check_real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)


# --- single metrics ------------------------------------------------------------------------------

def threshold_metrics(y, scores, threshold: float = 0.5, *, weights=None) -> dict[str, float]:
    """Spec §2.1: ŷ = 1{r >= τ}; accuracy, TPR, FNR, FPR, TNR, balanced accuracy, precision, PPR
    with folktexts' conventions for undefined ratios (TPR 0, FNR 1, FPR 1, TNR 0, precision 0).
    With ``weights`` the confusion matrix holds sums of weights (population rates).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> m = threshold_metrics(y, r, threshold=0.5)
    >>> round(m["accuracy"], 2), m["tpr"], round(m["fpr"], 3), m["balanced_accuracy"] == (m["tpr"] + m["tnr"]) / 2
    (0.8, 0.75, 0.167, True)
    >>> w = [1, 1, 1, 1, 1, 3, 1, 1, 1, 1]  # the missed positive at 0.35 weighs 3
    >>> threshold_metrics(y, r, weights=w)["tpr"]  # 3 of 6 units of positive weight found
    0.5
    """
    yy, rr, w = _inputs(y, scores, weights)
    pred = rr >= _threshold(threshold)
    pos = yy == 1
    total = np.sum if w is None else (lambda m: np.sum(w[m]))
    tp = float(total(pred & pos)); fp = float(total(pred & ~pos))
    fn = float(total(~pred & pos)); tn = float(total(~pred & ~pos))
    n = len(yy) if w is None else float(w.sum())
    tpr = tp / (tp + fn) if tp + fn > 0 else 0.0
    fnr = 1.0 - tpr if tp + fn > 0 else 1.0
    fpr = fp / (fp + tn) if fp + tn > 0 else 1.0
    tnr = 1.0 - fpr if fp + tn > 0 else 0.0
    return {"accuracy": (tp + tn) / n, "tpr": tpr, "fnr": fnr, "fpr": fpr, "tnr": tnr,
            "balanced_accuracy": (tpr + tnr) / 2, "precision": tp / (tp + fp) if tp + fp > 0 else 0.0,
            "ppr": (tp + fp) / n}


def roc_auc(y, scores, *, weights=None) -> float:
    """ROC AUC = P(r⁺ > r⁻) + ½ P(r⁺ = r⁻) (one sort, Rust). NaN with a warning when one class is
    absent; 0.5 with a warning for constant scores. With ``weights`` a (positive, negative) pair
    counts w⁺·w⁻: the probability that a weighted random positive outranks a weighted random
    negative (``sklearn.metrics.roc_auc_score(..., sample_weight=)``).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> round(roc_auc(y, r), 4)
    0.9167
    >>> roc_auc([0, 1, 1], [0.5, 0.5, 0.9])  # the tie at 0.5 counts 1/2
    0.75
    >>> roc_auc([0, 1, 1], [0.5, 0.5, 0.9], weights=[1, 3, 1])  # (3 * 1/2 + 1) / 4
    0.625
    """
    yy, rr, w = _inputs(y, scores, weights)
    auc = _core.risk_roc_auc(yy, rr, w)
    if math.isnan(auc):
        warnings.warn("ROC AUC is undefined: `y` holds one class only", LLMSurrogateWarning, stacklevel=2)
    elif np.all(rr == rr[0]):
        warnings.warn("constant scores: ROC AUC is 0.5 by the tie convention", LLMSurrogateWarning, stacklevel=2)
    return float(auc)


def ece(y, scores, bins: int = 10, *, weights=None) -> float:
    """Paper ECE (eq. 2): equal-width bins on [0, 1], positive class, netcal's edge convention
    (scores clipped to [eps, 1-eps], bins [b_k, b_{k+1}), last closed, empty bins ignored). With
    ``weights``: Σ_m |Σ_{i∈B_m} w_i (y_i − r_i)| / Σ_i w_i.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> round(ece(y, r), 4), round(ece(y, r, bins=5), 4)
    (0.235, 0.165)
    >>> round(ece(y, r, weights=[2] * 10), 4)  # weights are relative: a constant changes nothing
    0.235
    """
    yy, rr, w = _inputs(y, scores, weights)
    return float(_core.risk_ece_equal_width(yy, rr, _bins(bins), w))


def weighted_sample_values(scores, weights) -> np.ndarray:
    """The m values E_k = min{r : F_w(r) > k/m}, k = 0..m-1, where F_w is the weighted empirical
    distribution of ``scores`` and m the number of rows of positive weight: the weighted sample
    written out at the sample's size. Unit weights give the sorted scores; the quantile bins of
    weighted metrics are NumPy's (linear) quantiles of these values, so they do not depend on the
    scale of the weights (docs/methods/risk.md §2.11).

    Examples
    --------
    >>> weighted_sample_values([0.1, 0.5, 0.9], [1, 1, 1]).tolist()
    [0.1, 0.5, 0.9]
    >>> weighted_sample_values([0.1, 0.5, 0.9], [1, 4, 1]).tolist()  # 0.5 holds 2/3 of the weight
    [0.1, 0.5, 0.5]
    """
    rr = np.asarray(scores, dtype=float)
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    rr, w = rr[keep], w[keep]
    order = np.argsort(rr, kind="mergesort")
    rr, w = rr[order], w[order]
    m = len(rr)
    cum = np.cumsum(w) * m / w.sum()  # integer weights: exact
    return rr[np.minimum(np.searchsorted(cum, np.arange(m), side="right"), m - 1)]


def _quantile_edges(rr: np.ndarray, bins: int, w: np.ndarray | None = None) -> np.ndarray:
    edges = np.quantile(rr if w is None else weighted_sample_values(rr, w), np.linspace(0, 1, bins + 1))
    return np.unique(edges)  # pandas qcut(duplicates="drop")


def ece_quantile(y, scores, bins: int = 10, *, weights=None) -> tuple[float, int]:
    """ECE over quantile bins with pandas ``qcut(r, bins, duplicates="drop")`` semantics (bins
    (e_k, e_{k+1}], first closed); returns ``(ece, effective number of bins)``. All scores equal:
    one bin. With ``weights`` the edges are weighted quantiles (those of
    :func:`weighted_sample_values`) and the ECE is Σ_m |Σ_{i∈B_m} w_i (y_i − r_i)| / Σ_i w_i.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> value, n_bins = ece_quantile(y, r, bins=5)
    >>> round(value, 4), n_bins
    (0.155, 5)
    """
    yy, rr, w = _inputs(y, scores, weights)
    edges = _quantile_edges(rr, _bins(bins), w)
    if len(edges) < 2:
        return float(abs(_mean(rr, w) - _mean(yy, w))), 1
    c, sr, sy = _core.risk_bin_stats(yy, rr, edges, right=True, weights=w)
    return float(np.sum(np.abs(sy - sr)) / (len(yy) if w is None else w.sum())), int(np.sum(c > 0))


def log_loss(y, scores, eps: float = EPS, *, weights=None) -> float:
    """Mean negative log-likelihood with scores clipped to [eps, 1 - eps] (sklearn's clip); the
    weighted mean with ``weights``.

    Examples
    --------
    >>> round(log_loss([0, 1], [0.2, 0.9]), 4)  # -(log 0.8 + log 0.9) / 2
    0.1643
    >>> round(log_loss([1], [0.0]), 2)  # a score of 0 is clipped to eps: -log(eps)
    36.04
    >>> round(log_loss([0, 1], [0.2, 0.9], weights=[3, 1]), 4)  # -(3 log 0.8 + log 0.9) / 4
    0.1937
    """
    yy, rr, w = _inputs(y, scores, weights)
    eps = check_real(eps, "eps", low=0.0, high=0.5, low_open=True, high_open=True)
    p = np.clip(rr, eps, 1 - eps)
    loglik = yy * np.log(p) + (1 - yy) * np.log1p(-p)
    return float(-np.mean(loglik)) if w is None else -_mean(loglik, w)


def brier_decomposition(y, scores, bins: int | None = 10, *, weights=None) -> dict[str, float]:
    """Murphy decomposition of the Brier score.

    ``bins=None`` groups by distinct score values, where Brier = reliability − resolution +
    uncertainty holds exactly. With equal-width ``bins`` the identity gains the within-bin terms,
    reported together as ``residual`` (= Brier − (rel − res + unc)). With ``weights`` every mean
    is weighted and a bin's share is its share of the weight (the identity still holds).

    Examples
    --------
    >>> d = brier_decomposition([0, 1, 0, 1, 1, 0], [.2, .2, .2, .6, .6, .6], bins=None)
    >>> [round(d[k], 4) for k in ("brier", "reliability", "resolution", "uncertainty")]
    [0.2333, 0.0111, 0.0278, 0.25]
    >>> abs(d["residual"]) < 1e-12  # exact with bins=None
    True
    """
    yy, rr, w = _inputs(y, scores, weights)
    bins = None if bins is None else _bins(bins)
    if bins is None:
        _, inv = np.unique(rr, return_inverse=True)
    else:
        inv = np.minimum((np.clip(rr, EPS, 1 - EPS) * bins).astype(np.int64), bins - 1)
    if w is None:
        n = len(yy)
        cnt = np.bincount(inv).astype(float)
        keep = cnt > 0
        rbar = np.bincount(inv, weights=rr)[keep] / cnt[keep]
        ybar = np.bincount(inv, weights=yy)[keep] / cnt[keep]
    else:
        n = float(w.sum())
        cnt = np.bincount(inv, weights=w)
        keep = cnt > 0
        rbar = np.bincount(inv, weights=w * rr)[keep] / cnt[keep]
        ybar = np.bincount(inv, weights=w * yy)[keep] / cnt[keep]
    share = cnt[keep] / n
    base = yy.mean() if w is None else _mean(yy, w)
    rel = float(np.sum(share * (rbar - ybar) ** 2))
    res = float(np.sum(share * (ybar - base) ** 2))
    unc = float(base * (1 - base))
    brier = float(np.mean((rr - yy) ** 2)) if w is None else _mean((rr - yy) ** 2, w)
    return {"brier": brier, "reliability": rel, "resolution": res, "uncertainty": unc,
            "residual": brier - (rel - res + unc)}


def confidence_bias(y, scores, bins: int = 10, *, weights=None) -> float:
    """R_bias (paper §4.2): bins = ``pd.cut(r, bins)`` (equal width over the observed range,
    right-closed, range widened by 0.1% on the left); per bin with mean score s̄ and mean label ȳ
    the contribution is ȳ − s̄ if s̄ < 0.5 else s̄ − ȳ, weighted by the bin share. Negative =
    under-confident, positive = over-confident. With ``weights``: weighted bin means, a bin's share
    of the weight (the range is that of the rows of positive weight).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> round(confidence_bias(y, r), 4)  # slightly under-confident
    -0.065
    """
    yy, rr, w = _inputs(y, scores, weights)
    bins = _bins(bins)
    lo, hi = float(rr.min()), float(rr.max())
    if lo == hi:
        lo, hi = lo - 0.001 * abs(lo) if lo != 0 else -0.001, hi + 0.001 * abs(hi) if hi != 0 else 0.001
        edges = np.linspace(lo, hi, bins + 1)
    else:
        edges = np.linspace(lo, hi, bins + 1)
        edges[0] -= (hi - lo) * 0.001
    c, sr, sy = _core.risk_bin_stats(yy, rr, edges, right=True, weights=w)
    keep = c > 0
    sbar, ybar = sr[keep] / c[keep], sy[keep] / c[keep]
    contrib = np.where(sbar < 0.5, ybar - sbar, sbar - ybar)
    return float(np.sum(c[keep] / (len(yy) if w is None else w.sum()) * contrib))


def signed_calibration_error(y, scores, *, weights=None) -> float:
    """SCE (Appendix A.1) = (1/n) Σ_m Σ_{i∈B_m} (r_i − y_i), identical to mean(r) − mean(y): the
    binning cancels, so none is done. With ``weights``: the weighted means.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> round(signed_calibration_error(y, r), 4)  # mean(r) - mean(y) = 0.445 - 0.4
    0.045
    """
    yy, rr, w = _inputs(y, scores, weights)
    return float(rr.mean() - yy.mean()) if w is None else _mean(rr, w) - _mean(yy, w)


def delta_sce(y, scores, groups, a, b, *, weights=None) -> float:
    """ΔSCE(A, B) = SCE on the rows of group ``a`` minus SCE on the rows of group ``b`` (paper
    Appendix A.1): positive means the scores favour group ``a`` beyond its outcomes. With
    ``weights``: each group's weighted SCE (a group needs rows of positive weight).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> groups = ["a", "b"] * 5
    >>> round(delta_sce(y, r, groups, "a", "b"), 4)
    0.11
    """
    yy, rr, g, w = _yrgw(y, scores, groups, weights)
    yy, rr, g, w = _carrying(w, yy, rr, g)
    g = g.astype(str)
    out = []
    for arg, lab in (("a", str(a)), ("b", str(b))):
        m = g == lab
        if not m.any():
            what = "no rows" if w is None else "no rows of positive weight"
            raise InvalidArgumentError(f"argument `{arg}`: group {lab!r} has {what}; groups present: {sorted(set(g))[:20]}")
        out.append(float(rr[m].mean() - yy[m].mean()) if w is None else _mean(rr[m], w[m]) - _mean(yy[m], w[m]))
    return out[0] - out[1]


def best_threshold(y, scores, objective: str = "balanced_accuracy", fp_cost: float = 1.0,
                   fn_cost: float = 1.0, *, weights=None) -> float:
    """Threshold maximising ``objective`` over the observed scores (ŷ = 1{r >= τ}).

    ``balanced_accuracy`` (= Youden's J, what folktexts' ``compute_best_threshold`` maximises with
    unit costs), ``accuracy``, ``f1`` or ``cost`` (minimise fp_cost·FPR + fn_cost·FNR). With
    ``weights`` the rates are weighted (:func:`threshold_metrics`), the scores searched those of
    positive weight.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> best_threshold(y, r)
    0.7
    >>> best_threshold(y, r, "cost", fn_cost=5.0)  # missed positives cost more: a lower threshold
    0.35
    """
    check_choice(objective, "objective", ["balanced_accuracy", "accuracy", "f1", "cost"])
    fp_cost = check_real(fp_cost, "fp_cost", low=0.0)
    fn_cost = check_real(fn_cost, "fn_cost", low=0.0)
    yy, rr, w = _inputs(y, scores, weights)
    order = np.argsort(-rr, kind="mergesort")
    rs, ys = rr[order], yy[order]
    if w is None:
        tp = np.cumsum(ys); fp = np.cumsum(1 - ys)
        P, N, n = yy.sum(), len(yy) - yy.sum(), len(yy)
    else:
        ws = w[order]
        tp = np.cumsum(ws * ys); fp = np.cumsum(ws * (1 - ys))
        n = w.sum()
        P = np.dot(w, yy); N = n - P
    last = np.r_[rs[1:] != rs[:-1], True]  # threshold = each distinct score
    tp, fp, thr = tp[last], fp[last], rs[last]
    tpr = tp / P if P else np.zeros_like(tp)
    fpr = fp / N if N else np.ones_like(fp)
    if objective == "balanced_accuracy":
        val = (tpr + 1 - fpr) / 2
    elif objective == "accuracy":
        val = (tp + (N - fp)) / n
    elif objective == "f1":
        val = np.where(tp > 0, 2 * tp / (2 * tp + fp + (P - tp)), 0.0)
    else:
        val = -(fp_cost * fpr + fn_cost * (1 - tpr))
    return float(np.clip(thr[int(np.argmax(val))], 0.0, 1.0))


def calibration_curve(y, scores, bins: int = 10, strategy: str = "quantile", n_boot: int = 200,
                      seed: int = 42, level: float = 0.95, *, weights=None):
    """Reliability diagram data: per bin the mean score, the fraction of positives, the count and a
    bootstrap CI of the fraction (``n_boot`` resamples within the bin, docs/methods/risk.md §2.5). ``strategy``:
    ``quantile`` (``pd.qcut`` semantics, duplicate edges dropped) or ``uniform`` (equal width on
    [0, 1], netcal edges).

    With ``weights``: weighted quantile edges (:func:`ece_quantile`), the weighted mean score and
    fraction of positives, a ``weight`` column (the bin's total weight) after ``count``, and the
    bootstrap draws the same rows within the bin as without weights, each keeping its weight
    (a replicate's fraction is Σ w y / Σ w over its rows).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> calibration_curve(y, r, bins=2, n_boot=20).round(2)
       bin  mean_score  fraction_positive  count  ci_low  ci_high
    0    0        0.23                0.2      5     0.0      0.5
    1    1        0.66                0.6      5     0.1      1.0
    >>> w = [1, 1, 1, 1, 1, 1, 1, 1, 1, 4]  # the last row (0.2, negative) weighs 4: the weighted median is 0.25
    >>> calibration_curve(y, r, bins=2, n_boot=20, weights=w)[["count", "weight", "fraction_positive"]].round(2)
       count  weight  fraction_positive
    0      3     6.0               0.00
    1      7     7.0               0.57
    """
    check_choice(strategy, "strategy", ["quantile", "uniform"])
    yy, rr, w = _inputs(y, scores, weights)
    bins, seed, level = _bins(bins), _seed(seed), _level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    if strategy == "quantile":
        edges = _quantile_edges(rr, bins, w)
        if len(edges) < 2:
            idx = np.zeros(len(rr), dtype=np.int64)
        else:
            idx = np.clip(np.searchsorted(edges, rr, side="left") - 1, 0, len(edges) - 2)
    else:
        idx = np.minimum((np.clip(rr, EPS, 1 - EPS) * bins).astype(np.int64), bins - 1)
    rng = np.random.default_rng(seed)
    rows = []
    for k in np.unique(idx):
        m = idx == k
        yk = yy[m]
        check_allocation((16.0 if w is None else 32.0) * n_boot * len(yk), "n_boot", n_boot,
                         f"the bootstrap resamples of a bin of {len(yk)} rows")
        if not n_boot:
            boots = np.array([np.nan])
        elif w is None:
            boots = yk[rng.integers(0, len(yk), size=(n_boot, len(yk)))].mean(axis=1)
        else:  # the same draws; each drawn row keeps its weight
            draw = rng.integers(0, len(yk), size=(n_boot, len(yk)))
            wk = w[m][draw]
            boots = np.sum(wk * yk[draw], axis=1) / np.sum(wk, axis=1)
        a = (1 - level) / 2
        row = {"bin": int(k), "mean_score": _mean(rr[m], None if w is None else w[m]),
               "fraction_positive": _mean(yk, None if w is None else w[m]), "count": int(m.sum())}
        if w is not None:
            row["weight"] = float(w[m].sum())
        rows.append({**row, "ci_low": float(np.quantile(boots, a)), "ci_high": float(np.quantile(boots, 1 - a))})
    return pd.DataFrame(rows)


def _weighted_sd(x: np.ndarray, w: np.ndarray) -> float:
    """sqrt(Σ w (x − x̄_w)² / (Σw − Σw²/Σw)): the ``ddof=1`` sd for unit weights, unchanged by the
    weights' scale; NaN with one row of positive weight."""
    total = w.sum()
    denom = total - np.dot(w, w) / total
    if not denom > 0:
        return float("nan")
    return float(np.sqrt(np.dot(w, (x - np.dot(w, x) / total) ** 2) / denom))


def _all_metrics(yy: np.ndarray, rr: np.ndarray, threshold: float, bins: int,
                 w: np.ndarray | None = None) -> dict[str, float]:
    yy, rr, w = _carrying(w, yy, rr)
    out = threshold_metrics(yy, rr, threshold, weights=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        out["roc_auc"] = roc_auc(yy, rr, weights=w)
    out["ece"] = ece(yy, rr, bins, weights=w)
    out["ece_quantile"], out["ece_quantile_bins"] = ece_quantile(yy, rr, bins, weights=w)
    dec = brier_decomposition(yy, rr, bins, weights=w)
    out["brier"] = dec["brier"]
    out.update({f"brier_{k}": v for k, v in dec.items() if k != "brier"})
    out["log_loss"] = log_loss(yy, rr, weights=w)
    out["confidence_bias"] = confidence_bias(yy, rr, bins, weights=w)
    out["sce"] = signed_calibration_error(yy, rr, weights=w)
    out["score_mean"] = _mean(rr, w)
    if w is None:
        out["score_sd"] = float(rr.std(ddof=1)) if len(rr) > 1 else float("nan")
    else:
        out["score_sd"] = _weighted_sd(rr, w)
    out["prevalence"] = _mean(yy, w)
    return out


_GROUP_RATIO_METRICS = ("accuracy", "tpr", "fnr", "fpr", "tnr", "balanced_accuracy", "precision", "ppr")


def group_metrics(y, scores, groups, threshold: float = 0.5, min_share: float = 0.04, bins: int = 10, *,
                  weights=None):
    """Per-group metrics (docs/methods/risk.md §2.8) for groups holding at least ``min_share`` of the rows.

    With ``weights`` every metric is weighted, a group's share is its share of the weight, ``n``
    counts its rows of positive weight and a ``weight`` column (the group's total weight) follows it.

    Returns ``(per_group DataFrame, summary dict)``; the summary has ``{m}_ratio`` (min/max) and
    ``{m}_diff`` (max − min) for the thresholded metrics, ``equalized_odds_ratio`` =
    min(FNR ratio, FPR ratio) (as coded by folktexts), ``equalized_odds_diff`` = max(TPR diff, FPR
    diff), and ``sce_diff`` (largest minus smallest group SCE).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> frame, summary = group_metrics(y, r, ["a", "b"] * 5)
    >>> frame[["group", "n", "accuracy", "roc_auc"]].round(2)
      group  n  accuracy  roc_auc
    0     a  5       1.0     1.00
    1     b  5       0.6     0.83
    >>> round(summary["accuracy_diff"], 2), round(summary["sce_diff"], 2)
    (0.4, 0.11)
    """
    yy, rr, g, w = _yrgw(y, scores, groups, weights)
    yy, rr, g, w = _carrying(w, yy, rr, g)
    threshold, bins = _threshold(threshold), _bins(bins)
    min_share = check_real(min_share, "min_share", low=0.0, high=1.0)
    labels, inv = np.unique(g.astype(str), return_inverse=True)
    rows = []
    for k, lab in enumerate(labels):
        m = inv == k
        if (m.mean() if w is None else w[m].sum() / w.sum()) < min_share:
            continue
        met = _all_metrics(yy[m], rr[m], threshold, bins, None if w is None else w[m])
        size = {"n": int(m.sum())} if w is None else {"n": int(m.sum()), "weight": float(w[m].sum())}
        rows.append({"group": lab, **size, **met})
    frame = pd.DataFrame(rows)
    summary: dict[str, float] = {}
    if len(frame) >= 1:
        for mname in _GROUP_RATIO_METRICS:
            v = frame[mname].to_numpy(float)
            summary[f"{mname}_ratio"] = float(v.min() / v.max()) if v.max() > 0 else float("nan")
            summary[f"{mname}_diff"] = float(v.max() - v.min())
        summary["equalized_odds_ratio"] = min(summary["fnr_ratio"], summary["fpr_ratio"])
        summary["equalized_odds_diff"] = max(summary["tpr_diff"], summary["fpr_diff"])
        summary["sce_diff"] = float(frame["sce"].max() - frame["sce"].min())
    return frame, summary


def bootstrap_ci(col: np.ndarray, level: float) -> tuple[float, float, float]:
    """(se, ci_low, ci_high) of bootstrap replicates, non-finite ones dropped: their sd and the
    (1 - level)/2 and (1 + level)/2 percentiles; NaN where no replicate is finite (and se NaN for one).

    Examples
    --------
    >>> bootstrap_ci(np.array([1.0, 2.0, 3.0, np.nan]), 0.5)
    (1.0, 1.5, 2.5)
    """
    col = col[np.isfinite(col)]
    if not col.size:
        return (float("nan"),) * 3
    a = (1 - level) / 2
    se = float(col.std(ddof=1)) if col.size > 1 else float("nan")
    return se, float(np.quantile(col, a)), float(np.quantile(col, 1 - a))


def metric_value(metrics, name: str) -> float:
    """The value of metric ``name`` in a ``metric``/``value`` table (an evaluation's ``metrics``);
    an unknown name is an error listing the ones there.

    Examples
    --------
    >>> import pandas as pd
    >>> metric_value(pd.DataFrame({"metric": ["brier", "ece"], "value": [0.2, 0.05]}), "ece")
    0.05
    """
    row = metrics[metrics["metric"] == name]
    if row.empty:
        raise InvalidArgumentError(f"no metric {name!r}; available: {list(metrics['metric'])}")
    return float(row["value"].iloc[0])
