"""Every command that writes results leaves a ``run.json`` with the run's manifest beside them
(``<out>.run.json`` for a command that writes one file): the package version, Python and platform,
dependency versions, a SHA-256 of each input file, the seeds, the command line (values of options
named ``*key*`` redacted) and the UTC start and finish times."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import llmsurrogate
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from llmsurrogate import _manifest
from llmsurrogate.cli import cli

EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


def invoke(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def check_manifest(record: dict, command_line: list[str], inputs: list[tuple[str, Path]],
                   seeds: dict) -> dict:
    """The manifest of ``record`` describes this run; returns it."""
    m = record["manifest"]
    assert m["llmsurrogate"] == llmsurrogate.__version__ == metadata.version("llmsurrogate")
    assert m["python"] == platform.python_version() and m["platform"] == platform.platform()
    for dist in ("numpy", "pandas", "scipy", "scikit-learn", "joblib", "click"):
        assert m["packages"][dist] == metadata.version(dist)
    assert [(i["argument"], i["path"]) for i in m["inputs"]] == [(a, str(p)) for a, p in inputs]
    for entry, (_, path) in zip(m["inputs"], inputs):
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert entry["bytes"] == path.stat().st_size
    assert m["command_line"] == command_line
    assert m["seeds"] == seeds
    started, finished = (datetime.datetime.fromisoformat(m[k].replace("Z", "+00:00"))
                         for k in ("started_utc", "finished_utc"))
    assert started.utcoffset() == datetime.timedelta(0) and started <= finished
    now = datetime.datetime.now(datetime.timezone.utc)
    assert (now - finished).total_seconds() < 600
    return m


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------------
# the machinery
# ------------------------------------------------------------------------------------------------
def test_redaction_hides_the_value_of_every_option_named_key():
    argv = ["llmsurrogate", "score", "--api-key-env", "MY_VAR", "--KEY=secret", "--monkey", "x", "--model", "m",
            "--api-key", "sk-123", "--", "--key"]
    assert _manifest.redact_command_line(argv) == [
        "llmsurrogate", "score", "--api-key-env", "***", "--KEY=***", "--monkey", "***", "--model", "m",
        "--api-key", "***", "--", "--key"]


def test_optional_packages_are_reported_when_imported_and_installed():
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        pytest.skip("torch is not installed")
    assert "torch" not in _manifest.package_versions(imported=set())
    assert _manifest.package_versions(imported={"torch"})["torch"] == torch_version
    assert "not-a-distribution" not in _manifest.package_versions(imported={"not-a-distribution"})


def test_file_sha256_reads_in_chunks(tmp_path):
    data = os.urandom(3 * (1 << 20) + 17)  # more than one chunk
    (tmp_path / "f").write_bytes(data)
    assert _manifest.file_sha256(tmp_path / "f") == hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------------------------
# each command
# ------------------------------------------------------------------------------------------------
def test_transfer_intervals_through_the_console_script(tmp_path):
    """The real console script: the command line is sys.argv; one output file: <out>.run.json."""
    from llmsurrogate.datasets import load_transfer_errors

    assert EXE, "the llmsurrogate console script is not installed next to this Python"
    load_transfer_errors("abdg").to_csv(tmp_path / "cpt.csv")
    load_transfer_errors("RF").to_csv(tmp_path / "rf.csv")
    args = ["transfer", "intervals", str(tmp_path / "cpt.csv"), str(tmp_path / "rf.csv"), "--level", "0.9",
            "--out", str(tmp_path / "out.csv")]
    res = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Wrote" in res.stdout and "out.csv.run.json" in res.stdout
    check_manifest(read(tmp_path / "out.csv.run.json"), [EXE, *args],
                   [("DATA", tmp_path / "cpt.csv"), ("DATA", tmp_path / "rf.csv")], {})
    # without --out nothing is written, and no run record either
    before = sorted(tmp_path.iterdir())
    invoke(["transfer", "intervals", str(tmp_path / "cpt.csv")])
    assert sorted(tmp_path.iterdir()) == before


def test_transfer_build(tmp_path):
    from _samples import synthetic

    synthetic(n=3, m=20).to_csv(tmp_path / "d.csv", index=False)
    args = ["transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "eu", "--seed", "7", "--n-jobs", "1",
            "--out", str(tmp_path / "t.csv")]
    text = invoke(args)
    assert "t.csv.run.json" in text and (tmp_path / "t.csv").exists()
    check_manifest(read(tmp_path / "t.csv.run.json"), ["llmsurrogate", *args], [("--data", tmp_path / "d.csv")],
                   {"seed": 7})


def _ess_data(path: Path) -> Path:
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    pd.DataFrame({"x": x, "y": x + rng.normal(size=200), "llm": 0.8 * x}).to_csv(path, index=False)
    return path


def test_ess(tmp_path):
    data = _ess_data(tmp_path / "d.csv")
    args = ["ess", "--data", str(data), "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
            "--grid", "1,2,5", "--seed", "3", "--no-plot", "--out", str(tmp_path / "out")]
    text = invoke(args)
    assert "run.json" in text.splitlines()[-1]
    check_manifest(read(tmp_path / "out" / "run.json"), ["llmsurrogate", *args], [("--data", data)], {"seed": 3})
    # --seed none keeps the file's order: recorded as null
    args = [*args[:-3], "--seed", "none", "--out", str(tmp_path / "out2")]
    invoke(args)
    assert read(tmp_path / "out2" / "run.json")["manifest"]["seeds"] == {"seed": None}


def test_ess_refuses_an_input_at_the_run_records_path(tmp_path):
    """run.json is one of the outputs checked before any work: it may not overwrite --data."""
    out = tmp_path / "out"
    out.mkdir()
    data = _ess_data(out / "run.json")
    res = CliRunner().invoke(cli, ["ess", "--data", str(data), "--outcome", "y", "--out", str(out)])
    assert res.exit_code == 1 and "is the input file" in res.output
    assert data.read_bytes()[:5] == b"x,y,l"


def test_lookahead_test_records_the_drawn_seed(tmp_path):
    from _samples import make_panel
    from llmsurrogate.lookahead import LookaheadBootstrap

    data = tmp_path / "panel.csv"
    make_panel(n=400, n_firms=20, n_dates=20).to_csv(data, index=False)
    base = ["lookahead", "test", "--data", str(data), "--outcome", "ret", "--signal", "llm", "--lap", "lap"]
    args = [*base, "--n-boot", "20", "--seed", "none", "--no-plot", "--out", str(tmp_path / "out")]
    text = invoke(args)
    drawn = LookaheadBootstrap.load(tmp_path / "out" / "lookahead_bootstrap.json").seed
    assert isinstance(drawn, int) and f"seed={drawn}" in text
    check_manifest(read(tmp_path / "out" / "run.json"), ["llmsurrogate", *args], [("--data", data)],
                   {"seed": drawn})
    # without the bootstrap nothing is drawn at random: no seed
    args = [*base, "--out", str(tmp_path / "plain")]
    invoke(args)
    check_manifest(read(tmp_path / "plain" / "run.json"), ["llmsurrogate", *args], [("--data", data)], {})


def test_demo(tmp_path):
    args = ["demo", "transfer", "--no-plot", "--out", str(tmp_path / "demo")]
    text = invoke(args)
    assert text.strip().endswith(f"transfer_dominance.csv, run.json to {tmp_path / 'demo'}/")
    check_manifest(read(tmp_path / "demo" / "run.json"), ["llmsurrogate", *args], [], {})


def test_demo_seeds_are_the_runners_defaults():
    import inspect

    from llmsurrogate.cli.demo import _demo_seeds
    from llmsurrogate.ess.demo import run_ess_demo
    from llmsurrogate.lookahead.demo import write_demo

    assert _demo_seeds(("transfer",)) == {}
    assert _demo_seeds(None) == {"ess": 0, "lookahead": 0}
    assert inspect.signature(run_ess_demo).parameters["seed"].default == 0
    assert inspect.signature(write_demo).parameters["seed"].default == 0


# ------------------------------------------------------------------------------------------------
# the two commands that run a language model (a tiny local one)
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    pytest.importorskip("torch")
    from llmsurrogate import testing

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return testing.build_model(tmp_path_factory.mktemp("manifest") / "gpt2", "gpt2", seed=11)


def test_score_keeps_its_fields_and_adds_the_manifest(tiny_model, tmp_path):
    from llmsurrogate import datasets

    data = tmp_path / "acs.csv"
    datasets.load_acs_income_rows().to_csv(data, index=False)
    task = tmp_path / "task.toml"
    task.write_text('preset = "ACSIncome"\nfeatures = ["AGEP", "SEX", "WKHP"]\n')
    args = ["risk", "--data", str(data), "--task", str(task), "--model", str(tiny_model), "--device", "cpu",
            "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--n-boot", "5", "--no-plot",
            "--api-key-env", "NOT_A_SECRET"]
    invoke(args)
    record = read(tmp_path / "out" / "run.json")
    assert record["cache_misses"] > 0 and record["backend"]["backend"] == "transformers"
    redacted = ["llmsurrogate", *args[:-1], "***"]
    m = check_manifest(record, redacted, [("--data", data), ("--task", task)], {"bootstrap": 42})
    assert m["packages"]["torch"] == metadata.version("torch")
    assert m["packages"]["transformers"] == metadata.version("transformers")
    assert "NOT_A_SECRET" not in (tmp_path / "out" / "run.json").read_text()


def test_lookahead_lap(tiny_model, tmp_path):
    data = tmp_path / "texts.csv"
    pd.DataFrame({"headline": ["Shares rose after the report.", "The firm cut its forecast."]}).to_csv(data, index=False)
    args = ["lookahead", "lap", "--model", str(tiny_model), "--data", str(data), "--text-column", "headline",
            "--device", "cpu", "--out", str(tmp_path / "lap.csv")]
    text = invoke(args)
    assert "lap.csv.run.json" in text
    m = check_manifest(read(tmp_path / "lap.csv.run.json"), ["llmsurrogate", *args], [("--data", data)], {})
    assert m["packages"]["torch"] == metadata.version("torch")
