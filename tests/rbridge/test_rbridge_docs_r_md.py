"""docs/r.md runs top to bottom in a fresh R session (issue 35 §6: its first session used a
``panel`` it never defined). The page's R blocks run in order in one ``Rscript --vanilla``, with
the package installed from this checkout; a block starting with ``# not run`` (installing
packages) is left out. The installed R package has no docs/, so the test lives here rather than
in its testthat suite."""

from __future__ import annotations

import json
import re

import pytest

from _r import REPO, _rscript, _show, r_env, rscript  # noqa: F401 (fixtures)

pytestmark = pytest.mark.r

R_MD = REPO / "docs" / "r.md"


def _blocks() -> list[str]:
    return re.findall(r"^```r\n(.*?)^```", R_MD.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_docs_r_md_blocks_are_found():
    blocks = _blocks()
    assert len(blocks) >= 4, "docs/r.md: expected its R blocks (```r ... ```)"
    skipped = [b for b in blocks if b.startswith("# not run")]
    assert len(skipped) == 1 and "install_llmsurrogate(" in skipped[0]  # only the installation block


def test_docs_r_md_runs_top_to_bottom_in_a_fresh_session(rscript, r_env, tmp_path):
    runnable = [b for b in _blocks() if not b.startswith("# not run")]
    parts = []
    for i, block in enumerate(runnable, 1):
        # each block's code as R parses it, run at top level (values print, as in a console)
        parts.append(f'cat("\\n=== block {i}\\n")')
        parts.append(f"withAutoprint(parse(text = {json.dumps(block)}, keep.source = FALSE), evaluated = TRUE, echo = FALSE)")
    parts.append('cat("\\n=== done\\n")')
    script = tmp_path / "r_md.R"
    script.write_text("setwd(" + json.dumps(str(tmp_path)) + ")\n" + "\n".join(parts) + "\n", encoding="utf-8")
    proc = _rscript(rscript, r_env, f"source({json.dumps(str(script))})")
    assert proc.returncode == 0, "docs/r.md does not run top to bottom\n" + _show(proc)
    for i in range(1, len(runnable) + 1):
        assert f"=== block {i}" in proc.stdout, _show(proc)
    assert "=== done" in proc.stdout, _show(proc)
