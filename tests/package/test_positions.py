"""Positions in messages (issue 35 §5): every message of the package that names a row, a position
or a column builds it with ``llmsurrogate._positions`` (``located(..., at(i), ...)``), so the R
bridge gives R 1-based positions from the data the message carries -- one conversion, never a
marker a message must remember.

``test_no_message_formats_a_position_itself`` reads the package's source: a string that writes a
position word ("position", "row", "column", "index", ...) right before a formatted value, or a
"(0-based)" mark of its own, fails it. The others check the helper and the bridge's use of it.
"""

from __future__ import annotations

import ast
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import llmsurrogate
from llmsurrogate._positions import at, located, message_of, one_based
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning

PACKAGE = Path(llmsurrogate.__file__).parent

# A word that names a position, written right before the value: "at position {i}", "row {r}".
_WORD_BEFORE = re.compile(r"(?<!per )\b(position|row|column|index|element|entry|item|cell|text|token|observation) $")
# A format template that does the same ("position {}", "row %d").
_TEMPLATE = re.compile(r"\b(position|row|column|index|element|entry|item|cell) (\{[^}]*\}|%[sdi])")
# Values that are counted from 1 already, on purpose (a file's line, a TOML table's entry): `{i + 1}`.
_COUNTED = re.compile(r"\+ \d+$")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _offences(path: Path, root: Path = PACKAGE) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for a, b in zip(node.values, node.values[1:]):
                if (isinstance(a, ast.Constant) and isinstance(a.value, str) and isinstance(b, ast.FormattedValue)
                        and b.conversion != ord("r") and _WORD_BEFORE.search(a.value)
                        and not _COUNTED.search(ast.unparse(b.value))):
                    out.append(f"{path.relative_to(root)}:{node.lineno}: "
                               f"...{a.value[-40:]}{{{ast.unparse(b.value)}}}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            left = node.left
            if (isinstance(left, ast.Constant) and isinstance(left.value, str)
                    and (_WORD_BEFORE.search(left.value) and isinstance(node.op, ast.Add)
                         and not isinstance(node.right, ast.Constant) or _TEMPLATE.search(left.value))):
                out.append(f"{path.relative_to(root)}:{node.lineno}: {left.value[-40:]!r} {type(node.op).__name__}")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
              and path.name != "_positions.py"):
            if _TEMPLATE.search(node.value) or "0-based)" in node.value:
                out.append(f"{path.relative_to(root)}:{node.lineno}: {node.value[:60]!r}")
    return out


def test_no_message_formats_a_position_itself():
    offences = [o for path in sorted(PACKAGE.rglob("*.py")) for o in _offences(path)]
    assert not offences, ("build positions with llmsurrogate._positions (located(..., at(i, 'row'), ...)), so that "
                          "R reads them 1-based:\n" + "\n".join(offences))


def test_the_scan_finds_what_it_is_for(tmp_path):
    """The scan of the source flags each way of writing a position by hand (so a pass means something)."""
    src = tmp_path / "bad.py"
    src.write_text('i, x = 3, 1.5\n'
                   'a = f"got {x} at position {i}"\n'
                   'b = f"a missing value at row {i} (0-based)"\n'
                   'c = "at position {}".format(i)\n'
                   'd = "row %d" % i\n'
                   'e = "in column " + str(i)\n'
                   'ok1 = f"column {\'x\'!r} is constant"\n'
                   'ok2 = f"one weight per row ({i})"\n'
                   'ok3 = f"line {i + 2} of the file"\n')
    found = _offences(src, tmp_path)
    assert sorted({int(o.split(":")[1]) for o in found}) == [2, 3, 4, 5, 6], found


def test_a_located_message_is_python_text_with_its_positions_as_data():
    msg = located("argument `w` has a negative value (-1) at ", at(np.int64(0)), "; weights must be >= 0")
    assert msg == "argument `w` has a negative value (-1) at position 0; weights must be >= 0"
    assert msg.one_based() == "argument `w` has a negative value (-1) at position 1; weights must be >= 0"
    assert msg.positions == [("position", 0)]
    cell = located("a missing value at ", at(2, "row", marked=True), ", ", at(1, "column"))
    assert cell == "a missing value at row 2 (0-based), column 1"
    assert one_based(cell) == "a missing value at row 3, column 2"
    labelled = located(at(0, "row", marked=True, note="index label 11"))
    assert (labelled, labelled.one_based()) == ("row 0 (0-based; index label 11)", "row 1 (index label 11)")
    # a located piece keeps its positions inside another message; plain text stays as it is
    outer = located("row 4 of the data frame: ", msg)
    assert outer.positions == [("position", 0)] and outer.one_based().endswith("at position 1; weights must be >= 0")
    assert one_based("row 4 of a plain message") == "row 4 of a plain message"
    with pytest.raises(TypeError):
        at(1.0)  # a position is a whole number, never a float or a label


def test_errors_expose_positions_and_keep_them_through_pickle():
    err = InvalidArgumentError(located("got 2 at ", at(5)))
    assert err.positions == [("position", 5)] and str(err) == "got 2 at position 5"
    back = pickle.loads(pickle.dumps(err))  # an error raised in a worker process
    assert back.positions == [("position", 5)] and message_of(back).one_based() == "got 2 at position 6"
    assert InvalidArgumentError("no position here").positions == []


def test_package_errors_carry_positions():
    from llmsurrogate import quantiles, risk

    with pytest.raises(InvalidArgumentError) as info:
        risk.evaluate([0, 1, 2, 0], [0.1, 0.2, 0.3, 0.4], n_boot=0)
    assert info.value.positions == [("position", 2)] and "got 2.0 at position 2" in str(info.value)
    with pytest.raises(ValueError) as info:
        quantiles.weighted_upper_quantile([1.0, 2.0, 3.0], [1.0, np.inf, 1.0], 0.5)
    assert info.value.positions == [("position", 1)]


def test_the_r_bridge_gives_r_one_based_positions_in_errors_and_warnings():
    from llmsurrogate import rbridge
    from llmsurrogate.rbridge._call import r_warnings

    with pytest.raises(InvalidArgumentError) as info:
        rbridge.r_call("quantiles.weighted_upper_quantile", [1.0, 2.0, 3.0], [1.0, float("inf"), 1.0], 0.5)
    assert "infinite value at position 2;" in str(info.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn(located("the first at ", at(0), ": NaN"), LLMSurrogateWarning, stacklevel=1)
    assert r_warnings(caught) == [{"message": "the first at position 1: NaN", "class": "LLMSurrogateWarning"}]
    # the bridge's word conversion no longer reads a "(0-based)" mark in text: positions come as data
    assert rbridge.r_message("row 3 (0-based)") == "row 3 (0-based)"
    assert rbridge.r_message(located(at(3, "row", marked=True), "; got str")) == "row 4; got character"
