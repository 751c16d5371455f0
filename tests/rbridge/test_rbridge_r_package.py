"""The R package in ``r-bridge/llmsurrogate`` and the rpy2 route of :mod:`llmsurrogate.rbridge`.

* The R package is installed into a temporary library and its testthat suite runs with this
  interpreter as its Python (``LLMSURROGATE_PYTHON``); nothing in it may fail or skip.
* R and Python give identical quantiles and demo tables on the same inputs.
* rpy2: data frames round-trip through R, and R's ``quantile(type = 1)`` agrees with
  :func:`llmsurrogate.quantiles.upper_quantile`.

Every test needs R (``Rscript``) with reticulate, testthat and jsonlite, plus rpy2; where R is
missing the tests fail rather than skip (``make test`` installs what they need).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import quantiles
from llmsurrogate.demo import run_demo

from _r import R_PACKAGE, REPO, _r_env, _rscript, _run, _show, r_env, rpy2_robjects, rscript  # noqa: F401 (fixtures)

pytestmark = pytest.mark.r

def test_r_package_testthat_suite(rscript, r_env):
    code = f"""
    res <- testthat::test_dir({json.dumps(str(R_PACKAGE / "tests" / "testthat"))},
                              package = "llmsurrogate", load_package = "installed",
                              reporter = "summary", stop_on_failure = TRUE)
    df <- as.data.frame(res)
    cat("\\nTESTS=", nrow(df), " EXPECTATIONS=", sum(df$nb), " SKIPPED=", sum(df$skipped),
        " FAILED=", sum(df$failed), " ERRORS=", sum(df$error), " WARNINGS=", sum(df$warning),
        "\\n", sep = "")
    """
    proc = _rscript(rscript, r_env, code)
    assert proc.returncode == 0, _show(proc)
    counts = dict(item.split("=") for item in proc.stdout.strip().splitlines()[-1].split())
    assert int(counts["TESTS"]) > 0, _show(proc)
    for key in ("SKIPPED", "FAILED", "ERRORS", "WARNINGS"):
        assert counts[key] == "0", f"{key}={counts[key]} in the R package's tests\n" + _show(proc)


def test_parallel_fits_from_r_match_one_job_and_exit_cleanly(rscript, r_env):
    """n_jobs = 2 starts worker processes from inside R: same numbers as one job, and R exits
    without loky's warnings about leaked semaphores or folders (R runs no Python exit handlers)."""
    code = """
    library(llmsurrogate)
    set.seed(1)
    d <- data.frame(a = rnorm(200), b = rnorm(200))
    d$y <- d$a + rnorm(200)
    d$llm <- 0.8 * d$a
    two <- ess(d, "y", "llm", algorithm = "lasso", grid = c(5, 20), n_jobs = 2)
    one <- ess(d, "y", "llm", algorithm = "lasso", grid = c(5, 20), n_jobs = 1)
    cat("SAME=", isTRUE(all.equal(two$table, one$table, tolerance = 0)), "\n", sep = "")
    """
    proc = _rscript(rscript, r_env, code)
    assert proc.returncode == 0, _show(proc)
    assert "SAME=TRUE" in proc.stdout, _show(proc)
    assert "leaked" not in proc.stderr and "Warning" not in proc.stderr, _show(proc)


# Fixed inputs for the parity test: values with ties and infinities, levels on and off k/n.
PARITY_VALUES = [3.5, -1.25, 2.0, 2.0, 7.75, 0.5, -3.0, 2.0, 11.0, 4.25, -0.5, 6.0, float("inf"),
                 1e-3, 9.5, -2.75, 5.0, 2.0, 8.125, -float("inf")]
PARITY_WEIGHTS = [0.5, 1.0, 0.0, 2.0, 0.25, 1.5, 3.0, 0.75, 1.0, 0.0, 2.5, 1.25, 0.5, 1.0, 0.125,
                  2.0, 0.0, 1.75, 0.5, 0.25]
PARITY_TAUS = [0.0, 0.05, 0.1, 0.25, 1 / 3, 0.5, 0.65, 0.9, 0.95, 0.99, 1.0]
PARITY_INF_WEIGHT = 0.75


def _r_num(values: list[float]) -> str:
    """An R numeric vector literal that reproduces each double exactly (hexadecimal constants)."""
    def one(v: float) -> str:
        if math.isinf(v):
            return "Inf" if v > 0 else "-Inf"
        return v.hex()
    return "c(" + ", ".join(one(float(v)) for v in values) + ")"


