"""Parse pyfixest's formula syntax: ``"y ~ x1 + C(f1) + log(x2) + x1:x2 | firm + year^month"``.

Two kinds of regressor parts, one grammar:

* **Plain** (numeric columns only): ``a:b`` (product), ``a*b`` (``a + b + a:b``; ``a*b*c``
  expands to every sub-product), ``0`` / ``+ 0`` / ``- 1`` (no intercept; only meaningful without
  fixed effects). Built here, column by column (the fast path the lookahead test takes).
* **Transforms** (built by formulaic, as pyfixest builds them, so that the coefficient names and
  the reference levels are pyfixest's): ``C(x)``, ``factor(x)`` (R's spelling, encoded as
  ``C(x)``), ``i(x)``, ``i(x, ref=...)``, ``i(x, z)`` (fixest's ``i()``: the dummies of ``x``,
  times the numeric ``z`` when given), ``log()`` (NaN for values <= 0: the row is dropped),
  ``exp()``, ``sqrt()``, ``abs()``, ``np.log()``/``np.exp()``/``np.sqrt()``/``np.abs()``,
  ``I(...)`` (arithmetic: ``+ - * / **``), ``poly(x, d)``, combined with ``:`` and ``*``; an
  outcome such as ``log(y)``.

Column names are Python's (``x1``), R's with dots (``x.1``, ``firm.id``, anywhere a name may
stand, also inside the functions) or any text in backticks (```my var```); formulaic gets the
last two in backticks.

Formulaic evaluates a term such as ``C(x)`` as a Python expression, so no text reaches it before
it has passed an allow-list here: each term must parse as a Python expression made only of column
names, numbers, the functions above, arithmetic, and the keyword ``ref=`` of ``i()`` (no attribute
but ``np.<function above>``, no subscript, no string outside ``ref=``, no exponent beyond
``MAX_EXPONENT``). Anything else is an :class:`InvalidArgumentError` naming ``fml``.

After ``|``: fixed effects joined by ``+``, with ``a^b`` for the interacted fixed effect (one level
per observed pair). Terms are ordered as formulaic (pyfixest) orders them: by degree, then in
order of appearance; duplicates are dropped. At most :data:`MAX_TERMS` terms (counted before they
are built), and the outcome may not appear on the right of ``~``.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass

from ..exceptions import InvalidArgumentError

_NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")
#: A column name in backticks (R's and formulaic's quoting of a name that is not syntactic: ```my var```).
_QUOTED = re.compile(r"^`([^`]+)`$")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|" + r'"(?:[^"\\]|\\.)*"')
#: A quoted string or a name in backticks (text that is not read as code).
_QUOTES = re.compile(_STRING.pattern + r"|`[^`]*`")
#: Where a name in an expression is a column name that Python cannot read as one: a name in
#: backticks, or R's name with dots (``x.1``) that is not a function's (not followed by ``(``).
_R_NAME = re.compile(r"`[^`]*`|(?<![A-Za-z0-9_.])[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]*)+(?![A-Za-z0-9_.`])"
                     r"(?!\s*\()")
_CALL = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)\s*\(.*\)$", re.S)
#: Most regressor terms a formula may expand to (``a*b*c`` is 7 terms), checked before they are built.
MAX_TERMS = 1000
#: Longest formula accepted (characters).
MAX_LENGTH = 10_000
#: Largest absolute exponent in ``I(x ** k)`` (a constant; a bigger one is refused, not computed).
MAX_EXPONENT = 100

#: Functions of a numeric expression (and ``np.<name>`` for the first four).
NUMERIC_FUNCTIONS = ("log", "exp", "sqrt", "abs", "I")
#: Functions that encode a column as dummies.
CATEGORICAL_FUNCTIONS = ("C", "factor", "i")
_NP_FUNCTIONS = ("log", "exp", "sqrt", "abs")
_MULTIPLE = ("sw", "csw", "sw0", "csw0", "mvsw")
_ALLOWED_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_SUPPORTED = ("column names (x, x.1, `my var`), C(x), factor(x), i(x), i(x, ref=...), i(x, z), log(), exp(), sqrt(), "
              "abs(), I(...) with + - * / **, poly(x, degree), and `:` / `*` between terms")


@dataclass(frozen=True)
class Formula:
    """A parsed formula: the outcome, the regressor terms, the fixed effects (tuples of column
    names, interacted with ``^``) and whether an intercept is fitted (only without fixed effects).

    A plain formula (``transformed`` False) has terms that are tuples of column names (multiplied);
    a formula with transforms has terms that are tuples of expressions (``("C(f1)", "x")``), built
    by formulaic from ``rhs`` (its coefficient names come from formulaic: ``C(f1)[T.2]``).
    ``variables``: the data columns the outcome and the regressors read; ``categorical``: those
    that ``C()``, ``factor()`` or ``i()`` encode; ``numeric``: those read as numbers (the outcome's,
    a bare column, the argument of a numeric function or ``poly()``, the ``z`` of ``i(x, z)``).

    Examples
    --------
    >>> f = parse_formula("y ~ x + z")       # a Formula
    >>> f.terms, f.intercept, f.term_names, f.columns()
    ((('x',), ('z',)), True, ['Intercept', 'x', 'z'], ['y', 'x', 'z'])
    >>> g = parse_formula("log(y) ~ x + C(f) | firm")
    >>> g.transformed, g.outcome, g.variables, g.categorical
    (True, 'log(y)', ('y', 'x', 'f'), ('f',))
    """

    outcome: str
    terms: tuple[tuple[str, ...], ...]
    fixef: tuple[tuple[str, ...], ...]
    intercept: bool
    text: str
    transformed: bool = False
    rhs: str = ""
    variables: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    outcome_variables: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()

    @property
    def term_names(self) -> list[str]:
        """``Intercept`` (when fitted) and the terms joined by ``:`` (a transform's coefficient
        names, e.g. one per level of ``C(x)``, are known once the data are read)."""
        names = [":".join(t) for t in self.terms]
        return (["Intercept"] if self.intercept else []) + names

    @property
    def fixef_names(self) -> list[str]:
        return ["^".join(f) for f in self.fixef]

    @property
    def outcome_column(self) -> str | None:
        """The outcome's column when the outcome is a column (not ``log(y)``)."""
        return self.outcome if _NAME.match(self.outcome) or self.outcome_variables == (self.outcome,) else None

    def regressor_columns(self) -> list[str]:
        """The data columns the regressors and the fixed effects read (what new data need).

        Examples
        --------
        >>> from llmsurrogate.fe._formula import parse_formula
        >>> parse_formula("log(y) ~ x + I(x**2) | firm + date").regressor_columns()
        ['x', 'firm', 'date']
        """
        outcome = set(self.outcome_variables or (self.outcome,))
        return [c for c in self.columns() if c not in outcome]

    def columns(self) -> list[str]:
        """Every data column the formula names (outcome, regressors, fixed effects), once each.

        Examples
        --------
        >>> from llmsurrogate.fe._formula import parse_formula
        >>> parse_formula("log(y) ~ x + I(x**2) | firm + date").columns()
        ['y', 'x', 'firm', 'date']
        """
        if self.transformed:
            cols = list(self.variables)
        else:
            cols = [self.outcome] + [c for t in self.terms for c in t]
        cols += [c for f in self.fixef for c in f]
        return list(dict.fromkeys(cols))


