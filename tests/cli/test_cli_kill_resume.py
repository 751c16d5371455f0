"""Kill and resume every command that writes (issue 11, defect 4), and the checks before work starts.

Each command runs as a real subprocess and is SIGKILLed at a random point of its computation, or
during its final write (``LLMSURROGATE_TEST_WRITE_DELAY`` pauses between writing an output's
temporary file and renaming it). Then:

* no partial file sits at a final path (each final output is absent or complete);
* the rerun redoes no finished work (the cache counts the command prints);
* its outputs are bit-identical to an uninterrupted run's.

The default set runs one random kill point per command; ``-m slow`` adds more (the seed of each is
in the test id). A read-only output folder and ``--out`` equal to ``--data`` fail before any work.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from _cli_env import _env, _stored

EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


def _run(args, **env):
    out = subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=300, env=_env(**env))
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _start(args, **env):
    return subprocess.Popen([EXE, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=_env(**env), start_new_session=True)


def _wait_for(proc, cond, timeout=120.0):
    """Poll until ``cond()`` holds; False if the process ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if proc.poll() is not None:
            return cond()
        time.sleep(0.01)
    raise AssertionError("timed out waiting for the subprocess")


def _kill(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and any worker it started
    proc.wait()


def _outputs(folder: Path, names) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in names if (folder / n).exists()}


def _no_partial(folder: Path, reference: dict[str, bytes]):
    """Every final output present is complete (equal to the uninterrupted run's)."""
    for name, data in reference.items():
        if (folder / name).exists():
            assert (folder / name).read_bytes() == data, f"partial or different {name} at its final path"


def _tmp_of(folder: Path, name: str):
    return lambda: any(folder.glob(f".{name}.*.tmp"))


# ------------------------------------------------------------------------------------------------
# llmsurrogate ess
# ------------------------------------------------------------------------------------------------
ESS_FILES = ("ess_table.csv", "ess_summary.json", "ess_plot.png")
ESS_GRID = "1,2,3,5,8,10,15,20,30,50,80"


@pytest.fixture(scope="module")
def ess_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("ess")
    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 2))
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": X[:, 0] + rng.normal(size=n), "llm": 0.8 * X[:, 0]}) \
        .to_csv(root / "d.csv", index=False)
    args = ["ess", "--data", root / "d.csv", "--outcome", "y", "--prediction", "llm", "--algorithm", "lasso",
            "--grid", ESS_GRID, "--n-jobs", "1"]
    _run([*args, "--out", root / "ref"])
    return root, args, _outputs(root / "ref", ESS_FILES)


def _ess_points(out: Path) -> int:
    return len(list((out / ".ess_cache").rglob("N_*.entry"))) if (out / ".ess_cache").exists() else 0


def _ess_kill_during_computation(ess_setup, seed):
    root, args, ref = ess_setup
    out = root / f"kill-{seed}"
    proc = _start([*args, "--out", out])
    _wait_for(proc, lambda: _ess_points(out) >= 1)
    time.sleep(random.Random(seed).uniform(0.0, 1.5))
    _kill(proc)
    _no_partial(out, ref)
    done = _ess_points(out)
    rerun = _run([*args, "--out", out])
    total = len(ESS_GRID.split(","))
    assert f"grid points: {done} reused, {total - done} computed, 0 rejected" in rerun.stderr
    assert _outputs(out, ESS_FILES) == ref


def test_ess_killed_during_computation_resumes(ess_setup):
    _ess_kill_during_computation(ess_setup, seed=random.randrange(10**6))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ess_killed_during_computation_resumes_more_points(ess_setup, seed):
    _ess_kill_during_computation(ess_setup, seed)


@pytest.mark.parametrize("victim", ["ess_summary.json",
                                    pytest.param("ess_table.csv", marks=pytest.mark.slow),
                                    pytest.param("ess_plot.png", marks=pytest.mark.slow)])
def test_ess_killed_during_final_write(ess_setup, victim):
    root, args, ref = ess_setup
    out = root / f"write-{victim}"
    proc = _start([*args, "--out", out], LLMSURROGATE_TEST_WRITE_DELAY=30,
                  LLMSURROGATE_TEST_WRITE_DELAY_MATCH=victim)
    assert _wait_for(proc, _tmp_of(out, victim)), "the write was not reached"
    _kill(proc)
    assert not (out / victim).exists()
    _no_partial(out, ref)
    rerun = _run([*args, "--out", out])
    total = len(ESS_GRID.split(","))
    assert f"grid points: {total} reused, 0 computed, 0 rejected" in rerun.stderr  # nothing refitted
    assert _outputs(out, ESS_FILES) == ref


