"""The point estimates of the regressions (docs/methods/ppi.md §3.1): weighted least squares for OLS
(the imputed regression plus the rectifier regression) and Newton's method with a backtracking
line search on the rectified loss for the logistic and Poisson models.

The rectified loss with weight ``lam`` is, for a canonical-link family with cumulant ``b``,

    L(theta) = lam/N sum_j w~_j [b(x~_j'theta) - Yhat~_j x~_j'theta]
             + 1/n sum_i w_i [(1 - lam) b(x_i'theta) - (Y_i - lam Yhat_i) x_i'theta],

convex for ``lam`` in [0, 1] (its Hessian does not involve the outcomes), so Newton's method
started anywhere reaches its minimiser when there is one. Where there is none (a logistic fit on
separated data: the coefficients run off to infinity) the fit stops with :class:`NoFiniteFit`.
"""

from __future__ import annotations

import numpy as np

from ._stats import Family

__all__ = ["NoFiniteFit", "fit_rectified", "wls"]

#: a linear predictor beyond this size means probabilities or means of 0 / 1 / inf to machine
#: precision: the fit is running off (separation), not converging
ETA_LIMIT = 35.0
MAX_ITER = 200


class NoFiniteFit(Exception):
    """The rectified loss has no finite minimiser (or Newton's method could not find it)."""


def wls(X: np.ndarray, t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least squares ``(X'WX)^-1 X'W t`` (weights as given; the solution does not depend
    on their scale).

    >>> wls(np.column_stack([np.ones(3), [0.0, 1.0, 2.0]]), np.array([1.0, 3.0, 5.0]), np.ones(3)).round(12).tolist()
    [1.0, 2.0]
    """
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], t * sw, rcond=None)
    return coef


def _objective(family: Family, theta, X, a_lab, b_lab, Xu, a_unl, t_unl) -> float:
    eta = X @ theta
    with np.errstate(over="ignore", invalid="ignore"):
        value = float(a_lab @ family.cumulant(eta) - b_lab @ eta)
        if Xu is not None:
            eta_u = Xu @ theta
            value += float(a_unl @ (family.cumulant(eta_u) - t_unl * eta_u))
    return value


def fit_rectified(family: Family, X: np.ndarray, y: np.ndarray, yhat: np.ndarray, w: np.ndarray,
                  X_unlabeled: np.ndarray, yhat_unlabeled: np.ndarray, w_unlabeled: np.ndarray, lam: float,
                  start: np.ndarray | None = None) -> np.ndarray:
    """The minimiser of the rectified loss with weight ``lam`` (module docstring) by Newton's
    method: full steps where they decrease the loss, else halved (Armijo); converged when a step is
    below 1e-10 of the coefficients' size (one more step is taken, so the error is of the order of
    its square). Raises :class:`NoFiniteFit` when the linear predictor runs past +-35 on a
    logistic fit or the iterations run out.

    >>> from llmsurrogate.ppi._stats import FAMILIES
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]]); y = np.array([0.0, 1.0, 0.0, 1.0])
    >>> fit_rectified(FAMILIES["logistic"], X, y, y, np.ones(4), X, y, np.ones(4), 0.0).round(6).tolist()
    [-1.362276, 0.908184]
    """
    n, N = X.shape[0], X_unlabeled.shape[0]
    a_lab = (1.0 - lam) * w / n            # the weight of b(eta) on a labelled row
    b_lab = w * (y - lam * yhat) / n       # the weight of eta on a labelled row
    use_unl = lam != 0
    Xu = X_unlabeled if use_unl else None
    a_unl = lam * w_unlabeled / N
    theta = np.zeros(X.shape[1]) if start is None else np.array(start, dtype=float)
    value = _objective(family, theta, X, a_lab, b_lab, Xu, a_unl, yhat_unlabeled)
    for _ in range(MAX_ITER):
        mu = family.mean(X @ theta)
        grad = X.T @ (a_lab * mu - b_lab)
        hess_w = a_lab * family.variance(mu)
        H = (X * hess_w[:, None]).T @ X
        if use_unl:
            mu_u = family.mean(Xu @ theta)
            grad = grad + Xu.T @ (a_unl * (mu_u - yhat_unlabeled))
            H = H + (Xu * (a_unl * family.variance(mu_u))[:, None]).T @ Xu
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            raise NoFiniteFit("the Hessian of the loss is singular at the current coefficients") from None
        if not np.all(np.isfinite(step)):
            raise NoFiniteFit("the Newton step is not finite")
        decrement = float(grad @ step)
        t = 1.0
        for _halving in range(60):
            candidate = theta - t * step
            new_value = _objective(family, candidate, X, a_lab, b_lab, Xu, a_unl, yhat_unlabeled)
            if np.isfinite(new_value) and (new_value <= value - 1e-4 * t * decrement
                                           or new_value - value <= 1e-13 * abs(value)):
                break
            t *= 0.5
        else:
            raise NoFiniteFit("the line search found no decrease of the loss")
        theta, value = candidate, new_value
        if family.name == "logistic" and max(np.max(np.abs(X @ theta), initial=0.0),
                                             np.max(np.abs(Xu @ theta), initial=0.0) if use_unl else 0.0) > ETA_LIMIT:
            raise NoFiniteFit(f"the linear predictor ran past {ETA_LIMIT:g} (fitted probabilities of 0 or 1)")
        if t == 1.0 and np.max(np.abs(step)) <= 1e-10 * (1.0 + np.max(np.abs(theta))):
            return theta
    raise NoFiniteFit(f"Newton's method did not converge in {MAX_ITER} iterations")