def _fail(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"argument `fml`: {message}")


def _split_top(text: str, seps: str, fml: str) -> list[tuple[str, str]]:
    """``text`` split at the characters of ``seps`` outside parentheses, quoted strings
    (``ref="(19,39]"``, ``ref='a+b'``) and names in backticks: (separator before, piece)."""
    out, depth, start, sep, quote, escaped = [], 0, 0, "", None, False
    for j, ch in enumerate(text):
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\" and quote != "`":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise _fail(f"unbalanced `)` in {fml!r}")
        elif depth == 0 and ch in seps:
            out.append((sep, text[start:j]))
            sep, start = ch, j + 1
    if quote is not None:
        raise _fail(f"unterminated {'name' if quote == '`' else 'string'} ({quote}) in {fml!r}")
    if depth:
        raise _fail(f"unbalanced `(` in {fml!r}")
    out.append((sep, text[start:]))
    return out


def _blank_strings(text: str) -> str:
    """``text`` with the contents of its quoted strings and names in backticks blanked (for a search
    outside them)."""
    return _QUOTES.sub(lambda m: m.group(0)[0] * len(m.group(0)), text)


def _check_name(name: str, fml: str) -> str:
    """The column that ``name`` (``x``, ``x.1`` or ```my var```) names; an error for anything else
    and for a name that starts with ``__`` (the names the package itself uses) or has such a part
    after a dot (``x.__class__``)."""
    m = _QUOTED.match(name)
    col = m.group(1) if m else name
    if not (m or _NAME.match(name)) or col.startswith("__") or any(p.startswith("__") for p in col.split(".")):
        raise _fail(f"{name!r} in {fml!r} is not a column name or a supported term ({_SUPPORTED}; create other "
                    "columns first)")
    return col


