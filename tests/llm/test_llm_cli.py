"""`llmsurrogate risk` (formerly `llmsurrogate score`) as a real subprocess on a tiny local model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")

from llmsurrogate import datasets, testing  # noqa: E402

EXE = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))


def run(*args):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    model = testing.build_model(root / "model", "gpt2", seed=11)
    data = root / "acs.csv"
    datasets.load_acs_income_rows().to_csv(data, index=False)
    return root, model, data


def test_risk_writes_outputs_and_resumes_from_cache(setup):
    root, model, data = setup
    out = run("risk", "--data", data, "--task", "ACSIncome", "--model", model, "--cache", root / "cache",
              "--out", root / "out", "--n-boot", 20)
    assert out.returncode == 0, out.stderr
    scores = pd.read_csv(root / "out" / "scores.csv")
    assert len(scores) == 10 and scores["score"].between(0, 1).all()
    assert scores["label"].tolist() == datasets.load_acs_income_rows()["PINCP>50000"].tolist()
    from llmsurrogate.risk import RiskEvaluation

    ev = RiskEvaluation.from_json(root / "out" / "metrics.json")
    assert ev.meta["n"] == 10 and ev.meta["n_boot"] == 20
    # groups (the task's sensitive attribute, RAC1P) are named in the task's words, not codes 1/2
    assert set(ev.groups["group"]) == {"White", "Black or African American"}
    assert ev.roc is not None and set(ev.roc["group"]) >= {"all"}
    assert (root / "out" / "calibration.png").stat().st_size > 5000
    run_info = json.loads((root / "out" / "run.json").read_text())
    assert run_info["cache_misses"] == 18 and run_info["backend"]["backend"] == "transformers"  # 2 duplicate rows
    again = run("risk", "--data", data, "--task", "ACSIncome", "--model", model, "--cache", root / "cache",
                "--out", root / "out2", "--n-boot", 20, "--no-plot")
    assert again.returncode == 0, again.stderr
    assert "0 computed" in again.stdout
    pd.testing.assert_frame_equal(pd.read_csv(root / "out2" / "scores.csv"), scores)
    m = pd.read_csv(root / "out" / "metrics.csv")
    assert {"roc_auc", "ece", "brier", "log_loss", "confidence_bias", "sce"} <= set(m["metric"])


def test_risk_with_task_file_numeric(setup):
    root, model, data = setup
    toml = root / "task.toml"
    toml.write_text('preset = "ACSIncome"\nfeatures = ["AGEP", "SEX", "WKHP"]\n')
    out = run("risk", "--data", data, "--task", toml, "--model", model, "--cache", root / "cache",
              "--out", root / "num", "--method", "numeric", "--no-plot", "--n-boot", 0, "--chat")
    assert out.returncode == 0, out.stderr
    assert len(pd.read_csv(root / "num" / "scores.csv")) == 10


def test_risk_bad_input(setup, tmp_path):
    root, model, data = setup
    out = run("risk", "--data", data, "--task", "ACSIncome", "--model", tmp_path / "nope", "--cache",
              tmp_path / "c", "--out", tmp_path / "o")
    assert out.returncode == 1 and "not a local model folder" in out.stderr
    bad = tmp_path / "bad.csv"
    datasets.load_acs_income_rows().drop(columns=["OCCP"]).to_csv(bad, index=False)
    out = run("risk", "--data", bad, "--task", "ACSIncome", "--model", model, "--cache", tmp_path / "c",
              "--out", tmp_path / "o")
    assert out.returncode == 1 and "OCCP" in out.stderr
    out = run("risk", "--data", data, "--task", "NoSuchTask", "--model", model, "--cache", tmp_path / "c",
              "--out", tmp_path / "o")
    assert out.returncode == 1 and "preset" in out.stderr


def test_old_command_name_score_runs_risk_with_a_notice(setup):
    root, model, data = setup
    args = ["--data", data, "--task", "ACSIncome", "--model", model, "--cache", root / "cache", "--n-boot", 20,
            "--no-plot"]
    new = run("risk", *args, "--out", root / "new")
    old = run("score", *args, "--out", root / "old")
    assert new.returncode == 0 and old.returncode == 0, old.stderr
    assert "`llmsurrogate score` is deprecated" in old.stderr and "`llmsurrogate risk`" in old.stderr
    assert "deprecated" not in new.stderr
    for name in ("scores.csv", "metrics.csv"):
        assert (root / "old" / name).read_bytes() == (root / "new" / name).read_bytes()
    listed = run("--help").stdout
    assert " risk " in listed and " score " not in listed


# --- issue 25: a Python study repeats on the command line; the options folktexts' run_acs_benchmark has ------------

from click.testing import CliRunner  # noqa: E402

from llmsurrogate.cli import cli  # noqa: E402
from llmsurrogate.llm.factory import make_backend  # noqa: E402


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A saved SynthIncome task, 40 synthetic rows (14 of label 1), a tiny model and its backend."""
    root = tmp_path_factory.mktemp("study")
    model = testing.build_model(root / "model", "gpt2", seed=11)
    rows = testing.synthetic_census(40, seed=5)
    rows.to_csv(root / "rows.csv", index=False)
    task = testing.synthetic_income_task()
    task.to_toml(root / "synth.toml")
    backend = make_backend("transformers", str(model), device="cpu")
    return root, model, rows, task, backend


