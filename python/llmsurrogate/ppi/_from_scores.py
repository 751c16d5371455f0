"""PPI straight from a table of LLM scores (docs/methods/ppi.md §13): a ``llmsurrogate.risk``
``RiskScores`` or a data frame with a score column, where the rows with a human answer are the
labelled rows and the rows without one the unlabelled rows, paired by row label."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..exceptions import InvalidArgumentError, NonFiniteError
from ._mean import mean
from ._regression import logistic, ols, poisson
from ._results import PPIResult

__all__ = ["from_scores"]

ESTIMANDS = ("mean", "ols", "logistic", "poisson")


def _table_of(scores, score: str) -> tuple[pd.DataFrame, bool]:
    """The scores' table (indexed by the data's row labels) and whether it is a RiskScores'."""
    table = getattr(scores, "table", None)
    if isinstance(table, pd.DataFrame) and hasattr(scores, "meta"):   # a RiskScores (duck-typed: ppi imports no capability)
        frame, risk = table, True
    elif isinstance(scores, pd.DataFrame):
        frame, risk = scores, False
    elif hasattr(scores, "to_pandas") and hasattr(scores, "columns"):
        raise InvalidArgumentError("argument `scores` is a polars DataFrame, which has no row labels to pair `y` by; "
                                   "pass `scores.to_pandas()` with the rows' labels as its index")
    elif isinstance(scores, pd.Series):
        frame, risk = scores.rename(score).to_frame(), False
    else:
        raise InvalidArgumentError(f"argument `scores` must be a RiskScores (llmsurrogate.risk.risk_scores), a pandas "
                                   f"DataFrame with a score column or a Series of scores; got {type(scores).__name__}")
    if not isinstance(score, str) or score not in frame.columns:
        raise InvalidArgumentError(f"argument `score`: {score!r} is not a column of `scores` (columns: "
                                   f"{[str(c) for c in frame.columns][:12]})")
    if frame.index.has_duplicates:
        dup = frame.index[frame.index.duplicated()][0]
        raise InvalidArgumentError(f"argument `scores` has the row label {dup!r} twice; rows are paired with `y` by "
                                   "label, so each label must be unique")
    return frame, risk


def _numeric(values: pd.Series, name: str) -> pd.Series:
    """A float Series (NaN kept) or an error naming the argument and the first bad row label."""
    s = values
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype(object)
    if s.dtype == bool or str(s.dtype) == "boolean":
        s = s.astype("Float64")
    try:
        out = pd.to_numeric(s, errors="raise").astype("Float64").astype(float)
    except (TypeError, ValueError):
        bad = next(label for label, v in s.items() if not pd.isna(v) and not _is_number(v))
        raise InvalidArgumentError(f"argument `{name}` must hold numbers (0/1 answers, scores or values); got "
                                   f"{s.loc[bad]!r} at row label {bad!r}") from None
    inf = np.isinf(out.to_numpy())
    if inf.any():
        raise NonFiniteError(f"argument `{name}` has an infinite value at row label {out.index[np.flatnonzero(inf)[0]]!r}")
    return out


def _is_number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return not isinstance(v, (str, bytes))


def _answers(y, frame: pd.DataFrame, risk: bool) -> tuple[pd.Series, str]:
    """``y`` on the scores' rows (NaN where a row has no answer) and its name."""
    if y is None:
        if risk and "label" in frame.columns:
            return frame["label"], "label"
        raise InvalidArgumentError("argument `y` is needed: a Series of the human answers indexed by the rows' labels "
                                   "(missing or NaN where a row has none) or the name of a column of `scores`")
    if isinstance(y, str):
        if y not in frame.columns:
            raise InvalidArgumentError(f"argument `y`: {y!r} is not a column of `scores` (columns: "
                                       f"{[str(c) for c in frame.columns][:12]})")
        return frame[y], y
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InvalidArgumentError(f"argument `y` has {y.shape[1]} columns; pass one (a Series)")
        y = y.iloc[:, 0]
    if not isinstance(y, pd.Series):
        raise InvalidArgumentError(f"argument `y` must be a pandas Series indexed by the rows' labels or a column name; "
                                   f"got {type(y).__name__}. Rows are paired by label, never by position: wrap an "
                                   "array as pd.Series(values, index=<the scored rows' labels>)")
    if y.index.has_duplicates:
        raise InvalidArgumentError(f"argument `y` has the row label {y.index[y.index.duplicated()][0]!r} twice")
    extra = y.index[~y.index.isin(frame.index)]
    if len(extra):
        raise InvalidArgumentError(f"argument `y` has the row label {extra[0]!r}, which `scores` does not have; rows "
                                   "are paired by label: every answer needs its scored row")
    name = y.name if isinstance(y.name, str) else "mean"
    return y.reindex(frame.index), name


