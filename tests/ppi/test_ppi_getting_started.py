"""docs/getting-started/ppi.md runs as written, and the numbers its prose states are the numbers its
code gives (issue 36: a worked example on bundled data where PPI narrows a CI honestly, and one where a
useless prediction gives lambda-hat near 0 and the classical interval back).

Every number is read from the page's text, so editing either side alone fails here. Numbers that do
not involve the tiny model (the classical interval, the sample shares, the array example) are checked
to their printed digits; those that do are checked in bands, since the tiny model is trained in
float32 and differs from CPU to CPU (README; validation/tiny_model_spread.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "getting-started" / "ppi.md"


def _text() -> str:
    return " ".join(PAGE.read_text().split())  # prose with its line breaks as spaces


def _find(pattern: str) -> re.Match:
    match = re.search(pattern, _text())
    assert match, f"docs/getting-started/ppi.md no longer says {pattern!r}"
    return match


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    import matplotlib

    matplotlib.use("Agg")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
              if not b.startswith("# not run")]
    assert len(blocks) == 3
    where = tmp_path_factory.mktemp("ppi-getting-started")
    old = os.getcwd()
    os.chdir(where)
    try:
        space: dict = {}
        for block in blocks:
            exec(compile(block, str(PAGE.name), "exec"), space)
    finally:
        os.chdir(old)
    return space


def test_the_array_example(ran):
    m = _find(r"here about ([\d,]+) from (\d+)")
    assert round(ran["res"].effective_n) == int(m.group(1).replace(",", ""))
    assert ran["res"].n == int(m.group(2))


def test_the_classical_interval_and_the_shares(ran):
    classical, census, y = ran["classical"], ran["census"], ran["y"]
    m = _find(r"The classical interval from the (\d+) human answers is (\d\.\d+) to (\d\.\d+) \(the share is "
              r"(\d\.\d+) among them; (\d\.\d+) among all ([\d,]+) rows\)")
    assert classical.n == len(y) == int(m.group(1))
    assert (f"{classical.ci_low:.3f}", f"{classical.ci_high:.3f}") == m.group(2, 3)
    assert f"{y.mean():.3f}" == m.group(4)
    assert f"{census['PINCP>50000'].mean():.3f}" == m.group(5)
    assert len(census) == int(m.group(6).replace(",", ""))
    # the labelled rows are a sample of the frame's rows, paired with the scores by label
    assert classical.N == len(census) - len(y)


def test_the_tiny_model_narrows_the_interval_honestly(ran):
    classical, tuned, scores, labelled, y = ran["classical"], ran["tuned"], ran["scores"], ran["labelled"], ran["y"]
    corr = float(np.corrcoef(scores[labelled].to_numpy(float), y.to_numpy(float))[0, 1])
    assert abs(corr - float(_find(r"correlate about (\d\.\d+) with the answers").group(1))) <= 0.08
    assert _find(r"full weight \(λ̂ = (\d)")[1] == "1" and tuned.lam == 1.0
    m = _find(r"estimate to about (\d\.\d+) with an interval of about (\d\.\d+) to (\d\.\d+): about (\d+)% narrower, "
              r"worth about (\d+) human answers instead of (\d+)")
    assert abs(tuned.estimate - float(m.group(1))) <= 0.01
    assert abs(tuned.ci_low - float(m.group(2))) <= 0.01 and abs(tuned.ci_high - float(m.group(3))) <= 0.01
    narrower = 1 - (tuned.ci_high - tuned.ci_low) / (classical.ci_high - classical.ci_low)
    assert narrower > 0 and abs(100 * narrower - int(m.group(4))) <= 4
    assert abs(tuned.effective_n - int(m.group(5))) <= 30 and tuned.n == int(m.group(6))
    fig = ran["fig"]
    assert len(fig.axes[0].get_legend().get_texts()) == 2  # PPI++ and the classical interval
    same = ran["same"]  # ppi.from_scores on the RiskScores: the same numbers, paired by row label
    assert (same.n, same.N) == (tuned.n, tuned.N)
    for field in ("estimate", "ci_low", "ci_high", "lam"):
        assert abs(getattr(same, field) - getattr(tuned, field)) < 1e-12, field


def test_a_useless_prediction_gives_the_classical_interval_back(ran):
    classical, useless = ran["classical"], ran["useless"]
    assert _find(r"Here λ̂ = (\d)")[1] == "0"
    assert useless.lam <= 0.05  # 0 here; a hair above on a CPU whose float32 scores differ
    width = useless.ci_high - useless.ci_low
    assert abs(width / (classical.ci_high - classical.ci_low) - 1) < 0.01
    m = _find(r"the interval is the classical one, (\d\.\d+) to (\d\.\d+)")
    assert abs(useless.ci_low - float(m.group(1))) <= 0.002 and abs(useless.ci_high - float(m.group(2))) <= 0.002
    # the page's claim about plain PPI: with the useless prediction and lambda = 1 the interval is wider
    from llmsurrogate import ppi

    shuffled, labelled, unlabelled, y = ran["shuffled"], ran["labelled"], ran["unlabelled"], ran["y"]
    plain = ppi.mean(y, shuffled[labelled], shuffled[unlabelled], method="ppi")
    assert plain.ci_high - plain.ci_low > width
