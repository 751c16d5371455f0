"""The variance of ppi.ols's estimate written out in numpy, for the tests that check it
(docs/methods/ppi.md §3.2): the estimate at lambda is ``b(y - lam yhat) + lam b~(yhat~)``, the sum
of two weighted least-squares fits, each with its own sample's influence rows."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm


def _wls(A, t, w):
    return np.linalg.solve((A * w[:, None]).T @ A, (A * w[:, None]).T @ t)


def own_fit_rows(A, t, w=None) -> np.ndarray:
    """The influence rows ``(A'WA/m)^-1 w_i a_i e_i`` of the weighted least-squares fit of ``t`` on
    ``A`` (``e``: its residuals; ``w``: weights summing to the rows, None for ones)."""
    A, t = np.asarray(A, dtype=float), np.asarray(t, dtype=float)
    w = np.ones(t.size) if w is None else np.asarray(w, dtype=float)
    e = t - A @ _wls(A, t, w)
    return (A * (w * e)[:, None]) @ np.linalg.inv((A * w[:, None]).T @ A / t.size)


def ols_interval(X, y, yhat, X_u, yhat_u, lam: float, alpha: float, w=None, w_u=None):
    """``(low, high, estimate)`` at ``lam``: the z-interval with the variance
    ``Var(psi_y - lam psi_yhat)/n + lam^2 Var(psi~)/N`` (ddof 1)."""
    y, yhat_u = np.asarray(y, dtype=float), np.asarray(yhat_u, dtype=float)
    n, N = y.size, yhat_u.size
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    w_u = np.ones(N) if w_u is None else np.asarray(w_u, dtype=float)
    est = _wls(X, y - lam * np.asarray(yhat, dtype=float), w) + lam * _wls(X_u, yhat_u, w_u)
    var = (np.var(own_fit_rows(X, y, w) - lam * own_fit_rows(X, yhat, w), axis=0, ddof=1) / n
           + lam ** 2 * np.var(own_fit_rows(X_u, yhat_u, w_u), axis=0, ddof=1) / N)
    z = norm.ppf(1 - alpha / 2)
    return est - z * np.sqrt(var), est + z * np.sqrt(var), est
