"""joblib worker pools (issue 11, defect 5): workers die with their parent, pools are capped.

* A SIGKILLed ``llmsurrogate ess`` (or ``transfer build``) run left loky workers and resource trackers
  alive for minutes, holding the caller's pipe open. Now every process it started is gone within
  seconds and the pipe reaches EOF.
* ``n_jobs=1000`` started a thousand threads (under a memory cap: an ``AttributeError`` from
  ``multiprocessing.dummy``); local pools are now capped like the Rust pools (max(2 x cores, 4)).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import llmsurrogate
from llmsurrogate import _workers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def _session_members(sid: int) -> list[int]:
    """Pids of live (non-zombie) processes in session ``sid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp session ...
        if fields[0] != "Z" and int(fields[3]) == sid:
            out.append(int(entry))
    return out


def _kill_session(sid: int) -> None:
    for pid in _session_members(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _kill_mid_run_and_watch(cmd: list[str], tmp_path: Path, min_children: int = 2) -> tuple[list[int], bool, float]:
    """Start ``cmd`` in its own session with stdout/stderr piped, SIGKILL it once it has
    ``min_children`` descendants, and watch for 15 s. Returns (survivors, pipe at EOF, seconds)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=tmp_path, env=env)
    sid = proc.pid
    reader = None
    try:
        deadline = time.monotonic() + 120
        while len(_session_members(sid)) < 1 + min_children:
            assert proc.poll() is None, f"finished before workers started: {proc.stdout.read().decode()[-2000:]}"
            assert time.monotonic() < deadline, "workers never started"
            time.sleep(0.2)
        time.sleep(1.0)  # let the workers pick up tasks
        children = [p for p in _session_members(sid) if p != proc.pid]
        assert len(children) >= min_children
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t0 = time.monotonic()
        eof = threading.Event()

        def drain():
            fd = proc.stdout.fileno()
            while True:
                try:
                    ready, _, _ = select.select([fd], [], [], 0.5)
                    if ready and not os.read(fd, 65536):
                        eof.set()
                        return
                except OSError:  # closed by the cleanup below
                    return
                if time.monotonic() - t0 > 20:
                    return

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        while _session_members(sid) and time.monotonic() - t0 < 15:
            time.sleep(0.1)
        elapsed = time.monotonic() - t0
        reader.join(timeout=max(0.1, 16 - elapsed))
        return _session_members(sid), eof.is_set(), elapsed
    finally:
        _kill_session(sid)
        if reader is not None:
            reader.join(timeout=5)
        proc.stdout.close()


@pytest.fixture(scope="module")
def ess_data(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    n = 3000
    x = rng.normal(size=(n, 4))
    y = x @ [1.0, -0.5, 0.25, 0.0] + rng.normal(size=n)
    frame = pd.DataFrame(x, columns=["a", "b", "c", "d"]).assign(y=y, llm=x[:, 0])
    path = tmp_path_factory.mktemp("workers") / "data.csv"
    frame.to_csv(path, index=False)
    return path


def test_sigkilled_ess_cli_leaves_no_workers_and_closes_the_pipe(ess_data, tmp_path):
    cmd = [sys.executable, "-m", "llmsurrogate.cli", "ess", "--data", str(ess_data), "--outcome", "y",
           "--prediction", "llm", "--algorithm", "rf", "--n-estimators", "200", "--tuning", "none",
           "--n-jobs", "2", "--no-plot", "--out", str(tmp_path / "out")]
    survivors, eof, elapsed = _kill_mid_run_and_watch(cmd, tmp_path)
    assert survivors == [], f"processes alive {elapsed:.1f} s after the parent was killed: {survivors}"
    assert eof, "the caller's pipe did not reach EOF"


def test_sigkilled_ess_api_leaves_no_workers(ess_data, tmp_path):
    code = textwrap.dedent(f"""
        import pandas as pd
        from llmsurrogate import ess
        frame = pd.read_csv({str(ess_data)!r})
        print("start", flush=True)
        ess.equivalent_sample_size(frame, outcome="y", prediction="llm", algorithm="rf", tuning="none",
                                   n_jobs=2, algorithm_options={{"n_estimators": 200}})
    """)
    survivors, eof, elapsed = _kill_mid_run_and_watch([sys.executable, "-c", code], tmp_path)
    assert survivors == [], f"processes alive {elapsed:.1f} s after the parent was killed: {survivors}"
    assert eof


def test_sigkilled_transfer_build_leaves_no_workers(tmp_path):
    """``transfer build`` with a scikit-learn model fits through loky too."""
    rng = np.random.default_rng(2)
    rows = []
    for dom in range(10):
        z1, z2, p = rng.uniform(0, 10, 300), rng.uniform(0, 10, 300), rng.uniform(0.1, 0.9, 300)
        rows.append(pd.DataFrame({"domain": f"d{dom}", "z1": z1, "z2": z2, "p1": p,
                                  "ce": p * z1 + (1 - p) * z2 + rng.normal(size=300)}))
    pd.concat(rows).to_csv(tmp_path / "lotteries.csv", index=False)
    cmd = [sys.executable, "-m", "llmsurrogate.cli", "transfer", "build", "--data", str(tmp_path / "lotteries.csv"),
           "--model", "rf", "-r", "3", "--n-jobs", "2", "--out", str(tmp_path / "t.csv")]
    survivors, eof, elapsed = _kill_mid_run_and_watch(cmd, tmp_path)
    assert survivors == [], f"processes alive {elapsed:.1f} s after the parent was killed: {survivors}"
    assert eof, "the caller's pipe did not reach EOF"


def test_exit_with_parent_ends_an_orphaned_process(tmp_path):
    """The initializer itself: a grandchild whose parent dies exits within a second or two."""
    code = textwrap.dedent("""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c",
            "import os, time; from llmsurrogate._workers import exit_with_parent; "
            f"exit_with_parent({os.getpid()}); print('ready', flush=True); time.sleep(60)"],
            stdout=subprocess.PIPE)
        assert child.stdout.readline().strip() == b"ready"
        print(child.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        grandchild = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t0 = time.monotonic()
        while grandchild in _session_members(proc.pid) and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        assert grandchild not in _session_members(proc.pid)
        assert time.monotonic() - t0 < 3
    finally:
        _kill_session(proc.pid)
        proc.stdout.close()


def test_loky_pool_is_reused_and_numbers_unchanged():
    """The initializer keeps loky's reusable pool: the same worker pids serve consecutive calls,
    and results equal a sequential run."""
    from joblib import delayed

    def pid_after_nap():
        time.sleep(0.3)
        return os.getpid()

    def pids():
        with _workers.parallel(2, prefer="processes") as par:
            return set(par(delayed(pid_after_nap)() for _ in range(6)))

    first, second = pids(), pids()
    assert os.getpid() not in first and len(first) == 2 and second <= first
    vals = list(_workers.parallel(2, prefer="processes")(delayed(np.sqrt)(float(i)) for i in range(20)))
    assert vals == [np.sqrt(float(i)) for i in range(20)]


def test_local_pools_are_capped():
    import joblib

    cap = _workers.max_local_workers()
    cores = len(os.sched_getaffinity(0))
    assert cap == max(2 * cores, 4) == llmsurrogate.num_threads(10**6)  # the Rust pools' cap too
    assert _workers.local_n_jobs(1000, prefer="threads") == cap
    assert _workers.local_n_jobs(1000, prefer="processes") == cap
    # local pools get the package's one count (issue 20): None and -1 are every core this process may use
    assert _workers.local_n_jobs(1) == 1
    assert _workers.local_n_jobs(-1) == llmsurrogate.num_threads(-1) == min(cores, cap)
    assert _workers.local_n_jobs(None) == llmsurrogate.num_threads()
    with joblib.parallel_config(backend="sequential"):  # not a local pool: n_jobs passes through
        assert _workers.local_n_jobs(None) is None
    with joblib.parallel_config(n_jobs=1000):
        assert _workers.local_n_jobs(None) == cap
    with joblib.parallel_config(backend="threading", n_jobs=1000):
        assert _workers.local_n_jobs(None, prefer="threads") == cap
    with _workers.parallel(1000, prefer="threads") as par:
        assert par.n_jobs == cap


def test_n_jobs_1000_under_a_memory_cap(tmp_path):
    """Before: ``AttributeError: 'DummyProcess' object has no attribute 'terminate'`` from the
    thread pool joblib tried to start with 1,000 threads under ``ulimit -v``."""
    code = textwrap.dedent("""
        import resource
        import numpy as np, pandas as pd
        from llmsurrogate import ess
        rng = np.random.default_rng(0)
        frame = pd.DataFrame({"x": rng.normal(size=400)})
        frame["y"] = frame.x + rng.normal(size=400)
        frame["p"] = frame.x
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
        a = ess.equivalent_sample_size(frame, outcome="y", prediction="p", algorithm="mean", grid=[5, 10],
                                       n_jobs=1000)
        b = ess.equivalent_sample_size(frame, outcome="y", prediction="p", algorithm="mean", grid=[5, 10],
                                       n_jobs=1)
        assert a.table.equals(b.table), (a.table, b.table)
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "AttributeError" not in res.stderr
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-3000:]
