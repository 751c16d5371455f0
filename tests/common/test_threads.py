"""Thread counts: n_jobs first, then an enclosing joblib.parallel_config, then LLMSURROGATE_NUM_THREADS, then all cores."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import llmsurrogate
from llmsurrogate import quantiles as q
from llmsurrogate.exceptions import InvalidArgumentError


def threads_in_subprocess(env_value, n_jobs="None"):
    env = {k: v for k, v in os.environ.items() if k != "LLMSURROGATE_NUM_THREADS"}
    if env_value is not None:
        env["LLMSURROGATE_NUM_THREADS"] = env_value
    code = f"import llmsurrogate; print(llmsurrogate.num_threads({n_jobs}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_environment_variable_and_n_jobs():
    cores = os.cpu_count() or 1
    assert threads_in_subprocess(None).stdout.strip() == str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores)
    assert threads_in_subprocess("3").stdout.strip() == "3"
    assert threads_in_subprocess("3", n_jobs="1").stdout.strip() == "1"
    bad = threads_in_subprocess("many")
    assert bad.returncode != 0 and "LLMSURROGATE_NUM_THREADS" in bad.stderr and "InvalidArgumentError" in bad.stderr


def expected_cap() -> int:
    """Most threads a pool gets: twice the logical cores the process may use, at least 4."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2 * cores, 4)


def test_joblib_conventions():
    cores = llmsurrogate.num_threads(-1)
    assert cores >= 1
    assert llmsurrogate.num_threads(3) == 3  # the cap is at least 4
    assert llmsurrogate.num_threads(5) == min(5, expected_cap())
    assert llmsurrogate.num_threads(-2) == max(cores - 1, 1)
    with pytest.raises(InvalidArgumentError):
        llmsurrogate.num_threads(True)


def test_none_takes_an_enclosing_joblib_config_first():
    """Issue 20: one meaning of n_jobs=None everywhere: a joblib.parallel_config's n_jobs, then
    LLMSURROGATE_NUM_THREADS, then all cores (llmsurrogate._workers.resolve_n_jobs)."""
    import joblib

    with joblib.parallel_config(n_jobs=3):
        assert llmsurrogate.num_threads() == 3
        assert llmsurrogate.num_threads(2) == 2  # an explicit count wins
    code = "import joblib, llmsurrogate\nwith joblib.parallel_config(n_jobs=2): print(llmsurrogate.num_threads())"
    env = {**os.environ, "LLMSURROGATE_NUM_THREADS": "3"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "2", out.stderr
    v = np.random.default_rng(2).standard_normal(50_000)
    with joblib.parallel_config(n_jobs=1):
        one = q.upper_quantile(v, [0.1, 0.5, 0.9])
    np.testing.assert_array_equal(one, q.upper_quantile(v, [0.1, 0.5, 0.9]))


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(1)
    v = rng.standard_normal(200_000)
    w = rng.exponential(size=v.size)
    taus = np.linspace(0.01, 0.99, 31)
    outs = [q.weighted_lower_quantile(v, w, taus, n_jobs=k) for k in (1, 2, 3)]
    for o in outs[1:]:
        np.testing.assert_array_equal(outs[0], o)


def test_thread_counts_are_capped():
    from llmsurrogate import _core

    assert _core.max_threads() == expected_cap()
    assert llmsurrogate.num_threads(1000) == expected_cap()
    assert llmsurrogate.num_threads(2**31 - 1) == expected_cap()
    assert llmsurrogate.num_threads(-(2**31)) == 1  # keeps 2^31 - 1 cores free: one thread
    # the Rust side on its own, beyond what the Python check admits
    assert _core.resolve_threads(2**62) == expected_cap()
    assert _core.resolve_threads(-(2**63)) == 1
    with pytest.raises(InvalidArgumentError, match="n_jobs"):
        llmsurrogate.num_threads(2**62)
    assert threads_in_subprocess("1000").stdout.strip() == str(expected_cap())


THREAD_PROBE = """
import os, time
import numpy as np
from llmsurrogate import quantiles as q

def alive():
    return len(os.listdir("/proc/self/task"))

v = np.random.default_rng(0).standard_normal(1 << 16)  # above the serial cut-off: pools are used
ref = q.upper_quantile(v, [0.1, 0.5, 0.9], n_jobs=1)
base = alive()
for n_jobs in (1000, 999, 500, 300, 64, 33, 17, 9, 7, 5, 3, 2, 1000):
    out = q.upper_quantile(v, [0.1, 0.5, 0.9], n_jobs=n_jobs)
    assert np.array_equal(out, ref), n_jobs  # numbers do not depend on the thread count
peak = alive()
deadline = time.monotonic() + 10  # evicted pools' threads exit asynchronously
while alive() - base > {bound} and time.monotonic() < deadline:
    time.sleep(0.05)
print(base, peak, alive())
"""


def test_threads_stay_bounded_after_n_jobs_1000():
    """After calls with n_jobs=1000 (and a dozen other sizes) at most MAX_CACHED_POOLS pools of at
    most max_threads() workers stay alive (before: one pool per size, 1,009+ threads)."""
    from llmsurrogate import _core

    bound = _core.MAX_CACHED_POOLS * expected_cap()
    code = THREAD_PROBE.format(bound=bound)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    base, peak, end = map(int, proc.stdout.split())
    # (evicted pools' threads exit asynchronously, so the peak is not asserted: on a loaded machine
    # a few may still be on their way out when it is read)
    assert end - base <= bound, f"{end - base} extra threads alive (bound {bound}; peak {peak - base})"
