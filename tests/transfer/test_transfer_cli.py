"""`llmsurrogate transfer intervals` on CSV and Parquet tables (matrix and long layouts)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from llmsurrogate import transfer as tr
from llmsurrogate.cli import cli
from llmsurrogate.datasets import load_transfer_errors
from llmsurrogate.exceptions import LLMSurrogateWarning
from llmsurrogate.transfer import ErrorTable


def test_intervals_matrix_csv_and_long_parquet(tmp_path):
    cpt, rf = load_transfer_errors("abdg"), load_transfer_errors("RF")
    cpt.to_csv(tmp_path / "cpt.csv")
    ErrorTable.from_matrix(rf).tidy().to_parquet(tmp_path / "rf.parquet")
    out = tmp_path / "out.csv"
    res = CliRunner().invoke(cli, ["transfer", "intervals", str(tmp_path / "cpt.csv"), str(tmp_path / "rf.parquet"),
                                   "--level", "0.9", "--side", "two", "--side", "upper", "--gamma", "2",
                                   "--compare", "--tau", "0.9", "--out", str(out)])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out)
    row = table[(table.model == "cpt") & (table.side == "two")].iloc[0]
    assert (row.lower, row.upper) == tr.forecast_interval(cpt, 0.9)
    assert row.upper_gamma_2 == tr.worst_case_interval(cpt, 0.9, Gamma=2)[1]
    row = table[(table.model == "rf") & (table.side == "upper")].iloc[0]
    assert row.upper == tr.forecast_interval(rf, 0.9, side="upper")[1] and np.isinf(row.lower)
    last = res.output.strip().splitlines()[-1].split()
    assert "everywhere" in res.output and last == ["cpt", "rf", "0.9", "True", "False"]


def test_intervals_bad_input_exits_1(tmp_path):
    m = load_transfer_errors("abdg").iloc[:4, :4].copy()
    m.iloc[0, 1] = np.nan
    m.to_csv(tmp_path / "bad.csv")
    res = CliRunner().invoke(cli, ["transfer", "intervals", str(tmp_path / "bad.csv")])
    assert res.exit_code == 1 and "missing" in res.output


def test_intervals_old_coverage_option_still_works_with_a_notice(tmp_path):
    load_transfer_errors("abdg").to_csv(tmp_path / "cpt.csv")
    runner = CliRunner()
    new = runner.invoke(cli, ["transfer", "intervals", str(tmp_path / "cpt.csv"), "--level", "0.9", "--level", "0.8"])
    old = runner.invoke(cli, ["transfer", "intervals", str(tmp_path / "cpt.csv"), "--coverage", "0.9", "--coverage", "0.8"])
    assert new.exit_code == 0 and old.exit_code == 0, old.output
    assert old.stdout == new.stdout
    assert "--coverage is deprecated" in old.stderr and "use --level" in old.stderr and new.stderr == ""
    assert "--coverage" not in runner.invoke(cli, ["transfer", "intervals", "--help"]).output
    both = runner.invoke(cli, ["transfer", "intervals", str(tmp_path / "cpt.csv"), "--level", "0.9", "--coverage", "0.8"])
    assert both.exit_code == 2 and "give only --level" in both.stderr


def _six_domains(tmp_path):
    from llmsurrogate.datasets import load_certainty_equivalents

    path = tmp_path / "ce6.csv"
    ce = load_certainty_equivalents()
    ce[ce.domain_id <= 6].to_csv(path, index=False)
    return path


def test_a_table_of_sampled_training_sets_from_build_goes_into_intervals_and_forecast_interval(tmp_path):
    """Issue 25.2: `transfer build --subsets K` writes a long table that `transfer intervals` and
    forecast_interval take (the errors pooled as given, with a warning that names the sample)."""
    data, out = _six_domains(tmp_path), tmp_path / "sub.csv"
    runner = CliRunner()
    res = runner.invoke(cli, ["transfer", "build", "--data", str(data), "--model", "eu", "-r", "2", "--subsets", "5",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out)
    assert list(table.columns) == ["train_1", "train_2", "test", "error"] and len(table) == 5 * 4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = runner.invoke(cli, ["transfer", "intervals", str(out), "--level", "0.5", "--out", str(tmp_path / "iv.csv")])
    assert res.exit_code == 0, res.output
    said = [str(w.message) for w in caught]
    assert any(m.startswith("--data sub.csv holds 20 of the 60 errors") and "a sample of the training sets" in m
               for m in said), said
    row = pd.read_csv(tmp_path / "iv.csv").iloc[0]
    e = np.sort(table.error.to_numpy())  # tau = 0.75, N = 20: k = 15, the interval [e_(6), e_(15)]
    assert (row.lower, row.upper) == (e[20 - 15], e[15 - 1])
    with pytest.warns(LLMSurrogateWarning, match="argument `err` holds 20 of the 60 errors"):
        assert tr.forecast_interval(table, 0.5) == (e[5], e[14])
    # a complete table with a missing cell is not a sample of training sets: still an error
    full = ErrorTable.from_matrix(load_transfer_errors("abdg").iloc[:5, :5]).tidy()
    res = runner.invoke(cli, ["transfer", "intervals", _write(full.iloc[1:], tmp_path / "hole.csv")])
    assert res.exit_code == 1 and "19 errors, but 5 domains with r = 1 need 20" in res.stderr
    # per-test-domain computations say what they need, in command-line words
    res = runner.invoke(cli, ["transfer", "intervals", str(out), "--gamma", "2"])
    assert res.exit_code == 1 and "build it with every training set" in res.stderr and "subsets=" not in res.stderr


def _write(frame, path):
    frame.to_csv(path, index=False)
    return str(path)


def test_build_and_intervals_errors_name_the_command_line_options(tmp_path):
    """Issue 25.3: messages in command-line words (`--domain`, `--correction`), not Python's."""
    data = _six_domains(tmp_path)
    renamed = tmp_path / "study.csv"
    pd.read_csv(data).rename(columns={"domain": "study"}).to_csv(renamed, index=False)
    runner = CliRunner()

    def build(*extra, path=data):
        return runner.invoke(cli, ["transfer", "build", "--data", str(path), "--model", "eu", "--out",
                                   str(tmp_path / "x.csv"), *extra])

    res = build(path=renamed)
    assert res.exit_code == 1
    assert "--domain 'domain': no such column in --data study.csv" in res.stderr and "--domain domain_id?" in res.stderr
    res = build("--target", "cee")
    assert res.exit_code == 1 and "--target 'cee': no such column" in res.stderr and "--target ce?" in res.stderr
    res = build("--features", "z1,zz")
    assert res.exit_code == 1 and "--features 'zz': no such column" in res.stderr
    res = build("--features", "domain")
    assert res.exit_code == 1 and "--features 'domain'" in res.stderr and "holds text" in res.stderr
    res = runner.invoke(cli, ["transfer", "build", "--data", str(data), "--model", "ols", "--out", str(tmp_path / "x.csv")])
    assert res.exit_code == 1 and "--model ols: unknown model 'ols'; use one of eu, eu-authors" in res.stderr
    res = runner.invoke(cli, ["transfer", "build", "--data", str(data), "--model", "cpt:q", "--out", str(tmp_path / "x.csv")])
    assert res.exit_code == 1 and "--model cpt:q must be" in res.stderr and "`free`" not in res.stderr
    for res in (build(path=renamed), build("--features", "domain")):
        assert "`" not in res.stderr and "argument" not in res.stderr and "[" not in res.stderr
    # intervals: a non-numeric error column, and the correction named as the option
    table = ErrorTable.from_matrix(load_transfer_errors("abdg").iloc[:4, :4]).tidy()
    table["error"] = table["error"].astype(object)
    table.loc[2, "error"] = "abc"
    res = runner.invoke(cli, ["transfer", "intervals", _write(table, tmp_path / "text.csv")])
    assert res.exit_code == 1 and "column 'error' must hold the errors as numbers; row 4 of the file has 'abc'" in res.stderr
    table.loc[2, "error"] = np.inf
    res = runner.invoke(cli, ["transfer", "intervals", _write(table, tmp_path / "inf.csv")])
    assert res.exit_code == 1 and "error at row 4 of the file is inf" in res.stderr and "0-based" not in res.stderr
    four = _write(ErrorTable.from_matrix(load_transfer_errors("abdg").iloc[:4, :4]).tidy(), tmp_path / "four.csv")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = runner.invoke(cli, ["transfer", "intervals", four, "--level", "0.5"])
    said = " ".join(str(w.message) for w in caught)
    assert res.exit_code == 0 and "--correction raises the level" in said and "correction=True" not in said
