"""Every command line error is one line (issue 11, defect 5).

A bad option value is a click usage error (exit 2) or a one-line ``Error: ...`` (exit 1), never a
traceback: ``ess --seed abc`` and ``ess --n-estimators 0`` gave tracebacks. Every command runs with a
table of bad values below. Duplicate column names in an input file are an error (pandas renamed
the second ``x`` to ``x.1``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from llmsurrogate._cli_support import handle_errors, read_table
from llmsurrogate.cli import cli
from llmsurrogate.datasets import load_transfer_errors
from llmsurrogate.exceptions import InvalidArgumentError

EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("cli_errors")
    rng = np.random.default_rng(1)
    n = 60
    x = rng.normal(size=n)
    pd.DataFrame({"x": x, "y": x + rng.normal(size=n), "llm": x}).to_csv(d / "ess.csv", index=False)
    rows = []
    for dom in range(4):
        for _ in range(12):
            z1, z2, p = rng.uniform(0, 10), rng.uniform(0, 10), rng.uniform(0.1, 0.9)
            rows.append({"domain": f"d{dom}", "z1": z1, "z2": z2, "p1": p, "ce": p * z1 + (1 - p) * z2})
    pd.DataFrame(rows).to_csv(d / "lotteries.csv", index=False)
    load_transfer_errors("abdg").iloc[:6, :6].to_csv(d / "matrix.csv")
    (d / "dup.csv").write_text("x,y,x\n1,2,3\n4,5,6\n")
    (d / "empty.csv").write_text("")
    (d / "garbage.parquet").write_bytes(b"not a parquet file at all")
    (d / "table.json").write_text("{}")
    (d / "a_file").write_text("x")
    (d / "notes.txt").write_bytes(b"\xff\xfe\x00binary\x00\xff")
    return {k: str(v) for k, v in {
        "ess": d / "ess.csv", "lot": d / "lotteries.csv", "matrix": d / "matrix.csv", "dup": d / "dup.csv",
        "empty": d / "empty.csv", "garbage": d / "garbage.parquet", "json": d / "table.json",
        "file": d / "a_file", "binary": d / "notes.txt", "missing": d / "no_such.csv", "dir": d,
        "out": d / "out",
    }.items()}


# (command prefix, valid arguments, {option: [bad values]}); a value "{key}" is a file from `files`
COMMANDS = {
    "ess": (["ess"], ["--data", "{ess}", "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
                      "--no-plot", "--out", "{out}"], {
        "--seed": ["abc", "1.5", "-1", "", str(2**64)],
        "--n-estimators": ["0", "-3", "x", "1e9"],
        "--alpha": ["0", "0.7", "nan", "inf", "-0.1", "x"],
        "--grid": ["x", "0", "1,,2", "", "-5", "1000000"],
        "--features": ["", ",", "x,,y", "nope"],
        "--n-jobs": ["0", "2.5", "x", str(2**40)],
        "--algorithm": ["forest"], "--loss": ["l2"], "--variance": ["x"], "--regime": ["x"], "--tuning": ["x"],
        "--missing": ["impute"],
        "--outcome": ["nope", ""], "--prediction": ["nope", ""],
        "--data": ["{missing}", "{dir}", "{dup}", "{empty}", "{garbage}", "{json}", "{binary}"],
        "--out": ["{file}"],
    }),
    "quantile": (["quantile"], ["--data", "{ess}", "--column", "y", "--tau", "0.5"], {
        "--tau": ["-0.1", "1.5", "nan", "x", "inf"],
        "--n-jobs": ["0", "x"],
        "--column": ["nope"], "--weights": ["nope", "x"],
        "--data": ["{missing}", "{dup}", "{empty}", "{garbage}", "{json}"],
    }),
    "transfer intervals": (["transfer", "intervals", "{matrix}"], [], {
        "--level": ["0", "1.5", "nan", "x", "-1"],
        "--gamma": ["0.5", "nan", "x", "-inf"],
        "--tau": ["0", "2", "nan"],
        "--side": ["both"],
        "--out": ["{dir}"],
    }),
    "transfer build": (["transfer", "build"], ["--data", "{lot}", "--model", "eu", "--out", "{out}/t.csv"], {
        "-r": ["0", "x", "4", "99"],
        "--metric": ["mae"], "--normalize": ["x"],
        "--subsets": ["0", "-2", "x", "1.5"],
        "--seed": ["-1", str(2**32), "abc"],
        "--features": ["", ",", "z1,,z2", "nope"],
        "--n-jobs": ["0", "x"],
        "--model": ["bogus", "cpt:xyz"],
        "--domain": ["nope"], "--target": ["nope"],
        "--data": ["{missing}", "{dup}", "{empty}", "{garbage}"],
        "--out": ["{dir}", "{lot}"],
        "--cache": ["{file}"],
    }),
    "risk": (["risk"], ["--data", "{ess}", "--task", "ACSIncome", "--model", "{dir}", "--cache", "{out}/c",
                          "--out", "{out}/s"], {
        "--batch-size": ["0", "x"], "--n-boot": ["-1", "x"],
        "--backend": ["nope"], "--method": ["nope"],
        "--task": ["nope", "{json}"],
        "--data": ["{missing}", "{dup}"],
    }),
    "demo": (["demo"], ["--out", "{out}/demo"], {
        "--tau": ["0.3", "nan", "x", "2", "1.5"],
        "--out": ["{file}"],
    }),
    "datasets": (["datasets"], [], {"--nope": ["1"]}),
}


def _cases():
    for name, (prefix, base, bad) in COMMANDS.items():
        for opt, values in bad.items():
            for value in values:
                yield pytest.param(prefix, base, opt, value, id=f"{name} {opt}={value!r}")


def _fill(args: list[str], files: dict[str, str]) -> list[str]:
    return [a.format(**files) for a in args]


def _with(base: list[str], opt: str, value: str) -> list[str]:
    """``base`` with ``opt`` set to ``value`` (replacing its value when ``base`` has it)."""
    out = list(base)
    if opt in out:
        out[out.index(opt) + 1] = value
    else:
        out += [opt, value]
    return out


def assert_one_line_error(exit_code: int, stderr: str, what: str) -> None:
    assert "Traceback" not in stderr, f"{what}: traceback\n{stderr}"
    assert exit_code in (1, 2), f"{what}: exit {exit_code}\n{stderr}"
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error:")]
    assert len(errors) == 1, f"{what}: want one 'Error:' line\n{stderr}"
    if exit_code == 1:  # package errors: the message and nothing else
        assert lines == errors, f"{what}: more than one line on stderr\n{stderr}"
    else:  # click usage errors: usage, a hint and one error line
        assert all(ln.startswith(("Usage:", "Try ", "Error:")) for ln in lines), f"{what}\n{stderr}"


@pytest.mark.parametrize(("prefix", "base", "opt", "value"), list(_cases()))
def test_bad_option_values_give_one_line_errors(files, tmp_path, prefix, base, opt, value):
    files = {**files, "out": str(tmp_path / "out")}
    args = _fill(prefix, files) + _with(_fill(base, files), opt, value.format(**files))
    res = CliRunner().invoke(cli, args)
    what = " ".join(args)
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"{what}: uncaught {type(res.exception).__name__}: {res.exception}")
    assert_one_line_error(res.exit_code, res.stderr, what)


@pytest.mark.parametrize("args", [["--seed", "abc"], ["--n-estimators", "0"], ["--n-jobs", "0"]],
                         ids=["seed-abc", "n-estimators-0", "n-jobs-0"])
def test_console_script_reported_cases(files, tmp_path, args):
    """The cases from the issue, through the real console script."""
    assert EXE, "the llmsurrogate console script is not installed next to this Python"
    res = subprocess.run([EXE, "ess", "--data", files["ess"], "--outcome", "y", "--out", str(tmp_path / "o"),
                          "--no-plot", *args], capture_output=True, text=True, timeout=120)
    assert_one_line_error(res.returncode, res.stderr, " ".join(args))
    assert res.returncode == 2 and args[0] in res.stderr


def test_package_error_through_console_script_is_one_line(files, tmp_path):
    assert EXE
    res = subprocess.run([EXE, "quantile", "--data", files["dup"], "--column", "x", "--tau", "0.5"],
                         capture_output=True, text=True, timeout=120)
    assert_one_line_error(res.returncode, res.stderr, "quantile on dup.csv")
    assert res.returncode == 1 and "'x' appears 2 times" in res.stderr


def test_unexpected_exceptions_are_one_line_unless_debugging(monkeypatch):
    @click.command()
    @handle_errors
    def boom():
        raise ValueError("bad\nvalue")

    monkeypatch.delenv("LLMSURROGATE_DEBUG", raising=False)
    res = CliRunner().invoke(boom, [])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)
    assert res.stderr.strip() == "Error: ValueError: bad value (set LLMSURROGATE_DEBUG=1 for the traceback)"
    monkeypatch.setenv("LLMSURROGATE_DEBUG", "1")
    res = CliRunner().invoke(boom, [])
    assert isinstance(res.exception, ValueError)


def test_multiline_package_error_is_joined():
    @click.command()
    @handle_errors
    def boom():
        raise InvalidArgumentError("first\n  second")

    res = CliRunner().invoke(boom, [])
    assert res.exit_code == 1 and res.stderr.strip() == "Error: first second"


# ------------------------------------------------------------------------------------------------
# duplicate column names
# ------------------------------------------------------------------------------------------------

def test_duplicate_csv_columns_are_an_error(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,a,b,c\n1,2,3,4,5\n")
    with pytest.raises(InvalidArgumentError, match=r"column 'a' appears 2 times.*also 'b'"):
        read_table(path)
    gz = tmp_path / "d.csv.gz"
    pd.DataFrame([[1, 2]], columns=["q", "q"]).to_csv(gz, index=False)
    with pytest.raises(InvalidArgumentError, match="column 'q' appears 2 times"):
        read_table(gz)


def test_duplicate_parquet_columns_are_an_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table([pa.array([1]), pa.array([2])], names=["a", "a"]), path)
    with pytest.raises(InvalidArgumentError, match="column 'a' appears 2 times"):
        read_table(path)


def test_distinct_columns_that_look_mangled_are_kept(tmp_path):
    """``x`` and ``x.1`` in the file are two different columns; an index column with an empty name is fine."""
    path = tmp_path / "ok.csv"
    path.write_text(",x,x.1,NA\n0,1,2,3\n")
    frame = read_table(path)
    assert list(frame.columns) == ["Unnamed: 0", "x", "x.1", "NA"]
    pd.DataFrame({"x": [1.0]}).to_parquet(tmp_path / "ok.parquet")
    assert list(read_table(tmp_path / "ok.parquet").columns) == ["x"]


def test_ess_cli_rejects_duplicate_columns_before_work(files, tmp_path):
    res = CliRunner().invoke(cli, ["ess", "--data", files["dup"], "--outcome", "y", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "column 'x' appears 2 times" in res.stderr


def test_valid_values_still_parse(files, tmp_path):
    """The option types accept what they accepted before (seed 'none', a grid, features with spaces)."""
    res = CliRunner().invoke(cli, ["ess", "--data", files["ess"], "--outcome", "y", "--prediction", "llm",
                                   "--algorithm", "mean", "--grid", " 5, 10", "--features", " x ", "--seed", "None",
                                   "--alpha", "0.5", "--n-jobs", "-1", "--no-plot", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------------------------------------
# errors name what the user typed, not the API's arguments (issue 22, item 6a)
# ------------------------------------------------------------------------------------------------
BAD_CELLS = {"NA": "", "thousands": "1,000", "NUL": "3\x00"}


def _bad_copy(frame: pd.DataFrame, column: str, cell: str, path: Path) -> str:
    bad = frame.astype(object)
    bad.loc[2, column] = cell if cell else None
    bad.to_csv(path, index=False)
    return str(path)


def _lotteries() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame([{"domain": f"d{d}", "z1": rng.uniform(0, 10), "z2": rng.uniform(0, 10),
                          "p1": rng.uniform(0.1, 0.9), "ce": rng.uniform(0, 10)} for d in range(3) for _ in range(8)])


def _panel() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 40
    x = rng.normal(size=n)
    return pd.DataFrame({"x": x, "y": x + rng.normal(size=n), "llm": x, "w": np.ones(n), "sig": np.sign(x),
                         "lap": rng.normal(size=n), "firm": np.arange(n) % 5, "date": np.arange(n) // 5})


# (command with "{data}" and "{out}", the frame, the bad column, what the error must say ("{name}": the file))
COLUMN_CASES = {
    "quantile --column": (["quantile", "--data", "{data}", "--column", "x", "--tau", "0.5"], _panel, "x",
                          "column 'x' of --data {name}"),
    "quantile --weights": (["quantile", "--data", "{data}", "--column", "x", "--weights", "w", "--tau", "0.5"],
                           _panel, "w", "column 'w' of --data {name}"),
    "ess --outcome": (["ess", "--data", "{data}", "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
                       "--grid", "5", "--no-plot", "--out", "{out}"], _panel, "y", "column 'y' of --data {name}"),
    "ess --prediction": (["ess", "--data", "{data}", "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
                          "--grid", "5", "--no-plot", "--out", "{out}"], _panel, "llm",
                         "column 'llm' of --data {name}"),
    "transfer build --target": (["transfer", "build", "--data", "{data}", "--model", "eu", "--out", "{out}/t.csv"],
                                _lotteries, "ce", "--data {name}"),  # "--data f.csv: domain ..." or "--target 'ce': column 'ce' of --data f.csv"
    "lookahead test --signal": (["lookahead", "test", "--data", "{data}", "--outcome", "y", "--signal", "sig",
                                 "--lap", "lap", "--out", "{out}"], _panel, "sig", "--data {name}: column 'sig'"),
}


# A missing signal is no error: the row is dropped with a note, as the regression does (tested below).
@pytest.mark.parametrize("case,cell", [(case, cell) for case in COLUMN_CASES for cell in BAD_CELLS
                                       if (case, cell) != ("lookahead test --signal", "NA")])
def test_bad_column_errors_name_the_column_and_the_option(tmp_path, case, cell):
    args, make, column, want = COLUMN_CASES[case]
    data = _bad_copy(make(), column, BAD_CELLS[cell], tmp_path / "bad.csv")
    res = CliRunner().invoke(cli, [a.format(data=data, out=tmp_path / "out") for a in args])
    assert_one_line_error(res.exit_code, "\n".join(ln for ln in res.stderr.splitlines() if "━" not in ln), case)
    assert res.exit_code == 1
    assert want.format(name="bad.csv") in res.stderr, res.stderr
    assert "argument `" not in res.stderr and "`values`" not in res.stderr, res.stderr


def test_lookahead_test_drops_a_row_with_a_missing_signal_with_a_note(tmp_path):
    args, make, column, _want = COLUMN_CASES["lookahead test --signal"]
    data = _bad_copy(make(), column, BAD_CELLS["NA"], tmp_path / "bad.csv")
    res = CliRunner().invoke(cli, [a.format(data=data, out=tmp_path / "out") for a in args])
    assert res.exit_code == 0, res.stderr
    assert "1 row" in res.output + res.stderr and "dropped" in res.output + res.stderr, res.output + res.stderr


def test_error_table_errors_name_the_file(tmp_path):
    matrix = load_transfer_errors("abdg").iloc[:6, :6].astype(object)
    matrix.iloc[1, 2] = "1,000"
    matrix.to_csv(tmp_path / "m.csv")
    res = CliRunner().invoke(cli, ["transfer", "intervals", str(tmp_path / "m.csv")])
    assert res.exit_code == 1 and res.stderr.startswith("Error: --data m.csv holds strings"), res.stderr


def test_cli_names_renames_only_the_arguments_given():
    from llmsurrogate._cli_support import cli_names

    names = cli_names(values="column 'x' of --data f.csv", data="--data f.csv")
    for _ in range(2):  # reusable
        with pytest.raises(InvalidArgumentError) as err, names:
            raise InvalidArgumentError("argument `values` holds strings; argument `tau` is fine; not in `data`; "
                                       "argument `outcome 'y'` too")
        assert str(err.value) == ("column 'x' of --data f.csv holds strings; argument `tau` is fine; not in "
                                  "--data f.csv; argument `outcome 'y'` too")


# ------------------------------------------------------------------------------------------------
# a reader that goes away (issue 22, item 6c)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["datasets"], ["transfer", "intervals", "{matrix}"]], ids=["datasets", "intervals"])
def test_output_pipe_closed_by_its_reader_ends_quietly(files, args):
    """``llmsurrogate datasets | head -1`` printed "Error: BrokenPipeError": now it ends with no
    message and exit 141 (128 + SIGPIPE, as coreutils tools do). The reader closes its end before
    the command writes anything, so every write meets the closed pipe."""
    import os

    assert EXE
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([EXE, *_fill(args, files)], stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    os.close(read_end)
    _, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 141, (proc.returncode, err)
    assert "Error" not in err and "Traceback" not in err and "Exception ignored" not in err, err  # (warnings may come)


def test_a_broken_pipe_of_the_computation_is_still_an_error():
    @click.command()
    @handle_errors
    def boom():
        raise BrokenPipeError(32, "Broken pipe")

    res = CliRunner().invoke(boom, [])
    assert res.exit_code == 1 and res.stderr.startswith("Error: BrokenPipeError: [Errno 32] Broken pipe"), res.stderr


# ------------------------------------------------------------------------------------------------
# `ess` speaks command-line words, never the Python API's (issue 25, item 3)
# ------------------------------------------------------------------------------------------------
def _ess_frame(tmp_path, n=80, binary=False, gap=None):
    rng = np.random.default_rng(3)
    x = rng.normal(size=n)
    y = (x + rng.normal(size=n) > 0).astype(int) if binary else x + rng.normal(size=n)
    df = pd.DataFrame({"x": x, "y": y, "llm": 1 / (1 + np.exp(-x)) if binary else x})
    if gap is not None:
        df.loc[gap, "x"] = np.nan
    path = tmp_path / "e.csv"
    df.to_csv(path, index=False)
    return str(path)


ESS_WORDS = {  # (extra options, frame options, what stderr must say)
    "a missing feature": (["--features", "x"], {"gap": 4},
                          "feature 'x' has a non-finite value (nan) at row 4 (0-based); drop or impute missing "
                          "values first (or pass --missing drop)"),
    "a regression for a 0/1 loss": (["--algorithm", "lasso", "--loss", "brier", "--features", "x"], {"binary": True},
                                    "--algorithm lasso is a regression; for --loss brier use --algorithm logit_l1 or "
                                    "--algorithm rf"),
    "a classifier for a numeric outcome": (["--algorithm", "logit_l1", "--features", "x"], {},
                                           "use --algorithm lasso or --algorithm rf (regressions) for a numeric "
                                           "outcome"),
    "fixed_N with too few blocks": (["--regime", "fixed_N", "--grid", "40", "--features", "x"], {},
                                    "--regime fixed_N needs at least 3 blocks; a grid point has 2. Use --regime "
                                    "hybrid (switches to fixed-B) or --regime fixed_B"),
}


@pytest.mark.parametrize("case", list(ESS_WORDS))
def test_ess_errors_use_command_line_words(tmp_path, case):
    extra, frame_opts, want = ESS_WORDS[case]
    args = ["ess", "--data", _ess_frame(tmp_path, **frame_opts), "--outcome", "y", "--prediction", "llm",
            "--grid", "5", "--no-plot", "--out", str(tmp_path / "o")]
    if "--grid" in extra:
        args = args[: args.index("--grid")] + args[args.index("--grid") + 2:]
    res = CliRunner().invoke(cli, args + extra)
    assert_one_line_error(res.exit_code, res.stderr, case)
    assert res.exit_code == 1 and want in res.stderr, res.stderr
    assert "='" not in res.stderr and "argument `" not in res.stderr, res.stderr


def test_ess_warning_uses_command_line_words(tmp_path):
    res = CliRunner().invoke(cli, ["ess", "--data", _ess_frame(tmp_path, gap=4), "--outcome", "y", "--prediction",
                                   "llm", "--features", "x", "--algorithm", "mean", "--grid", "5", "--no-plot",
                                   "--missing", "drop", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.stderr
    assert "Warning: --missing drop: removed 1 of 80 rows with a missing or infinite outcome" in res.stderr
    assert "missing='drop'" not in res.stderr and "LLMSurrogateWarning" not in res.stderr, res.stderr


def test_cli_names_turns_settings_into_options():
    from llmsurrogate._cli_support import cli_names

    names = cli_names(missing="--missing", bias_correct="--bias-correct", outcome="column 'y' of --data f.csv")
    assert names.rename("pass missing='drop' or `bias_correct=True`; keep tau=0.5 and outcome='y'") == \
        "pass --missing drop or --bias-correct; keep tau=0.5 and outcome='y'"
