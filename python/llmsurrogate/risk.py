"""LLM risk scores and their evaluation (Cruz, Hardt & Mendler-Dünner 2024; spec risk-scores.md).

* :func:`risk_scores` -- score every row of a data set with an LLM backend (multiple choice with
  both answer orders averaged, or verbalized/numeric with expected-value decoding), through the
  on-disk cache; per-row answer mass.
* :func:`evaluate` -- the spec §2 metrics with their exact conventions (accuracy at ``r >= τ``,
  balanced accuracy, ECE with equal-width and quantile bins, Brier and its Murphy decomposition,
  log loss, ROC AUC with ties ½, confidence bias R_bias, signed calibration error, calibration
  curves, group metrics) with row-bootstrap CIs (Rust kernels).
* :func:`recalibrate` / :func:`fit_recalibrator` -- temperature, Platt and isotonic
  recalibration, cross-fitted.
* :func:`calibration_curve`, :func:`plot_calibration`, :func:`plot_score_histogram`.

Examples
--------
>>> import numpy as np
>>> y = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0])
>>> r = np.array([.1, .2, .8, .7, .4, .6, .3, .5, .9, .2])
>>> ev = evaluate(y, r, n_boot=50)
>>> round(ev.metric("roc_auc"), 4), round(ev.metric("accuracy"), 2)
(1.0, 0.9)
>>> round(ev.metric("sce"), 4)  # mean(r) - mean(y)
0.07
"""

from __future__ import annotations

import dataclasses
import logging
import math
import warnings
from typing import Any

import numpy as np

from . import _core
from ._validation import as_float_array, check_choice, check_int
from .exceptions import EmptyInputError, InvalidArgumentError, LLMSurrogateWarning, ShapeError
from .results import Result, Summary, result_dataclass

__all__ = [
    "risk_scores", "RiskScores", "evaluate", "RiskEvaluation", "threshold_metrics", "ece", "ece_quantile",
    "brier_decomposition", "log_loss", "roc_auc", "confidence_bias", "signed_calibration_error", "delta_sce",
    "calibration_curve", "group_metrics", "best_threshold", "fit_recalibrator", "recalibrate",
    "plot_calibration", "plot_score_histogram", "BOOT_METRICS", "score_table", "evaluate_table",
]

log = logging.getLogger("llmsurrogate.risk")

BOOT_METRICS = tuple(_core.RISK_BOOT_METRICS)
EPS = float(np.finfo(np.float64).eps)


# --- inputs --------------------------------------------------------------------------------------

def _yr(y, scores) -> tuple[np.ndarray, np.ndarray]:
    yy = as_float_array(y, "y", allow_nan=False)
    rr = as_float_array(scores, "scores", allow_nan=False)
    if yy.shape != rr.shape:
        raise ShapeError(f"arguments `y` (length {yy.size}) and `scores` (length {rr.size}) must have the same length")
    bad = np.flatnonzero((yy != 0) & (yy != 1))
    if bad.size:
        raise InvalidArgumentError(f"argument `y` must hold 0/1 labels; got {yy[bad[0]]} at position {bad[0]}")
    bad = np.flatnonzero((rr < 0) | (rr > 1))
    if bad.size:
        raise InvalidArgumentError(f"argument `scores` must lie in [0, 1]; got {rr[bad[0]]} at position {bad[0]}")
    return yy, rr


# --- single metrics ------------------------------------------------------------------------------

def threshold_metrics(y, scores, threshold: float = 0.5) -> dict[str, float]:
    """Spec §2.1: ŷ = 1{r >= τ}; accuracy, TPR, FNR, FPR, TNR, balanced accuracy, precision, PPR
    with folktexts' conventions for undefined ratios (TPR 0, FNR 1, FPR 1, TNR 0, precision 0)."""
    yy, rr = _yr(y, scores)
    pred = rr >= threshold
    pos = yy == 1
    tp = float(np.sum(pred & pos)); fp = float(np.sum(pred & ~pos))
    fn = float(np.sum(~pred & pos)); tn = float(np.sum(~pred & ~pos))
    n = len(yy)
    tpr = tp / (tp + fn) if tp + fn > 0 else 0.0
    fnr = 1.0 - tpr if tp + fn > 0 else 1.0
    fpr = fp / (fp + tn) if fp + tn > 0 else 1.0
    tnr = 1.0 - fpr if fp + tn > 0 else 0.0
    return {"accuracy": (tp + tn) / n, "tpr": tpr, "fnr": fnr, "fpr": fpr, "tnr": tnr,
            "balanced_accuracy": (tpr + tnr) / 2, "precision": tp / (tp + fp) if tp + fp > 0 else 0.0,
            "ppr": (tp + fp) / n}


