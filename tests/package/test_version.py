"""One version, read from Cargo.toml: the installed distribution, ``llmsurrogate.__version__``,
``llmsurrogate --version``, the R package's DESCRIPTION, CITATION.cff and CHANGELOG.md agree with it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import llmsurrogate

ROOT = Path(__file__).resolve().parents[2]
EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads(path.read_text(encoding="utf-8"))


def cargo_version() -> str:
    return _toml(ROOT / "Cargo.toml")["package"]["version"]


def test_the_version_comes_from_cargo_toml():
    version = cargo_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    assert llmsurrogate.__version__ == metadata.version("llmsurrogate") == version
    project = _toml(ROOT / "pyproject.toml")["project"]
    assert "version" not in project and project["dynamic"] == ["version"]


def test_version_option_of_the_console_script():
    assert EXE, "the llmsurrogate console script is not installed next to this Python"
    for option in ("--version", "-V"):
        out = subprocess.run([EXE, option], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"llmsurrogate, version {metadata.version('llmsurrogate')}\n"
        assert out.stdout.split()[-1] == llmsurrogate.__version__


def test_r_description_version_matches():
    """R requires its own Version field; it must equal the package version."""
    text = (ROOT / "r-bridge" / "llmsurrogate" / "DESCRIPTION").read_text(encoding="utf-8")
    found = re.findall(r"^Version:\s*(\S+)\s*$", text, flags=re.M)
    assert found == [cargo_version()]


def test_citation_cff():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["license"] == "MIT"
    assert str(cff["version"]) == cargo_version()
    assert cff["authors"] == [{"name": "The llmsurrogate developers"}]
    refs = cff["references"]
    assert len(refs) == 4
    for ref in refs:
        assert ref["title"] and ref["authors"] and isinstance(ref["year"], int)
        assert all(a["family-names"] and a["given-names"] for a in ref["authors"])
    # the four papers, as docs/methods/ cites them
    families = {ref["title"]: [a["family-names"] for a in ref["authors"]] for ref in refs}
    assert families == {
        "How Well Do LLMs Predict Human Behavior? A Measure of their Pretrained Knowledge": ["Gao", "Han", "Liang"],
        "The Transfer Performance of Economic Models": ["Andrews", "Fudenberg", "Lei", "Liang", "Wu"],
        "Evaluating language models as risk scores": ["Cruz", "Hardt", "Mendler-Dünner"],
        "A Test of Lookahead Bias in LLM Forecasts": ["Gao", "Jiang", "Yan"],
    }
    methods = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "methods").glob("*.md"))
    for title in families:
        assert f'"{title}"' in methods, title


def test_changelog_has_unreleased_and_the_current_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)
    assert headings[0] == "Unreleased" and cargo_version() in headings
