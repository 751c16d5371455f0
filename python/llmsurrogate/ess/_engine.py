"""Data preparation, the block loop (joblib over blocks, Rust accumulation) and the inference layer."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import math
import numbers
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import joblib
import numpy as np
import pandas as pd
from joblib import delayed, effective_n_jobs
from scipy.special import ndtr, ndtri

from .. import _core
from .._losses import probability_rows, row_brier, row_log_loss
from .._positions import at, located
from .._validation import (
    align_by_label,
    as_frame,
    check_choice,
    check_int,
    match_options,
    named_columns,
    reject_lossy,
    require_columns,
)
from .._workers import local_n_jobs, parallel, resolve_n_jobs
from ..exceptions import (
    InvalidArgumentError,
    LLMSurrogateWarning,
    NonFiniteError,
    ShapeError,
)
from ._learners import Learner, block_seed

#: the losses of K class probabilities (docs/methods/ess.md §1.6)
MULTICLASS_LOSSES = ("multiclass_log", "multiclass_brier")
LOSSES = ("squared", "absolute", "zero_one", "brier", "log") + MULTICLASS_LOSSES
REGIMES = ("hybrid", "fixed_N", "fixed_B")
TUNINGS = ("per_n_subset", "per_block", "none")
VARIANCES = ("difference", "sum")
LOG_EPS = 1e-6
HYBRID_MIN_BLOCKS = 40


@dataclass
class Prepared:
    """Permuted arrays ready for block-out CV."""

    X: np.ndarray
    y: np.ndarray
    llm_pred: np.ndarray | None
    llm_loss: np.ndarray | None      # per-observation LLM losses (permuted order)
    perm: np.ndarray | None
    n: int
    features: list[str]
    loss_name: str                   # a name in LOSSES, or "custom"
    rust_loss: str                   # loss kind handed to Rust
    loss_fn: Callable | None
    eps: float
    classes: list | None = None      # the K class labels of a multiclass loss (y holds their codes 0..K-1)


# Row numbers in messages: Python positions (0-based), written "row i (0-based)" with
# llmsurrogate._positions.at(i, "row", marked=True); the R bridge gives R the 1-based row.
def _finite(arr: np.ndarray, name: str) -> None:
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise NonFiniteError(located(f"argument `{name}` has a non-finite value ({arr[bad[0]]}) at ",
                                     at(bad[0], "row", marked=True),
                                     "; drop or impute missing values first (or pass missing='drop')"))


def check_learner_outcome(learner: Any, y: np.ndarray, outcome: str) -> None:
    """A classifier (``logit_l1``, a random forest under a classification loss, a scikit-learn
    classifier) needs class labels: 0/1 when it predicts probabilities. Raises about the argument
    instead of scikit-learn's "Unknown label type: continuous"."""
    if learner.output == "proba" and not np.isin(y, (0.0, 1.0)).all():
        odd = y[~np.isin(y, (0.0, 1.0))][0]
        raise InvalidArgumentError(
            f"algorithm {learner.name!r} is a classifier and needs a 0/1 outcome; {outcome} has other values "
            f"(e.g. {odd:g}); use algorithm='lasso' or algorithm='rf' (regressions) for a numeric outcome")
    if learner.output == "label" and not np.all(y == np.round(y)):
        odd = y[y != np.round(y)][0]
        raise InvalidArgumentError(
            f"algorithm {learner.name!r} is a classifier and needs class labels; {outcome} has non-integer values "
            f"(e.g. {odd:g}); use a regression (algorithm='lasso', or algorithm='rf' with loss='squared')")


