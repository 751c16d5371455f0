"""The point estimates of the regressions (docs/methods/ppi.md §3.1): weighted least squares for OLS
(the imputed regression plus the rectifier regression) and Newton's method with a backtracking
line search on the rectified loss for the logistic and Poisson models, both in the Rust core
(``rust/ppi/qr.rs``, ``rust/ppi/glm.rs``).

The rectified loss with weight ``lam`` is, for a canonical-link family with cumulant ``b``,

    L(theta) = lam/N sum_j w~_j [b(x~_j'theta) - Yhat~_j x~_j'theta]
             + 1/n sum_i w_i [(1 - lam) b(x_i'theta) - (Y_i - lam Yhat_i) x_i'theta],

convex for ``lam`` in [0, 1] (its Hessian does not involve the outcomes), so Newton's method
started anywhere reaches its minimiser when there is one. Where there is none (a logistic fit on
separated data: the coefficients run off to infinity) the fit stops with :class:`NoFiniteFit`.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from .. import _core

__all__ = ["ETA_LIMIT", "MAX_ITER", "NoFiniteFit", "fit_rectified", "wls"]

#: a linear predictor beyond this size means probabilities of 0 / 1 to machine precision: the fit
#: is running off (separation), not converging (the kernel's constant, repeated for the docs)
ETA_LIMIT = 35.0
MAX_ITER = 200


class NoFiniteFit(Exception):
    """The rectified loss has no finite minimiser (or Newton's method could not find it)."""


def _c(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def wls(X: np.ndarray, targets: list[np.ndarray], w: np.ndarray) -> np.ndarray:
    """Weighted least squares ``(X'WX)^-1 X'W t`` for each target ``t`` (rows of the result), by
    one Householder QR of ``W^1/2 X`` over row chunks (Rust) and a triangular solve (weights as
    given; the solution does not depend on their scale). ``X`` has full column rank (checked with
    the inputs).

    >>> wls(np.column_stack([np.ones(3), [0.0, 1.0, 2.0]]), [np.array([1.0, 3.0, 5.0])], np.ones(3)).round(12).tolist()
    [[1.0, 2.0]]
    """
    R, qtb = _core.ppi_qr(_c(X), _c(w), _c(np.vstack(targets)))
    return solve_triangular(R, qtb.T, lower=False).T


def fit_rectified(family: str, X: np.ndarray, y: np.ndarray, yhat: np.ndarray, w: np.ndarray,
                  X_unlabeled: np.ndarray, yhat_unlabeled: np.ndarray, w_unlabeled: np.ndarray, lam: float,
                  start: np.ndarray | None = None) -> np.ndarray:
    """The minimiser of the rectified loss with weight ``lam`` (module docstring) by Newton's
    method from ``start`` (zeros by default): full steps where they decrease the loss, else halved
    (Armijo); converged when a step is below 1e-10 of the coefficients' size (one more step is
    taken, so the error is of the order of its square). Raises :class:`NoFiniteFit` when the
    Hessian is singular, the line search finds no decrease, the linear predictor runs past +-35 on
    a logistic fit or the iterations run out. One pass over the rows per step (Rust, parallel over
    row chunks; the same result for any thread count).

    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]]); y = np.array([0.0, 1.0, 0.0, 1.0])
    >>> fit_rectified("logistic", X, y, y, np.ones(4), X, y, np.ones(4), 0.0).round(6).tolist()
    [-1.362276, 0.908184]
    """
    theta, reason = _core.ppi_fit_glm(family, _c(X), _c(y), _c(yhat), _c(w), _c(X_unlabeled), _c(yhat_unlabeled),
                                      _c(w_unlabeled), float(lam), None if start is None else _c(start))
    if theta is None:
        raise NoFiniteFit(reason)
    return theta
