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

from .._positions import reworded
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..fe import FeolsResult, etable, feols
from ._convert import _listed, _r_frame, from_r

__all__ = ["R_FUNCTIONS", "FeolsHandle", "RSpelling", "r_etable", "r_feols", "r_formula", "r_term_names", "r_vcov"]

# A coefficient name's part from an encoded variable: ``C(g)[T.b]``, ``factor(g)[b]``, ``poly(x, 2)[1]``.
_ENCODED = re.compile(r"^(.*\))\[(?:T\.)?(.*)\]$", re.S)


def _split_top(name: str) -> list[str]:
    """``name`` split at the ``:`` that join an interaction's parts (not those inside ``()`` or ``[]``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(name):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == ":" and depth == 0:
            parts.append(name[start:i])
            start = i + 1
    return parts + [name[start:]]


def _normalized(expr: str) -> str:
    """An expression without spaces (but those inside a name in backticks), without the backticks
    and with R's ``^`` for Python's ``**`` (how R and formulaic spell one expression differently:
    ``log(`x.1`)`` is R's ``log(x.1)``)."""
    parts = re.split(r"(`[^`]*`)", expr)
    return "".join(p[1:-1] if p.startswith("`") and len(p) > 1 else re.sub(r"\s+", "", p).replace("**", "^")
                   for p in parts)


# The column that R's factor(g) (C(g)) encodes: ``C(g)``, ``C(`firm.id`)``.
_FACTOR_CALL = re.compile(r"^(?:C|factor)\(\s*(`[^`]+`|[^`,()\s]+)\s*\)$")


class RSpelling(list):
    """R's spelling of a formula's terms: the formula's variables as R's ``terms()`` lists them
    (the list, what :func:`r_term_names` takes as ``r_variables``) and in ``levels``, per column
    that ``factor()``/``C()``/``i()`` encode, R's label of each level by Python's (``"-2.0"`` ->
    ``"-2"``, ``"True"`` -> ``"TRUE"``), as ``as.character()`` writes the values (lm()'s and
    fixest's names)."""

    def __init__(self, variables: Any = (), levels: Mapping[str, Mapping[str, str]] | None = None):
        super().__init__(variables)
        self.levels = dict(levels or {})


def _relabel_i(name: str, levels: Mapping[str, Mapping[str, str]]) -> str:
    """The levels in fixest's ``i()`` names (``rel::-6.0:treat``) in R's labels (``rel::-6:treat``)."""
    for col in sorted(levels, key=len, reverse=True):
        labels, start = levels[col], 0
        while True:
            j = name.find(f"{col}::", start)
            if j < 0:
                break
            if j > 0 and name[j - 1] != ":":
                start = j + 1
                continue
            at = j + len(col) + 2
            rest = name[at:]
            found = max((lab for lab in labels if rest == lab or rest.startswith(lab + ":")), key=len, default=None)
            if found is not None:
                name = name[:at] + labels[found] + rest[len(found):]
                at += len(labels[found])
            start = at
    return name


def r_formula(formula: str) -> str:
    """R's formula text as the Python parser takes it: ``^`` before the ``|`` (R's power, in
    ``I(x^2)``) is ``**``; after it, ``a^b`` interacts fixed effects and stays.

    >>> r_formula("y ~ I(x^2) + log(z) | firm^year")
    'y ~ I(x**2) + log(z) | firm^year'
    """
    head, bar, tail = formula.partition("|")
    return head.replace("^", "**") + bar + tail


def r_term_names(names: Any, formula: str, r_variables: Any = None) -> list[str]:
    """Coefficient names as R's ``lm()`` writes them, from formulaic's (pyfixest's):
    ``Intercept`` is ``(Intercept)``; a variable is spelled as R deparses it (``r_variables``, the
    formula's variables as R's ``terms()`` lists them: ``I(x^2)`` for formulaic's ``I(x ** 2)``);
    the dummy of level ``b`` of R's ``factor(g)`` is ``factor(g)b`` and the degree-1 column of
    ``poly(x, 2)`` is ``poly(x, 2)1``, as lm() names them. Written as pyfixest writes them
    (``C(g)``, ``i(g)``), the names stay pyfixest's. Without ``r_variables``, the ``factor()``
    calls of ``formula`` are taken as R's variables.

    >>> r_term_names(["Intercept", "x", "C(g)[T.b]", "x:C(g)[T.b]", "C(h)[T.2]"], "y ~ x*factor(g) + C(h)")
    ['(Intercept)', 'x', 'factor(g)b', 'x:factor(g)b', 'C(h)[T.2]']
    >>> r_term_names(["I(x ** 2)", "poly(z, 2)[1]", "factor(g)[lo]"], "", ["y", "I(x^2)", "poly(z, 2)", "factor(g)"])
    ['I(x^2)', 'poly(z, 2)1', 'factor(g)lo']
    """
    if r_variables is None:
        r_variables = re.findall(r"\bfactor\(\s*[A-Za-z_.][A-Za-z0-9_.]*\s*\)", formula)
    levels = getattr(r_variables, "levels", {})
    spelled: dict[str, str] = {}
    exact: dict[str, str] = {}  # a column as formulaic names it (``my var``) -> R's name (```my var```)
    for v in _listed(r_variables):
        v = str(v)
        spelled[_normalized(v)] = v
        if re.fullmatch(r"`[^`]+`", v):
            exact[v[1:-1]] = v
        if v.startswith("factor("):  # formulaic's name may be C(g) for R's factor(g)
            spelled.setdefault(_normalized("C(" + v[len("factor("):]), v)

    def part(p: str) -> str:
        if p in exact:
            return exact[p]
        m = _ENCODED.match(p)
        base, level = (m.group(1), m.group(2)) if m else (p, None)
        if level is not None:
            col = _FACTOR_CALL.match(base)
            level = levels.get(col.group(1).strip("`"), {}).get(level, level) if col else level
        r = spelled.get(_normalized(base))
        if r is None:
            return p if m is None else p[:m.start(2)] + level + p[m.end(2):]
        if level is None:
            return r
        return r + level if r.startswith(("factor(", "poly(")) else p[:m.start(2)] + level + p[m.end(2):]

    return ["(Intercept)" if str(n) == "Intercept" else
            ":".join(part(p) for p in _split_top(_relabel_i(str(n), levels))) for n in names]


def _r_levels(frame, r_levels: Any) -> dict[str, dict[str, str]]:
    """The levels R sent for the columns that ``factor()``/``C()``/``i()`` encode (``r_levels``:
    per column ``{"order": labels}`` for a factor or character column, its levels in R's order, or
    ``{"values", "labels"}`` for numbers, logicals and dates, R's values and ``as.character()`` of
    them) applied to ``frame``: a text column becomes a Categorical in R's order (the reference is
    R's first level, an unused one dropped, :func:`llmsurrogate.fe._transforms.build`); returns R's
    label of each level by Python's (what :class:`RSpelling` keeps)."""
    import pandas as pd

    from .._validation import level_key

    out: dict[str, dict[str, str]] = {}
    for col, spec in (r_levels or {}).items():
        if col not in frame.columns or not isinstance(spec, Mapping):
            continue
        s = frame[col]
        if "order" in spec:
            order = [str(v) for v in _listed(spec["order"])]
            if not (pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s)):
                continue
            cat = pd.Categorical(s, categories=list(dict.fromkeys(order)))
            if bool((pd.isna(cat) & s.notna().to_numpy()).any()):
                raise InvalidArgumentError(f"internal: a value of column {col!r} is not among its levels from R")
            frame[col] = cat
            continue
        values = from_r(spec.get("values"))
        labels = [str(v) for v in _listed(spec.get("labels"))]
        by_key = {}
        for v, lab in zip(_listed(values), labels):
            try:
                by_key[level_key(v)] = lab
            except TypeError:
                pass
        names: dict[str, str] = {}
        for u in pd.unique(s.dropna()):
            try:
                lab = by_key.get(level_key(u.item() if isinstance(u, np.generic) else u))
            except TypeError:
                lab = None
            if lab is not None:
                names[str(u)] = lab
        out[col] = names
    return out


