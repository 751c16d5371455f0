"""Temperature, Platt and isotonic recalibration of risk scores, cross-fitted."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from .._validation import as_float_array, check_choice, check_int
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ._metrics import _yr

#: a fitted temperature above this has run off to infinity: the logits over T then span under 1.4%
#: (|log 1e-6| / 1000), the recalibrated probabilities are uniform to that precision, and the fit warns
RUNAWAY_TEMPERATURE = 1e3


def warn_runaway_temperature(t: float, who: str, stacklevel: int) -> None:
    """Warn that a temperature fit ran off (docs/methods/survey.md §2.1): the likelihood keeps rising
    as T grows, which happens when the predictions carry no signal about the answers (or point
    away from them) on the fitting rows."""
    if t > RUNAWAY_TEMPERATURE:
        warnings.warn(
            f"{who}: the fit ran off (T = {t:.3g}): the likelihood keeps rising as T grows, so on these rows the "
            f"probabilities carry no signal about the answers (or point away from them), and the recalibrated "
            f"probabilities are uniform; check the pairing of the answers and the probabilities, or fit on more "
            f"rows", LLMSurrogateWarning, stacklevel=stacklevel + 1)


def _logit(r: np.ndarray) -> np.ndarray:
    p = np.clip(r, 1e-6, 1 - 1e-6)
    return np.log(p) - np.log1p(-p)


@dataclasses.dataclass(frozen=True)
class Recalibrator:
    """A fitted map from raw scores to recalibrated scores (call it on scores).

    Usually made by :func:`fit_recalibrator`; ``method`` is ``"temperature"``, ``"platt"`` or
    ``"isotonic"`` and ``params`` its fitted parameters.

    Examples
    --------
    >>> rec = Recalibrator("temperature", {"temperature": 2.0})  # r -> sigmoid(logit(r) / 2)
    >>> rec([0.9, 0.5]).round(4)
    array([0.75, 0.5 ])
    """

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
    ``isotonic`` (PAV, sklearn) by maximum likelihood on labelled data.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> rec = fit_recalibrator(y, r, "temperature")
    >>> rec.method, round(rec.params["temperature"], 2)  # T < 1: the scores were under-confident
    ('temperature', 0.43)
    >>> fit_recalibrator(y, r, "isotonic")([0.1, 0.45, 0.9]).round(3)
    array([0.   , 0.333, 1.   ])
    """
    check_choice(method, "method", ["temperature", "platt", "isotonic"])
    yy, rr = _yr(y, scores)
    z = _logit(rr)

    def nll(a, b):
        t = a * z + b
        return float(np.sum(np.logaddexp(0, t) - yy * t))

    from scipy.optimize import (
        minimize,  # heavy; loaded by the first fit, not by importing the package
    )

    if method == "temperature":
        res = minimize(lambda v: nll(np.exp(-v[0]), 0.0), x0=[0.0], method="Nelder-Mead",
                       options={"xatol": 1e-8, "fatol": 1e-10})
        t = float(np.exp(res.x[0]))
        warn_runaway_temperature(t, 'fit_recalibrator(method="temperature")', stacklevel=2)
        return Recalibrator("temperature", {"temperature": t})
    if method == "platt":
        res = minimize(lambda v: nll(v[0], v[1]), x0=[1.0, 0.0], method="BFGS")
        return Recalibrator("platt", {"a": float(res.x[0]), "b": float(res.x[1])})
    from sklearn.isotonic import (
        IsotonicRegression,  # heavy; only the isotonic method needs it
    )

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(rr, yy)
    return Recalibrator("isotonic", {"x": iso.X_thresholds_.tolist(), "y": iso.y_thresholds_.tolist()})


def recalibrate(y, scores, method: str = "platt", *, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Cross-fitted recalibrated scores: each row is mapped by a recalibrator fitted on the other
    folds (no row is recalibrated with its own label).

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0]
    >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2]
    >>> recalibrate(y, r, "isotonic", folds=2).round(2)
    array([0.  , 0.  , 0.5 , 0.5 , 0.5 , 0.  , 0.  , 0.33, 0.5 , 0.  ])
    """
    check_choice(method, "method", ["temperature", "platt", "isotonic"])
    yy, rr = _yr(y, scores)
    seed = check_int(seed, "seed", minimum=0, maximum=2**64 - 1)
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
