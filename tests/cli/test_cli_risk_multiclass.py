"""`llmsurrogate risk` on a question with K > 2 ordered options and with survey weights (issue 27,
item 6): the command repeats Python's numbers, on a tiny local model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from llmsurrogate import risk, testing
from llmsurrogate.cli import cli
from llmsurrogate.llm.factory import load_task, make_backend

TASK = """
name = "IncomeBand"
target = "BAND"

[question]
text = "What is this person's yearly income?"
ordered = true

[[question.options]]
text = "Low"
value = 1

[[question.options]]
text = "Middle"
value = 2

[[question.options]]
text = "High"
value = 3

[[columns]]
name = "AGEP"

[[columns]]
name = "SEX"
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """24 synthetic rows with a three-level income band and survey weights, the task file, a tiny model."""
    root = tmp_path_factory.mktemp("kstudy")
    model = testing.build_model(root / "model", "gpt2", seed=11)
    rows = testing.synthetic_census(24, seed=5)
    rows["BAND"] = 1 + np.searchsorted(np.quantile(rows["p_true"], [1 / 3, 2 / 3]), rows["p_true"])
    rows["w"] = np.random.default_rng(3).uniform(0.2, 3.0, len(rows))
    rows.to_csv(root / "rows.csv", index=False)
    (root / "band.toml").write_text(TASK)
    backend = make_backend("transformers", str(model), device="cpu")
    return root, model, rows, backend


def risk_cli(study, out, *args):
    root, model, *_ = study
    return CliRunner().invoke(cli, ["risk", "--data", str(root / "rows.csv"), "--model", str(model), "--cache",
                                    str(out / "cache"), "--out", str(out / "out"), "--n-boot", "20", *map(str, args)])


def test_ordered_options_with_weights_repeat_python(study, tmp_path):
    root, _model, rows, backend = study
    res = risk_cli(study, tmp_path, "--task", root / "band.toml", "--orders", "cyclic", "--weights", "w",
                   "--groups", "SEX")
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    scores = pd.read_csv(out / "scores.csv")
    probs = ["prob_1", "prob_2", "prob_3"]
    task = load_task(str(root / "band.toml"))
    py = risk.risk_scores(rows, task, backend, cache=tmp_path / "py-cache", orders="cyclic")
    np.testing.assert_allclose(scores[probs], py.table[probs], rtol=0, atol=1e-12)
    np.testing.assert_allclose(scores[probs].sum(axis=1), 1.0, atol=1e-12)
    assert scores[probs].std().min() > 1e-7  # the tiny model's probabilities vary by row
    run = json.loads((out / "run.json").read_text())
    assert run["orders"] == "cyclic" and run["weights"] == "w"
    distinct = len(rows[["AGEP", "SEX"]].drop_duplicates())  # rows with the same features share their prompts
    assert run["cache_misses"] == 3 * distinct  # the 3 rotations, not the 3! = 6 orders
    # the metrics are Python's K-option evaluation of those probabilities with the weights ...
    ev = risk.evaluate_multiclass(rows["BAND"], py.probabilities, weights=rows["w"], ordered=True, n_boot=20,
                                  seed=42)
    metrics = pd.read_csv(out / "metrics.csv")
    assert metrics["metric"].tolist() == ev.metrics["metric"].tolist() and "rps" in metrics["metric"].tolist()
    np.testing.assert_allclose(metrics[["value", "se", "ci_low", "ci_high"]], ev.metrics[["value", "se", "ci_low",
                                                                                          "ci_high"]], atol=1e-12)
    # ... which are the weighted means of the per-row losses, written out here
    p = scores[probs].to_numpy()
    code = rows["BAND"].to_numpy() - 1
    w = rows["w"].to_numpy()
    value = metrics.set_index("metric")["value"]
    assert value["log_loss"] == pytest.approx(np.average(-np.log(p[np.arange(len(p)), code]), weights=w), abs=1e-12)
    assert value["brier"] == pytest.approx(np.average(((p - np.eye(3)[code]) ** 2).sum(axis=1), weights=w), abs=1e-12)
    # the answer distribution against the data's, by group
    answers = pd.read_csv(out / "answers.csv")
    cmp = risk.compare_answers(rows["BAND"], py.probabilities, rows["SEX"].map({1: "Male", 2: "Female"}),
                               weights=rows["w"], ordered=True, n_boot=20, seed=42)
    assert sorted(set(answers["group"])) == sorted(set(cmp.table["group"]))
    pooled = answers[(answers["scope"] == "pooled") & (answers["distance"] == "tv")]["value"].item()
    human = np.bincount(code, weights=w, minlength=3) / w.sum()
    assert pooled == pytest.approx(0.5 * np.abs(w @ p / w.sum() - human).sum(), abs=1e-12)
    assert pooled == pytest.approx(cmp.distance("tv"), abs=1e-12)
    assert (out / "metrics_by_option.csv").exists() and (out / "calibration.png").stat().st_size > 5_000
    assert "K-option evaluation" in res.output and "survey weights      : True" in res.output