def risk_cli(study, out, *args):
    root, model, *_ = study
    res = CliRunner().invoke(cli, ["risk", "--data", str(root / "rows.csv"), "--model", str(model),
                                   "--cache", str(out / "cache"), "--out", str(out / "out"), "--n-boot", "20",
                                   "--no-plot", *map(str, args)])
    return res, out / "out"


def python_scores(study, rows, task=None, **kwargs):
    """The same scores from Python, through a cache of their own (so the command computes its own)."""
    root, _model, _rows, synth, backend = study
    from llmsurrogate.risk import risk_scores

    return risk_scores(rows, task or synth, backend, cache=root / f"py-cache-{len(list(root.iterdir()))}",
                       **kwargs).table["score"].to_numpy()


def test_the_command_on_a_saved_task_gives_pythons_scores(study, tmp_path):
    """Item 6: save the task in Python, score from the command line: the same numbers on the same rows."""
    root, _model, rows, task, _backend = study
    res, out = risk_cli(study, tmp_path, "--task", root / "synth.toml")
    assert res.exit_code == 0, res.output
    scores = pd.read_csv(out / "scores.csv")
    assert json.loads((out / "run.json").read_text())["cache_misses"] == 2 * len(rows)  # computed, not read
    # the scores spread by about 2e-5 (a random tiny model): 1e-12 tells them apart
    np.testing.assert_allclose(scores["score"], python_scores(study, rows), rtol=0, atol=1e-12)
    assert scores["row"].tolist() == list(range(40)) and scores["score"].std() > 1e-6  # not a constant


def test_features_scores_the_task_on_those_columns(study, tmp_path):
    root, _model, rows, task, _backend = study
    res, out = risk_cli(study, tmp_path, "--task", root / "synth.toml", "--features", "SEX,AGEP")
    assert res.exit_code == 0, res.output
    expect = python_scores(study, rows, task.with_features(["AGEP", "SEX"]))
    np.testing.assert_allclose(pd.read_csv(out / "scores.csv")["score"], expect, atol=1e-12)
    assert not np.allclose(expect, python_scores(study, rows), atol=1e-12)  # the subset changed the prompts
    bad, _ = risk_cli(study, tmp_path / "bad", "--task", root / "synth.toml", "--features", "AGEP,OCCP")
    assert bad.exit_code == 1 and "--features" in bad.output and "OCCP" in bad.output


def test_subsample_draws_rows_by_seed(study, tmp_path):
    root, _model, rows, *_ = study
    runs = {}
    for name, args in {"a": ("--subsample", 7, "--seed", 1), "b": ("--subsample", 7, "--seed", 1),
                       "c": ("--subsample", 7, "--seed", 2), "share": ("--subsample", 0.25, "--seed", 1)}.items():
        res, out = risk_cli(study, tmp_path / name, "--task", root / "synth.toml", *args)
        assert res.exit_code == 0, res.output
        runs[name] = pd.read_csv(out / "scores.csv")
    picked = runs["a"]["row"].tolist()
    assert len(picked) == 7 == len(set(picked)) and picked == sorted(picked)
    assert runs["b"]["row"].tolist() == picked and runs["c"]["row"].tolist() != picked
    assert len(runs["share"]) == 10  # 0.25 of 40 rows
    np.testing.assert_allclose(runs["a"]["score"], python_scores(study, rows.iloc[picked]), atol=1e-12)
    too_many, _ = risk_cli(study, tmp_path / "many", "--task", root / "synth.toml", "--subsample", 41)
    assert too_many.exit_code == 1 and "--subsample 41" in too_many.output


