"""Packaging facts: a compiled core, a light import, lazy optional dependencies, true docstrings."""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import llmsurrogate

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["torch", "transformers", "vllm", "rpy2", "dask", "ray", "polars", "matplotlib", "pandas", "sklearn"]


def test_core_is_a_compiled_extension():
    from llmsurrogate import _core

    assert Path(_core.__file__).suffix in importlib.machinery.EXTENSION_SUFFIXES or \
        any(_core.__file__.endswith(s) for s in importlib.machinery.EXTENSION_SUFFIXES)
    assert llmsurrogate.__version__ == _core.__version__


def test_import_is_light_and_fast():
    code = (
        "import sys, time; t = time.perf_counter(); import llmsurrogate; dt = time.perf_counter() - t; "
        "import json; print(json.dumps({'dt': dt, 'mods': sorted(sys.modules)}))"
    )
    best = None
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        info = json.loads(out.stdout)
        best = info if best is None or info["dt"] < best["dt"] else best
    loaded = {m.split(".")[0] for m in best["mods"]}
    assert not loaded & set(HEAVY), f"import llmsurrogate pulled in {sorted(loaded & set(HEAVY))}"
    assert best["dt"] < 0.5, f"import took {best['dt']:.3f} s"


def test_submodules_load_lazily():
    code = ("import sys, llmsurrogate; assert 'llmsurrogate.datasets' not in sys.modules; "
            "llmsurrogate.datasets; assert 'llmsurrogate.datasets' in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
    with pytest.raises(AttributeError):
        llmsurrogate.no_such_thing


def test_missing_optional_dependency_names_the_extra():
    from llmsurrogate._optional import require
    from llmsurrogate.exceptions import MissingDependencyError

    with pytest.raises(MissingDependencyError, match=r"pip install 'llmsurrogate\[vllm\]'") as info:
        require("vllm", purpose="GPU scoring")
    assert isinstance(info.value, ImportError) and "GPU scoring" in str(info.value)


def test_a_failing_import_keeps_its_own_error(tmp_path, monkeypatch):
    """Issue 22, item 6b: a module that is installed but fails to import (here: its __init__
    raises, or imports something missing) is not reported as "not installed"; the message keeps
    the import's own error, which is chained."""
    from llmsurrogate._optional import require
    from llmsurrogate.exceptions import MissingDependencyError

    (tmp_path / "llms_broken_a").mkdir()
    (tmp_path / "llms_broken_a" / "__init__.py").write_text(
        "raise ImportError('libllms_a.so: cannot open shared object file: No such file or directory')\n")
    (tmp_path / "llms_broken_b").mkdir()
    (tmp_path / "llms_broken_b" / "__init__.py").write_text("import llms_no_such_dependency_b\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("llms_broken_a", "llms_broken_b"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    with pytest.raises(MissingDependencyError, match=r"'llms_broken_a' failed to import \(needed for testing\): "
                       r"ImportError: libllms_a\.so: cannot open shared object file") as info:
        require("llms_broken_a", purpose="testing")
    assert "not installed" not in str(info.value)
    assert type(info.value.__cause__) is ImportError

    with pytest.raises(MissingDependencyError, match="ModuleNotFoundError: No module named 'llms_no_such_dependency_b'") \
            as info:
        require("llms_broken_b")
    assert "not installed" not in str(info.value)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)

    # the module itself (or its package) missing: "not installed"
    for name in ("llms_not_there", "llms_not_there.sub", "llms_broken_a_missing.sub"):
        with pytest.raises(MissingDependencyError, match="is not installed; run: pip install llms_"):
            require(name)


@pytest.mark.slow
def test_sdist_leaves_out_r_bridge_and_tests(tmp_path):
    maturin = Path(sys.executable).parent / "maturin"
    if not maturin.exists():
        pytest.fail("maturin is not installed in this environment; run make test")
    out = subprocess.run([str(maturin), "sdist", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    assert "Cargo.toml" in names and "pyproject.toml" in names
    assert any(n.startswith("rust/") for n in names)
    assert any(n.startswith("python/llmsurrogate/data/") for n in names)
    assert not [n for n in names if n.startswith(("r-bridge/", "tests/", "benchmarks/", ".ci/"))]


def test_wheel_size_is_reasonable():
    data = ROOT / "python" / "llmsurrogate" / "data"
    size = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    assert size < 3_000_000, f"bundled data is {size / 1e6:.1f} MB"


@pytest.mark.slow
def test_wheel_holds_compiled_core_and_data(tmp_path):
    """`maturin build` (what `pip install .` runs) gives a wheel with the extension and the data."""
    import zipfile

    maturin = Path(sys.executable).parent / "maturin"
    out = subprocess.run([str(maturin), "build", "--release", "--quiet", "--out", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("llmsurrogate/_core") and n.endswith(".so") for n in names)
    assert "llmsurrogate/data/certainty_equivalents_44/index.csv" in names
    assert "llmsurrogate/data/ATTRIBUTION.md" in names
    assert not [n for n in names if n.startswith(("tests/", "r-bridge/"))]
    assert wheel.stat().st_size < 5_000_000, f"wheel is {wheel.stat().st_size / 1e6:.1f} MB"


def test_subpackages_are_discoverable_as_attributes_and_in_dir():
    """``llmsurrogate.testing`` works as an attribute (it raised AttributeError), and ``dir()`` of the
    package and of ``llmsurrogate.llm`` lists the public names (issue 25, item 9). A fresh
    interpreter: in this one another test may already have imported the submodules."""
    code = (
        "import json, llmsurrogate, llmsurrogate.llm as llm; before = dir(llm); "
        "rows = llmsurrogate.testing.synthetic_census(5).shape[0]; "
        "print(json.dumps({'top': dir(llmsurrogate), 'llm': before, 'rows': rows, "
        "'scoring': llm.scoring.__name__, 'all': llm.__all__}))"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out["rows"] == 5 and "testing" in out["top"] and {"ess", "risk", "llm", "transfer"} <= set(out["top"])
    assert set(out["all"]) <= set(out["llm"])  # every public name, before any is imported
    assert {"Task", "make_backend", "TransformersBackend", "LLMPredictor", "load_task", "scoring", "tasks"} <= \
        set(out["llm"])
    assert out["scoring"] == "llmsurrogate.llm.scoring"
    assert not [n for n in out["llm"] if n in ("importlib", "Any", "annotations")]
