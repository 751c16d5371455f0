"""``llmsurrogate lookahead lap`` and ``llmsurrogate lookahead test`` (docs/methods/lookahead.md §8.1):
outputs against the Python API and brute-force computations, cache reuse and resumption, clear errors."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from _cli_env import _stored  # rows committed to an LLM cache (the kill tests)
from _samples import make_panel
from click.testing import CliRunner
from llmsurrogate import lookahead
from llmsurrogate.cli import cli
from llmsurrogate.exceptions import LLMSurrogateWarning

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run(args):
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    return res.exit_code, res.output


# --- lookahead test ------------------------------------------------------------------------------


def dummies_ols(frame, terms):
    """Brute force: OLS of ret on the terms plus firm and date dummies (no absorption)."""
    X = [np.prod([frame[c].to_numpy(float) for c in t.split(":")], axis=0) for t in terms]
    F = pd.get_dummies(frame["firm"].astype(str), drop_first=False).to_numpy(float)
    D = pd.get_dummies(frame["date"].astype(str), drop_first=True).to_numpy(float)
    A = np.column_stack(X + [F, D])
    beta, *_ = np.linalg.lstsq(A, frame["ret"].to_numpy(float), rcond=None)
    return beta[: len(terms)]


def test_test_command_writes_table_json_and_figure(tmp_path):
    frame = make_panel()
    data = tmp_path / "panel.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "out"
    code, text = run(["lookahead", "test", "--data", str(data), "--outcome", "ret", "--signal", "llm", "--lap", "lap",
                      "--fe", "firm,date", "--cluster", "date", "--n-boot", "200", "--seed", "5", "--out", str(out)])
    assert code == 0, text
    api = lookahead.lookahead_test(frame, "ret", "llm", "lap", fe=["firm", "date"], cluster="date")
    saved = lookahead.LookaheadTest.load(out / "lookahead_test.json")
    assert saved.estimate == pytest.approx(api.estimate, rel=1e-12)
    assert saved.std_error == pytest.approx(api.std_error, rel=1e-12)
    # the coefficient against OLS with explicit dummies
    brute = dummies_ols(frame, ["llm", "lap", "llm:lap"])
    assert api.estimate == pytest.approx(brute[2], rel=1e-8)
    assert api.estimate > 0 and api.p_greater < 1e-3  # the planted delta = 0.3 is found
    table = (out / "lookahead_table.txt").read_text()
    assert table.strip() == api.etable(type="text").strip()
    assert f"{api.estimate:.3f}" in table and "llm:lap" in table
    assert "\\begin{tabular}" in (out / "lookahead_table.tex").read_text()
    boot = lookahead.LookaheadBootstrap.load(out / "lookahead_bootstrap.json")
    api_boot = lookahead.bootstrap(frame, "ret", "llm", "lap", n_boot=200, seed=5)
    np.testing.assert_array_equal(boot.draws, api_boot.draws)
    assert (out / "lookahead_bootstrap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"p = #{{draws <= 0}}/B = {api_boot.p_value:.4g}" in text


def test_test_command_options(tmp_path):
    frame = make_panel(seed=1)
    data = tmp_path / "panel.parquet"
    frame.to_parquet(data)
    out = tmp_path / "out"
    code, text = run(["lookahead", "test", "--data", str(data), "--outcome", "ret", "--signal", "llm", "--lap", "lap",
                      "--cluster", "none", "--controls", "small,llm:small", "--standardize", "--out", str(out)])
    assert code == 0, text
    api = lookahead.lookahead_test(frame, "ret", "llm", "lap", cluster=None, controls=["small", "llm:small"],
                                   standardize=True)
    saved = lookahead.LookaheadTest.load(out / "lookahead_test.json")
    assert saved.estimate == pytest.approx(api.estimate, rel=1e-12)
    assert saved.cluster is None and saved.standardized is True
    assert not (out / "lookahead_bootstrap.json").exists()
    # block bootstrap by date with a reference value
    code, text = run(["lookahead", "test", "--data", str(data), "--outcome", "ret", "--signal", "llm", "--lap", "lap",
                      "--n-boot", "50", "--resample", "date", "--reference", "0.25", "--no-plot", "--out",
                      str(tmp_path / "b")])
    assert code == 0, text
    boot = lookahead.LookaheadBootstrap.load(tmp_path / "b" / "lookahead_bootstrap.json")
    assert boot.resample == "date" and boot.reference == 0.25 and boot.n_blocks == frame["date"].nunique()
    assert not (tmp_path / "b" / "lookahead_bootstrap.png").exists()


def test_test_command_old_bootstrap_option_still_works(tmp_path):
    data = tmp_path / "panel.csv"
    make_panel(n=400, n_firms=30, n_dates=15).to_csv(data, index=False)
    base = ["lookahead", "test", "--data", str(data), "--outcome", "ret", "--signal", "llm", "--lap", "lap",
            "--seed", "3", "--no-plot"]
    old = CliRunner().invoke(cli, base + ["--bootstrap", "20", "--out", str(tmp_path / "old")], catch_exceptions=False)
    assert old.exit_code == 0, old.output
    assert "--bootstrap is deprecated" in old.stderr and "use --n-boot" in old.stderr
    new = CliRunner().invoke(cli, base + ["--n-boot", "20", "--out", str(tmp_path / "new")], catch_exceptions=False)
    assert "deprecated" not in new.stderr
    a, b = (lookahead.LookaheadBootstrap.load(tmp_path / d / "lookahead_bootstrap.json") for d in ("old", "new"))
    np.testing.assert_array_equal(a.draws, b.draws)
    both = CliRunner().invoke(cli, base + ["--bootstrap", "20", "--n-boot", "20", "--out", str(tmp_path / "both")])
    assert both.exit_code == 2 and "give only --n-boot" in both.output


@pytest.mark.parametrize("args,message", [
    (["--outcome", "return"], "--outcome 'return' is not a column of --data panel.csv"),
    (["--signal", "lmm"], r"--signal 'lmm' is not a column.*did you mean --signal llm\?"),
    (["--fe", "firm,day"], "--fe 'day' is not a column"),
    (["--cluster", "week"], "--cluster 'week' is not a column"),
    (["--controls", "small,llm:size"], "--controls 'size' is not a column"),
    (["--reference", "0.1"], "--reference applies to the bootstrap; add --n-boot"),
    (["--n-boot", "10", "--resample", "industry"], "--resample 'industry' is not a column"),
])
def test_test_command_errors_name_the_option(tmp_path, args, message):
    import re

    data = tmp_path / "panel.csv"
    make_panel(n=300, n_firms=20, n_dates=10).to_csv(data, index=False)
    base = {"--outcome": "ret", "--signal": "llm", "--lap": "lap"}
    for i in range(0, len(args), 2):
        base[args[i]] = args[i + 1]
    code, text = run(["lookahead", "test", "--data", str(data), "--out", str(tmp_path / "o")] +
                     [x for kv in base.items() for x in kv])
    assert code == 1 and re.search(message, text.replace("\n", " ")), text
    assert "Traceback" not in text


# --- lookahead lap -------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llmsurrogate import testing  # noqa: E402
from llmsurrogate.llm.hf import TransformersBackend  # noqa: E402

TEXTS = ["The age is: 40 years old. The occupation is: manager.", "- The sex is: Female.",
         "The person works 40 hours per week in a private company and holds a bachelor degree."]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return testing.build_model(tmp_path_factory.mktemp("cli_lap") / "llama", "llama", seed=7)


def by_hand_lap(backend, text, k=0.2):
    ids = backend.tokenizer(text, add_special_tokens=True)["input_ids"]
    with torch.no_grad():
        logits = backend.model(input_ids=torch.tensor([ids])).logits[0, :, : backend.vocab_size].double()
    lp = torch.log_softmax(logits, -1)[:-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].numpy()
    kk = max(1, int(len(lp) * k))
    return float(np.exp(np.sort(lp)[:kk].mean()))


def test_lap_command_appends_lap_and_resumes_from_the_cache(model, tmp_path):
    frame = pd.DataFrame({"id": [1, 2, 3], "headline": TEXTS, "x": [0.5, 1.5, 2.5]})
    part = tmp_path / "part.csv"
    frame.iloc[:2].to_csv(part, index=False)
    data = tmp_path / "texts.csv"
    frame.to_csv(data, index=False)
    cache = tmp_path / "cache"
    # a first run on two texts (as if a run over all three had been killed after two)
    code, text = run(["lookahead", "lap", "--model", str(model), "--data", str(part), "--text-column", "headline",
                      "--out", str(tmp_path / "part_out.csv"), "--cache", str(cache), "--device", "cpu"])
    assert code == 0, text
    assert "0 texts reused, 2 computed" in text
    out = tmp_path / "lap.csv"
    code, text = run(["lookahead", "lap", "--model", str(model), "--data", str(data), "--text-column", "headline",
                      "--out", str(out), "--cache", str(cache), "--device", "cpu"])
    assert code == 0, text
    assert "2 texts reused, 1 computed" in text
    got = pd.read_csv(out)
    assert list(got.columns) == ["id", "headline", "x", "lap"]
    pd.testing.assert_frame_equal(got.drop(columns="lap"), frame)
    backend = TransformersBackend(model, device="cpu")
    np.testing.assert_allclose(got["lap"], lookahead.lap(TEXTS, backend), rtol=1e-6)
    for i, t in enumerate(TEXTS):
        assert got["lap"][i] == pytest.approx(by_hand_lap(backend, t), rel=5e-5)
    # a rerun, and another K/method on the same texts: nothing computed
    code, text = run(["lookahead", "lap", "--model", str(model), "--data", str(data), "--text-column", "headline",
                      "--out", str(tmp_path / "k5.parquet"), "--cache", str(cache), "--k", "0.5", "--method", "mean",
                      "--column", "lap_mean", "--details", "--device", "cpu"])
    assert code == 0, text
    assert "3 texts reused, 0 computed" in text
    k5 = pd.read_parquet(tmp_path / "k5.parquet")
    np.testing.assert_allclose(k5["lap_mean"], lookahead.lap(TEXTS, backend, method="mean"), rtol=1e-6)
    assert (k5["lap_mean_k"] == k5["lap_mean_n_scored"]).all()  # method mean: every token
    # the default cache sits next to --out
    code, text = run(["lookahead", "lap", "--model", str(model), "--data", str(data), "--text-column", "headline",
                      "--out", str(tmp_path / "d.csv"), "--device", "cpu"])
    assert code == 0 and (tmp_path / "d.csv.cache" / "llm_cache.sqlite").exists()


def test_lap_command_errors(model, tmp_path):
    data = tmp_path / "t.csv"
    pd.DataFrame({"headline": ["Some text here.", None], "lap": [1, 2]}).to_csv(data, index=False)
    common = ["lookahead", "lap", "--model", str(model), "--data", str(data), "--device", "cpu"]
    code, text = run(common + ["--text-column", "title", "--out", str(tmp_path / "o.csv")])
    assert code == 1 and "--text-column 'title' is not a column of --data t.csv" in text
    assert not (tmp_path / "o.csv.cache").exists()  # nothing created before the checks
    code, text = run(common + ["--text-column", "headline", "--out", str(tmp_path / "o.csv"), "--column", "lap"])
    assert code == 1 and "already has a column 'lap'" in text and "--column" in text
    code, text = run(common + ["--text-column", "headline", "--out", str(tmp_path / "o.csv"), "--column", "score"])
    assert code == 1 and "1 of 2 rows have no text" in text and "row 2" in text
    for k, hint in (("20", "did you mean --k 0.2"), ("0", "outside (0, 1]"), ("-0.1", "outside (0, 1]")):
        code, text = run(common + ["--text-column", "headline", "--out", str(tmp_path / "o.csv"), "--k", k])
        assert code == 2 and "--k" in text and hint in text, text
    code, text = run(common + ["--text-column", "headline", "--out", str(tmp_path / "o.json")])
    assert code == 1 and "write .csv or .parquet" in text
    code, text = run(common + ["--text-column", "headline", "--out", str(data)])
    assert code == 1 and "--out" in text


def test_lap_command_answer_method(model, tmp_path):
    queries = [lookahead.recall_prompt("2020-07-28", "Eastman Kodak Company", "KODK"),
               lookahead.recall_prompt("2021-03-02", "Acme Corp", "ACME")]
    data = tmp_path / "q.csv"
    pd.DataFrame({"query": queries}).to_csv(data, index=False)
    code, text = run(["lookahead", "lap", "--model", str(model), "--data", str(data), "--text-column", "query",
                      "--out", str(tmp_path / "a.csv"), "--method", "answer", "--answers", "A,B", "--device", "cpu"])
    assert code == 0, text
    got = pd.read_csv(tmp_path / "a.csv")["lap"].to_numpy()
    want = lookahead.answer_lap(queries, TransformersBackend(model, device="cpu"), ["A", "B"])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert ((got > 0) & (got < 1)).all()
    code, text = run(["lookahead", "lap", "--model", str(model), "--data", str(data), "--text-column", "query",
                      "--out", str(tmp_path / "b.csv"), "--answers", "A,B", "--device", "cpu"])
    assert code == 1 and "--answers applies to --method answer only" in text



@pytest.mark.slow
def test_lap_command_killed_during_scoring_resumes(model, tmp_path):
    """A real subprocess SIGKILLed after its first cache commit: no output file, and the rerun
    scores only the texts not stored yet and writes the same bytes as an uninterrupted run."""
    import re
    import shutil
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    exe = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    texts = [f"{t} Row {i}." for i in range(70) for t in TEXTS[:3]][:200]
    data = tmp_path / "many.csv"
    pd.DataFrame({"text": texts}).to_csv(data, index=False)
    args = [exe, "lookahead", "lap", "--model", str(model), "--data", str(data), "--text-column", "text",
            "--device", "cpu", "--batch-size", "8"]
    ref = subprocess.run(args + ["--out", str(tmp_path / "ref.csv")], capture_output=True, text=True, env=env,
                         timeout=600)
    assert ref.returncode == 0, ref.stderr[-2000:]
    cache = tmp_path / "kill-cache"
    out = tmp_path / "kill.csv"
    proc = subprocess.Popen(args + ["--out", str(out), "--cache", str(cache)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    deadline = time.time() + 300
    while _stored(cache) < 1 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = _stored(cache)
    assert done >= 1
    if done < len(texts):
        assert not out.exists()
    rerun = subprocess.run(args + ["--out", str(out), "--cache", str(cache)], capture_output=True, text=True, env=env,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert re.search(rf"{done} texts reused, {len(texts) - done} computed", rerun.stdout), rerun.stdout
    assert out.read_bytes() == (tmp_path / "ref.csv").read_bytes()


def test_test_command_reports_dropped_rows(tmp_path):
    frame = make_panel(n=600, n_firms=30, n_dates=20, seed=4)
    frame.loc[[3, 10, 11], "lap"] = np.nan
    data = tmp_path / "p.csv"
    frame.to_csv(data, index=False)
    with pytest.warns(LLMSurrogateWarning, match="3 row"):
        res = CliRunner().invoke(cli, ["lookahead", "test", "--data", str(data), "--outcome", "ret", "--signal", "llm",
                                       "--lap", "lap", "--out", str(tmp_path / "o")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "note: 3 row(s) dropped for missing values" in res.output
    saved = lookahead.LookaheadTest.load(tmp_path / "o" / "lookahead_test.json")
    assert saved.nobs == 597 and saved.n_dropped == 3 and saved.n_input == 600
    assert "597" in (tmp_path / "o" / "lookahead_table.txt").read_text()
    want = lookahead.lookahead_test(frame.dropna(), "ret", "llm", "lap")
    assert saved.estimate == pytest.approx(want.estimate, rel=1e-12)