def test_few_shot_examples_are_balanced_set_aside_and_shown(study, tmp_path):
    root, _model, rows, task, _backend = study
    res, out = risk_cli(study, tmp_path, "--task", root / "synth.toml", "--few-shot", 4, "--seed", 7)
    assert res.exit_code == 0, res.output
    info = json.loads((out / "run.json").read_text())
    shown = info["few_shot_rows"]
    assert len(shown) == 4 and sorted(rows.loc[shown, "PINCP>50000"]) == [0, 0, 1, 1]  # class-balanced
    scores = pd.read_csv(out / "scores.csv")
    assert set(scores["row"]) == set(range(40)) - set(shown)  # the examples are not scored
    expect = python_scores(study, rows.drop(index=shown), few_shot=rows.loc[shown])
    np.testing.assert_allclose(scores["score"], expect, atol=1e-12)
    assert not np.allclose(expect, python_scores(study, rows.drop(index=shown)), atol=1e-12)
    # a pool with one row of label 1: four balanced examples cannot be drawn; --no-balance draws at random
    pool = pd.concat([rows[rows["PINCP>50000"] == 0].head(10), rows[rows["PINCP>50000"] == 1].head(1)])
    pool.to_csv(tmp_path / "pool.csv", index=False)
    res, _ = risk_cli(study, tmp_path / "short", "--task", root / "synth.toml", "--few-shot", 4, "--train-data",
                      tmp_path / "pool.csv")
    assert res.exit_code == 1 and "--few-shot 4" in res.output and "has 1" in res.output
    res, out = risk_cli(study, tmp_path / "plain", "--task", root / "synth.toml", "--few-shot", 4, "--no-balance",
                        "--train-data", tmp_path / "pool.csv", "--subsample", 3)
    assert res.exit_code == 0, res.output
    assert len(set(json.loads((out / "run.json").read_text())["few_shot_rows"])) == 4


def test_chat_and_few_shot_combine(study, tmp_path):
    root, _model, rows, task, backend = study
    res, out = risk_cli(study, tmp_path, "--task", root / "synth.toml", "--few-shot", 2, "--chat",
                        "--system-prompt", "Answer with one letter.", "--subsample", 5)
    assert res.exit_code == 0, res.output
    info = json.loads((out / "run.json").read_text())
    assert info["chat"] and info["few_shot"] == 2
    scores = pd.read_csv(out / "scores.csv")
    shown, scored = info["few_shot_rows"], scores["row"].tolist()
    expect = python_scores(study, rows.iloc[scored], chat=True, system_prompt="Answer with one letter.",
                           few_shot=rows.loc[shown])
    np.testing.assert_allclose(scores["score"], expect, atol=1e-12)
    from llmsurrogate.llm.scoring import chat_prompt_fn

    ex = rows.loc[shown].to_dict("records")
    render = chat_prompt_fn(backend, task, few_shot=(ex, rows.loc[shown, "PINCP>50000"].tolist()))
    prompt = render(rows.iloc[0].to_dict(), task.question)
    user = prompt.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith(
        "<|im_start|>assistant\nIf had to select one of the options, my answer would be")
    assert user.count("Information:") == 3 and user.count("\nAnswer: ") == 2  # two examples answered, then the row
    assert user.endswith("B. Above $50,000.")


