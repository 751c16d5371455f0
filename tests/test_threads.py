"""Thread counts: n_jobs first, then LLMSURROGATE_NUM_THREADS, then all cores."""

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


def test_joblib_conventions():
    cores = llmsurrogate.num_threads(-1)
    assert cores >= 1
    assert llmsurrogate.num_threads(5) == 5
    assert llmsurrogate.num_threads(-2) == max(cores - 1, 1)
    with pytest.raises(InvalidArgumentError):
        llmsurrogate.num_threads(True)


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(1)
    v = rng.standard_normal(200_000)
    w = rng.exponential(size=v.size)
    taus = np.linspace(0.01, 0.99, 31)
    outs = [q.weighted_lower_quantile(v, w, taus, n_jobs=k) for k in (1, 2, 3)]
    for o in outs[1:]:
        np.testing.assert_array_equal(outs[0], o)
