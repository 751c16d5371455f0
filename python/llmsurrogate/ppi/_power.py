"""Planning a PPI study (docs/methods/ppi.md §12): how many human labels ``n`` (and LLM answers
``N``) reach a target interval half-width or power, from a pilot's labelled ``y`` and ``yhat``
(Broska, Howes & van Loon 2024, "The mixed subjects design"; ppi_py's ``ppi_power``), for the mean
and, through the PPI variance formula, a coefficient of an OLS, logistic or Poisson regression.

For one coordinate the pilot gives four numbers (§12.1), with ``v`` the coordinate's row of the
inverse Hessian and ``g``, ``ĝ``, ``g̃`` the per-row gradients at the classical fit (at ``y`` and
at ``yhat`` on the labelled rows, at ``yhat_unlabeled`` on the unlabelled rows; for the mean
``g = y - theta``):

    a = v' Var(g) v,   c = v' Cov(g, ĝ) v,   b = v' Var(ĝ) v,   b̃ = v' Var(g̃) v,

and the variance of the estimate from ``n`` labelled and ``N`` unlabelled rows at lambda is

    V(n, N, lam) = (a - 2 lam c + lam^2 b) / n + lam^2 b̃ / N,

minimised over lambda in [0, 1] by PPI++ (``lam = c / (b + b̃ n / N)``, clipped). For the mean with
``b̃ = b`` this is Broska et al.'s ``Var(Y)/n * (1 - rho^2 N / (n + N))``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import brentq
from scipy.stats import norm

from .._validation import check_choice, check_int, check_probability, check_real
from ..exceptions import InvalidArgumentError
from ..results import Result, Summary, result_dataclass
from ._inputs import check_coord, mean_inputs, regression_inputs
from ._regression import fit, ols_influence
from ._stats import FAMILIES, gradients, hessian

__all__ = ["PPIPlan", "pilot_pieces", "plan_variance", "power", "sample_size"]

ESTIMANDS = ("mean", "ols", "logistic", "poisson")
_FAMILY = {"ols": "linear", "logistic": "logistic", "poisson": "poisson"}
#: the largest number of labelled rows a plan searches (beyond it: an error, not a slow search)
MAX_N = 10_000_000
PLAN_COLUMNS = ("n", "N", "lam", "se", "half_width", "effect", "power", "cost", "effective_n")


def _cov(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.cov(u, v, ddof=1)[0, 1]) if u.size > 1 else 0.0


def pilot_pieces(y, yhat, yhat_unlabeled=None, *, estimand: str = "mean", X=None, X_unlabeled=None, coord=None,
                 intercept=None) -> dict:
    """The pilot's plug-in pieces ``a, c, b, b_u`` of the PPI variance for one coordinate (module
    docstring; ddof 1), with the term's name, the pilot's sizes and ``rho = c / sqrt(a b)``.
    Without ``yhat_unlabeled`` ``b_u = b`` (the LLM's answers vary alike on both samples).

    >>> rng = np.random.default_rng(0); y = rng.normal(size=400); yhat = y + rng.normal(size=400)
    >>> p = pilot_pieces(y, yhat)
    >>> round(p["rho"], 3), round(p["rho"], 3) == round(float(np.corrcoef(y, yhat)[0, 1]), 3)
    (0.734, True)
    """
    estimand = check_choice(estimand, "estimand", list(ESTIMANDS))
    has_u = yhat_unlabeled is not None
    if estimand == "mean":
        for arg, value in (("X", X), ("X_unlabeled", X_unlabeled), ("coord", coord), ("intercept", intercept)):
            if value is not None:
                raise InvalidArgumentError(f"argument `{arg}` belongs to a regression; with estimand='mean' leave it out")
        d = mean_inputs(y, yhat, yhat_unlabeled if has_u else yhat, None, None, columns=False, default_term="mean")
        yy, yh, yu = d.y[:, 0], d.yhat[:, 0], d.yhat_unlabeled[:, 0]
        a, c, b = _cov(yy, yy), _cov(yy, yh), _cov(yh, yh)
        b_u = _cov(yu, yu) if has_u else b
        term, n_pilot, N_pilot = d.terms[0], d.n, d.N if has_u else 0
    else:
        if X is None:
            raise InvalidArgumentError(f"argument `X` is needed for estimand={estimand!r}: the regressors of the "
                                       "pilot's labelled rows")
        if has_u != (X_unlabeled is not None):
            raise InvalidArgumentError("arguments `yhat_unlabeled` and `X_unlabeled` come together (the pilot's "
                                       "unlabelled rows); pass both or neither")
        d = regression_inputs(X, y, yhat, X_unlabeled if has_u else X, yhat_unlabeled if has_u else yhat, None, None,
                              intercept, _FAMILY[estimand])
        if coord is None and len(d.terms) > 1:
            raise InvalidArgumentError(f"argument `coord` is needed: the plan is for one coefficient of "
                                       f"{d.terms} (a name or a 0-based position)")
        k = 0 if coord is None else check_coord(coord, d.terms, True)
        if estimand == "ols":  # each least-squares fit's own influence rows (docs/methods/ppi.md §3.2)
            s, sh, su = (r[:, k] for r in ols_influence(d))
        else:
            fam = FAMILIES[_FAMILY[estimand]]
            theta = fit(_FAMILY[estimand], d, 0.0)
            g, gh = gradients(fam, theta, d.X, [d.y, d.yhat], d.w)
            gu, = gradients(fam, theta, d.X_unlabeled, [d.yhat_unlabeled], d.w_unlabeled)
            H = hessian(fam, theta, d.X, d.w, d.X_unlabeled, d.w_unlabeled, has_u)
            v = np.linalg.inv(H)[k]
            s, sh, su = g @ v, gh @ v, gu @ v
        a, c, b = _cov(s, s), _cov(s, sh), _cov(sh, sh)
        b_u = _cov(su, su) if has_u else b
        term, n_pilot, N_pilot = d.terms[k], d.n, d.N if has_u else 0
    rho = c / math.sqrt(a * b) if a > 0 and b > 0 else 0.0
    return {"a": a, "c": c, "b": b, "b_u": b_u, "rho": rho, "term": term, "estimand": estimand,
            "n_pilot": n_pilot, "N_pilot": N_pilot}


def plan_variance(pieces: dict, n, N, method: str = "ppi++"):
    """``(V, lam)``: the variance of the estimate from ``n`` labelled and ``N`` unlabelled rows (arrays
    broadcast) and the lambda it is taken at: PPI++'s variance-minimising lambda in [0, 1]
    (``method="ppi++"``), 1 (``"ppi"``), 0 where ``N`` is 0.

    >>> p = {"a": 1.0, "c": 0.8, "b": 1.0, "b_u": 1.0}
    >>> V, lam = plan_variance(p, 100, 300)
    >>> round(float(V), 12) == round(1 / 100 * (1 - 0.8 ** 2 * 300 / 400), 12), round(float(lam), 12)
    (True, 0.6)
    """
    a, c, b, b_u = pieces["a"], pieces["c"], pieces["b"], pieces["b_u"]
    n = np.asarray(n, dtype=float)
    N = np.asarray(N, dtype=float)
    n, N = np.broadcast_arrays(n, N)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(N > 0, n / np.where(N > 0, N, 1.0), np.inf)
        if method == "ppi":
            lam = np.where(N > 0, 1.0, 0.0)
        else:
            den = b + b_u * ratio
            lam = np.where((N > 0) & (den > 0), np.clip(c / np.where(den > 0, den, 1.0), 0.0, 1.0), 0.0)
        V = (a - 2 * lam * c + lam * lam * b) / n + np.where(N > 0, lam * lam * b_u / np.where(N > 0, N, 1.0), 0.0)
    return V, lam


def _power_at(se, effect, z):
    """The two-sided z-test's power against ``effect`` at standard error ``se``."""
    t = np.abs(effect) / se
    return norm.cdf(t - z) + norm.cdf(-t - z)


def _se_for_power(effect: float, target: float, z: float, alpha: float) -> float:
    """The standard error at which the two-sided level-``alpha`` z-test has power ``target`` against ``effect``."""
    if not alpha < target < 1:
        raise InvalidArgumentError(f"argument `power` must lie between 1 - level ({alpha:g}: the power against an "
                                   f"effect of 0) and 1; got {target!r}")
    t = brentq(lambda t: norm.cdf(t - z) + norm.cdf(-t - z) - target, 0.0, 60.0, xtol=1e-14)
    return abs(effect) / t


def _min_N(pieces: dict, n: np.ndarray, V_target: float, method: str) -> np.ndarray:
    """For each ``n``: the least (real) ``N`` with ``V(n, N) <= V_target`` (0 where the labelled rows
    alone reach it at lambda = 0; inf where no ``N`` does). Closed forms (§12.2)."""
    a, c, b, b_u = pieces["a"], pieces["c"], pieces["b"], pieces["b_u"]
    R = a - n * V_target                       # the variance * n still to remove
    out = np.full(n.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "ppi":
            rest = V_target - (a - 2 * c + b) / n    # lambda = 1: V = (a - 2c + b)/n + b_u/N
            out = np.where(rest > 0, b_u / np.where(rest > 0, rest, 1.0), np.inf)
        elif c > 0 and b_u > 0:
            # lambda < 1 at the optimum: V = a/n - c^2 / (n (b + b_u n/N))
            inner = np.where(R > 0, c * c / np.where(R > 0, R, 1.0) - b, -1.0)
            unclipped = np.where(inner > 0, n * b_u / np.where(inner > 0, inner, 1.0), np.inf)
            # lambda clipped at 1 (c > R): V = (a - 2c + b)/n + b_u/N
            rest = 2 * c - b - R
            clipped = np.where(rest > 0, n * b_u / np.where(rest > 0, rest, 1.0), np.inf)
            out = np.where(c >= R, unclipped, clipped)
        out = np.where(R <= 0, 0.0, out) if method != "ppi" else out
    return out


def _check_cost(value, name: str, positive: bool) -> float:
    v = check_real(value, name, low=0.0)
    if positive and v <= 0:
        raise InvalidArgumentError(f"argument `{name}` must be positive (the cost of one human label); got {v!r}")
    return v


def _size(value, name: str, minimum: int) -> int:
    return check_int(value, name, minimum=minimum)


@result_dataclass
class PPIPlan(Result):
    """A planned PPI study: one row of ``table`` per design (``n`` labelled rows, ``N`` unlabelled
    rows; columns ``n, N, lam, se, half_width, effect, power, cost, effective_n``), with the pilot's
    pieces (``pilot``: ``a, c, b, b_u, rho``, docs/methods/ppi.md §12.1), the target and the costs.

    ``n``, ``N``, ``se``, ``half_width``, ``power``, ``cost``, ``lam`` are numbers for one design
    and arrays for several; ``effective_n`` is the number of labels the classical estimator would
    need for the same standard error; ``classical_n`` (a sample-size plan) the labels the
    classical estimator needs for the target itself. Made by :func:`sample_size` and :func:`power`.

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0); y = rng.normal(size=300); yhat = y + rng.normal(scale=0.6, size=300)
    >>> plan = ppi.sample_size(y, yhat, half_width=0.05, N=50_000)
    >>> plan.n, plan.N, plan.classical_n
    (392, 50000, 1598)
    >>> PPIPlan.from_json(plan.to_json()) == plan
    True
    """

    estimand: str
    term: str
    method: str
    level: float
    table: pd.DataFrame
    pilot: dict
    target: dict
    costs: dict
    classical_n: int | None = None
    notes: tuple = ()

    def _col(self, name: str):
        values = self.table[name].to_numpy()
        if values.size == 1:
            v = values[0]
            return int(v) if name in ("n", "N") else float(v)
        return values.copy()

    @property
    def n(self):
        """The number of labelled rows (human answers, with the LLM's answers on the same rows)."""
        return self._col("n")

    @property
    def N(self):
        """The number of unlabelled rows (LLM answers only)."""
        return self._col("N")

    @property
    def se(self):
        """The planned standard error."""
        return self._col("se")

    @property
    def half_width(self):
        """The planned half-width of the ``level`` z-interval."""
        return self._col("half_width")

    @property
    def power(self):
        """The power of the two-sided level-(1 - ``level``) test against ``effect`` (NaN without one)."""
        return self._col("power")

    @property
    def cost(self):
        """``n * cost_label + (n + N) * cost_llm``: every row gets an LLM answer, the labelled ones a human one too."""
        return self._col("cost")

    @property
    def lam(self):
        """The lambda the plan's variance is taken at (PPI++'s optimum for the pilot's moments)."""
        return self._col("lam")

    @property
    def effective_n(self):
        """The labels the classical estimator would need for the same standard error."""
        return self._col("effective_n")

    def tidy(self) -> pd.DataFrame:
        """One row per design: the table with ``term``, ``method`` and ``level``.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import ppi
        >>> rng = np.random.default_rng(0); y = rng.normal(size=300); yhat = y + rng.normal(scale=0.6, size=300)
        >>> ppi.power(y, yhat, n=[50, 100, 200, 400], N=10_000, effect=0.1).tidy()[["n", "power"]].round(3)
             n  power
        0   50  0.291
        1  100  0.506
        2  200  0.786
        3  400  0.966
        """
        out = self.table.copy()
        out.insert(0, "term", self.term)
        out["method"] = self.method
        out["level"] = self.level
        return out

    def summary(self) -> Summary:
        """The plan in words and its table.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate import ppi
        >>> rng = np.random.default_rng(0); y = rng.normal(size=300); yhat = y + rng.normal(scale=0.6, size=300)
        >>> print(ppi.sample_size(y, yhat, effect=0.1, N=20_000).summary().as_text().splitlines()[0])
        PPI study plan: mean
        """
        p = self.pilot
        facts: dict[str, Any] = {"Estimand": f"{self.estimand} ({self.term})" if self.estimand != "mean" else "mean",
                                 "Method": {"ppi++": "PPI++ (lambda tuned)", "ppi": "PPI (lambda = 1)"}[self.method],
                                 "Confidence level": self.level,
                                 "Pilot": f"{p['n_pilot']} labelled rows" + (f", {p['N_pilot']} unlabelled" if
                                                                             p["N_pilot"] else ""),
                                 "PPI correlation (rho)": p["rho"]}
        kind = self.target.get("kind")
        if kind == "half_width":
            facts["Target"] = f"half-width {self.target['half_width']:.4g}"
        elif kind == "power":
            facts["Target"] = f"power {self.target['power']:.4g} against an effect of {self.target['effect']:.4g}"
        if self.classical_n is not None:
            facts["Labels without the LLM (classical)"] = self.classical_n
        if self.costs.get("cost_label") is not None:
            facts["Costs"] = f"{self.costs['cost_label']:g} per label, {self.costs['cost_llm']:g} per LLM answer"
        notes = [*self.notes, "Planned from the pilot's moments (docs/methods/ppi.md §12): a pilot's estimate, "
                              "itself uncertain; plan with a margin."]
        return Summary(f"PPI study plan: {self.estimand}", facts=facts, tables=[("Designs", self.table)],
                       notes=notes, float_format="{:.5g}")


def _table(pieces: dict, n, N, method: str, z: float, effect, cost_label: float, cost_llm: float) -> pd.DataFrame:
    n_arr, N_arr = np.broadcast_arrays(np.atleast_1d(np.asarray(n, dtype=np.int64)),
                                       np.atleast_1d(np.asarray(N, dtype=np.int64)))
    V, lam = plan_variance(pieces, n_arr, N_arr, method)
    se = np.sqrt(V)
    eff = np.where(V > 0, pieces["a"] / np.where(V > 0, V, 1.0), np.nan)
    pw = _power_at(se, effect, z) if effect is not None else np.full(se.shape, np.nan)
    return pd.DataFrame({"n": n_arr.astype(np.int64), "N": N_arr.astype(np.int64), "lam": lam, "se": se,
                         "half_width": z * se, "effect": np.nan if effect is None else float(effect), "power": pw,
                         "cost": n_arr * cost_label + (n_arr + N_arr) * cost_llm, "effective_n": eff},
                        columns=list(PLAN_COLUMNS))


def _common(y, yhat, yhat_unlabeled, estimand, X, X_unlabeled, coord, intercept, method, level):
    method = check_choice(method, "method", ["ppi++", "ppi"])
    alpha = 1.0 - check_probability(level, "level")
    z = float(norm.ppf(1 - alpha / 2))
    pieces = pilot_pieces(y, yhat, yhat_unlabeled, estimand=estimand, X=X, X_unlabeled=X_unlabeled, coord=coord,
                          intercept=intercept)
    if not pieces["a"] > 0:
        raise InvalidArgumentError("argument `y`: the pilot's estimating-equation variance is 0; no plan can be made")
    return method, alpha, z, pieces


def sample_size(y, yhat, yhat_unlabeled=None, *, half_width=None, effect=None, power: float = 0.8, N=None,
                cost_label: float = 1.0, cost_llm: float = 0.0, max_rows=None, estimand: str = "mean", X=None,
                X_unlabeled=None, coord=None, intercept=None, method: str = "ppi++",
                level: float = 0.95) -> PPIPlan:
    """How many human labels ``n`` (and LLM answers ``N``) a PPI study needs, planned from a pilot
    (docs/methods/ppi.md §12; Broska, Howes & van Loon 2024): the pilot's labelled ``y`` and
    ``yhat`` (and, if at hand, ``yhat_unlabeled``, the LLM's answers on unlabelled rows) give the
    moments of the PPI variance, and the plan is the least ``n`` -- or the cheapest ``(n, N)`` --
    whose variance reaches the target.

    The target: ``half_width`` (of the ``level`` z-interval), or ``effect`` with ``power`` (the
    two-sided level-(1 - ``level``) z-test of "no effect" detects a true difference of ``effect``
    with probability ``power``; default 0.8). ``N``: the unlabelled rows the study will have -- a
    number (the plan is the least ``n``); ``None`` (default): the length of ``yhat_unlabeled``,
    the LLM answers at hand; or ``"optimal"``: the cheapest pair at ``cost_label`` per human label
    and ``cost_llm`` per LLM answer (every row, labelled or not, gets one: cost
    ``n * cost_label + (n + N) * cost_llm``), with ``n + N <= max_rows`` if given (the corpus' size;
    ``"optimal"`` needs ``cost_llm > 0`` or ``max_rows``). ``estimand``: ``"mean"``, or
    ``"ols"``, ``"logistic"``, ``"poisson"`` with the pilot's regressors ``X`` (and
    ``X_unlabeled`` with ``yhat_unlabeled``), ``coord`` the coefficient planned for (pass the same
    ``coord`` to the estimator, so that lambda is tuned for it) and ``intercept`` as in
    :func:`ols`. ``method``: ``"ppi++"`` (lambda tuned; the plan's lambda is the optimum for the
    pilot's moments) or ``"ppi"`` (lambda = 1). The pilot's numbers are estimates: plan with a
    margin.

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=300); yhat = y + rng.normal(scale=0.6, size=300)   # a pilot of 300 rows
    >>> plan = ppi.sample_size(y, yhat, half_width=0.05, N=50_000)
    >>> plan.n, plan.classical_n, round(plan.half_width, 4)
    (392, 1598, 0.05)
    >>> cheap = ppi.sample_size(y, yhat, half_width=0.05, N="optimal", cost_label=1.0, cost_llm=0.01)
    >>> cheap.n, cheap.N, round(cheap.cost, 1)
    (450, 7599, 530.5)
    >>> ppi.sample_size(y, yhat, effect=0.1, power=0.9, N=20_000).n
    273
    """
    method, alpha, z, pieces = _common(y, yhat, yhat_unlabeled, estimand, X, X_unlabeled, coord, intercept, method,
                                       level)
    if (half_width is None) == (effect is None):
        raise InvalidArgumentError("pass one target: `half_width` (of the confidence interval) or `effect` (with "
                                   "`power`, default 0.8)")
    if half_width is not None:
        h = check_real(half_width, "half_width", low=0.0)
        if h <= 0:
            raise InvalidArgumentError(f"argument `half_width` must be positive; got {half_width!r}")
        se_target = h / z
        target = {"kind": "half_width", "half_width": h}
    else:
        eff = check_real(effect, "effect")
        if eff == 0:
            raise InvalidArgumentError("argument `effect` must be nonzero: the difference the study should detect")
        pw = check_probability(power, "power")
        se_target = _se_for_power(eff, pw, z, alpha)
        target = {"kind": "power", "effect": eff, "power": pw}
    c_lab = _check_cost(cost_label, "cost_label", True)
    c_llm = _check_cost(cost_llm, "cost_llm", False)
    V_target = se_target ** 2
    a = pieces["a"]
    classical_n = max(2, math.ceil(a / V_target * (1 - 1e-12)))
    notes = []
    if isinstance(N, str):
        check_choice(N, "N", ["optimal"])
        limit = None if max_rows is None else _size(max_rows, "max_rows", 4)
        if c_llm == 0 and limit is None:
            raise InvalidArgumentError("argument `N`='optimal' chooses N by cost; with `cost_llm` = 0 more LLM answers "
                                       "are free and N has no optimum: pass `cost_llm` > 0, `max_rows` (the rows "
                                       "there are), or a number N")
        n_best, N_best = _cheapest(pieces, V_target, method, c_lab, c_llm, limit, classical_n)
    else:
        if max_rows is not None:
            raise InvalidArgumentError("argument `max_rows` bounds n + N when N is chosen (N='optimal'); with a given "
                                       "N leave it out")
        if N is None:
            if yhat_unlabeled is None:
                raise InvalidArgumentError("argument `N` is needed: the number of unlabelled rows (LLM answers) the "
                                           "study will have, or N='optimal' with costs; or pass the pilot's "
                                           "`yhat_unlabeled`, whose length is then N")
            N_fixed = int(pieces["N_pilot"])
            notes.append(f"N = {N_fixed}: the length of yhat_unlabeled")
        else:
            N_fixed = _size(N, "N", 0)
        n_best = _least_n(pieces, V_target, method, N_fixed)
        N_best = N_fixed
    table = _table(pieces, n_best, N_best, method, z, target.get("effect"), c_lab, c_llm)
    return PPIPlan(estimand=pieces["estimand"], term=pieces["term"], method=method, level=float(level), table=table,
                   pilot={k: pieces[k] for k in ("a", "c", "b", "b_u", "rho", "n_pilot", "N_pilot")}, target=target,
                   costs={"cost_label": c_lab, "cost_llm": c_llm}, classical_n=classical_n, notes=tuple(notes))


def _least_n(pieces: dict, V_target: float, method: str, N: int) -> int:
    """The least integer ``n >= 2`` with ``V(n, N) <= V_target`` (V decreases in n), by bisection."""
    def ok(n):
        return bool(plan_variance(pieces, n, N, method)[0] <= V_target * (1 + 1e-12))

    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > MAX_N:
            raise InvalidArgumentError(
                f"the target is out of reach: even {MAX_N:,} labelled rows with N = {N} do not reach it"
                + (" (with lambda = 1 the LLM's own noise over N rows is a floor: raise N)" if method == "ppi" else ""))
    lo = max(2, hi // 2)
    if ok(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _cheapest(pieces: dict, V_target: float, method: str, c_lab: float, c_llm: float, limit, classical_n: int):
    """The cheapest integer ``(n, N)`` reaching ``V_target``: for every ``n`` up to the classical
    sample size the least ``N`` (closed form, rounded up and checked), the cheapest pair kept."""
    hi = classical_n if method == "ppi++" else None
    if hi is None:   # lambda = 1: the classical n is no bound; search up to where N is no longer needed to be large
        hi = _least_n(pieces, V_target, method, 10 ** 12) * 4
    if hi > MAX_N:
        raise InvalidArgumentError(f"the target needs more than {MAX_N:,} labelled rows; a smaller target or a pilot "
                                   "with a better prediction")
    n = np.arange(2, hi + 1, dtype=np.int64)
    N_real = _min_N(pieces, n.astype(float), V_target, method)
    finite = np.isfinite(N_real) & (N_real < 1e15)
    N = np.where(finite, np.ceil(np.where(finite, N_real, 0.0) * (1 - 1e-12)), np.inf)
    # rounding can leave a hair above the target: one more row where it does
    bump = finite & (plan_variance(pieces, n, np.where(finite, N, 0.0), method)[0] > V_target * (1 + 1e-12))
    N = np.where(bump, N + 1, N)
    if limit is not None:
        N = np.where(n + N <= limit, N, np.inf)
    ok = np.isfinite(N)
    cost = np.where(ok, n * c_lab + (n + np.where(ok, N, 0.0)) * c_llm, np.inf)
    if not np.any(np.isfinite(cost)):
        raise InvalidArgumentError(f"no design with n + N <= max_rows ({limit}) reaches the target; the classical "
                                   f"estimator alone needs {classical_n} labels")
    i = int(np.argmin(cost))   # the first (smallest n) of equal costs
    return int(n[i]), int(N[i])


def power(y, yhat, yhat_unlabeled=None, *, n, N=None, effect, estimand: str = "mean", X=None, X_unlabeled=None,
          coord=None, intercept=None, method: str = "ppi++", level: float = 0.95, cost_label: float = 1.0,
          cost_llm: float = 0.0) -> PPIPlan:
    """The power of a PPI study with ``n`` labelled and ``N`` unlabelled rows against a true
    difference of ``effect`` (the two-sided level-(1 - ``level``) z-test of "no effect"), planned
    from a pilot as :func:`sample_size` (docs/methods/ppi.md §12): the pilot's ``y``, ``yhat``
    (and ``yhat_unlabeled``) give the moments of the PPI variance at ``(n, N)``. ``n`` and ``N`` may
    be sequences (broadcast): one design per row of the plan's table, a power curve. ``N=None``: the
    length of ``yhat_unlabeled``. The table also has the standard error, the half-width, the cost
    and ``effective_n``.

    Examples
    --------
    >>> import numpy as np
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=300); yhat = y + rng.normal(scale=0.6, size=300)
    >>> res = ppi.power(y, yhat, n=100, N=10_000, effect=0.1)
    >>> round(res.power, 3), round(res.se, 4), round(res.effective_n)
    (0.506, 0.0506, 405)
    >>> ppi.power(y, yhat, n=[50, 400], N=10_000, effect=0.1).power.round(3).tolist()
    [0.291, 0.966]
    """
    method, alpha, z, pieces = _common(y, yhat, yhat_unlabeled, estimand, X, X_unlabeled, coord, intercept, method,
                                       level)
    eff = check_real(effect, "effect")
    notes = []
    if N is None:
        if yhat_unlabeled is None:
            raise InvalidArgumentError("argument `N` is needed: the number of unlabelled rows (LLM answers), or the "
                                       "pilot's `yhat_unlabeled`, whose length is then N")
        N = int(pieces["N_pilot"])
        notes.append(f"N = {N}: the length of yhat_unlabeled")
    n_arr = _sizes(n, "n", 2)
    N_arr = _sizes(N, "N", 0)
    try:
        np.broadcast(n_arr, N_arr)
    except ValueError:
        raise InvalidArgumentError(f"arguments `n` and `N` must broadcast (one number, or sequences of one length); "
                                   f"got {n_arr.size} and {N_arr.size} values") from None
    c_lab = _check_cost(cost_label, "cost_label", True)
    c_llm = _check_cost(cost_llm, "cost_llm", False)
    table = _table(pieces, n_arr, N_arr, method, z, eff, c_lab, c_llm)
    return PPIPlan(estimand=pieces["estimand"], term=pieces["term"], method=method, level=float(level), table=table,
                   pilot={k: pieces[k] for k in ("a", "c", "b", "b_u", "rho", "n_pilot", "N_pilot")},
                   target={"kind": "given", "effect": eff}, costs={"cost_label": c_lab, "cost_llm": c_llm},
                   notes=tuple(notes))


def _sizes(value, name: str, minimum: int) -> np.ndarray:
    if isinstance(value, (numbers.Real, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return np.array([check_int(value, name, minimum=minimum)])
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise InvalidArgumentError(f"argument `{name}` must be a whole number (or a sequence of them); got {value!r}")
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidArgumentError(f"argument `{name}` must be a whole number or a 1-d sequence of them")
    return np.array([check_int(v.item() if hasattr(v, "item") else v, name, minimum=minimum) for v in arr])