def _renamed(fit: FeolsResult, formula: str, r_variables: Any) -> dict[str, str]:
    """Python's name -> R's (:func:`r_term_names`) of the terms of ``fit`` kept and dropped, where they differ."""
    names = list(fit.terms) + list(fit.dropped_collinear)
    return {p: r for p, r in zip(names, r_term_names(names, formula, r_variables)) if p != r}


def _r_text(text: str, renamed: Mapping[str, str]) -> str:
    """A note or warning with the terms in R's names (the longest names first)."""
    for p in sorted(renamed, key=len, reverse=True):
        text = text.replace(p, renamed[p])
    return text


def _in_r_terms(fit: FeolsResult, formula: str, r_variables: Any = None) -> FeolsResult:
    """``fit`` with its terms (kept and dropped as collinear, also in its notes) in R's names
    (:func:`r_term_names`) and its formula as R wrote it: what R prints, tidies and puts in
    ``etable()``. A shallow copy: the estimation sample stays with ``fit``."""
    renamed = _renamed(fit, formula, r_variables)
    if not renamed and fit.formula == formula:
        return fit
    out = copy.copy(fit)
    object.__setattr__(out, "terms", [renamed.get(t, t) for t in fit.terms])
    object.__setattr__(out, "dropped_collinear", [renamed.get(t, t) for t in fit.dropped_collinear])
    object.__setattr__(out, "notes", tuple(_r_text(n, renamed) for n in fit.notes))
    object.__setattr__(out, "formula", formula)
    return out


