"""Positions in messages (issue 35 §5): every message of the package that names a row, a position
or a column builds it with ``llmsurrogate._positions`` (``located(..., at(i), ...)``), so the R
bridge gives R 1-based positions from the data the message carries -- one conversion, never a
marker a message must remember.

``test_no_message_formats_a_position_itself`` reads the package's source: a string that writes a
position word ("position", "row", "column", "index", ...) right before a formatted value, or a
"(0-based)" mark of its own, fails it. ``test_no_rust_message_formats_a_position_itself`` does the
same for the Rust core, whose messages name positions as ``Part::at(word, i)`` pieces of
``CoreError::invalid_at`` (or the ``NonFinite``/``NegativeWeight`` variants); the bindings turn
them into ``located(..., at(i, word), ...)``. The others check the helper and the bridge's use of it.
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


RUST = Path(__file__).resolve().parents[2] / "rust"
# Rust: a position word right before a format placeholder ("at row {i}", "text {}"); `{x:?}` (a
# quoted value, like Python's !r) is not a position.
_RUST_WORDS = ("position|row|column|index|element|entry|item|cell|text|token|observation|node|tree|block|domain"
               "|parameter|point|feature|effect|level|group")
_RUST_TEMPLATE = re.compile(rf"\b({_RUST_WORDS}) \{{(?![^}}]*:\?)[^}}]*\}}")
_RUST_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
# the variants whose #[error] text names a position and whose parts() gives it as data
_STRUCTURED = re.compile(r"^\s*(NonFinite|NegativeWeight) \{")


def _rust_offences(path: Path, root: Path = RUST) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for n, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and n + 1 < len(lines) and lines[n + 1].startswith("mod "):
            break  # the unit tests' own messages
        code = line.split("//", 1)[0] if not line.lstrip().startswith("#[") else line
        if "position-scan:" in line or line.lstrip().startswith("//"):
            continue  # a value the caller passed that reads like a position, said so where it is written
        if line.lstrip().startswith("#[error(") and n + 1 < len(lines) and _STRUCTURED.match(lines[n + 1]):
            continue
        for lit in _RUST_STRING.findall(code):
            if _RUST_TEMPLATE.search(lit):
                out.append(f"{path.relative_to(root)}:{n + 1}: {lit[:70]}")
    return out


@pytest.mark.skipif(not RUST.is_dir(), reason="the Rust sources are not here (an installed wheel)")
def test_no_rust_message_formats_a_position_itself():
    offences = [o for path in sorted(RUST.rglob("*.rs")) for o in _rust_offences(path)]
    assert not offences, ("build positions in the Rust core with CoreError::invalid_at(arg, vec![Part::text(..), "
                          "Part::at(\"row\", i), ..]), so that R reads them 1-based:\n" + "\n".join(offences))


def test_the_rust_scan_finds_what_it_is_for(tmp_path):
    src = tmp_path / "bad.rs"
    src.write_text('fn f(i: usize, t: usize, x: f64) -> CoreResult<()> {\n'
                   '    Err(CoreError::invalid("y", format!("labels must be 0 or 1; got {x} at position {i}")))?;\n'
                   '    Err(CoreError::invalid("b", format!("code {} at row {i}, but only 3 blocks", t)))?;\n'
                   '    Err(CoreError::invalid("v", format!("text {i} has a NaN at position {} (token {t})", t)))?;\n'
                   '    let ok1 = format!("unknown loss {x:?}; use squared");\n'
                   '    let ok2 = vec![Part::text(format!("got {x} at ")), Part::at("position", i)];\n'
                   '    let ok3 = format!("feature {t} of X"); // position-scan: a value\n'
                   '    Ok(())\n'
                   '}\n'
                   '#[derive(Debug, Error)]\n'
                   'pub enum E {\n'
                   '    #[error("argument `{arg}` has a NaN at position {index}")]\n'
                   '    Other { arg: String, index: usize },\n'
                   '    #[error("argument `{arg}` has a non-finite value ({value}) at position {index}")]\n'
                   '    NonFinite { arg: String, index: usize, value: f64 },\n'
                   '}\n'
                   '#[cfg(test)]\n'
                   'mod tests {\n'
                   '    fn t(i: usize) { assert!(false, "{}", format!("text {i} ")); }\n'
                   '}\n')
    found = _rust_offences(src, tmp_path)
    assert sorted({int(o.split(":")[1]) for o in found}) == [2, 3, 4, 12], found


@pytest.mark.skipif(not RUST.is_dir(), reason="the Rust sources are not here (an installed wheel)")
def test_the_rust_scan_catches_the_old_call_sites(tmp_path):
    """The messages that reached Python and R 0-based before positions went through Part::at."""
    old = {"risk.rs": 'return Err(CoreError::invalid("y", format!("labels must be 0 or 1; got {} at position {i}", y[i])));',
           "demean.rs": 'format!("fixed effect {f} has code {code} at row {i}, but only {g} levels"),',
           "lookahead.rs": '"text {i} has a NaN log-probability at position {pos} (token {} of the text){}; only",',
           "table.rs": 'format!("test-domain index {t} at position {i} is outside 0..{n}")',
           "forest.rs": 'format!("node {} of tree {t} is half a leaf", j - lo)'}
    for name, line in old.items():
        (tmp_path / name).write_text(line + "\n")
        assert _rust_offences(tmp_path / name, tmp_path), name


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


@pytest.mark.parametrize(
    ("call", "word", "index", "text"),
    [
        (lambda c: c.weighted_upper_quantiles(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, -1.0]), np.array([0.5])),
         "position", 2, "has a negative value (-1) at position 2; weights must be >= 0"),
        (lambda c: c.weighted_lower_quantiles(np.array([1.0, np.nan, 3.0]), np.array([1.0, 1.0, 1.0]), np.array([0.5])),
         "position", 1, "has a non-finite value (NaN) at position 1;"),
        (lambda c: c.upper_quantiles(np.array([1.0, 2.0]), np.array([0.5, 0.2, 1.5])),
         "position", 2, "levels must lie in [0, 1]; got 1.5 at position 2"),
        (lambda c: c.risk_roc_auc(np.array([0.0, 1.0, 2.0, 0.0]), np.array([0.1, 0.2, 0.3, 0.4])),
         "position", 2, "labels must be 0 or 1; got 2 at position 2"),
    ],
)
def test_rust_errors_carry_positions_as_data(call, word, index, text):
    """An error of the Rust core that names a position is raised with a Located message built from
    its parts (rust/bindings/errors.rs): Python's text as before, the position as data, R's text
    1-based."""
    from llmsurrogate import _core

    with pytest.raises(InvalidArgumentError if "non-finite" not in text else ValueError) as info:
        call(_core)
    err = info.value
    assert text in str(err)
    assert err.positions == [(word, index)]
    assert err.args[0].one_based() == str(err).replace(f"{word} {index}", f"{word} {index + 1}")
    assert one_based(message_of(err)).count(f"{word} {index + 1}") == 1


def test_rust_errors_with_several_positions_keep_each():
    from llmsurrogate import _core

    # lookahead: a NaN inside a text names the text, the position in the flat array and the token
    values = np.array([np.nan, -1.0, -2.0, np.nan, -1.0, np.nan, -3.0])
    with pytest.raises(InvalidArgumentError) as info:
        _core.lookahead_min_k_f64(values, np.array([0, 3, 7], dtype=np.int64), 0.5, True)
    err = info.value
    assert err.positions == [("text", 1), ("position", 5), ("token", 2)], str(err)
    assert "text 1 has a NaN log-probability at position 5 (token 2 of the text)" in str(err)
    assert "text 2 has a NaN log-probability at position 6 (token 3 of the text)" in err.args[0].one_based()


def test_the_public_api_and_the_r_bridge_read_rust_positions():
    from llmsurrogate import quantiles, rbridge

    with pytest.raises(InvalidArgumentError) as info:
        quantiles.weighted_upper_quantile([1.0, 2.0, 3.0], [1.0, 1.0, -1.0], 0.5)
    assert info.value.positions == [("position", 2)] and "at position 2;" in str(info.value)
    with pytest.raises(InvalidArgumentError) as info:
        rbridge.r_call("quantiles.weighted_upper_quantile", [1.0, 2.0, 3.0], [1.0, 1.0, -1.0], 0.5)
    assert "negative value (-1) at position 3;" in str(info.value)
