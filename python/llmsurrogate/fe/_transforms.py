"""The regressors of a formula with transforms (``C(x)``, ``i(x)``, ``log(x)``, ...), built by
formulaic as pyfixest builds them: the formula's terms (checked by :mod:`._formula`'s allow-list
first), formulaic's treatment coding with the reference level its ``ensure_full_rank`` picks
(the intercept stays in formulaic's formula when fixed effects absorb it, as in pyfixest, and is
dropped afterwards), the functions of :data:`CONTEXT`. Rows with a missing value in any column a
term reads, or a transform that is not finite (``log(0)``), are dropped (never encoded as rows of
zeros). formulaic is imported here only, when such a formula is fitted."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import InvalidArgumentError
from ._formula import Formula

#: Most regressor columns a formula may build (a categorical with more levels belongs after `|`).
MAX_COLUMNS = 5000


def _log(values):
    """``log`` as pyfixest's: NaN (the row dropped) where a value is not positive."""
    x = np.asarray(values, dtype=np.float64)
    out = np.full_like(x, np.nan)
    ok = np.isfinite(x) & (x > 0)
    np.log(x, out=out, where=ok)
    return pd.Series(out, index=values.index) if isinstance(values, pd.Series) else out


def _i(data, var2=None, *, ref=None):
    """fixest's ``i(x)``: the dummies of ``x`` named ``x::level`` (without ``ref`` when given, or
    the first level when the model has an intercept and no ``var2``); ``i(x, z)``: those dummies
    times the numeric column ``z``, named ``x::level:z``."""
    from formulaic.materializers.types import FactorValues

    name = str(getattr(data, "name", None) or "factor")
    name2 = None if var2 is None else str(getattr(var2, "name", None) or "var")
    if var2 is not None and not (pd.api.types.is_numeric_dtype(pd.Series(var2))
                                 and not pd.api.types.is_bool_dtype(pd.Series(var2))):
        raise InvalidArgumentError(f"argument `fml`: i({name}, {name2}) needs a numeric {name2!r} (an interaction of "
                                   "two categorical columns is not supported)")

    def encoder(values, reduced_rank, drop_rows, encoder_state, model_spec):
        state, spec = encoder_state, model_spec
        from formulaic.transforms.contrasts import TreatmentContrasts, encode_contrasts
        from formulaic.utils.sentinels import UNSET

        raw = values.__wrapped__ if isinstance(values, FactorValues) else values
        x = pd.Series(raw["x"] if name2 is not None else raw)
        x = x.drop(index=x.index[drop_rows])
        drop_one = (reduced_rank and name2 is None) or ref is not None
        enc = encode_contrasts(x, contrasts=TreatmentContrasts(base=UNSET if ref is None else ref),
                               levels=state.get("levels"), reduced_rank=drop_one, output="pandas",
                               _state=state.setdefault("contrasts", {}), _spec=spec).__wrapped__
        state.setdefault("levels", list(state["contrasts"].get("categories", [])) or None)
        if name2 is None:
            enc = enc.set_axis([f"{name}::{lev}" for lev in enc.columns], axis=1)
            return FactorValues(enc, kind="categorical", spans_intercept=ref is None and not drop_one,
                                column_names=tuple(enc.columns), format="{field}")
        z = pd.Series(raw["z"]).drop(index=pd.Series(raw["z"]).index[drop_rows])
        out = enc.multiply(z.to_numpy(dtype=np.float64), axis=0)
        out = out.set_axis([f"{name}::{lev}:{name2}" for lev in enc.columns], axis=1)
        return FactorValues(out, kind="numerical", spans_intercept=False, column_names=tuple(out.columns),
                            format="{field}")

    wrapped = data if var2 is None else {"x": data, "z": var2}  # both read for missing values
    return FactorValues(wrapped, kind="categorical", spans_intercept=var2 is None, encoder=encoder)


def _context() -> dict[str, Any]:
    from formulaic.transforms import C, poly

    return {"log": _log, "exp": np.exp, "sqrt": np.sqrt, "abs": np.abs, "np": np, "C": C, "factor": C,
            "i": _i, "poly": poly, "I": lambda x: x}


@dataclass
class Built:
    """The regressors of the rows ``rows`` (positions in the frame) that formulaic kept,
    named as pyfixest names them; ``y`` the outcome of those rows when the formula transforms it;
    ``spec`` formulaic's ModelSpec of the regressors (for ``predict``)."""

    X: np.ndarray
    names: list[str]
    rows: np.ndarray
    y: np.ndarray | None
    spec: Any