def test_all_orders_are_the_default_for_three_options(study, tmp_path):
    root, _model, rows, _backend = study
    res = risk_cli(study, tmp_path, "--task", root / "band.toml", "--no-plot")
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["orders"] == "all" and run["cache_misses"] == 6 * len(rows[["AGEP", "SEX"]].drop_duplicates())


def test_option_errors_in_command_line_words(study, tmp_path):
    root, *_ = study
    task = ["--task", root / "band.toml", "--no-plot"]
    res = risk_cli(study, tmp_path / "a", *task, "--weights", "weight")
    assert res.exit_code == 1 and "--weights 'weight' is not a column of --data rows.csv" in res.output
    bad = pd.read_csv(root / "rows.csv")
    bad.loc[4, "w"] = -1.0
    bad.to_csv(tmp_path / "bad.csv", index=False)
    res = CliRunner().invoke(cli, ["risk", "--data", str(tmp_path / "bad.csv"), "--model", str(root / "model"),
                                   "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o"), *map(str, task),
                                   "--weights", "w"])
    assert res.exit_code == 1 and "--weights 'w': survey weights must be finite and non-negative" in res.output
    assert "data row 5 (counted from 1 after the header) of --data bad.csv holds -1.0" in res.output
    res = risk_cli(study, tmp_path / "b", *task, "--threshold", "0.3")
    assert res.exit_code == 1 and "--threshold and --fit-threshold apply to a yes/no question" in res.output
    res = risk_cli(study, tmp_path / "c", *task, "--method", "numeric")
    assert res.exit_code == 1 and "has 3 options: use --method multiple_choice" in res.output
    res = risk_cli(study, tmp_path / "d", *task, "--orders", "cyclic", "--no-order-correction")
    assert res.exit_code == 2 and "--orders" in res.output
    assert "Traceback" not in res.output


def test_weights_on_a_yes_no_question_give_pythons_weighted_metrics(study, tmp_path):
    _root, _model, rows, _backend = study
    task = testing.synthetic_income_task()
    task.to_toml(tmp_path / "synth.toml")
    res = risk_cli(study, tmp_path, "--task", tmp_path / "synth.toml", "--method", "numeric", "--weights", "w",
                   "--no-plot")
    assert res.exit_code == 0, res.output
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv").set_index("metric")
    want = risk.evaluate(scores["label"], scores["score"], weights=rows["w"], n_boot=20, seed=42).metrics
    np.testing.assert_allclose(metrics["value"], want["value"], atol=1e-12)
    w, y, r = rows["w"].to_numpy(), scores["label"].to_numpy(), scores["score"].to_numpy()
    assert metrics.loc["brier", "value"] == pytest.approx(np.average((r - y) ** 2, weights=w), abs=1e-12)
    unweighted = risk.evaluate(y, r, n_boot=0).metric("brier")
    assert abs(unweighted - metrics.loc["brier", "value"]) > 1e-6  # the weights changed the number
