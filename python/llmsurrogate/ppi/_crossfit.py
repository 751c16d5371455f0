"""Cross-prediction-powered inference (docs/methods/ppi.md §11): the prediction is the user's own
scikit-learn model, trained by K-fold cross-fitting on the labelled rows (Zrnic & Candès,
"Cross-prediction-powered inference", PNAS 2024; ppi_py's ``crossppi_*_ci``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .._positions import at, located
from .._validation import align_by_label, as_float_array, check_choice, check_int
from ..exceptions import InvalidArgumentError, NonFiniteError, ShapeError
from ._inputs import check_method
from ._mean import mean
from ._regression import logistic, ols, poisson
from ._results import PPIResult

__all__ = ["crossfit", "cross_predictions"]

ESTIMANDS = ("mean", "ols", "logistic", "poisson")
RESPONSES = ("auto", "predict", "predict_proba")


def _rows_of(x, name: str) -> int:
    if x is None:
        raise InvalidArgumentError(f"argument `{name}` is None; pass the features of the rows")
    try:
        return len(x)
    except TypeError:
        raise InvalidArgumentError(f"argument `{name}` must be a table of features (rows); got "
                                   f"{type(x).__name__}") from None


def _take(x, idx: np.ndarray):
    """Rows ``idx`` (positions) of a pandas or polars frame, an array or a list."""
    if hasattr(x, "iloc"):
        return x.iloc[idx]
    if hasattr(x, "to_pandas") and hasattr(x, "columns"):   # polars: a row gather keeps the frame
        return x[idx]
    return np.asarray(x)[idx]


def _clone(estimator):
    from sklearn.base import clone

    if estimator is None or not (hasattr(estimator, "fit") and hasattr(estimator, "predict")):
        raise InvalidArgumentError(f"argument `estimator` must be a scikit-learn estimator (an object with fit() and "
                                   f"predict(), e.g. sklearn.linear_model.Ridge()); got {type(estimator).__name__}")
    try:
        return clone(estimator)
    except Exception as err:  # noqa: BLE001 - sklearn raises TypeError / RuntimeError for unclonable objects
        raise InvalidArgumentError(f"argument `estimator` cannot be cloned by sklearn.base.clone ({err}); pass an "
                                   "unfitted scikit-learn estimator") from None


def check_folds(folds, n: int, random_state) -> np.ndarray:
    """The fold of each of the ``n`` labelled rows (codes 0..K-1): ``folds`` a number K (rows dealt
    to K folds of sizes differing by at most one, in an order shuffled by ``random_state``) or one
    fold id per labelled row (any hashable ids, at least two distinct)."""
    if isinstance(folds, (int, np.integer, float)) and not isinstance(folds, (bool, np.bool_)):
        k = check_int(folds, "folds", minimum=2)
        if k > n:
            raise InvalidArgumentError(f"argument `folds` is {k} for {n} labelled rows; each fold needs at least one "
                                       f"row: pass at most {n} (10 is the usual choice)")
        seed = None if random_state is None else check_int(random_state, "random_state", minimum=0)
        order = np.random.default_rng(seed).permutation(n)
        codes = np.empty(n, dtype=np.intp)
        codes[order] = np.arange(n) % k
        return codes
    if isinstance(folds, (bool, np.bool_, str)) or folds is None:
        raise InvalidArgumentError(f"argument `folds` must be a number of folds (>= 2) or one fold id per labelled "
                                   f"row; got {folds!r}")
    import pandas as pd

    ids = np.asarray(folds.to_numpy() if hasattr(folds, "to_numpy") else folds, dtype=object)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ShapeError(f"argument `folds` has {ids.size} fold ids for {n} labelled rows (`y`); pass one per row")
    if pd.isna(ids).any():
        raise NonFiniteError(located("argument `folds` has a missing fold id at ",
                                     at(int(np.flatnonzero(pd.isna(ids))[0]), "row")))
    codes, uniques = pd.factorize(pd.Series(ids, dtype=object), sort=True)
    if len(uniques) < 2:
        raise InvalidArgumentError("argument `folds` puts every labelled row in one fold; cross-fitting needs at "
                                   "least two folds")
    return codes.astype(np.intp)


def _predict(model, X, response: str, name: str) -> np.ndarray:
    """One number per row: ``predict`` (a regressor; ``response="predict"``) or, for a classifier
    (``"auto"``) or ``"predict_proba"``, the expected value of ``y`` under ``predict_proba``
    (``sum_k p_k * class_k``: the probability of 1 for 0/1 answers)."""
    from sklearn.base import is_classifier

    if response == "predict_proba" or (response == "auto" and is_classifier(model)):
        if not hasattr(model, "predict_proba"):
            raise InvalidArgumentError(f"argument `response`: the estimator ({type(model).__name__}) has no "
                                       "predict_proba(); pass response='predict'")
        try:
            classes = np.asarray(model.classes_, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidArgumentError("argument `y`: a classifier's classes must be numbers (0/1 answers, or the "
                                       "numeric levels of a scale) for its expected value to estimate their "
                                       "mean") from None
        out = np.asarray(model.predict_proba(X), dtype=np.float64) @ classes
    else:
        out = np.asarray(model.predict(X), dtype=np.float64)
    if out.ndim == 2 and out.shape[1] == 1:
        out = out[:, 0]
    if out.ndim != 1:
        raise ShapeError(f"the estimator's predictions on `{name}` have shape {out.shape}; crossfit needs one number "
                         "per row (one outcome)")
    if not np.all(np.isfinite(out)):
        raise NonFiniteError(f"the estimator predicted a non-finite value on `{name}`")
    return out


def cross_predictions(estimator, X, y, X_unlabeled, folds=10, *, random_state=0, response: str = "auto"):
    """The cross-fitted predictions (§11.1): for each fold k a clone of ``estimator`` fitted on the
    other folds predicts fold k's labelled rows and every unlabelled row. Returns ``(yhat, Yhat_u,
    fold_codes)``: ``yhat`` (n) the out-of-fold prediction of each labelled row, ``Yhat_u``
    (N x K) each fold model's prediction of the unlabelled rows, and the fold of each labelled row.
    ``y`` must be an array already paired with ``X``.

    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.arange(8.0).reshape(-1, 1); y = 2 * X[:, 0] + 1
    >>> yhat, Yu, codes = cross_predictions(LinearRegression(), X, y, np.array([[10.0]]), folds=2)
    >>> yhat.round(6).tolist() == y.tolist(), Yu.round(6).tolist()
    (True, [[21.0, 21.0]])
    """
    response = check_choice(response, "response", list(RESPONSES))
    n = y.shape[0]
    codes = check_folds(folds, n, random_state)
    K = int(codes.max()) + 1
    N = _rows_of(X_unlabeled, "X_unlabeled")
    yhat = np.empty(n)
    Yhat_u = np.empty((N, K))
    for k in range(K):
        test = np.flatnonzero(codes == k)
        train = np.flatnonzero(codes != k)
        model = _clone(estimator)
        model.fit(_take(X, train), y[train])
        yhat[test] = _predict(model, _take(X, test), response, "X")
        pred_u = _predict(model, X_unlabeled, response, "X_unlabeled")
        if pred_u.shape[0] != N:
            raise ShapeError(f"the estimator returned {pred_u.shape[0]} predictions for the {N} rows of `X_unlabeled`")
        Yhat_u[:, k] = pred_u
    return yhat, Yhat_u, codes


def crossfit(estimator, X, y, X_unlabeled, *, estimand: str = "mean", regressors=None, regressors_unlabeled=None,
             folds=10, random_state=0, response: str = "auto", method: str = "ppi", level: float = 0.95, lam=None,
             coord=None, intercept: bool | None = None) -> PPIResult:
    """Cross-prediction-powered inference (Zrnic & Candès, PNAS 2024; docs/methods/ppi.md §11):
    when the prediction is your own scikit-learn model rather than an LLM's answers, train it on the
    labelled rows by K-fold cross-fitting and use it on the unlabelled rows, with the PPI estimate
    and interval of :func:`mean` or :func:`ols` / :func:`logistic` / :func:`poisson`.

    The ``n`` labelled rows (features ``X``, answers ``y``) are dealt to ``folds`` folds (10 by
    default; shuffled by ``random_state``, or pass one fold id per labelled row). For each fold k a
    clone of ``estimator`` is fitted on the other K - 1 folds; it predicts fold k's labelled rows
    (``yhat``: every labelled row gets a prediction from a model that never saw it) and every
    unlabelled row; the K models' predictions of an unlabelled row are averaged (``yhat_unlabeled``).
    The estimate and its variance are then PPI's with these predictions: with ``method="ppi"``
    (default, lambda = 1) the cross-prediction estimator of the paper, equal to ppi_py 0.2.3's
    ``crossppi_mean_ci`` and ``crossppi_logistic_ci`` and, for OLS, to ``crossppi_ols_ci``'s estimate
    with :func:`ols`'s variance (docs/methods/ppi.md §7, item 14; tests/ppi);
    ``method="ppi++"`` tunes lambda on the cross-fitted predictions (an extension the paper does not
    study) and ``"classical"`` ignores them.

    ``estimand``: ``"mean"`` (of ``y``), or ``"ols"``, ``"logistic"``, ``"poisson"`` (the
    regression of ``y`` on ``regressors`` / ``regressors_unlabeled``, by default ``X`` /
    ``X_unlabeled`` themselves; ``intercept`` and ``coord`` as in :func:`ols`). ``response``:
    ``"auto"`` (a classifier's expected value of ``y`` under ``predict_proba`` -- the probability of
    1 for 0/1 answers --, a regressor's ``predict``), ``"predict"`` or ``"predict_proba"``. ``X`` and
    ``X_unlabeled`` go to the estimator as given (a pipeline may take text or categories); pandas
    ``X``, ``y`` and ``regressors`` are paired by their row labels. The result is a
    :class:`PPIResult` whose notes name the estimator and the folds.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> def rows(m):
    ...     X = rng.normal(size=(m, 3))
    ...     return X, X @ [1.0, 0.5, -0.5] + rng.normal(size=m)
    >>> X, y = rows(300); X_u, _ = rows(10_000)           # 300 labelled rows, 10,000 unlabelled
    >>> res = ppi.crossfit(LinearRegression(), X, y, X_u)
    >>> round(res.estimate, 3), round(res.ci_high - res.ci_low, 3), round(res.effective_n)
    (-0.041, 0.231, 734)
    >>> classical = ppi.crossfit(LinearRegression(), X, y, X_u, method="classical")
    >>> round(classical.ci_high - classical.ci_low, 3)
    0.362
    >>> ppi.crossfit(LinearRegression(), X, y, X_u, estimand="ols", intercept=True).terms
    ['Intercept', 'x0', 'x1', 'x2']
    """
    estimand = check_choice(estimand, "estimand", list(ESTIMANDS))
    method = check_method(method)
    if estimand == "mean" and (regressors is not None or regressors_unlabeled is not None):
        raise InvalidArgumentError("arguments `regressors` / `regressors_unlabeled` are the columns of a regression; "
                                   "with estimand='mean' leave them out")
    if estimand == "mean" and coord is not None:
        raise InvalidArgumentError("argument `coord` chooses a regression coefficient; with estimand='mean' leave "
                                   "it out")
    if estimand == "mean" and intercept is not None:
        raise InvalidArgumentError("argument `intercept` is a regression's; with estimand='mean' leave it out")
    if (regressors is None) != (regressors_unlabeled is None):
        given, missing = ("regressors", "regressors_unlabeled") if regressors is not None else \
            ("regressors_unlabeled", "regressors")
        raise InvalidArgumentError(f"argument `{given}` is given without `{missing}`; pass both (the regression's "
                                   "columns on the labelled and on the unlabelled rows) or neither")
    _rows_of(X, "X")
    _rows_of(X_unlabeled, "X_unlabeled")
    as_float_array(y, "y", allow_nan=False)   # types and missing values, at the user's own row positions
    if isinstance(folds, (list, tuple, np.ndarray)) or hasattr(folds, "index"):
        X, y, folds, regressors = align_by_label(("X", X), ("y", y), ("folds", folds), ("regressors", regressors))
    else:
        X, y, regressors = align_by_label(("X", X), ("y", y), ("regressors", regressors))
    X_unlabeled, regressors_unlabeled = align_by_label(("X_unlabeled", X_unlabeled),
                                                       ("regressors_unlabeled", regressors_unlabeled))
    ya = as_float_array(y, "y", allow_nan=False)
    if ya.ndim != 1:
        raise ShapeError(f"argument `y` must be one column (1-dimensional); got shape {ya.shape}")
    n = ya.shape[0]
    if _rows_of(X, "X") != n:
        raise ShapeError(f"arguments `X` and `y` must have one row each per labelled row; got {_rows_of(X, 'X')} and "
                         f"{n} rows")
    if n < 4:
        raise InvalidArgumentError(f"argument `y` has {n} labelled rows; cross-fitting needs at least four")
    if _rows_of(X_unlabeled, "X_unlabeled") < 2:
        raise InvalidArgumentError("argument `X_unlabeled` has fewer than two rows; PPI needs at least two")
    yhat, Yhat_u, codes = cross_predictions(estimator, X, ya, X_unlabeled, folds, random_state=random_state,
                                            response=response)
    yhat_u = Yhat_u.mean(axis=1)
    K = Yhat_u.shape[1]
    if estimand == "mean":
        import pandas as pd

        y_arg = pd.Series(ya, name=y.name) if isinstance(y, pd.Series) else ya   # keeps the term's name
        res = mean(y_arg, yhat, yhat_u, method=method, level=level, lam=lam)
    else:
        Z = X if regressors is None else regressors
        Zu = X_unlabeled if regressors_unlabeled is None else regressors_unlabeled
        if hasattr(Z, "iloc"):   # paired with y above; the arrays below are in the same order
            Z = Z.reset_index(drop=True)
        fn = {"ols": ols, "logistic": logistic, "poisson": poisson}[estimand]
        res = fn(Z, ya, yhat, Zu, yhat_u, method=method, level=level, lam=lam, coord=coord, intercept=intercept)
    name = type(estimator).__name__
    sizes = np.bincount(codes)
    rows = f"{sizes.min()}" if sizes.min() == sizes.max() else f"{sizes.min()}-{sizes.max()}"
    note = (f"cross-prediction (Zrnic & Candès 2024): {K} folds of {rows} labelled rows, "
            f"{name} fitted on the other folds; yhat_unlabeled averages the {K} fitted models "
            "(docs/methods/ppi.md §11)")
    return dataclasses.replace(res, notes=(*res.notes, note))
