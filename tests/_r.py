"""What the tests that run R share: the R session through rpy2 and Rscript subprocesses with the R
package installed into a temporary library. Tests import the fixtures from here
(``from _r import rscript, r_env, rpy2_robjects``); R missing is a failure, never a skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
R_PACKAGE = REPO / "r-bridge" / "llmsurrogate"
MISSING_R = ("Rscript not found: the R bridge tests need R. Run `make test`, or install R with "
             "`apt-get install r-base-core r-cran-reticulate r-cran-testthat r-cran-jsonlite r-cran-bit64 r-cran-tibble`.")


def _r_env(lib: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["R_LIBS"] = os.pathsep.join(p for p in (str(lib), env.get("R_LIBS", "")) if p)
    env["RETICULATE_PYTHON"] = sys.executable
    env["LLMSURROGATE_PYTHON"] = sys.executable
    env["HF_HUB_OFFLINE"] = "1"
    if "UTF-8" not in (env.get("LC_ALL") or env.get("LANG") or "").upper().replace("UTF8", "UTF-8"):
        env["LC_ALL"] = "C.UTF-8"  # the demo's model labels hold Greek letters
    return env


def _run(args: list[str], env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def _show(proc: subprocess.CompletedProcess) -> str:
    return f"exit status {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


@pytest.fixture(scope="session")
def rscript() -> str:
    path = shutil.which("Rscript")
    if path is None:
        pytest.fail(MISSING_R, pytrace=False)
    return path


@pytest.fixture(scope="session")
def r_env(rscript, tmp_path_factory) -> dict[str, str]:
    """Install the R package into a temporary library; the environment for R subprocesses."""
    lib = tmp_path_factory.mktemp("r-lib")
    env = _r_env(lib)
    r = shutil.which("R") or str(Path(rscript).with_name("R"))
    proc = _run([r, "CMD", "INSTALL", "--no-multiarch", f"--library={lib}", str(R_PACKAGE)], env)
    assert proc.returncode == 0, "R CMD INSTALL of r-bridge/llmsurrogate failed\n" + _show(proc)
    return env


def _rscript(rscript: str, env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    return _run([rscript, "--vanilla", "-e", code], env)


@pytest.fixture(scope="module")
def rpy2_robjects(rscript):
    from llmsurrogate import rbridge
    from llmsurrogate.exceptions import MissingDependencyError

    try:
        ro = rbridge.rpy2_robjects()  # keeps LD_LIBRARY_PATH for the worker processes of later tests
    except MissingDependencyError as err:  # pragma: no cover - make test installs rpy2
        pytest.fail(f"rpy2 is needed for the R bridge tests (pip install 'rpy2>=3.5.17,<3.6'): {err}",
                    pytrace=False)
    return ro
