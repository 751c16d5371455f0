"""R adapters of :mod:`llmsurrogate.ppi`: R's ``ppi_mean()``, ``ppi_quantile()``, ``ppi_ols()``,
``ppi_glm()`` and ``ppi_feols()``.

R checks its arguments in R's words (numeric columns, no ``NA``, 1-based positions, a term's name
for ``coord``) and builds the regressions' designs from the formula (``model.matrix()``, the
intercept column included as ``lm()`` includes it) before it calls here; the adapters put R's
columns back together: a vector (a list) as a float array, K columns (``{column: list}``) as a
DataFrame, a design (``{column: list}``) as a DataFrame whose names become the terms'. The designs
are fitted as given (``intercept=False``): the formula decides the intercept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import ppi

__all__ = ["R_FUNCTIONS", "r_feols", "r_logistic", "r_mean", "r_ols", "r_poisson", "r_quantile"]


def _numbers(x: Any) -> Any:
    """R's numbers as Python's: a vector (list) as a float array, K columns as a DataFrame; ``None``
    unchanged."""
    if x is None:
        return None
    import numpy as np

    if isinstance(x, Mapping):
        import pandas as pd

        return pd.DataFrame({str(k): np.asarray(_as_list(v), dtype=np.float64) for k, v in x.items()})
    return np.asarray(_as_list(x), dtype=np.float64)


def _as_list(v: Any) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _ids(x: Any) -> Any:
    """Cluster ids from R (numbers or labels) as an array; ``None`` unchanged."""
    if x is None:
        return None
    import numpy as np

    return np.asarray(_as_list(x))


def r_mean(y, yhat, yhat_unlabeled, *, weights=None, weights_unlabeled=None, cluster=None, cluster_unlabeled=None,
           **kwargs: Any):
    """R's ``ppi_mean()``: :func:`llmsurrogate.ppi.mean` on R's vectors (or K columns).

    >>> res = r_mean([1.0, 0.0, 1.0, 1.0], [0.9, 0.2, 0.7, 0.8], [0.5, 0.9, 0.1], method="ppi")
    >>> round(res.estimate, 6)  # mean(yhat_unlabeled) + mean(y - yhat) = 0.5 + 0.1
    0.6
    """
    return ppi.mean(_numbers(y), _numbers(yhat), _numbers(yhat_unlabeled), weights=_numbers(weights),
                    weights_unlabeled=_numbers(weights_unlabeled), cluster=_ids(cluster),
                    cluster_unlabeled=_ids(cluster_unlabeled), **kwargs)


def r_quantile(y, yhat, yhat_unlabeled, q, *, weights=None, weights_unlabeled=None, cluster=None,
               cluster_unlabeled=None, **kwargs: Any):
    """R's ``ppi_quantile()``: :func:`llmsurrogate.ppi.quantile` on R's vectors.

    >>> res = r_quantile([1.0, 2.0, 3.0, 4.0], [1.1, 2.2, 2.9, 4.1], [1.0, 2.5, 3.5, 2.0], 0.5,
    ...                  method="classical")
    >>> res.q
    0.5
    """
    return ppi.quantile(_numbers(y), _numbers(yhat), _numbers(yhat_unlabeled), q, weights=_numbers(weights),
                        weights_unlabeled=_numbers(weights_unlabeled), cluster=_ids(cluster),
                        cluster_unlabeled=_ids(cluster_unlabeled), **kwargs)


def _r_words(text: str, outcome: str, prediction: str) -> str:
    """A message of the regressions in the words of R's ``ppi_ols()`` / ``ppi_glm()``: R has no
    arguments ``X``, ``y``, ``yhat`` or ``yhat_unlabeled``, but a formula, two data frames and the
    prediction's column.

    >>> print(_r_words("argument `y`: a combination of the columns of `X` predicts `y` exactly", "yes", "p"))
    the outcome yes (in `labeled`): a combination of the formula's terms predicts the outcome yes exactly
    >>> print(_r_words("argument `yhat_unlabeled` must lie in [0, 1]; use method='classical'", "yes", "p"))
    column `p` of `unlabeled` (the prediction) must lie in [0, 1]; use method = "classical"
    """
    import re

    words = [
        (r"argument `X_unlabeled`", "the formula's design on `unlabeled`"),
        (r"argument `X`", "the formula's design on `labeled`"),
        (r"the columns of `X_unlabeled`", "the formula's terms on `unlabeled`"),
        (r"the columns of `X`", "the formula's terms"),
        (r"argument `yhat_unlabeled`", f"column `{prediction}` of `unlabeled` (the prediction)"),
        (r"argument `yhat`", f"column `{prediction}` of `labeled` (the prediction)"),
        (r"argument `y`", f"the outcome {outcome} (in `labeled`)"),
        (r"`y`", f"the outcome {outcome}"),
    ]
    for pattern, word in words:
        text = re.sub(pattern, lambda m, word=word: word, text)   # the names literally (no backslash escapes)
    return re.sub(r"method='(\w+)'", r'method = "\1"', text)


def _regression(fn, X, y, yhat, X_unlabeled, yhat_unlabeled, weights, weights_unlabeled, cluster,
                cluster_unlabeled, kwargs):
    """The Python regression on R's design; its errors in R's words (:func:`_r_words`, with the
    outcome and the prediction as R names them: ``r_outcome``, ``r_prediction``)."""
    from .._positions import reworded
    from ..exceptions import LLMSurrogateError

    outcome = str(kwargs.pop("r_outcome", None) or "(the formula's left-hand side)")
    prediction = str(kwargs.pop("r_prediction", None) or "prediction")
    try:
        return fn(_numbers(X), _numbers(y), _numbers(yhat), _numbers(X_unlabeled), _numbers(yhat_unlabeled),
                  weights=_numbers(weights), weights_unlabeled=_numbers(weights_unlabeled), cluster=_ids(cluster),
                  cluster_unlabeled=_ids(cluster_unlabeled), intercept=False, **kwargs)
    except LLMSurrogateError as err:
        if err.args and isinstance(err.args[0], str):
            err.args = (reworded(err.args[0], lambda text: _r_words(text, outcome, prediction)), *err.args[1:])
        raise


def r_ols(X, y, yhat, X_unlabeled, yhat_unlabeled, *, weights=None, weights_unlabeled=None, cluster=None,
          cluster_unlabeled=None, **kwargs: Any):
    """R's ``ppi_ols()``: :func:`llmsurrogate.ppi.ols` on R's design (``{column: list}``, the
    intercept column included when the formula has one), fitted as given.

    >>> X = {"(Intercept)": [1.0] * 4, "x": [0.0, 1.0, 2.0, 3.0]}
    >>> res = r_ols(X, [1.0, 3.0, 5.0, 7.0], [1.0, 3.0, 5.0, 7.0], X, [1.0, 3.0, 5.0, 7.0], method="classical")
    >>> res.terms, [round(float(v), 6) for v in res.estimate]
    (['(Intercept)', 'x'], [1.0, 2.0])
    """
    return _regression(ppi.ols, X, y, yhat, X_unlabeled, yhat_unlabeled, weights, weights_unlabeled, cluster,
                       cluster_unlabeled, kwargs)


def r_logistic(X, y, yhat, X_unlabeled, yhat_unlabeled, *, weights=None, weights_unlabeled=None, cluster=None,
               cluster_unlabeled=None, **kwargs: Any):
    """R's ``ppi_glm(family = binomial())``: :func:`llmsurrogate.ppi.logistic` on R's design, as
    :func:`r_ols`.

    >>> X = {"(Intercept)": [1.0] * 6, "x": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}
    >>> y = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    >>> r_logistic(X, y, y, X, y, method="classical").terms
    ['(Intercept)', 'x']
    """
    return _regression(ppi.logistic, X, y, yhat, X_unlabeled, yhat_unlabeled, weights, weights_unlabeled, cluster,
                       cluster_unlabeled, kwargs)


def r_poisson(X, y, yhat, X_unlabeled, yhat_unlabeled, *, weights=None, weights_unlabeled=None, cluster=None,
              cluster_unlabeled=None, **kwargs: Any):
    """R's ``ppi_glm(family = poisson())``: :func:`llmsurrogate.ppi.poisson` on R's design, as
    :func:`r_ols`.

    >>> X = {"(Intercept)": [1.0] * 6, "x": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}
    >>> y = [1.0, 0.0, 2.0, 3.0, 1.0, 4.0]
    >>> r_poisson(X, y, y, X, y, method="classical").terms
    ['(Intercept)', 'x']
    """
    return _regression(ppi.poisson, X, y, yhat, X_unlabeled, yhat_unlabeled, weights, weights_unlabeled, cluster,
                       cluster_unlabeled, kwargs)


def r_feols(formula: str, labeled, unlabeled, *, prediction: str, vcov="hetero", weights=None, coord=None,
            r_variables=None, **kwargs: Any):
    """R's ``ppi_feols()``: :func:`llmsurrogate.ppi.feols` on R's data frames (``{column: list}``),
    the formula as R writes it (``I(x^2)``: :func:`llmsurrogate.rbridge.fe.r_formula`), the terms
    in R's names (:func:`llmsurrogate.rbridge.fe.r_term_names`; ``r_variables``: the formula's
    variables as R's ``terms()`` spells them) and ``coord`` given in them (or as a 0-based position).

    >>> lab = {"y": [1.0, 2.2, 2.9, 4.1, 1.2, 2.0], "x": [1.0, 2.0, 3.0, 4.0, 1.5, 2.5],
    ...        "firm": ["a", "a", "a", "b", "b", "b"], "llm": [1.1, 2.0, 3.1, 4.0, 1.0, 2.1]}
    >>> unl = {"x": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0], "firm": ["a", "a", "b", "b", "a", "b"],
    ...        "llm": [1.0, 2.1, 3.0, 0.9, 2.0, 3.2]}
    >>> r_feols("y ~ I(x^2) | firm", lab, unl, prediction="llm", method="ppi", r_variables=["y", "I(x^2)"]).terms
    ['I(x^2)']
    """
    import dataclasses

    from ._convert import _r_frame
    from .fe import r_formula, r_term_names

    lab, unl = _r_frame(labeled), _r_frame(unlabeled)
    py_formula = r_formula(formula)
    variables = None if r_variables is None else [str(v) for v in _as_list(r_variables)]
    if isinstance(coord, str):  # R's name of a coefficient -> Python's, from the labelled rows' design
        import warnings

        from .. import fe

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            py_terms = [str(t) for t in fe.feols(py_formula, lab, fixef_rm="none").coef().index]
        r_names = r_term_names(py_terms, formula, variables)
        if coord in r_names:
            coord = py_terms[r_names.index(coord)]
    elif coord is not None:
        coord = int(coord)
    res = ppi.feols(py_formula, lab, unl, prediction=prediction, vcov=vcov, weights=weights, coord=coord, **kwargs)
    names = r_term_names(res.terms, formula, variables)
    if names == res.terms:
        return res
    renamed = dict(zip(res.terms, names))
    table = res.table.copy()
    table["term"] = names
    return dataclasses.replace(res, table=table, coord=None if res.coord is None else renamed.get(res.coord, res.coord))


#: What R may call here (``.call("ppi.<name>")``): the adapters above, which put R's vectors, K
#: columns and designs back together.
R_FUNCTIONS = {"mean": r_mean, "quantile": r_quantile, "ols": r_ols, "logistic": r_logistic, "poisson": r_poisson,
               "feols": r_feols}
