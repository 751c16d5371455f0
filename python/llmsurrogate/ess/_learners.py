"""Comparison learning algorithms for block-out CV: the paper's Appendix C models (lasso, L1 logit,
random forest) with per-N tuning and the small-N safeguards of docs/methods/ess.md §8.5, plus any scikit-learn
estimator or pipeline, and two native learners used by the validation designs (block mean,
majority vote).

Hyperparameter grids the paper does not give are the package's choice (docs/methods/ess.md §8.4):
``max_depth`` in {3, 5, 10, None} x ``min_samples_leaf`` in {1, 5, 20} for random forests (3-fold
CV, scored by squared error or accuracy), ``C`` in {0.01, 0.1, 1, 10, 100} for the L1 logit
(stratified CV), ``LassoCV`` with 5 folds (sklearn's default path of 100 alphas).

Safeguards (docs/methods/ess.md §8.5): with too few points for k-fold CV the lasso uses its most regularised
member (intercept only, i.e. the block mean). The number of (stratified) folds is min(default, N // 2) for regression and
min(3, smallest class count) for classification; with fewer than 2 folds the defaults are used. A
block whose training outcomes are all equal (one class, or N = 1) predicts that value for
everyone, which is what every built-in algorithm does on such data anyway.
"""

from __future__ import annotations

import copy
import difflib
import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import as_float_array, check_int
from ..exceptions import InvalidArgumentError
from ._fast_predict import fast_predict

# scikit-learn is imported inside the methods that fit: it is heavy, and the native learners
# ("mean", "majority") need none of it.

RF_GRID = {"max_depth": [3, 5, 10, None], "min_samples_leaf": [1, 5, 20]}
LOGIT_C_GRID = [0.01, 0.1, 1.0, 10.0, 100.0]
BUILTIN = ("lasso", "logit_l1", "rf", "mean", "majority")


def block_seed(seed: int | None, n_train: int, b: int) -> int:
    """Seed of the fit of block ``b`` at training size ``n_train`` (documented, stable)."""
    ss = np.random.SeedSequence([0 if seed is None else int(seed), int(n_train), int(b), 0xE55])
    return int(ss.generate_state(1)[0] & 0x7FFFFFFF)


def _logit(C: float, seed: int):
    from sklearn.linear_model import LogisticRegression

    params = inspect.signature(LogisticRegression).parameters
    if params["penalty"].default == "deprecated":  # scikit-learn >= 1.8
        return LogisticRegression(C=C, l1_ratio=1.0, solver="saga", max_iter=2000, random_state=seed)
    return LogisticRegression(C=C, penalty="l1", solver="saga", max_iter=2000, random_state=seed)


