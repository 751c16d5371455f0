"""Metrics and recalibration for predictions over K answer options (docs/methods/survey.md §1-§2).

A prediction is an ``n x K`` array (or a DataFrame of K columns, one per option) of probabilities
that sum to 1 across each row; labels are option codes ``0..K-1`` or the option labels themselves
(the DataFrame's column names, or ``options=``). Every metric takes ``weights=`` (survey weights:
non-negative, aligned by label with a pandas input): the metric is then the weighted mean of the
per-row losses, the population quantity under the survey design. With unit weights and K = 2 each
metric gives the binary metric of ``risk._metrics`` on the second column (log loss, accuracy at
``r >= 0.5``, ROC AUC, the class-1 part of the class-wise ECE, RPS = Brier); the multiclass Brier is
the sum over classes, so twice the binary Brier.

:func:`evaluate_multiclass` gives every metric with row-bootstrap CIs drawn by the same PRNG as
:func:`~llmsurrogate.risk.evaluate` (``_core.risk_bootstrap_indices``: replicate ``b`` resamples the
same rows in both); a row's weight travels with it. :class:`TemperatureScaling` and
:class:`VectorScaling` recalibrate K-class predictions (fit on held-out rows, then ``transform``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from .. import _core
from .._losses import probability_rows, row_brier, row_log_loss, row_rps
from .._plotting import axes_for, finish
from .._positions import at, located
from .._validation import (
    align_by_label,
    check_allocation,
    check_choice,
    check_int,
    check_real,
    match_options,
    name_order,
    named_columns,
)
from ..exceptions import EmptyInputError, InvalidArgumentError, LLMSurrogateWarning, ShapeError
from ..results import Result, Summary, result_dataclass
from ._metrics import EPS, _bins, _level, _seed, _weights, bootstrap_ci, metric_value
from ._recalibration import RUNAWAY_TEMPERATURE, warn_runaway_temperature  # noqa: F401 - RUNAWAY_TEMPERATURE re-exported

#: logits are computed from probabilities clipped to [LOGIT_CLIP, 1 - LOGIT_CLIP] (as the binary recalibrators do)
LOGIT_CLIP = 1e-6


# --- inputs --------------------------------------------------------------------------------------

def _options_of(probs, options):
    """``(probs, options)``: named columns put in the order of ``options`` (matched by name), the
    options a DataFrame's columns, ``options=`` or None (codes 0..K-1)."""
    if options is not None:
        if isinstance(options, (str, bytes)) or not hasattr(options, "__iter__"):
            raise InvalidArgumentError("argument `options` must be a sequence with one label per column of `probs`")
        options = list(options)
        order = match_options(named_columns(probs), options)
        if order is not None:
            probs = probs.iloc[:, order]
        return probs, options
    if isinstance(probs, pd.DataFrame):
        return probs, list(probs.columns)
    return probs, None  # codes 0..K-1


def _risk_scores(probs):
    """``(probs, ordered)``: a :class:`~llmsurrogate.risk.RiskScores` passed as ``probs`` gives its
    answer distribution and whether its question is ordered; anything else passes (ordered None)."""
    from ._results import RiskScores

    if isinstance(probs, RiskScores):
        return probs.probabilities, bool(probs.meta.get("ordered", False))
    return probs, None


def resolve_ordered(ordered, y, hint) -> bool:
    """``ordered`` as given; None: a RiskScores' ``ordered`` (``hint``), else whether ``y`` is an
    ordered categorical, else False."""
    if ordered is not None:
        return bool(ordered)
    if hint is not None:
        return hint
    dtype = getattr(y, "dtype", None)
    return bool(isinstance(dtype, pd.CategoricalDtype) and dtype.ordered)


def _as_probs(probs, name: str = "probs") -> np.ndarray:
    if isinstance(probs, pd.DataFrame):
        probs = probs.to_numpy()
    try:
        p = np.asarray(probs, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"argument `{name}` must be an n x K array of probabilities: {exc}") from None
    bad = np.argwhere(~np.isfinite(p))
    if bad.size:
        raise InvalidArgumentError(located(f"argument `{name}` holds a missing or infinite value at ",
                                           at(bad[0][0], "row", marked=True), ", ", at(bad[0][1], "column")))
    return probability_rows(p, name, "answer option")


