"""Long jobs show progress by default in an interactive session, and only there (issue 25, item 1).

A job's ``progress=None`` draws a bar on stderr when stderr is a terminal, after one line saying how
much work the job will do; nothing when stderr is piped or captured, or with ``progress=False``.
The terminal is a real pseudo-terminal (``pty``) around a child interpreter.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import textwrap

import pytest
from llmsurrogate._progress import RichProgress, interactive, progress_reporter

pty = pytest.importorskip("pty", reason="a pseudo-terminal needs a POSIX system")

# A random forest ESS small enough for a test: 300 rows, grid 5 and 20 (60 + 15 block fits, 2 tuned sizes)
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np, pandas as pd
    from llmsurrogate import ess
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=300)})
    df["y"] = df["x"] + rng.normal(size=300)
    df["llm"] = 0.5 * df["x"]
    kwargs = {} if sys.argv[1] == "default" else {"progress": False}
    res = ess.equivalent_sample_size(df, "y", "llm", ["x"], algorithm="rf", grid=[5, 20], n_jobs=1,
                                     algorithm_options={"n_estimators": 5}, **kwargs)
    print("LOWER", res.lower_bound)
""")


def _run_on_a_terminal(mode: str) -> tuple[str, str]:
    """(stdout, what the terminal showed on stderr) of the script run with stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="160")
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, mode], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    assert proc.wait(timeout=300) == 0
    return out, b"".join(chunks).decode(errors="replace")


def test_a_terminal_shows_the_work_and_the_bars():
    out, shown = _run_on_a_terminal("default")
    assert "LOWER" in out
    # the notice: fits up front, counted as work_plan counts them (300 // 5 + 300 // 20 = 75 block fits)
    assert "75 block fits" in shown and "random forest of 5 trees" in shown, shown
    assert "tuning fits (12 settings x up to 3-fold CV at each size)" in shown, shown
    for label in ("tuning: training sizes", "grid points", "N = 5: blocks", "N = 20: blocks"):
        assert label in shown, (label, shown)


def test_progress_false_keeps_a_terminal_quiet():
    out, shown = _run_on_a_terminal("quiet")
    assert "LOWER" in out
    assert "block fits" not in shown and "grid points" not in shown, shown


def test_piped_stderr_stays_quiet():
    res = subprocess.run([sys.executable, "-c", SCRIPT, "default"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "LOWER" in res.stdout
    assert "block fits" not in res.stderr and "grid points" not in res.stderr, res.stderr


def test_default_is_silent_when_stderr_is_captured():
    seen = io.StringIO()
    with contextlib.redirect_stderr(seen):
        assert not interactive()
        with progress_reporter(None, notice="notice") as report:
            report("fits", 1, 2)
    assert seen.getvalue() == ""


def test_a_job_inside_a_bar_draws_in_that_bar():
    """rich allows one live display at a time: a job run inside another's bar adds its lines there."""
    with RichProgress(disable=True) as outer:
        with progress_reporter(None) as inner:
            assert inner is outer
        with progress_reporter(True) as inner:
            assert inner is outer
    with progress_reporter(None) as report:  # outside any bar, captured stderr: silent again
        assert not isinstance(report, RichProgress)


def test_a_bad_progress_value_names_the_argument():
    from llmsurrogate.exceptions import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="argument `progress` must be None, True, False or a callable"):
        with progress_reporter("yes"):
            pass
