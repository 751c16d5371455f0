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
from ._formula import _QUOTES, Formula, formulaic_text

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
        base = UNSET
        if ref is not None:  # the level equal to `ref` by value within its dtype family (True is 1)
            from ._levels import level_key

            known = state.get("levels") or list(pd.unique(x.dropna()))
            match = [lev for lev in known if level_key(lev) == level_key(ref)]
            if not match:
                shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in sorted(known, key=str)[:6])
                raise InvalidArgumentError(f"argument `fml`: i({name}, ref={ref!r}): {ref!r} is not a level of {name!r} "
                                           f"in the rows used (levels: {shown}{', ...' if len(known) > 6 else ''})")
            base = match[0]
        enc = encode_contrasts(x, contrasts=TreatmentContrasts(base=base),
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


def _context(strings: dict | None = None) -> dict[str, Any]:
    from formulaic.transforms import C, poly

    return {"log": _log, "exp": np.exp, "sqrt": np.sqrt, "abs": np.abs, "np": np, "C": C, "factor": C,
            "i": _i, "poly": poly, "I": lambda x: x, **(strings or {})}


def escape_strings(rhs: str) -> tuple[str, dict[str, str]]:
    """``rhs`` with each quoted string (the levels of ``i(x, ref="...")``) replaced by a name that
    the returned mapping gives the string's value: formulaic's tokenizer stops at a bracket inside
    a string (``ref="(19,39]"``). The names start with ``__``, which no column name may."""
    import ast

    strings: dict[str, str] = {}

    def sub(m):
        if m.group(0)[0] == "`":  # a column name in backticks, with its quotes
            return m.group(0)
        name = f"__llmsurrogate_string_{len(strings)}__"
        strings[name] = ast.literal_eval(m.group(0))
        return name

    return _QUOTES.sub(sub, rhs), strings


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


_COLUMN = r"([A-Za-z_.][A-Za-z0-9_.]*|`[^`]+`)"  # a column name as a formula writes it
_CATEGORICAL_ATOM = re.compile(r"^(?:C|factor|i)\(\s*" + _COLUMN)


def _estimated_columns(form: Formula, frame: pd.DataFrame) -> int:
    """The columns the regressors will make, counted before they are built: per term the product of
    the level counts of its C()/factor()/i() columns (1 for a numeric factor)."""
    levels = {c: int(frame[c].nunique(dropna=True)) for c in form.categorical}
    total = 0
    for term in form.terms:
        size = 1
        for atom in term:
            m = _CATEGORICAL_ATOM.match(atom)
            col = m.group(1).strip("`") if m else None
            if col in levels:
                size *= max(levels[col], 1)
        total += size
    return total


_OK = "__llmsurrogate_complete__"
_POLY = re.compile(r"^poly\(\s*" + _COLUMN + r"\s*,\s*\+?(\d+)\s*\)$")


def _check_poly(form: Formula, frame: pd.DataFrame, ok: np.ndarray) -> None:
    """``poly(x, d)`` needs ``d + 1`` distinct values of ``x`` (an orthogonal polynomial of degree
    ``d`` on fewer points is not defined: formulaic's basis is NaN or rounding noise)."""
    for term in form.terms:
        for atom in term:
            m = _POLY.match(atom)
            if not m:
                continue
            col, d = m.group(1).strip("`"), int(m.group(2))
            values = frame[col].to_numpy()[ok]
            distinct = int(pd.Series(values).nunique(dropna=True))
            if distinct < d + 1:
                raise InvalidArgumentError(
                    f"argument `fml`: {atom} needs at least {d + 1} distinct values of {col!r} in the rows used; it "
                    f"has {distinct} (a polynomial of degree {d} is not defined on fewer points)")


def _check_finite(frame: pd.DataFrame, what: str) -> None:
    """Refuse a built column with an infinite value (``exp()`` beyond the range of a float64,
    ``I(1 / x)`` at 0): a row dropped there would select on the variable's size."""
    values = frame.to_numpy(dtype=np.float64)
    bad = np.isinf(values)
    if bad.any():
        j = int(np.flatnonzero(bad.any(axis=0))[0])
        name = str(frame.columns[j]) if what == "term" else str(what)
        label = f"the outcome {name}" if what != "term" else name
        raise InvalidArgumentError(
            f"argument `fml`: {label} is beyond the range of a float64 in {int(bad[:, j].sum())} row(s) of `data` "
            "(infinite: exp() of a value above 709, I(1 / x) at 0, or an infinite value in the column); rescale or "
            "clean the column it reads")


def build(form: Formula, frame: pd.DataFrame, ok: np.ndarray) -> Built:
    """formulaic's model matrix of ``form`` on ``frame``, as pyfixest builds it: the transforms
    evaluated on every row (``poly()``'s basis is that of all rows), the rows missing a value in any
    column the fit uses (``ok`` False: the fixed effects, weights, clusters, outcome) dropped with
    the rows formulaic drops before the dummies are encoded (a level seen only in dropped rows has
    no column). The levels of a pandas Categorical that ``C()``/``i()`` encode are in the order of
    its categories, those without a row used dropped (the reference is the first one used, as R's
    ``lm()`` takes it); other columns' levels are sorted."""
    import formulaic

    n_cols = _estimated_columns(form, frame.loc[ok] if isinstance(frame, pd.DataFrame) else frame)
    if n_cols > MAX_COLUMNS:
        raise InvalidArgumentError(
            f"argument `fml`: the regressors would make about {n_cols:,} columns, more than {MAX_COLUMNS:,}; absorb "
            "a categorical column with many levels as a fixed effect (after `|`) instead of C()/i()")
    _check_poly(form, frame, ok)
    sub = frame[list(form.variables)].reset_index(drop=True)
    for c in form.categorical:  # a categorical's order is its categories', of those in the rows used (as R's
        if isinstance(sub[c].dtype, pd.CategoricalDtype):  # lm() drops a factor's unused levels)
            present = set(sub[c][ok].dropna())
            sub[c] = sub[c].cat.set_categories([v for v in sub[c].cat.categories if v in present])
    sub[_OK] = np.where(ok, 1.0, np.nan)
    rhs, strings = escape_strings(formulaic_text(form.rhs))
    outcome = form.outcome if not form.outcome_column or form.outcome.isidentifier() else f"`{form.outcome}`"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mm = formulaic.Formula(f"{formulaic_text(outcome)} + {_OK} ~ {rhs}").get_model_matrix(
                sub, na_action="drop", ensure_full_rank=True, output="pandas", context=_context(strings))
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
    _check_finite(X, "term")
    if not form.outcome_column:
        _check_finite(lhs, form.outcome)
    return Built(X=X.to_numpy(dtype=np.float64), names=[str(c) for c in X.columns], rows=kept,
                 y=None if form.outcome_column else lhs.iloc[:, 0].to_numpy(dtype=np.float64), spec=mm.rhs.model_spec)


def numeric_newdata(frame: pd.DataFrame, column: str) -> pd.Series:
    """Column ``column`` of new data as numbers (the fit read it as numbers): a numeric or bool
    column as it is, an object or text column whose values are all numbers (or missing) as floats;
    :class:`InvalidArgumentError` naming ``newdata`` and the column for text (a CSV's ``"N/A"``),
    dates, durations or other types."""
    s = frame[column]
    if (pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)) and not pd.api.types.is_complex_dtype(s):
        return s
    if pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s) or isinstance(s.dtype, pd.CategoricalDtype):
        values = s.astype(object)
        for label, v in values.items():
            if pd.isna(v) if np.ndim(v) == 0 else False:
                continue
            if not isinstance(v, (int, float, np.integer, np.floating, np.bool_)):
                raise InvalidArgumentError(
                    f"argument `newdata`: column {column!r} must be numbers, as in the fit; it holds {v!r} (row "
                    f"{label!r}); convert it first (e.g. pd.to_numeric(newdata[{column!r}], errors='coerce') makes "
                    "text such as 'N/A' missing)")
        return pd.Series(pd.to_numeric(values.where(values.notna(), np.nan)), index=s.index, dtype=np.float64)
    raise InvalidArgumentError(f"argument `newdata`: column {column!r} must be numbers, as in the fit; it is "
                               f"dtype {s.dtype}")


