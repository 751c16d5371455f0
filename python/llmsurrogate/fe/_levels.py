"""The levels of new data matched to a fit's levels: by value within a dtype family, never by the
text of the value and never to the reference level by accident (docs/methods/fe.md §3).

Families: **numbers** (``bool``, integers and floats of any width, pandas' nullable ones: ``True``
is the level ``1``, ``3.0`` the level ``3``), **text** (``str``), **dates** (datetime64,
Timestamp), **durations** (timedelta64, Timedelta); anything else is its own family, compared by
``==``. A value of a family the fit's levels have but not among them is an unseen level (the row
is left out: NaN); a value of another family (the text ``"1"`` for a column fitted on numbers) is
an :class:`InvalidArgumentError` naming the column: it is a type to convert, not a new level.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import level_key
from ..exceptions import InvalidArgumentError

_FAMILY_WORDS = {"number": "numbers", "text": "text", "date": "dates", "duration": "durations"}


def _show(values, k: int = 4) -> str:
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in list(values)[:k])
    return shown + (", ..." if len(values) > k else "")


class LevelMatcher:
    """The fit's levels of one column (``levels``: its distinct values, in any order), matched
    against the values of new data by :meth:`positions`."""

    def __init__(self, levels, column: str):
        self.levels = list(levels)
        self.column = column
        self.index: dict = {}
        for j, v in enumerate(self.levels):
            try:
                self.index.setdefault(level_key(v), j)
            except TypeError:  # an unhashable level: matched by nothing
                pass
        self.families = {k[0] for k in self.index}

    def positions(self, values, argument: str = "newdata") -> np.ndarray:
        """Per value of ``values`` the position of its level in ``levels``; -1 where the value is
        missing or an unseen level of a family the fit's levels have. Raises
        :class:`InvalidArgumentError` (naming ``argument`` and the column) for a value of another
        family."""
        codes, uniques = pd.factorize(pd.Series(values).astype(object), use_na_sentinel=True)
        found = np.full(len(uniques) + 1, -1, dtype=np.int64)  # the last: missing (code -1)
        for u, v in enumerate(uniques):  # missing values are not among the uniques
            try:
                key = level_key(v)
                j = self.index.get(key, -1)
            except TypeError:
                key, j = (type(v).__name__, None), -1
            if j < 0 and key[0] not in self.families:
                have = " and ".join(sorted(_FAMILY_WORDS.get(f, f) for f in self.families)) or "no levels"
                raise InvalidArgumentError(
                    f"argument `{argument}`: column {self.column!r} holds {_FAMILY_WORDS.get(key[0], key[0])} "
                    f"({v!r}) where the fit's levels are {have} ({_show(self.levels)}); convert the column to the "
                    "type it had in the fit (docs/methods/fe.md §3)")
            found[u] = j
        return found[codes]


def match_levels(frame: pd.DataFrame, columns, parts, argument: str = "newdata") -> np.ndarray:
    """The level (0..G-1) of each row of ``frame`` for a fixed effect of ``columns`` whose level
    ``k`` has the value ``parts[j][k]`` in column ``j`` (one column, or several for ``a^b``); -1
    where a value is missing or the combination is not a level of the fit."""
    matchers = [LevelMatcher(part, c) for c, part in zip(columns, parts)]
    pos = np.column_stack([m.positions(frame[c], argument) for m, c in zip(matchers, columns)])
    # a level's canonical positions: per column, the first level with the same value
    level_pos = np.column_stack([[m.index.get(level_key(v), -1) for v in part] for m, part in zip(matchers, parts)])
    lookup = {tuple(row): k for k, row in reversed(list(enumerate(level_pos.tolist())))}
    out = np.full(len(frame), -1, dtype=np.int64)
    valid = np.all(pos >= 0, axis=1)
    if valid.any():
        rows, inverse = np.unique(pos[valid], axis=0, return_inverse=True)
        found = np.array([lookup.get(tuple(r), -1) for r in rows.tolist()], dtype=np.int64)
        out[valid] = found[inverse.reshape(-1)]
    return out
