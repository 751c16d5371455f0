"""``llmsurrogate ess`` as a subprocess: outputs, resume from cached grid points, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


def run(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300)


def _data(tmp_path, fmt="csv"):
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 2))
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": X[:, 0] + rng.normal(size=n), "llm": 0.8 * X[:, 0]})
    path = tmp_path / f"d.{fmt}"
    df.to_csv(path, index=False) if fmt == "csv" else df.to_parquet(path)
    return path


def test_ess_cli_writes_outputs_and_resumes(tmp_path):
    data = _data(tmp_path, "parquet")
    out = tmp_path / "out"
    args = ["ess", "--data", str(data), "--outcome", "y", "--prediction", "llm", "--algorithm", "lasso",
            "--grid", "1,2,5,20", "--out", str(out)]
    r = run(*args)
    assert r.returncode == 0, r.stderr
    for f in ("ess_table.csv", "ess_summary.json", "ess_plot.png"):
        assert (out / f).exists()
    summary = json.loads((out / "ess_summary.json").read_text())
    table = pd.read_csv(out / "ess_table.csv")
    assert summary["lower_bound"] >= 1 and len(table) == 4
    assert "blocks" in r.stderr  # progress bars on stderr
    # simulate an interrupted run: keep two finished points; one of them edited (not trusted: recomputed)
    cache = next((out / ".ess_cache").iterdir())
    (cache / "N_20.entry").unlink()
    (cache / "N_5.entry").unlink()
    magic, head, payload = (cache / "N_2.entry").read_bytes().split(b"\n", 2)  # the llmsurrogate._store format
    point = json.loads(payload)
    point["plain"]["ecv"] += 1000.0
    (cache / "N_2.entry").write_bytes(magic + b"\n" + head + b"\n" + json.dumps(point).encode())
    r2 = run(*args)
    assert r2.returncode == 0, r2.stderr
    assert "reusing 1 finished grid point(s)" in r2.stderr and "rejected 1 cached grid point(s)" in r2.stderr
    assert "grid points: 1 reused, 3 computed, 1 rejected" in r2.stderr
    t2 = pd.read_csv(out / "ess_table.csv")
    pd.testing.assert_frame_equal(t2, table)
    assert (cache / "N_20.entry").exists()
    # --bias-correct post-processes the same cached points: same errors, wider fixed-N SEs
    r3 = run(*args, "--bias-correct", "--regime", "fixed_N", "--grid", "5,20")
    assert r3.returncode == 0, r3.stderr
    assert json.loads((out / "ess_summary.json").read_text())["bias_correct"] is True
    assert "bias-corrected" in r3.stdout


def test_ess_cli_error_curve_and_bad_input(tmp_path):
    data = _data(tmp_path)
    r = run("ess", "--data", str(data), "--outcome", "y", "--algorithm", "mean", "--grid", "2,10",
            "--out", str(tmp_path / "o"), "--no-plot")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "error_curve_table.csv").exists()
    r = run("ess", "--data", str(data), "--outcome", "y", "--prediction", "llm", "--grid", "1,300",
            "--out", str(tmp_path / "o2"))
    assert r.returncode == 1 and "exceeds n/2" in r.stderr and "Traceback" not in r.stderr