def _codes(y, k: int, options) -> np.ndarray:
    if y is None or isinstance(y, (str, bytes)):
        raise InvalidArgumentError("argument `y` must be a sequence with one answer per row")
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    if np.ndim(y) != 1:
        raise ShapeError(f"argument `y` must be one-dimensional; got {np.ndim(y)} dimensions")
    arr = np.asarray(y, dtype=object)
    missing = np.flatnonzero(pd.isna(arr))
    if missing.size:
        raise InvalidArgumentError(located(f"argument `y` has {missing.size} missing answer(s), the first at ",
                                           at(missing[0])))
    labels = list(range(k)) if options is None else options
    if options is None and arr.size and all(isinstance(v, (bool, np.bool_)) for v in arr):
        arr = arr.astype(np.int64)  # False/True are the codes 0/1, as the binary metrics read them
    if len(labels) != k:
        raise ShapeError(f"argument `options` has {len(labels)} labels but `probs` has {k} columns")
    index = pd.Index(labels)
    if index.has_duplicates:
        raise InvalidArgumentError(f"argument `options` (or the columns of `probs`) holds duplicated labels: "
                                   f"{index[index.duplicated()].tolist()[:5]}")
    codes = index.get_indexer(pd.Index(arr))
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        hint = ("; labels are the columns of `probs` (a DataFrame) or `options=`; to pass codes 0..K-1 give "
                "`options=range(K)`") if options is not None else "; without `options=` labels are the codes 0..K-1"
        raise InvalidArgumentError(located(f"argument `y`: answer {arr[bad[0]]!r} at ", at(bad[0]), " is not an option "
                                           f"(options: {labels[:20]}){hint}"))
    return codes.astype(np.int64)


def _ordered_levels(y) -> list | None:
    """The levels of an ordered categorical ``y`` in their order (the scale of the question); None
    for anything else. With named probability columns they set the options' order, matched by name
    (a pivot leaves the columns in alphabetical order: high, low, mid)."""
    dtype = getattr(y, "dtype", None)
    if isinstance(dtype, pd.CategoricalDtype) and dtype.ordered:
        return list(dtype.categories)
    return None


