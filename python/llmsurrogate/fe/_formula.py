"""Parse pyfixest's formula syntax: ``"y ~ x1 + x2 + x1:x2 | firm + date"``.

Supported: numeric regressors, ``a:b`` (product), ``a*b`` (``a + b + a:b``; ``a*b*c`` expands to every
sub-product), ``0`` / ``-1`` (no intercept; only meaningful without fixed effects), and after ``|``
fixed effects joined by ``+``, with ``a^b`` for the interacted fixed effect (one level per
observed pair). Terms are ordered as formulaic (pyfixest) orders them: by degree, then in order of
appearance; duplicates are dropped. At most :data:`MAX_TERMS` terms (counted before they are built),
and the outcome may not appear on the right of ``~``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ..exceptions import InvalidArgumentError

_NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")
#: Most regressor terms a formula may expand to (``a*b*c`` is 7 terms), checked before they are built.
MAX_TERMS = 1000


@dataclass(frozen=True)
class Formula:
    """A parsed formula: the outcome, the regressor terms (tuples of column names, multiplied),
    the fixed effects (tuples of column names, interacted with ``^``) and whether an intercept
    is fitted (only without fixed effects).

    Examples
    --------
    >>> f = parse_formula("y ~ x + z")       # a Formula
    >>> f.terms, f.intercept, f.term_names, f.columns()
    ((('x',), ('z',)), True, ['Intercept', 'x', 'z'], ['y', 'x', 'z'])
    """

    outcome: str
    terms: tuple[tuple[str, ...], ...]
    fixef: tuple[tuple[str, ...], ...]
    intercept: bool
    text: str

    @property
    def term_names(self) -> list[str]:
        names = [":".join(t) for t in self.terms]
        return (["Intercept"] if self.intercept else []) + names

    @property
    def fixef_names(self) -> list[str]:
        return ["^".join(f) for f in self.fixef]

    def columns(self) -> list[str]:
        """Every data column the formula names (outcome, regressors, fixed effects), once each."""
        cols = [self.outcome] + [c for t in self.terms for c in t] + [c for f in self.fixef for c in f]
        return list(dict.fromkeys(cols))


def _check_name(name: str, formula: str) -> str:
    if not _NAME.match(name):
        raise InvalidArgumentError(
            f"argument `fml`: {name!r} in {formula!r} is not a column name; the formula takes numeric "
            "columns joined by `+`, `:` and `*` (transformations such as C(), i() or log() are not "
            "supported: create the column first)"
        )
    return name


def parse_formula(fml: str) -> Formula:
    """Parse ``fml``; :class:`InvalidArgumentError` naming ``fml`` on anything else.

    Examples
    --------
    >>> f = parse_formula("y ~ x1*x2 | firm + year^month")
    >>> f.outcome, f.term_names, f.fixef_names, f.intercept
    ('y', ['x1', 'x2', 'x1:x2'], ['firm', 'year^month'], False)
    """
    if not isinstance(fml, str) or "~" not in fml:
        raise InvalidArgumentError(f"argument `fml` must be a formula such as 'y ~ x1 + x2 | firm + date'; got {fml!r}")
    lhs, rhs = fml.split("~", 1)
    outcome = lhs.strip()
    if not outcome or "+" in outcome:
        raise InvalidArgumentError(f"argument `fml`: one outcome column before `~`; got {lhs.strip()!r}")
    _check_name(outcome, fml)
    parts = rhs.split("|")
    if len(parts) > 2:
        raise InvalidArgumentError(
            f"argument `fml`: at most one `|` (regressors | fixed effects); got {fml!r} (instrumental "
            "variables are not supported)"
        )
    intercept = True
    terms: list[tuple[str, ...]] = []
    n_factors = [min(len(p.split("*")), 64) for p in parts[0].split("+")]
    n_terms = sum(2**c - 1 for c in n_factors)
    if n_terms > MAX_TERMS:
        raise InvalidArgumentError(
            f"argument `fml`: the regressors expand to {n_terms:,}{'+' if max(n_factors) == 64 else ''} terms "
            f"(`a*b*c` is every product of a, b and c: 7 terms), more than {MAX_TERMS:,}; write the interactions "
            "wanted with `:`")
    for raw in parts[0].split("+"):
        piece = raw.strip()
        if not piece:
            raise InvalidArgumentError(f"argument `fml`: empty term in {fml!r}")
        if piece in ("0", "-1"):
            intercept = False
            continue
        if piece == "1":
            continue
        if "*" in piece:
            factors = [_check_name(p.strip(), fml) for p in piece.split("*")]
            for r in range(1, len(factors) + 1):
                terms.extend(tuple(c) for c in itertools.combinations(factors, r))
        else:
            terms.append(tuple(_check_name(p.strip(), fml) for p in piece.split(":")))
    # a term is a set of columns: x:x is x, x2:x1 is x1:x2 if x1:x2 came first
    seen: dict[frozenset, tuple[str, ...]] = {}
    for t in terms:
        t = tuple(dict.fromkeys(t))
        seen.setdefault(frozenset(t), t)
    ordered = sorted(seen.values(), key=len)  # stable: by degree, then appearance
    fixef: list[tuple[str, ...]] = []
    if len(parts) == 2:
        for raw in parts[1].split("+"):
            piece = raw.strip()
            if not piece:
                raise InvalidArgumentError(f"argument `fml`: empty fixed effect in {fml!r}")
            if piece == "0":
                continue
            fe = tuple(_check_name(p.strip(), fml) for p in piece.split("^"))
            if fe not in fixef:
                fixef.append(fe)
    if fixef:
        intercept = False
    if any(outcome in t for t in ordered) or any(outcome in f for f in fixef):
        raise InvalidArgumentError(f"argument `fml`: the outcome {outcome!r} is also on the right of `~` in {fml!r}")
    if not ordered:
        raise InvalidArgumentError(f"argument `fml`: no regressor in {fml!r}; name at least one column after `~`")
    return Formula(outcome=outcome, terms=tuple(ordered), fixef=tuple(fixef), intercept=intercept, text=fml.strip())
