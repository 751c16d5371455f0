"""The committed coverage study of the PPI intervals (validation/ppi_coverage.py, its results in
validation/results/ppi_coverage.json; docs/methods/ppi.md §5.4): the study's criterion is
asserted here, so that a change that breaks coverage shows once the study is run again, and the
script itself is smoke-run with a few replications."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "validation" / "results" / "ppi_coverage.json"
ESTIMATORS = {"mean", "weighted_mean", "ols", "logistic", "feols", "weighted_ols", "weighted_logistic"}
METHODS = {"classical", "classical_small", "ppi", "ppi++", "ppi++_small"}


@pytest.fixture(scope="module")
def study():
    return json.loads(RESULTS.read_text())


def _cells(study):
    cells = {}
    for r in study["rows"]:
        cells.setdefault((r["estimator"], r["prediction"], r["n"]), {})[r["method"]] = r
    return cells


def test_the_study_is_complete(study):
    cells = _cells(study)
    assert {k[0] for k in cells} == ESTIMATORS
    assert {k[1] for k in cells} == {"good", "useless", "anti"}
    assert {k[2] for k in cells} == {50, 200, 1000}
    assert len(cells) == 63
    for key, cell in cells.items():
        assert set(cell) == METHODS, key
        for r in cell.values():
            assert r["reps"] + r["failures"] == (study["feols_reps"] if key[0] == "feols" else study["reps"])
            # logistic: separated samples (no fit) skipped, at most 13% (weighted, anti, n = 50)
            assert r["reps"] >= 850 and (r["failures"] == 0 or key[0].endswith("logistic")), key
            assert r["N"] == 10 * r["n"]


#: (estimator, method) pairs whose z-intervals miss for n >= 200 for a small-sample reason the study
#: diagnosed (docs/methods/ppi.md §5.4), with its direction; kept in view: when one goes away,
#: test_known_shortfalls_still_show fails and this list is to be shortened. The defects of a
#: variance formula the study found are fixed (the comments first).
KNOWN_SHORTFALLS = {
    # (the weighted mean's, ppi_py's Var(w y)/n that ignored the weights' normalisation, ~0.83 for
    # every method, is fixed: the linearised variance, docs/methods/ppi.md §7 item 13; 0.88-0.92 now)
    # (ppi.feols with few labelled rows per level, PPI++ ~0.865 with ppi_py's pooled-Hessian
    # sandwich, and PPI conservative, is fixed: the variance of the two within regressions each in
    # its own sample, docs/methods/ppi.md §9.2-9.3; PPI++ 0.870-0.900 for n >= 200 now)
    # (PPI OLS, 0.93-1.00 with ppi_py's sandwich at the combined estimate, is fixed: each
    # least-squares fit's own influence rows, docs/methods/ppi.md §3.2 and §7 item 14)
    # PPI (lambda = 1) OLS: 0.869-0.897 for n >= 200, 0.885 pooled; the classical HC0 interval
    # 0.888 pooled on the same draws: heteroskedastic leverage that neither HC0 nor HC1 corrects
    # (a 3000-replication run of the useless n = 200 cell: se / MC sd 0.983, coverage 0.890)
    ("ols", "ppi"): "under",
    # PPI (lambda = 1) feols: 0.870 with a useless prediction at n = 200 (3.2 MC s.e. under), 0.890
    # pooled; CRV1 with 40 firms in both samples, where a z-interval with the right variance covers
    # P(|t_39| < z) = 0.892 (docs/methods/ppi.md §5.4); PPI++ and its small-sample interval cover
    ("feols", "ppi"): "under",
    # PPI++ survey-weighted OLS with a good prediction: 0.853 at n = 200 (a Kish effective size of
    # 136), 0.875 at n = 1000 (0.901 in 1000 further replications); the tuned lambda is correlated with the rectifier's error (a bias of ~0.2 s.d. at n = 200; lambda
    # fixed at 0.5 covers 0.885); the small-sample interval, which adds lambda-hat's variance,
    # covers 0.889 and 0.884 (docs/methods/ppi.md §5.4)
    ("weighted_ols", "ppi++"): "under",
}


def _known(r):
    return (r["estimator"], r["method"]) in KNOWN_SHORTFALLS


def test_criterion_for_n_at_least_200(study):
    """The criterion, outside the known defects: for n >= 200, PPI++ with the small-sample option
    within 2 Monte Carlo s.e. of nominal, and no interval beyond 3 s.e. The study as committed
    misses 2 s.e. in one of its 42 cells (logistic, good, n = 200: 0.921, over), within 3 s.e.; at
    2 s.e. about one in 20 misses by chance alone."""
    level = study["level"]
    rows = [r for r in study["rows"] if r["n"] >= 200 and not _known(r)]
    small = [(r["estimator"], r["prediction"], r["n"], r["coverage"]) for r in rows
             if r["method"] == "ppi++_small" and abs(r["coverage"] - level) > 2 * r["mc_se"]]
    assert len(small) <= 2, small
    under = [(r["estimator"], r["prediction"], r["n"], r["method"], r["coverage"]) for r in rows
             if r["coverage"] < level - 3 * r["mc_se"] or r["coverage"] > level + 3 * r["mc_se"]]
    assert not under


def test_known_shortfalls_still_show(study):
    level = study["level"]
    for (est, m), direction in KNOWN_SHORTFALLS.items():
        rows = [r for r in study["rows"] if r["estimator"] == est and r["method"] == m and r["n"] >= 200]
        sign = -1 if direction == "under" else 1
        mean = sum(r["coverage"] for r in rows) / len(rows)   # pooled over the n >= 200 cells
        se = (sum(r["mc_se"] ** 2 for r in rows) ** 0.5) / len(rows)
        assert sign * (mean - level) > 2 * se, (est, m, mean)


def test_small_sample_helps_at_n_50(study):
    """At n = 50 the small-sample PPI++ interval covers at least as often as the z-interval in
    every cell, and is nearer nominal on average."""
    level = study["level"]
    cells = {k: v for k, v in _cells(study).items() if k[2] == 50}
    for key, cell in cells.items():
        assert cell["ppi++_small"]["coverage"] >= cell["ppi++"]["coverage"], key
        assert cell["ppi++_small"]["mean_width"] > cell["ppi++"]["mean_width"], key
    gap_z = sum(abs(c["ppi++"]["coverage"] - level) for c in cells.values())
    gap_t = sum(abs(c["ppi++_small"]["coverage"] - level) for c in cells.values())
    assert gap_t < gap_z


def test_lambda_follows_the_prediction(study):
    """lambda-hat is near 0 for useless and anti-correlated predictions and clearly above that for
    good ones."""
    cells = _cells(study)
    for (est, pred, n), cell in cells.items():
        lam = cell["ppi++"]["mean_lam"]
        if pred == "good":
            assert lam > 0.15 and lam > cells[(est, "useless", n)]["ppi++"]["mean_lam"] + 0.1, (est, n, lam)
        else:
            assert lam < 0.2, (est, pred, n, lam)


def test_the_script_runs(tmp_path):
    """A smoke run of the study: two cells' worth of replications, no JSON written."""
    out = subprocess.run([sys.executable, str(ROOT / "validation" / "ppi_coverage.py"), "--quick", "--reps", "5",
                          "--estimators", "mean,ols", "--jobs", "1"], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ppi++_small" in out.stdout and "within 2 MC s.e." in out.stdout