def multiclass_inputs(y, probs, weights=None, options=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Checked inputs ``(codes, probs, weights, options)``: ``y``, ``probs`` and ``weights`` paired by
    pandas label (or by position), labels coded ``0..K-1`` in the order of the columns (of
    ``options=``, or of an ordered categorical ``y``'s levels when ``probs`` has named columns).

    Examples
    --------
    >>> import pandas as pd
    >>> probs = pd.DataFrame({"no": [.7, .2], "yes": [.3, .8]}, index=[10, 11])
    >>> codes, p, w, options = multiclass_inputs(pd.Series(["yes", "no"], index=[11, 10]), probs)
    >>> codes.tolist(), options, w.tolist()  # y's order; probs reordered to match by label
    ([1, 0], ['no', 'yes'], [1.0, 1.0])
    """
    probs, _ = _risk_scores(probs)
    if options is None and isinstance(probs, pd.DataFrame):
        options = _ordered_levels(y)  # an ordered y's scale orders named columns (RPS, W1 follow it)
    probs, opts = _options_of(probs, options)
    y, probs, weights = align_by_label(("y", y), ("probs", probs), ("weights", weights))
    p = _as_probs(probs)
    codes = _codes(y, p.shape[1], opts)
    if codes.size != p.shape[0]:
        raise ShapeError(f"arguments `y` (length {codes.size}) and `probs` ({p.shape[0]} rows) must have the same "
                         f"number of rows")
    if codes.size == 0:
        raise EmptyInputError("argument `y` is empty")
    w = _weights(weights, codes.size)
    return codes, p, w, (list(range(p.shape[1])) if opts is None else opts)


# --- kernels on checked arrays (codes, probs, weights) -------------------------------------------

def _wmean(x: np.ndarray, w: np.ndarray) -> float:
    return float(np.dot(w, x) / w.sum())


def _argmax_last(p):
    """The predicted option: the largest probability, ties to the later option (K = 2: ``r >= 0.5``)."""
    k = p.shape[1]
    return k - 1 - np.argmax(p[:, ::-1], axis=1)


def _weighted_auc(pos: np.ndarray, s: np.ndarray, w: np.ndarray) -> float:
    """P(s+ > s-) + ½ P(s+ = s-) with each pair weighted by w+ w- (NaN when a class has no weight)."""
    _, inv = np.unique(s, return_inverse=True)
    wp = np.bincount(inv, weights=w * pos)
    wn = np.bincount(inv, weights=w * ~pos)
    tot_p, tot_n = wp.sum(), wn.sum()
    if tot_p <= 0 or tot_n <= 0:
        return float("nan")
    below = np.cumsum(wn) - wn
    return float(np.sum(wp * (below + 0.5 * wn)) / (tot_p * tot_n))


def _ovr_auc(c, p, w):
    k = p.shape[1]
    aucs = np.array([_weighted_auc(c == j, p[:, j], w) for j in range(k)])
    support = np.bincount(c, weights=w, minlength=k)
    ok = np.isfinite(aucs)
    if not ok.all():
        return aucs, float("nan"), float("nan")
    return aucs, float(aucs.mean()), float(np.dot(support, aucs) / support.sum())


def _uniform_bins(x: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """netcal's equal-width bins (as ``risk.ece``): values clipped to [eps, 1-eps], bin ⌊x·bins⌋."""
    xc = np.clip(x, EPS, 1 - EPS)
    return np.minimum(np.floor(xc * bins).astype(np.int64), bins - 1), xc


def _binned_ece(hit: np.ndarray, conf: np.ndarray, w: np.ndarray, bins: int) -> float:
    idx, xc = _uniform_bins(conf, bins)
    gap = np.bincount(idx, weights=w * (hit - xc), minlength=bins)
    return float(np.sum(np.abs(gap)) / w.sum())


def _top_label(c, p):
    pred = _argmax_last(p)
    return (pred == c).astype(float), p[np.arange(len(c)), pred]


def _classwise(c, p, w, bins):
    return np.array([_binned_ece((c == j).astype(float), p[:, j], w, bins) for j in range(p.shape[1])])


def _metric_values(c, p, w, ordered: bool, bins: int) -> dict[str, float]:
    hit, conf = _top_label(c, p)
    _, macro, weighted = _ovr_auc(c, p, w)
    out = {"log_loss": _wmean(row_log_loss(c, p, EPS), w), "brier": _wmean(row_brier(c, p), w)}
    if ordered:
        out["rps"] = _wmean(row_rps(c, p), w)
    out.update({"accuracy": _wmean(hit, w), "roc_auc_macro": macro, "roc_auc_weighted": weighted,
                "ece_top_label": _binned_ece(hit, conf, w, bins),
                "ece_classwise": float(_classwise(c, p, w, bins).mean())})
    return out


def _warn_auc(value: float) -> float:
    if math.isnan(value):
        warnings.warn("one-vs-rest ROC AUC is undefined: an option has no answers (or every answer) of positive weight in `y`",
                      LLMSurrogateWarning, stacklevel=3)
    return value


# --- single metrics ------------------------------------------------------------------------------

def multiclass_log_loss(y, probs, *, weights=None, options=None, eps: float = EPS) -> float:
    """Mean negative log probability of the observed answer, −Σ w_i log p_{i,y_i} / Σ w_i, with the
    probability clipped to [eps, 1 − eps] (scikit-learn's ``log_loss``).

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6]]
    >>> round(multiclass_log_loss([0, 1, 1], probs), 4)  # -(log .7 + log .6 + log .2) / 3
    0.8256
    >>> round(multiclass_log_loss([0, 1, 1], probs, weights=[1, 1, 2]), 4)
    1.0216
    """
    c, p, w, _ = multiclass_inputs(y, probs, weights, options)
    eps = check_real(eps, "eps", low=0.0, high=0.5, low_open=True, high_open=True)
    return _wmean(row_log_loss(c, p, eps), w)


def multiclass_brier(y, probs, *, weights=None, options=None) -> float:
    """Brier's (1950) score Σ_k (p_ik − 1{y_i = k})², weighted mean over rows; in [0, 2], the sum of
    the K one-vs-rest Brier scores (K = 2: twice the binary Brier score).

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6]]
    >>> round(multiclass_brier([0, 1, 1], probs), 4)  # (.14 + .26 + 1.04) / 3
    0.48
    """
    c, p, w, _ = multiclass_inputs(y, probs, weights, options)
    return _wmean(row_brier(c, p), w)


def ranked_probability_score(y, probs, *, weights=None, options=None) -> float:
    """Ranked probability score for ordered options (Epstein 1969), normalised to [0, 1]:
    RPS_i = Σ_{k<K} (F_ik − O_ik)² / (K − 1), with F the cumulative predicted and O the cumulative
    observed distribution; weighted mean over rows. The columns must be in the scale's order.
    K = 2: the binary Brier score.

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6]]
    >>> round(ranked_probability_score([0, 1, 1], probs), 4)  # ((.09+.01) + (.01+.09) + (.04+.36)) / 2 / 3
    0.1
    >>> ranked_probability_score([0], [[0.0, 0.0, 1.0]])  # two steps away: the worst score
    1.0
    """
    c, p, w, _ = multiclass_inputs(y, probs, weights, options)
    return _wmean(row_rps(c, p), w)


def multiclass_accuracy(y, probs, *, weights=None, options=None) -> float:
    """Weighted share of rows whose most probable option is the answer (ties go to the later
    option, which is the binary rule ``r >= 0.5`` at K = 2).

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6]]
    >>> round(multiclass_accuracy([0, 1, 1], probs), 4), multiclass_accuracy([0, 1, 1], probs, weights=[1, 1, 2])
    (0.6667, 0.5)
    """
    c, p, w, _ = multiclass_inputs(y, probs, weights, options)
    return _wmean(_top_label(c, p)[0], w)


def ovr_roc_auc(y, probs, *, average: str = "macro", weights=None, options=None):
    """One-vs-rest ROC AUC: for each option k, P(p_k of a k-answer > p_k of another answer), ties
    ½, pairs weighted by the product of their weights; ``average="macro"`` (plain mean over options),
    ``"weighted"`` (mean weighted by each option's weighted share of answers) or ``None`` (one AUC
    per option, an array). NaN with a warning when an option is never (or always) the answer.

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.3, .3, .4]]
    >>> round(ovr_roc_auc([0, 1, 2, 2], probs), 4), round(ovr_roc_auc([0, 1, 2, 2], probs, average="weighted"), 4)
    (1.0, 1.0)
    >>> ovr_roc_auc([0, 2, 2, 1], probs, average=None).round(3)
    array([1.   , 0.667, 0.75 ])
    """
    if average is not None:
        check_choice(average, "average", ["macro", "weighted"])
    c, p, w, _ = multiclass_inputs(y, probs, weights, options)
    aucs, macro, weighted = _ovr_auc(c, p, w)
    if average is None:
        return aucs
    return _warn_auc(macro if average == "macro" else weighted)


def top_label_ece(y, probs, *, bins: int = 10, weights=None, options=None) -> float:
    """Top-label ECE (Guo et al. 2017): the confidence max_k p_ik against 1{argmax = y_i}, in
    equal-width bins on [0, 1] with ``risk.ece``'s edge convention; Σ_bins |Σ_{i∈bin} w_i (hit_i −
    conf_i)| / Σ w_i.

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6]]
    >>> round(top_label_ece([0, 1, 1], probs, bins=10), 4)  # (|1 - 1.2| + |1 - .7|) / 3: bins .6 (hit, miss), .7 (hit)
    0.1667
    """
    c, p, w, _ = multiclass_inputs(y, probs, weights, options)
    hit, conf = _top_label(c, p)
    return _binned_ece(hit, conf, w, _bins(bins))


def classwise_ece(y, probs, *, bins: int = 10, weights=None, options=None, average: bool = True):
    """Class-wise ECE (Kull et al. 2019): for each option k the binary ECE of p_k against
    1{y = k} (equal-width bins, ``risk.ece``'s edges); their mean (``average=True``) or the K values.

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6]]
    >>> classwise_ece([0, 1, 1], probs, average=False).round(4)
    array([0.2   , 0.3333, 0.3333])
    """
    c, p, w, _ = multiclass_inputs(y, probs, weights, options)
    per = _classwise(c, p, w, _bins(bins))
    return float(per.mean()) if average else per


def _reliability_rows(c, p, w, bins, kind):
    if kind == "top_label":
        hit, conf = _top_label(c, p)
        yield "top_label", hit, conf
    else:
        for j in range(p.shape[1]):
            yield j, (c == j).astype(float), p[:, j]


def _bin_table(hit, conf, w, bins):
    idx, xc = _uniform_bins(conf, bins)
    W = np.bincount(idx, weights=w, minlength=bins)
    return idx, W, np.bincount(idx, weights=w * xc, minlength=bins), np.bincount(idx, weights=w * hit, minlength=bins)


def _replicates(n: int, n_boot: int, seed: int):
    """Row indices of bootstrap replicates ``0..n_boot-1``: the PRNG of :func:`risk.evaluate`."""
    for b in range(n_boot):
        yield np.asarray(_core.risk_bootstrap_indices(n, seed, b), dtype=np.int64)



def reliability_table(y, probs, *, kind: str = "top_label", bins: int = 10, weights=None, options=None,
                      n_boot: int = 200, seed: int = 42, level: float = 0.95) -> pd.DataFrame:
    """Reliability-diagram table: per equal-width bin (``risk.ece``'s edges) the weighted mean
    predicted probability, the weighted observed frequency, the row count, the bin's weight, and a
    row-bootstrap CI of the frequency (``n_boot`` replicates, the PRNG of ``risk.evaluate``; weights
    travel with their rows). ``kind="top_label"``: confidence max_k p_k against a correct argmax;
    ``"classwise"``: one block per option, p_k against 1{y = k} (column ``option``).

    Examples
    --------
    >>> probs = [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.8, .1, .1]]
    >>> t = reliability_table([0, 1, 1, 0], probs, bins=5, n_boot=0)
    >>> t[["option", "bin", "mean_probability", "frequency", "count"]].round(4)
          option  bin  mean_probability  frequency  count
    0  top_label    3            0.6333     0.6667      3
    1  top_label    4            0.8000     1.0000      1
    """
    check_choice(kind, "kind", ["top_label", "classwise"])
    c, p, w, opts = multiclass_inputs(y, probs, weights, options)
    bins, seed, level = _bins(bins), _seed(seed), _level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    check_allocation(8.0 * n_boot * bins * (p.shape[1] + 1), "n_boot", n_boot, "the bootstrap replicates")
    blocks = list(_reliability_rows(c, p, w, bins, kind))
    boot = np.full((len(blocks), n_boot, bins), np.nan)
    for b, rows in enumerate(_replicates(len(c), n_boot, seed)):
        for j, (_, hit, conf) in enumerate(_reliability_rows(c[rows], p[rows], w[rows], bins, kind)):
            _, W, _, H = _bin_table(hit, conf, w[rows], bins)
            with np.errstate(invalid="ignore", divide="ignore"):
                boot[j, b] = H / W
    out = []
    for j, (label, hit, conf) in enumerate(blocks):
        idx, W, S, H = _bin_table(hit, conf, w, bins)
        cnt = np.bincount(idx, minlength=bins)
        for k in np.flatnonzero(cnt > 0):
            _, lo, hi = bootstrap_ci(boot[j, :, k], level) if n_boot else (0, float("nan"), float("nan"))
            out.append({"option": label if kind == "top_label" else opts[label], "bin": int(k),
                        "mean_probability": float(S[k] / W[k]) if W[k] > 0 else float("nan"),
                        "frequency": float(H[k] / W[k]) if W[k] > 0 else float("nan"),
                        "count": int(cnt[k]), "weight": float(W[k]), "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(out)


# --- all metrics with CIs ------------------------------------------------------------------------

@result_dataclass
class MulticlassEvaluation(Result):
    """Metrics of K-option predictions against answers, with row-bootstrap CIs.

    ``metrics``: one row per metric (``metric``, ``value``, ``se``, ``ci_low``, ``ci_high``);
    ``per_option``: each option's weighted share of answers, mean predicted probability, one-vs-rest
    AUC and class-wise ECE; ``reliability``: the top-label reliability-diagram table
    (:func:`reliability_table`); ``meta``: n, K, options, ordered, weighted, n_boot, seed, bins, level.

    Examples
    --------
    >>> ev = evaluate_multiclass([0, 1, 2, 2], [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.3, .3, .4]], n_boot=20)
    >>> round(ev.metric("accuracy"), 2), ev.meta["K"]
    (1.0, 3)
    """

    metrics: Any
    per_option: Any
    reliability: Any
    meta: dict

    def metric(self, name: str) -> float:
        """One metric's value by name (e.g. accuracy, brier, rps).

        Examples
        --------
        >>> from llmsurrogate.risk import evaluate_multiclass
        >>> ev = evaluate_multiclass([0, 1, 2, 2], [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.3, .3, .4]], n_boot=20)
        >>> round(ev.metric("accuracy"), 2), round(ev.metric("brier"), 4)
        (1.0, 0.295)
        """
        return metric_value(self.metrics, name)

    def tidy(self):
        """The metrics, one row each (a copy of ``metrics``).

        Examples
        --------
        >>> from llmsurrogate.risk import evaluate_multiclass
        >>> ev = evaluate_multiclass([0, 1, 2, 2], [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.3, .3, .4]], n_boot=20)
        >>> ev.tidy()[["metric", "value"]].head(3).round(3)
             metric  value
        0  log_loss  0.574
        1     brier  0.295
        2  accuracy  1.000
        """
        return self.metrics.copy()

    def summary(self) -> Summary:
        """The evaluation in words and tables (print it, or ``.as_text()``).

        Examples
        --------
        >>> from llmsurrogate.risk import evaluate_multiclass
        >>> ev = evaluate_multiclass([0, 1, 2, 2], [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.3, .3, .4]], n_boot=20)
        >>> print(ev.summary().as_text().splitlines()[0])
        K-option evaluation
        """
        m = self.meta
        facts = {"rows": m["n"], "options (K)": m["K"], "ordered": m["ordered"], "survey weights": m["weighted"],
                 "bootstrap resamples": m["n_boot"]}
        ci = f"{100 * m['level']:g}% bootstrap CIs" if m["n_boot"] else "no bootstrap CIs: n_boot = 0"
        notes = [f"ECE: {m['bins']} equal-width bins on [0, 1]; Brier = sum over options (in [0, 2]); "
                 "RPS normalised by K - 1 (in [0, 1])."]
        return Summary("K-option evaluation", facts=facts, tables=[(f"Metrics ({ci})", self.metrics),
                                                                    ("By option", self.per_option)], notes=notes)

    def plot(self, ax=None, **kwargs):
        """The top-label reliability diagram (weighted frequency of a correct argmax against the
        confidence, bootstrap CIs as error bars). On ``ax`` if given; returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> ev = evaluate_multiclass([0, 1, 2, 2], [[.7, .2, .1], [.1, .6, .3], [.2, .2, .6], [.3, .3, .4]], n_boot=20)
        >>> ev.plot().axes[0].get_xlabel()
        'confidence (largest probability)'
        """
        fig, ax, owned = axes_for(ax, (4.5, 4))
        t = self.reliability
        ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=1)
        if len(t):
            err = np.vstack([t["frequency"] - t["ci_low"], t["ci_high"] - t["frequency"]])
            err = np.where(np.isfinite(err), np.maximum(err, 0), 0)
            ax.errorbar(t["mean_probability"], t["frequency"], yerr=err, marker="o", color="black", capsize=2)
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence (largest probability)", ylabel="share correct",
               title="Top-label calibration" + (" (weighted)" if self.meta["weighted"] else ""))
        return finish(fig, owned)


def evaluate_multiclass(y, probs, *, weights=None, options=None, ordered: bool | None = None, bins: int = 10,
                        n_boot: int = 200, seed: int = 42, level: float = 0.95) -> MulticlassEvaluation:
    """Every K-option metric with row-bootstrap CIs: log loss, Brier, RPS (``ordered=True``),
    accuracy, one-vs-rest AUC (macro, weighted), top-label and class-wise ECE.

    ``probs``: an n x K array, a DataFrame with one column per option, or a
    :class:`~llmsurrogate.risk.RiskScores` (its :attr:`~llmsurrogate.risk.RiskScores.probabilities`).
    ``options=`` with named columns (a DataFrame's) must name the same options, in any order: the
    columns are put in the order of ``options`` by name (columns alphabetical after a pivot,
    ``options=`` in the scale's order), and a mismatch is an error. ``ordered``: None (default)
    takes it from a RiskScores' question, else from an ordered categorical ``y``, else False.

    Replicate ``b`` resamples the rows ``_core.risk_bootstrap_indices(n, seed, b)`` -- the rows
    :func:`~llmsurrogate.risk.evaluate` resamples -- and a row keeps its weight; ``se`` is the sd
    of the replicates, the CI their ``level`` percentiles (replicates where a metric is undefined,
    an AUC with an option absent, are dropped). Survey weights give population metrics; the
    bootstrap treats rows as independent draws (no strata or clusters: see docs/methods/survey.md).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet([2, 2, 2], size=200)
    >>> y = np.array([rng.choice(3, p=row) for row in probs])
    >>> ev = evaluate_multiclass(y, probs, ordered=True, n_boot=50)
    >>> ev.metrics["metric"].tolist()
    ['log_loss', 'brier', 'rps', 'accuracy', 'roc_auc_macro', 'roc_auc_weighted', 'ece_top_label', 'ece_classwise']
    >>> lo, hi = ev.metrics.set_index("metric").loc["accuracy", ["ci_low", "ci_high"]]
    >>> bool(lo < ev.metric("accuracy") < hi)
    True
    """
    probs, hint = _risk_scores(probs)
    ordered = resolve_ordered(ordered, y, hint)
    c, p, w, opts = multiclass_inputs(y, probs, weights, options)
    bins, seed, level = _bins(bins), _seed(seed), _level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    check_allocation(8.0 * n_boot * 8, "n_boot", n_boot, "the bootstrap replicates")
    point = _metric_values(c, p, w, ordered, bins)
    boot = np.full((n_boot, len(point)), np.nan)
    for b, rows in enumerate(_replicates(len(c), n_boot, seed)):
        with np.errstate(invalid="ignore", divide="ignore"):  # a replicate of zero weight: NaN, dropped
            boot[b] = list(_metric_values(c[rows], p[rows], w[rows], ordered, bins).values())
    rows = []
    for j, (name, value) in enumerate(point.items()):
        se, lo, hi = bootstrap_ci(boot[:, j], level) if n_boot else (float("nan"),) * 3
        rows.append({"metric": name, "value": float(value), "se": se, "ci_low": lo, "ci_high": hi})
    aucs, _, _ = _ovr_auc(c, p, w)
    if not np.isfinite(aucs).all():
        _warn_auc(float("nan"))
    per_option = pd.DataFrame({"option": opts, "share": np.bincount(c, weights=w, minlength=p.shape[1]) / w.sum(),
                               "mean_probability": w @ p / w.sum(), "roc_auc": aucs,
                               "ece": _classwise(c, p, w, bins)})
    weighted = weights is not None
    reliability = reliability_table(c, p, weights=w, bins=bins, n_boot=n_boot, seed=seed, level=level)
    meta = {"n": int(len(c)), "K": int(p.shape[1]), "options": [str(o) for o in opts], "ordered": ordered,
            "weighted": weighted, "n_boot": n_boot, "seed": int(seed), "bins": int(bins), "level": float(level)}
    return MulticlassEvaluation(metrics=pd.DataFrame(rows), per_option=per_option, reliability=reliability, meta=meta)


# --- recalibration -------------------------------------------------------------------------------

def _logits(p: np.ndarray) -> np.ndarray:
    return np.log(np.clip(p, LOGIT_CLIP, 1 - LOGIT_CLIP))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _nll_grad(z: np.ndarray, c: np.ndarray, w: np.ndarray):
    """Weighted NLL of softmax(z) at codes c and its gradient with respect to z."""
    zs = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(zs).sum(axis=1))
    nll = float(np.dot(w, lse - zs[np.arange(len(c)), c]))
    g = np.exp(zs - lse[:, None])
    g[np.arange(len(c)), c] -= 1.0
    return nll, g * w[:, None]


class _Scaling:
    method = ""

    def __init__(self):
        self.params_: dict | None = None
        self.n_options_: int | None = None
        self.options_: list | None = None  # the option names fitted on (None: unnamed columns)

    def _check_fitted(self, p: np.ndarray) -> None:
        if self.params_ is None:
            raise InvalidArgumentError(f"this {type(self).__name__} is not fitted: call fit(y, probs) on held-out rows first")
        if p.shape[1] != self.n_options_:
            raise ShapeError(f"argument `probs` has {p.shape[1]} columns; the scaling was fitted on {self.n_options_}")

    def fit(self, y, probs, *, weights=None, options=None):
        probs, _ = _risk_scores(probs)
        c, p, w, _ = multiclass_inputs(y, probs, weights, options)
        self.n_options_ = p.shape[1]
        self.options_ = list(options) if options is not None else named_columns(probs)
        self.params_ = self._fit(c, _logits(p), w / w.mean())
        return self

    def transform(self, probs) -> np.ndarray:
        """The recalibrated probabilities: a DataFrame in, a DataFrame out (its index and columns);
        an array in, an array out. Named columns are matched to the options fitted on by name (any
        order; other names are an error); unnamed columns are taken in the fitted order."""
        probs, _ = _risk_scores(probs)
        frame = probs if isinstance(probs, pd.DataFrame) else None
        p = _as_probs(probs)
        self._check_fitted(p)
        order = self._fitted_order(named_columns(probs))
        if order is not None:
            p = p[:, order]
        out = _softmax(self._apply(_logits(p)))
        if order is not None:
            out = out[:, np.argsort(order)]  # back to the columns' own order
        return pd.DataFrame(out, index=frame.index, columns=frame.columns) if frame is not None else out

    def _fitted_order(self, names):
        """The permutation putting the named columns ``names`` in the fitted options' order."""
        if names is None or self.options_ is None:
            return None
        match, order, lost, extra = name_order(names, self.options_)
        if match:
            return None if order is None else np.asarray(order)
        why = (f"column {extra[0]!r} is not one of them" if extra else
               f"option {lost[0]!r} has no column" if lost else "its column labels repeat")
        raise InvalidArgumentError(
            f"argument `probs` has the columns {list(names)[:20]}, but this {type(self).__name__} was fitted on the "
            f"options {self.options_[:20]}: {why}. Columns are matched to the fitted options by name; name them "
            f"as in the fit (or pass `probs.to_numpy()` with the columns in the fitted order)")

    def fit_transform(self, y, probs, **kwargs):
        return self.fit(y, probs, **kwargs).transform(probs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'not fitted' if self.params_ is None else self.params_})"


