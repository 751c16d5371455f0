"""The small-sample option of the PPI intervals, ``small_sample=True`` (docs/methods/ppi.md §5):
degrees of freedom and quantiles against hand computations, the classical special cases (Student's
t-interval of a mean, HC1 with t(n - d) for OLS, fixest's hetero standard errors for a
fixed-effects regression), nothing changed when off, wider intervals that shrink back to the
z-interval as n grows, and p-values that match the interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llmsurrogate import fe, ppi
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.ppi._small_sample import lam_variance, satterthwaite_df
from ppi_ols_reference import own_fit_rows


def _mean_data(n=40, N=400, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(1.0, 1.0, n)
    return y, y + rng.normal(0, 0.6, n), rng.normal(1.0, 1.0, N) + rng.normal(0, 0.6, N)


def _ols_data(n=40, N=400, seed=1):
    rng = np.random.default_rng(seed)

    def rows(m):
        x = rng.normal(size=m)
        y = 1 + 2 * x + rng.normal(size=m) * np.sqrt(0.5 + 0.5 * x * x)
        return np.column_stack([np.ones(m), x]), y, y + rng.normal(0, 0.7, m)

    X, y, yh = rows(n)
    Xu, _, yhu = rows(N)
    return X, y, yh, Xu, yhu


def _logistic_data(n=80, N=800, seed=2):
    rng = np.random.default_rng(seed)

    def rows(m):
        X = np.column_stack([np.ones(m), rng.normal(size=m)])
        y = (rng.random(m) < 1 / (1 + np.exp(-X @ [-0.3, 1.0]))).astype(float)
        return X, y, 1 / (1 + np.exp(-(X @ [-0.3, 1.0] + 1.5 * (y - 0.5) + rng.normal(0, 1, m))))

    X, y, yh = rows(n)
    Xu, _, yhu = rows(N)
    return X, y, yh, Xu, yhu


def _fe_frames(n=60, N=600, seed=3):
    rng = np.random.default_rng(seed)

    def rows(m):
        df = pd.DataFrame({"firm": np.arange(m) % 10, "x": rng.normal(size=m)})
        df["y"] = 1.5 * df["x"] + 0.3 * df["firm"] + rng.normal(size=m)
        df["llm_y"] = df["y"] + rng.normal(0, 0.7, m)
        return df

    return rows(n), rows(N).drop(columns="y")


def _all_results(small_sample, level=0.9, method="ppi++"):
    y, yh, yu = _mean_data()
    X, yo, yho, Xu, yhuo = _ols_data()
    Xl, yl, yhl, Xlu, yhlu = _logistic_data()
    lab, unl = _fe_frames()
    kw = {"small_sample": small_sample, "level": level, "method": method}
    return {
        "mean": ppi.mean(y, yh, yu, **kw),
        "weighted mean": ppi.mean(y, yh, yu, weights=np.linspace(1, 3, y.size),
                                  weights_unlabeled=np.linspace(1, 3, yu.size), **kw),
        "clustered mean": ppi.mean(y, yh, yu, cluster=np.arange(y.size) % 8, cluster_unlabeled=np.arange(yu.size) % 8,
                                   **kw),
        "ols": ppi.ols(X, yo, yho, Xu, yhuo, **kw),
        "logistic": ppi.logistic(Xl, yl, yhl, Xlu, yhlu, **kw),
        "poisson": ppi.poisson(X, np.round(np.exp(0.3 * X[:, 1])), np.exp(0.3 * X[:, 1]), Xu,
                               np.exp(0.3 * Xu[:, 1]) + 0.1, **kw),
        "feols": ppi.feols("y ~ x | firm", lab, unl, prediction="llm_y", **kw),
        "feols CRV1": ppi.feols("y ~ x | firm", lab, unl, prediction="llm_y", vcov={"CRV1": "firm"}, **kw),
    }


# -- hand computations ---------------------------------------------------------------------------
def test_classical_mean_is_students_t_interval():
    y, yh, yu = _mean_data()
    res = ppi.mean(y, yh, yu, method="classical", level=0.9, small_sample=True)
    n = y.size
    half = stats.t.ppf(0.95, n - 1) * y.std(ddof=1) / np.sqrt(n)
    assert res.df == (n - 1.0,)
    assert res.ci_low == pytest.approx(y.mean() - half, rel=1e-12)
    assert res.ci_high == pytest.approx(y.mean() + half, rel=1e-12)
    # the classical columns of a PPI++ result are the same interval
    pp = ppi.mean(y, yh, yu, level=0.9, small_sample=True)
    assert pp.table["classical_ci_low"][0] == pytest.approx(res.ci_low, rel=1e-12)


def test_mean_with_lam_given_satterthwaite_by_hand():
    y, yh, yu = _mean_data()
    n, N, lam = y.size, yu.size, 0.6
    res = ppi.mean(y, yh, yu, lam=lam, level=0.95, small_sample=True)
    a = np.var(y - lam * yh, ddof=1) / n
    b = np.var(lam * yu, ddof=1) / N
    df = (a + b) ** 2 / (a * a / (n - 1) + b * b / (N - 1))
    assert res.df[0] == pytest.approx(df, rel=1e-12)
    half = stats.t.ppf(0.975, df) * np.sqrt(a + b)
    assert res.ci_high - res.estimate == pytest.approx(half, rel=1e-12)
    assert n - 1 < res.df[0] < n + N - 2


def test_mean_tuned_adds_the_variance_of_lambda_hat():
    y, yh, yu = _mean_data()
    n, N = y.size, yu.size
    res = ppi.mean(y, yh, yu, level=0.95, small_sample=True)
    lam = res.lam
    a = np.var(y - lam * yh, ddof=1) / n
    b = np.var(lam * yu, ddof=1) / N
    theta1 = yu.mean() + (y - yh).mean()
    v_lam = lam_variance((y - theta1)[:, None], (yh - theta1)[:, None], (yu - theta1)[:, None], np.eye(1))
    extra = (yu.mean() - yh.mean()) ** 2 * v_lam
    assert extra > 0
    assert res.se ** 2 == pytest.approx(a + b + extra, rel=1e-12)
    assert res.df[0] == pytest.approx(float(satterthwaite_df(a + extra, b, n - 1, N - 1)), rel=1e-12)


def test_lam_variance_matches_the_spread_of_lambda_hat():
    """The delta-method variance of lambda-hat against its Monte Carlo variance."""
    rng = np.random.default_rng(7)
    lams, deltas = [], []
    for _ in range(400):
        y = rng.normal(size=100)
        yh = y + rng.normal(0, 1, 100)
        yu = rng.normal(size=1000) + rng.normal(0, 1, 1000)
        t1 = yu.mean() + (y - yh).mean()
        g, gh, gu = (y - t1)[:, None], (yh - t1)[:, None], (yu - t1)[:, None]
        c = np.cov(y, yh, ddof=0)[0, 1]
        v = np.var(np.concatenate([yh, yu]), ddof=1)
        lams.append(c / ((1 + 0.1) * v))
        deltas.append(lam_variance(g, gh, gu, np.eye(1)))
    assert np.mean(deltas) == pytest.approx(np.var(lams), rel=0.25)


def test_ols_classical_is_hc1_with_t():
    X, y, yh, Xu, yhu = _ols_data()
    n, d = X.shape
    res = ppi.ols(X, y, yh, Xu, yhu, method="classical", small_sample=True, level=0.9)
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    e = y - X @ beta
    bread = np.linalg.inv(X.T @ X)
    hc1 = bread @ (X.T * e * e) @ X @ bread * n / (n - d)
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(hc1)), rtol=1e-10)
    assert res.df == (n - d, n - d)
    np.testing.assert_allclose(res.ci_high - res.estimate, stats.t.ppf(0.95, n - d) * res.se, rtol=1e-12)


def test_ols_ppi_satterthwaite_by_hand():
    X, y, yh, Xu, yhu = _ols_data()
    n, d = X.shape
    N = Xu.shape[0]
    res = ppi.ols(X, y, yh, Xu, yhu, method="ppi", small_sample=True)
    z = ppi.ols(X, y, yh, Xu, yhu, method="ppi")
    # each least-squares fit's own influence rows (docs/methods/ppi.md §3.2)
    r = own_fit_rows(X, y) - own_fit_rows(X, yh)
    u = own_fit_rows(Xu, yhu)
    a = np.var(r, axis=0, ddof=1) / n
    b = np.var(u, axis=0, ddof=1) / N
    np.testing.assert_allclose(a + b, z.se ** 2, rtol=1e-10)   # the z-interval's variance, split
    a_s, b_s = a * (n - 1) / (n - d), b * (N - 1) / (N - d)
    np.testing.assert_allclose(res.se ** 2, a_s + b_s, rtol=1e-10)
    np.testing.assert_allclose(res.df, (a_s + b_s) ** 2 / (a_s ** 2 / (n - d) + b_s ** 2 / (N - d)), rtol=1e-10)


def test_feols_classical_equals_fixest_hetero():
    lab, unl = _fe_frames()
    res = ppi.feols("y ~ x | firm", lab, unl, prediction="llm_y", method="classical", small_sample=True)
    ref = fe.feols("y ~ x | firm", lab, vcov="hetero")
    assert res.se == pytest.approx(float(ref.se().iloc[0]), rel=1e-8)
    assert res.df == (float(len(lab) - 1 - 10),)


def test_clusters_use_g_minus_one():
    res = _all_results(True)
    assert res["clustered mean"].df == (7.0,)
    assert res["feols CRV1"].df == (9.0,)


# -- the option's behaviour ---------------------------------------------------------------------
@pytest.mark.parametrize("method", ["classical", "ppi", "ppi++"])
def test_off_changes_nothing(method):
    default = _all_results(False, method=method)
    y, yh, yu = _mean_data()
    assert ppi.mean(y, yh, yu) == ppi.mean(y, yh, yu, small_sample=False)
    for name, res in default.items():
        assert res.df is None and res.small_sample is False, name
        assert "z-intervals" in res.summary().as_text()


@pytest.mark.parametrize("method", ["classical", "ppi", "ppi++"])
def test_wider_than_z_and_p_value_matches(method):
    z = _all_results(False, method=method)
    t = _all_results(True, method=method)
    for name in z:
        wz = np.atleast_1d(z[name].ci_high - z[name].ci_low)
        wt = np.atleast_1d(t[name].ci_high - t[name].ci_low)
        assert np.all(wt > wz), name
        np.testing.assert_allclose(t[name].estimate, z[name].estimate, rtol=1e-12, err_msg=name)
        # the classical columns widen too
        assert np.all(t[name].table["classical_ci_high"] - t[name].table["classical_ci_low"]
                      > z[name].table["classical_ci_high"] - z[name].table["classical_ci_low"]), name
        np.testing.assert_allclose(t[name].p_value(t[name].ci_low), 0.1, rtol=1e-8, err_msg=name)
        np.testing.assert_allclose(t[name].p_value(t[name].ci_high), 0.1, rtol=1e-8, err_msg=name)
        tidy = t[name].tidy()
        assert "df" in tidy.columns
        np.testing.assert_allclose(tidy["p_value"], stats.t.sf(np.abs(tidy["statistic"]), tidy["df"]) * 2, rtol=1e-10)
        assert "t-intervals" in t[name].summary().as_text()
        assert ppi.PPIResult.from_json(t[name].to_json()) == t[name]


def test_widening_shrinks_to_z_as_n_grows():
    ratios = []
    for n in (30, 100, 400, 2000):
        y, yh, yu = _mean_data(n=n, N=10 * n, seed=n)
        z = ppi.mean(y, yh, yu)
        t = ppi.mean(y, yh, yu, small_sample=True)
        ratios.append((t.ci_high - t.ci_low) / (z.ci_high - z.ci_low))
    assert all(r > 1 for r in ratios)
    assert ratios == sorted(ratios, reverse=True)
    assert ratios[-1] < 1.005


def test_df_grows_with_the_unlabelled_share():
    """With lambda fixed, the unlabelled part's share of the variance raises the df above n - 1."""
    y, yh, yu = _mean_data()
    dfs = [ppi.mean(y, yh, yu, lam=lam, small_sample=True).df[0] for lam in (0.0, 0.5, 1.0)]
    assert dfs[0] == pytest.approx(y.size - 1)
    assert dfs[0] < dfs[1] < dfs[2]


@pytest.mark.parametrize("bad", [1, "yes", None, 0.5])
def test_small_sample_must_be_a_bool(bad):
    y, yh, yu = _mean_data()
    with pytest.raises(InvalidArgumentError, match="small_sample"):
        ppi.mean(y, yh, yu, small_sample=bad)