class FeolsHandle:
    """The Python side of an R ``feols()`` fit: the :class:`FeolsResult` (with its estimation
    sample), the formula as R wrote it and its variables as R spells them (for R's names,
    :func:`r_term_names`) and the weights of every row of the data (None without weights), for
    ``weights()``."""

    __slots__ = ("fit", "formula", "weights", "r_variables")

    def __init__(self, fit: FeolsResult, formula: str, weights: Any, r_variables: Any = None):
        self.fit = fit
        self.formula = formula
        self.weights = weights
        self.r_variables = r_variables

    def __repr__(self) -> str:
        return f"<feols fit: {self.formula}, {self.fit.nobs} observations>"


def _formula_arg(err: InvalidArgumentError) -> InvalidArgumentError:
    """The Python formula argument is ``fml``; R's is ``formula``."""
    if err.args and isinstance(err.args[0], str):
        err.args = (reworded(err.args[0], lambda text: text.replace("argument `fml`", "argument `formula`")),
                    *err.args[1:])
    return err


def r_feols(formula: str, data: Mapping, vcov: Any = None, weights: Any = None, fixef_rm: str = "singleton",
            n_jobs: Any = None, handle: bool = False, r_variables: Any = None, r_levels: Any = None) -> Any:
    """:func:`llmsurrogate.fe.feols` for the R package's ``feols()``: ``formula`` as R writes it
    (:func:`r_formula`), ``weights`` a column name or the values (``None`` for R's ``NA``, such rows
    dropped), ``r_variables`` the formula's variables as R's ``terms()`` spells them, ``r_levels``
    R's levels of the columns that ``factor()``/``C()``/``i()`` encode (:func:`_r_levels`: their
    order, the reference first, and their labels in the names); returns the
    :class:`FeolsResult` in R's names (:func:`r_term_names`), or with ``handle=True`` (the R
    package's call) ``{"fit": that result, "handle": its FeolsHandle}`` (an R package of an earlier
    release, which keeps no handle, gets the result alone)."""
    if weights is not None and not isinstance(weights, str):
        weights = np.array([np.nan if v is None else float(v) for v in _listed(weights)], dtype=np.float64)
    if n_jobs is not None:
        n_jobs = int(n_jobs)
    frame = _r_frame(data)
    variables = re.findall(r"\bfactor\(\s*[A-Za-z_.][A-Za-z0-9_.]*\s*\)", formula) if r_variables is None else \
        _listed(r_variables)
    r_variables = RSpelling(variables, _r_levels(frame, r_levels))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LLMSurrogateWarning)
            fit = feols(r_formula(formula), frame, vcov=vcov, weights=weights, fixef_rm=fixef_rm, n_jobs=n_jobs)
    except InvalidArgumentError as err:
        raise _formula_arg(err) from None
    renamed = _renamed(fit, formula, r_variables)
    for w in caught:  # R's word for a missing value, R's names of the terms
        warnings.warn(_r_text(str(w.message).replace("missing values (NaN/None)", "missing values (NA)"), renamed),
                      w.category, stacklevel=2)
    if isinstance(weights, str):
        weights = frame[weights].to_numpy(dtype=np.float64, na_value=np.nan)
    r_fit = _in_r_terms(fit, formula, r_variables)
    if not handle:
        return r_fit
    return {"fit": r_fit, "handle": FeolsHandle(fit, formula, weights, r_variables)}


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
    return {"names": r_term_names(mm.columns, h.formula, h.r_variables),
            "values": [mm.iloc[:, j].to_numpy(dtype=np.float64) for j in range(mm.shape[1])]}


