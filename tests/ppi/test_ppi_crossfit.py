"""``ppi.crossfit``: cross-prediction-powered inference (docs/methods/ppi.md §11).

* against ppi_py 0.2.3's ``crossppi_mean_ci`` / ``crossppi_ols_ci`` / ``crossppi_logistic_ci`` on the
  cases of tests/ppi/data/crossppi_cases.json (written by tests/ppi/make_crossppi_cases.py in the
  ppi_py venv; the data, folds and models are made again here, ppi_py is not imported); for OLS
  the estimate, with the interval from each fit's own variance (tests/ppi/ppi_ols_reference.py);
* coverage of the 90% interval over repeated samples at a fixed seed;
* fold handling, classifiers, pairing by label and the errors that name the argument.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from make_crossppi_cases import fold_ids, make_inputs, model
from ppi_ols_reference import ols_interval
from sklearn.linear_model import LinearRegression, LogisticRegression

from llmsurrogate import ppi
from llmsurrogate.exceptions import InvalidArgumentError, ShapeError
from llmsurrogate.ppi._crossfit import check_folds, cross_predictions

FIXTURE = json.loads((Path(__file__).parent / "data" / "crossppi_cases.json").read_text())
CASES = {c["id"]: c for c in FIXTURE["cases"]}


def test_the_fixture_is_ppi_py_0_2_3():
    assert FIXTURE["ppi_python"] == "0.2.3"
    assert {c["data"]["estimand"] for c in CASES.values()} == {"mean", "ols", "logistic"}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_crossfit_equals_ppi_py_crossppi(case_id):
    case = CASES[case_id]
    spec = case["data"]
    a = make_inputs(spec)
    folds = fold_ids(spec)
    binary = spec["kind"] == "logistic"
    # the cross-fitted predictions are ppi_py's inputs: the same to rounding
    yhat, Yu, _ = cross_predictions(model(spec), a["X"], a["y"], a["X_unlabeled"], folds)
    tol_pred = 1e-6 if binary else 1e-9
    assert yhat.sum() == pytest.approx(case["predictions"]["yhat_sum"], abs=tol_pred * len(yhat))
    assert (yhat ** 2).sum() == pytest.approx(case["predictions"]["yhat_sq_sum"], rel=1e-9 if not binary else 1e-6)
    np.testing.assert_allclose(Yu.sum(axis=0), case["predictions"]["Yhat_unlabeled_col_sums"], rtol=1e-7,
                               atol=tol_pred * Yu.shape[0])
    level = 1 - case["alpha"]
    if spec["estimand"] == "mean":
        res = ppi.crossfit(model(spec), a["X"], a["y"], a["X_unlabeled"], folds=folds, level=level)
    else:
        res = ppi.crossfit(model(spec), a["X"], a["y"], a["X_unlabeled"], estimand=spec["estimand"],
                           regressors=a["Z"], regressors_unlabeled=a["Z_unlabeled"], folds=folds, level=level)
    exp = case["expected"]
    tol = 1e-5 if binary else 1e-9
    np.testing.assert_allclose(np.atleast_1d(res.estimate), exp["estimate"], atol=tol)
    if spec["estimand"] == "ols":
        # the interval: each least-squares fit's own variance (docs/methods/ppi.md §3.2; ppi_py's pooled
        # sandwich overstates it, §7 item 14), written out on the cross-fitted predictions
        low, high, _ = ols_interval(a["Z"], a["y"], yhat, a["Z_unlabeled"], Yu.mean(axis=1), 1.0, case["alpha"])
        np.testing.assert_allclose(res.ci_low, low, atol=1e-10)
        np.testing.assert_allclose(res.ci_high, high, atol=1e-10)
        assert not np.allclose(res.ci_high - res.ci_low, np.array(exp["ci_high"]) - exp["ci_low"], rtol=1e-4)
    else:
        np.testing.assert_allclose(np.atleast_1d(res.ci_low), exp["ci_low"], atol=tol)
        np.testing.assert_allclose(np.atleast_1d(res.ci_high), exp["ci_high"], atol=tol)
    assert res.method == "ppi" and res.lam == 1.0
    assert any("cross-prediction" in note for note in res.notes)


def test_crossfit_is_ppi_on_the_cross_fitted_predictions():
    a = make_inputs({"kind": "linear", "seed": 3, "n": 150, "N": 1200})
    yhat, Yu, _ = cross_predictions(LinearRegression(), a["X"], a["y"], a["X_unlabeled"], 10, random_state=7)
    for method in ("ppi", "ppi++", "classical"):
        got = ppi.crossfit(LinearRegression(), a["X"], a["y"], a["X_unlabeled"], random_state=7, method=method)
        want = ppi.mean(a["y"], yhat, Yu.mean(axis=1), method=method)
        pd.testing.assert_frame_equal(got.table, want.table)


def test_coverage_of_the_cross_prediction_interval():
    """90% intervals for the mean over 300 samples (n = 120, N = 1500, a misspecified linear model
    of a nonlinear outcome): the share that covers the true mean is within 3.5 binomial standard
    errors of 0.90 (the seed is fixed, so this is one deterministic draw; it fails if the
    variance were, e.g., the plain PPI one ignoring the folds' dependence badly, or halved)."""
    rng = np.random.default_rng(2024)
    truth = 0.3   # E[y] = 0.3 E[x0^2] = 0.3
    hits, widths = 0, []
    reps = 300
    for _ in range(reps):
        m = 120 + 1500
        X = rng.normal(size=(m, 3))
        y = X @ [1.0, -0.5, 0.5] + 0.3 * X[:, 0] ** 2 + rng.normal(size=m)
        res = ppi.crossfit(LinearRegression(), X[:120], y[:120], X[120:], folds=5, level=0.9,
                           random_state=int(rng.integers(1 << 30)))
        hits += res.ci_low <= truth <= res.ci_high
        widths.append(res.ci_high - res.ci_low)
    cover = hits / reps
    assert abs(cover - 0.9) <= 3.5 * np.sqrt(0.09 / reps), cover
    # and the prediction helps: narrower than the classical interval's expected width (sd(y) ~ 1.8)
    assert np.mean(widths) < 2 * 1.645 * np.std(y) / np.sqrt(120)


def test_folds_number_and_ids():
    codes = check_folds(10, 95, 0)
    assert np.bincount(codes).tolist() == [10] * 5 + [9] * 5
    assert np.array_equal(codes, check_folds(10, 95, 0))
    assert not np.array_equal(codes, check_folds(10, 95, 1))
    assert check_folds(["b", "a", "b", "c"], 4, 0).tolist() == [1, 0, 1, 2]
    with pytest.raises(InvalidArgumentError, match="`folds`.*at most 5"):
        check_folds(10, 5, 0)
    with pytest.raises(InvalidArgumentError, match="`folds` must be >= 2"):
        check_folds(1, 5, 0)
    with pytest.raises(InvalidArgumentError, match="`folds` puts every labelled row in one fold"):
        check_folds(["a"] * 4, 4, 0)
    with pytest.raises(ShapeError, match="`folds` has 3 fold ids for 4"):
        check_folds([0, 1, 0], 4, 0)
    with pytest.raises(InvalidArgumentError, match="`folds`"):
        check_folds(True, 4, 0)


def test_a_classifier_predicts_probabilities():
    a = make_inputs({"kind": "logistic", "seed": 5, "n": 200, "N": 1000})
    res = ppi.crossfit(LogisticRegression(), a["X"], a["y"], a["X_unlabeled"])
    yhat, Yu, _ = cross_predictions(LogisticRegression(), a["X"], a["y"], a["X_unlabeled"], 10)
    assert np.all((yhat > 0) & (yhat < 1)) and not np.all(np.isin(yhat, [0, 1]))
    assert res.estimate == pytest.approx(ppi.mean(a["y"], yhat, Yu.mean(axis=1), method="ppi").estimate, abs=1e-12)
    hard, _, _ = cross_predictions(LogisticRegression(), a["X"], a["y"], a["X_unlabeled"], 10, response="predict")
    assert np.all(np.isin(hard, [0, 1]))


def test_pandas_rows_are_paired_by_label_and_the_term_keeps_y_name():
    a = make_inputs({"kind": "linear", "seed": 8, "n": 100, "N": 800})
    X = pd.DataFrame(a["X"], columns=["a", "b", "c", "d"], index=np.arange(100) * 3)
    y = pd.Series(a["y"], index=X.index, name="income")
    Xu = pd.DataFrame(a["X_unlabeled"], columns=X.columns)
    base = ppi.crossfit(LinearRegression(), X, y, Xu)
    shuffled = y.sample(frac=1.0, random_state=1)
    got = ppi.crossfit(LinearRegression(), X, shuffled, Xu)
    assert got.terms == ["income"]
    pd.testing.assert_frame_equal(got.table, base.table)
    with pytest.raises(InvalidArgumentError, match="`X` and `y`.*row labels disagree"):
        ppi.crossfit(LinearRegression(), X, y.set_axis(np.arange(100)), Xu)
    ols = ppi.crossfit(LinearRegression(), X, y, Xu, estimand="ols", intercept=True)
    assert ols.terms == ["Intercept", "a", "b", "c", "d"]


@pytest.mark.parametrize("kwargs, match", [
    ({"estimand": "median"}, "`estimand`"),
    ({"method": "cross"}, "`method`"),
    ({"coord": 1}, "`coord`.*estimand='mean'"),
    ({"intercept": True}, "`intercept`.*estimand='mean'"),
    ({"regressors": np.ones((50, 1)), "regressors_unlabeled": np.ones((10, 1))}, "`regressors`"),
    ({"estimand": "ols", "regressors": np.ones((50, 1))}, "`regressors` is given without `regressors_unlabeled`"),
    ({"response": "decision"}, "`response`"),
    ({"random_state": -1}, "`random_state`"),
    ({"lam": 0.5}, "`lam`"),
])
def test_bad_arguments_are_named(kwargs, match):
    rng = np.random.default_rng(0)
    X, y, Xu = rng.normal(size=(50, 2)), rng.normal(size=50), rng.normal(size=(10, 2))
    with pytest.raises(InvalidArgumentError, match=match):
        ppi.crossfit(LinearRegression(), X, y, Xu, **kwargs)


def test_bad_inputs_are_named():
    rng = np.random.default_rng(0)
    X, y, Xu = rng.normal(size=(50, 2)), rng.normal(size=50), rng.normal(size=(10, 2))
    with pytest.raises(InvalidArgumentError, match="`estimator`"):
        ppi.crossfit("ridge", X, y, Xu)
    with pytest.raises(ShapeError, match="`X` and `y`"):
        ppi.crossfit(LinearRegression(), X[:40], y, Xu)
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(InvalidArgumentError, match="`y`"):
        ppi.crossfit(LinearRegression(), X, bad, Xu)
    with pytest.raises(InvalidArgumentError, match="`X_unlabeled`"):
        ppi.crossfit(LinearRegression(), X, y, None)
    with pytest.raises(InvalidArgumentError, match="predict_proba"):
        ppi.crossfit(LinearRegression(), X, y, Xu, response="predict_proba")
