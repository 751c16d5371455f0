"""The README's Python examples run as written (blocks starting with `# not run` are skipped)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    monkeypatch.chdir(tmp_path)
    runnable = [b for b in blocks if not b.startswith("# not run")]
    assert runnable, "README has no runnable python example"
    for block in runnable:
        exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "intervals.json").exists()