def _design(formula, data, frame: pd.DataFrame) -> pd.DataFrame:
    """The regressors of every scored row from ``formula`` (its right-hand side, formulaic's syntax:
    ``"x1 + C(group)"``, an intercept unless ``- 1``) over ``data`` (default: the scores' table),
    built on all rows at once so that both samples share one coding."""
    if not isinstance(formula, str) or not formula.strip():
        raise InvalidArgumentError(f"argument `formula` must be a right-hand side such as '~ x1 + x2'; got {formula!r}")
    rhs = formula.split("~", 1)[1] if "~" in formula else formula
    if "~" in rhs or "|" in rhs:
        raise InvalidArgumentError(f"argument `formula` is the regressors only ('~ x1 + x2'; the outcome is `y`, no "
                                   f"fixed effects: ppi.feols); got {formula!r}")
    if data is None:
        data = frame
    if not isinstance(data, pd.DataFrame):
        raise InvalidArgumentError(f"argument `data` must be a pandas DataFrame indexed by the scored rows' labels; got "
                                   f"{type(data).__name__}")
    missing = frame.index[~frame.index.isin(data.index)]
    if len(missing):
        raise InvalidArgumentError(f"argument `data` has no row labelled {missing[0]!r}, a row of `scores`; rows are "
                                   "paired by label")
    if data.index.has_duplicates:
        raise InvalidArgumentError(f"argument `data` has the row label {data.index[data.index.duplicated()][0]!r} twice")
    rows = data.loc[frame.index]
    from formulaic import model_matrix

    try:
        mm = model_matrix(rhs.strip(), rows, na_action="raise")
    except Exception as err:  # noqa: BLE001 - formulaic's errors for unknown columns, NA, bad syntax
        raise InvalidArgumentError(f"argument `formula` {formula!r} cannot be built over `data`: {err}") from None
    return pd.DataFrame(np.asarray(mm, dtype=float), columns=[str(c) for c in mm.columns], index=frame.index)