def roc_auc(y, scores) -> float:
    """ROC AUC = P(r⁺ > r⁻) + ½ P(r⁺ = r⁻) (one sort, Rust). NaN with a warning when one class is
    absent; 0.5 with a warning for constant scores."""
    yy, rr = _yr(y, scores)
    auc = _core.risk_roc_auc(yy, rr)
    if math.isnan(auc):
        warnings.warn("ROC AUC is undefined: `y` holds one class only", LLMSurrogateWarning, stacklevel=2)
    elif np.all(rr == rr[0]):
        warnings.warn("constant scores: ROC AUC is 0.5 by the tie convention", LLMSurrogateWarning, stacklevel=2)
    return float(auc)


def ece(y, scores, bins: int = 10) -> float:
    """Paper ECE (eq. 2): equal-width bins on [0, 1], positive class, netcal's edge convention
    (scores clipped to [eps, 1-eps], bins [b_k, b_{k+1}), last closed, empty bins ignored)."""
    yy, rr = _yr(y, scores)
    return float(_core.risk_ece_equal_width(yy, rr, check_int(bins, "bins", minimum=1)))


def _quantile_edges(rr: np.ndarray, bins: int) -> np.ndarray:
    edges = np.quantile(rr, np.linspace(0, 1, bins + 1))
    return np.unique(edges)  # pandas qcut(duplicates="drop")


def ece_quantile(y, scores, bins: int = 10) -> tuple[float, int]:
    """ECE over quantile bins with pandas ``qcut(r, bins, duplicates="drop")`` semantics (bins
    (e_k, e_{k+1}], first closed); returns ``(ece, effective number of bins)``. All scores equal:
    one bin."""
    yy, rr = _yr(y, scores)
    edges = _quantile_edges(rr, check_int(bins, "bins", minimum=1))
    if len(edges) < 2:
        return float(abs(rr.mean() - yy.mean())), 1
    c, sr, sy = _core.risk_bin_stats(yy, rr, edges, right=True)
    return float(np.sum(np.abs(sy - sr)) / len(yy)), int(np.sum(c > 0))


def log_loss(y, scores, eps: float = EPS) -> float:
    """Mean negative log-likelihood with scores clipped to [eps, 1 - eps] (sklearn's clip)."""
    yy, rr = _yr(y, scores)
    p = np.clip(rr, eps, 1 - eps)
    return float(-np.mean(yy * np.log(p) + (1 - yy) * np.log1p(-p)))


def brier_decomposition(y, scores, bins: int | None = 10) -> dict[str, float]:
    """Murphy decomposition of the Brier score.

    ``bins=None`` groups by distinct score values, where Brier = reliability − resolution +
    uncertainty holds exactly. With equal-width ``bins`` the identity gains the within-bin terms,
    reported together as ``residual`` (= Brier − (rel − res + unc)).
    """
    yy, rr = _yr(y, scores)
    n = len(yy)
    if bins is None:
        _, inv = np.unique(rr, return_inverse=True)
    else:
        inv = np.minimum((np.clip(rr, EPS, 1 - EPS) * bins).astype(np.int64), bins - 1)
    cnt = np.bincount(inv).astype(float)
    keep = cnt > 0
    rbar = np.bincount(inv, weights=rr)[keep] / cnt[keep]
    ybar = np.bincount(inv, weights=yy)[keep] / cnt[keep]
    w = cnt[keep] / n
    base = yy.mean()
    rel = float(np.sum(w * (rbar - ybar) ** 2))
    res = float(np.sum(w * (ybar - base) ** 2))
    unc = float(base * (1 - base))
    brier = float(np.mean((rr - yy) ** 2))
    return {"brier": brier, "reliability": rel, "resolution": res, "uncertainty": unc,
            "residual": brier - (rel - res + unc)}