class TemperatureScaling(_Scaling):
    """Temperature scaling (Guo et al. 2017): p ↦ softmax(log p / T), one parameter fitted by
    (weighted) maximum likelihood on held-out rows; log p from p clipped to [1e-6, 1 − 1e-6]. At
    K = 2 this is ``risk.fit_recalibrator(method="temperature")``. T > 1 softens over-confident
    predictions.

    Examples
    --------
    >>> probs = [[.9, .05, .05], [.9, .05, .05], [.05, .9, .05], [.05, .05, .9], [.9, .05, .05]]
    >>> ts = TemperatureScaling().fit([0, 1, 1, 2, 2], probs)
    >>> round(ts.params_["temperature"], 3) > 1  # right 3 times in 5 at 90% confidence: soften
    True
    >>> ts.transform([[.9, .05, .05]]).round(3)  # to the observed 60%
    array([[0.6, 0.2, 0.2]])
    """

    method = "temperature"

    def _fit(self, c, z, w):
        def f(v):
            t = math.exp(v[0])
            nll, g = _nll_grad(z / t, c, w)
            return nll, np.array([-np.sum(g * z) / t])
        res = minimize(f, x0=[0.0], jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-14})
        t = float(math.exp(res.x[0]))
        warn_runaway_temperature(t, "TemperatureScaling", stacklevel=3)
        return {"temperature": t}

    def _apply(self, z):
        return z / self.params_["temperature"]


