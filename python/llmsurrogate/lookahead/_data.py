"""The estimation sample of the lookahead test and its bootstrap: columns checked, complete rows
kept (with a count and a warning), optional within-sample standardisation (§2.5), the formula."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import as_frame, note_dropped, require_columns
from ..exceptions import InvalidArgumentError
from ..fe import Formula, parse_formula


def _names(value, arg: str, *, allow_empty: bool = True) -> list[str]:
    if isinstance(value, str):
        value = [value]
    try:
        out = list(value)
    except TypeError:
        raise InvalidArgumentError(f"argument `{arg}` must be a column name or a list of them; got {value!r}") from None
    if not all(isinstance(v, str) and v for v in out):
        raise InvalidArgumentError(f"argument `{arg}` must hold column names (non-empty strings); got {value!r}")
    if not out and not allow_empty:
        raise InvalidArgumentError(f"argument `{arg}` must name at least one column")
    return out


@dataclass
class Sample:
    frame: object  # pandas DataFrame: the complete rows, standardised where asked
    formula: str  # the interaction regression
    form: Formula  # the same, parsed (once: the fits take it as it is)
    baseline_formula: str  # without the LAP terms (Table II column 1)
    interaction: str  # the term name of signal x LAP
    fe: list
    n_input: int
    n_dropped: int
    notes: list
    lap_mean: float
    lap_sd: float
    lap_min: float  # the smallest and largest LAP of the sample (the marginal-effect plot's range)
    lap_max: float
    signal_sd: float


def prepare(data, outcome: str, signal: str, lap: str, fe, controls, standardize: bool,
            extra: list[str] | tuple = ()) -> Sample:
    """The estimation sample (see the module docstring); ``extra``: more columns a row must have
    (the cluster or resampling column). Called by the public functions only, which the
    deprecation wrapper wraps: warnings name their caller's caller."""
    for arg, v in (("outcome", outcome), ("signal", signal), ("lap", lap)):
        if not isinstance(v, str) or not v:
            raise InvalidArgumentError(f"argument `{arg}` must be a column name; got {v!r}")
    if len({outcome, signal, lap}) < 3:
        raise InvalidArgumentError(f"arguments `outcome`, `signal` and `lap` must be three different columns; got "
                                   f"{outcome!r}, {signal!r}, {lap!r}")
    fe = _names(fe, "fe", allow_empty=False)
    controls = _names(controls, "controls")
    if not isinstance(standardize, (bool, np.bool_)):
        raise InvalidArgumentError(f"argument `standardize` must be True or False; got {standardize!r}")
    frame = as_frame(data, "data")
    rhs = [signal, lap, f"{signal}:{lap}"] + controls
    fml = f"{outcome} ~ {' + '.join(rhs)} | {' + '.join(fe)}"
    form = parse_formula(fml)
    if form.transformed:
        raise InvalidArgumentError("argument `controls`: column names and `:` products of them only (no C(), "
                                   "log(), I(), ...); add a transformed column to `data` instead")
    base_terms = [signal] + [c for c in controls if lap not in c.replace("*", ":").split(":")]
    base_fml = f"{outcome} ~ {' + '.join(base_terms)} | {' + '.join(fe)}"
    used = list(dict.fromkeys(form.columns() + [c for c in extra if c is not None]))
    require_columns(frame, used, "data")
    n_input = len(frame)
    if n_input == 0:
        raise InvalidArgumentError("argument `data` has no rows")
    sub = frame[used]
    if not isinstance(sub, pd.DataFrame):
        sub = pd.DataFrame(sub)
    sub = sub.copy()
    numeric = list(dict.fromkeys([outcome] + [c for t in form.terms for c in t]))
    for c in numeric:
        s = sub[c]
        if not (pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)) or pd.api.types.is_complex_dtype(s):
            raise InvalidArgumentError(f"argument `data`: column {c!r} is not numeric (dtype {s.dtype})")
        sub[c] = s.to_numpy(dtype=np.float64, na_value=np.nan)
    ok = np.ones(n_input, dtype=bool)
    for c in used:
        col = sub[c]
        if c in numeric:
            ok &= np.isfinite(col.to_numpy(dtype=np.float64))
        else:
            ok &= ~pd.isna(col).to_numpy()
    notes: list[str] = []
    n_dropped = int(n_input - ok.sum())
    note_dropped(notes, n_dropped, stacklevel=4)
    sub = sub.loc[ok].reset_index(drop=True)
    if len(sub) < 3:
        raise InvalidArgumentError(f"argument `data`: {len(sub)} complete row(s); the test needs more")
    if standardize:
        for c in (outcome, signal, lap):
            x = sub[c].to_numpy(dtype=np.float64)
            sd = float(np.std(x, ddof=1))
            if not sd > 0:
                raise InvalidArgumentError(f"argument `standardize`: column {c!r} is constant; it cannot be standardised")
            sub[c] = (x - x.mean()) / sd
        notes.append(f"{outcome}, {signal} and {lap} standardised within the sample (ddof=1) before the interaction")
    lap_v = sub[lap].to_numpy(dtype=np.float64)
    return Sample(frame=sub, formula=fml, form=form, baseline_formula=base_fml, interaction=f"{signal}:{lap}", fe=fe,
                  n_input=n_input, n_dropped=n_dropped, notes=notes, lap_mean=float(lap_v.mean()),
                  lap_sd=float(np.std(lap_v, ddof=1)), lap_min=float(lap_v.min()), lap_max=float(lap_v.max()),
                  signal_sd=float(np.std(sub[signal].to_numpy(float), ddof=1)))
