"""The README's Python examples run as written (blocks starting with `# not run` are skipped), and the
numbers the README states about them are the numbers they give (issue 25, item 7: "trains in
seconds", AUC 0.66 / ECE 0.027 and an ESS snippet on another subject pool than its prose had drifted
from what the code gives).

Each number is read from the README text, so editing either side without the other fails here.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _find(pattern: str, text: str | None = None) -> re.Match:
    match = re.search(pattern, README.read_text() if text is None else text, flags=re.S)
    assert match, f"README no longer says {pattern!r}"
    return match


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """The namespace each runnable block leaves, in order (the blocks run once for every test here)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    runnable = [b for b in _blocks() if not b.startswith("# not run")]
    assert runnable, "README has no runnable python example"
    where = tmp_path_factory.mktemp("readme")
    old = os.getcwd()
    os.chdir(where)
    try:
        spaces = []
        for block in runnable:
            space: dict = {}
            exec(compile(block, "README.md", "exec"), space)
            spaces.append(space)
    finally:
        os.chdir(old)
    return {"spaces": spaces, "blocks": runnable, "dir": where}


def _space(ran, marker: str) -> dict:
    (space,) = [s for s, b in zip(ran["spaces"], ran["blocks"]) if marker in b]
    return space


def test_readme_python_example_runs(ran):
    assert (ran["dir"] / "intervals.json").exists()
    assert (ran["dir"] / "calibration.png").exists()


def test_the_quantile_numbers(ran):
    space = _space(ran, "quantiles.quantile_interval(pooled, 0.95)")
    m = _find(r"# (\d[\d,]*) off-diagonal errors")
    assert space["pooled"].size == _number(m.group(1))
    m = _find(r"quantile_interval\(pooled, 0\.95\)\s+# \((\d+\.\d+)\.\.\., (\d+\.\d+)\.\.\.\)")
    lower, upper = space["quantiles"].quantile_interval(space["pooled"], 0.95)
    assert (f"{lower:.2f}", f"{upper:.2f}") == (m.group(1), m.group(2))
    m = _find(r"load_certainty_equivalents\(\)\s+# (\d[\d,]*) lottery CEs from (\d+) subject pools")
    assert len(space["ce"]) == _number(m.group(1)) and space["ce"]["domain"].nunique() == int(m.group(2))


def test_the_ess_snippet_runs_on_the_pool_its_prose_describes(ran):
    space = _space(ran, "ess.equivalent_sample_size(pool")
    res, pool = space["res"], space["pool"]
    m = _find(r"# the UK pool of the demo below \(subject pool (\d+): Murad, Sefton & Starmer 2016, n = ([\d,]+)\)")
    assert "domains=[" + m.group(1) + "]" in [b for b in ran["blocks"] if "ess.equivalent_sample_size(pool" in b][0]
    assert len(pool) == _number(m.group(2))
    from llmsurrogate import datasets

    label = datasets.load_certainty_equivalents(domains=[int(m.group(1))])["domain"].iloc[0]
    assert "Murad" in label
    # the same pool as the demo's prose (n = 2,131 lottery valuations) and the demo itself
    assert _number(_find(r"\(n = ([\d,]+) lottery valuations\)").group(1)) == len(pool)
    from llmsurrogate.ess.demo import run_ess_demo

    assert inspect.signature(run_ess_demo).parameters["domain_id"].default == int(m.group(1))
    m = _find(r"res\.lower_bound, res\.status, res\.plugin\s+# \((\d+), '(\w+)', (\w+)\): one-sided 95% CI \[(\d+), inf\)")
    assert (res.lower_bound, res.status, res.plugin) == (int(m.group(1)), m.group(2), float(m.group(3)))
    assert int(m.group(4)) == res.lower_bound
    # the lasso row of the demo table states the same bound
    assert int(_find(r"\| lasso \(tuned per N\) \| \[(\d+), ∞\)").group(1)) == res.lower_bound