# ------------------------------------------------------------------------------------------------
# llmsurrogate transfer build
# ------------------------------------------------------------------------------------------------
def _lotteries(n=6, m=60, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n):
        z1 = rng.choice([10.0, 20.0, 50.0, -10.0], size=m)
        p = rng.choice([0.05, 0.25, 0.5, 0.75, 0.95], size=m)
        rows.append(pd.DataFrame({"domain": f"D{d}", "z1": z1, "z2": z1 * rng.choice([0.0, 0.5], size=m), "p1": p,
                                  "ce": p * z1 * (0.7 + 0.05 * d) + rng.normal(0, 1, size=m)}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def transfer_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("transfer")
    _lotteries().to_csv(root / "d.csv", index=False)
    args = ["transfer", "build", "--data", root / "d.csv", "--model", "rf", "-r", "2", "--n-jobs", "1"]
    _run([*args, "--out", root / "ref.csv"])
    return root, args, (root / "ref.csv").read_bytes()


N_FITS = 15  # C(6, 2)


def _fits(cache: Path) -> int:
    return len(list(cache.rglob("*.entry"))) if cache.exists() else 0


def test_transfer_build_killed_during_computation_resumes(transfer_setup):
    root, args, ref = transfer_setup
    out, cache = root / "kill" / "t.csv", root / "kill" / "cache"
    proc = _start([*args, "--out", out, "--cache", cache])
    _wait_for(proc, lambda: _fits(cache) >= 1)
    time.sleep(random.Random().uniform(0.0, 2.0))
    _kill(proc)
    assert not out.exists() or out.read_bytes() == ref
    done = _fits(cache)
    rerun = _run([*args, "--out", out, "--cache", cache])
    assert f"cache: {done} fits reused, {N_FITS - done} computed, 0 rejected" in rerun.stderr
    assert out.read_bytes() == ref


def test_transfer_build_killed_during_final_write(transfer_setup):
    root, args, ref = transfer_setup
    out, cache = root / "write" / "t.csv", root / "write" / "cache"
    proc = _start([*args, "--out", out, "--cache", cache], LLMSURROGATE_TEST_WRITE_DELAY=30,
                  LLMSURROGATE_TEST_WRITE_DELAY_MATCH="t.csv")
    assert _wait_for(proc, _tmp_of(out.parent, "t.csv")), "the write was not reached"
    _kill(proc)
    assert not out.exists()
    rerun = _run([*args, "--out", out, "--cache", cache])
    assert f"cache: {N_FITS} fits reused, 0 computed, 0 rejected" in rerun.stderr
    assert out.read_bytes() == ref


# ------------------------------------------------------------------------------------------------
# llmsurrogate risk (a tiny local model)
# ------------------------------------------------------------------------------------------------
SCORE_FILES = ("scores.csv", "metrics.csv", "metrics.json", "calibration.png")
# Every run compared byte for byte with another computes the tiny model's float32 forward passes on
# one fixed thread: MKL may otherwise pick its thread count per call (MKL_DYNAMIC), and a GEMM split
# differently rounds differently (a CI machine once gave an uninterrupted run and a killed run of
# the same prompts scores 6e-8 apart). What these tests check (no partial output, no work redone,
# the rerun's bytes) needs the model to be reproducible, which one thread makes it.
ONE_THREAD = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "MKL_DYNAMIC": "FALSE"}


@pytest.fixture(scope="module")
def score_setup(tmp_path_factory):
    pytest.importorskip("torch")
    from llmsurrogate import testing

    root = tmp_path_factory.mktemp("score")
    model = testing.build_model(root / "model", "gpt2", seed=11)
    testing.synthetic_census(48, seed=1).drop(columns="p_true").to_csv(root / "rows.csv", index=False)
    args = ["risk", "--data", root / "rows.csv", "--task", "ACSIncome", "--model", model, "--device", "cpu",
            "--n-boot", 20]
    first = _run([*args, "--cache", root / "ref-cache", "--out", root / "ref"], **ONE_THREAD)
    total = int(re.search(r"(\d+) computed", first.stdout).group(1))
    return root, args, _outputs(root / "ref", SCORE_FILES), total


def test_score_killed_during_computation_resumes(score_setup):
    root, args, ref, total = score_setup
    out, cache = root / "kill", root / "kill-cache"
    proc = _start([*args, "--cache", cache, "--out", out], **ONE_THREAD)
    _wait_for(proc, lambda: _stored(cache) >= 1)
    time.sleep(random.Random().uniform(0.0, 0.5))
    _kill(proc)
    _no_partial(out, ref)
    done = _stored(cache)
    rerun = _run([*args, "--cache", cache, "--out", out], **ONE_THREAD)
    assert f"cache: {done} prompts reused, {total - done} computed" in rerun.stdout
    assert _outputs(out, SCORE_FILES) == ref


def test_score_killed_during_final_write(score_setup):
    root, args, ref, total = score_setup
    out, cache = root / "write", root / "write-cache"
    proc = _start([*args, "--cache", cache, "--out", out], **ONE_THREAD, LLMSURROGATE_TEST_WRITE_DELAY=30,
                  LLMSURROGATE_TEST_WRITE_DELAY_MATCH="metrics.json")
    assert _wait_for(proc, _tmp_of(out, "metrics.json")), "the write was not reached"
    _kill(proc)
    assert not (out / "metrics.json").exists()
    _no_partial(out, ref)
    rerun = _run([*args, "--cache", cache, "--out", out], **ONE_THREAD)
    assert f"cache: {total} prompts reused, 0 computed" in rerun.stdout
    assert _outputs(out, SCORE_FILES) == ref


def _interrupt(proc) -> str:
    """Ctrl-C: SIGINT to the whole foreground process group; the command's stderr."""
    os.killpg(proc.pid, signal.SIGINT)
    return proc.communicate(timeout=120)[1]


def _start_interruptible(args, **env):
    return subprocess.Popen([EXE, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env(**env), start_new_session=True)


def _assert_interrupted(proc, err):
    assert proc.returncode == 130, (proc.returncode, err[-3000:])
    assert err.strip().splitlines()[-1] == "Interrupted; results written so far are kept.", err
    assert "Traceback" not in err, err


def test_score_interrupted_with_ctrl_c_resumes(score_setup):
    """SIGINT (Ctrl-C) mid-run: exit 130 with its one-line message, the finished prompts kept; the
    rerun computes only the others and writes the same bytes (issue 22, item 7)."""
    root, args, ref, total = score_setup
    out, cache = root / "int", root / "int-cache"
    proc = _start_interruptible([*args, "--cache", cache, "--out", out], **ONE_THREAD)
    try:
        _wait_for(proc, lambda: _stored(cache) >= 1)
        os.killpg(proc.pid, signal.SIGSTOP)  # held mid-run; the interrupt arrives as it continues
        os.killpg(proc.pid, signal.SIGINT)
        os.killpg(proc.pid, signal.SIGCONT)
        err = proc.communicate(timeout=120)[1]
    finally:  # never leave a stopped run behind
        if proc.poll() is None:
            _kill(proc)
    if (out / "run.json").exists():  # (a Ctrl-C after the command ended, during Python's exit, is not ours)
        pytest.skip("the run finished before the interrupt arrived")
    _assert_interrupted(proc, err)
    _no_partial(out, ref)
    done = _stored(cache)
    rerun = _run([*args, "--cache", cache, "--out", out], **ONE_THREAD)
    assert f"cache: {done} prompts reused, {total - done} computed" in rerun.stdout
    assert _outputs(out, SCORE_FILES) == ref


def test_score_interrupted_during_final_write(score_setup):
    root, args, ref, total = score_setup
    out, cache = root / "int-write", root / "int-write-cache"
    proc = _start_interruptible([*args, "--cache", cache, "--out", out], **ONE_THREAD, LLMSURROGATE_TEST_WRITE_DELAY=30,
                                LLMSURROGATE_TEST_WRITE_DELAY_MATCH="metrics.json")
    assert _wait_for(proc, _tmp_of(out, "metrics.json")), "the write was not reached"
    _assert_interrupted(proc, _interrupt(proc))
    assert not (out / "metrics.json").exists() and not list(out.glob(".*.tmp"))
    _no_partial(out, ref)
    rerun = _run([*args, "--cache", cache, "--out", out], **ONE_THREAD)
    assert f"cache: {total} prompts reused, 0 computed" in rerun.stdout
    assert _outputs(out, SCORE_FILES) == ref


@pytest.mark.parametrize("same_out", [False, True], ids=["two-outs", "one-out"])
def test_score_two_concurrent_runs_on_one_cache(score_setup, same_out):
    """Two runs at once on one cache (and on one output folder): both finish, each output is
    the uninterrupted run's, and no prompt is computed by both (issue 22, item 7)."""
    root, args, ref, total = score_setup
    tag = "same" if same_out else "two"
    cache, outs = root / f"conc-{tag}-cache", [root / f"conc-{tag}-a", root / f"conc-{tag}-b"]
    if same_out:
        outs = [outs[0], outs[0]]
    procs = [subprocess.Popen([EXE, *map(str, [*args, "--cache", cache, "--out", out])], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(**ONE_THREAD)) for out in outs]
    results = [p.communicate(timeout=600) for p in procs]
    for p, (stdout, stderr) in zip(procs, results):
        assert p.returncode == 0, stderr[-3000:]
    for out in outs:
        assert _outputs(out, SCORE_FILES) == ref
    assert _stored(cache) == total
    computed = [int(re.search(r"(\d+) computed", stdout).group(1)) for stdout, _ in results]
    assert sum(computed) == total, f"prompts computed by each run: {computed}, {total} in all"


def test_score_waiting_run_takes_over_from_a_killed_one(score_setup):
    """A second run waits for the prompts a first one claimed (here: held with SIGSTOP mid-run);
    when the first is SIGKILLed the second takes them over: it reuses exactly what the first
    stored and computes the rest once."""
    root, args, ref, total = score_setup
    cache = root / "takeover-cache"
    first = _start([*args, "--cache", cache, "--out", root / "takeover-a"], **ONE_THREAD)
    _wait_for(first, lambda: _stored(cache) >= 1)
    os.killpg(first.pid, signal.SIGSTOP)
    done = _stored(cache)
    if first.poll() is not None or done == total:
        _kill(first)
        pytest.skip("the first run finished every prompt before it was held")
    second = subprocess.Popen([EXE, *map(str, [*args, "--cache", cache, "--out", root / "takeover-b"])],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(**ONE_THREAD),
                              start_new_session=True)
    try:
        time.sleep(8.0)  # started, and waiting for the first run's prompts
        assert second.poll() is None, "the second run did not wait for the prompts the first one claimed"
        _kill(first)
        stdout, stderr = second.communicate(timeout=300)
    finally:  # never leave a stopped or waiting run behind, whatever failed
        _kill(first)
        if second.poll() is None:
            _kill(second)
    assert second.returncode == 0, stderr[-3000:]
    assert _stored(cache) == total
    assert f"cache: {done} prompts reused, {total - done} computed" in stdout
    assert _outputs(root / "takeover-b", SCORE_FILES) == ref


# ------------------------------------------------------------------------------------------------
# llmsurrogate demo (the transfer part: a smaller job)
# ------------------------------------------------------------------------------------------------
DEMO_FILES = ("transfer_forecast_intervals.csv", "transfer_forecast_intervals.json", "transfer_forecast_intervals.png",
              "transfer_dominance.csv", "transfer_application.png")


def test_demo_killed_during_final_write(tmp_path):
    _run(["demo", "--no-ess", "--out", tmp_path / "ref"])
    ref = _outputs(tmp_path / "ref", DEMO_FILES)
    assert len(ref) == len(DEMO_FILES)
    out = tmp_path / "out"
    proc = _start(["demo", "--no-ess", "--out", out], LLMSURROGATE_TEST_WRITE_DELAY=30,
                  LLMSURROGATE_TEST_WRITE_DELAY_MATCH="transfer_dominance.csv")
    assert _wait_for(proc, _tmp_of(out, "transfer_dominance.csv")), "the write was not reached"
    _kill(proc)
    assert not (out / "transfer_dominance.csv").exists()
    _no_partial(out, ref)
    _run(["demo", "--no-ess", "--out", out])
    assert _outputs(out, DEMO_FILES) == ref


# ------------------------------------------------------------------------------------------------
# Checked before work starts
# ------------------------------------------------------------------------------------------------
def _read_only_dir(tmp_path: Path) -> Path:
    """A folder no file can be written in: permission bits for a normal user; for root (who ignores
    them) the read-only sysfs."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    if not os.path.isdir("/sys") or os.access("/sys", os.W_OK) and _writable("/sys"):
        pytest.skip("running as root without a read-only folder")
    return Path("/sys")


def _writable(folder) -> bool:
    try:
        fd = os.open(os.path.join(folder, ".llmsurrogate-probe"), os.O_CREAT | os.O_WRONLY)
    except OSError:
        return False
    os.close(fd)
    os.unlink(os.path.join(folder, ".llmsurrogate-probe"))
    return True


@pytest.fixture
def no_compute(monkeypatch):
    """Any computation fails the test: the checks must come first."""
    import llmsurrogate.ess._estimators as est
    import llmsurrogate.transfer as tr
    import llmsurrogate.transfer.demo as tdemo

    def boom(*a, **k):
        raise AssertionError("computation started before the output checks")

    monkeypatch.setattr(est, "run_ess", boom)
    monkeypatch.setattr(tr, "error_table", boom)
    monkeypatch.setattr(tdemo, "run_demo", boom)


def _fails_fast(args, *needles):
    from llmsurrogate.cli import cli

    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    assert "Traceback" not in res.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_read_only_output_folder_fails_before_computing(tmp_path, no_compute):
    data = tmp_path / "d.csv"
    _lotteries(n=3, m=5).to_csv(data, index=False)
    ro = _read_only_dir(tmp_path)
    _fails_fast(["ess", "--data", data, "--outcome", "ce", "--prediction", "z1", "--out", ro], "--out", "cannot")
    _fails_fast(["transfer", "build", "--data", data, "--model", "eu", "--out", ro / "t.csv"], "--out", "cannot")
    _fails_fast(["demo", "--no-ess", "--out", ro / "demo"], "--out", "cannot")
    _fails_fast(["risk", "--data", data, "--task", "ACSIncome", "--model", tmp_path / "no-model",
                 "--cache", tmp_path / "cache", "--out", ro], "--out", "cannot")
    _fails_fast(["transfer", "intervals", data, "--out", ro / "i.csv"], "--out", "cannot")
    _fails_fast(["transfer", "build", "--data", data, "--model", "eu", "--out", tmp_path / "t.csv",
                 "--cache", ro / "cache"], "--cache", "cannot")


def test_out_equal_to_data_fails_before_computing(tmp_path, no_compute):
    data = tmp_path / "x.csv"
    _lotteries(n=3, m=5).to_csv(data, index=False)
    before = data.read_bytes()
    _fails_fast(["transfer", "build", "--data", data, "--model", "eu", "--out", data], "--out", "input")
    # the same file through another spelling of its path
    _fails_fast(["transfer", "build", "--data", data, "--model", "eu", "--out", tmp_path / "." / "x.csv"], "input")
    _fails_fast(["transfer", "intervals", data, "--out", data], "--out", "input")
    table = tmp_path / "ess_table.csv"
    shutil.copy(data, table)
    _fails_fast(["ess", "--data", table, "--outcome", "ce", "--prediction", "z1", "--out", tmp_path], "input")
    assert data.read_bytes() == before


def test_a_failed_write_keeps_the_old_file_and_names_the_path(tmp_path, monkeypatch):
    """A full disk during an output write: the old file stays whole, no temporary file is left, and
    the error (exit 1 on the command line) names the file."""
    import errno

    from llmsurrogate import _atomic
    from llmsurrogate.exceptions import ComputationError

    target = tmp_path / "ess_summary.json"
    target.write_text("old")
    real_open = open

    class FullDisk:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            self.fh.write(data[: 8192])
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    def fake_open(path, mode="r", *a, **k):
        fh = real_open(path, mode, *a, **k)
        return FullDisk(fh) if "w" in mode else fh

    monkeypatch.setattr(_atomic, "open", fake_open, raising=False)
    with pytest.raises(ComputationError, match="No space left on device") as err:
        _atomic.write_text(target, "x" * 100_000)
    assert str(target) in str(err.value)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["ess_summary.json"]
