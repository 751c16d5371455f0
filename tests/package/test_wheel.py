"""The release wheel that ``make dist`` writes to dist/: one abi3 wheel, tagged manylinux_2_28 or
older, installed by pip into fresh CPython 3.10 and 3.13 venvs outside the checkout, where every
module imports and ``llmsurrogate demo`` runs (from a working directory outside the checkout too).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import llmsurrogate
import llmsurrogate.demo
import pandas as pd
import pytest
from _samples import TASK_TOML  # a small task file
from packaging.utils import parse_wheel_filename

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
PYTHONS = ("3.10", "3.13")  # the oldest CPython of requires-python, and the newest here
MAX_GLIBC = (2, 28)
# modules that import without any optional extra (every module found in the installed package must)
MODULES = ["llmsurrogate", "llmsurrogate.quantiles", "llmsurrogate.datasets", "llmsurrogate.results",
           "llmsurrogate.demo", "llmsurrogate.ess", "llmsurrogate.transfer", "llmsurrogate.risk", "llmsurrogate.fe",
           "llmsurrogate.lookahead", "llmsurrogate.llm", "llmsurrogate.llm.tasks", "llmsurrogate.llm.prompts",
           "llmsurrogate.llm.cache", "llmsurrogate.llm.base", "llmsurrogate.llm.scoring", "llmsurrogate.llm.factory",
           "llmsurrogate.rbridge", "llmsurrogate.testing"]
# the legacy manylinux tags, as glibc versions (PEP 600)
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}

IMPORT_ALL = """
import importlib, json, pkgutil, sys
import llmsurrogate
names = ["llmsurrogate"] + sorted(m.name for m in pkgutil.walk_packages(llmsurrogate.__path__, "llmsurrogate."))
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"core": llmsurrogate._core.__file__, "version": llmsurrogate.__version__,
                  "python": list(sys.version_info[:2]), "names": names, "failed": failed}))
"""


def _wheel() -> Path:
    wheels = sorted(DIST.glob("llmsurrogate-*.whl"))
    if len(wheels) != 1:
        pytest.fail(f"expected one llmsurrogate wheel in {DIST}, found {[w.name for w in wheels]}: run make dist")
    return wheels[0]


def _glibc(platform: str) -> tuple[int, int]:
    """The glibc version of a manylinux platform tag (``manylinux_2_28_x86_64`` -> (2, 28))."""
    match = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", platform)
    if match:
        return int(match[1]), int(match[2])
    legacy = platform.split("_", 1)[0]
    if legacy in LEGACY_MANYLINUX:
        return LEGACY_MANYLINUX[legacy]
    raise AssertionError(f"platform tag {platform!r} is not a manylinux tag")


def _find_python(version: str) -> Path:
    """CPython ``version`` (e.g. "3.10"): the newest patch release under pyenv's root, else
    python<version> on PATH; checked by running it."""
    roots = []
    if shutil.which("pyenv"):
        out = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            roots.append(Path(out.stdout.strip()))
    roots.append(Path.home() / ".pyenv")
    candidates = []
    for root in dict.fromkeys(roots):
        found = [p for p in (root / "versions").glob(f"{version}.*/bin/python3")
                 if re.fullmatch(rf"{re.escape(version)}\.\d+", p.parents[1].name)]
        candidates += sorted(found, key=lambda p: int(p.parents[1].name.rsplit(".", 1)[1]), reverse=True)
    if shutil.which(f"python{version}"):
        candidates.append(Path(shutil.which(f"python{version}")))
    for python in candidates:
        out = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip() == version:
            return python
    pytest.fail(f"CPython {version} not found (looked for {[str(r / 'versions' / (version + '.*')) for r in roots]} "
                f"and python{version} on PATH): install it, e.g. `pyenv install {version}`")


def _clean_env() -> dict[str, str]:
    """This process's environment without what would point a child at the checkout or .venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def test_wheel_is_abi3_and_manylinux_2_28_or_older(tmp_path):
    wheel = _wheel()
    name, version, _build, tags = parse_wheel_filename(wheel.name)
    assert (name, str(version)) == ("llmsurrogate", llmsurrogate.__version__), wheel.name
    assert {t.interpreter for t in tags} == {"cp310"} and {t.abi for t in tags} == {"abi3"}, wheel.name
    glibcs = {t.platform: _glibc(t.platform) for t in tags}
    assert all(g <= MAX_GLIBC for g in glibcs.values()), f"{wheel.name}: needs glibc {max(glibcs.values())}"
    # the symbols agree with the tag: no GLIBC_x.y version newer than the tag's in the extension
    with zipfile.ZipFile(wheel) as zf:
        cores = [n for n in zf.namelist() if n.startswith("llmsurrogate/_core") and n.endswith(".so")]
        assert cores == ["llmsurrogate/_core.abi3.so"], cores
        so = Path(zf.extract(cores[0], tmp_path))
    readelf = shutil.which("readelf")
    assert readelf, "readelf (binutils) is needed to read the extension's symbol versions"
    out = subprocess.run([readelf, "--version-info", "--wide", str(so)], capture_output=True, text=True, check=True)
    needed = {tuple(map(int, v)) for v in re.findall(r"Name: GLIBC_(\d+)\.(\d+)", out.stdout)}
    assert needed, out.stdout[-2000:]
    assert max(needed) <= min(glibcs.values()), f"the extension needs GLIBC_{max(needed)}, the tag says {glibcs}"