def test_the_tiny_model_numbers(ran):
    space = _space(ran, "testing.train_tiny_model")
    from llmsurrogate import testing
    from sklearn.metrics import roc_auc_score

    m = _find(r"trained for (\d+) steps of (\d+) of the synthetic task's numeric prompts")
    defaults = inspect.signature(testing.train_tiny_model).parameters
    assert (defaults["steps"].default, defaults["batch_size"].default) == (int(m.group(1)), int(m.group(2)))
    assert space["info"]["steps"] == int(m.group(1))
    assert "seconds" not in _find(r"info = testing\.train_tiny_model\(.*?\n").group(0)

    ev, num, census = space["ev"], space["num"], space["census"]
    # Trained in float32: the numbers differ from CPU to CPU (issue 34: a new Xeon gave AUC 0.72 where
    # the README said 0.71). The README states each with the training's spread as "x ± t"; this machine's
    # model must land inside, and the spread measured over kernel variants (validation/tiny_model_spread.py,
    # five differently trained models) must lie inside the stated bands too, so the tolerance is the
    # training's own and not a number picked to pass.
    pm = r"(\d\.\d+) ± (\d\.\d+)"
    m = _find(rf"on these ([\d,]+) rows ROC AUC {pm} \(its 95% interval about (\d\.\d+)\s+wide\) against a Bayes "
              rf"AUC of\s+(\d\.\d\d), ECE {pm}, scores from {pm} up to {pm} where\s+the true probabilities run from "
              r"(\d\.\d\d) to (\d\.\d\d)")
    assert len(census) == _number(m.group(1))
    auc = ev.metrics.set_index("metric").loc["roc_auc"]
    scores = np.asarray(num.scores)
    ours = {"roc_auc": auc["value"], "ece": ev.metric("ece"), "score_min": scores.min(), "score_max": scores.max()}
    stated = {"roc_auc": m.group(2, 3), "ece": m.group(6, 7), "score_min": m.group(8, 9), "score_max": m.group(10, 11)}
    spread = json.loads((ROOT / "validation" / "results" / "tiny_model_spread.json").read_text())
    assert spread["distinct_trained_models"] >= 3  # the variants really trained different models
    for key, (centre, tol) in stated.items():
        lo, hi = float(centre) - float(tol), float(centre) + float(tol)
        assert lo <= ours[key] <= hi, f"{key}: {ours[key]:.4f} outside the README's {centre} ± {tol}"
        assert lo <= spread["spread"][key][0] and spread["spread"][key][1] <= hi, (key, spread["spread"][key])
    assert abs((auc["ci_high"] - auc["ci_low"]) - float(m.group(4))) <= 0.015
    # no training in these: exact
    bayes = roc_auc_score(census["PINCP>50000"], census["p_true"])
    assert f"{bayes:.2f}" == m.group(5)
    assert (f"{census['p_true'].min():.2f}", f"{census['p_true'].max():.2f}") == m.group(12, 13)
    assert scores.max() - scores.min() < census["p_true"].max() - census["p_true"].min()  # under-confident
    m = _find(r"five kernel variants trained five different models with AUC (\d\.\d+)-(\d\.\d+),\s+ECE "
              r"(\d\.\d+)-(\d\.\d+)")
    assert m.group(1, 2) == tuple(f"{v:.3f}" for v in spread["spread"]["roc_auc"])
    assert m.group(3, 4) == tuple(f"{v:.3f}" for v in spread["spread"]["ece"])
    assert len(spread["variants"]) == 5

    mass = _number(_find(r"answer-letter mass on the ACS rows is below (\d+e-\d+)").group(1))
    mc = space["mc"]
    assert mc.table["answer_mass"].max() < mass
    assert np.allclose(mc.table["score"], 0.5, atol=1e-3) and not math.isnan(mc.table["score"].iloc[0])