def test_fit_threshold_and_threshold(study, tmp_path):
    root, _model, rows, *_ = study
    res, out = risk_cli(study, tmp_path / "fit", "--task", root / "synth.toml", "--fit-threshold", 12, "--seed", 4)
    assert res.exit_code == 0, res.output
    info = json.loads((out / "run.json").read_text())
    fit = pd.read_csv(out / "threshold_scores.csv")
    assert fit["row"].tolist() == info["threshold_fit"]["rows"] and len(fit) == 12
    # brute force: balanced accuracy of 1{r >= t} at every observed score; the fitted one is a best
    y, r = fit["label"].to_numpy(), fit["score"].to_numpy()

    def bacc(t):
        pred = r >= t
        return (pred[y == 1].mean() + (~pred[y == 0]).mean()) / 2

    t = info["threshold"]
    assert t in r and bacc(t) == pytest.approx(max(bacc(c) for c in r))
    scores = pd.read_csv(out / "scores.csv")
    assert set(scores["row"]).isdisjoint(fit["row"]) and len(scores) == 28
    m = pd.read_csv(out / "metrics.csv").set_index("metric")["value"]
    assert m["accuracy"] == pytest.approx(((scores["score"] >= t) == scores["label"]).mean())
    res, out = risk_cli(study, tmp_path / "fixed", "--task", root / "synth.toml", "--threshold", 0.5000001)
    assert res.exit_code == 0, res.output
    s = pd.read_csv(out / "scores.csv")
    m = pd.read_csv(out / "metrics.csv").set_index("metric")["value"]
    assert m["accuracy"] == pytest.approx(((s["score"] >= 0.5000001) == s["label"]).mean())
    both, _ = risk_cli(study, tmp_path / "both", "--task", root / "synth.toml", "--threshold", 0.5,
                       "--fit-threshold", 3)
    assert both.exit_code == 2 and "not both" in both.output


def test_train_data_supplies_examples_and_seed_sets_the_bootstrap(study, tmp_path):
    root, _model, rows, *_ = study
    train = testing.synthetic_census(30, seed=9)
    train.to_csv(tmp_path / "train.csv", index=False)
    res, out = risk_cli(study, tmp_path / "a", "--task", root / "synth.toml", "--train-data", tmp_path / "train.csv",
                        "--few-shot", 2, "--seed", 5)
    assert res.exit_code == 0, res.output
    info = json.loads((out / "run.json").read_text())
    assert len(pd.read_csv(out / "scores.csv")) == 40  # every row of --data scored
    expect = python_scores(study, rows, few_shot=train.loc[info["few_shot_rows"]])
    np.testing.assert_allclose(pd.read_csv(out / "scores.csv")["score"], expect, atol=1e-12)
    assert info["manifest"]["seeds"] == {"draws": 5, "bootstrap": 5}
    from llmsurrogate.risk import RiskEvaluation, evaluate

    s = pd.read_csv(out / "scores.csv")
    ev = RiskEvaluation.from_json(out / "metrics.json")
    ref = evaluate(s["label"], s["score"], n_boot=20, seed=5)
    pd.testing.assert_frame_equal(ev.metrics, ref.metrics)
    other = evaluate(s["label"], s["score"], n_boot=20, seed=6)
    assert not ev.metrics["ci_low"].equals(other.metrics["ci_low"])  # the seed reaches the bootstrap
    lone, _ = risk_cli(study, tmp_path / "b", "--task", root / "synth.toml", "--train-data", tmp_path / "train.csv")
    assert lone.exit_code == 2 and "--few-shot" in lone.output


def test_variations_and_importance_repeat_python(study, tmp_path):
    """--variations and --importance write what prompt_variations and permutation_importance give in Python."""
    root, _model, rows, task, backend = study
    res, out = risk_cli(study, tmp_path, "--task", root / "synth.toml", "--subsample", 12, "--seed", 2,
                        "--variations", "--importance")
    assert res.exit_code == 0, res.output
    assert "Prompt variations" in res.output and "Permutation feature importance" in res.output
    picked = rows.iloc[pd.read_csv(out / "scores.csv")["row"]]
    from llmsurrogate.risk import permutation_importance, prompt_variations

    var = prompt_variations(picked, task, backend, cache=tmp_path / "py", n_boot=20, seed=2)
    pd.testing.assert_frame_equal(pd.read_csv(out / "variations_metrics.csv"), var.metrics, atol=1e-12)
    pd.testing.assert_frame_equal(pd.read_csv(out / "variations_spread.csv"), var.spread, atol=1e-12)
    imp = permutation_importance(picked, task, backend, cache=tmp_path / "py", n_boot=20, seed=2)
    pd.testing.assert_frame_equal(pd.read_csv(out / "importance.csv"), imp.importance, atol=1e-12)
    assert json.loads((out / "run.json").read_text())["variations"]["variants"] == var.meta["variants"]
    unlabelled = tmp_path / "nolabel.csv"
    rows.drop(columns=["PINCP>50000"]).to_csv(unlabelled, index=False)
    bad = CliRunner().invoke(cli, ["risk", "--data", str(unlabelled), "--task", str(root / "synth.toml"), "--model",
                                   str(_model), "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o"),
                                   "--variations"])
    assert bad.exit_code == 1 and "--variations" in bad.output and "label" in bad.output