def r_weights(handle: Any) -> Any:
    """The weights of the estimation rows (None for an unweighted fit)."""
    h = _handle(handle)
    if h.weights is None:
        return None
    return np.asarray(h.weights, dtype=np.float64)[h.fit.obs_index]


def _is_fit_data(fit: FeolsResult, frame) -> bool:
    """Whether ``frame`` (all rows of a data frame, with the formula's columns) is the data ``fit``
    was estimated on: its outcome (a plain column) equals the fit's on the estimation rows and its
    prediction there the fitted values (to 1e-8 of their scale)."""
    s = fit._fitted_sample()
    rows = fit.obs_index
    if len(frame) != fit.n_input:
        return False
    fitted = np.asarray(s.y - s.resid, dtype=np.float64)
    scale = max(float(np.max(np.abs(s.y))) if len(s.y) else 0.0, 1e-300)
    outcome = s.form.outcome_column
    try:
        if outcome is not None:
            y = frame[outcome].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
            if not np.allclose(y, s.y, rtol=0.0, atol=1e-12 * scale):
                return False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pred = fit.predict(frame)[rows]
    except (InvalidArgumentError, KeyError, TypeError, ValueError):
        return False
    return bool(np.all(np.isfinite(pred)) and np.max(np.abs(pred - fitted), initial=0.0) <= 1e-8 * scale)


def r_vcov(handle: Any, vcov: Any, data: Any = None, adj: bool = True, cluster_adj: bool = True,
           ssc_words: str = "", data_name: str = "the data") -> dict:
    """R's ``summary(fit, vcov = )``, ``vcov(fit, vcov = )``, ...: the fit of ``handle`` with its
    variance recomputed (:meth:`FeolsResult.with_vcov`), as :func:`r_feols` returns it
    (``{"fit", "handle"}``). ``data``: when a cluster column is neither a fixed effect nor a
    cluster column of the fit, the columns R found by the name of the fit's data (``data_name``;
    all its rows, the formula's columns and the cluster columns), refused unless it is the data of
    the fit (:func:`_is_fit_data`); ``ssc_words``: the label's small-sample part as R writes it
    (``ssc(adj = FALSE)``)."""
    h = _handle(handle)
    frame = None if data is None else _r_frame(data)
    if frame is not None and not _is_fit_data(h.fit, frame):
        raise InvalidArgumentError(
            f"the cluster columns are read from the fit's data, {data_name}, found by its name where the method was "
            "called; that data is not the one the fit was estimated on (other rows or values): refit with "
            "feols(..., vcov = ...)")
    fit = h.fit.with_vcov(vcov, frame, k_adj=bool(adj), G_adj=bool(cluster_adj))
    if ssc_words:  # fixest's words for the small-sample corrections in R's label
        object.__setattr__(fit, "vcov_type", fit.vcov_type.split("; ")[0] + "; " + ssc_words)
    return {"fit": _in_r_terms(fit, h.formula, h.r_variables), "handle": FeolsHandle(fit, h.formula, h.weights,
                                                                                     h.r_variables)}


def r_etable(fits: Any, type: str = "text", digits: Any = 3, stars: bool = True):
    """:func:`llmsurrogate.fe.etable` of fits sent as their JSON (``FeolsResult.to_json``): a string
    for ``"text"`` and ``"tex"``, for ``"df"`` the table with its row labels in a column ``row``;
    the intercept is ``(Intercept)``, as R names it."""
    models = [FeolsResult.from_json(j) for j in _listed(fits)]
    models = [_in_r_terms(m, m.formula, ()) for m in models]  # R's fits come in R's names: the intercept only
    out = etable(models, type=type, digits=int(digits), stars=bool(stars))
    if type == "df":
        out = out.rename_axis("row").reset_index()
    return out


#: What R may call here (``.call("fe.<name>")``).
R_FUNCTIONS = {"feols": r_feols, "etable": r_etable, "obs_rows": r_obs_rows, "fitted": r_fitted, "resid": r_resid,
               "predict": r_predict, "fixef": r_fixef, "model_matrix": r_model_matrix, "weights": r_weights,
               "vcov": r_vcov}
