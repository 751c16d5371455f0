"""Models a transfer-error table is built from, other than EU and CPT (:mod:`._models`): models by
name (:func:`make_model`, for the command line and R), :class:`DomainCV` (tuning by domain
cross-validation), and how :mod:`._build` treats any model: its identity (the fit cache's key),
checking it, a fresh copy per training set, and one generic fit and evaluation (a black box with
``fit(X, y)``/``predict(X)``, scikit-learn estimators included). scikit-learn is imported only
by the calls that need it (it is heavy).
"""

from __future__ import annotations

import copy
import difflib
import hashlib
from typing import Any

import numpy as np

from .._deprecation import deprecated_arguments
from ..exceptions import ComputationError, InvalidArgumentError
from ._models import CPT, EU, _NLSModel

__all__ = ["make_model", "MODEL_NAMES", "DomainCV"]


class DomainCV:
    """Tune a black box by domain cross-validation inside each training set (paper Example 10).

    With ``r >= 2`` training domains, each candidate in ``param_grid`` (a scikit-learn style grid)
    is scored by holding out each training domain in turn, fitting on the other ``r - 1`` and taking
    the mean squared error on the held-out one; the candidate with the lowest average is refitted on
    all ``r`` domains. With one training domain the estimator keeps the parameters it was given
    (the paper uses defaults for ``r = 1``). :func:`error_table` passes the domain of every training
    row as ``groups``.

    Fitted attributes: ``best_params_``, ``cv_errors_`` (one per candidate), ``estimator_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> X, y = np.arange(12.0).reshape(-1, 1), 2 * np.arange(12.0)
    >>> cv = DomainCV(Ridge(), {"alpha": [0.01, 100.0]}).fit(X, y, groups=np.repeat([0, 1, 2], 4))
    >>> cv.best_params_, cv.cv_errors_.shape, round(float(cv.predict([[20.0]])[0]), 2)
    ({'alpha': 0.01}, (2,), 40.0)
    """

    _needs_groups = True

    def __init__(self, estimator: Any, param_grid: Any):
        self.estimator = estimator
        self.param_grid = param_grid

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's arguments (scikit-learn's estimator protocol).

        Examples
        --------
        >>> import numpy as np; from sklearn.linear_model import Ridge; from llmsurrogate.transfer import DomainCV
        >>> X, y, domains = np.arange(12.0).reshape(-1, 1), 2 * np.arange(12.0), np.repeat([0, 1, 2], 4)
        >>> DomainCV(Ridge(), {"alpha": [0.01, 100.0]}).get_params()
        {'estimator': Ridge(), 'param_grid': {'alpha': [0.01, 100.0]}}
        """
        return {"estimator": self.estimator, "param_grid": self.param_grid}

    def set_params(self, **params) -> "DomainCV":
        """Set constructor arguments by name; returns ``self`` (scikit-learn's protocol).

        Examples
        --------
        >>> import numpy as np; from sklearn.linear_model import Ridge; from llmsurrogate.transfer import DomainCV
        >>> X, y, domains = np.arange(12.0).reshape(-1, 1), 2 * np.arange(12.0), np.repeat([0, 1, 2], 4)
        >>> DomainCV(Ridge(), {"alpha": [1.0]}).set_params(param_grid={"alpha": [0.1, 10.0]}).param_grid
        {'alpha': [0.1, 10.0]}
        """
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def cache_key(self) -> str:
        """A text that identifies the estimator and grid (the error-table cache's key).

        Examples
        --------
        >>> import numpy as np; from sklearn.linear_model import Ridge; from llmsurrogate.transfer import DomainCV
        >>> X, y, domains = np.arange(12.0).reshape(-1, 1), 2 * np.arange(12.0), np.repeat([0, 1, 2], 4)
        >>> DomainCV(Ridge(), {"alpha": [0.01, 100.0]}).cache_key()
        "DomainCV(..., {'alpha': [0.01, 100.0]})"
        """
        return f"DomainCV({_model_key(self.estimator)}, {self.param_grid!r})"

    def fit(self, X, y, groups=None) -> "DomainCV":
        """Pick the grid's candidate with the lowest domain-CV error (``groups``: each row's domain), refit on all rows.

        Examples
        --------
        >>> import numpy as np; from sklearn.linear_model import Ridge; from llmsurrogate.transfer import DomainCV
        >>> X, y, domains = np.arange(12.0).reshape(-1, 1), 2 * np.arange(12.0), np.repeat([0, 1, 2], 4)
        >>> cv = DomainCV(Ridge(), {"alpha": [0.01, 100.0]}).fit(X, y, groups=domains)
        >>> cv.best_params_, cv.cv_errors_.round(2).tolist()
        ({'alpha': 0.01}, [0.0, 49.56])
        """
        from sklearn.model_selection import ParameterGrid

        X = np.asarray(X)
        y = np.asarray(y, dtype=np.float64)
        grid = list(ParameterGrid(self.param_grid))
        if not grid:
            raise InvalidArgumentError("argument `param_grid` of DomainCV is empty")
        labels = np.zeros(len(y), dtype=np.int64) if groups is None else np.asarray(groups)
        domains = list(dict.fromkeys(labels.tolist()))
        if len(domains) < 2:
            self.best_params_ = {}
            self.cv_errors_ = np.array([])
        else:
            scores = []
            for params in grid:
                errs = []
                for d in domains:
                    held = labels == d
                    est = _fresh(self.estimator).set_params(**params)
                    est.fit(X[~held], y[~held])
                    errs.append(float(np.mean((np.asarray(est.predict(X[held]), dtype=np.float64) - y[held]) ** 2)))
                scores.append(float(np.mean(errs)))
            self.cv_errors_ = np.array(scores)
            self.best_params_ = grid[int(np.argmin(scores))]
        self.estimator_ = _fresh(self.estimator).set_params(**self.best_params_)
        self.estimator_.fit(X, y)
        return self

    def predict(self, X):
        """Predictions of the refitted best candidate.

        Examples
        --------
        >>> import numpy as np; from sklearn.linear_model import Ridge; from llmsurrogate.transfer import DomainCV
        >>> X, y, domains = np.arange(12.0).reshape(-1, 1), 2 * np.arange(12.0), np.repeat([0, 1, 2], 4)
        >>> cv = DomainCV(Ridge(), {"alpha": [0.01, 100.0]}).fit(X, y, groups=domains)
        >>> cv.predict([[20.0]]).round(2).tolist()
        [40.0]
        """
        return self.estimator_.predict(X)

MODEL_NAMES = ("eu", "eu-authors", "eu-cara", "cpt", "cpt:<free>", "rf", "kr")


@deprecated_arguments(renamed={"random_state": "seed"}, positional=1)
def make_model(name: str, *, seed: int | None = 0):
    """A model of the application by name (for the CLI and R).

    ``"eu"`` (CRRA, the paper's formula), ``"eu-authors"`` (CRRA, the authors' code's zero-prize
    convention), ``"eu-cara"`` (exponential utility), ``"cpt"`` (all of alpha, beta, delta, gamma
    free) or ``"cpt:<letters>"`` (e.g. ``"cpt:g"``, ``"cpt:ab"``), ``"rf"``
    (``RandomForestRegressor(random_state=seed)``, scikit-learn defaults otherwise) and
    ``"kr"`` (``KernelRidge(alpha=1, kernel="rbf", gamma=1/3)``, the paper's kernel ridge).

    Examples
    --------
    >>> make_model("cpt:dg")
    CPT(free='dg', alpha=1.0, beta=1.0, delta=1.0, gamma=1.0, eps=1e-08, delta_max=1000000.0, starts=None, max_iter=500)
    """
    if not isinstance(name, str):
        raise InvalidArgumentError(f"argument `model` must be a model name such as 'cpt:g'; got {name!r}")
    key = name.strip().lower()
    if key == "eu":
        return EU()
    if key == "eu-authors":
        return EU(zero_prize="authors")
    if key == "eu-cara":
        return EU(utility="cara")
    if key == "cpt":
        return CPT("abdg")
    if key.startswith("cpt:"):
        model = CPT(key[4:])
        model._free_index()  # validates the letters
        return model
    if key == "rf":
        from sklearn.ensemble import RandomForestRegressor

        return RandomForestRegressor(random_state=seed)
    if key == "kr":
        from sklearn.kernel_ridge import KernelRidge

        return KernelRidge(alpha=1.0, kernel="rbf", gamma=1 / 3)
    hint = difflib.get_close_matches(key, ["eu", "eu-authors", "eu-cara", "cpt", "cpt:g", "rf", "kr"], n=1)
    extra = f"; did you mean {hint[0]!r}?" if hint else ""
    raise InvalidArgumentError(f"argument `model`: unknown model {name!r}; use one of {', '.join(MODEL_NAMES)}{extra}")


def _model_key(model: Any) -> str:
    if hasattr(model, "cache_key") and callable(model.cache_key):
        key = str(model.cache_key())
    elif hasattr(model, "get_params"):
        try:
            params = model.get_params(deep=True)
            key = type(model).__module__ + "." + type(model).__qualname__ + repr(sorted((k, repr(v)) for k, v in params.items()))
        except Exception:  # noqa: BLE001 - fall back to repr for odd estimators
            key = repr(model)
    else:
        key = type(model).__qualname__ + repr(model)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _resolve(model: Any, seed: Any = 0) -> Any:
    """A model name (see :func:`make_model`) becomes the model; anything else passes through."""
    if isinstance(model, str):
        seed = seed if isinstance(seed, (int, np.integer)) or seed is None else 0
        return make_model(model, seed=None if seed is None else int(seed))
    return model


def _check_model(model: Any) -> None:
    if isinstance(model, _NLSModel):
        return
    if isinstance(model, type):
        raise InvalidArgumentError(f"argument `model` is the class {model.__name__}; pass an instance, "
                                   f"e.g. {model.__name__}()")
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "predict", None))):
        raise InvalidArgumentError("argument `model` must be an EU or CPT model, a scikit-learn estimator, or an "
                                   f"object with fit(X, y) and predict(X) methods; got {type(model).__name__}")


def _fresh(model: Any) -> Any:
    if isinstance(model, DomainCV):
        return DomainCV(model.estimator, model.param_grid)
    try:
        from sklearn.base import clone

        return clone(model)
    except Exception:  # noqa: BLE001 - not a scikit-learn estimator
        return copy.deepcopy(model)


def _fit_eval_generic(model: Any, X: np.ndarray, y: np.ndarray, offsets: np.ndarray, train_rows) -> np.ndarray:
    """Fit a fresh copy on ``train_rows`` and return the MSE on every domain."""
    est = _fresh(model)
    if getattr(est, "_needs_groups", False):
        domain_of_row = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
        est.fit(X[train_rows], y[train_rows], groups=domain_of_row[train_rows])
    else:
        est.fit(X[train_rows], y[train_rows])
    pred = np.asarray(est.predict(X), dtype=np.float64).reshape(-1)
    if pred.shape[0] != y.shape[0]:
        raise ComputationError(f"model.predict returned {pred.shape[0]} predictions for {y.shape[0]} rows")
    sq = (pred - y) ** 2
    sums = np.add.reduceat(sq, offsets[:-1])
    return sums / np.diff(offsets)


def _fit_eval_batch(model: Any, X: np.ndarray, y: np.ndarray, offsets: np.ndarray, batch: list) -> np.ndarray:
    """:func:`_fit_eval_generic` for each training-row selection of ``batch`` in turn: one task
    carries many small fits (the data and the model travel once), ``(len(batch), domains)`` MSEs."""
    return np.vstack([_fit_eval_generic(model, X, y, offsets, rows) for rows in batch])
