"""Economic models of certainty equivalents for two-outcome lotteries (scikit-learn style).

Andrews, Fudenberg, Lei, Liang & Wu (2025), Section 5.2; ``docs/methods/transfer.md`` §6.2, A11. A lottery
pays ``z1`` with probability ``p`` and ``z2`` otherwise (``|z1| >= |z2|`` in the application); the
models predict the certainty equivalent and are fitted by nonlinear least squares (minimum mean
squared error) in the Rust core: a bounded Levenberg–Marquardt with several starting points,
keeping the best (``rust/transfer/nls.rs``).

* :class:`EU` -- expected utility with CRRA (isoelastic, ``utility="crra"``, parameter ``eta``)
  or exponential (CARA, ``utility="cara"``, parameter ``a``) utility.
* :class:`CPT` -- cumulative prospect theory with value function ``z^alpha`` (gains) and
  ``-(-z)^beta`` (losses) and weighting ``w(p) = delta p^gamma / (delta p^gamma + (1-p)^gamma)``
  (Goldstein–Einhorn / Lattimore et al.), any subset of ``alpha, beta, delta, gamma`` free
  (``free="abdg"``, ``"g"``, ``"ab"``, ...), the others fixed (default 1).

``X`` is an ``(m, 3)`` array of ``(z1, z2, p)`` or a frame with columns ``z1``, ``z2`` and ``p1``
(or ``p``).

>>> import numpy as np
>>> m = EU().fit(np.array([[10.0, 0.0, 0.5]]), np.array([3.0]))
>>> round(m.eta_, 5), round(float(m.predict(np.array([[20.0, 10.0, 0.1]]))[0]), 3)
(0.42428, 10.867)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import _core
from .._positions import at, located
from .._validation import as_float_array, as_frame, check_choice, check_int
from ..exceptions import ConvergenceError, InvalidArgumentError, ShapeError

__all__ = ["EU", "CPT", "lottery_arrays"]

_CPT_NAMES = ("alpha", "beta", "delta", "gamma")
#: Revision of the Rust fitting procedure, part of the cache key so that a cache written by an earlier
#: procedure is not reused: 2 = most restricted fit for unidentified parameters, expm1/log1p CPT CE.
_NLS_REVISION = 2
_CPT_LETTERS = {"a": 0, "b": 1, "d": 2, "g": 3}


def lottery_arrays(X: Any, name: str = "X") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(z1, z2, p)`` as float64 arrays from an ``(m, 3)`` array or a frame with z1, z2, p1 (or p)."""
    if isinstance(X, pd.DataFrame) or type(X).__module__.split(".")[0] == "polars" or isinstance(X, dict):
        frame = as_frame(X, name)
        pcol = "p1" if "p1" in frame.columns else "p"
        missing = [c for c in ("z1", "z2", pcol) if c not in frame.columns]
        if missing:
            raise InvalidArgumentError(f"argument `{name}` needs columns z1, z2 and p1 (or p); missing {missing}")
        cols = [frame[c] for c in ("z1", "z2", pcol)]
        out = tuple(as_float_array(c, f"{name}[{c.name!r}]", allow_nan=False) for c in cols)
    else:
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"argument `{name}` must be a numeric (m, 3) array of z1, z2, p; {err}") from err
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise ShapeError(f"argument `{name}` must have shape (m, 3) with columns z1, z2, p; got {arr.shape}")
        if arr.shape[0] == 0:
            raise InvalidArgumentError(f"argument `{name}` has no rows")
        out = tuple(as_float_array(np.ascontiguousarray(arr[:, j]), name, allow_nan=False) for j in range(3))
    p = out[2]
    if np.any((p < 0) | (p > 1)):
        i = int(np.flatnonzero((p < 0) | (p > 1))[0])
        raise InvalidArgumentError(located(f"argument `{name}`: probability p must lie in [0, 1]; got {p[i]} in ",
                                           at(i, "row")))
    return out  # type: ignore[return-value]


