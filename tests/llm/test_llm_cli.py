"""`llmsurrogate risk` (formerly `llmsurrogate score`) as a real subprocess on a tiny local model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("torch")

from llmsurrogate import datasets, testing  # noqa: E402

EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


def run(*args):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    model = testing.build_model(root / "model", "gpt2", seed=11)
    data = root / "acs.csv"
    datasets.load_acs_income_rows().to_csv(data, index=False)
    return root, model, data


def test_risk_writes_outputs_and_resumes_from_cache(setup):
    root, model, data = setup
    out = run("risk", "--data", data, "--task", "ACSIncome", "--model", model, "--cache", root / "cache",
              "--out", root / "out", "--n-boot", 20)
    assert out.returncode == 0, out.stderr
    scores = pd.read_csv(root / "out" / "scores.csv")
    assert len(scores) == 10 and scores["score"].between(0, 1).all()
    assert scores["label"].tolist() == datasets.load_acs_income_rows()["PINCP>50000"].tolist()
    from llmsurrogate.risk import RiskEvaluation

    ev = RiskEvaluation.from_json(root / "out" / "metrics.json")
    assert ev.meta["n"] == 10 and ev.meta["n_boot"] == 20
    assert (root / "out" / "calibration.png").stat().st_size > 5000
    run_info = json.loads((root / "out" / "run.json").read_text())
    assert run_info["cache_misses"] == 18 and run_info["backend"]["backend"] == "transformers"  # 2 duplicate rows
    again = run("risk", "--data", data, "--task", "ACSIncome", "--model", model, "--cache", root / "cache",
                "--out", root / "out2", "--n-boot", 20, "--no-plot")
    assert again.returncode == 0, again.stderr
    assert "0 computed" in again.stdout
    pd.testing.assert_frame_equal(pd.read_csv(root / "out2" / "scores.csv"), scores)
    m = pd.read_csv(root / "out" / "metrics.csv")
    assert {"roc_auc", "ece", "brier", "log_loss", "confidence_bias", "sce"} <= set(m["metric"])


def test_risk_with_task_file_numeric(setup):
    root, model, data = setup
    toml = root / "task.toml"
    toml.write_text('preset = "ACSIncome"\nfeatures = ["AGEP", "SEX", "WKHP"]\n')
    out = run("risk", "--data", data, "--task", toml, "--model", model, "--cache", root / "cache",
              "--out", root / "num", "--method", "numeric", "--no-plot", "--n-boot", 0, "--chat")
    assert out.returncode == 0, out.stderr
    assert len(pd.read_csv(root / "num" / "scores.csv")) == 10


def test_risk_bad_input(setup, tmp_path):
    root, model, data = setup
    out = run("risk", "--data", data, "--task", "ACSIncome", "--model", tmp_path / "nope", "--cache",
              tmp_path / "c", "--out", tmp_path / "o")
    assert out.returncode == 1 and "not a local model folder" in out.stderr
    bad = tmp_path / "bad.csv"
    datasets.load_acs_income_rows().drop(columns=["OCCP"]).to_csv(bad, index=False)
    out = run("risk", "--data", bad, "--task", "ACSIncome", "--model", model, "--cache", tmp_path / "c",
              "--out", tmp_path / "o")
    assert out.returncode == 1 and "OCCP" in out.stderr
    out = run("risk", "--data", data, "--task", "NoSuchTask", "--model", model, "--cache", tmp_path / "c",
              "--out", tmp_path / "o")
    assert out.returncode == 1 and "preset" in out.stderr


def test_old_command_name_score_runs_risk_with_a_notice(setup):
    root, model, data = setup
    args = ["--data", data, "--task", "ACSIncome", "--model", model, "--cache", root / "cache", "--n-boot", 20,
            "--no-plot"]
    new = run("risk", *args, "--out", root / "new")
    old = run("score", *args, "--out", root / "old")
    assert new.returncode == 0 and old.returncode == 0, old.stderr
    assert "`llmsurrogate score` is deprecated" in old.stderr and "`llmsurrogate risk`" in old.stderr
    assert "deprecated" not in new.stderr
    for name in ("scores.csv", "metrics.csv"):
        assert (root / "old" / name).read_bytes() == (root / "new" / name).read_bytes()
    listed = run("--help").stdout
    assert " risk " in listed and " score " not in listed