def test_r_and_python_agree(rscript, r_env, tmp_path):
    out = tmp_path / "r_results.json"
    code = f"""
    library(llmsurrogate)
    x <- {_r_num(PARITY_VALUES)}
    w <- {_r_num(PARITY_WEIGHTS)}
    tau <- {_r_num(PARITY_TAUS)}
    num <- function(v) sprintf("%.17g", v)  # exact round trip through text
    demo <- as.data.frame(llmsurrogate_demo(0.9))
    res <- list(
      upper = num(upper_quantile(x, tau)),
      lower = num(lower_quantile(x, tau)),
      upper_scalar = num(upper_quantile(x, 0.95)),
      interval = num(quantile_interval(x, 0.8)),
      weighted_upper = num(weighted_upper_quantile(x, w, tau, inf_weight = {PARITY_INF_WEIGHT})),
      weighted_lower = num(weighted_lower_quantile(x, w, tau, inf_weight = {PARITY_INF_WEIGHT})),
      weighted_interval = num(weighted_quantile_interval(x, w, 0.8, inf_weight = {PARITY_INF_WEIGHT})),
      demo = list(model = demo$model, metric = demo$metric, n_errors = demo$n_errors,
                  lower = num(demo$lower), upper = num(demo$upper))
    )
    writeLines(jsonlite::toJSON(res, auto_unbox = FALSE), {json.dumps(str(out))}, useBytes = TRUE)
    """
    proc = _rscript(rscript, r_env, code)
    assert proc.returncode == 0, _show(proc)
    got = json.loads(out.read_text(encoding="utf-8"))

    def floats(key):
        return [float(s) for s in got[key]]

    x, w, tau = np.array(PARITY_VALUES), np.array(PARITY_WEIGHTS), np.array(PARITY_TAUS)
    assert floats("upper") == quantiles.upper_quantile(x, tau).tolist()
    assert floats("lower") == quantiles.lower_quantile(x, tau).tolist()
    assert floats("upper_scalar") == [quantiles.upper_quantile(x, 0.95)]
    assert floats("interval") == list(quantiles.quantile_interval(x, 0.8))
    assert floats("weighted_upper") == quantiles.weighted_upper_quantile(
        x, w, tau, inf_weight=PARITY_INF_WEIGHT).tolist()
    assert floats("weighted_lower") == quantiles.weighted_lower_quantile(
        x, w, tau, inf_weight=PARITY_INF_WEIGHT).tolist()
    assert floats("weighted_interval") == list(quantiles.weighted_quantile_interval(
        x, w, 0.8, inf_weight=PARITY_INF_WEIGHT))

    expected = run_demo(0.9).table
    demo = got["demo"]
    assert demo["model"] == expected["model"].tolist()
    assert demo["metric"] == expected["metric"].tolist()
    assert demo["n_errors"] == expected["n_errors"].tolist()
    for col in ("lower", "upper"):
        np.testing.assert_allclose([float(s) for s in demo[col]], expected[col].to_numpy(), rtol=0, atol=1e-12)


def test_rpy2_frame_round_trip(rpy2_robjects):
    from llmsurrogate.rbridge import pandas_to_r, r_to_pandas

    ro = rpy2_robjects
    frame = pd.DataFrame({
        "x": [1.5, float("nan"), -2.25, 1e300],
        "n": np.array([1, 2, 3, -4], dtype=np.int32),
        "s": ["a", "b\u03b3", None, "d"],
    })
    r_frame = pandas_to_r(frame)
    assert list(ro.r["class"](r_frame)) == ["data.frame"]
    assert list(ro.r["names"](r_frame)) == ["x", "n", "s"]
    assert list(ro.r("function(d) vapply(d, typeof, '')")(r_frame)) == ["double", "integer", "character"]
    assert list(ro.r("function(d) is.na(d$x)")(r_frame)) == [False, True, False, False]
    assert list(ro.r("function(d) is.na(d$s)")(r_frame)) == [False, False, True, False]
    assert ro.r("function(d) sum(d$n)")(r_frame)[0] == 2

    back = r_to_pandas(r_frame)
    assert list(back.columns) == ["x", "n", "s"]
    np.testing.assert_array_equal(back["x"].to_numpy(), frame["x"].to_numpy())  # NaN included
    assert back["n"].dtype.kind == "i" and back["n"].tolist() == [1, 2, 3, -4]
    strings = back["s"].tolist()
    assert [strings[i] for i in (0, 1, 3)] == ["a", "b\u03b3", "d"]
    # rpy2 3.5 hands R's NA_character_ back as a sentinel object; r_to_pandas makes it missing
    assert back["s"].isna().tolist() == [False, False, True, False]


def test_rpy2_r_quantile_type1_matches_upper_quantile(rpy2_robjects):
    ro = rpy2_robjects
    rng = np.random.default_rng(7)
    for n in (1, 2, 9, 100, 2001):
        x = rng.normal(size=n)
        probs = np.concatenate([rng.uniform(size=25), [1.0]])
        r_quantile = ro.r("function(x, p) unname(quantile(x, p, type = 1))")
        expected = list(r_quantile(ro.FloatVector(x), ro.FloatVector(probs)))
        assert quantiles.upper_quantile(x, probs).tolist() == expected


def test_starting_r_leaves_child_processes_their_own_python(rscript):
    """Starting the embedded R (rpy2) sets LD_LIBRARY_PATH to R's library folders; children then
    loaded the system's libpython instead of ours, so loky/Dask workers started after any rpy2 use
    died with ``undefined symbol: _PyModule_Add`` (found when the suite ran the R tests first)."""
    code = textwrap.dedent("""
        import os, subprocess, sys
        from llmsurrogate import rbridge
        before = os.environ.get("LD_LIBRARY_PATH")
        ro = rbridge.rpy2_robjects()
        assert ro.r("1 + 1")[0] == 2
        assert os.environ.get("LD_LIBRARY_PATH") == before, os.environ.get("LD_LIBRARY_PATH")
        child = subprocess.run([sys.executable, "-c", "import ssl, threading; threading.RLock()._recursion_count()"],
                               capture_output=True, text=True)
        assert child.returncode == 0, child.stderr
        from joblib import Parallel, delayed
        assert Parallel(n_jobs=2, backend="loky")(delayed(abs)(-i) for i in range(4)) == [0, 1, 2, 3]
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
