"""The weighted PPI mean on the bundled NHANES extract (docs/methods/survey_weights.md §5, issue 36):
the page's block runs as written and prints what the page shows, the numbers of the prose are the
numbers it computes (read from the page's text, so editing either side alone fails here), and the
weighted estimates, standard errors and lambda-hat equal the formulas written out with numpy
(docs/methods/ppi.md §1.2, §2.1-§2.3), independently of the package's code.

scikit-learn's unpenalised logistic regression (lbfgs, tol 1e-10) is deterministic, so the numbers are
checked to their printed digits.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

pytest.importorskip("sklearn")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "methods" / "survey_weights.md"
BLOCK = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.DOTALL)
ROW = re.compile(r"^(classical|ppi\+\+ unweighted|ppi\+\+|ppi) +(\d\.\d{4})  se (\d\.\d{4})  95% CI \[(\d\.\d{4}), "
                 r"(\d\.\d{4})\]  lambda (\d\.\d\d)  effective n (\d+)  covers the target: (True|False)$")


def _section() -> str:
    text = PAGE.read_text()
    start = text.index("## 5. A weighted mean with PPI")
    return text[start:text.index("\n## 6.", start)]


def _prose() -> str:
    return " ".join(BLOCK.sub("", _section()).split())


def _find(pattern: str) -> re.Match:
    match = re.search(pattern, _prose())
    assert match, f"docs/methods/survey_weights.md §5 no longer says {pattern!r}"
    return match


@pytest.fixture(scope="module")
def ran():
    """The page's first block (the data: nh, y, w) and its PPI block, run in order; the PPI block's
    printed lines and the lines the page shows under it."""
    blocks = BLOCK.findall(PAGE.read_text())
    ppi_blocks = [b for b in blocks if "ppi.mean(" in b[0]]
    assert len(ppi_blocks) == 1 and ppi_blocks[0] in BLOCK.findall(_section())
    space: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(blocks[0][0], str(PAGE), "exec"), space)  # noqa: S102 (the page's own example)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(ppi_blocks[0][0], str(PAGE), "exec"), space)  # noqa: S102
    printed = [line.rstrip() for line in buf.getvalue().strip().splitlines()]
    shown = [line.rstrip() for line in ppi_blocks[0][1].strip().splitlines()]
    return {"space": space, "printed": printed, "shown": shown}


def _rows(lines):
    return {m.group(1): m for m in (ROW.match(line) for line in lines) if m}


def test_the_block_prints_what_the_page_shows(ran):
    assert ran["printed"] == ran["shown"]
    assert set(_rows(ran["printed"])) == {"classical", "ppi", "ppi++", "ppi++ unweighted"}


def test_the_prose_states_the_printed_numbers(ran):
    s = ran["space"]
    fits, target = s["fits"], s["target"]
    rows = _rows(ran["printed"])
    lab, unl, fit_rows = s["labelled"], s["unlabelled"], s["fit_rows"]
    # the design: disjoint parts, every row with a laboratory result in one of them
    assert len(set(lab) | set(unl) | set(fit_rows)) == len(lab) + len(unl) + len(fit_rows) == len(s["nh"])
    assert f"{len(lab)} rows drawn at random" in _prose() and f"{len(unl):,} rows keep only the prediction" in _prose()
    assert f"fitted on {len(fit_rows):,} other rows" in _prose() and f"all {len(s['nh']):,} rows" in _prose()
    assert f"{target:.4f}" == _find(r"cover the target (\d\.\d{4})").group(1) == "0.1121"
    # every weighted interval covers the target, as the page says and prints
    assert _find(r"All three weighted intervals cover the target")
    for name in ("classical", "ppi", "ppi++", "ppi++ unweighted"):
        r = fits[name]
        assert r.ci_low <= target <= r.ci_high
        assert rows[name].group(8) == "True"
    m = _find(r"labelled rows alone: (\d\.\d{4}), CI \[(\d\.\d{4}), (\d\.\d{4})\]")
    c = fits["classical"]
    assert m.groups() == (f"{c.estimate:.4f}", f"{c.ci_low:.4f}", f"{c.ci_high:.4f}")
    m = _find(r"adds the ([\d,]+) predictions: (\d\.\d{4}), CI \[(\d\.\d{4}), (\d\.\d{4})\], (\d+)% narrower, worth "
              r"(\d+) labelled rows instead of (\d+)")
    p = fits["ppi"]
    assert int(m.group(1).replace(",", "")) == p.N == len(unl)
    assert m.group(2, 3, 4) == (f"{p.estimate:.4f}", f"{p.ci_low:.4f}", f"{p.ci_high:.4f}")
    narrower = 1 - (p.ci_high - p.ci_low) / (c.ci_high - c.ci_low)
    assert int(m.group(5)) == round(100 * narrower)
    assert int(m.group(6)) == round(p.effective_n) and int(m.group(7)) == p.n == len(lab)
    # PPI++'s lambda-hat is clipped at 1, so its interval is PPI's
    assert _find(r"PPI\+\+ tunes λ to the clip at 1 and gives the same interval")
    assert fits["ppi++"].lam == 1.0 and fits["ppi++"].ci_low == p.ci_low and fits["ppi++"].ci_high == p.ci_high
    corr = np.corrcoef(s["p"][lab], s["y"][lab])[0, 1]
    assert _find(r"on the labelled rows is (\d\.\d\d)\)").group(1) == f"{corr:.2f}"
    u = fits["ppi++ unweighted"]
    assert _find(r"wider than the unweighted one, \[(\d\.\d{4}), (\d\.\d{4})\]").groups() == (f"{u.ci_low:.4f}",
                                                                                               f"{u.ci_high:.4f}")
    assert u.ci_high - u.ci_low < min(r.ci_high - r.ci_low for r in (c, p, fits["ppi++"]))
    sample_share = _find(r"\((\d\.\d{4}) over all rows, §1\)").group(1)
    assert sample_share == f"{s['y'].mean():.4f}" and u.ci_low <= float(sample_share) <= u.ci_high
    # "above it by less than one standard error"
    for r in (c, p, fits["ppi++"]):
        assert 0 < r.estimate - target < r.se


def _weighted_ppi(y, yhat, yhat_u, w, w_u, lam=None, level=0.95):
    """The weighted PPI mean written out (ppi.md §1.2, §2.1-§2.3): weights rescaled to sum to n and
    N, so each sample's part is a ratio (Hajek) mean whose linearised values are
    ``w (z - zbar_w)``; the variance is theirs (ddof 0), and lambda-hat = Cov(g, g^) / ((1 + n/N)
    Var([g^; g~])) at the lambda = 1 estimate, clipped, with the gradients ``w (z - theta)`` so
    linearised: ``w (z - zbar_w) + (zbar_w - theta)``."""
    n, N = y.size, yhat_u.size
    w = w * n / w.sum()
    w_u = w_u * N / w_u.sum()

    def lin(z, wt):
        return wt * (z - np.average(z, weights=wt))

    if lam is None:
        theta1 = np.sum(w_u * yhat_u) / N + np.sum(w * (y - yhat)) / n
        g = lin(y, w) + np.average(y, weights=w) - theta1
        gh = lin(yhat, w) + np.average(yhat, weights=w) - theta1
        gu = lin(yhat_u, w_u) + np.average(yhat_u, weights=w_u) - theta1
        cov = np.sum((g - g.mean()) * (gh - gh.mean())) / n
        var = np.var(np.concatenate([gh, gu]), ddof=1)
        lam = float(np.clip(cov / ((1 + n / N) * var), 0.0, 1.0))
    est = np.sum(w_u * lam * yhat_u) / N + np.sum(w * (y - lam * yhat)) / n
    se = np.sqrt(np.mean(lin(lam * yhat_u, w_u) ** 2) / N + np.mean(lin(y - lam * yhat, w) ** 2) / n)
    z = norm.ppf(0.5 + level / 2)
    return est, se, est - z * se, est + z * se, lam


def test_the_weighted_estimates_equal_the_formula(ran):
    s = ran["space"]
    y, p, w, lab, unl = s["y"].astype(float), s["p"], s["w"], s["labelled"], s["unlabelled"]
    cases = {"classical": (w, 0.0), "ppi": (w, 1.0), "ppi++": (w, None), "ppi++ unweighted": (np.ones_like(w), None)}
    for name, (weights, lam) in cases.items():
        est, se, lo, hi, lam_used = _weighted_ppi(y[lab], p[lab], p[unl], weights[lab], weights[unl], lam)
        r = s["fits"][name]
        np.testing.assert_allclose([r.estimate, r.se, r.ci_low, r.ci_high, r.lam], [est, se, lo, hi, lam_used],
                                   rtol=0, atol=1e-12, err_msg=name)
    # the Hajek form of the page: a ratio of weighted sums per sample, free of the weights' scale
    r = s["fits"]["ppi"]
    hajek = np.average(p[unl], weights=w[unl]) + np.average(y[lab] - p[lab], weights=w[lab])
    assert r.estimate == pytest.approx(hajek, abs=1e-13)
    from llmsurrogate import ppi

    rescaled = ppi.mean(y[lab], p[lab], p[unl], method="ppi", weights=1e-3 * w[lab], weights_unlabeled=7.0 * w[unl])
    assert rescaled.estimate == pytest.approx(r.estimate, abs=1e-13) and rescaled.se == pytest.approx(r.se, abs=1e-13)
