"""R adapters of :mod:`llmsurrogate.fe`: R's ``feols()`` and ``etable()``."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..fe import FeolsResult, etable, feols
from ._convert import _listed, _r_frame

__all__ = ["R_FUNCTIONS", "r_etable", "r_feols"]


def _formula_arg(err: InvalidArgumentError) -> InvalidArgumentError:
    """The Python formula argument is ``fml``; R's is ``formula``."""
    if err.args and isinstance(err.args[0], str):
        err.args = (err.args[0].replace("argument `fml`", "argument `formula`"), *err.args[1:])
    return err


def r_feols(formula: str, data: Mapping, vcov: Any = None, weights: Any = None, fixef_rm: str = "singleton",
            n_jobs: Any = None):
    """:func:`llmsurrogate.fe.feols` for the R package's ``feols()``: ``weights`` a column name or
    the values (``None`` for R's ``NA``, such rows dropped); returns the :class:`FeolsResult`."""
    if weights is not None and not isinstance(weights, str):
        weights = np.array([np.nan if v is None else float(v) for v in _listed(weights)], dtype=np.float64)
    if n_jobs is not None:
        n_jobs = int(n_jobs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LLMSurrogateWarning)
            fit = feols(formula, _r_frame(data), vcov=vcov, weights=weights, fixef_rm=fixef_rm, n_jobs=n_jobs)
    except InvalidArgumentError as err:
        raise _formula_arg(err) from None
    for w in caught:  # R's word for a missing value
        warnings.warn(str(w.message).replace("missing values (NaN/None)", "missing values (NA)"), w.category,
                      stacklevel=2)
    return fit


def r_etable(fits: Any, type: str = "text", digits: Any = 3, stars: bool = True):
    """:func:`llmsurrogate.fe.etable` of fits sent as their JSON (``FeolsResult.to_json``): a string
    for ``"text"`` and ``"tex"``, for ``"df"`` the table with its row labels in a column ``row``."""
    models = [FeolsResult.from_json(j) for j in _listed(fits)]
    out = etable(models, type=type, digits=int(digits), stars=bool(stars))
    if type == "df":
        out = out.rename_axis("row").reset_index()
    return out


#: What R may call here (``.call("fe.<name>")``).
R_FUNCTIONS = {"feols": r_feols, "etable": r_etable}