@pytest.fixture(scope="module", params=PYTHONS)
def venv(request, tmp_path_factory) -> tuple[str, Path]:
    """A fresh venv of CPython ``param`` outside the checkout, with the wheel installed by pip:
    (the version, the venv's folder)."""
    wheel = _wheel()
    python = _find_python(request.param)
    where = tmp_path_factory.mktemp(f"wheel-py{request.param}")
    assert not where.is_relative_to(ROOT)
    subprocess.run([str(python), "-m", "venv", str(where / "venv")], check=True, env=_clean_env())
    out = subprocess.run([str(where / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                         capture_output=True, text=True, cwd=where, env=_clean_env())
    assert out.returncode == 0, out.stderr[-3000:]
    return request.param, where / "venv"


def test_every_module_imports_from_the_installed_wheel(venv, tmp_path):
    version, venv = venv
    out = subprocess.run([str(venv / "bin" / "python"), "-c", IMPORT_ALL], capture_output=True, text=True,
                         cwd=tmp_path, env=_clean_env())
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads(out.stdout.splitlines()[-1])
    assert not [m for m in MODULES if m not in info["names"]], info["names"]
    assert info["failed"] == {}
    core = Path(info["core"])
    assert core.is_relative_to(venv) and core.name == "_core.abi3.so", core
    assert "%d.%d" % tuple(info["python"]) == version


def test_demo_runs_from_the_installed_wheel(venv, tmp_path):
    _version, venv = venv
    work = tmp_path / "cwd"
    work.mkdir()
    out = subprocess.run([str(venv / "bin" / "llmsurrogate"), "demo", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=work, env=_clean_env(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    written = {p.name: p.stat().st_size for p in (tmp_path / "out").iterdir()}
    for capability in llmsurrogate.demo.DEMOS:
        files = [n for n in written if n.startswith(f"{capability}_")]
        assert [n for n in files if n.endswith(".png")], f"no figure of the {capability} demo in {sorted(written)}"
        assert [n for n in files if n.endswith((".csv", ".json"))], f"no table of the {capability} demo"
    assert all(size > 0 for size in written.values()), written
    # the wheel's core computes what the checkout's own build computes
    llmsurrogate.demo.run_all(tmp_path / "here", only=("transfer",), plot=False, echo=lambda text: None)
    name = "transfer_forecast_intervals.csv"
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out" / name), pd.read_csv(tmp_path / "here" / name),
                                  rtol=1e-9)


def test_task_files_load_from_the_installed_wheel(venv, tmp_path):
    """A task TOML loads on every supported Python (tomllib is 3.11+; 3.10 reads it with tomli)."""
    _version, venv = venv
    (tmp_path / "task.toml").write_text(TASK_TOML)
    code = ("from llmsurrogate.llm.tasks import Task; from llmsurrogate.llm import prompts; "
            "t = Task.from_toml('task.toml'); print(t.name); print(prompts.multiple_choice_prompt(t, {'AGEP': 30, 'SEX': 2}))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env=_clean_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("Smoke\n") and "Does this person smoke?" in out.stdout