@dataclass
class Learner:
    """A comparison algorithm: how to tune it at size N and how to fit a block.

    ``output`` is "value" (regression), "label" (hard classes), "proba" (P(y = 1)) or "probs" (the
    probabilities of the ``n_classes`` classes coded 0..K-1, a multiclass loss: docs/methods/ess.md §1.6).
    """

    name: str
    output: str
    estimator: Any = None          # a scikit-learn estimator for custom algorithms
    options: dict = field(default_factory=dict)
    n_classes: int = 0             # K, for output "probs"

    @property
    def is_classifier(self) -> bool:
        return self.output in ("label", "proba", "probs")

    # -- tuning -------------------------------------------------------------------------------
    def tune(self, X: np.ndarray, y: np.ndarray, seed: int) -> dict:
        """Hyperparameters chosen by k-fold CV on (X, y) (a tuning subset or one block). Only the
        choice is kept, so the grid search does not refit the winner (``refit=False``)."""
        from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

        n = len(y)
        if self.name in ("mean", "majority"):
            return {}
        if self.is_classifier:
            _, counts = np.unique(y, return_counts=True)
            folds = min(3, int(counts.min())) if counts.size > 1 else 0
            cv = StratifiedKFold(folds, shuffle=True, random_state=seed) if folds >= 2 else None
        else:
            folds = min(5 if self.name == "lasso" else 3, n // 2)
            if np.ptp(y) == 0:
                folds = 0
            cv = KFold(folds, shuffle=True, random_state=seed) if folds >= 2 else None
        if cv is None:
            # too few points for k-fold CV: the lasso falls back to its most regularised member
            # (intercept only: the block mean); the others keep their defaults
            return {"alpha": None} if self.name == "lasso" else {}
        if self.name == "lasso":
            from sklearn.linear_model import LassoCV
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            model = make_pipeline(StandardScaler(), LassoCV(cv=cv, random_state=seed, max_iter=5000))
            model.fit(X, y)
            return {"alpha": float(model[-1].alpha_)}
        if self.name == "rf":
            grid = self.options.get("param_grid", RF_GRID)
            est = self._rf(seed=seed)
            scoring = "accuracy" if self.is_classifier else "neg_mean_squared_error"
            if self.output == "proba":
                scoring = "neg_brier_score" if len(np.unique(y)) == 2 else "neg_log_loss"
            elif self.output == "probs":  # K = 2 as the binary losses (the codes 0/1 are the labels 0/1)
                scoring = "neg_brier_score" if self.n_classes == 2 else "neg_log_loss"
            gs = GridSearchCV(est, grid, cv=cv, scoring=scoring, n_jobs=1, error_score="raise", refit=False)
            gs.fit(X, y)
            return dict(gs.best_params_)
        if self.name == "logit_l1":
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            grid = {"logisticregression__C": self.options.get("C_grid", LOGIT_C_GRID)}
            est = make_pipeline(StandardScaler(), _logit(1.0, seed))
            scoring = "accuracy" if self.output == "label" else "neg_log_loss"
            gs = GridSearchCV(est, grid, cv=cv, scoring=scoring, n_jobs=1, refit=False)
            gs.fit(X, y)
            return {"C": float(gs.best_params_["logisticregression__C"])}
        grid = self.options.get("param_grid")
        if grid:
            from sklearn.base import clone

            gs = GridSearchCV(clone(self.estimator), grid, cv=cv, n_jobs=1, refit=False)
            gs.fit(X, y)
            return dict(gs.best_params_)
        return {}

    def tuning_settings(self) -> int | None:
        """How many hyperparameter settings :meth:`tune` compares: 12 for the default random forest
        grid, 5 for the L1 logit, ``None`` for the lasso (LassoCV fits a path of 100 alphas per fold),
        0 when nothing is tuned.

        >>> Learner("rf", "value").tuning_settings(), Learner("logit_l1", "proba").tuning_settings()
        (12, 5)
        """
        if self.name in ("mean", "majority"):
            return 0
        if self.name == "lasso":
            return None
        if self.name == "logit_l1":
            return len(self.options.get("C_grid", LOGIT_C_GRID))
        grid = self.options.get("param_grid", RF_GRID if self.name == "rf" else None)
        if not grid:
            return 0
        return sum(int(np.prod([len(v) for v in g.values()])) for g in (grid if isinstance(grid, list) else [grid]))

    def tuning_folds(self, n_train: int) -> int:
        """The most CV folds :meth:`tune` uses on ``n_train`` points (classifiers: fewer when the
        smallest class has fewer than 3 members; 0: too few points, nothing is tuned)."""
        folds = min(5 if self.name == "lasso" else 3, n_train // 2)
        return folds if folds >= 2 else 0

    def describe(self) -> str:
        """What one fit is, in words: ``"a random forest of 300 trees"``."""
        if self.name == "rf":
            return f"a random forest of {int(self.options.get('n_estimators', 300))} trees"
        return {"lasso": "a lasso", "logit_l1": "an L1 logit", "mean": "a block mean",
                "majority": "a majority vote"}.get(self.name, f"a {self.name}")

    # -- fitting --------------------------------------------------------------------------------
    def _rf(self, seed: int, **params):
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        cls = RandomForestClassifier if self.is_classifier else RandomForestRegressor
        kw = {"n_estimators": int(self.options.get("n_estimators", 300)), "n_jobs": 1, "random_state": seed}
        kw.update(params)
        return cls(**kw)

    def make(self, params: dict, seed: int):
        """A fresh, unfitted estimator with ``params``; ``seed`` becomes scikit-learn's ``random_state``."""
        from sklearn.base import clone

        if self.name == "rf":
            return self._rf(seed, **params)
        if self.name == "lasso":
            from sklearn.linear_model import Lasso
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            return make_pipeline(StandardScaler(), Lasso(alpha=params.get("alpha", 1.0), max_iter=5000))
        if self.name == "logit_l1":
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            return make_pipeline(StandardScaler(), _logit(params.get("C", 1.0), seed))
        try:
            est = clone(self.estimator)
        except (TypeError, AttributeError, RuntimeError):
            est = copy.deepcopy(self.estimator)
        if params:
            est.set_params(**params)
        try:
            if "random_state" in est.get_params(deep=False):
                est.set_params(random_state=seed)
        except Exception:  # pragma: no cover - exotic estimators
            pass
        return est

    def fit_predict(self, Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray, params: dict,
                    seed: int, tuning: str) -> tuple[np.ndarray, bool]:
        """Predictions on ``Xte`` of the rule fitted to the block; second value: constant shortcut used."""
        m = len(Xte)
        if self.output == "probs" and self.name in ("mean", "majority"):
            return self._native_probs(ytr, m, seed), False
        if self.name == "mean":
            return np.full(m, float(np.mean(ytr))), False
        if self.name == "majority":
            ones = float(np.sum(ytr == 1))
            zeros = len(ytr) - ones
            if ones == zeros:
                label = float(np.random.default_rng(seed).integers(0, 2))
            else:
                label = 1.0 if ones > zeros else 0.0
            return np.full(m, label), False
        if self.name == "lasso" and "alpha" in params and params["alpha"] is None:
            return np.full(m, float(np.mean(ytr))), False
        if np.ptp(ytr) == 0 and (self.estimator is None or self.is_classifier):
            # one class / one value (N = 1 included): the majority-class rule of docs/methods/ess.md §8.5
            value = float(ytr[0])
            if self.output == "probs":
                return self._one_hot(int(value), m), True
            return np.full(m, value), True
        if tuning == "per_block":
            params = self.tune(Xtr, ytr, seed)
        est = self.make(params, seed)
        if self.estimator is None and hasattr(est, "steps"):
            # our own (StandardScaler, model) pipelines: the two fits Pipeline.fit makes (it
            # neither clones nor caches without `memory`), minus its routing overhead
            Xt = est.steps[0][1].fit_transform(Xtr, ytr)
            est.steps[-1][1].fit(Xt, ytr)
        else:
            est.fit(Xtr, ytr)
        if self.estimator is None:  # built-in learners: scikit-learn's numbers without its overhead
            fast = fast_predict(est, Xte, self.output)
            if fast is not None:
                return (self._class_columns(fast, est.classes_) if self.output == "probs" else fast), False
        if self.output == "probs":
            return self._class_columns(est.predict_proba(Xte), est.classes_), False
        if self.output == "proba":
            proba = est.predict_proba(Xte)
            classes = list(est.classes_)
            if 1.0 in classes or 1 in classes:
                return np.ascontiguousarray(proba[:, classes.index(1)], dtype=np.float64), False
            return np.zeros(m), False
        return np.ascontiguousarray(est.predict(Xte), dtype=np.float64), False

    # -- K class probabilities ----------------------------------------------------------------
    def _one_hot(self, code: int, m: int) -> np.ndarray:
        out = np.zeros((m, self.n_classes))
        out[:, code] = 1.0
        return out

    def _native_probs(self, ytr: np.ndarray, m: int, seed: int) -> np.ndarray:
        """The block's class shares (``"mean"``: the mean of the one-hot outcome, the block mean of
        a binary outcome when K = 2) or one-hot at its most frequent class (``"majority"``: ties drawn
        with the block's seed, as the binary majority vote draws between 0 and 1)."""
        counts = np.bincount(ytr.astype(np.intp), minlength=self.n_classes).astype(np.float64)
        if self.name == "mean":
            return np.broadcast_to(counts / len(ytr), (m, self.n_classes)).copy()
        tied = np.flatnonzero(counts == counts.max())
        code = int(tied[0]) if tied.size == 1 else int(tied[np.random.default_rng(seed).integers(0, tied.size)])
        return self._one_hot(code, m)

    def _class_columns(self, proba: np.ndarray, fitted: np.ndarray) -> np.ndarray:
        """``predict_proba``'s columns (the classes ``fitted`` of the block, ``classes_``) placed in
        the K columns of the classes 0..K-1; a class absent from the block gets probability 0 (the
        loss clips it as it clips the LLM's, docs/methods/ess.md §1.6)."""
        out = np.zeros((proba.shape[0], self.n_classes))
        out[:, np.asarray(fitted, dtype=np.float64).astype(np.intp)] = proba
        return out


#: The keys of ``algorithm_options`` each algorithm reads; any other key is an error.
OPTION_KEYS = {"rf": ("n_estimators", "param_grid"), "logit_l1": ("C_grid",), "lasso": (), "mean": (),
               "majority": ()}
CUSTOM_OPTION_KEYS = ("param_grid",)


def check_options(options: Any, algorithm: str, allowed: tuple[str, ...]) -> dict:
    """``algorithm_options`` as a dict holding only keys ``algorithm`` reads, with valid values."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InvalidArgumentError(f"argument `algorithm_options` must be a dict or None; got {type(options).__name__}")
    for key in options:
        if key not in allowed:
            hint = difflib.get_close_matches(str(key), list(allowed), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise InvalidArgumentError(
                f"argument `algorithm_options`: unknown key {key!r} for algorithm {algorithm!r} (it reads "
                f"{list(allowed) or 'no options'}){extra}")
    out = dict(options)
    if "n_estimators" in out:
        out["n_estimators"] = check_int(out["n_estimators"], "algorithm_options['n_estimators']", minimum=1)
    if "C_grid" in out:
        grid = as_float_array(out["C_grid"], "algorithm_options['C_grid']", allow_nan=False)
        if np.any(grid <= 0):
            raise InvalidArgumentError("argument `algorithm_options['C_grid']` must hold positive numbers")
        out["C_grid"] = grid.tolist()
    if "param_grid" in out:
        grid = out["param_grid"]
        grids = grid if isinstance(grid, list) else [grid]
        if not grids or not all(isinstance(g, dict) and g and all(isinstance(v, (list, tuple)) and len(v) > 0
                                                                  for v in g.values()) for g in grids):
            raise InvalidArgumentError("argument `algorithm_options['param_grid']` must be a dict (or a list of "
                                       "dicts) of parameter name -> non-empty list of values")
    return out


def resolve_learner(algorithm: Any, loss_name: str, options: dict | None, n_classes: int = 0) -> Learner:
    """The :class:`Learner` for ``algorithm`` (a name or a scikit-learn estimator) and the loss
    (``n_classes``: K of a multiclass loss, whose learners predict the K class probabilities)."""
    multiclass = loss_name.startswith("multiclass_")
    if isinstance(algorithm, str):
        if algorithm not in BUILTIN:
            raise InvalidArgumentError(
                f"argument `algorithm` must be one of {list(BUILTIN)} or a scikit-learn estimator; got {algorithm!r}")
        options = check_options(options, algorithm, OPTION_KEYS[algorithm])
        if multiclass:
            if algorithm == "lasso":
                raise InvalidArgumentError(f"algorithm='lasso' is a regression; for loss={loss_name!r} use "
                                           "algorithm='logit_l1' or algorithm='rf'")
            return Learner(algorithm, "probs", None, options, n_classes)
        if loss_name in ("zero_one",):
            output = "label"
        elif loss_name in ("brier", "log"):
            output = "proba"
        else:
            output = "value"
        if algorithm == "lasso" and output != "value":
            raise InvalidArgumentError(f"algorithm='lasso' is a regression; for loss={loss_name!r} use "
                                       "algorithm='logit_l1' or algorithm='rf'")
        if algorithm == "logit_l1" and output == "value":
            output = "proba" if loss_name in ("squared", "absolute") else "label"
        if algorithm == "majority":
            output = "label" if loss_name == "zero_one" else "value"
        return Learner(algorithm, output, None, options)
    if not (hasattr(algorithm, "fit") and hasattr(algorithm, "predict")):
        raise InvalidArgumentError(
            "argument `algorithm` must be a name ('lasso', 'logit_l1', 'rf') or an object with fit() and predict() "
            f"(a scikit-learn estimator or pipeline); got {type(algorithm).__name__}")
    from sklearn.base import is_classifier

    options = check_options(options, type(algorithm).__name__, CUSTOM_OPTION_KEYS)
    name = type(algorithm).__name__
    if multiclass:
        if not callable(getattr(algorithm, "predict_proba", None)):
            raise InvalidArgumentError(
                f"argument `algorithm`: loss {loss_name!r} scores K class probabilities, and {name} has no "
                "predict_proba(); pass a scikit-learn classifier (e.g. LogisticRegression(), "
                "RandomForestClassifier())")
        return Learner(name, "probs", algorithm, options, n_classes)
    try:
        classifier = is_classifier(algorithm)
    except (AttributeError, TypeError):
        classifier = getattr(algorithm, "_estimator_type", None) == "classifier"
    if classifier:
        output = "proba" if loss_name in ("brier", "log") else "label"
    else:
        output = "value"
    return Learner(name, output, algorithm, options)