def confidence_bias(y, scores, bins: int = 10) -> float:
    """R_bias (paper §4.2): bins = ``pd.cut(r, bins)`` (equal width over the observed range,
    right-closed, range widened by 0.1% on the left); per bin with mean score s̄ and mean label ȳ
    the contribution is ȳ − s̄ if s̄ < 0.5 else s̄ − ȳ, weighted by the bin share. Negative =
    under-confident, positive = over-confident."""
    yy, rr = _yr(y, scores)
    lo, hi = float(rr.min()), float(rr.max())
    if lo == hi:
        lo, hi = lo - 0.001 * abs(lo) if lo != 0 else -0.001, hi + 0.001 * abs(hi) if hi != 0 else 0.001
        edges = np.linspace(lo, hi, bins + 1)
    else:
        edges = np.linspace(lo, hi, bins + 1)
        edges[0] -= (hi - lo) * 0.001
    c, sr, sy = _core.risk_bin_stats(yy, rr, edges, right=True)
    keep = c > 0
    sbar, ybar = sr[keep] / c[keep], sy[keep] / c[keep]
    contrib = np.where(sbar < 0.5, ybar - sbar, sbar - ybar)
    return float(np.sum(c[keep] / len(yy) * contrib))


def signed_calibration_error(y, scores) -> float:
    """SCE (Appendix A.1) = (1/n) Σ_m Σ_{i∈B_m} (r_i − y_i), identical to mean(r) − mean(y): the
    binning cancels, so none is done."""
    yy, rr = _yr(y, scores)
    return float(rr.mean() - yy.mean())


def delta_sce(y, scores, groups, a, b) -> float:
    """ΔSCE(A, B) = SCE on the rows of group ``a`` minus SCE on the rows of group ``b`` (paper
    Appendix A.1): positive means the scores favour group ``a`` beyond its outcomes."""
    yy, rr = _yr(y, scores)
    g = np.asarray(groups).astype(str)
    if g.shape != yy.shape:
        raise ShapeError(f"argument `groups` (length {g.size}) must have the length of `y` ({yy.size})")
    out = []
    for lab in (str(a), str(b)):
        m = g == lab
        if not m.any():
            raise InvalidArgumentError(f"group {lab!r} has no rows; groups present: {sorted(set(g))[:20]}")
        out.append(float(rr[m].mean() - yy[m].mean()))
    return out[0] - out[1]


def best_threshold(y, scores, objective: str = "balanced_accuracy", fp_cost: float = 1.0,
                   fn_cost: float = 1.0) -> float:
    """Threshold maximising ``objective`` over the observed scores (ŷ = 1{r >= τ}).

    ``balanced_accuracy`` (= Youden's J, what folktexts' ``compute_best_threshold`` maximises with
    unit costs), ``accuracy``, ``f1`` or ``cost`` (minimise fp_cost·FPR + fn_cost·FNR)."""
    check_choice(objective, "objective", ["balanced_accuracy", "accuracy", "f1", "cost"])
    yy, rr = _yr(y, scores)
    order = np.argsort(-rr, kind="mergesort")
    rs, ys = rr[order], yy[order]
    tp = np.cumsum(ys); fp = np.cumsum(1 - ys)
    last = np.r_[rs[1:] != rs[:-1], True]  # threshold = each distinct score
    tp, fp, thr = tp[last], fp[last], rs[last]
    P, N = yy.sum(), len(yy) - yy.sum()
    tpr = tp / P if P else np.zeros_like(tp)
    fpr = fp / N if N else np.ones_like(fp)
    if objective == "balanced_accuracy":
        val = (tpr + 1 - fpr) / 2
    elif objective == "accuracy":
        val = (tp + (N - fp)) / len(yy)
    elif objective == "f1":
        val = np.where(tp > 0, 2 * tp / (2 * tp + fp + (P - tp)), 0.0)
    else:
        val = -(fp_cost * fpr + fn_cost * (1 - tpr))
    return float(np.clip(thr[int(np.argmax(val))], 0.0, 1.0))