def from_scores(scores, y=None, *, score: str = "score", estimand: str = "mean", formula=None, data=None,
                weights=None, method: str = "ppi++", level: float = 0.95, lam=None, coord=None) -> PPIResult:
    """Prediction-powered inference straight from a table of LLM scores (docs/methods/ppi.md §13):
    the rows with a human answer are the labelled rows (``y`` and the score), the rows without one
    the unlabelled rows (the score alone), paired **by row label**, never by position.

    ``scores``: a :class:`~llmsurrogate.risk.RiskScores` (its ``table``, indexed by the data's row
    labels), a pandas DataFrame with the score in column ``score``, or a Series of scores. ``y``:
    the human answers -- a pandas Series indexed by row labels (labels absent from it, or NaN, are
    unlabelled rows; a label ``scores`` lacks is an error), the name of a column of the table, or
    None: a RiskScores' ``label`` column (the data's target). ``estimand``: ``"mean"`` (the
    :func:`mean` of ``y``), or ``"ols"`` / ``"logistic"`` / ``"poisson"`` with ``formula``, the
    regressors' right-hand side (``"~ x1 + C(region)"``, formulaic syntax, an ``Intercept`` unless
    ``- 1``) over ``data`` (a frame indexed by the same row labels; default: the scores' table).
    ``weights``: a column name or a Series by row label. ``method``, ``level``, ``lam``, ``coord``:
    as in :func:`mean` and :func:`ols`. A missing score is an error naming its row label (PPI
    needs the prediction on every row); answers may be stored as floats (0.0 / 1.0) or nullable
    integers.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate import ppi
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.binomial(1, 0.4, 2000).astype(float)
    >>> table = pd.DataFrame({"score": np.clip(0.6 * truth + 0.2 + rng.normal(0, 0.15, 2000), 0, 1)},
    ...                      index=[f"r{i}" for i in range(2000)])
    >>> answers = pd.Series(truth[:250], index=table.index[:250], name="vote")   # 250 rows were hand-coded
    >>> res = ppi.from_scores(table, answers)
    >>> res.terms, res.n, res.N, round(res.estimate, 3)
    (['vote'], 250, 1750, 0.412)
    >>> shuffled = answers.sample(frac=1.0, random_state=1)                       # paired by label
    >>> ppi.from_scores(table, shuffled).estimate == res.estimate
    True
    """
    estimand = check_choice(estimand, "estimand", list(ESTIMANDS))
    frame, risk = _table_of(scores, score)
    yv, name = _answers(y, frame, risk)
    yv = _numeric(yv, "y")
    s = _numeric(frame[score], "score" if not risk else "scores")
    if s.isna().any():
        raise NonFiniteError(f"argument `scores` has a missing score at row label {s.index[s.isna().to_numpy()][0]!r}; "
                             "PPI needs the LLM's prediction on every row (drop the row, or score it)")
    labelled = yv.notna().to_numpy()
    if estimand == "mean" and (formula is not None or data is not None):
        raise InvalidArgumentError("arguments `formula` / `data` build a regression's regressors; with estimand='mean' "
                                   "leave them out")
    if estimand == "mean" and coord is not None:
        raise InvalidArgumentError("argument `coord` chooses a regression coefficient; with estimand='mean' leave it out")
    w = w_u = None
    if weights is not None:
        if isinstance(weights, str):
            if weights not in frame.columns:
                raise InvalidArgumentError(f"argument `weights`: {weights!r} is not a column of `scores`")
            wv = frame[weights]
        elif isinstance(weights, pd.Series):
            missing = frame.index[~frame.index.isin(weights.index)]
            if len(missing):
                raise InvalidArgumentError(f"argument `weights` has no weight for the row label {missing[0]!r}")
            wv = weights.loc[frame.index] if not weights.index.has_duplicates else None
            if wv is None:
                raise InvalidArgumentError("argument `weights` has duplicated row labels")
        else:
            raise InvalidArgumentError("argument `weights` must be a column name of `scores` or a Series by row label")
        wv = _numeric(wv, "weights")
        w, w_u = wv[labelled], wv[~labelled]
    y_lab = yv[labelled].rename(name)
    s_lab, s_unl = s[labelled], s[~labelled]
    if estimand == "mean":
        res = mean(y_lab, s_lab, s_unl, method=method, level=level, lam=lam, weights=w, weights_unlabeled=w_u)
    else:
        if formula is None:
            raise InvalidArgumentError(f"argument `formula` is needed for estimand={estimand!r}: the regressors, e.g. "
                                       "'~ age + C(region)'")
        X = _design(formula, data, frame)
        fn = {"ols": ols, "logistic": logistic, "poisson": poisson}[estimand]
        res = fn(X[labelled], y_lab, s_lab, X[~labelled], s_unl, method=method, level=level, lam=lam, coord=coord,
                 weights=w, weights_unlabeled=w_u)
    note = (f"from scores: {int(labelled.sum())} rows with a human answer (labelled), {int((~labelled).sum())} "
            f"without (unlabelled), of {len(frame)} scored rows, paired by row label (docs/methods/ppi.md §13)")
    return dataclasses.replace(res, notes=(*res.notes, note))