class _NLSModel:
    """Shared fit/predict through the Rust core."""

    _family: str = ""

    # --- to be provided by subclasses ------------------------------------------------------------
    def _spec(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def _set_fitted(self, theta: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError

    # --- scikit-learn protocol -------------------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._param_names}

    def set_params(self, **params) -> "_NLSModel":
        for k, v in params.items():
            if k not in self._param_names:
                raise InvalidArgumentError(f"{type(self).__name__} has no parameter {k!r}; valid: {list(self._param_names)}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._param_names)
        return f"{type(self).__name__}({args})"

    def cache_key(self) -> str:
        """A string that identifies the fitting procedure (used by resumable builds)."""
        theta, free, lower, upper, starts = self._spec()
        return (f"{self._family}|theta={theta.tolist()}|free={free.tolist()}|lower={lower.tolist()}|"
                f"upper={upper.tolist()}|starts={starts.tolist()}|max_iter={self.max_iter}|nls={_NLS_REVISION}")

    def _fit_domains(self, z1, z2, p, y, offsets, subsets, n_jobs=None) -> dict:
        theta, free, lower, upper, starts = self._spec()
        max_iter = check_int(self.max_iter, "max_iter", minimum=1)
        return _core.transfer_nls_fit_subsets(self._family, theta, free, lower, upper, starts, z1, z2, p, y,
                                     np.ascontiguousarray(offsets, dtype=np.int64),
                                     np.ascontiguousarray(subsets, dtype=np.int64), max_iter=max_iter, n_jobs=n_jobs)

    def fit(self, X: Any, y: Any) -> "_NLSModel":
        """Least-squares fit on lotteries ``X`` and certainty equivalents ``y``; returns ``self``."""
        z1, z2, p = lottery_arrays(X)
        yy = as_float_array(y, "y", allow_nan=False)
        if yy.size != z1.size:
            raise ShapeError(f"`X` has {z1.size} rows but `y` has {yy.size} values")
        out = self._fit_domains(z1, z2, p, yy, np.array([0, yy.size]), np.zeros((1, 1)))
        self.theta_ = out["theta"][0]
        self.train_mse_ = float(out["train_mse"][0])
        self.converged_ = bool(out["converged"][0])
        self.n_iter_ = int(out["iterations"][0])
        self.status_ = out["status"][0]
        if not np.isfinite(self.train_mse_):
            raise ConvergenceError(f"{self!r}: the model is undefined on these data at every starting point "
                                   f"({self.status_}); check for mixed gain/loss lotteries with eta >= 1")
        self._set_fitted(self.theta_)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted certainty equivalents."""
        if not hasattr(self, "theta_"):
            raise InvalidArgumentError(f"{type(self).__name__} is not fitted yet; call fit(X, y) first")
        z1, z2, p = lottery_arrays(X)
        return _core.transfer_nls_predict(self._family, np.ascontiguousarray(self.theta_, dtype=np.float64), z1, z2, p)

    def score(self, X: Any, y: Any) -> float:
        """Negative mean squared error (higher is better, as scikit-learn expects)."""
        yy = as_float_array(y, "y", allow_nan=False)
        return -float(np.mean((self.predict(X) - yy) ** 2))


def _as_bounds(bounds, default, name):
    if bounds is None:
        return default
    try:
        lo, hi = (float(bounds[0]), float(bounds[1]))
    except (TypeError, ValueError, IndexError) as err:
        raise InvalidArgumentError(f"argument `{name}` must be a pair (lower, upper); got {bounds!r}") from err
    if not lo <= hi:
        raise InvalidArgumentError(f"argument `{name}`: lower bound {lo} exceeds upper bound {hi}")
    return lo, hi


class EU(_NLSModel):
    """Expected utility with CRRA (``utility="crra"``) or exponential/CARA (``"cara"``) utility.

    CRRA (paper Section 5.2): ``v(z) = (z^(1-eta) - 1)/(1-eta)`` (``ln z`` at ``eta = 1``), mirrored
    for losses; ``eta`` in ``bounds`` (default ``(0, 100)``, the paper's ``eta >= 0``). The CE is
    computed in a form that is continuous through ``eta = 1`` and exact at a zero prize. For mixed
    lotteries (a gain and a loss), where the paper's ``v`` is not monotone, the odd power utility
    ``sign(z)|z|^(1-eta)`` is used, which is defined for ``eta < 1`` only.

    ``zero_prize="authors"`` reproduces the authors' replication code (chaofengwu/TransferPerf),
    which, for a lottery with a prize of exactly 0, computes ``(p z1^(1-eta) + (1-p))^(1/(1-eta))``,
    i.e. counts the zero prize as 1; this is what the published ``EU_iso`` matrices use. The default
    ``"paper"`` is the formula printed in the paper (``CE = z1 p^(1/(1-eta))`` for ``(z1, 0, p)``).

    CARA (``EU_expo`` of the authors' data, undocumented in the paper): ``u(z) = (1 - e^(-a z))/a``,
    CE ``= -ln(p e^(-a z1) + (1-p) e^(-a z2)) / a``, ``a`` in ``bounds`` (default ``(-1, 1)``).

    Fitted attributes: ``eta_`` or ``a_``, ``theta_``, ``train_mse_``, ``converged_``, ``n_iter_``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[10.0, 0.0, 0.5], [20.0, 0.0, 0.5], [10.0, 0.0, 0.9], [20.0, 5.0, 0.2]])  # z1, z2, p
    >>> m = EU().fit(X, [4.0, 8.0, 8.5, 7.0])
    >>> round(m.eta_, 3), np.round(m.predict(X), 2).tolist()
    (0.254, [3.95, 7.9, 8.68, 7.57])
    """

    _param_names = ("utility", "bounds", "starts", "zero_prize", "max_iter")

    def __init__(self, utility: str = "crra", bounds=None, starts=None, zero_prize: str = "paper", max_iter: int = 500):
        self.utility = utility
        self.zero_prize = zero_prize
        self.bounds = bounds
        self.starts = starts
        self.max_iter = max_iter

    @property
    def _family(self) -> str:  # type: ignore[override]
        utility = check_choice(self.utility, "utility", ["crra", "cara"])
        zero = check_choice(self.zero_prize, "zero_prize", ["paper", "authors"])
        if utility == "crra" and zero == "authors":
            return "eu_crra_authors"
        return "eu_" + utility

    def _spec(self):
        crra = self._family != "eu_cara"
        lo, hi = _as_bounds(self.bounds, (0.0, 100.0) if crra else (-1.0, 1.0), "bounds")
        default_starts = [0.2, 0.8, 2.0, 10.0] if crra else [0.0, 0.01, -0.01, 0.1]
        starts = default_starts if self.starts is None else list(np.atleast_1d(np.asarray(self.starts, dtype=float)))
        starts = np.clip(np.asarray(starts, dtype=np.float64), lo, hi).reshape(-1, 1)
        return (np.array([0.5 if crra else 0.0]), np.array([0], dtype=np.int64), np.array([lo]), np.array([hi]),
                np.ascontiguousarray(starts))

    def _set_fitted(self, theta):
        if self._family != "eu_cara":
            self.eta_ = float(theta[0])
        else:
            self.a_ = float(theta[0])

    @property
    def params_(self) -> dict:
        return {"eta" if self._family != "eu_cara" else "a": float(self.theta_[0])}


class CPT(_NLSModel):
    """Cumulative prospect theory (paper eqs. 9-10) with the parameters in ``free`` estimated.

    ``free`` is a string of letters a (alpha), b (beta), d (delta), g (gamma), e.g. ``"abdg"`` (full
    CPT), ``"g"``, ``"ab"``, ``"dg"``, ``"abg"``; the other parameters are fixed at the values given
    (default 1). Bounds follow the paper's ``alpha, beta, gamma in [0, 1]``, ``delta >= 0``, with a
    small positive lower bound (``eps``, default 1e-8, the bound of the authors' replication code
    chaofengwu/TransferPerf) where the value function would not be invertible, and
    ``delta <= delta_max`` (default 1e6).

    Parameters the training data do not identify (beta on gains-only data; gamma when every
    lottery has p = 1/2; alpha and delta jointly when all lotteries share one probability and a
    zero second prize) are reported at their defaults whenever that leaves the training MSE
    unchanged (relative 1e-13): the fit is the most restricted model that attains the minimum, so
    it does not depend on the starting points (docs/methods/transfer.md, "Building the tables
    from raw data").

    Fitted attributes: ``alpha_``, ``beta_``, ``delta_``, ``gamma_``, ``theta_``, ``train_mse_``,
    ``converged_``, ``n_iter_``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[10.0, 0.0, 0.1], [10.0, 0.0, 0.5], [10.0, 0.0, 0.9], [20.0, 0.0, 0.1]])  # z1, z2, p
    >>> m = CPT(free="g").fit(X, [2.0, 5.0, 7.0, 4.0])  # small p overweighted, large p underweighted
    >>> round(m.gamma_, 3), m.alpha_, np.round(m.predict(X), 2).tolist()
    (0.585, 1.0, [2.17, 5.0, 7.83, 4.33])
    """

    _family = "cpt"
    _param_names = ("free", "alpha", "beta", "delta", "gamma", "eps", "delta_max", "starts", "max_iter")

    def __init__(self, free: str = "abdg", alpha: float = 1.0, beta: float = 1.0, delta: float = 1.0,
                 gamma: float = 1.0, eps: float = 1e-8, delta_max: float = 1e6, starts=None, max_iter: int = 500):
        self.free = free
        self.alpha = alpha
        self.beta = beta
        self.delta = delta
        self.gamma = gamma
        self.eps = eps
        self.delta_max = delta_max
        self.starts = starts
        self.max_iter = max_iter

    def _free_index(self) -> list[int]:
        if not isinstance(self.free, str) or any(c not in _CPT_LETTERS for c in self.free) or \
                len(set(self.free)) != len(self.free):
            raise InvalidArgumentError(f"argument `free` must be a string of distinct letters from 'abdg' "
                                       f"(alpha, beta, delta, gamma), e.g. 'abdg' or 'g'; got {self.free!r}")
        return sorted(_CPT_LETTERS[c] for c in self.free)

    def _spec(self):
        free = self._free_index()
        theta = np.array([self.alpha, self.beta, self.delta, self.gamma], dtype=np.float64)
        if not np.all(np.isfinite(theta)) or np.any(theta <= 0):
            raise InvalidArgumentError(f"fixed CPT parameters must be finite and > 0; got {theta.tolist()}")
        eps = float(self.eps)
        if not 0 < eps < 1:
            raise InvalidArgumentError(f"argument `eps` must lie in (0, 1); got {eps}")
        lower_all = np.array([eps, eps, eps, eps])
        upper_all = np.array([1.0, 1.0, float(self.delta_max), 1.0])
        if self.starts is None:
            grid = np.array([[0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0], [0.8, 0.8, 0.8, 0.6],
                             [0.3, 0.3, 2.0, 0.3], [0.02, 0.02, 20.0, 0.7]])
            starts = grid[:, free]
        else:
            starts = np.atleast_2d(np.asarray(self.starts, dtype=np.float64))
            if starts.shape[1] != len(free):
                raise ShapeError(f"argument `starts` needs {len(free)} columns (one per free parameter); "
                                 f"got shape {starts.shape}")
        lo, hi = lower_all[free], upper_all[free]
        starts = np.clip(starts, lo, hi)
        return (theta, np.array(free, dtype=np.int64), np.ascontiguousarray(lo), np.ascontiguousarray(hi),
                np.ascontiguousarray(starts))

    def _set_fitted(self, theta):
        for name, v in zip(_CPT_NAMES, theta):
            setattr(self, name + "_", float(v))

    @property
    def params_(self) -> dict:
        return {name: float(v) for name, v in zip(_CPT_NAMES, self.theta_)}