class VectorScaling(_Scaling):
    """Vector scaling (Guo et al. 2017): p ↦ softmax(a ⊙ log p + b), a scale and a bias per option
    (b of the first option fixed at 0: softmax ignores a common shift), fitted by (weighted)
    maximum likelihood on held-out rows.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> truth = rng.dirichlet([1, 1, 1], size=400)
    >>> y = np.array([rng.choice(3, p=row) for row in truth])
    >>> biased = truth * [3, 1, 1]; biased /= biased.sum(axis=1, keepdims=True)  # option 0 overstated
    >>> vs = VectorScaling().fit(y, biased)
    >>> bool(vs.params_["bias"][0] == 0 and vs.params_["bias"][1] > 0.5 and vs.params_["bias"][2] > 0.5)
    True
    """

    method = "vector"

    def _fit(self, c, z, w):
        k = z.shape[1]

        def f(v):
            a, b = v[:k], np.r_[0.0, v[k:]]
            nll, g = _nll_grad(z * a + b, c, w)
            return nll, np.r_[np.sum(g * z, axis=0), np.sum(g, axis=0)[1:]]
        res = minimize(f, x0=np.r_[np.ones(k), np.zeros(k - 1)], jac=True, method="L-BFGS-B",
                       options={"gtol": 1e-10, "ftol": 1e-14, "maxiter": 2000})
        return {"scale": res.x[:k].tolist(), "bias": [0.0, *res.x[k:].tolist()]}

    def _apply(self, z):
        return z * np.asarray(self.params_["scale"]) + np.asarray(self.params_["bias"])