def test_chain_of_thought_with_chat_and_few_shot_repeats_python(study, tmp_path):
    root, _model, rows, task, _backend = study
    res, out = risk_cli(study, tmp_path, "--task", root / "synth.toml", "--method", "chain_of_thought",
                        "--max-new-tokens", 6, "--chat", "--few-shot", 2, "--subsample", 4, "--seed", 1)
    assert res.exit_code == 0, res.output
    info = json.loads((out / "run.json").read_text())
    assert info["method"] == "chain_of_thought" and info["max_new_tokens"] == 6 and info["chat"]
    scores = pd.read_csv(out / "scores.csv", keep_default_na=False)
    assert {"reasoning", "stated_score"} <= set(scores.columns)
    shown, scored = info["few_shot_rows"], scores["row"].tolist()
    from llmsurrogate.risk import risk_scores

    py = risk_scores(rows.iloc[scored], task, study[4], "chain_of_thought", cache=tmp_path / "py", chat=True,
                     few_shot=rows.loc[shown], max_new_tokens=6).table
    np.testing.assert_allclose(scores["score"], py["score"], atol=1e-12)
    assert scores["reasoning"].tolist() == py["reasoning"].fillna("").tolist()
    assert info["cache_misses"] == 2 * 4 * 2  # 4 rows x 2 orders, each generated once and answered once


def test_the_documented_combination_runs(study, tmp_path):
    """docs/cli.md's command with every option at once (small numbers): they combine."""
    root, *_ = study
    res, out = risk_cli(study, tmp_path, "--task", root / "synth.toml", "--features", "AGEP,SCHL,WKHP",
                        "--subsample", 3, "--seed", 7, "--few-shot", 2, "--fit-threshold", 4, "--chat",
                        "--method", "chain_of_thought", "--max-new-tokens", 3, "--variations", "--importance")
    assert res.exit_code == 0, res.output
    info = json.loads((out / "run.json").read_text())
    assert info["rows"] == {"data": 40, "scored": 3, "few_shot": 2, "fit_threshold": 4}
    for name in ("scores.csv", "threshold_scores.csv", "metrics.csv", "variations_metrics.csv", "importance.csv"):
        assert (out / name).stat().st_size > 0, name
    assert set(pd.read_csv(out / "importance.csv")["feature"]) == {"AGEP", "SCHL", "WKHP"}


def test_option_errors_use_command_line_words(study, tmp_path):
    root, *_ = study
    cases = [(("--groups", "RACE"), 1, "--groups 'RACE' is not a column of --data rows.csv"),
             (("--no-balance",), 2, "--no-balance applies to --few-shot"),
             (("--system-prompt", "x"), 2, "--system-prompt applies to --chat"),
             (("--variations", "--n-boot", 0), 2, "--n-boot 1 or more"),
             (("--features", " , "), 1, "--features is empty"),
             (("--fit-threshold", 41), 1, "--fit-threshold 41: --data rows.csv has 40 rows left"),
             (("--fit-threshold", 38, "--few-shot", 2), 1, "no rows of --data rows.csv are left to score after the 40"),
             (("--subsample", 2.5), 1, "--subsample 2.5: give a count")]
    for i, (args, code, words) in enumerate(cases):
        res = CliRunner().invoke(cli, ["risk", "--data", str(root / "rows.csv"), "--model", str(root / "model"),
                                       "--task", str(root / "synth.toml"), "--cache", str(tmp_path / f"c{i}"),
                                       "--out", str(tmp_path / f"o{i}"), *map(str, args)])
        assert res.exit_code == code and words in res.output, (args, res.output)
