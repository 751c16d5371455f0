"""The console script, run as a real subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import llmsurrogate
import pandas as pd

EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


def run(*args, cwd=None):
    assert EXE, "the llmsurrogate console script is not installed next to this Python"
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_version_and_help():
    out = run("--version")
    assert out.returncode == 0 and llmsurrogate.__version__ in out.stdout
    out = run("--help")
    assert out.returncode == 0
    for cmd in ("demo", "datasets", "quantile"):
        assert cmd in out.stdout


def test_demo_writes_table_json_and_figure(tmp_path):
    out = run("demo", "--out", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    assert "Random forest" in out.stdout and "guaranteed coverage" in out.stdout
    table = pd.read_csv(tmp_path / "out" / "transfer_forecast_intervals.csv")
    assert len(table) == 21
    saved = json.loads((tmp_path / "out" / "transfer_forecast_intervals.json").read_text())
    assert saved["kind"] == "IntervalTable"
    assert (tmp_path / "out" / "transfer_forecast_intervals.png").stat().st_size > 10_000


def test_quantile_command_on_csv_and_parquet(tmp_path):
    frame = pd.DataFrame({"err": [3.0, 1.0, 2.0, 4.0], "w": [1.0, 1.0, 1.0, 5.0]})
    frame.to_csv(tmp_path / "e.csv", index=False)
    out = run("quantile", "--data", str(tmp_path / "e.csv"), "--column", "err", "--tau", "0.5", "--tau", "1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[1].split() == ["0.5", "3.0", "2.0"] and lines[2].split() == ["1.0", "inf", "4.0"]
    out = run("quantile", "--data", str(tmp_path / "e.csv"), "--column", "err", "--tau", "0.5", "--weights", "w")
    assert out.returncode == 0 and out.stdout.split("\n")[1].split() == ["0.5", "4.0", "4.0"]
    frame.to_parquet(tmp_path / "e.parquet")
    out = run("quantile", "--data", str(tmp_path / "e.parquet"), "--column", "err", "--tau", "0.5")
    assert out.returncode == 0 and out.stdout.split("\n")[1].split() == ["0.5", "3.0", "2.0"]


def test_errors_give_clean_messages_and_exit_codes(tmp_path):
    pd.DataFrame({"err": [1.0, None]}).to_csv(tmp_path / "e.csv", index=False)
    out = run("quantile", "--data", str(tmp_path / "e.csv"), "--column", "err", "--tau", "0.5")
    assert out.returncode == 1 and "Error:" in out.stderr and "Traceback" not in out.stderr
    assert "column 'err' of --data e.csv" in out.stderr and "`values`" not in out.stderr  # CLI words (issue 22)
    out = run("quantile", "--data", str(tmp_path / "e.csv"), "--column", "er", "--tau", "0.5")
    assert out.returncode == 1 and "did you mean 'err'" in out.stderr
    out = run("quantile", "--data", str(tmp_path / "missing.csv"), "--column", "x", "--tau", "0.5")
    assert out.returncode == 2 and "does not exist" in out.stderr
    (tmp_path / "x.xlsx").write_text("x")
    out = run("quantile", "--data", str(tmp_path / "x.xlsx"), "--column", "x", "--tau", "0.5")
    assert out.returncode == 1 and "unsupported file type" in out.stderr
    out = run("demo", "--tau", "0.3")
    assert out.returncode == 2
    out = run("no-such-command")
    assert out.returncode == 2


def test_module_entry_point_is_the_console_script():
    out = subprocess.run([sys.executable, "-m", "llmsurrogate.cli", "--help"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout == run("--help").stdout


def test_risk_is_listed_and_score_is_a_hidden_alias_with_a_notice(tmp_path):
    listed = run("--help").stdout
    assert " risk " in listed and " score " not in listed
    pd.DataFrame({"x": [1.0]}).to_csv(tmp_path / "rows.csv", index=False)
    args = ["--data", str(tmp_path / "rows.csv"), "--task", "NoSuchTask", "--model", str(tmp_path),
            "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o")]
    new, old = run("risk", *args), run("score", *args)
    assert new.returncode == old.returncode == 1
    notice = "Warning: `llmsurrogate score` is deprecated and will be removed in llmsurrogate 0.3; use `llmsurrogate risk`"
    assert old.stderr == notice + "\n" + new.stderr and "deprecated" not in new.stderr


def test_registry_help_is_each_commands_own_and_loads_nothing_until_used():
    import click
    from llmsurrogate.cli import COMMANDS, cli, load_command

    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name, (_, _, summary) in COMMANDS.items():
        command = load_command(name)
        assert command.get_short_help_str(limit=10_000) == summary, name  # the listed help is the command's
    assert cli.get_command(ctx, "no-such-command") is None
    # `llmsurrogate --help` lists every command without importing one (nor pandas)
    code = ("import sys; from llmsurrogate.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m in ('pandas', 'scipy', 'sklearn') or m.endswith('._cli')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