def _numeric(series, name: str) -> np.ndarray:
    if isinstance(series, pd.Series) and series.dtype == bool:
        series = series.astype(float)
    reject_lossy(series, name)  # no datetime -> nanoseconds, complex -> real part
    try:
        arr = np.asarray(pd.to_numeric(pd.Series(series), errors="raise"), dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InvalidArgumentError(f"`{name}` must be numeric for this loss ({err}); code the labels as numbers") from err
    return arr


def default_grid(n: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, ... up to n // 2.

    Examples
    --------
    >>> default_grid(250)
    [1, 2, 5, 10, 20, 50, 100]
    """
    n = check_int(n, "n", minimum=0)
    out, base = [], 1
    while True:
        for m in (1, 2, 5):
            v = m * base
            if v > n // 2:
                return out
            out.append(v)
        base *= 10


def check_grid(grid: Any, n: int) -> list[int]:
    if grid is None:
        g = default_grid(n)
        if not g:
            raise InvalidArgumentError(f"n = {n} observations is too few for block-out CV (need at least 2)")
        return g
    if isinstance(grid, numbers.Real):
        grid = [grid]
    if isinstance(grid, (str, bytes, dict)) or not hasattr(grid, "__iter__"):
        raise InvalidArgumentError(f"argument `grid` must be a list of whole numbers (training sizes); got {grid!r}")
    vals = []
    for v in grid:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not float(v).is_integer():
            raise InvalidArgumentError(f"argument `grid` must hold whole numbers; got {v!r}")
        vals.append(int(v))
    if not vals:
        raise InvalidArgumentError("argument `grid` is empty; pass training sizes such as [1, 2, 5, 10]")
    low = [v for v in vals if v < 1]
    if low:
        raise InvalidArgumentError(f"argument `grid`: training sizes must be >= 1; got {low[0]}")
    high = [v for v in vals if v > n // 2]
    if high:
        raise InvalidArgumentError(
            f"argument `grid`: training size {high[0]} exceeds n/2 = {n // 2} (n = {n}); block-out CV needs at "
            "least 2 blocks, so every N must be <= n/2")
    return sorted(set(vals))


def _drop_missing(frame, outcome, prediction, features, exclude, y_override):
    """Rows with a missing or infinite outcome, prediction or feature removed (``missing="drop"``)."""
    def bad(values) -> np.ndarray:
        if isinstance(values, np.ndarray) and values.ndim == 2:  # K class probabilities per row
            return ~np.isfinite(values).all(axis=1)
        ser = pd.Series(np.asarray(values) if not isinstance(values, pd.Series) else values)
        num = pd.to_numeric(ser, errors="coerce")
        if pd.api.types.is_numeric_dtype(ser) or num.notna().all():
            return ~np.isfinite(num.to_numpy(dtype=np.float64, na_value=np.nan))
        return ser.isna().to_numpy()

    mask = bad(frame[outcome]) if y_override is None else ~np.isfinite(np.asarray(y_override, dtype=float))
    pred_values = None
    if prediction is not None:
        if isinstance(prediction, str):
            require_columns(frame, [prediction])
            pred_values = frame[prediction]
        elif hasattr(prediction, "predict") and callable(prediction.predict):
            pred_values = np.asarray(prediction.predict(frame))
            prediction = pred_values
        else:
            pred_values = np.asarray(prediction)
        if len(pred_values) != len(frame):
            raise ShapeError(f"argument `prediction` has {len(pred_values)} values but `data` has {len(frame)} rows; "
                             "pass one prediction per row, in the same order")
        mask = mask | bad(pred_values)
    skip = {outcome, *exclude} | ({prediction} if isinstance(prediction, str) else set())
    feats = [c for c in frame.columns if c not in skip] if features is None else \
        ([features] if isinstance(features, str) else list(features))
    require_columns(frame, feats)
    for c in feats:
        mask = mask | bad(frame[c])
    dropped = int(mask.sum())
    if dropped:
        warnings.warn(f"missing='drop': removed {dropped} of {len(frame)} rows with a missing or infinite outcome, "
                      "prediction or feature; valid only if missingness is unrelated to (X, Y)",
                      LLMSurrogateWarning, stacklevel=4)
        keep = ~mask
        frame = frame.loc[keep].reset_index(drop=True)
        if prediction is not None and not isinstance(prediction, str):
            prediction = np.asarray(pred_values)[keep]
        if y_override is not None:
            y_override = np.asarray(y_override)[keep]
    return frame, prediction, y_override


def _class_probabilities(frame: pd.DataFrame, prediction: Any, loss: str,
                         options: Any = None) -> tuple[pd.DataFrame, Any, list | None]:
    """A multiclass loss's LLM prediction as ``(frame, probs, labels)``: ``probs`` an ``n x K`` float
    array (rows in the order of ``frame``; NaN kept for ``missing="drop"``), ``labels`` the class
    labels of its columns where it names them (a DataFrame's columns; a predictor's ``classes_``,
    as scikit-learn's classifiers and ``LLMPredictor`` have), else ``None``. ``prediction``:
    ``None`` (an error curve), an object with ``predict_proba(frame)`` (called once), a DataFrame
    (paired with ``data`` by row label, as every pandas input) or an array. With ``options`` and
    named columns (a DataFrame's labels other than the default 0..K-1, a predictor's ``classes_``)
    both must name the same classes: the columns are put in the order of ``options`` by name, and
    a mismatch is an error naming both (never a relabelling by position)."""
    if prediction is None:
        return frame, None, None
    if isinstance(prediction, str):
        raise InvalidArgumentError(
            f"argument `prediction`: loss {loss!r} scores K class probabilities per row, and a column name gives one "
            "value per row; pass an n x K array, a DataFrame with one column per class (named by the class labels) "
            "or an object with predict_proba()")
    classes = None
    if hasattr(prediction, "predict_proba") and callable(prediction.predict_proba):
        raw = prediction.predict_proba(frame)
        classes = getattr(prediction, "classes_", None)  # they label its columns (scikit-learn, LLMPredictor)
    elif hasattr(prediction, "predict") and callable(prediction.predict):
        raise InvalidArgumentError(
            f"argument `prediction`: under loss {loss!r} a predictor needs predict_proba(frame) returning the n x K "
            f"class probabilities; {type(prediction).__name__} has predict() only")
    else:
        frame, raw = align_by_label(("data", frame), ("prediction", prediction))  # pandas: by label
    if isinstance(raw, pd.DataFrame):
        labels = list(raw.columns)
    else:
        labels = None if classes is None else list(classes)
    arr = np.asarray(raw.to_numpy() if isinstance(raw, pd.DataFrame) else raw)
    if arr.dtype.kind not in "biuf":
        try:
            if arr.dtype.kind != "O":
                raise TypeError(f"dtype {arr.dtype}")
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"argument `prediction` must hold class probabilities (numbers) ({err})") from err
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2:
        raise ShapeError(f"argument `prediction`: loss {loss!r} needs an n x K array of class probabilities (one column "
                         f"per class); got shape {arr.shape}")
    if arr.shape[0] != len(frame):
        raise ShapeError(f"argument `prediction` has {arr.shape[0]} rows but `data` has {len(frame)}; pass one row of "
                         "class probabilities per row of `data`, in the same order")
    if options is not None:
        named = named_columns(raw) if isinstance(raw, pd.DataFrame) else labels
        what = "its columns" if isinstance(raw, pd.DataFrame) else f"the `classes_` of {type(prediction).__name__}"
        order = match_options(named, _class_labels(options), what=what, arg="prediction")
        if order is not None:
            arr = arr[:, order]
        if named is not None:
            labels = _class_labels(options)
    return frame, arr, labels


def _class_labels(options: Any) -> list:
    if isinstance(options, (str, bytes, dict)) or not hasattr(options, "__iter__"):
        raise InvalidArgumentError(f"argument `options` must be a sequence of class labels, one per column of "
                                   f"`prediction`; got {options!r}")
    return list(options)


def _codes_of(index: pd.Index, values: np.ndarray) -> np.ndarray:
    """Each value's position in the class labels ``index`` (-1: none). Matched by label, with
    False/True the same classes as 0/1 either way (a boolean outcome against labels 0, 1 or the
    columns 0..K-1 of an array; 0/1 codes against labels ``[False, True]``), as Python's ``==``
    has them; pandas matches a boolean against a number only one way round."""
    codes = index.get_indexer(pd.Index(values))
    miss = np.flatnonzero(codes < 0)
    if miss.size:
        def binary(v):  # False/True/0/1 as 0/1, else None
            return int(v) if isinstance(v, (bool, np.bool_, int, np.integer)) and v in (0, 1) else None

        where = {}
        for k, label in enumerate(index):
            if binary(label) is not None:
                where.setdefault(binary(label), k)
        missed = pd.Series(values[miss], dtype=object)
        lookup = {v: where.get(binary(v), -1) for v in missed.unique() if binary(v) is not None}
        codes[miss] = missed.map(lookup).fillna(-1).to_numpy(dtype=np.int64)
    return codes


def _class_codes(raw_y: pd.Series, outcome: str, probs: np.ndarray | None, labels: list | None,
                 options: Any) -> tuple[np.ndarray, list]:
    """The outcome's class codes 0..K-1 (float) and the K class labels, in the order of the columns of
    the prediction: ``options``, else the prediction's column names, else a categorical outcome's
    categories, else (an array) the codes 0..K-1 themselves; without a prediction the outcome's
    categories or its sorted distinct values (docs/methods/ess.md §1.6)."""
    values = raw_y.to_numpy(dtype=object)
    missing = np.flatnonzero(pd.isna(values))
    if missing.size:
        raise NonFiniteError(located(f"outcome {outcome!r} has a missing value at ", at(missing[0], "row", marked=True),
                                     "; drop or impute missing values first (or pass missing='drop')"))
    categories = list(raw_y.cat.categories) if isinstance(raw_y.dtype, pd.CategoricalDtype) else None
    if options is not None:
        classes, source = _class_labels(options), "argument `options`"
    elif labels is not None:
        classes, source = labels, "the columns of `prediction`"
    elif categories is not None:
        classes, source = categories, f"the categories of outcome {outcome!r}"
    elif probs is not None:
        classes, source = list(range(probs.shape[1])), "the column numbers 0..K-1 of `prediction` (an array)"
    else:
        distinct = list(pd.unique(values))
        try:
            classes = sorted(distinct)
        except TypeError:  # labels of mixed types: in the order they first occur
            classes = distinct
        source = f"the values of outcome {outcome!r}"
    if len(classes) < 2:
        raise InvalidArgumentError(f"{source}: a multiclass loss needs K >= 2 classes; got {len(classes)} "
                                   f"({classes!r})")
    index = pd.Index(classes)
    if index.has_duplicates:
        raise InvalidArgumentError(f"{source} holds duplicated class labels: {index[index.duplicated()].tolist()[:5]}")
    if probs is not None and probs.shape[1] != len(classes):
        raise ShapeError(f"argument `prediction` has {probs.shape[1]} columns but {source} names {len(classes)} "
                         "classes; pass one column of probabilities per class, in the order of the labels")
    codes = _codes_of(index, values)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        hint = ("; label the columns: pass a DataFrame whose columns are the class labels, or options=[...] (one "
                "label per column)") if options is None and labels is None and categories is None else ""
        value = values[bad[0]].item() if isinstance(values[bad[0]], np.generic) else values[bad[0]]
        raise InvalidArgumentError(located(f"argument `outcome`: {outcome!r} has the value {value!r} at ",
                                           at(bad[0], "row", marked=True), f", which is not one of the K = "
                                           f"{len(classes)} classes {classes[:20]!r} ({source}){hint}"))
    return codes.astype(np.float64), classes


def multiclass_losses(loss_name: str, eps: float, probs: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per-row losses of K class probabilities ``probs`` (``n x K``) at the observed class codes
    (0..K-1, as floats): -log p_y clipped to [eps, 1 - eps] (``"multiclass_log"``) or the Brier score
    summed over the classes (``"multiclass_brier"``); docs/methods/ess.md §1.6."""
    c = codes.astype(np.intp)
    if loss_name == "multiclass_log":
        return row_log_loss(c, probs, eps)
    return row_brier(c, probs)


def prepare(data: Any, outcome: str, prediction: Any, features: Any, loss: Any, seed: int | None,
            exclude: tuple[str, ...] = (), eps: float = LOG_EPS, y_override: np.ndarray | None = None,
            missing: str = "error", options: Any = None) -> Prepared:
    """Validate the inputs and permute them once (docs/methods/ess.md §2.1 step 1). Under a multiclass
    loss ``y`` holds the class codes 0..K-1, ``llm_pred`` the n x K class probabilities and
    ``classes`` the K labels (``options``: the labels of the prediction's columns)."""
    frame = as_frame(data)
    multiclass = isinstance(loss, str) and loss in MULTICLASS_LOSSES
    labels = None
    if multiclass:
        if y_override is not None:
            raise InvalidArgumentError(f"loss {loss!r} scores class probabilities; it does not apply to a transformed "
                                       "outcome")
        frame, prediction, labels = _class_probabilities(frame, prediction, loss, options)
    elif options is not None:
        raise InvalidArgumentError("argument `options` labels the K classes of a multiclass loss; it applies only with "
                                   f"loss={MULTICLASS_LOSSES[0]!r} or loss={MULTICLASS_LOSSES[1]!r}")
    if not isinstance(prediction, str) and not hasattr(prediction, "predict"):
        frame, prediction = align_by_label(("data", frame), ("prediction", prediction))  # pandas: by label
    if not isinstance(outcome, str):
        raise InvalidArgumentError("argument `outcome` must be a column name (a string)")
    require_columns(frame, [outcome])
    if check_choice(missing, "missing", ("error", "drop")) == "drop":
        frame, prediction, y_override = _drop_missing(frame, outcome, prediction, features, exclude, y_override)
    n = len(frame)
    if n < 4:
        raise InvalidArgumentError(f"`data` has {n} rows; block-out CV needs at least 4")
    # loss
    if callable(loss):
        loss_name, rust_loss, loss_fn = "custom", "precomputed", loss
    elif multiclass:  # per-row losses of the K probabilities in Python, accumulated in Rust
        loss_name, rust_loss, loss_fn = loss, "precomputed", functools.partial(multiclass_losses, loss, eps)
    else:
        loss_name = check_choice(loss, "loss", LOSSES)
        rust_loss, loss_fn = loss_name, None
    # outcome
    raw_y = frame[outcome]
    label_map = None
    classes = None
    if y_override is not None:
        y = np.asarray(y_override, dtype=np.float64)
    elif multiclass:
        y, classes = _class_codes(raw_y, outcome, prediction, labels, options)
    elif loss_name == "zero_one" and not pd.api.types.is_numeric_dtype(raw_y) and raw_y.dtype != bool:
        codes, uniques = pd.factorize(raw_y)
        if (codes < 0).any():
            raise NonFiniteError(located(f"outcome {outcome!r} has a missing value at ",
                                         at(np.flatnonzero(codes < 0)[0], "row", marked=True),
                                         "; drop or impute missing values first (or pass missing='drop')"))
        label_map = {v: float(i) for i, v in enumerate(uniques)}
        y = codes.astype(np.float64)
    else:
        y = _numeric(raw_y, f"outcome {outcome!r}")
    _finite(y, f"outcome ({outcome!r})")
    if np.ptp(y) == 0:
        raise InvalidArgumentError(f"argument `outcome`: {outcome!r} is constant ({y[0]:g}); every rule predicts it perfectly "
                                   "or not at all, and the ESS is not defined")
    if loss_name in ("brier", "log") and not np.isin(y, (0.0, 1.0)).all():
        raise InvalidArgumentError(f"loss {loss_name!r} needs a binary outcome coded 0/1; {outcome!r} has other values "
                                   "(use loss='squared' for a numeric outcome)")
    if loss_name == "zero_one":
        distinct = np.unique(y)
        if not np.all(distinct == np.round(distinct)) or distinct.size > max(20, int(0.5 * n)):
            raise InvalidArgumentError(f"loss 'zero_one' needs class labels, but {outcome!r} looks continuous "
                                       f"({distinct.size} distinct values); use loss='squared' or loss='absolute'")
    # prediction
    pred_col = None
    llm_pred = None
    if multiclass and prediction is not None:
        bad = np.argwhere(~np.isfinite(prediction))
        if bad.size:
            raise NonFiniteError(located(f"argument `prediction` has a non-finite value ({prediction[tuple(bad[0])]}) at ",
                                         at(bad[0][0], "row", marked=True), ", ", at(bad[0][1], "column"),
                                         "; drop or impute missing values first (or pass missing='drop')"))
        llm_pred = probability_rows(prediction, "prediction")
        observed = llm_pred[np.arange(n), y.astype(np.intp)]
        if loss_name == "multiclass_log" and ((observed == 0) | (observed == 1)).any():
            warnings.warn(f"probabilities 0 or 1 of the observed class under log loss are clipped to [{eps:g}, "
                          f"1 - {eps:g}]", LLMSurrogateWarning, stacklevel=3)
    elif prediction is not None:
        if isinstance(prediction, str):
            require_columns(frame, [prediction])
            pred_col = prediction
            raw_p = frame[prediction]
        elif hasattr(prediction, "predict") and callable(prediction.predict):
            raw_p = prediction.predict(frame)
        else:
            raw_p = prediction
        if label_map is not None:
            raw_list = pd.Series(np.asarray(raw_p).ravel() if not isinstance(raw_p, pd.Series) else raw_p).tolist()
            if raw_list and not any(v in label_map for v in raw_list if v is not None):
                labels = ", ".join(repr(v) for v in list(label_map)[:5])
                seen = ", ".join(repr(v) for v in list(dict.fromkeys(raw_list))[:5])
                raise InvalidArgumentError(
                    f"argument `prediction`: none of its values ({seen}) is a label of outcome {outcome!r} ({labels}); "
                    "under loss 'zero_one' predictions are compared with the labels, so code both alike")
            llm_pred = np.asarray([label_map.get(v, -1.0) for v in raw_list], dtype=np.float64)
        else:
            reject_lossy(raw_p, "prediction")
            if np.ndim(raw_p) != 1 and not (np.ndim(raw_p) == 2 and np.shape(raw_p)[1] == 1):
                raise ShapeError(f"argument `prediction` must be 1-dimensional (one prediction per row); got shape "
                                 f"{np.shape(raw_p)}")
            try:
                llm_pred = np.asarray(pd.to_numeric(pd.Series(np.asarray(raw_p).ravel() if not isinstance(raw_p, pd.Series) else raw_p), errors="raise"), dtype=np.float64)
            except (TypeError, ValueError) as err:
                raise InvalidArgumentError(f"argument `prediction` must be numeric ({err})") from err
        if llm_pred.ndim != 1 or llm_pred.shape[0] != n:
            raise ShapeError(f"argument `prediction` has {llm_pred.shape[0]} values but `data` has {n} rows; "
                             "pass one prediction per row, in the same order")
        _finite(llm_pred, "prediction")
        if loss_name in ("brier", "log") and ((llm_pred < 0) | (llm_pred > 1)).any():
            raise InvalidArgumentError(f"loss {loss_name!r} needs predicted probabilities in [0, 1]")
        if loss_name == "log" and ((llm_pred == 0) | (llm_pred == 1)).any():
            warnings.warn(f"hard 0/1 predictions under log loss are clipped to [{eps:g}, 1 - {eps:g}]",
                          LLMSurrogateWarning, stacklevel=3)
    # features
    skip = {outcome, *exclude} | ({pred_col} if pred_col else set())
    if features is None:
        feats = [c for c in frame.columns if c not in skip]
    else:
        feats = [features] if isinstance(features, str) else list(features)
        require_columns(frame, feats)
        clash = [f for f in feats if f == outcome or f == pred_col]
        if clash:
            raise InvalidArgumentError(f"argument `features` must not contain the outcome or prediction column ({clash[0]!r})")
    if not feats:
        X = np.zeros((n, 0))
        names: list[str] = []
    else:
        sub = frame[feats]
        cat = [c for c in feats if not (pd.api.types.is_numeric_dtype(sub[c]) or sub[c].dtype == bool)]
        for c in cat:  # get_dummies would code a missing value as all-zero dummies, silently
            isna = sub[c].isna().to_numpy()
            if isna.any():
                raise NonFiniteError(located(f"feature {c!r} has a missing value at ",
                                             at(np.flatnonzero(isna)[0], "row", marked=True),
                                             "; drop or impute missing values first (or pass missing='drop')"))
        if cat:
            sub = pd.get_dummies(sub, columns=cat, drop_first=True, dtype=float)
        try:
            X = np.ascontiguousarray(sub.to_numpy(dtype=np.float64))
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"features must be numeric or categorical ({err})") from err
        names = [str(c) for c in sub.columns]
        bad = np.argwhere(~np.isfinite(X))
        if bad.size:
            r, c = bad[0]
            raise NonFiniteError(located(f"feature {names[c]!r} has a non-finite value ({X[r, c]}) at ",
                                         at(r, "row", marked=True),
                                         "; drop or impute missing values first (or pass missing='drop')"))
    # permutation (one for every N)
    if seed is None:
        perm = None
    else:
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) and not (isinstance(seed, float) and seed.is_integer()):
            raise InvalidArgumentError(f"argument `seed` must be a non-negative integer or None; got {seed!r}")
        if not 0 <= int(seed) < 2**64:
            raise InvalidArgumentError(f"argument `seed` must lie in [0, 2**64 - 1]; got {seed}")
        perm = _core.ess_permutation(n, int(seed))
        X, y = X[perm], y[perm]
        llm_pred = llm_pred[perm] if llm_pred is not None else None
    X, y = np.ascontiguousarray(X), np.ascontiguousarray(y)
    llm_loss = None
    if llm_pred is not None:
        llm_pred = np.ascontiguousarray(llm_pred)
        llm_loss = loss_values(loss_name, loss_fn, llm_pred, y, eps)
    return Prepared(X, y, llm_pred, llm_loss, perm, n, names, loss_name, rust_loss, loss_fn, eps, classes)


def loss_values(loss_name: str, loss_fn, pred: np.ndarray, y: np.ndarray, eps: float) -> np.ndarray:
    if loss_fn is not None:
        out = np.asarray(loss_fn(pred, y), dtype=np.float64)
        if out.shape != y.shape:
            raise ShapeError(f"the loss function returned shape {out.shape}; it must return one loss per observation {y.shape}")
        _finite(out, "loss(prediction, outcome)")
        return np.ascontiguousarray(out)
    return _core.ess_losses(loss_name, np.ascontiguousarray(pred, dtype=np.float64), y, eps)


def permutation_hash(perm: np.ndarray | None, n: int) -> str:
    arr = np.arange(n, dtype=np.int64) if perm is None else np.asarray(perm, dtype=np.int64)
    return hashlib.sha256(arr.tobytes()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------
# the block loop
# ------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _quiet_fit_warnings():
    """Silence the learners' UserWarnings, scikit-learn's ConvergenceWarning among them (a
    UserWarning subclass; one block-out fit per block would otherwise flood the output). Imports
    nothing: scikit-learn loads only where a learner needs it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        yield


def _fit_block_rows(learner: Learner, X, y, N, n_used, b0, b1, params, seed, tuning, loss_fn):
    """Predictions (or custom losses) of blocks b0..b1 on their complements: rows of length n_used - N."""
    with _quiet_fit_warnings(), _trusted_inputs(learner):  # runs in joblib workers too
        return _fit_block_rows_inner(learner, X, y, N, n_used, b0, b1, params, seed, tuning, loss_fn)


@contextlib.contextmanager
def _trusted_inputs(learner: Learner):
    """For the built-in learners, skip scikit-learn's per-call checks of inputs and parameters
    (``assume_finite``, ``skip_parameter_validation``: documented options that change no number):
    ``prepare`` has checked the data once and the parameters are ours. User estimators keep
    every check."""
    if learner.estimator is not None or learner.name in ("mean", "majority"):  # the latter: no scikit-learn
        yield
        return
    import sklearn  # heavy, and not needed by the native learners or a user's estimator's own module

    # sequential: the built-in forests and grid searches are fitted with n_jobs=1 on purpose, and
    # a backend such as Dask would otherwise become their nested backend (it ignores n_jobs=1)
    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True), \
            joblib.parallel_config(backend="sequential"):
        yield


def _fit_block_rows_inner(learner, X, y, N, n_used, b0, b1, params, seed, tuning, loss_fn):
    rows = np.empty((b1 - b0, n_used - N), dtype=np.float64)
    shortcut = 0
    for r, b in enumerate(range(b0, b1)):
        lo, hi = b * N, (b + 1) * N
        ytr = y[lo:hi]
        if learner.name == "mean" and learner.output != "probs":
            rows[r] = float(np.mean(ytr))
            pred = rows[r]
        else:
            Xte = np.concatenate([X[:lo], X[hi:n_used]]) if X.shape[1] else np.zeros((n_used - N, 0))
            Xtr = X[lo:hi] if X.shape[1] else np.zeros((N, 0))
            pred, const = learner.fit_predict(Xtr, ytr, Xte, params, block_seed(seed, N, b), tuning)
            shortcut += int(const)
        if loss_fn is not None:  # a custom loss, or K class probabilities (n_used - N x K) -> their losses
            yte = np.concatenate([y[:lo], y[hi:n_used]])
            pred = loss_values("custom", loss_fn, pred, yte, 0.0)
        rows[r] = pred
    return rows, shortcut


def _tunes(learner: Learner, tuning: str) -> bool:
    """Whether ``tuning`` chooses hyperparameters per training size for this learner."""
    return tuning == "per_n_subset" and learner.name not in ("mean", "majority")


def tune_for_n(prep: Prepared, learner: Learner, N: int, tuning: str, seed: int | None) -> dict:
    if not _tunes(learner, tuning):
        return {}
    rng = np.random.default_rng([0 if seed is None else int(seed), int(N), 0x7E])
    idx = np.sort(rng.choice(prep.n, size=N, replace=False))
    X, y = prep.X[idx], prep.y[idx]
    if np.ptp(y) == 0:
        return {"alpha": None} if learner.name == "lasso" else {}
    try:
        with warnings.catch_warnings(), _trusted_inputs(learner):
            warnings.simplefilter("ignore")
            return learner.tune(X, y, block_seed(seed, N, -1 & 0x7FFFFFFF))
    except ValueError:
        return {}


def tune_grid(prep: Prepared, learner: Learner, grid: list[int], tuning: str, seed: int | None,
              n_jobs: int | None, progress: Callable[[int, int], None] | None = None) -> dict[int, dict]:
    """:func:`tune_for_n` for every training size in ``grid``, in parallel where there are several
    jobs (each size's choice depends only on its own seeded subset, so the result equals the
    sequential one), calling ``progress(done, total)`` as each size is tuned. Empty when there is
    nothing to tune (``n_jobs``: see :func:`llmsurrogate.num_threads`)."""
    if not _tunes(learner, tuning) or not grid:
        return {}
    out: dict[int, dict] = {}
    if progress is not None:
        progress(0, len(grid))
    with _quiet_fit_warnings():
        # the sizes grow, and so does the cost of tuning at each: the last one timed bounds the rest
        found = run_tasks([delayed(tune_for_n)(prep, learner, int(N), tuning, seed) for N in grid], n_jobs,
                          worker_kind(learner), growing=True)
        for N, params in zip(grid, found):
            out[int(N)] = params
            if progress is not None:
                progress(len(out), len(grid))
    return out


def work_plan(learner: Learner, n: int, grid: list[int], tuning: str) -> dict:
    """How much work block-out CV on ``n`` rows does at the sizes ``grid``: ``block_fits`` (n // N
    blocks at each size N), ``tuning_fits`` (at most: settings x CV folds at each size for
    ``tuning="per_n_subset"``, inside every block for ``"per_block"``; a lasso's path per fold counts
    as one fit) and ``settings`` (hyperparameter settings compared; None for the lasso's path).

    >>> from llmsurrogate.ess._learners import Learner
    >>> work_plan(Learner("rf", "value"), 4000, [1, 2, 5, 10, 20], "per_n_subset")
    {'sizes': 5, 'block_fits': 7400, 'tuning_fits': 96, 'settings': 12, 'per_size': [0, 0, 24, 36, 36]}
    """
    settings = learner.tuning_settings()
    per_size = [0 if settings == 0 else (settings or 1) * learner.tuning_folds(int(N)) for N in grid]
    if not _tunes(learner, tuning) and tuning != "per_block":
        per_size = [0] * len(grid)
    blocks = [n // int(N) for N in grid]
    if tuning == "per_block":
        tuning_fits = sum(b * t for b, t in zip(blocks, per_size))
    else:
        tuning_fits = sum(per_size)
    return {"sizes": len(grid), "block_fits": int(sum(blocks)), "tuning_fits": int(tuning_fits), "settings": settings,
            "per_size": per_size}


def describe_work(learner: Learner, n: int, grid: list[int], tuning: str) -> str:
    """One line: how many fits block-out CV will make, and what each fit is (the notice above a
    progress bar; docs/methods/ess.md §8.3 gives the cost of the default tuning and cheaper settings).

    >>> from llmsurrogate.ess._learners import Learner
    >>> print(describe_work(Learner("rf", "value"), 4000, [1, 2, 5, 10, 20], "per_n_subset"))
    Block-out CV: 5 training sizes, 7,400 block fits (n // N blocks at each size N) + up to 96 tuning fits (12 settings x up to 3-fold CV at each size); each fit is a random forest of 300 trees. Cost and cheaper settings: docs/methods/ess.md §8.3.
    """
    plan = work_plan(learner, n, grid, tuning)
    sizes = f"{plan['sizes']} training size{'s' if plan['sizes'] != 1 else ''}"
    text = f"Block-out CV: {sizes}, {plan['block_fits']:,} block fits (n // N blocks at each size N)"
    if plan["tuning_fits"]:
        what = (f"{plan['settings']} settings x up to 3-fold CV" if plan["settings"] is not None
                else "a path of alphas x up to 5-fold CV")
        where = "inside every block" if tuning == "per_block" else "at each size"
        text += f" + up to {plan['tuning_fits']:,} tuning fits ({what} {where})"
    text += f"; each fit is {learner.describe()}."
    if plan["tuning_fits"] or learner.name == "rf":
        text += " Cost and cheaper settings: docs/methods/ess.md §8.3."
    return text


def worker_kind(learner: Learner) -> str:
    """joblib's ``prefer`` for block fits (a soft hint: ``joblib.parallel_config(backend=...)``
    wins). scikit-learn's per-fit Python overhead holds the GIL, and it dominates the small fits
    of block-out CV: with 2 cores, process workers ran the block fits of an L1-logit ESS 1.6x
    faster than one job, and threads were no faster than one job. The native mean and majority
    learners need no scikit-learn: threads (their tuning; :func:`run_point` fits their blocks in
    the calling thread)."""
    return "threads" if learner.name in ("mean", "majority") else "processes"


def _in_order(tasks, n_jobs, prefer):
    """The tasks' results in order, with backpressure: ``tasks`` is read a window of a few tasks per
    worker at a time, and the next window only once every result of this one has been handed to
    the caller, so that at most a window of results is held however slowly the caller consumes
    them (joblib's generator output alone dispatches new tasks as workers free up, and its results
    piled up behind a slower consumer: 12.8 GB for an ESS at n = 10^5, issue 37). Within a window
    the results stream where the active backend has generator output (not joblib's
    multiprocessing backend, nor Ray's). One pool serves every window. Local pools are sized by
    :func:`llmsurrogate.num_threads`'s rule, capped, and their workers exit with this process
    (``_workers.parallel``)."""
    window = 4 * max(1, effective_n_jobs(local_n_jobs(n_jobs, prefer=prefer)))
    try:
        pool = parallel(n_jobs, return_as="generator", prefer=prefer)
    except ValueError:  # "Backend ... does not support return_as=generator"
        pool = parallel(n_jobs, prefer=prefer)
    with pool as par:
        while chunk := list(itertools.islice(tasks, window)):
            yield from par(chunk)


#: The cost model of :func:`run_tasks` (measured on a 2-core machine, docs/methods/ess.md §11):
#: starting local process workers that import scikit-learn took 2.5 s on an idle machine and
#: 5 s under a load of 4 (counted unless joblib's loky pool is already running with enough
#: workers), and a prediction a worker hands back costs the calling process 25-40 ns (pickled,
#: piped, unpickled) against 1 ns in the calling thread; handing a task to a running pool and its
#: result back took the calling process milliseconds more (its arguments pickled, the round trip).
POOL_START_S = 3.0
VALUE_TRANSFER_S = 30e-9
TASK_TRANSFER_S = 0.02
#: the pool must be estimated to take at most this share of the time the calling thread would
POOL_MARGIN = 0.75


def _free_workers(workers: int) -> int:
    """``workers``, at most the cores left idle by other processes: the cores this process may use
    less the 1-minute load average beyond this thread (on 2 cores under a load of 6 from other
    processes, a pool of process workers was slower than one job even for fits it should have
    shared well)."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # not on this platform
        return workers
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(workers, int(cores - max(0.0, load - 1.0) + 0.5)))


def _pool_start_s(workers: int) -> float:
    """:data:`POOL_START_S`, or 0 when joblib's reusable loky pool already runs ``workers`` or more
    live processes (started by an earlier call or by the tuning of this one)."""
    try:
        from joblib.externals.loky import reusable_executor

        ex = reusable_executor._executor
        alive = sum(1 for proc in (ex._processes or {}).values() if proc.is_alive()) if ex is not None else 0
        if alive >= workers and not getattr(ex._flags, "broken", None):
            return 0.0
    except Exception:  # a private detail of joblib: when it changes, assume a cold start
        pass
    return POOL_START_S


def pool_pays(times: list[float], remaining: int, workers: int, values: int, growing: bool = False,
              start_s: float = POOL_START_S) -> bool:
    """Whether the ``remaining`` tasks are estimated to finish sooner on ``workers`` workers than in
    the calling thread, ``times`` being the seconds each task run here so far took. A task's cost
    is the fastest of those (``growing``: the faster of the last two, a lower bound when every task
    costs more than the one before, whichever of them carried the imports). In the calling thread
    the rest take ``remaining x cost``; on the workers ``start_s`` (starting them) plus the larger of
    ``ceil(remaining / workers) x cost`` and ``remaining x (TASK_TRANSFER_S + values x
    VALUE_TRANSFER_S)`` (``values``: the numbers a task hands back; the calling process sends the
    tasks and receives their results one after another). The
    pool is chosen only when that is at most :data:`POOL_MARGIN` of the calling thread's time, and
    never on one timed task (the first carries the imports: scikit-learn's first fit under load
    took longer than a pool's start).

    >>> pool_pays([0.5, 0.01], remaining=100, workers=2, values=0)          # 1 s of work left: here
    False
    >>> pool_pays([0.5, 0.4], remaining=100, workers=2, values=0)           # 40 s: 23 s on 2 workers
    True
    >>> pool_pays([0.5, 0.06], remaining=100, workers=2, values=2_000_000)  # 6 s to hand 2e8 numbers back
    False
    """
    if workers < 2 or remaining < 2 or len(times) < 2:
        return False
    cost = min(times[-2:] if growing else times)
    here = remaining * cost
    pool = start_s + max(math.ceil(remaining / workers) * cost,
                         remaining * (TASK_TRANSFER_S + values * VALUE_TRANSFER_S))
    return pool <= POOL_MARGIN * here


def run_tasks(tasks: list, n_jobs: int | None, prefer: str, values: int = 0, growing: bool = False,
              later: int = 0):
    """The results of ``tasks`` (joblib ``delayed`` calls), in order: run in the calling thread
    while that is estimated to be as fast (:func:`pool_pays`, after each task), the rest through
    :func:`_in_order`'s pool once workers are estimated to pay for their start and for handing
    ``values`` numbers a task back, counting only the workers that have idle cores
    (:func:`_free_workers`), when ``n_jobs`` is the default (None); a number of workers asked for
    gets them. So the default ``n_jobs`` is never much slower than one job:
    small fits, or few of them, never start a pool (on 2 cores a pool of process workers made
    a lasso ESS at n = 5,000 twice as slow). A Dask or Ray backend is priced the same way under
    the default ``n_jobs`` (:func:`_on_cluster`; ``later``: how many tasks of at least this cost
    the same job's later calls will run, which a cluster's one-off start is spread over); another
    backend off this machine gets every task. No result depends on where a task runs."""
    from .._workers import _active_backend, cluster_start_s, joblib_n_jobs, runs_here

    workers = effective_n_jobs(local_n_jobs(n_jobs, prefer=prefer))
    backend = _active_backend({"prefer": prefer})[0]
    local = runs_here(backend)   # not Dask or Ray
    if not local and n_jobs is None:
        price = cluster_start_s(backend)
        jobs = joblib_n_jobs(None)   # every worker of the cluster
        cluster_workers = effective_n_jobs(jobs)
        if price is not None and cluster_workers > 1:
            # a start paid once (Dask's) is spread over the later calls' tasks too; one paid by every
            # call (Ray's) over this call's
            later = later if (cluster_start_s(backend, used=True) or 0.0) < price else 0
            yield from _on_cluster(tasks, jobs, prefer, backend, cluster_workers, price, values, growing, later)
            return
    if workers > 1 and (not local or n_jobs is not None):
        # workers asked for by number (``n_jobs=2``, ``--n-jobs 2``), or a backend of unknown
        # cost: every task goes to them, as asked; the choice by cost is the default's
        yield from _in_order(iter(tasks), n_jobs, prefer)
        return
    start_s = _pool_start_s(workers) if workers > 1 else POOL_START_S
    free = _free_workers(workers)
    times: list[float] = []
    for i, (fn, args, kwargs) in enumerate(tasks):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        times.append(time.perf_counter() - t0)
        yield out
        if pool_pays(times, len(tasks) - i - 1, free, values, growing, start_s):
            yield from _in_order(iter(tasks[i + 1:]), n_jobs, prefer)
            return


_NOTHING = object()


def _on_cluster(tasks: list, jobs: int, prefer: str, backend: Any, workers: int, price: float, values: int,
                growing: bool, later: int = 0):
    """:func:`run_tasks` on a Dask or Ray cluster under the default ``n_jobs`` (``jobs``: every worker
    of the cluster, or ``joblib.parallel_config``'s n_jobs, :func:`~llmsurrogate._workers.joblib_n_jobs`;
    ``workers`` of them): the tasks run here (in :func:`~llmsurrogate._workers.in_task`'s context,
    as in a worker) while :func:`pool_pays`
    says the cluster, whose start costs ``price`` (:func:`~llmsurrogate._workers.cluster_start_s`),
    would not finish the rest sooner, counting ``later`` tasks of at least this cost that later
    calls of the job will send to the cluster once it has started; then the rest go to it.
    The first task runs in a thread:
    when it has not finished within ``price`` the tasks are costly enough for the cluster to pay,
    and the rest go out at once while it finishes (its result still comes first), so that timing
    never holds a costly job back by more than the price."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as FutureTimeout

    from .._workers import in_task, used_cluster

    def timed(fn, args, kwargs):
        with in_task():
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
        return out, time.perf_counter() - t0

    if not tasks:
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="llmsurrogate-timed-task")
    first = pool.submit(timed, *tasks[0])
    pool.shutdown(wait=False)
    try:
        out, took = first.result(timeout=price)
    except FutureTimeout:
        # (used_cluster before the results: a caller that zips them with its own list stops this
        # generator at the last one, and code after it never runs)
        used_cluster(backend)
        rest = _in_order(iter(tasks[1:]), jobs, prefer)
        second = next(rest, _NOTHING)   # the cluster at work (its first window sent) while the first finishes
        yield first.result()[0]
        if second is not _NOTHING:
            yield second
        yield from rest
        return
    times = [took]
    yield out
    for i in range(1, len(tasks)):
        if pool_pays(times, len(tasks) - i + later, workers, values, growing, price):
            used_cluster(backend)
            yield from _in_order(iter(tasks[i:]), jobs, prefer)
            return
        out, took = timed(*tasks[i])
        times.append(took)
        yield out


def run_point(prep: Prepared, learner: Learner, N: int, tuning: str, seed: int | None, n_jobs: int | None,
              with_llm: bool, progress: Callable[[int, int], None] | None = None, params: dict | None = None,
              later_fits: int = 0) -> dict:
    """Block-out CV at one training size: a dict of variance pieces (plain and difference).
    ``params``: hyperparameters already tuned for this size (default: tune here). ``n_jobs`` sizes the
    block fits' joblib pool and the Rust accumulation's threads (see :func:`llmsurrogate.num_threads`).
    ``later_fits``: the block fits of the larger sizes still to come, each taken to cost at least
    one of this size's (more training rows, and predictions on at least half the rows), which a
    cluster's one-off start is spread over (:func:`run_tasks`)."""
    threads = resolve_n_jobs(n_jobs)
    if params is None:
        params = tune_for_n(prep, learner, N, tuning, seed)
    acc = _core.BlockOutAccumulator(prep.y, N, prep.rust_loss, prep.llm_loss if with_llm else None, prep.eps)
    B, n_used = acc.blocks, acc.n_used
    width = n_used - N
    per_task = int(max(1, min(max(1, B // 16), (1 << 21) // max(width, 1))))
    if learner.name == "mean":
        per_task = int(max(1, (1 << 21) // max(width, 1)))
    starts = list(range(0, B, per_task))
    tasks = [delayed(_fit_block_rows)(learner, prep.X, prep.y, N, n_used, s, min(B, s + per_task), params,
                                      seed, tuning, prep.loss_fn) for s in starts]
    if learner.name in ("mean", "majority"):
        # the native learners' fits take microseconds: in this thread (a pool only adds hand-offs
        # under the GIL, 3.3 s against 1.5 s at n = 100,000); the Rust accumulation keeps its threads
        results = (f(*a, **k) for f, a, k in tasks)
    else:
        # here while that is as fast, then on workers: each task hands back per_task x width numbers
        results = run_tasks(tasks, n_jobs, worker_kind(learner), values=per_task * width,
                            later=later_fits // per_task)
    shortcut = 0
    done = 0
    with _quiet_fit_warnings():
        for s, (rows, nconst) in zip(starts, results):
            # rows unpickled from another process (Dask) can be misaligned; Rust needs aligned, C-ordered rows
            acc.add_blocks(s, np.require(rows, dtype=np.float64, requirements=["C", "A"]), threads)
            shortcut += nconst
            done += rows.shape[0]
            if progress is not None:
                progress(done, B)
    out = acc.finalize()
    point = {"n_train": int(N), "blocks": int(B), "n_used": int(n_used), "plain": dict(out["plain"]),
             "params": {k: (None if v is None else v) for k, v in params.items()}, "constant_blocks": int(shortcut)}
    if with_llm:
        point["diff"] = dict(out["diff"])
        point["llm_mean"] = float(out["llm_mean"])
        point["llm_var"] = float(out["llm_var"])
    return point


# ------------------------------------------------------------------------------------------------
# inference
# ------------------------------------------------------------------------------------------------

def bias_corrected(points: list[dict]) -> list[dict]:
    """The points with the leading-order finite-B bias of the fixed-N variance (4.5) removed
    (docs/methods/ess.md §4.6, an optional extension, not in the paper): sigma^2_N + 2 V_test / (B - 1), for the
    plain and the difference losses. (4.5) underestimates the variance by about 2 V_test / (B - 1)
    when B is small, which makes fixed-N intervals too narrow."""
    out = []
    for p in points:
        q = dict(p)
        for kind in ("plain", "diff"):
            if kind in q:
                pieces = dict(q[kind])
                pieces["sigma2_fixed_n"] = pieces["sigma2_fixed_n"] + 2.0 * pieces["v_test"] / (pieces["blocks"] - 1)
                q[kind] = pieces
        out.append(q)
    return out


def z_quantile(p: float) -> float:
    return float(ndtri(p))


def uses_fixed_n(regime: str, blocks: int, min_blocks: int) -> bool:
    if regime == "fixed_N":
        if blocks < 3:
            raise InvalidArgumentError(f"regime='fixed_N' needs at least 3 blocks; a grid point has {blocks}. "
                                       "Use regime='hybrid' (switches to fixed-B) or regime='fixed_B'")
        return True
    if regime == "fixed_B":
        return False
    return blocks >= max(3, min_blocks)


def two_sided_z(level: float) -> float:
    """The normal quantile of a two-sided ``level`` interval (1.96 for 0.95): z_{(1 + level)/2}."""
    return z_quantile((1 + level) / 2)


def curve_table(points: list[dict], level: float, regime: str, min_blocks: int, loss_name: str):
    """The error curve's table: one row per grid point, with its two-sided ``level`` CI."""
    z2 = two_sided_z(level)
    rows = []
    for p in points:
        pl = p["plain"]
        n_used = pl["n_used"]
        fixed_n = uses_fixed_n(regime, pl["blocks"], min_blocks)
        se_n = math.sqrt(max(pl["sigma2_fixed_n"], 0.0) / n_used)
        se_b = math.sqrt(max(pl["sigma2_fixed_b"], 0.0) / n_used)
        fallback = fixed_n and pl["sigma2_fixed_n"] <= 0
        se = (math.sqrt(max(pl["sigma2_bm"], 0.0) / n_used) if fallback else se_n) if fixed_n else se_b
        row = {"n_train": p["n_train"], "n_blocks": pl["blocks"], "n_used": n_used, "error": pl["ecv"],
               "se_fixed_n": se_n, "se_fixed_b": se_b, "se": se, "ci_low": pl["ecv"] - z2 * se,
               "ci_high": pl["ecv"] + z2 * se, "regime": "fixed_N" if fixed_n else "fixed_B",
               "v_train": pl["v_train"], "v_test": pl["v_test"], "cov_train_test": pl["cov"],
               "sigma2_fixed_n": pl["sigma2_fixed_n"], "sigma2_fixed_b": pl["sigma2_fixed_b"],
               "sigma2_bm": pl["sigma2_bm"], "variance_fallback": bool(fallback),
               "constant_blocks": p.get("constant_blocks", 0)}
        if loss_name == "squared":
            rmse = math.sqrt(max(pl["ecv"], 0.0))
            row["rmse"] = rmse
            row["rmse_se"] = se / (2 * rmse) if rmse > 0 else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def monotonicity_violations(table) -> list[list[int]]:
    """Pairs (N_k, N_k') with k < k' whose two-sided CIs are disjoint with the larger N above (docs/methods/ess.md §6.6)."""
    out = []
    lo, hi, ns = table["ci_low"].to_numpy(), table["ci_high"].to_numpy(), table["n_train"].to_numpy()
    for k in range(len(ns)):
        for j in range(k + 1, len(ns)):
            if lo[j] > hi[k]:
                out.append([int(ns[k]), int(ns[j])])
    return out


def ess_inference(points: list[dict], alpha: float, regime: str, min_blocks: int, variance: str):
    """Per-grid-point tests and Algorithm 3.1 (the decisions run in Rust)."""
    zc = z_quantile(1 - alpha)
    z2 = z_quantile(1 - alpha / 2)
    if regime == "fixed_N":
        for p in points:
            uses_fixed_n(regime, p["diff"]["blocks"], min_blocks)
    seq = _core.ess_sequential_test(
        [{"n_train": p["n_train"], "plain": p["plain"], "diff": p["diff"], "llm_var": p["llm_var"]} for p in points],
        zc, regime, int(max(3, min_blocks)), variance)
    rows = []
    for k, p in enumerate(points):
        pl, df = p["plain"], p["diff"]
        n_used = df["n_used"]
        fixed_n = bool(seq["fixed_n"][k])
        algo_s2 = pl["sigma2_fixed_n"] if fixed_n else pl["sigma2_fixed_b"]
        if fixed_n and algo_s2 <= 0:
            algo_s2 = pl["sigma2_bm"]
        algo_se = math.sqrt(max(algo_s2, 0.0) / n_used)
        z = float(seq["z"][k])
        rows.append({
            "n_train": p["n_train"], "n_blocks": df["blocks"], "n_used": n_used,
            "algo_error": pl["ecv"], "algo_se": algo_se,
            "algo_ci_low": pl["ecv"] - z2 * algo_se, "algo_ci_high": pl["ecv"] + z2 * algo_se,
            "llm_error": p["llm_mean"], "diff": df["ecv"], "diff_se": float(seq["se"][k]), "z": z,
            "p_value": float(ndtr(-z)) if math.isfinite(z) else 1.0,
            "lower_diff": float(seq["lower"][k]), "reject": bool(seq["reject"][k]),
            "regime": "fixed_N" if fixed_n else "fixed_B",
            "v_train": df["v_train"], "v_test": df["v_test"], "cov_train_test": df["cov"],
            "sigma2_diff_fixed_n": df["sigma2_fixed_n"], "sigma2_diff_fixed_b": df["sigma2_fixed_b"],
            "sigma2_diff_bm": df["sigma2_bm"], "llm_var": p["llm_var"],
            "degenerate": bool(seq["degenerate"][k]), "variance_fallback": bool(seq["fell_back_to_bm"][k]),
            "constant_blocks": p.get("constant_blocks", 0),
        })
    table = pd.DataFrame(rows)
    return table, seq