def _is_name(text: str) -> bool:
    """Whether ``text`` is a column name as a formula writes one (``x``, ``x.1``, ```my var```)."""
    return bool(_NAME.match(text) or _QUOTED.match(text))


def _r_names(text: str, fml: str, replace) -> str:
    """``text`` with each name that Python would not read as a column's (R's ``x.1``, ```my var```:
    :data:`_R_NAME`, outside quoted strings) replaced by ``replace(spelling, column)``."""
    blank = _QUOTES.sub(lambda m: m.group(0) if m.group(0)[0] == "`" else m.group(0)[0] * len(m.group(0)), text)
    out, last = [], 0
    for m in _R_NAME.finditer(blank):
        spelling = text[m.start():m.end()]
        out += [text[last:m.start()], replace(spelling, _check_name(spelling, fml))]
        last = m.end()
    return "".join(out) + text[last:]


def formulaic_text(text: str) -> str:
    """A term, the regressors or the outcome of a parsed formula as formulaic reads them: R's names
    with dots in backticks (formulaic would read ``x.1`` as Python).

    >>> formulaic_text("log(x.1) + C(firm.id) + `my var`:z + np.log(z)")
    'log(`x.1`) + C(`firm.id`) + `my var`:z + np.log(z)'
    """
    return _r_names(text, text, lambda spelling, col: spelling if spelling.startswith("`") else f"`{col}`")


