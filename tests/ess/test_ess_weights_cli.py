"""``llmsurrogate ess --weights COLUMN`` refuses survey weights with the reason of
docs/methods/survey.md §5, in command-line words, as the Python API's ``weights=`` does (issue 27
follow-up): exit 1 like the command's other argument errors, nothing read or written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from llmsurrogate import ess
from llmsurrogate.cli import cli
from llmsurrogate.exceptions import InvalidArgumentError


@pytest.fixture()
def data(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=80)
    frame = pd.DataFrame({"x": x, "y": x + rng.normal(size=80), "llm": x, "w": rng.uniform(0.5, 2, 80)})
    frame.to_csv(tmp_path / "d.csv", index=False)
    return tmp_path / "d.csv", frame


def api_reason(frame):
    with pytest.raises(InvalidArgumentError) as err:
        ess.equivalent_sample_size(frame, "y", "llm", ["x"], algorithm="mean", grid=[5], weights=frame["w"])
    return str(err.value)


@pytest.mark.parametrize("extra", [["--prediction", "llm"], [],  # the ESS, the error curve
                                   ["--prediction", "llm,x", "--loss", "multiclass_log"],
                                   ["--weights", "not-a-column"]])  # the last --weights counts; refused all the same
def test_weights_are_refused_with_the_reason_before_any_work(data, tmp_path, extra):
    path, frame = data
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["ess", "--data", str(path), "--outcome", "y", "--weights", "w", *extra,
                                   "--algorithm", "mean", "--grid", "5", "--out", str(out)])
    column = extra[-1] if extra[:1] == ["--weights"] else "w"
    assert res.exit_code == 1, res.output
    message = res.output.strip()
    assert message.count("\n") == 0 and "Traceback" not in message
    # the API's words with the argument named as typed
    assert message == "Error: " + api_reason(frame).replace("argument `weights`", f"--weights {column}")
    assert message.startswith(f"Error: --weights {column}: survey weights are not supported for the equivalent "
                              "sample size") and "docs/methods/survey.md §5" in message
    assert not out.exists()


def test_other_argument_errors_exit_alike_and_help_names_the_option(data, tmp_path):
    path, _ = data
    # --options without a multiclass --loss: another argument error of the command, also exit 1
    res = CliRunner().invoke(cli, ["ess", "--data", str(path), "--outcome", "y", "--prediction", "llm", "--options",
                                   "a,b", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and res.output.startswith("Error: --options")
    res = CliRunner().invoke(cli, ["ess", "--help"])
    assert res.exit_code == 0 and "--weights COLUMN" in res.output and "survey.md §5" in res.output
    res = CliRunner().invoke(cli, ["ess", "--data", str(path), "--outcome", "y", "--weights"])
    assert res.exit_code == 2  # no column: click's usage error
    # without --weights the command runs as before
    res = CliRunner().invoke(cli, ["ess", "--data", str(path), "--outcome", "y", "--prediction", "llm", "--features",
                                   "x", "--algorithm", "mean", "--grid", "5,10", "--out", str(tmp_path / "ok"),
                                   "--no-plot"])
    assert res.exit_code == 0, res.output