@pytest.mark.slow
def test_the_ess_demo_table():
    """The README's table of the ESS demo (CPT with the 1992 parameters on subject pool 10) is what
    ``run_ess_demo()`` gives (about 100 s on 2 busy cores)."""
    from llmsurrogate.ess.demo import run_ess_demo

    out = run_ess_demo()
    rows = {"rf": r"\| random forest \(50 trees, tuned per N\) \| \[(\d+), ∞\) \| (\d+|> \d+) \| (\d\.\d\d) \| (\d\.\d\d) \|",
            "lasso": r"\| lasso \(tuned per N\) \| \[(\d+), ∞\) \| (\d+|> \d+) \| (\d\.\d\d) \| (\d\.\d\d) \|"}
    m = _find(r"grid ([\d, ]+); seed 0\)")
    assert [int(v) for v in m.group(1).split(", ")] == list(inspect.signature(run_ess_demo).parameters["grid"].default)
    assert inspect.signature(run_ess_demo).parameters["n_estimators"].default == 50  # "50 trees"
    for algo, pattern in rows.items():
        bound, plugin, rule_mse, algo_mse = _find(pattern).groups()
        res = out[algo]
        assert res.lower_bound == int(bound)
        if plugin.startswith(">"):
            assert res.plugin > int(plugin[2:])
        else:
            assert res.plugin == int(plugin)
        assert f"{res.llm_error:.2f}" == rule_mse
        assert f"{res.table['algo_error'].iloc[-1]:.2f}" == algo_mse
    # the prose under the table
    m = _find(r"mean squared error of\s+(\d\.\d) \(the outcome's variance is (\d+\.\d)\)")
    from llmsurrogate import datasets

    ce = datasets.load_certainty_equivalents(domains=[10])["ce"]
    assert f"{out['rf'].llm_error:.1f}" == m.group(1) and f"{ce.var():.1f}" == m.group(2)
    m = _find(r"its estimated error curve crosses\s+CPT's between (\d+) and (\d+) observations")
    curve = out["rf"].table.set_index("n_train")
    assert curve.loc[int(m.group(1)), "diff"] > 0 > curve.loc[int(m.group(2)), "diff"]


def test_the_transfer_numbers(ran):
    space = _space(ran, "tr.forecast_interval(rf, 0.9)")

    def value(expr: str):
        return eval(expr, space)  # an expression of the README's own block, in its namespace

    m = _find(r"tr\.forecast_interval\(rf, 0\.9\)\s+# \((\d+\.\d+), (\d+\.\d+)\): tau = (0\.\d+), (\d+)% guaranteed")
    lower, upper = value("tr.forecast_interval(rf, 0.9)")
    assert (f"{lower:.2f}", f"{upper:.2f}") == m.group(1, 2)
    assert f"{value(f'tr.coverage_bound(44, 1, {m.group(3)})'):.2f}" == f"0.{m.group(4)}"
    m = _find(r"tr\.forecast_interval\(rf, 0\.9, side=\"right\"\)\s+# one-sided \(-inf, (\d+\.\d+)\]")
    lower, upper = value('tr.forecast_interval(rf, 0.9, side="right")')
    assert lower == -np.inf and f"{upper:.2f}" == m.group(1)
    m = _find(r"tr\.coverage_bound\(44, 1, 0\.95\)\s+# (\d\.\d+) \(Proposition 1\)")
    assert f"{value('tr.coverage_bound(44, 1, 0.95)'):.2f}" == m.group(1)
    m = _find(r"tr\.check_everywhere_dominance\(cpt, rf, \[0\.9, 0\.96\]\)\s+# exact: (\w+), (\w+)")
    assert [str(v) for v in value("tr.check_everywhere_dominance(cpt, rf, [0.9, 0.96])")["res"]] == list(m.groups())
    m = _find(r"mode=\"paper\"\)\s+# the paper's pruning: (\w+), (\w+)")
    got = value('tr.check_everywhere_dominance(cpt, rf, [0.9, 0.96], mode="paper")')["res"]
    assert [str(v) for v in got] == list(m.groups())
    m = _find(r"tr\.qte_interval\(cpt, 0\.8, betas=\[0\.5\]\)\s+# CI for the median transfer error: "
              r"\[(\d+\.\d+), (\d+\.\d+)\]")
    row = value("tr.qte_interval(cpt, 0.8, betas=[0.5])").iloc[0]
    assert (f"{row['lb']:.2f}", f"{row['ub']:.2f}") == m.group(1, 2)


def test_the_ppi_numbers(ran):
    space = _space(ran, "ppi.mean(")
    stated = _number(_find(r"Worth about ([\d,]+) human answers here").group(1))
    assert round(space["res"].effective_n) == stated
    assert space["res"].n == 300 and space["res"].method == "ppi++"