def calibration_curve(y, scores, bins: int = 10, strategy: str = "quantile", n_boot: int = 200,
                      seed: int = 42, level: float = 0.95):
    """Reliability diagram data: per bin the mean score, the fraction of positives, the count and a
    bootstrap CI of the fraction (``n_boot`` resamples within the bin, spec §2.5). ``strategy``:
    ``quantile`` (``pd.qcut`` semantics, duplicate edges dropped) or ``uniform`` (equal width on
    [0, 1], netcal edges)."""
    import pandas as pd

    check_choice(strategy, "strategy", ["quantile", "uniform"])
    yy, rr = _yr(y, scores)
    if strategy == "quantile":
        edges = _quantile_edges(rr, bins)
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
        boots = yk[rng.integers(0, len(yk), size=(n_boot, len(yk)))].mean(axis=1) if n_boot else np.array([np.nan])
        a = (1 - level) / 2
        rows.append({"bin": int(k), "mean_score": float(rr[m].mean()), "fraction_positive": float(yk.mean()),
                     "count": int(m.sum()), "ci_low": float(np.quantile(boots, a)),
                     "ci_high": float(np.quantile(boots, 1 - a))})
    return pd.DataFrame(rows)


def _all_metrics(yy: np.ndarray, rr: np.ndarray, threshold: float, bins: int) -> dict[str, float]:
    out = threshold_metrics(yy, rr, threshold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        out["roc_auc"] = roc_auc(yy, rr)
    out["ece"] = ece(yy, rr, bins)
    out["ece_quantile"], out["ece_quantile_bins"] = ece_quantile(yy, rr, bins)
    dec = brier_decomposition(yy, rr, bins)
    out["brier"] = dec["brier"]
    out.update({f"brier_{k}": v for k, v in dec.items() if k != "brier"})
    out["log_loss"] = log_loss(yy, rr)
    out["confidence_bias"] = confidence_bias(yy, rr, bins)
    out["sce"] = signed_calibration_error(yy, rr)
    out["score_mean"] = float(rr.mean())
    out["score_sd"] = float(rr.std(ddof=1)) if len(rr) > 1 else float("nan")
    out["prevalence"] = float(yy.mean())
    return out


_GROUP_RATIO_METRICS = ("accuracy", "tpr", "fnr", "fpr", "tnr", "balanced_accuracy", "precision", "ppr")


def group_metrics(y, scores, groups, threshold: float = 0.5, min_share: float = 0.04, bins: int = 10):
    """Per-group metrics (spec §2.8) for groups holding at least ``min_share`` of the rows.

    Returns ``(per_group DataFrame, summary dict)``; the summary has ``{m}_ratio`` (min/max) and
    ``{m}_diff`` (max − min) for the thresholded metrics, ``equalized_odds_ratio`` =
    min(FNR ratio, FPR ratio) (as coded by folktexts), ``equalized_odds_diff`` = max(TPR diff, FPR
    diff), and ``sce_diff`` (largest minus smallest group SCE)."""
    import pandas as pd

    yy, rr = _yr(y, scores)
    g = np.asarray(groups, dtype=object)
    if g.shape != yy.shape:
        raise ShapeError(f"argument `groups` (length {g.size}) must have the length of `y` ({yy.size})")
    labels, inv = np.unique(g.astype(str), return_inverse=True)
    rows = []
    for k, lab in enumerate(labels):
        m = inv == k
        if m.mean() < min_share:
            continue
        met = _all_metrics(yy[m], rr[m], threshold, bins)
        rows.append({"group": lab, "n": int(m.sum()), **met})
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


# --- evaluation result ----------------------------------------------------------------------------

@result_dataclass
class RiskEvaluation(Result):
    """Metrics of risk scores against labels.

    ``metrics``: one row per metric (``metric``, ``value``, ``se``, ``ci_low``, ``ci_high``;
    bootstrap columns NaN for metrics not bootstrapped); ``groups``: per-group metrics;
    ``group_summary``: ratios and differences across groups; ``calibration``: reliability-diagram
    table; ``meta``: threshold, n, n_boot, seed, bins.
    """

    metrics: Any
    groups: Any
    group_summary: dict
    calibration: Any
    meta: dict

    def metric(self, name: str) -> float:
        row = self.metrics[self.metrics["metric"] == name]
        if row.empty:
            raise InvalidArgumentError(f"no metric {name!r}; available: {list(self.metrics['metric'])}")
        return float(row["value"].iloc[0])

    def tidy(self):
        return self.metrics.copy()

    def summary(self) -> Summary:
        facts = {"rows": self.meta["n"], "threshold": self.meta["threshold"], "bootstrap resamples": self.meta["n_boot"]}
        main = self.metrics[self.metrics["metric"].isin(["accuracy", "balanced_accuracy", "roc_auc", "ece",
                                                         "ece_quantile", "brier", "log_loss", "confidence_bias",
                                                         "sce", "score_mean", "score_sd"])]
        tables = [("Metrics (95% bootstrap CIs)", main)]
        if self.groups is not None and len(self.groups):
            tables.append(("By group", self.groups[["group", "n", "accuracy", "roc_auc", "ece", "brier", "sce"]]))
        notes = ["Accuracy uses r >= threshold; ECE: 10 equal-width bins on [0, 1]; SCE = mean(r) - mean(y)."]
        return Summary("Risk score evaluation", facts=facts, tables=tables, notes=notes)

    def plot(self, ax=None, **kwargs):
        return plot_calibration_table(self.calibration, ax=ax, **kwargs)


def evaluate(y, scores, groups=None, *, threshold: float = 0.5, bins: int = 10, n_boot: int = 200,
             seed: int = 42, level: float = 0.95, min_group_share: float = 0.04, n_jobs: int | None = None
             ) -> RiskEvaluation:
    """All spec §2 metrics of ``scores`` against 0/1 labels ``y``, with bootstrap CIs.

    The headline metrics (accuracy, balanced accuracy, Brier, log loss, ROC AUC, ECE, SCE) get
    ``n_boot`` row-bootstrap replicates (Rust, parallel, seed ``seed``; PRNG documented in
    ``rust/risk.rs``): ``se`` is their standard deviation, the CI their percentiles.
    """
    import pandas as pd

    yy, rr = _yr(y, scores)
    if len(yy) == 0:
        raise EmptyInputError("argument `y` is empty")
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    point = _all_metrics(yy, rr, threshold, bins)
    boot = None
    if n_boot > 0:
        boot = np.asarray(_core.risk_bootstrap(yy, rr, n_boot, int(seed), float(threshold), int(bins), EPS, n_jobs))
    a = (1 - level) / 2
    rows = []
    for name, value in point.items():
        se = lo = hi = float("nan")
        if boot is not None and name in BOOT_METRICS:
            col = boot[:, BOOT_METRICS.index(name)]
            col = col[np.isfinite(col)]
            if col.size:
                se = float(col.std(ddof=1)) if col.size > 1 else float("nan")
                lo, hi = float(np.quantile(col, a)), float(np.quantile(col, 1 - a))
        rows.append({"metric": name, "value": float(value), "se": se, "ci_low": lo, "ci_high": hi})
    metrics = pd.DataFrame(rows)
    groups_frame, gsum = (pd.DataFrame(), {})
    if groups is not None:
        groups_frame, gsum = group_metrics(yy, rr, groups, threshold, min_group_share, bins)
    calib = calibration_curve(yy, rr, bins=bins, strategy="quantile", seed=seed)
    meta = {"n": int(len(yy)), "threshold": float(threshold), "n_boot": n_boot, "seed": int(seed), "bins": int(bins),
            "level": float(level)}
    return RiskEvaluation(metrics=metrics, groups=groups_frame, group_summary=gsum, calibration=calib, meta=meta)


# --- recalibration ------------------------------------------------------------------------------

def _logit(r: np.ndarray) -> np.ndarray:
    p = np.clip(r, 1e-6, 1 - 1e-6)
    return np.log(p) - np.log1p(-p)


@dataclasses.dataclass(frozen=True)
class Recalibrator:
    """A fitted map from raw scores to recalibrated scores (call it on scores)."""

    method: str
    params: dict

    def __call__(self, scores) -> np.ndarray:
        r = as_float_array(scores, "scores", allow_nan=False)
        if self.method == "temperature":
            z = _logit(r) / self.params["temperature"]
        elif self.method == "platt":
            z = self.params["a"] * _logit(r) + self.params["b"]
        else:
            x, yv = np.asarray(self.params["x"]), np.asarray(self.params["y"])
            return np.interp(r, x, yv)
        return 1.0 / (1.0 + np.exp(-z))


def fit_recalibrator(y, scores, method: str = "platt") -> Recalibrator:
    """Fit ``temperature`` (r ↦ σ(logit r / T), 1 parameter), ``platt`` (σ(a·logit r + b)) or
    ``isotonic`` (PAV, sklearn) by maximum likelihood on labelled data."""
    from scipy.optimize import minimize

    check_choice(method, "method", ["temperature", "platt", "isotonic"])
    yy, rr = _yr(y, scores)
    z = _logit(rr)

    def nll(a, b):
        t = a * z + b
        return float(np.sum(np.logaddexp(0, t) - yy * t))

    if method == "temperature":
        res = minimize(lambda v: nll(np.exp(-v[0]), 0.0), x0=[0.0], method="Nelder-Mead",
                       options={"xatol": 1e-8, "fatol": 1e-10})
        return Recalibrator("temperature", {"temperature": float(np.exp(res.x[0]))})
    if method == "platt":
        res = minimize(lambda v: nll(v[0], v[1]), x0=[1.0, 0.0], method="BFGS")
        return Recalibrator("platt", {"a": float(res.x[0]), "b": float(res.x[1])})
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(rr, yy)
    return Recalibrator("isotonic", {"x": iso.X_thresholds_.tolist(), "y": iso.y_thresholds_.tolist()})


def recalibrate(y, scores, method: str = "platt", *, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Cross-fitted recalibrated scores: each row is mapped by a recalibrator fitted on the other
    folds (no row is recalibrated with its own label)."""
    yy, rr = _yr(y, scores)
    folds = check_int(folds, "folds", minimum=2)
    if folds > len(yy):
        raise InvalidArgumentError(f"argument `folds` ({folds}) exceeds the number of rows ({len(yy)})")
    perm = np.random.default_rng(seed).permutation(len(yy))
    out = np.empty_like(rr)
    for f in range(folds):
        test = perm[f::folds]
        train = np.setdiff1d(perm, test)
        out[test] = fit_recalibrator(yy[train], rr[train], method)(rr[test])
    return out


# --- plots --------------------------------------------------------------------------------------

def plot_calibration_table(table, ax=None, label: str | None = None, **kwargs):
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
    ax.errorbar(table["mean_score"], table["fraction_positive"],
                yerr=[table["fraction_positive"] - table["ci_low"], table["ci_high"] - table["fraction_positive"]],
                marker="o", capsize=2, label=label, **kwargs)
    ax.set_xlim(0, 1); ax.set_ylim(0, 1)
    ax.set_xlabel("mean risk score in bin"); ax.set_ylabel("fraction positive")
    return ax.figure


def plot_calibration(y, scores, groups=None, bins: int = 10, ax=None, min_share: float = 0.04):
    """Reliability diagram (quantile bins, bootstrap CIs), one curve per group if ``groups``."""
    yy, rr = _yr(y, scores)
    fig = plot_calibration_table(calibration_curve(yy, rr, bins), ax=ax, label="all")
    ax = fig.axes[0]
    if groups is not None:
        g = np.asarray(groups).astype(str)
        for lab in np.unique(g):
            m = g == lab
            if m.mean() >= min_share and m.sum() >= bins:
                plot_calibration_table(calibration_curve(yy[m], rr[m], bins), ax=ax, label=str(lab), alpha=0.7)
    ax.legend(fontsize=7)
    ax.set_title("Calibration")
    return fig


def plot_score_histogram(scores, groups=None, bins: int = 20, ax=None):
    """Histogram of scores on [0, 1], one (density) histogram per group if ``groups``."""
    import matplotlib.pyplot as plt

    rr = as_float_array(scores, "scores", allow_nan=False)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    edges = np.linspace(0, 1, bins + 1)
    if groups is None:
        ax.hist(rr, bins=edges, color="C0")
    else:
        g = np.asarray(groups).astype(str)
        for lab in np.unique(g):
            ax.hist(rr[g == lab], bins=edges, histtype="step", density=True, label=str(lab))
        ax.legend(fontsize=7)
    ax.set_xlabel("risk score"); ax.set_ylabel("count" if groups is None else "density")
    return ax.figure


# --- scoring data with an LLM -----------------------------------------------------------------

@result_dataclass
class RiskScores(Result):
    """Risk scores of each row: ``table`` with ``row`` (position), ``score``, ``answer_mass`` (mean
    next-token mass on the answer tokens, or on digits for numeric), ``label`` (if the data hold the
    target) and, for multiple choice, ``score_order_k`` per answer order; ``meta`` records the task,
    method, backend identity and cache statistics."""

    table: Any
    meta: dict

    @property
    def scores(self) -> np.ndarray:
        return self.table["score"].to_numpy(float)

    def tidy(self):
        return self.table.copy()

    def evaluate(self, groups=None, **kwargs) -> RiskEvaluation:
        if "label" not in self.table:
            raise InvalidArgumentError("these scores have no labels; pass the data with the target column")
        return evaluate(self.table["label"], self.table["score"], groups, **kwargs)

    def summary(self) -> Summary:
        t = self.table
        facts = {"task": self.meta.get("task"), "method": self.meta.get("method"), "rows": len(t),
                 "mean score": float(t["score"].mean()), "mean answer mass": float(t["answer_mass"].mean()),
                 "rows with answer mass < 0.1": int((t["answer_mass"] < 0.1).sum())}
        return Summary("LLM risk scores", facts=facts)

    def plot(self, ax=None, **kwargs):
        return plot_score_histogram(self.scores, ax=ax, **kwargs)


def risk_scores(data, task, backend, method: str = "multiple_choice", *, cache=None, batch_size: int = 16,
                correct_order_bias: bool = True, spelling: str = "sum", chat: bool = False,
                system_prompt: str | None = None, few_shot=None, progress=None) -> RiskScores:
    """Score every row of ``data`` for ``task`` with an LLM ``backend``.

    ``method``: ``"multiple_choice"`` (next-token answer probabilities, all K! option orders
    averaged when ``correct_order_bias``), ``"numeric"`` (verbalized probability, expected value
    over the digit distribution) or ``"numeric_argmax"`` (folktexts' two greedy digits).
    ``cache``: a directory or :class:`~llmsurrogate.llm.cache.Cache`; every prompt's output is
    stored, so a rerun (or a run killed and restarted) recomputes nothing it finished.
    ``chat``: wrap prompts in the backend's chat template (instruct models; the assistant turn is
    prefilled and cut after the prefill); ``system_prompt`` overrides the default system text
    (``""`` for none).
    ``few_shot``: a frame of labelled example rows (features and the label) shown before every
    row, the same examples for every row and every answer order, each rendered with the *same*
    (permuted) question as the target so its answer letter matches (fixing folktexts'
    permuted-label bug).
    """
    import pandas as pd

    from .llm.cache import as_cache
    from .llm.prompts import rows_of
    from .llm.scoring import chat_prompt_fn, mc_risk, numeric_risk

    check_choice(method, "method", ["multiple_choice", "numeric", "numeric_argmax"])
    rows = rows_of(data, task)
    cache = as_cache(cache)
    h0, m0 = cache.hits, cache.misses
    table = pd.DataFrame({"row": np.arange(len(rows))})
    fn = chat_prompt_fn(backend, task, "multiple_choice" if method == "multiple_choice" else "numeric",
                        system_prompt) if chat else None
    if few_shot is not None:
        from ._validation import as_frame
        from .llm.prompts import few_shot_prompt

        if chat:
            raise InvalidArgumentError("few-shot prompts cannot be combined with chat=True")
        ex_frame = as_frame(few_shot, "few_shot")
        ex_rows = rows_of(ex_frame, task)
        ex_labels = task.labels(ex_frame).tolist()
        if method == "multiple_choice":
            fn = lambda row, q: few_shot_prompt(task, row, ex_rows, ex_labels, q)  # noqa: E731
        else:
            if task.numeric_question is None:
                raise InvalidArgumentError(f"task {task.name!r} has no numeric question")
            fn = lambda row, q=None: few_shot_prompt(task, row, ex_rows, ex_labels, task.numeric_question)  # noqa: E731
    if method == "multiple_choice":
        s, mass, per = mc_risk(backend, task, rows, cache=cache, batch_size=batch_size,
                               correct_order_bias=correct_order_bias, spelling=spelling, progress=progress,
                               prompt_fn=fn)
        table["score"], table["answer_mass"] = s, mass
        for k in range(per.shape[1]):
            table[f"score_order_{k}"] = per[:, k]
    else:
        s, mass = numeric_risk(backend, task, rows, cache=cache, batch_size=batch_size,
                               decoding="argmax" if method == "numeric_argmax" else "expected", progress=progress,
                               prompt_fn=fn)
        table["score"], table["answer_mass"] = s, mass
    from ._validation import as_frame

    frame = as_frame(data, "data")
    if task.label_name in frame.columns or task.target in frame.columns:
        table["label"] = task.labels(frame)
    meta = {"task": task.name, "task_fingerprint": task.fingerprint(), "method": method,
            "backend": dict(getattr(backend, "identity", {})), "correct_order_bias": bool(correct_order_bias),
            "chat": bool(chat), "few_shot": 0 if few_shot is None else len(ex_rows),
            "cache_hits": cache.hits - h0, "cache_misses": cache.misses - m0}
    return RiskScores(table=table, meta=meta)


# --- plain-table entry points (the R package calls these) ------------------------------------

def score_table(data, task: str, model: str, backend: str = "transformers", method: str = "multiple_choice",
                cache=None, batch_size: int | None = None, correct_order_bias: bool = True, device: str | None = None):
    """:func:`risk_scores` from names: ``task`` is a TOML file or a built-in task name, ``model`` a
    local model folder. ``batch_size``: prompts per forward pass (default: the backend's, 16 on
    the CPU and 128 on a GPU). Returns the scores table (DataFrame)."""
    from pathlib import Path

    from .llm.tasks import Task, task_from_dict

    check_choice(backend, "backend", ["transformers", "vllm"])
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    t = Task.from_toml(task) if Path(str(task)).suffix.lower() == ".toml" else task_from_dict({"preset": task})
    if backend == "transformers":
        from .llm.hf import TransformersBackend

        be = TransformersBackend(model, device=device, batch_size=batch_size)
    else:
        from .llm.vllm import VLLMBackend

        be = VLLMBackend(model)
    return risk_scores(data, t, be, method, cache=cache, batch_size=batch_size or 16,
                       correct_order_bias=correct_order_bias).table


def evaluate_table(y, scores, groups=None, threshold: float = 0.5, bins: int = 10, n_boot: int = 200,
                   seed: int = 42):
    """:func:`evaluate` as plain tables: ``{"metrics": DataFrame, "groups": DataFrame,
    "group_summary": dict, "calibration": DataFrame}``."""
    ev = evaluate(y, scores, groups, threshold=threshold, bins=check_int(bins, "bins", minimum=1),
                  n_boot=n_boot, seed=check_int(seed, "seed", minimum=0))
    return {"metrics": ev.metrics, "groups": ev.groups, "group_summary": ev.group_summary,
            "calibration": ev.calibration}
