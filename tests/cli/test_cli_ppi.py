"""`llmsurrogate ppi` (issue 36 §5): the command on one file of labelled rows (a human answer in
--y) and unlabelled rows (that cell empty) gives the Python API's numbers, writes the table, the
result's JSON (read back equal), the figure and run.json, and refuses bad input in command-line
words naming the option and the file's data row."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from llmsurrogate import ppi
from llmsurrogate.cli import cli
from llmsurrogate.ppi import PPIResult

N_LAB = 250


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(7)
    m = 1800
    d = pd.DataFrame({"x": rng.normal(size=m), "g": rng.choice(["a", "b", "c"], m), "firm": rng.integers(0, 12, m),
                      "w": rng.uniform(0.5, 2.0, m)})
    d["y"] = 1 + 2 * d["x"] + (d["g"] == "b") + 0.1 * d["firm"] + rng.normal(size=m)
    d["llm"] = d["y"] + rng.normal(scale=0.7, size=m)
    d["yes"] = (d["y"] > 1.5).astype(float)
    d["p"] = 1 / (1 + np.exp(-1.5 * (d["llm"] - 1.5)))
    mu = np.exp(0.3 + 0.4 * d["x"])
    d["count"] = rng.poisson(mu).astype(float)
    d["llm_count"] = mu * np.exp(rng.normal(scale=0.2, size=m))
    for col in ("y", "yes", "count"):
        d.loc[N_LAB:, col] = np.nan  # the unlabelled rows: no human answer
    return d


@pytest.fixture()
def data(rows, tmp_path):
    path = tmp_path / "answers.csv"
    rows.to_csv(path, index=False)
    return path


def run(*args):
    res = CliRunner().invoke(cli, ["ppi", *[str(a) for a in args]])
    err = res.stderr if res.stderr_bytes is not None else ""
    return res, res.output if err in res.output else res.output + err  # click >= 8.2 mixes stderr into output


def lab(rows, col):
    return rows[col].to_numpy(float)[:N_LAB]


def unl(rows, col):
    return rows[col].to_numpy(float)[N_LAB:]


def check_outputs(out, api: PPIResult, tol=1e-12, same_terms=True):
    table = pd.read_csv(out / "ppi_table.csv")
    for col in ("estimate", "std_error", "ci_low", "ci_high", "lam", "effective_n", "classical_ci_low",
                "classical_ci_high"):
        np.testing.assert_allclose(table[col].to_numpy(float), api.table[col].to_numpy(float), rtol=tol, atol=tol,
                                   err_msg=col)
    back = PPIResult.from_json((out / "ppi_result.json").read_text())
    assert back.n == api.n and back.N == api.N and back.method == api.method and back.estimand == api.estimand
    if same_terms:
        assert back.terms == api.terms
    np.testing.assert_allclose(back.table["estimate"], api.table["estimate"], rtol=tol, atol=tol)
    assert (out / "ppi_plot.png").stat().st_size > 5_000
    record = json.loads((out / "run.json").read_text())
    assert record["n"] == N_LAB and record["N"] == api.N and record["manifest"]["inputs"]
    return back


@pytest.mark.parametrize("method", ["ppi++", "ppi", "classical"])
def test_mean_equals_the_api(rows, data, tmp_path, method):
    res, text = run("--data", data, "--y", "y", "--prediction", "llm", "--method", method, "--level", 0.9,
                    "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    api = ppi.mean(lab(rows, "y"), lab(rows, "llm"), unl(rows, "llm"), method=method, level=0.9)
    back = check_outputs(tmp_path / "o", api)
    assert back == api  # the same computation: the JSON reads back as the API's result itself
    assert f"{N_LAB} labelled rows" in text and "1550 unlabelled rows" in text
    assert "Prediction-powered inference: mean" in text


def test_mean_with_weights_and_clusters_equals_the_api(rows, data, tmp_path):
    res, text = run("--data", data, "--y", "y", "--prediction", "llm", "--weights", "w", "--cluster", "firm",
                    "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    api = ppi.mean(lab(rows, "y"), lab(rows, "llm"), unl(rows, "llm"), weights=lab(rows, "w"),
                   weights_unlabeled=unl(rows, "w"), cluster=rows["firm"].to_numpy()[:N_LAB],
                   cluster_unlabeled=rows["firm"].to_numpy()[N_LAB:])
    back = check_outputs(tmp_path / "o", api)
    assert back.weighted and back.clustered


def test_quantile_equals_the_api_and_defaults_to_ppi(rows, data, tmp_path):
    res, text = run("--data", data, "--y", "y", "--prediction", "llm", "--estimand", "quantile", "--q", 0.3,
                    "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    api = ppi.quantile(lab(rows, "y"), lab(rows, "llm"), unl(rows, "llm"), 0.3)
    back = check_outputs(tmp_path / "o", api)
    assert back.method == "ppi" and back.q == 0.3


@pytest.mark.parametrize("method", ["ppi", "classical"])
def test_quantile_with_clusters_and_weights_equals_the_api(rows, data, tmp_path, method):
    res, text = run("--data", data, "--y", "y", "--prediction", "llm", "--estimand", "quantile", "--q", 0.3,
                    "--method", method, "--weights", "w", "--cluster", "firm", "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    kw = {"method": method, "weights": lab(rows, "w"), "weights_unlabeled": unl(rows, "w")}
    api = ppi.quantile(lab(rows, "y"), lab(rows, "llm"), unl(rows, "llm"), 0.3, **kw,
                       cluster=rows["firm"].to_numpy()[:N_LAB], cluster_unlabeled=rows["firm"].to_numpy()[N_LAB:])
    back = check_outputs(tmp_path / "o", api)
    assert back.clustered and back.weighted and back.q == 0.3
    plain = ppi.quantile(lab(rows, "y"), lab(rows, "llm"), unl(rows, "llm"), 0.3, **kw)
    assert (api.ci_low, api.ci_high) != (plain.ci_low, plain.ci_high)  # the clusters reached the interval


def _design(rows):
    X = pd.DataFrame({"Intercept": 1.0, "x": rows["x"], "C(g)[T.b]": (rows["g"] == "b").astype(float),
                      "C(g)[T.c]": (rows["g"] == "c").astype(float)})
    return X.iloc[:N_LAB].reset_index(drop=True), X.iloc[N_LAB:].reset_index(drop=True)


def test_ols_with_a_formula_equals_the_api_on_the_explicit_design(rows, data, tmp_path):
    res, text = run("--data", data, "--prediction", "llm", "--formula", "y ~ x + C(g)", "--coord", "x",
                    "--weights", "w", "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    X, Xu = _design(rows)
    api = ppi.ols(X, lab(rows, "y"), lab(rows, "llm"), Xu, unl(rows, "llm"), coord="x", weights=lab(rows, "w"),
                  weights_unlabeled=unl(rows, "w"))
    back = check_outputs(tmp_path / "o", api, tol=1e-10)
    assert back.terms == ["Intercept", "x", "C(g)[T.b]", "C(g)[T.c]"] and back.coord == "x"


@pytest.mark.parametrize("estimand, y, pred", [("logistic", "yes", "p"), ("poisson", "count", "llm_count")])
def test_glms_equal_the_api(rows, data, tmp_path, estimand, y, pred):
    res, text = run("--data", data, "--y", y, "--prediction", pred, "--estimand", estimand, "--formula",
                    f"{y} ~ x", "--cluster", "firm", "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    X = pd.DataFrame({"Intercept": 1.0, "x": rows["x"]})
    fn = getattr(ppi, estimand)
    api = fn(X.iloc[:N_LAB], lab(rows, y), lab(rows, pred), X.iloc[N_LAB:].reset_index(drop=True),
             unl(rows, pred), cluster=rows["firm"].to_numpy()[:N_LAB], cluster_unlabeled=rows["firm"].to_numpy()[N_LAB:])
    check_outputs(tmp_path / "o", api, tol=1e-10)


def test_fixed_effects_formula_runs_ppi_feols(rows, data, tmp_path):
    res, text = run("--data", data, "--y", "y", "--prediction", "llm", "--formula", "y ~ x | firm", "--cluster",
                    "firm", "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    labeled, unlabeled = rows.iloc[:N_LAB].reset_index(drop=True), rows.iloc[N_LAB:].reset_index(drop=True)
    api = ppi.feols("y ~ x | firm", labeled, unlabeled, prediction="llm", vcov={"CRV1": "firm"})
    back = check_outputs(tmp_path / "o", api)
    assert back.estimand == "feols" and back.terms == ["x"]


def test_parquet_input_and_no_plot(rows, tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "answers.parquet"
    rows.to_parquet(path)
    res, text = run("--data", path, "--y", "y", "--prediction", "llm", "--no-plot", "--out", tmp_path / "o")
    assert res.exit_code == 0, text
    assert not (tmp_path / "o" / "ppi_plot.png").exists()
    api = ppi.mean(lab(rows, "y"), lab(rows, "llm"), unl(rows, "llm"))
    assert PPIResult.from_json((tmp_path / "o" / "ppi_result.json").read_text()) == api


def _bad(rows, tmp_path, change):
    d = rows.copy()
    change(d)
    path = tmp_path / "bad.csv"
    d.to_csv(path, index=False)
    return path


def _set(col, row, value):
    def change(d):
        if isinstance(value, str):
            d[col] = d[col].astype(object)
        d.loc[row, col] = value
    return change


def _run_expecting_error(path, tmp_path, args, words) -> str:
    """Run the command with ``--y y --prediction llm`` unless ``args`` names them; it must fail with
    one error in command-line words holding every one of ``words`` and write no table."""
    base = {"--y": "y", "--prediction": "llm"}
    for opt in ("--y", "--prediction"):
        if opt in args:
            base.pop(opt)
    argv = [a for kv in base.items() for a in kv] + list(args)
    res, text = run("--data", path, *argv, "--out", tmp_path / "o")
    assert res.exit_code == 1, text
    assert "Traceback" not in text and text.count("Error:") == 1, text
    for w in words:
        assert w in text, (w, text)
    assert not (tmp_path / "o" / "ppi_table.csv").exists()
    return text


@pytest.mark.parametrize("args, change, words", [
    (["--y", "human"], None, ["--y 'human' is not a column of --data"]),
    (["--prediction", "gpt"], None, ["--prediction 'gpt' is not a column of --data"]),
    (["--weights", "wt"], None, ["--weights 'wt' is not a column"]),
    (["--cluster", "school"], None, ["--cluster 'school' is not a column"]),
    ([], lambda d: d.__setitem__("y", np.nan), ["--y 'y'", "no labelled rows"]),
    ([], lambda d: d.__setitem__("y", 1.0), ["--y 'y'", "no unlabelled rows"]),
    ([], _set("y", 4, "yes"), ["--y 'y'", "data row 5", "'yes'", "not a number"]),
    ([], _set("llm", 900, np.nan), ["--prediction 'llm'", "data row 901", "empty cell"]),
    ([], _set("llm", 3, "about 2"), ["--prediction 'llm'", "data row 4", "'about 2'", "not a number"]),
    (["--weights", "w"], _set("w", 7, 0.0), ["--weights 'w'", "data row 8", "positive"]),
    (["--weights", "w"], _set("w", 1000, -1.0), ["--weights 'w'", "data row 1001", "positive"]),
    (["--cluster", "firm"], _set("firm", 2, np.nan), ["--cluster 'firm'", "data row 3", "no cluster id"]),
    (["--formula", "y ~ x + z"], None, ["--formula", "'z' is not a column"]),
    (["--formula", "y ~ x"], _set("x", 1200, np.nan), ["--formula", "column 'x'", "data row 1201"]),
    (["--formula", "llm ~ x"], None, ["--formula", "outcome", "--y column 'y'"]),
    (["--estimand", "ols"], None, ["--estimand ols needs --formula"]),
    (["--formula", "y ~ x", "--estimand", "mean"], None, ["--formula is for the regressions"]),
    (["--estimand", "logistic", "--formula", "y ~ x | firm"], None, ["fixed effects", "--estimand ols"]),
    (["--estimand", "quantile", "--method", "ppi++"], None, ["--method ppi++", "no power tuning"]),
    (["--q", "0.3"], None, ["--q", "--estimand quantile"]),
    (["--coord", "x"], None, ["--coord", "--method ppi++"]),
    (["--formula", "y ~ x", "--coord", "z"], None, ["--coord", "'z'"]),
])
def test_bad_input_is_an_error_in_command_line_words(rows, data, tmp_path, args, change, words):
    _run_expecting_error(data if change is None else _bad(rows, tmp_path, change), tmp_path, args, words)


def test_level_out_of_range_is_a_usage_error(data, tmp_path):
    res, text = run("--data", data, "--y", "y", "--prediction", "llm", "--level", 1.5, "--out", tmp_path / "o")
    assert res.exit_code == 2 and "--level" in text


def _labelled(col, values):
    """Set ``col`` on the labelled rows (the first N_LAB) to ``values(d)`` (a function of the frame)."""
    def change(d):
        d.loc[:N_LAB - 1, col] = values(d)[:N_LAB]
    return change


def _guess(d):
    """0/1 predictions: right on every labelled row, separated by x on the unlabelled rows."""
    d["guess"] = np.where(np.arange(len(d)) < N_LAB, d["yes"], (d["x"] > 0.3).astype(float))


@pytest.mark.parametrize("args, change, words", [
    # all-equal y: refused by every estimator, each with its reason (docs/methods/ppi.md §1.5)
    ([], _labelled("y", lambda d: np.full(len(d), 2.0)), ["--y 'y' has the same value (2)", "width 0"]),
    (["--estimand", "quantile"], _labelled("y", lambda d: np.full(len(d), 2.0)),
     ["--y 'y' has the same value (2)", "the classical interval is that one value"]),
    (["--formula", "y ~ x"], _labelled("y", lambda d: np.full(len(d), 2.0)),
     ["--y 'y' has the same value (2)", "the classical fit is exact"]),
    (["--y", "yes", "--prediction", "p", "--formula", "yes ~ x", "--estimand", "logistic"],
     _labelled("yes", lambda d: np.zeros(len(d))), ["--y 'yes' has the same value (0)", "no finite fit"]),
    # perfectly separated logistic data, for every method
    *[(["--y", "yes", "--prediction", "p", "--formula", "yes ~ x", "--estimand", "logistic", "--method", m],
       _labelled("yes", lambda d: (d["x"] > 0).astype(float).to_numpy()),
       ["--y 'yes'", "no finite fit", "perfectly separated", "the columns of --formula"])
      for m in ("classical", "ppi", "ppi++")],
    (["--y", "yes", "--prediction", "guess", "--formula", "yes ~ x", "--estimand", "logistic", "--method", "ppi"],
     _guess, ["--prediction 'guess' (unlabelled rows)", "no finite minimiser", "--method classical"]),
    # values the GLMs cannot take, named by option and data row (not a 0-based row of the labelled subset)
    (["--y", "yes", "--formula", "yes ~ x", "--prediction", "p", "--estimand", "logistic"], _set("yes", 3, 1.5),
     ["--y 'yes'", "data row 4", "in [0, 1] for --estimand logistic"]),
    (["--y", "yes", "--formula", "yes ~ x", "--prediction", "p", "--estimand", "logistic"], _set("p", 1200, 1.2),
     ["--prediction 'p'", "data row 1201", "in [0, 1]"]),
    (["--y", "count", "--formula", "count ~ x", "--prediction", "llm_count", "--estimand", "poisson"],
     _set("llm_count", 900, -0.5), ["--prediction 'llm_count'", "data row 901", ">= 0 for --estimand poisson"]),
])
def test_issue_36_bad_input_in_command_line_words(rows, tmp_path, args, change, words):
    text = _run_expecting_error(_bad(rows, tmp_path, change), tmp_path, args, words)
    for python_word in ("`y`", "`yhat", "`X", "method='", "row 0 ", "position 0"):
        assert python_word not in text, (python_word, text)


def test_a_formula_without_intercept_is_a_regression_through_the_origin(rows, data, tmp_path):
    """The command's formula decides the intercept, as in R: "- 1" removes it (the API refuses an X
    without a constant unless told; the command tells it)."""
    res, text = run("--data", data, "--formula", "y ~ x - 1", "--prediction", "llm", "--out", tmp_path / "o",
                    "--no-plot")
    assert res.exit_code == 0, text
    api = ppi.ols(lab(rows, "x")[:, None], lab(rows, "y"), lab(rows, "llm"), unl(rows, "x")[:, None],
                  unl(rows, "llm"), intercept=False)
    table = pd.read_csv(tmp_path / "o" / "ppi_table.csv")
    assert table["term"].tolist() == ["x"]
    np.testing.assert_allclose(table["estimate"], api.estimate, rtol=0, atol=1e-10)
    np.testing.assert_allclose(table["std_error"], api.se, rtol=0, atol=1e-10)
