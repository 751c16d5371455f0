"""``llmsurrogate ess`` as a subprocess: outputs, resume from cached grid points, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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


# ------------------------------------------------------------------------------------------------
# without --features: the columns used are listed, and a column that gives the outcome away is refused
# (issue 25, item 3: the true-probability column was fed to the learner)
# ------------------------------------------------------------------------------------------------
def _leaky(tmp_path, **extra):
    rng = np.random.default_rng(5)
    n = 200
    x = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-x))).astype(int)
    df = pd.DataFrame({"x": x, "y": y, "llm": 1 / (1 + np.exp(-0.5 * x))})
    for name, make in extra.items():
        df[name] = make(df)
    path = tmp_path / "leaky.csv"
    df.to_csv(path, index=False)
    return path


LEAKS = {
    "a copy": (lambda d: d["y"], "is equal to the outcome 'y'"),
    "a recoding": (lambda d: np.where(d["y"] == 1, "high", "low"), "is a monotone function of the outcome 'y'"),
    "a 0/1 flip": (lambda d: 1 - d["y"], "is a monotone function of the outcome 'y'"),
    "a coarser code": (lambda d: d["y"] * 10 + (np.arange(len(d)) % 3), "determines the outcome 'y'"),
}


@pytest.mark.parametrize("case", list(LEAKS))
def test_a_column_that_gives_the_outcome_away_is_refused(tmp_path, case):
    make, how = LEAKS[case]
    data = _leaky(tmp_path, leak=make)
    out = tmp_path / "out"
    r = run("ess", "--data", str(data), "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
            "--loss", "brier", "--grid", "5", "--no-plot", "--out", str(out))
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"Error: column 'leak' of --data leaky.csv {how}"
        + r.stderr.split(how, 1)[1].splitlines()[0]], r.stderr  # one line
    assert "pass --features x," in r.stderr and "leak the outcome into the learner" in r.stderr
    assert not (out / "ess_table.csv").exists()
    # the user's own choice of columns is trusted
    r2 = run("ess", "--data", str(data), "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
             "--loss", "brier", "--grid", "5", "--no-plot", "--features", "x,leak", "--out", str(out))
    assert r2.returncode == 0, r2.stderr
    assert "features (every column" not in r2.stderr


def test_the_columns_used_are_listed(tmp_path):
    data = _leaky(tmp_path, z=lambda d: np.sin(d["x"]))
    r = run("ess", "--data", str(data), "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
            "--loss", "brier", "--grid", "5", "--no-plot", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "features (every column but --outcome and --prediction; --features chooses): x, z" in r.stderr


def test_independent_columns_are_never_called_leaks():
    """No false alarm on 300 data sets of independent columns of every kind the check looks at."""
    from llmsurrogate.ess._cli import leaking_columns

    for seed in range(300):
        rng = np.random.default_rng(seed)
        n = int(rng.choice([8, 20, 40, 200]))
        df = pd.DataFrame({"y": rng.integers(0, 2, n) if seed % 2 else rng.normal(size=n).round(1),
                           "num": rng.normal(size=n), "code": rng.integers(0, max(2, n // 4), n),
                           "bin": rng.integers(0, 2, n), "lab": rng.choice(["a", "b"], n)})
        if df["y"].nunique() < 2:
            continue
        assert leaking_columns(df, "y", ["num", "code", "bin", "lab"]) == [], (seed, n)


def test_a_monotone_transform_of_a_numeric_outcome_is_a_leak():
    from llmsurrogate.ess._cli import leaking_columns

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.normal(size=50), "x": rng.normal(size=50)})
    df["ey"] = np.exp(df["y"])
    df["neg"] = 3 - 2 * df["y"]
    assert [c for c, _ in leaking_columns(df, "y", ["x", "ey", "neg"])] == ["ey", "neg"]