_CATEGORICAL_ATOM = re.compile(r"^(?:C|factor|i)\(\s*([A-Za-z_.][A-Za-z0-9_.]*)")


def _estimated_columns(form: Formula, frame: pd.DataFrame) -> int:
    """The columns the regressors will make, counted before they are built: per term the product of
    the level counts of its C()/factor()/i() columns (1 for a numeric factor)."""
    levels = {c: int(frame[c].nunique(dropna=True)) for c in form.categorical}
    total = 0
    for term in form.terms:
        size = 1
        for atom in term:
            m = _CATEGORICAL_ATOM.match(atom)
            if m and m.group(1) in levels:
                size *= max(levels[m.group(1)], 1)
        total += size
    return total


_OK = "__llmsurrogate_complete__"


def build(form: Formula, frame: pd.DataFrame, ok: np.ndarray) -> Built:
    """formulaic's model matrix of ``form`` on ``frame``, as pyfixest builds it: the transforms
    evaluated on every row (``poly()``'s basis is that of all rows), the rows missing a value in any
    column the fit uses (``ok`` False: the fixed effects, weights, clusters, outcome) dropped with
    the rows formulaic drops before the dummies are encoded (a level seen only in dropped rows has
    no column)."""
    import formulaic

    n_cols = _estimated_columns(form, frame.loc[ok] if isinstance(frame, pd.DataFrame) else frame)
    if n_cols > MAX_COLUMNS:
        raise InvalidArgumentError(
            f"argument `fml`: the regressors would make about {n_cols:,} columns, more than {MAX_COLUMNS:,}; absorb "
            "a categorical column with many levels as a fixed effect (after `|`) instead of C()/i()")
    sub = frame[list(form.variables)].reset_index(drop=True)
    sub[_OK] = np.where(ok, 1.0, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mm = formulaic.Formula(f"{form.outcome} + {_OK} ~ {form.rhs}").get_model_matrix(
                sub, na_action="drop", ensure_full_rank=True, output="pandas", context=_context())
        except InvalidArgumentError:
            raise
        except Exception as err:  # formulaic's errors on data it cannot encode
            raise InvalidArgumentError(f"argument `fml`: the terms of {form.text!r} cannot be built from `data` "
                                       f"({type(err).__name__}: {err})") from None
    X = mm.rhs
    if form.fixef and "Intercept" in X.columns:  # in formulaic's formula, as pyfixest: the reference levels
        X = X.drop(columns="Intercept")
    if X.shape[1] == 0:
        raise InvalidArgumentError(f"argument `fml`: no regressor column is left in {form.text!r}")
    kept = X.index.to_numpy()
    lhs = mm.lhs.drop(columns=_OK)
    if lhs.shape[1] != 1:
        raise InvalidArgumentError(f"argument `fml`: the outcome {form.outcome!r} must be numeric")
    return Built(X=X.to_numpy(dtype=np.float64), names=[str(c) for c in X.columns], rows=kept,
                 y=None if form.outcome_column else lhs.iloc[:, 0].to_numpy(dtype=np.float64), spec=mm.rhs.model_spec)


def build_new(form: Formula, spec: Any, frame: pd.DataFrame, levels: dict[str, set]) -> tuple[np.ndarray, list[str],
                                                                                                np.ndarray]:
    """The regressors of ``frame`` (new data) by the fitted ``spec``; rows with a missing value,
    or a level of a categorical column not seen in the estimation (``levels``), or a transform
    that is not finite are left out: returns ``X`` of the rows kept, the column names and the
    kept positions."""
    cols = [c for c in form.variables if c not in form.outcome_variables]
    ok = np.ones(len(frame), dtype=bool)
    for c in cols:
        ok &= ~pd.isna(frame[c]).to_numpy()
    for c, seen in levels.items():
        ok &= frame[c].map(lambda v: v in seen).to_numpy(dtype=bool)
    sub = frame[cols].iloc[np.flatnonzero(ok)].reset_index(drop=True)
    if not len(sub):
        return np.zeros((0, len(spec.column_names))), list(spec.column_names), np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = spec.get_model_matrix(sub, na_action="drop", output="pandas", context=_context())
    rows = np.flatnonzero(ok)[X.index.to_numpy()]
    return X.to_numpy(dtype=np.float64), [str(c) for c in X.columns], rows
