"""Exact, low-overhead prediction for the fitted scikit-learn models the package builds itself.

Block-out CV fits thousands of small models and predicts each on every other row. scikit-learn's
``predict`` re-validates its input and, for a forest, calls Python once per tree; for the
built-in learners that overhead was a fifth (random forest) to a quarter (L1 logit) of an
end-to-end ESS run. :func:`fast_predict` returns *the same numbers* without it:

* random forests (``RandomForestClassifier`` / ``RandomForestRegressor``, single output, fitted
  with ``n_jobs=1`` so scikit-learn adds the trees' outputs in tree order): the Rust kernel
  ``ess_forest_predict_mean`` walks the trees on the float32-cast rows and adds the leaf values in
  the same order, bit for bit;
* ``Pipeline(StandardScaler, LogisticRegression)`` (binary labels) and
  ``Pipeline(StandardScaler, Lasso)``: the very array operations of scikit-learn's
  ``transform`` and ``decision_function`` (``X -= mean_; X /= scale_; X @ coef_.T + intercept_``),
  without the per-call checks.

Anything else returns ``None`` and the caller uses the model's own ``predict``. The equality is
asserted with ``assert_array_equal`` against scikit-learn in ``tests/ess/test_ess_forest_predict.py``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _core


@functools.lru_cache(maxsize=None)
def _sklearn_at_least(major: int, minor: int) -> bool:
    import sklearn

    parts = sklearn.__version__.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (major, minor)
    except ValueError:  # pragma: no cover - unusual version strings
        return False


def forest_arrays(forest: Any) -> tuple[np.ndarray, ...] | None:
    """Concatenated node arrays of a fitted single-output forest (``None`` if unsupported)."""
    trees = [e.tree_ for e in forest.estimators_]
    if not trees or any(t.n_outputs != 1 for t in trees):
        return None
    width = trees[0].value.shape[2]
    if any(t.value.shape[2] != width for t in trees):
        return None
    left = np.concatenate([t.children_left for t in trees]).astype(np.int64, copy=False)
    right = np.concatenate([t.children_right for t in trees]).astype(np.int64, copy=False)
    feature = np.concatenate([t.feature for t in trees]).astype(np.int64, copy=False)
    threshold = np.concatenate([t.threshold for t in trees]).astype(np.float64, copy=False)
    value = np.ascontiguousarray(np.concatenate([t.value[:, 0, :] for t in trees]), dtype=np.float64)
    offsets = np.zeros(len(trees) + 1, dtype=np.uint64)
    offsets[1:] = np.cumsum([t.node_count for t in trees])
    return left, right, feature, threshold, value, offsets


def forest_mean(forest: Any, X: np.ndarray, n_jobs: int | None = 1) -> np.ndarray | None:
    """Mean leaf value over the trees for each row (rows x outputs), or ``None`` if unsupported."""
    arrays = forest_arrays(forest)
    if arrays is None:
        return None
    x32 = np.ascontiguousarray(X, dtype=np.float32)  # scikit-learn's own cast on predict
    return _core.ess_forest_predict_mean(*arrays, x32, n_jobs)


def _is_plain_forest(est: Any) -> bool:
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    return (type(est) in (RandomForestClassifier, RandomForestRegressor) and est.n_jobs in (None, 1)
            and getattr(est, "n_outputs_", 1) == 1)


def _scaled_linear(est: Any) -> tuple[Any, Any] | None:
    from sklearn.linear_model import Lasso, LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    if type(est) is not Pipeline or len(est.steps) != 2:
        return None
    scaler, model = est.steps[0][1], est.steps[1][1]
    if type(scaler) is not StandardScaler or not (scaler.with_mean and scaler.with_std):
        return None
    if type(model) not in (LogisticRegression, Lasso):
        return None
    return scaler, model


def fast_predict(est: Any, X: np.ndarray, output: str) -> np.ndarray | None:
    """Predictions of the fitted ``est`` on ``X`` equal to scikit-learn's, or ``None``.

    ``output``: ``"label"`` (``predict`` of a classifier), ``"proba"`` (P(y = 1) from
    ``predict_proba``), ``"probs"`` (every column of ``predict_proba``, in the order of ``classes_``)
    or ``"value"`` (``predict`` of a regressor).
    """
    if _is_plain_forest(est) and _sklearn_at_least(1, 4):  # tree values hold fractions since 1.4
        regressor = not hasattr(est, "classes_")
        if regressor != (output == "value"):
            return None
        mean = forest_mean(est, X)
        if mean is None:
            return None
        if output == "value":
            return np.ascontiguousarray(mean[:, 0])
        if output == "probs":
            return np.ascontiguousarray(mean)
        classes = list(est.classes_)
        if output == "proba":
            if 1.0 in classes or 1 in classes:
                return np.ascontiguousarray(mean[:, classes.index(1)])
            return np.zeros(len(X))
        return np.asarray(est.classes_.take(np.argmax(mean, axis=1), axis=0), dtype=np.float64)
    parts = _scaled_linear(est)
    if parts is None:
        return None
    scaler, model = parts
    Xs = np.array(X, dtype=np.float64, copy=True)
    Xs -= scaler.mean_.astype(Xs.dtype)
    Xs /= scaler.scale_.astype(Xs.dtype)
    coef = model.coef_
    if output == "value" and coef.ndim == 1:  # Lasso: LinearModel._decision_function
        return np.ascontiguousarray(Xs @ coef + model.intercept_, dtype=np.float64)
    if output == "label" and coef.ndim == 2 and coef.shape[0] == 1 and len(model.classes_) == 2:
        scores = (Xs @ coef.T + model.intercept_).reshape(-1)  # LinearClassifierMixin.decision_function
        return np.asarray(model.classes_.take((scores > 0).astype(np.intp), axis=0), dtype=np.float64)
    return None