class _Checker:
    """The allow-list of one term expression (see the module docstring); collects the columns."""

    def __init__(self, fml: str):
        self.fml = fml
        self.variables: list[str] = []
        self.categorical: list[str] = []
        self.numeric_vars: list[str] = []  # the columns read as numbers
        self.functions: set[str] = set()  # the names the formula calls (``np`` for ``np.log``)
        self.columns: dict[str, str] = {}  # placeholder -> column, for the names Python cannot read
        self.spelled: dict[str, str] = {}  # placeholder -> the name as written

    def show(self, node) -> str:
        """``node`` as text, with the column names as written."""
        text = ast.unparse(node)
        for key, spelling in self.spelled.items():
            text = text.replace(key, spelling)
        return text

    def refuse(self, what: str, expr: str):
        raise _fail(f"{what} in {expr!r} is not allowed in a formula ({_SUPPORTED})")

    def name(self, node, expr: str, numeric: bool = True) -> str:
        if not isinstance(node, ast.Name):
            self.refuse(f"`{self.show(node)}` (a column name is expected here)", expr)
        col = self.columns[node.id] if node.id in self.columns else _check_name(node.id, self.fml)
        self.variables.append(col)
        if numeric:
            self.numeric_vars.append(col)
        return col

    def constant(self, node, expr: str):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.constant(node.operand, expr)
            if isinstance(value, str):
                self.refuse(f"`{self.show(node)}` (a number or a short string is expected here)", expr)
            return -value if isinstance(node.op, ast.USub) else value
        if not isinstance(node, ast.Constant) or not isinstance(node.value, (int, float, str)) \
                or isinstance(node.value, bool) or (isinstance(node.value, str) and len(node.value) > 200):
            self.refuse(f"`{self.show(node)}` (a number or a short string is expected here)", expr)
        return node.value

    def numeric(self, node, expr: str):
        """A numeric expression: columns, numbers, arithmetic, the numeric functions."""
        if isinstance(node, ast.Name):
            self.name(node, expr)
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
                self.refuse(f"the constant {node.value!r}", expr)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self.numeric(node.operand, expr)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _ALLOWED_OPS):
            if isinstance(node.op, ast.Pow):
                r = node.right.operand if isinstance(node.right, ast.UnaryOp) else node.right
                k = r.value if isinstance(r, ast.Constant) else None
                if not isinstance(k, (int, float)) or isinstance(k, bool) or abs(k) > MAX_EXPONENT:
                    self.refuse(f"the exponent `{self.show(node.right)}` (a number up to {MAX_EXPONENT} is "
                                "expected)", expr)
            else:
                self.numeric(node.right, expr)
            self.numeric(node.left, expr)
        elif isinstance(node, ast.Call):
            fn = self.function(node, expr)
            if fn in CATEGORICAL_FUNCTIONS or fn == "poly":
                self.refuse(f"`{fn}()` inside another function", expr)
            if node.keywords or len(node.args) != 1:
                self.refuse(f"`{fn}()` with {len(node.args)} argument(s) or keywords (one is expected)", expr)
            self.numeric(node.args[0], expr)
        else:
            self.refuse(f"`{self.show(node)}`", expr)

    def function(self, node: ast.Call, expr: str) -> str:
        f = node.func
        if isinstance(f, ast.Name) and f.id in NUMERIC_FUNCTIONS + CATEGORICAL_FUNCTIONS + ("poly",):
            self.functions.add(f.id)
            return f.id
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np" \
                and f.attr in _NP_FUNCTIONS:
            self.functions.add("np")
            return f.attr
        if isinstance(f, ast.Name) and f.id in _MULTIPLE:
            raise _fail(f"{f.id}() in {self.fml!r}: multiple estimation (sw, csw, sw0, csw0, mvsw) is not supported; "
                        "fit each formula with its own call")
        self.refuse(f"the function `{self.show(f)}`", expr)

    def placeholder(self, spelling: str, col: str) -> str:
        """A Python name standing for column ``col`` (written ``spelling``) in the expression that
        :mod:`ast` parses: ``__col<k>__`` (no column may start with ``__``)."""
        for key, c in self.columns.items():
            if c == col:
                return key
        key = f"__col{len(self.columns)}__"
        self.columns[key], self.spelled[key] = col, spelling
        return key

    def term(self, expr: str) -> str:
        """Check one atom (a column, or a call); returns its kind: 'name' or 'call'."""
        if _is_name(expr):
            col = _check_name(expr, self.fml)
            self.variables.append(col)
            self.numeric_vars.append(col)
            return "name"
        if not _CALL.match(expr):
            raise _fail(f"{expr!r} in {self.fml!r} is not a column name or a supported term ({_SUPPORTED}); "
                        "group terms with `:` and `*`, not parentheses")
        fn = _CALL.match(expr).group(1)
        if fn not in NUMERIC_FUNCTIONS + CATEGORICAL_FUNCTIONS + ("poly",) + _MULTIPLE and not (
                fn.startswith("np.") and fn[3:] in _NP_FUNCTIONS):
            self.refuse(f"the function `{fn}`", expr)  # also R's as.numeric(), which Python cannot parse
        protected = _r_names(expr, self.fml, self.placeholder)  # names refused here, with their message
        try:
            tree = ast.parse(protected, mode="eval").body
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            raise _fail(f"{expr!r} in {self.fml!r} is not a valid term ({_SUPPORTED})") from None
        if not isinstance(tree, ast.Call):
            self.refuse(f"`{expr}`", expr)
        fn = self.function(tree, expr)
        try:
            if fn in ("C", "factor"):
                if len(tree.args) != 1 or tree.keywords:
                    self.refuse(f"`{fn}()` with more than a column (contrasts and levels are not supported)", expr)
                self.categorical.append(self.name(tree.args[0], expr, numeric=False))
            elif fn == "i":
                if not 1 <= len(tree.args) <= 2:
                    self.refuse("`i()` with other than one or two columns", expr)
                self.categorical.append(self.name(tree.args[0], expr, numeric=False))
                if len(tree.args) == 2:
                    self.name(tree.args[1], expr)
                for kw in tree.keywords:
                    if kw.arg != "ref":
                        self.refuse(f"the argument `{kw.arg}` of `i()` (only `ref=` is supported)", expr)
                    self.constant(kw.value, expr)
            elif fn == "poly":
                if len(tree.args) != 2 or tree.keywords:
                    self.refuse("`poly()` other than poly(column, degree)", expr)
                self.name(tree.args[0], expr)
                d = self.constant(tree.args[1], expr)
                if not isinstance(d, int) or not 1 <= d <= 10:
                    self.refuse("a degree of `poly()` other than 1..10", expr)
            else:
                self.numeric(tree, expr)
        except RecursionError:
            raise _fail(f"{expr!r} is nested too deeply") from None
        return "call"


