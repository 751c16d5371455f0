"""Positions in messages: 0-based in Python's text, 1-based in R's, by construction.

Every message of the package that names a position (a row, an element of a vector, a column of a
matrix) builds it with :func:`at` and joins the pieces with :func:`located`::

    raise InvalidArgumentError(located(f"argument `y` must hold 0/1 labels; got {v} at ", at(i)))

The message is a :class:`Located`, a ``str`` whose text is Python's (``... at position 3``) and
which keeps the positions as data (``.positions``: ``[("position", 3)]``); ``.one_based()`` is the
same message with every position counted from 1 (``... at position 4``), which the R bridge
(:func:`llmsurrogate.rbridge.r_call`) gives R. The package's exceptions expose the positions of
their message as ``err.positions``. No message writes a position into an f-string itself
(``tests/package/test_positions.py`` checks the source), so no position reaches R 0-based.

Examples
--------
>>> from llmsurrogate._positions import at, located
>>> msg = located("argument `w` has a negative value (-1) at ", at(0), "; weights must be >= 0")
>>> msg
'argument `w` has a negative value (-1) at position 0; weights must be >= 0'
>>> msg.one_based()
'argument `w` has a negative value (-1) at position 1; weights must be >= 0'
>>> msg.positions
[('position', 0)]
>>> msg.render(lambda p: f"line {p.index + 2}")
'argument `w` has a negative value (-1) at line 2; weights must be >= 0'
>>> located("a missing value at ", at(2, "row", marked=True), ", ", at(1, "column")).one_based()
'a missing value at row 3, column 2'
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["At", "Located", "at", "located", "message_of", "one_based", "reworded"]


class At:
    """One 0-based position in a message: ``word`` ("position", "row", "column", ...) and ``index``.
    ``marked`` adds "(0-based)" to Python's text (where a reader could take it for a label or a
    1-based number) and ``note`` a remark in the same parentheses; R's text has neither mark."""

    __slots__ = ("index", "marked", "note", "word")

    def __init__(self, index: Any, word: str = "position", *, marked: bool = False, note: str | None = None) -> None:
        self.index = operator.index(index)  # numpy integers too; a float or a label is a bug of the caller
        self.word = word
        self.marked = marked
        self.note = note

    def text(self, base: int = 0) -> str:
        notes = (["0-based"] if self.marked and base == 0 else []) + ([self.note] if self.note else [])
        return f"{self.word} {self.index + base}" + (f" ({'; '.join(notes)})" if notes else "")

    def __reduce__(self):
        return (_at, (self.index, self.word, self.marked, self.note))

    def __repr__(self) -> str:
        return f"at({self.index!r}, {self.word!r})"


def _at(index, word, marked, note):
    return At(index, word, marked=marked, note=note)


class Located(str):
    """A message naming positions: ``str`` is Python's text (0-based); :meth:`one_based` R's."""

    __slots__ = ("parts",)
    parts: tuple

    def __new__(cls, parts: tuple) -> Located:
        self = super().__new__(cls, "".join(p.text(0) if isinstance(p, At) else p for p in parts))
        self.parts = parts
        return self

    @property
    def positions(self) -> list[tuple[str, int]]:
        """``[(word, index)]``, the 0-based positions in the message, in order."""
        return [(p.word, p.index) for p in self.parts if isinstance(p, At)]

    def one_based(self) -> str:
        """The message with every position counted from 1 (R's rows and positions)."""
        return self.render(lambda p: p.text(1))

    def render(self, position) -> str:
        """The message with each position written by ``position(at)`` (e.g. a file's line numbers)."""
        return "".join(position(p) if isinstance(p, At) else p for p in self.parts)

    def __reduce__(self):  # pickled with its positions (errors raised in worker processes)
        return (Located, (self.parts,))


def at(index: Any, word: str = "position", *, marked: bool = False, note: str | None = None) -> At:
    """A 0-based position for :func:`located`: ``at(3)`` reads "position 3" in Python and
    "position 4" in R; ``at(3, "row", marked=True)`` reads "row 3 (0-based)" in Python and "row 4"
    in R."""
    return At(index, word, marked=marked, note=note)


def located(*parts: Any) -> Located:
    """A message from text pieces and :func:`at` positions (a :class:`Located` piece keeps its
    positions; anything else is written with ``str``)."""
    flat: list = []
    for p in parts:
        if isinstance(p, Located):
            flat.extend(p.parts)
        elif isinstance(p, At):
            flat.append(p)
        else:
            flat.append(str(p))
    return Located(tuple(flat))


def one_based(message: Any) -> str:
    """R's text of a message: a :class:`Located`'s positions counted from 1; any other text as is."""
    return message.one_based() if isinstance(message, Located) else str(message)


def reworded(message: Any, change) -> str:
    """``message`` with ``change`` (text -> text: a renamed argument, another word) applied to its
    text, its positions kept (a :class:`Located` stays one).

    >>> reworded(located("argument `fml`: ", at(2, "row")), lambda t: t.replace("fml", "formula")).one_based()
    'argument `formula`: row 3'
    """
    if isinstance(message, Located):
        return Located(tuple(p if isinstance(p, At) else change(p) for p in message.parts))
    return change(str(message))


def message_of(err: BaseException) -> str:
    """An exception's (or warning's) message, a :class:`Located` where it was built as one, to
    quote inside another message without losing its positions."""
    first = err.args[0] if len(err.args) == 1 else None
    return first if isinstance(first, Located) else str(err)
