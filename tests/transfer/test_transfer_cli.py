"""`llmsurrogate transfer intervals` on CSV and Parquet tables (matrix and long layouts)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

from llmsurrogate import transfer as tr
from llmsurrogate.cli import cli
from llmsurrogate.datasets import load_transfer_errors
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
