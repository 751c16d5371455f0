"""Building transfer-error tables: models, NLS fits, tables, normalisations, CV, caching.

References: closed forms, brute-force loops over scikit-learn fits, scipy.optimize.least_squares,
the paper's stylized example (docs/methods/transfer.md T8), and the authors' published 44x44 matrices.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from _published import fixture_order, matrix_with_in_sample
from _samples import synthetic
from llmsurrogate import datasets as ds
from llmsurrogate import transfer as tr
from llmsurrogate.exceptions import (
    ColumnNotFoundError,
    ConvergenceError,
    InvalidArgumentError,
    NonFiniteError,
    ShapeError,
)
from reference import cara_ref, cpt_ref, crra_ref


# ---- models ---------------------------------------------------------------------------------------
def test_stylized_example_t8():
    """Spec 8.1 T8: CRRA on (10, 0, 1/2; 3) gives eta = 0.42428, 10.867 on (20, 10, 0.1), MSE 0.01764."""
    m = tr.EU().fit(np.array([[10.0, 0.0, 0.5]]), np.array([3.0]))
    assert m.converged_
    assert m.eta_ == pytest.approx(0.42428, abs=1e-4)
    assert m.eta_ == pytest.approx(1 - math.log(0.5) / math.log(0.3), abs=1e-9)  # exact root
    pred = m.predict(np.array([[20.0, 10.0, 0.1]]))[0]
    assert pred == pytest.approx(10.867, abs=5e-4)
    assert (pred - 11.0) ** 2 == pytest.approx(0.01764, abs=1e-5)
    assert m.train_mse_ < 1e-20


def test_predictions_match_the_printed_formulas():
    rng = np.random.default_rng(0)
    z1 = rng.uniform(1, 100, 50) * rng.choice([-1, 1], 50)
    z2 = z1 * rng.uniform(0.0, 0.9, 50)
    p = rng.uniform(0.01, 0.99, 50)
    X = np.column_stack([z1, z2, p])
    for eta in (0.0, 0.3, 0.8, 1.5, 3.0):
        m = tr.EU()
        m.theta_ = np.array([eta])
        np.testing.assert_allclose(m.predict(X), crra_ref(eta, z1, z2, p), rtol=1e-10, atol=1e-10)
    for theta in ([0.6, 0.8, 0.7, 0.5], [1, 1, 1, 1], [0.3, 0.9, 2.0, 0.9]):
        m = tr.CPT()
        m.theta_ = np.array(theta, dtype=float)
        np.testing.assert_allclose(m.predict(X), cpt_ref(*theta, z1, z2, p), rtol=1e-10)
    m = tr.EU(utility="cara")
    m.theta_ = np.array([0.02])
    np.testing.assert_allclose(m.predict(X), cara_ref(0.02, z1, z2, p), rtol=1e-10)
    # authors' convention: a zero prize counts as 1 in the power mean
    m = tr.EU(zero_prize="authors")
    m.theta_ = np.array([0.4])
    np.testing.assert_allclose(m.predict(np.array([[10.0, 0.0, 0.5]])), (0.5 * 10 ** 0.6 + 0.5) ** (1 / 0.6))


def test_nls_optimum_equals_scipy_least_squares():
    from scipy.optimize import least_squares

    data = synthetic(n=1, m=120, seed=3)
    X, y = data[["z1", "z2", "p1"]].to_numpy(), data["ce"].to_numpy()
    for free in ("g", "ab", "dg", "abg", "abdg"):
        m = tr.CPT(free).fit(X, y)
        idx = ["abdg".index(c) for c in free]

        def resid(x):
            th = np.ones(4)
            th[idx] = x
            return cpt_ref(*th, X[:, 0], X[:, 1], X[:, 2]) - y

        lo = np.array([1e-6] * len(idx))
        hi = np.array([1e6 if c == "d" else 1.0 for c in free])
        best = min((least_squares(resid, np.clip(np.full(len(idx), s), lo, hi), bounds=(lo, hi), method="trf",
                                  xtol=1e-15, ftol=1e-15, gtol=1e-15) for s in (0.5, 0.9)), key=lambda r: r.cost)
        assert m.converged_
        np.testing.assert_allclose(m.theta_[idx], best.x, atol=1e-6)
        assert m.train_mse_ <= 2 * best.cost / len(y) * (1 + 1e-9)


def test_cpt_parameters_recovered_from_noiseless_data():
    data = synthetic(n=1, m=200, seed=5)
    X = data[["z1", "z2", "p1"]].to_numpy()
    y = cpt_ref(0.75, 0.6, 0.9, 0.55, X[:, 0], X[:, 1], X[:, 2])
    m = tr.CPT("abdg").fit(X, y)
    assert m.params_ == pytest.approx({"alpha": 0.75, "beta": 0.6, "delta": 0.9, "gamma": 0.55}, abs=1e-6)
    m = tr.CPT("g", alpha=0.75, beta=0.6, delta=0.9).fit(X, y)
    assert m.gamma_ == pytest.approx(0.55, abs=1e-7) and m.alpha_ == 0.75


def test_unidentified_parameter_reported_at_its_default():
    data = synthetic(n=1, m=100, seed=2, losses=False)  # gains only: beta never enters
    m = tr.CPT("ab").fit(data[["z1", "z2", "p1"]], data["ce"])
    assert m.beta_ == 1.0 and 0 < m.alpha_ < 1


def test_model_bad_input():
    with pytest.raises(InvalidArgumentError, match="free"):
        tr.CPT("xyz").fit(np.ones((3, 3)) * 0.5, np.ones(3))
    with pytest.raises(ShapeError, match=r"\(m, 3\)"):
        tr.EU().fit(np.ones((3, 2)), np.ones(3))
    with pytest.raises(InvalidArgumentError, match="probability"):
        tr.EU().fit(np.array([[10.0, 0.0, 1.5]]), np.ones(1))
    with pytest.raises(NonFiniteError):
        tr.EU().fit(np.array([[10.0, np.nan, 0.5]]), np.ones(1))
    with pytest.raises(ShapeError):
        tr.EU().fit(np.array([[10.0, 0.0, 0.5]]), np.ones(2))
    with pytest.raises(InvalidArgumentError, match="not fitted"):
        tr.CPT().predict(np.array([[10.0, 0.0, 0.5]]))
    with pytest.raises(InvalidArgumentError, match="utility"):
        tr.EU(utility="hara").fit(np.array([[10.0, 0.0, 0.5]]), np.ones(1))
    with pytest.raises(InvalidArgumentError, match="lower bound"):
        tr.EU(bounds=(2, 1)).fit(np.array([[10.0, 0.0, 0.5]]), np.ones(1))
    # a mixed lottery with every start at eta >= 1 is undefined: a clear error, not a crash
    with pytest.raises(ConvergenceError, match="undefined"):
        tr.EU(starts=[1.5], bounds=(1.2, 3)).fit(np.array([[10.0, -5.0, 0.5]]), np.ones(1))


# ---- tables -----------------------------------------------------------------------------------------
def brute_force(data, make, r=1):
    """{(train tuple, test): MSE} by fitting a fresh model per training set in a plain loop."""
    labels = sorted(data["domain"].unique())
    out = {}
    for T in itertools.combinations(range(len(labels)), r):
        tr_rows = data[data["domain"].isin([labels[i] for i in T])]
        m = make().fit(tr_rows[["z1", "z2", "p1"]].to_numpy(), tr_rows["ce"].to_numpy())
        for d in range(len(labels)):
            te = data[data["domain"] == labels[d]]
            out[(T, d)] = float(np.mean((m.predict(te[["z1", "z2", "p1"]].to_numpy()) - te["ce"].to_numpy()) ** 2))
    return labels, out


@pytest.mark.parametrize("r", [1, 2])
def test_table_equals_brute_force_parametric(r):
    data = synthetic(n=5, m=30)
    labels, ref = brute_force(data, lambda: tr.CPT("abg"), r=r)
    tab = tr.error_table(data, tr.CPT("abg"), r=r)
    assert isinstance(tab, tr.ErrorTable) and tab.r == r and tab.N == 5 * math.comb(4, r)
    assert tab.domains == labels
    for v, d, T in zip(tab.values, tab.test, tab.train):
        assert v == pytest.approx(ref[(tuple(T), d)], rel=1e-7)
    rm = tr.error_table(data, tr.CPT("abg"), r=r, metric="rmse")
    np.testing.assert_allclose(rm.values, np.sqrt(tab.values))


def test_table_equals_brute_force_sklearn():
    from sklearn.ensemble import RandomForestRegressor

    data = synthetic(n=4, m=40)

    def make():
        return RandomForestRegressor(n_estimators=10, random_state=0)

    labels, ref = brute_force(data, make)
    tab = tr.error_table(data, make(), n_jobs=1)
    for v, d, T in zip(tab.values, tab.test, tab.train):
        assert v == pytest.approx(ref[(tuple(T), d)], rel=1e-12)


def test_deterioration_and_shortfall_definitions():
    from sklearn.linear_model import LinearRegression

    data = synthetic(n=5, m=30)
    models = {"CPT": tr.CPT("g"), "EU": tr.EU(), "OLS": LinearRegression()}
    tabs = tr.error_tables(data, models, metric="rmse", n_jobs=1)
    ins = {k: tr.in_sample_errors(data, m, metric="rmse", n_jobs=1).to_numpy() for k, m in models.items()}
    best = np.min(np.vstack(list(ins.values())), axis=0)
    for k in models:
        raw, det, sf = (tabs[k][x] for x in ("raw", "deterioration", "shortfall"))
        np.testing.assert_allclose(det.values, raw.values / ins[k][raw.test], rtol=1e-12)
        np.testing.assert_allclose(sf.values, raw.values / best[raw.test], rtol=1e-12)
        assert np.all(sf.values >= det.values * (1 - 1e-12))
    one = tr.error_table(data, models["CPT"], metric="rmse", normalize="shortfall",
                         shortfall_models={"EU": models["EU"], "OLS": ins["OLS"]}, n_jobs=1)
    np.testing.assert_allclose(one.values, tabs["CPT"]["shortfall"].values, rtol=1e-12)
    det = tr.error_table(data, models["CPT"], r=2, normalize="deterioration")
    raw = tr.error_table(data, models["CPT"], r=2)
    ins_mse = tr.in_sample_errors(data, models["CPT"]).to_numpy()
    np.testing.assert_allclose(det.values, raw.values / ins_mse[raw.test], rtol=1e-12)


def test_random_sample_of_training_sets():
    data = synthetic(n=6, m=20)
    a = tr.error_table(data, tr.EU(), r=3, subsets=7, seed=4)
    b = tr.error_table(data, tr.EU(), r=3, subsets=7, seed=4)
    full = tr.error_table(data, tr.EU(), r=3).tidy()
    assert isinstance(a, pd.DataFrame) and len(a) == 7 * 3
    pd.testing.assert_frame_equal(a, b)
    assert a[["train_1", "train_2", "train_3"]].drop_duplicates().shape[0] == 7
    merged = a.merge(full, on=["train_1", "train_2", "train_3", "test"], suffixes=("", "_full"))
    assert len(merged) == len(a)
    np.testing.assert_allclose(merged["error"], merged["error_full"], rtol=1e-12)
    c = tr.error_table(data, tr.EU(), r=3, subsets=7, seed=5)
    assert not a.equals(c)


def test_mapping_input_and_domain_order():
    data = synthetic(n=3, m=20)
    mapping = {lab: g.drop(columns="domain") for lab, g in data.groupby("domain")}
    mapping = dict(reversed(list(mapping.items())))
    t1 = tr.error_table(mapping, tr.EU())
    assert t1.domains == ["D2", "D1", "D0"]
    t2 = tr.error_table(data, tr.EU())
    pd.testing.assert_frame_equal(t1.to_matrix().loc[t2.domains, t2.domains], t2.to_matrix())
    pl = pytest.importorskip("polars")
    t3 = tr.error_table(pl.from_pandas(data), tr.EU())
    np.testing.assert_array_equal(t3.values, t2.values)
    t4 = tr.error_table({c: data[c].tolist() for c in data.columns}, "eu")  # columns mapping (what R sends)
    np.testing.assert_array_equal(t4.values, t2.values)


def test_table_bad_input():
    data = synthetic(n=3, m=10)
    with pytest.raises(ColumnNotFoundError, match="domain"):
        tr.error_table(data.drop(columns="domain"), tr.EU())
    with pytest.raises(InvalidArgumentError, match="n > r"):
        tr.error_table(data, tr.EU(), r=3)
    with pytest.raises(InvalidArgumentError, match="at least 2 domains"):
        tr.error_table(data[data.domain == "D0"], tr.EU())
    bad = data.copy()
    bad.loc[3, "ce"] = np.nan
    with pytest.raises(NonFiniteError, match="D0"):
        tr.error_table(bad, tr.EU())
    with pytest.raises(InvalidArgumentError, match="normalize"):
        tr.error_table(data, tr.EU(), normalize="ratio")
    with pytest.raises(InvalidArgumentError, match="metric"):
        tr.error_table(data, tr.EU(), metric="mae")
    with pytest.raises(InvalidArgumentError, match="instance"):
        tr.error_table(data, tr.CPT)
    with pytest.raises(InvalidArgumentError, match="fit"):
        tr.error_table(data, 42)
    with pytest.raises(InvalidArgumentError, match="unknown model"):
        tr.error_table(data, "ols")
    with pytest.raises(InvalidArgumentError, match="shortfall_models"):
        tr.error_table(data, tr.EU(), shortfall_models=[tr.CPT()])
    with pytest.raises(ShapeError, match="3 values"):
        tr.error_table(data, tr.EU(), normalize="shortfall", shortfall_models=[[1.0, 2.0]])
    with pytest.raises(InvalidArgumentError, match="subsets"):
        tr.error_table(data, tr.EU(), subsets="some")
    with pytest.raises(InvalidArgumentError, match="n_jobs"):
        tr.error_table(data, tr.EU(), n_jobs=0)
    with pytest.raises(InvalidArgumentError, match="three features"):
        tr.error_table(data, tr.EU(), features=["z1", "p1"])
    with pytest.raises(ColumnNotFoundError):
        tr.error_table(data, tr.EU(), target="y")


def test_domain_cv_tuning_equals_manual_selection():
    """Example 10: with r = 2 the depth is chosen by holding out each training domain in turn."""
    from sklearn.tree import DecisionTreeRegressor

    data = synthetic(n=4, m=40)
    base = DecisionTreeRegressor(random_state=0)
    grid = {"max_depth": [1, 2, 4]}
    tab = tr.error_table(data, tr.DomainCV(base, grid), r=2, n_jobs=1)
    labels = sorted(data["domain"].unique())
    X = {d: g[["z1", "z2", "p1"]].to_numpy() for d, g in data.groupby("domain")}
    Y = {d: g["ce"].to_numpy() for d, g in data.groupby("domain")}
    for T in itertools.combinations(range(4), 2):
        a, b = (labels[i] for i in T)
        scores = []
        for depth in grid["max_depth"]:
            e = 0.0
            for fit_on, held in ((a, b), (b, a)):
                m = DecisionTreeRegressor(random_state=0, max_depth=depth).fit(X[fit_on], Y[fit_on])
                e += np.mean((m.predict(X[held]) - Y[held]) ** 2) / 2
            scores.append(e)
        depth = grid["max_depth"][int(np.argmin(scores))]
        m = DecisionTreeRegressor(random_state=0, max_depth=depth).fit(np.vstack([X[a], X[b]]),
                                                                         np.concatenate([Y[a], Y[b]]))
        for d in set(range(4)) - set(T):
            want = np.mean((m.predict(X[labels[d]]) - Y[labels[d]]) ** 2)
            got = tab.values[(tab.test == d) & np.all(tab.train == np.array(T), axis=1)]
            assert got == pytest.approx([want], rel=1e-12)
    # r = 1: the estimator's own parameters (no tuning possible)
    one = tr.error_table(data, tr.DomainCV(base, grid), n_jobs=1)
    np.testing.assert_array_equal(one.values, tr.error_table(data, base, n_jobs=1).values)


def test_model_names():
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.kernel_ridge import KernelRidge

    kr = tr.make_model("kr")
    assert isinstance(kr, KernelRidge) and (kr.alpha, kr.kernel, kr.gamma) == (1.0, "rbf", 1 / 3)
    rf = tr.make_model("rf", seed=3)
    assert isinstance(rf, RandomForestRegressor) and rf.random_state == 3 and rf.max_depth is None
    assert tr.make_model("cpt").free == "abdg" and tr.make_model("CPT:dg").free == "dg"
    assert tr.make_model("eu-cara")._family == "eu_cara" and tr.make_model("eu-authors")._family == "eu_crra_authors"
    with pytest.raises(InvalidArgumentError, match="did you mean 'rf'"):
        tr.make_model("rff")
    data = synthetic(n=3, m=15)
    ref = tr.error_table(data, KernelRidge(alpha=1.0, kernel="rbf", gamma=1 / 3), n_jobs=1)
    np.testing.assert_array_equal(tr.error_table(data, "kr", n_jobs=1).values, ref.values)


# ---- resumable builds -------------------------------------------------------------------------------
class CountingMean:
    """A user model (fit/predict only) that counts its fits: predicts the training mean."""

    fits = 0

    def fit(self, X, y):
        type(self).fits += 1
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)

    def cache_key(self):
        return "CountingMean-v1"


def test_interrupted_build_resumes_without_refitting(tmp_path):
    data = synthetic(n=6, m=10)
    full = tr.error_table(data, CountingMean(), r=2, n_jobs=1)  # no cache: reference
    CountingMean.fits = 0

    def stop_after_first_batch(label, done, total):
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tr.error_table(data, CountingMean(), r=2, n_jobs=1, cache=tmp_path, progress=stop_after_first_batch)
    first = CountingMean.fits
    assert 0 < first < math.comb(6, 2)
    seen = []
    CountingMean.fits = 0
    again = tr.error_table(data, CountingMean(), r=2, n_jobs=1, cache=tmp_path,
                           progress=lambda _label, d, t: seen.append((d, t)))
    assert CountingMean.fits == math.comb(6, 2) - first  # no finished fit is redone
    assert seen[0] == (first, 15) and seen[-1] == (15, 15)
    np.testing.assert_array_equal(again.values, full.values)
    CountingMean.fits = 0
    tr.error_table(data, CountingMean(), r=2, n_jobs=1, cache=tmp_path)
    assert CountingMean.fits == 0


def test_interrupted_parametric_build_resumes(tmp_path):
    data = synthetic(n=10, m=15)
    ref = tr.error_table(data, tr.CPT("g"), r=3)  # 120 training sets: batches of 64 and 56
    calls = []

    def stop(label, done, total):
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tr.error_table(data, tr.CPT("g"), r=3, cache=tmp_path, progress=stop, n_jobs=1)
    files = list(next(tmp_path.iterdir()).iterdir())
    assert 0 < len(files) < 120
    seen = []
    again = tr.error_table(data, tr.CPT("g"), r=3, cache=tmp_path, progress=lambda _label, d, t: seen.append(d), n_jobs=1)
    assert seen[0] == len(files) and seen[-1] == 120
    np.testing.assert_array_equal(again.values, ref.values)
    # another model specification does not reuse these results
    other = tr.error_table(data, tr.CPT("g", alpha=0.9), r=3, cache=tmp_path)
    assert not np.allclose(other.values, ref.values)


# ---- within-domain CV (Table 1) ---------------------------------------------------------------------
def test_within_domain_cv_equals_manual_kfold():
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import KFold

    data = synthetic(n=3, m=40)
    seen = []
    cv = tr.within_domain_cv(data, {"EU": tr.EU(), "OLS": LinearRegression()}, k=5, seed=0, n_jobs=1,
                             progress=lambda label, done, total: seen.append((label, done, total)))
    assert [s[1:] for s in seen] == [(0, 2), (1, 2), (2, 2)]  # progress was once accepted and ignored
    assert list(cv.index) == ["D0", "D1", "D2"]
    for lab, g in data.groupby("domain"):
        X, y = g[["z1", "z2", "p1"]].to_numpy(), g["ce"].to_numpy()
        for name, make in (("EU", tr.EU), ("OLS", LinearRegression)):
            errs = []
            for tr_idx, te_idx in KFold(5, shuffle=True, random_state=0).split(X):
                m = make().fit(X[tr_idx], y[tr_idx])
                errs.append(np.mean((m.predict(X[te_idx]) - y[te_idx]) ** 2))
            assert cv.loc[lab, name] == pytest.approx(np.mean(errs), rel=1e-6)
    ratio = tr.cv_ratio(cv, reference="OLS")
    assert ratio["EU"] == pytest.approx(float((cv["EU"] / cv["OLS"]).mean()))
    with pytest.raises(InvalidArgumentError, match="fewer than"):
        tr.within_domain_cv(data.iloc[:45], {"EU": tr.EU()}, k=10)


def test_non_converged_fits_are_reported():
    from llmsurrogate.exceptions import LLMSurrogateWarning

    data = synthetic(n=3, m=30)
    with pytest.warns(LLMSurrogateWarning, match="convergence test"):
        tr.error_table(data, tr.CPT("abdg", max_iter=1))


# ---- the application: the authors' published matrices ----------------------------------------------
@pytest.fixture(scope="module")
def certainty_equivalents():
    return ds.load_certainty_equivalents()


def test_domain_order_of_published_matrices_recovered_by_matching(certainty_equivalents):
    from scipy.optimize import linear_sum_assignment

    mine = matrix_with_in_sample(certainty_equivalents, tr.EU(zero_prize="authors"), "rmse")
    theirs = ds.load_transfer_errors("EU_iso").to_numpy(float)
    n = 44
    L, LF = np.log(mine), np.log(theirs)
    # domain i of ours vs index j of theirs: in-sample error, and the sorted off-diagonal row and column
    cost = np.array([[10 * abs(L[i, i] - LF[j, j])
                      + np.abs(np.sort(np.delete(L[i], i)) - np.sort(np.delete(LF[j], j))).sum()
                      + np.abs(np.sort(np.delete(L[:, i], i)) - np.sort(np.delete(LF[:, j], j))).sum()
                      for j in range(n)] for i in range(n)])
    _, col = linear_sum_assignment(cost)
    order = fixture_order()
    assert np.array_equal(order[col], np.arange(n))


@pytest.mark.parametrize("free", ["EU_iso", "g", "ab", "dg", "abg", "abdg", "a", "d"])
def test_r1_tables_match_published_matrices(certainty_equivalents, free):
    """The stored values are RMSEs; the EU matrix uses the authors' zero-prize convention.

    Rows whose training domain has gains and losses match to ~1e-6 (CPT abdg on Fehr-Duda et al.
    (2010): 1.5e-5, where our fit is the better one); on gains-only training domains with few
    lotteries a CPT parameter is not identified and the authors' optimiser left it at an arbitrary
    value, so those rows can differ: test_transfer_build_published.py certifies each of them."""
    model = tr.EU(zero_prize="authors") if free == "EU_iso" else tr.CPT(free)
    order = fixture_order()
    theirs = ds.load_transfer_errors(free).to_numpy(float)
    mine = matrix_with_in_sample(certainty_equivalents, model, "mse")[np.ix_(order, order)]
    rel_rmse = np.abs(np.sqrt(mine) - theirs) / theirs
    rel_mse = np.abs(mine - theirs) / theirs
    assert np.median(rel_rmse) < 1e-7 < np.median(rel_mse)
    gains_only = ds.certainty_equivalent_domains()["gains_only"].to_numpy()[order] == 1
    tol = 2e-5 if free == "abdg" else 1e-5
    assert rel_rmse[~gains_only].max() < tol
    assert np.diag(rel_rmse).max() < 1e-5  # in-sample errors
    if free in ("EU_iso", "a", "d"):  # every parameter identified on every domain
        assert rel_rmse.max() < 1e-5


# ---- command line -----------------------------------------------------------------------------------
def clean_env():
    """The environment for CLI subprocesses. Importing rpy2 (earlier tests) puts R's library folders
    and /usr/lib/x86_64-linux-gnu on LD_LIBRARY_PATH, where a child Python can pick up the system's
    libssl/libpython instead of its own: drop what rpy2 added."""
    import os

    env = dict(os.environ)
    if "/usr/lib/R/lib" in env.get("LD_LIBRARY_PATH", ""):
        env.pop("LD_LIBRARY_PATH")
    return env


def run_cli(*args):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))
    assert exe, "the llmsurrogate console script is not installed next to this Python"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, env=clean_env())


def test_cli_transfer_build(tmp_path):
    data = synthetic(n=4, m=20)
    data.to_csv(tmp_path / "d.csv", index=False)
    data.to_parquet(tmp_path / "d.parquet")
    out = run_cli("transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "cpt:abg", "--metric", "rmse",
                  "--out", str(tmp_path / "t.csv"), "--n-jobs", "1")
    assert out.returncode == 0, out.stderr
    # the file's rows come in the fits' order (training set, then test domain): compared as tables
    got = tr.ErrorTable.from_long(pd.read_csv(tmp_path / "t.csv"))
    ref = tr.error_table(data, tr.CPT("abg"), metric="rmse")
    assert got.domains == ref.domains
    np.testing.assert_allclose(got.values, ref.values, rtol=1e-12)
    assert f"wrote {ref.N} rows to" in out.stdout
    out = run_cli("transfer", "build", "--data", str(tmp_path / "d.parquet"), "--model", "eu", "-r", "2",
                  "--normalize", "deterioration", "--out", str(tmp_path / "t.parquet"))
    assert out.returncode == 0, out.stderr
    long = pd.read_parquet(tmp_path / "t.parquet")
    assert long[["train_1", "train_2", "test"]].values.tolist() == [
        [f"D{a}", f"D{b}", f"D{d}"] for a, b in itertools.combinations(range(4), 2) for d in range(4) if d not in (a, b)]
    got = tr.ErrorTable.from_long(long)
    ref = tr.error_table(data, tr.EU(), r=2, normalize="deterioration")
    np.testing.assert_allclose(got.values, ref.values, rtol=1e-12)
    assert f"wrote {ref.N} rows to" in out.stdout
    out = run_cli("transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "eu", "--matrix",
                  "--normalize", "shortfall", "--shortfall-model", "cpt:g", "--out", str(tmp_path / "m.csv"))
    assert out.returncode == 0, out.stderr
    mat = pd.read_csv(tmp_path / "m.csv", index_col=0)
    ref = tr.error_table(data, tr.EU(), normalize="shortfall", shortfall_models=[tr.CPT("g")]).to_matrix()
    np.testing.assert_allclose(mat.to_numpy(), ref.to_numpy(), rtol=1e-12)


def test_cli_transfer_build_bad_input(tmp_path):
    data = synthetic(n=3, m=10)
    data.to_csv(tmp_path / "d.csv", index=False)
    out = run_cli("transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "cpt:q", "--out",
                  str(tmp_path / "t.csv"))
    assert out.returncode == 1 and "distinct letters" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "ols", "--out",
                  str(tmp_path / "t.csv"))
    assert out.returncode == 1 and "unknown model" in out.stderr
    out = run_cli("transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "eu", "--domain", "pool",
                  "--out", str(tmp_path / "t.csv"))
    assert out.returncode == 1 and "pool" in out.stderr
    out = run_cli("transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "eu", "--subsets", "many",
                  "--out", str(tmp_path / "t.csv"))
    assert out.returncode == 2 and "--subsets" in out.stderr  # a usage error (click's exit 2)


def test_cli_build_killed_mid_run_resumes(tmp_path):
    """A real interruption: the CLI process is killed (SIGKILL) after some fits are cached; the rerun
    leaves those cache files untouched (no refit) and gives the table of an uninterrupted run."""
    import os
    import shutil
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    data = synthetic(n=8, m=60)
    data.to_csv(tmp_path / "d.csv", index=False)
    exe = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))
    cache = tmp_path / "cache"
    args = [exe, "transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "rf", "-r", "2",
            "--n-jobs", "1", "--out", str(tmp_path / "t.csv")]
    proc = subprocess.Popen([*args, "--cache", str(cache)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=clean_env())
    deadline = time.time() + 120
    files: list = []
    while time.time() < deadline and proc.poll() is None:
        files = list(cache.rglob("*.entry")) if cache.exists() else []
        if len(files) >= 5:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the build finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = {f: f.stat().st_mtime_ns for f in cache.rglob("*.entry")}
    assert 5 <= len(done) < math.comb(8, 2)
    out = subprocess.run([*args, "--cache", str(cache)], capture_output=True, text=True, timeout=300, env=clean_env())
    assert out.returncode == 0, out.stderr
    assert all(f.stat().st_mtime_ns == t for f, t in done.items())
    assert len(list(cache.rglob("*.entry"))) == math.comb(8, 2)
    resumed = pd.read_csv(tmp_path / "t.csv")
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, env=clean_env())
    assert out.returncode == 0, out.stderr
    pd.testing.assert_frame_equal(resumed, pd.read_csv(tmp_path / "t.csv"))


@pytest.mark.parametrize("name", ["llmsurrogate.transfer._models", "llmsurrogate.transfer._dispatch",
                                  "llmsurrogate.transfer._build"])
def test_docstring_examples_hold(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_old_random_state_and_positional_arguments_warn_and_give_the_same_result():
    data = synthetic(n=5, m=30, seed=8)
    new = tr.error_table(data, tr.EU(), r=2, subsets=4, seed=3, n_jobs=1)
    with pytest.warns(FutureWarning, match="`random_state` is now called `seed`"):
        old = tr.error_table(data, tr.EU(), r=2, subsets=4, random_state=3, n_jobs=1)
    pd.testing.assert_frame_equal(old, new)
    with pytest.warns(FutureWarning, match="pass `r`, `metric` by name"):
        old = tr.error_table(data, tr.EU(), 2, "mse", subsets=4, seed=3, n_jobs=1)
    pd.testing.assert_frame_equal(old, new)
    with pytest.warns(FutureWarning, match="`random_state` is now called `seed`"):
        assert tr.make_model("rf", random_state=3).random_state == tr.make_model("rf", seed=3).random_state == 3
    tabs = tr.error_tables(data, {"EU": tr.EU()}, r=2, subsets=4, seed=3, n_jobs=1, kinds=("raw",))
    with pytest.warns(FutureWarning, match="`random_state` is now called `seed`"):
        old = tr.error_tables(data, {"EU": tr.EU()}, r=2, subsets=4, random_state=3, n_jobs=1, kinds=("raw",))
    pd.testing.assert_frame_equal(old["EU"]["raw"], tabs["EU"]["raw"])
    cv = tr.within_domain_cv(data, {"EU": tr.EU()}, k=3, seed=1, n_jobs=1)
    with pytest.warns(FutureWarning, match="`random_state` is now called `seed`"):
        pd.testing.assert_frame_equal(tr.within_domain_cv(data, {"EU": tr.EU()}, k=3, random_state=1, n_jobs=1), cv)
    with pytest.warns(FutureWarning, match="pass `k` by name"):
        pd.testing.assert_frame_equal(tr.within_domain_cv(data, {"EU": tr.EU()}, 3, seed=1, n_jobs=1), cv)
    ins = tr.in_sample_errors(data, tr.EU(), n_jobs=1)
    with pytest.warns(FutureWarning, match="pass `metric` by name"):
        pd.testing.assert_series_equal(tr.in_sample_errors(data, tr.EU(), "mse", n_jobs=1), ins)


def test_n_jobs_none_follows_an_enclosing_parallel_config():
    import joblib
    from sklearn.tree import DecisionTreeRegressor

    from llmsurrogate._workers import joblib_n_jobs

    data = synthetic(n=4, m=20, seed=2)
    model = DecisionTreeRegressor(max_depth=2, random_state=0)
    ref = tr.error_table(data, model, n_jobs=1)
    with joblib.parallel_config(backend="threading", n_jobs=2):
        assert joblib_n_jobs(None) == 2
        got = tr.error_table(data, model)
    np.testing.assert_array_equal(got.values, ref.values)
    assert joblib_n_jobs(None) == -1 and joblib_n_jobs(3) == 3