def recalibrate_multiclass(y, probs, method: str = "temperature", *, folds: int = 5, seed: int = 0, weights=None,
                           options=None) -> pd.DataFrame:
    """Cross-fitted K-option recalibration: each row is mapped by a scaling (``"temperature"`` or
    ``"vector"``) fitted on the other folds, so no row is recalibrated with its own answer (the
    folds of ``risk.recalibrate``).

    Returns a DataFrame in the order of ``probs``: its index (a labelled ``probs``; else 0..n-1;
    ``y`` and ``weights`` are paired with it by label) and one column per option, named by the
    options (a DataFrame's columns, in its own order; else ``options``, else 0..K-1).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(2)
    >>> truth = rng.dirichlet([1, 1, 1], size=300)
    >>> y = np.array([rng.choice(3, p=row) for row in truth])
    >>> sharp = truth ** 3; sharp /= sharp.sum(axis=1, keepdims=True)  # over-confident
    >>> fixed = recalibrate_multiclass(y, sharp, folds=3)
    >>> bool(multiclass_log_loss(y, fixed) < multiclass_log_loss(y, sharp))
    True
    """
    check_choice(method, "method", ["temperature", "vector"])
    probs, _ = _risk_scores(probs)
    probs, y, weights = align_by_label(("probs", probs), ("y", y), ("weights", weights))  # the order of `probs`
    names = named_columns(probs)
    order = match_options(names, options)
    c, p, w, opts = multiclass_inputs(y, probs, weights, options)
    seed = check_int(seed, "seed", minimum=0, maximum=2**64 - 1)
    folds = check_int(folds, "folds", minimum=2)
    if folds > len(c):
        raise InvalidArgumentError(f"argument `folds` ({folds}) exceeds the number of rows ({len(c)})")
    cls = TemperatureScaling if method == "temperature" else VectorScaling
    perm = np.random.default_rng(seed).permutation(len(c))
    out = np.empty_like(p)
    for f in range(folds):
        test = perm[f::folds]
        train = np.setdiff1d(perm, test)
        out[test] = cls().fit(c[train], p[train], weights=w[train]).transform(p[test])
    if order is not None:  # named columns matched to `options`: back to the columns' own order
        out, opts = out[:, np.argsort(order)], names
    index = probs.index if isinstance(probs, (pd.DataFrame, pd.Series)) else pd.RangeIndex(len(c))
    return pd.DataFrame(out, index=index, columns=pd.Index(opts))