def build_new(form: Formula, spec: Any, frame: pd.DataFrame, levels: dict) -> tuple[np.ndarray, list[str],
                                                                                   np.ndarray]:
    """The regressors of ``frame`` (new data) by the fitted ``spec``. The values of a ``C()`` /
    ``i()`` column are matched to the fit's levels (``levels``: per column, a Series of the
    levels in the fit's dtype) by value within a dtype family (:mod:`._levels`: ``True`` is the
    level ``1``, ``3.0`` the level ``3``) and replaced by them, so that formulaic encodes each as
    the fit did; a value of another family (text for numbers) is an error naming the column.
    Rows with a missing value, an unseen level or a transform that is not finite are left out:
    returns ``X`` of the rows kept, the column names and the kept positions."""
    from ._levels import LevelMatcher

    cols = [c for c in form.variables if c not in form.outcome_variables]
    columns = {c: frame[c] for c in cols}
    for c in form.numeric:
        if c in columns:
            columns[c] = numeric_newdata(frame, c)
    ok = np.ones(len(frame), dtype=bool)
    for c in cols:
        ok &= ~pd.isna(columns[c]).to_numpy()
    pos = {}
    for c, fit_levels in levels.items():
        fit_levels = fit_levels if isinstance(fit_levels, pd.Series) else pd.Series(list(fit_levels), dtype=object)
        pos[c] = (LevelMatcher(fit_levels.tolist(), c).positions(frame[c]), fit_levels)
        ok &= pos[c][0] >= 0
    keep = np.flatnonzero(ok)
    sub = pd.DataFrame({c: columns[c].iloc[keep].reset_index(drop=True) for c in cols})
    for c, (p, fit_levels) in pos.items():
        sub[c] = fit_levels.iloc[p[keep]].reset_index(drop=True)  # the fit's own level values and dtype
    if not len(sub):
        return np.zeros((0, len(spec.column_names))), list(spec.column_names), np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = spec.get_model_matrix(sub, na_action="drop", output="pandas", context=_context(escape_strings(form.rhs)[1]))
    rows = keep[X.index.to_numpy()]
    return X.to_numpy(dtype=np.float64), [str(c) for c in X.columns], rows
