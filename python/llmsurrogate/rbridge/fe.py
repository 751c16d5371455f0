"""R adapters of :mod:`llmsurrogate.fe`: R's ``feols()``, its methods and ``etable()``.

``feols()`` returns to R the fit's plain values (``"fit"``, in R's spellings: the intercept is
``(Intercept)`` and a ``factor(x)`` dummy is ``factor(x)b``, as ``lm()`` names them) and a
reference to the Python :class:`FeolsResult` (``"handle"``, a :class:`FeolsHandle`), which R keeps
for the methods that read the estimation sample: ``fitted()``, ``residuals()``, ``predict()``,
``fixef()``, ``model.matrix()`` and ``weights()`` call :data:`R_FUNCTIONS` on it and get plain
lists back.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..fe import FeolsResult, etable, feols
from ._convert import _listed, _r_frame

__all__ = ["R_FUNCTIONS", "FeolsHandle", "r_etable", "r_feols", "r_term_names"]

# formulaic's name of a dummy (``C(g)[T.b]``; ``factor(g)[T.b]``): the function, the column, the level
_DUMMY = re.compile(r"\b(C|factor)\(\s*([A-Za-z_.][A-Za-z0-9_.]*)\s*\)\[T\.(.*?)\](?=:|$)")


def r_term_names(names: Any, formula: str) -> list[str]:
    """Coefficient names as R's ``lm()`` writes them: ``Intercept`` is ``(Intercept)``, and the
    dummy of level ``b`` of a column ``g`` that the formula encodes with R's ``factor(g)`` is
    ``factor(g)b`` (``C(g)`` written as ``C(g)`` keeps pyfixest's ``C(g)[T.b]``).

    >>> r_term_names(["Intercept", "x", "C(g)[T.b]", "x:C(g)[T.b]", "C(h)[T.2]"], "y ~ x*factor(g) + C(h)")
    ['(Intercept)', 'x', 'factor(g)b', 'x:factor(g)b', 'C(h)[T.2]']
    """
    factored = set(re.findall(r"\bfactor\(\s*([A-Za-z_.][A-Za-z0-9_.]*)\s*\)", formula))

    def one(name: str) -> str:
        if name == "Intercept":
            return "(Intercept)"
        return _DUMMY.sub(lambda m: f"factor({m.group(2)}){m.group(3)}" if m.group(2) in factored else m.group(0),
                          name)

    return [one(str(n)) for n in names]


def _in_r_terms(fit: FeolsResult, formula: str) -> FeolsResult:
    """``fit`` with its terms in R's names (:func:`r_term_names`): what R prints, tidies and puts in
    ``etable()``. A shallow copy: the estimation sample stays with ``fit``."""
    names = r_term_names(fit.terms, formula)
    if names == list(fit.terms):
        return fit
    out = copy.copy(fit)
    object.__setattr__(out, "terms", names)
    return out


class FeolsHandle:
    """The Python side of an R ``feols()`` fit: the :class:`FeolsResult` (with its estimation
    sample), the formula as R wrote it (for R's names) and the weights of every row of the data
    (None without weights), for ``weights()``."""

    __slots__ = ("fit", "formula", "weights")

    def __init__(self, fit: FeolsResult, formula: str, weights: Any):
        self.fit = fit
        self.formula = formula
        self.weights = weights

    def __repr__(self) -> str:
        return f"<feols fit: {self.formula}, {self.fit.nobs} observations>"


def _formula_arg(err: InvalidArgumentError) -> InvalidArgumentError:
    """The Python formula argument is ``fml``; R's is ``formula``."""
    if err.args and isinstance(err.args[0], str):
        err.args = (err.args[0].replace("argument `fml`", "argument `formula`"), *err.args[1:])
    return err


def r_feols(formula: str, data: Mapping, vcov: Any = None, weights: Any = None, fixef_rm: str = "singleton",
            n_jobs: Any = None, handle: bool = False) -> Any:
    """:func:`llmsurrogate.fe.feols` for the R package's ``feols()``: ``weights`` a column name or
    the values (``None`` for R's ``NA``, such rows dropped); returns the :class:`FeolsResult` in R's
    names (:func:`r_term_names`), or with ``handle=True`` (the R package's call)
    ``{"fit": that result, "handle": its FeolsHandle}`` (an R package of an earlier release,
    which keeps no handle, gets the result alone)."""
    if weights is not None and not isinstance(weights, str):
        weights = np.array([np.nan if v is None else float(v) for v in _listed(weights)], dtype=np.float64)
    if n_jobs is not None:
        n_jobs = int(n_jobs)
    frame = _r_frame(data)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LLMSurrogateWarning)
            fit = feols(formula, frame, vcov=vcov, weights=weights, fixef_rm=fixef_rm, n_jobs=n_jobs)
    except InvalidArgumentError as err:
        raise _formula_arg(err) from None
    for w in caught:  # R's word for a missing value
        warnings.warn(str(w.message).replace("missing values (NaN/None)", "missing values (NA)"), w.category,
                      stacklevel=2)
    if isinstance(weights, str):
        weights = frame[weights].to_numpy(dtype=np.float64, na_value=np.nan)
    if not handle:
        return _in_r_terms(fit, formula)
    return {"fit": _in_r_terms(fit, formula), "handle": FeolsHandle(fit, formula, weights)}


def _handle(handle: Any) -> FeolsHandle:
    if not isinstance(handle, FeolsHandle):
        raise InvalidArgumentError(f"internal: expected a feols fit's handle, got {type(handle).__name__}")
    return handle


def r_obs_rows(handle: Any) -> np.ndarray:
    """The estimation rows, 1-based (R's positions in ``data``)."""
    return _handle(handle).fit.obs_index + 1


def r_fitted(handle: Any) -> np.ndarray:
    """The fitted values of the estimation rows (fixed effects included)."""
    return _handle(handle).fit.predict()


def r_resid(handle: Any) -> np.ndarray:
    """The residuals of the estimation rows."""
    return _handle(handle).fit.resid()


def r_predict(handle: Any, newdata: Mapping) -> np.ndarray:
    """Predictions for the rows of ``newdata`` (R's columns), NaN where a value is missing or a
    level was not in the estimation rows."""
    return _handle(handle).fit.predict(newdata=_r_frame(newdata))


def r_fixef(handle: Any) -> dict:
    """The estimated fixed effects as ``{name: {"levels": [...], "values": [...]}}``."""
    effects = _handle(handle).fit.fixef()
    return {name: {"levels": [str(v) for v in s.index], "values": s.to_numpy(dtype=np.float64)}
            for name, s in effects.items()}


def r_model_matrix(handle: Any) -> dict:
    """The regressors of the estimation rows: ``{"names": R's names, "values": columns}``."""
    h = _handle(handle)
    mm = h.fit.model_matrix()
    return {"names": r_term_names(mm.columns, h.formula),
            "values": [mm.iloc[:, j].to_numpy(dtype=np.float64) for j in range(mm.shape[1])]}


def r_weights(handle: Any) -> Any:
    """The weights of the estimation rows (None for an unweighted fit)."""
    h = _handle(handle)
    if h.weights is None:
        return None
    return np.asarray(h.weights, dtype=np.float64)[h.fit.obs_index]


def r_etable(fits: Any, type: str = "text", digits: Any = 3, stars: bool = True):
    """:func:`llmsurrogate.fe.etable` of fits sent as their JSON (``FeolsResult.to_json``): a string
    for ``"text"`` and ``"tex"``, for ``"df"`` the table with its row labels in a column ``row``;
    the intercept is ``(Intercept)``, as R names it."""
    models = [FeolsResult.from_json(j) for j in _listed(fits)]
    models = [_in_r_terms(m, m.formula) for m in models]
    out = etable(models, type=type, digits=int(digits), stars=bool(stars))
    if type == "df":
        out = out.rename_axis("row").reset_index()
    return out


#: What R may call here (``.call("fe.<name>")``).
R_FUNCTIONS = {"feols": r_feols, "etable": r_etable, "obs_rows": r_obs_rows, "fitted": r_fitted, "resid": r_resid,
               "predict": r_predict, "fixef": r_fixef, "model_matrix": r_model_matrix, "weights": r_weights}
