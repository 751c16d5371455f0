"""The fast prediction paths of the built-in learners give scikit-learn's numbers exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from llmsurrogate import _core, ess
from llmsurrogate.ess._fast_predict import fast_predict, forest_arrays
from llmsurrogate.exceptions import InvalidArgumentError


def data(seed, n=600, p=7, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, 1] = np.round(X[:, 1], 1)  # ties and values that sit exactly on split thresholds
    X[:, 2] = rng.integers(0, 4, n)
    score = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 2] + rng.normal(size=n)
    y_cls = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])).astype(float)
    return X, y_cls, score


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kw", [dict(max_depth=3), dict(max_depth=None), dict(min_samples_leaf=5, max_features=None),
                                dict(bootstrap=False, max_depth=6), dict(max_leaf_nodes=9)])
def test_forest_classifier_labels_and_probabilities_are_identical(seed, kw):
    X, y, _ = data(seed, classes=2 + seed % 2)
    train = slice(0, 40 + 30 * seed)
    est = RandomForestClassifier(n_estimators=25, random_state=seed, n_jobs=1, **kw).fit(X[train], y[train])
    np.testing.assert_array_equal(fast_predict(est, X, "label"), est.predict(X))
    if len(est.classes_) == 2:
        np.testing.assert_array_equal(fast_predict(est, X, "proba"), est.predict_proba(X)[:, 1])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kw", [dict(max_depth=4), dict(max_depth=None), dict(min_samples_leaf=3, max_features=0.5)])
def test_forest_regressor_is_identical(seed, kw):
    X, _, score = data(seed)
    est = RandomForestRegressor(n_estimators=20, random_state=seed, **kw).fit(X[:150], score[:150])
    np.testing.assert_array_equal(fast_predict(est, X, "value"), est.predict(X))


def test_single_node_trees_and_float32_rounding():
    X = np.array([[0.1], [0.2], [0.1000000001], [0.3]])
    y = np.array([0.0, 1.0, 0.0, 1.0])
    one_class = RandomForestClassifier(n_estimators=5, random_state=0, n_jobs=1).fit(X[:1], y[:1])
    np.testing.assert_array_equal(fast_predict(one_class, X, "label"), one_class.predict(X))
    np.testing.assert_array_equal(fast_predict(one_class, X, "proba"), np.zeros(4))  # class 1 unseen
    est = RandomForestClassifier(n_estimators=7, random_state=0, n_jobs=1, bootstrap=False).fit(X, y)
    np.testing.assert_array_equal(fast_predict(est, X, "label"), est.predict(X))


@pytest.mark.parametrize("seed", range(5))
def test_scaled_l1_logit_labels_and_lasso_values_are_identical(seed):
    X, y, score = data(seed)
    n = 20 + 25 * seed
    logit = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, l1_ratio=1.0, solver="saga", max_iter=2000,
                                                               random_state=seed)).fit(X[:n], y[:n])
    np.testing.assert_array_equal(fast_predict(logit, X, "label"), logit.predict(X))
    lasso = make_pipeline(StandardScaler(), Lasso(alpha=0.05)).fit(X[:n], score[:n])
    np.testing.assert_array_equal(fast_predict(lasso, X, "value"), lasso.predict(X))


def test_unsupported_models_fall_back():
    X, y, score = data(0)
    assert fast_predict(GradientBoostingClassifier(n_estimators=3).fit(X, y), X, "label") is None
    assert fast_predict(RandomForestClassifier(n_estimators=3, n_jobs=2).fit(X, y), X, "label") is None
    assert fast_predict(make_pipeline(MinMaxScaler(), Lasso()).fit(X, score), X, "value") is None
    assert fast_predict(make_pipeline(StandardScaler(), LinearRegression()).fit(X, score), X, "value") is None
    logit = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    assert fast_predict(logit, X, "proba") is None  # probabilities go through scikit-learn
    clf = RandomForestClassifier(n_estimators=3, n_jobs=1).fit(X, y)
    assert fast_predict(clf, X, "value") is None  # a classifier's labels are not regression values
    reg = RandomForestRegressor(n_estimators=3).fit(X, score)
    assert fast_predict(reg, X, "label") is None and fast_predict(reg, X, "proba") is None
    multi = RandomForestRegressor(n_estimators=3).fit(X, np.c_[score, score])
    assert forest_arrays(multi) is None and fast_predict(multi, X, "value") is None


def test_malformed_forest_arrays_raise_clear_errors():
    X, y, _ = data(1)
    est = RandomForestClassifier(n_estimators=3, random_state=0, max_depth=3, n_jobs=1).fit(X, y)
    left, right, feature, threshold, value, offsets = forest_arrays(est)
    x32 = X.astype(np.float32)
    with pytest.raises(InvalidArgumentError, match="feature"):
        _core.ess_forest_predict_mean(left, right, feature, threshold, value, offsets, np.ascontiguousarray(x32[:, :2]))
    bad = left.copy()
    bad[0] = 0  # a node that is its own child
    with pytest.raises(InvalidArgumentError, match="children outside the tree"):
        _core.ess_forest_predict_mean(bad, right, feature, threshold, value, offsets, x32)
    with pytest.raises(InvalidArgumentError, match="offsets"):
        _core.ess_forest_predict_mean(left, right, feature, threshold, value, offsets[:-1], x32)


def test_ess_random_forest_equals_the_same_forest_given_as_a_user_estimator():
    """The built-in 'rf' (fast path) and a user RandomForestClassifier (scikit-learn's predict)
    fit the same forests, so every number of the run is the same."""
    X, y, _ = data(3, n=400)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y, llm=(X[:, 0] > 0).astype(float))
    kw = dict(features=[f"x{j}" for j in range(X.shape[1])], loss="zero_one", grid=[4, 20, 100], seed=5,
              tuning="none")
    fast = ess.equivalent_sample_size(df, "y", "llm", algorithm="rf", algorithm_options={"n_estimators": 15}, **kw)
    user = ess.equivalent_sample_size(df, "y", "llm", algorithm=RandomForestClassifier(n_estimators=15, n_jobs=1), **kw)
    pd.testing.assert_frame_equal(fast.table, user.table)
