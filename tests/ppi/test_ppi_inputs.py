"""llmsurrogate.ppi's inputs and results (docs/methods/ppi.md §1, §6): rows paired by label,
columns by name, the intercept rule, every bad input a clear error naming the argument, and
results that print, tidy and survive a JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import ppi
from llmsurrogate.exceptions import EmptyInputError, InvalidArgumentError, NonFiniteError, ShapeError
from llmsurrogate.results import Result


def _mean_rows(seed=0, n=120, N=800):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n + N)
    yhat = y + rng.normal(0, 0.7, n + N)
    return y[:n], yhat[:n], yhat[n:]


def _ols_rows(seed=0, n=150, N=900):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"const": 1.0, "age": rng.normal(40, 10, n + N), "female": rng.binomial(1, 0.5, n + N)})
    y = X.to_numpy() @ [1.0, 0.05, -0.3] + rng.normal(size=n + N)
    yhat = y + rng.normal(0, 0.8, n + N)
    return X.iloc[:n], y[:n], yhat[:n], X.iloc[n:].reset_index(drop=True), yhat[n:]


# --- pairing --------------------------------------------------------------------------------------

def test_series_with_shuffled_index_are_paired_by_label():
    y, yhat, yu = _mean_rows(1)
    ys = pd.Series(y, index=[f"p{i}" for i in range(y.size)], name="income")
    yhs = pd.Series(yhat, index=ys.index).sample(frac=1.0, random_state=3)   # the same people, shuffled
    res = ppi.mean(ys, yhs, yu)
    assert res.terms == ["income"]
    ref = ppi.mean(y, yhat, yu)
    assert res.estimate == pytest.approx(ref.estimate, abs=1e-14) and res.se == pytest.approx(ref.se, abs=1e-14)
    by_position = ppi.mean(y, yhs.to_numpy(), yu)   # what pairing by position would have given
    assert abs(by_position.estimate - ref.estimate) > 1e-6


def test_weights_pair_by_label_too():
    y, yhat, yu = _mean_rows(2)
    idx = pd.Index(range(100, 100 + y.size))
    w = pd.Series(np.linspace(0.5, 2.0, y.size), index=idx)
    res = ppi.mean(pd.Series(y, index=idx), yhat, yu, weights=w.iloc[::-1])
    ref = ppi.mean(y, yhat, yu, weights=w.to_numpy())
    assert res.estimate == pytest.approx(ref.estimate, abs=1e-14)


def test_rows_with_other_labels_are_refused_naming_both():
    y, yhat, yu = _mean_rows(3)
    ys = pd.Series(y)
    yhs = pd.Series(yhat, index=range(1, y.size + 1))
    with pytest.raises(InvalidArgumentError, match=r"`y` and `yhat`.*row labels disagree"):
        ppi.mean(ys, yhs, yu)


def test_regression_rows_and_columns_pair_by_label_and_name():
    X, y, yhat, Xu, yu = _ols_rows(4)
    ref = ppi.ols(X, y, yhat, Xu, yu)
    order = np.random.default_rng(0).permutation(len(X))
    shuffled = ppi.ols(X.iloc[order], pd.Series(y, index=X.index), pd.Series(yhat, index=X.index).iloc[order[::-1]],
                       Xu[["female", "const", "age"]], yu)
    assert ref.terms == ["const", "age", "female"] and shuffled.terms == ref.terms
    np.testing.assert_allclose(shuffled.estimate, ref.estimate, rtol=0, atol=1e-12)
    np.testing.assert_allclose(shuffled.se, ref.se, rtol=0, atol=1e-12)
    with pytest.raises(InvalidArgumentError, match=r"`X` and `X_unlabeled` name different columns"):
        ppi.ols(X, y, yhat, Xu.rename(columns={"age": "AGE"}), yu)


def test_share_columns_pair_by_name():
    rng = np.random.default_rng(5)
    answers = rng.choice(["no", "yes", "maybe"], size=900)
    y = pd.get_dummies(answers).astype(float)[["no", "yes", "maybe"]]
    yhat = y * 0.7 + 0.1
    res = ppi.mean(y.iloc[:100], yhat.iloc[:100][["maybe", "no", "yes"]], yhat.iloc[100:])
    ref = ppi.mean(y.iloc[:100].to_numpy(), yhat.iloc[:100].to_numpy(), yhat.iloc[100:].to_numpy())
    assert res.terms == ["no", "yes", "maybe"]
    np.testing.assert_allclose(res.estimate, ref.estimate, rtol=0, atol=1e-14)


# --- the intercept ----------------------------------------------------------------------------------

def test_no_intercept_is_added_silently():
    X, y, yhat, Xu, yu = _ols_rows(6)
    Xn, Xun = X.drop(columns="const"), Xu.drop(columns="const")
    with pytest.raises(InvalidArgumentError, match=r"argument `X` has no constant column.*intercept=True"):
        ppi.ols(Xn, y, yhat, Xun, yu)
    added = ppi.ols(Xn, y, yhat, Xun, yu, intercept=True)
    given = ppi.ols(X, y, yhat, Xu, yu)
    assert added.terms == ["Intercept", "age", "female"] and added.intercept
    np.testing.assert_allclose(added.estimate, given.estimate, rtol=0, atol=1e-12)
    through_origin = ppi.ols(Xn, y, yhat, Xun, yu, intercept=False)
    assert through_origin.terms == ["age", "female"] and through_origin.intercept is False
    with pytest.raises(InvalidArgumentError, match=r"argument `intercept` is True but `X` already holds"):
        ppi.ols(X, y, yhat, Xu, yu, intercept=True)


def test_dummies_that_sum_to_one_count_as_an_intercept():
    X, y, yhat, Xu, yu = _ols_rows(7)
    def dummies(frame):
        return pd.DataFrame({"male": 1.0 - frame["female"], "female": frame["female"] * 1.0, "age": frame["age"]})
    res = ppi.ols(dummies(X), y, yhat, dummies(Xu), yu)
    assert res.intercept is True


# --- bad input, each naming its argument ------------------------------------------------------------

def _bad_mean_calls():
    y, yhat, yu = _mean_rows(8)
    nan_u = yu.copy(); nan_u[5] = np.nan
    return [
        ("different lengths", lambda: ppi.mean(y, yhat[:-1], yu), ShapeError, r"`y` and `yhat`"),
        ("NaN in yhat_unlabeled", lambda: ppi.mean(y, yhat, nan_u), NonFiniteError, r"`yhat_unlabeled`.*position 5"),
        ("NaN in y", lambda: ppi.mean(np.r_[np.nan, y[1:]], yhat, yu), NonFiniteError, r"`y`"),
        ("N = 0", lambda: ppi.mean(y, yhat, []), EmptyInputError, r"`yhat_unlabeled`"),
        ("N = 1", lambda: ppi.mean(y, yhat, yu[:1]), EmptyInputError, r"`yhat_unlabeled`"),
        ("n = 1", lambda: ppi.mean(y[:1], yhat[:1], yu), EmptyInputError, r"`y`"),
        ("weights <= 0", lambda: ppi.mean(y, yhat, yu, weights=np.r_[0.0, np.ones(y.size - 1)]),
         InvalidArgumentError, r"`weights` must be positive; got 0.0 at row 0"),
        ("negative unlabelled weight", lambda: ppi.mean(y, yhat, yu, weights_unlabeled=-np.ones(yu.size)),
         InvalidArgumentError, r"`weights_unlabeled` must be positive"),
        ("weights of another length", lambda: ppi.mean(y, yhat, yu, weights=np.ones(3)), ShapeError, r"`weights`"),
        ("all-equal y", lambda: ppi.mean(np.ones(y.size), yhat, yu), InvalidArgumentError,
         r"`y` has the same value \(1\) in every labelled row"),
        ("lam outside [0, 1]", lambda: ppi.mean(y, yhat, yu, lam=1.5), InvalidArgumentError,
         r"`lam` must lie in \[0, 1\]; got 1.5"),
        ("lam negative", lambda: ppi.mean(y, yhat, yu, lam=-0.1), InvalidArgumentError, r"`lam` must lie"),
        ("lam with method='ppi'", lambda: ppi.mean(y, yhat, yu, method="ppi", lam=0.5), InvalidArgumentError,
         r"`lam` is given with method='ppi'"),
        ("lam with classical", lambda: ppi.mean(y, yhat, yu, method="classical", lam=0.5), InvalidArgumentError,
         r"`lam`"),
        ("unknown method", lambda: ppi.mean(y, yhat, yu, method="ppi+"), InvalidArgumentError,
         r"`method` must be one of \['classical', 'ppi', 'ppi\+\+'\]; got 'ppi\+'; did you mean"),
        ("lam_mode with a fixed lam", lambda: ppi.mean(y, yhat, yu, lam=0.5, lam_mode="element"),
         InvalidArgumentError, r"`lam_mode`"),
        ("unknown lam_mode", lambda: ppi.mean(y, yhat, yu, lam_mode="each"), InvalidArgumentError, r"`lam_mode`"),
        ("level outside (0, 1)", lambda: ppi.mean(y, yhat, yu, level=95), InvalidArgumentError, r"`level`"),
        ("text in yhat", lambda: ppi.mean(y, yhat.astype(str), yu), InvalidArgumentError, r"`yhat` holds strings"),
        ("K columns against one", lambda: ppi.mean(np.eye(3)[np.arange(y.size) % 3], yhat, yu), ShapeError,
         r"`y` and `yhat` must have the same columns"),
        ("q outside (0, 1)", lambda: ppi.quantile(y, yhat, yu, 1.0), InvalidArgumentError, r"`q` must lie in \(0"),
        ("q = 0", lambda: ppi.quantile(y, yhat, yu, 0.0), InvalidArgumentError, r"`q`"),
        ("ppi++ quantile", lambda: ppi.quantile(y, yhat, yu, 0.5, method="ppi++"), InvalidArgumentError,
         r"`method` must be one of \['classical', 'ppi'\]"),
        ("quantile of two columns", lambda: ppi.quantile(np.c_[y, y], np.c_[yhat, yhat], np.c_[yu, yu], 0.5),
         ShapeError, r"`y` must be one column"),
    ]


@pytest.mark.parametrize("what,call,error,match", _bad_mean_calls(), ids=[c[0] for c in _bad_mean_calls()])
def test_bad_mean_and_quantile_input(what, call, error, match):
    with pytest.raises(error, match=match):
        call()


def _bad_regression_calls():
    X, y, yhat, Xu, yu = _ols_rows(9)
    Xa, Xua = X.to_numpy(), Xu.to_numpy()
    rng = np.random.default_rng(9)
    xs = rng.normal(size=200)
    Xs = np.column_stack([np.ones(200), xs])
    ys = (xs > 0).astype(float)                        # perfectly separated by x
    Xsu = np.column_stack([np.ones(500), rng.normal(size=500)])
    ysu = rng.uniform(0.2, 0.8, 500)
    return [
        ("X and y of different lengths", lambda: ppi.ols(Xa[:-1], y, yhat, Xua, yu), ShapeError, r"`X` and `y`"),
        ("X_unlabeled short", lambda: ppi.ols(Xa, y, yhat, Xua[:-1], yu), ShapeError,
         r"`X_unlabeled` and `yhat_unlabeled`"),
        ("X columns differ", lambda: ppi.ols(Xa, y, yhat, Xua[:, :2], yu), ShapeError, r"`X` and `X_unlabeled`"),
        ("NaN in X", lambda: ppi.ols(X.assign(age=np.r_[np.nan, X["age"].iloc[1:]]), y, yhat, Xu, yu),
         NonFiniteError, r"`X\['age'\]`"),
        ("collinear X", lambda: ppi.ols(X.assign(age2=2 * X["age"]), y, yhat, Xu.assign(age2=2 * Xu["age"]), yu),
         InvalidArgumentError, r"`X`: the columns are linearly dependent"),
        ("all-equal y", lambda: ppi.ols(Xa, np.zeros(y.size), yhat, Xua, yu), InvalidArgumentError,
         r"`y` has the same value"),
        ("perfectly separated logistic", lambda: ppi.logistic(Xs, ys, ys, Xsu, ysu), InvalidArgumentError,
         r"argument `y`: the logistic regression on the labelled rows has no finite fit.*perfectly separated"),
        ("logistic y outside [0, 1]", lambda: ppi.logistic(Xs, 2 * ys, ys, Xsu, ysu), InvalidArgumentError,
         r"`y` must lie in \[0, 1\]"),
        ("poisson negative yhat", lambda: ppi.poisson(Xs, ys, -ys, Xsu, ysu), InvalidArgumentError,
         r"`yhat` must be >= 0"),
        ("coord with a fixed lam", lambda: ppi.ols(Xa, y, yhat, Xua, yu, lam=0.5, coord=1), InvalidArgumentError,
         r"`coord`.*no effect"),
        ("coord out of range", lambda: ppi.ols(Xa, y, yhat, Xua, yu, coord=3), InvalidArgumentError,
         r"`coord` must be a 0-based position in 0..2"),
        ("coord names no column", lambda: ppi.ols(X, y, yhat, Xu, yu, coord="income"), InvalidArgumentError,
         r"`coord` names no column"),
        ("lam outside [0, 1]", lambda: ppi.logistic(Xs, ys, ys, Xsu, ysu, lam=2.0), InvalidArgumentError,
         r"`lam` must lie in \[0, 1\]"),
        ("N = 0", lambda: ppi.ols(Xa, y, yhat, Xua[:0], yu[:0]), EmptyInputError, r"`X_unlabeled` has no rows"),
        ("weights <= 0", lambda: ppi.poisson(Xs, ys, ys, Xsu, ysu, weights=-np.ones(200)), InvalidArgumentError,
         r"`weights` must be positive"),
        ("intercept not a bool", lambda: ppi.ols(Xa, y, yhat, Xua, yu, intercept="yes"), InvalidArgumentError,
         r"`intercept`"),
    ]


@pytest.mark.parametrize("what,call,error,match", _bad_regression_calls(), ids=[c[0] for c in _bad_regression_calls()])
def test_bad_regression_input(what, call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_lam_given_per_column():
    rng = np.random.default_rng(13)
    y = np.eye(3)[rng.choice(3, 600)]
    yhat = 0.6 * y + 0.4 * rng.dirichlet(np.ones(3), 600)
    res = ppi.mean(y[:100], yhat[:100], yhat[100:], lam=[0.2, 0.5, 0.9])
    assert res.lam.tolist() == [0.2, 0.5, 0.9] and not res.lam_tuned
    for j, lam in enumerate([0.2, 0.5, 0.9]):
        assert res.ci_low[j] == pytest.approx(ppi.mean(y[:100, j], yhat[:100, j], yhat[100:, j], lam=lam).ci_low,
                                              abs=1e-14)
    with pytest.raises(ShapeError, match="`lam` has 2 values"):
        ppi.mean(y[:100], yhat[:100], yhat[100:], lam=[0.2, 0.5])


def test_a_named_coord_is_the_same_as_its_position():
    X, y, yhat, Xu, yu = _ols_rows(10)
    by_name = ppi.ols(X, y, yhat, Xu, yu, coord="age")
    by_position = ppi.ols(X, y, yhat, Xu, yu, coord=1)
    assert by_name.coord == by_position.coord == "age"
    assert by_name.lam == by_position.lam


def test_bad_predictions_give_the_classical_interval_back():
    rng = np.random.default_rng(11)
    y = rng.normal(size=2000)
    useless = ppi.mean(y, rng.normal(size=2000), rng.normal(size=20_000))
    assert useless.lam < 0.1 and useless.effective_n == pytest.approx(2000, rel=0.05)
    anti = ppi.mean(y, -y + rng.normal(size=2000), rng.normal(size=20_000))   # lambda-hat < 0: clipped to 0
    assert anti.lam == 0.0 and anti.effective_n == 2000
    assert (anti.ci_low, anti.ci_high) == (anti.table["classical_ci_low"][0], anti.table["classical_ci_high"][0])


# --- results ---------------------------------------------------------------------------------------

def _all_results():
    y, yhat, yu = _mean_rows(12)
    X, yo, yho, Xu, yuo = _ols_rows(12)
    rng = np.random.default_rng(12)
    Xl = np.column_stack([np.ones(1000), rng.normal(size=1000)])
    yl = rng.binomial(1, 0.4, 1000).astype(float)
    yhl = np.clip(0.6 * yl + rng.uniform(0, 0.4, 1000), 0, 1)
    shares = np.eye(3)[rng.choice(3, 920)]
    return {
        "mean": ppi.mean(pd.Series(y, name="score"), yhat, yu, weights=np.linspace(1, 2, y.size)),
        "shares element": ppi.mean(shares[:120], shares[:120] * 0.5 + 0.2, shares[120:] * 0.5 + 0.2,
                                   lam_mode="element"),
        "quantile": ppi.quantile(y, yhat, yu, 0.25),
        "quantile classical": ppi.quantile(y, yhat, yu, 0.25, method="classical"),
        "ols": ppi.ols(X, yo, yho, Xu, yuo, coord="female"),
        "logistic": ppi.logistic(Xl[:200], yl[:200], yhl[:200], Xl[200:], yhl[200:], method="ppi"),
        "poisson": ppi.poisson(Xl[:200], yl[:200], yhl[:200], Xl[200:], yhl[200:], method="classical"),
    }


@pytest.mark.parametrize("name", list(_all_results()))
def test_results_print_tidy_and_round_trip(name, tmp_path):
    res = _all_results()[name]
    text = str(res.summary())
    assert text.startswith("Prediction-powered inference:") and f"{res.n}" in text
    tidy = res.tidy()
    assert list(tidy.columns[:7]) == ["term", "estimate", "std_error", "statistic", "p_value", "ci_low", "ci_high"]
    assert tidy["term"].tolist() == res.terms
    back = Result.load(res.save(tmp_path / "res.json"))
    assert back == res and type(back) is ppi.PPIResult
    assert back.terms == res.terms
    np.testing.assert_array_equal(np.atleast_1d(back.estimate), np.atleast_1d(res.estimate))
    null = res.ci_low if np.ndim(res.ci_low) == 0 else np.asarray(res.ci_low)
    if res.estimand == "quantile":
        assert back.p_value(float(null)) == res.p_value(float(null))
    else:
        np.testing.assert_array_equal(np.atleast_1d(back.p_value(null)), np.atleast_1d(res.p_value(null)))
    json.loads(res.to_json())   # plain JSON (no NaN tokens)


def test_p_value_at_the_interval_ends_is_alpha_for_every_regression():
    res = _all_results()
    for name in ("ols", "logistic", "poisson"):
        r = res[name]
        np.testing.assert_allclose(r.p_value(r.ci_low), 1 - r.level, rtol=0, atol=1e-12)
        np.testing.assert_allclose(r.p_value(r.ci_high), 1 - r.level, rtol=0, atol=1e-12)
    with pytest.raises(InvalidArgumentError, match="`null` has 2 values for 3 terms"):
        res["ols"].p_value([0.0, 0.0])


# --- issue 36's bad inputs, in every estimator (the R and command-line words: test-ppi.R, test_cli_ppi.py) ----

def _issue_cases():
    """(estimator, case, call, error, pattern): y and yhat of different lengths, NaN in either, X
    without a constant column, all-equal y (docs/methods/ppi.md §1.5: refused in every estimator,
    each with its reason), perfectly separated logistic data, N = 0, weights <= 0."""
    rng = np.random.default_rng(36)
    n, N = 150, 600
    x, xu = rng.normal(size=n), rng.normal(size=N)
    X, Xu = np.column_stack([np.ones(n), x]), np.column_stack([np.ones(N), xu])
    yb = rng.binomial(1, 0.4, n).astype(float)
    p, pu = np.clip(0.5 * yb + rng.uniform(0.1, 0.4, n), 0, 1), rng.uniform(0.1, 0.8, N)
    nan = lambda v, i=3: np.r_[v[:i], np.nan, v[i + 1:]]   # noqa: E731
    calls = {
        "mean": lambda y, yh, yu, **kw: ppi.mean(y, yh, yu, **kw),
        "quantile": lambda y, yh, yu, **kw: ppi.quantile(y, yh, yu, 0.5, **kw),
        "ols": lambda y, yh, yu, **kw: ppi.ols(kw.pop("X", X), y, yh, kw.pop("Xu", Xu[:len(yu)]), yu, **kw),
        "logistic": lambda y, yh, yu, **kw: ppi.logistic(kw.pop("X", X), y, yh, kw.pop("Xu", Xu[:len(yu)]), yu, **kw),
        "poisson": lambda y, yh, yu, **kw: ppi.poisson(kw.pop("X", X), y, yh, kw.pop("Xu", Xu[:len(yu)]), yu, **kw),
    }
    constant = {"mean": r"classical interval has width 0", "quantile": r"classical interval is that one value",
                "ols": r"classical fit is exact", "logistic": r"no finite fit \(the intercept separates it\)",
                "poisson": r"all 0 has no finite fit"}
    out = []
    for est, f in calls.items():
        out += [
            (est, "lengths", lambda f=f: f(yb, p[:-1], pu), ShapeError, r"`yhat`"),
            (est, "NaN in y", lambda f=f: f(nan(yb), p, pu), NonFiniteError, r"argument `y` has a non-finite value "
             r"\(nan\) at position 3"),
            (est, "NaN in yhat", lambda f=f: f(yb, nan(p, 7), pu), NonFiniteError, r"argument `yhat` has a "
             r"non-finite value \(nan\) at position 7"),
            (est, "all-equal y", lambda f=f: f(np.zeros(n), p, pu), InvalidArgumentError,
             r"argument `y` has the same value \(0\) in every labelled row: .*" + constant[est]),
            (est, "N = 0", lambda f=f: f(yb, p, pu[:0]), EmptyInputError, r"`(yhat_unlabeled|X_unlabeled)` has no rows"),
            (est, "weight 0", lambda f=f: f(yb, p, pu, weights=np.r_[1.0, 0.0, np.ones(n - 2)]), InvalidArgumentError,
             r"argument `weights` must be positive; got 0.0 at row 1"),
            (est, "negative unlabelled weight", lambda f=f: f(yb, p, pu, weights_unlabeled=np.r_[np.ones(N - 1), -2.0]),
             InvalidArgumentError, rf"argument `weights_unlabeled` must be positive; got -2.0 at row {N - 1}"),
        ]
        if est in ("ols", "logistic", "poisson"):
            out.append((est, "no intercept", lambda f=f: f(yb, p, pu, X=X[:, 1:], Xu=Xu[:, 1:]), InvalidArgumentError,
                        r"argument `X` has no constant column.*intercept=True.*intercept=False"))
    separated = (x > 0).astype(float)
    for method in ("classical", "ppi", "ppi++"):
        out.append(("logistic", f"separated ({method})",
                    lambda m=method: ppi.logistic(X, separated, p, Xu, pu, method=m), InvalidArgumentError,
                    r"argument `y`: the logistic regression on the labelled rows has no finite fit.*perfectly separated"))
    # 0/1 predictions, right on every labelled row and separated by x on the unlabelled rows: at lambda = 1 the
    # loss is the unlabelled rows' alone, with no finite minimiser
    out.append(("logistic", "separated predictions", lambda: ppi.logistic(X, yb, yb, Xu, (xu > 0).astype(float),
                                                                           method="ppi"),
                InvalidArgumentError, r"argument `yhat_unlabeled`: the prediction-powered logistic loss"))
    shares = pd.DataFrame({"no": 1 - yb, "yes": yb, "maybe": 0.0})
    share_hat = pd.DataFrame({"no": 1 - p, "yes": p, "maybe": 0.05})
    share_u = pd.DataFrame({"no": 1 - pu, "yes": pu, "maybe": 0.05})
    out.append(("mean", "a K-option column all equal", lambda: ppi.mean(shares, share_hat, share_u),
                InvalidArgumentError, r"argument `y`: column 'maybe' has the same value \(0\) in every labelled row.*"
                r"drop its column or merge it"))
    return out


@pytest.mark.parametrize("estimator,case,call,error,match", _issue_cases(),
                         ids=[f"{c[0]}: {c[1]}" for c in _issue_cases()])
def test_issue_36_bad_input_in_every_estimator(estimator, case, call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_constant_column_of_k_shares_is_not_refused_once_it_varies():
    """The per-column check refuses only the constant column: the other K - 1 are what they were."""
    rng = np.random.default_rng(37)
    y = np.eye(3)[rng.choice(3, 400)]
    yhat = 0.6 * y + 0.4 * rng.dirichlet(np.ones(3), 400)
    res = ppi.mean(y[:120], yhat[:120], yhat[120:])
    assert np.all(np.asarray(res.se) > 0)