def _outcome(lhs: str, fml: str) -> tuple[str, list[str], bool, set]:
    outcome = lhs.strip()
    if not outcome:
        raise _fail(f"one outcome before `~`; got {fml!r}")
    if _is_name(outcome):
        col = _check_name(outcome, fml)
        return col, [col], False, set()
    if len(_split_top(outcome, "+", fml)) > 1:
        raise _fail(f"one outcome before `~` (several outcomes are not supported); got {outcome!r}")
    check = _Checker(fml)
    check.term(outcome)
    if check.categorical or outcome.startswith(("poly", "C(", "factor(", "i(")):
        raise _fail(f"the outcome {outcome!r} must be numeric (a column or log(), exp(), I(...) of columns)")
    return outcome, list(dict.fromkeys(check.variables)), True, check.functions


def parse_formula(fml: str) -> Formula:
    """Parse ``fml``; :class:`InvalidArgumentError` naming ``fml`` on anything else.

    Examples
    --------
    >>> f = parse_formula("y ~ x1*x2 | firm + year^month")
    >>> f.outcome, f.term_names, f.fixef_names, f.intercept
    ('y', ['x1', 'x2', 'x1:x2'], ['firm', 'year^month'], False)
    >>> parse_formula("y ~ x1 + i(f1, ref=1) - 1").terms
    (('x1',), ('i(f1, ref=1)',))
    """
    if not isinstance(fml, str) or "~" not in fml:
        raise InvalidArgumentError(f"argument `fml` must be a formula such as 'y ~ x1 + x2 | firm + date'; got {fml!r}")
    if len(fml) > MAX_LENGTH:
        raise _fail(f"{len(fml):,} characters; at most {MAX_LENGTH:,}")
    tilde = _blank_strings(fml).find("~")
    if tilde < 0:
        raise InvalidArgumentError(f"argument `fml` must be a formula such as 'y ~ x1 + x2 | firm + date'; got {fml!r}")
    lhs, rhs = fml[:tilde], fml[tilde + 1:]
    outcome, outcome_vars, outcome_transformed, outcome_functions = _outcome(lhs, fml)
    parts = [p for _, p in _split_top(rhs, "|", fml)]
    if len(parts) > 2:
        raise _fail(f"at most one `|` (regressors | fixed effects); got {fml!r} (instrumental variables are not "
                    "supported)")
    if "~" in _blank_strings(rhs):
        raise _fail(f"one `~`; got {fml!r} (instrumental variables are not supported)")

    pieces = _split_top(parts[0], "+-", fml)
    n_factors = [min(len(_split_top(p, "*", fml)), 64) for _, p in pieces]
    n_terms = sum(2**c - 1 for c in n_factors)
    if n_terms > MAX_TERMS:
        raise _fail(f"the regressors expand to {n_terms:,}{'+' if max(n_factors) == 64 else ''} terms "
                    f"(`a*b*c` is every product of a, b and c: 7 terms), more than {MAX_TERMS:,}; write the "
                    "interactions wanted with `:`")
    check = _Checker(fml)
    intercept, transformed = True, outcome_transformed
    terms: list[tuple[str, ...]] = []
    for j, (sign, raw) in enumerate(pieces):
        piece = raw.strip()
        if not piece and j == 0 and len(pieces) > 1 and pieces[1][0] == "-":
            continue  # "y ~ -1 + x"
        if not piece:
            raise _fail(f"empty term in {fml!r}")
        if piece in ("0", "1"):
            if (piece == "0") == (sign != "-"):
                intercept = False
            continue
        if sign == "-":
            raise _fail(f"`- {piece}` in {fml!r}: only `- 1` (no intercept) may be subtracted")
        factors = []
        for star in _split_top(piece, "*", fml):
            atoms = tuple(a.strip() for _, a in _split_top(star[1], ":", fml))
            for a in atoms:
                if not a:
                    raise _fail(f"empty term in {fml!r}")
                if check.term(a) == "call":
                    transformed = True
            factors.append(tuple(_check_name(a, fml) if _is_name(a) else a for a in atoms))
        for r in range(1, len(factors) + 1):
            for combo in itertools.combinations(factors, r):
                terms.append(tuple(a for atoms in combo for a in atoms))
    # a term is a set of atoms: x:x is x, x2:x1 is x1:x2 if x1:x2 came first
    seen: dict[frozenset, tuple[str, ...]] = {}
    for t in terms:
        t = tuple(dict.fromkeys(t))
        seen.setdefault(frozenset(t), t)
    ordered = sorted(seen.values(), key=len)  # stable: by degree, then appearance
    fixef: list[tuple[str, ...]] = []
    if len(parts) == 2 and "(" in _blank_strings(parts[1]):
        multiple = any(re.search(rf"\b{m}\s*\(", parts[1]) for m in _MULTIPLE)
        raise _fail(f"the fixed effects in {fml!r} must be columns joined by `+` and `^`" + (
            " (multiple estimation: sw, csw, ... is not supported; fit each formula with its own call)" if multiple
            else ""))
    if len(parts) == 2:
        for _, raw in _split_top(parts[1], "+", fml):
            piece = raw.strip()
            if not piece:
                raise _fail(f"empty fixed effect in {fml!r}")
            if piece == "0":
                continue
            fe = tuple(_check_name(p.strip(), fml) for _, p in _split_top(piece, "^", fml))
            if fe not in fixef:
                fixef.append(fe)
    if fixef:
        intercept = False
    rhs_vars = list(dict.fromkeys(check.variables))
    if any(v in rhs_vars for v in outcome_vars) or any(v in f for f in fixef for v in outcome_vars):
        raise _fail(f"the outcome {outcome!r} is also on the right of `~` in {fml!r}")
    if not ordered:
        raise _fail(f"no regressor in {fml!r}; name at least one column after `~` (models with fixed effects "
                    "alone are not supported)")
    clash = [v for v in outcome_vars + rhs_vars if v in check.functions | outcome_functions]
    if clash:  # formulaic would read the column where the formula calls the function
        raise _fail(f"column {clash[0]!r} has the name of the function `{clash[0]}()` that {fml!r} also calls; "
                    "rename the column")
    return Formula(outcome=outcome, terms=tuple(ordered), fixef=tuple(fixef), intercept=intercept, text=fml.strip(),
                   transformed=transformed, rhs=parts[0].strip() if transformed else "",
                   variables=tuple(dict.fromkeys(outcome_vars + rhs_vars)),
                   categorical=tuple(dict.fromkeys(check.categorical)), outcome_variables=tuple(outcome_vars),
                   numeric=tuple(dict.fromkeys(outcome_vars + check.numeric_vars)))
