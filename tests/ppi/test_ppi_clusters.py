"""Cluster-robust PPI (docs/methods/ppi.md §8) against a brute-force sandwich written out here: a
loop over clusters of the per-row influence terms, G/(G-1), and lambda-hat as the minimiser of
that variance; clusters of size one against the unclustered results up to the stated factors."""

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import ppi
from ppi_ols_reference import own_fit_rows
from scipy.special import expit


def _data(rng, n, N, G, family="linear"):
    """Firms shared by the labelled and unlabelled rows, with a firm effect in y and in x."""
    firm = rng.integers(0, G, n + N)
    u = rng.normal(size=G)[firm]
    x = rng.normal(size=n + N) + 0.5 * u
    X = np.column_stack([np.ones(n + N), x])
    eta = 0.3 + 0.8 * x + u
    if family == "linear":
        y = eta + rng.normal(size=n + N)
        yhat = y + rng.normal(scale=0.7, size=n + N) + 0.3 * u
    elif family == "logistic":
        y = rng.binomial(1, expit(eta)).astype(float)
        yhat = expit(0.7 * eta + (y - 0.5) + rng.normal(size=n + N))
    else:
        y = rng.poisson(np.exp(0.4 * eta)).astype(float)
        yhat = np.maximum(y + rng.normal(scale=1.0, size=n + N), 0)
    return (X[:n], y[:n], yhat[:n], firm[:n]), (X[n:], yhat[n:], firm[n:])


def _mu(family, eta):
    return {"linear": eta, "logistic": expit(eta), "poisson": np.exp(eta)}[family]


def _brute_ols(lab, unl, lam):
    """OLS's cluster sandwich at lambda, written out: each fit's own influence rows, centred,
    summed by cluster over n and N, times G/(G-1)."""
    X, y, yhat, cl = lab
    Xu, yhu, clu = unl
    n, N = len(y), len(yhu)
    r = own_fit_rows(X, y) - lam * own_fit_rows(X, yhat)
    s = lam * own_fit_rows(Xu, yhu)
    r, s = r - r.mean(axis=0), s - s.mean(axis=0)
    ids = sorted(set(cl) | (set(clu) if lam != 0 else set()))
    meat = np.zeros((X.shape[1], X.shape[1]))
    for c in ids:
        T = r[cl == c].sum(axis=0) / n + (s[clu == c].sum(axis=0) / N if lam != 0 else 0)
        meat += np.outer(T, T)
    return len(ids) / (len(ids) - 1) * meat


def _brute(family, theta, lab, unl, lam):
    """The cluster sandwich at theta, lambda, written out: a loop over the clusters (OLS:
    :func:`_brute_ols`, the variance of its two least-squares fits)."""
    if family == "linear":
        return _brute_ols(lab, unl, lam)
    X, y, yhat, cl = lab
    Xu, yhu, clu = unl
    n, N = len(y), len(yhu)
    mu, muu = _mu(family, X @ theta), _mu(family, Xu @ theta)
    v = {"linear": np.ones_like(mu), "logistic": mu * (1 - mu), "poisson": mu}[family]
    vu = {"linear": np.ones_like(muu), "logistic": muu * (1 - muu), "poisson": muu}[family]
    if lam == 0:
        H = (X * v[:, None]).T @ X / n
    else:
        H = ((X * v[:, None]).T @ X + (Xu * vu[:, None]).T @ Xu) / (n + N)
    r = X * ((mu - y) - lam * (mu - yhat))[:, None]
    s = Xu * (lam * (muu - yhu))[:, None]
    r = r - r.mean(axis=0)
    s = s - s.mean(axis=0)
    ids = sorted(set(cl) | (set(clu) if lam != 0 else set()))
    meat = np.zeros((X.shape[1], X.shape[1]))
    for c in ids:
        T = r[cl == c].sum(axis=0) / n
        if lam != 0:
            T = T + s[clu == c].sum(axis=0) / N
        meat += np.outer(T, T)
    G = len(ids)
    Hi = np.linalg.inv(H)
    return Hi @ (G / (G - 1) * meat) @ Hi


FITS = {"linear": ppi.ols, "logistic": ppi.logistic, "poisson": ppi.poisson}


@pytest.mark.parametrize("family", ["linear", "logistic", "poisson"])
@pytest.mark.parametrize("method,lam", [("ppi", None), ("ppi++", 0.4), ("classical", None)])
def test_regression_se_equals_brute_force_cluster_sandwich(family, method, lam):
    rng = np.random.default_rng(11)
    lab, unl = _data(rng, 300, 2000, 40, family)
    res = FITS[family](lab[0], lab[1], lab[2], unl[0], unl[1], method=method, lam=lam, cluster=lab[3],
                       cluster_unlabeled=unl[2])
    lam_used = {"ppi": 1.0, "classical": 0.0}.get(method, lam)
    cov = _brute(family, np.asarray(res.estimate), lab, unl, lam_used)
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(cov)), rtol=1e-10)
    plain = FITS[family](lab[0], lab[1], lab[2], unl[0], unl[1], method=method, lam=lam)
    np.testing.assert_allclose(res.estimate, plain.estimate, rtol=1e-12)   # clusters change the variance only
    assert res.clustered and "cluster-robust" in res.summary().as_text()


@pytest.mark.parametrize("family", ["linear", "logistic", "poisson"])
def test_tuned_lambda_minimises_the_clustered_variance(family):
    rng = np.random.default_rng(5)
    lab, unl = _data(rng, 300, 2000, 30, family)
    res = FITS[family](lab[0], lab[1], lab[2], unl[0], unl[1], cluster=lab[3], cluster_unlabeled=unl[2], coord=1)
    lam = res.lam
    assert 0 < lam < 1
    fixed = FITS[family](lab[0], lab[1], lab[2], unl[0], unl[1], lam=lam, cluster=lab[3], cluster_unlabeled=unl[2])
    assert fixed.se[1] == pytest.approx(res.se[1], rel=1e-12)
    grid = np.linspace(max(lam - 0.2, 0), min(lam + 0.2, 1), 41)
    theta = np.asarray(res.estimate)
    vals = [_brute(family, theta, lab, unl, g)[1, 1] for g in grid]
    # at a fixed theta the variance is a quadratic in lambda; its minimiser is near lambda-hat (theta moves
    # with lambda between the tuning steps, so within the step between the two fits)
    assert abs(grid[int(np.argmin(vals))] - lam) < 0.06


def test_mean_clustered_lambda_is_the_exact_minimiser():
    rng = np.random.default_rng(2)
    (_, y, yhat, cl), (_, yhu, clu) = _data(rng, 400, 3000, 50)
    res = ppi.mean(y, yhat, yhu, cluster=cl, cluster_unlabeled=clu)

    def brute_var(lam):
        n, N = len(y), len(yhu)
        r, s = y - lam * yhat, lam * yhu
        r, s = r - r.mean(), s - s.mean()
        ids = sorted(set(cl) | set(clu))
        tot = [r[cl == c].sum() / n + s[clu == c].sum() / N for c in ids]
        return len(ids) / (len(ids) - 1) * float(np.sum(np.square(tot)))

    assert res.se ** 2 == pytest.approx(brute_var(res.lam), rel=1e-12)
    grid = np.linspace(0, 1, 2001)
    assert res.lam == pytest.approx(grid[int(np.argmin([brute_var(g) for g in grid]))], abs=1e-3)
    assert 0.2 < res.lam < 1
    # the unclustered interval is narrower here: the firm effect in the prediction's error is shared
    assert res.se > ppi.mean(y, yhat, yhu, lam=res.lam).se


def test_clusters_of_size_one():
    rng = np.random.default_rng(3)
    (X, y, yhat, _), (Xu, yhu, _) = _data(rng, 200, 1500, 10)
    n, N = len(y), len(yhu)
    ids, ids_u = np.arange(n), np.arange(n, n + N)
    # mean: the unclustered variance has ddof 0, so size-one clusters give it times G/(G-1), G = n + N
    for lam in (0.0, 0.3, 1.0):
        c = ppi.mean(y, yhat, yhu, method="ppi++", lam=lam, cluster=ids, cluster_unlabeled=ids_u) if lam else \
            ppi.mean(y, yhat, yhu, method="classical", cluster=ids, cluster_unlabeled=ids_u)
        u = ppi.mean(y, yhat, yhu, method="ppi++", lam=lam) if lam else ppi.mean(y, yhat, yhu, method="classical")
        G = n + N if lam else n
        assert c.se ** 2 == pytest.approx(u.se ** 2 * G / (G - 1), rel=1e-12)
    # classical GLMs: ddof-1 meat = size-one clusters exactly; classical OLS (HC0) times n/(n-1)
    for family in ("logistic", "poisson"):
        lab, unl = _data(rng, 200, 1500, 10, family)
        c = FITS[family](lab[0], lab[1], lab[2], unl[0], unl[1], method="classical", cluster=np.arange(200))
        u = FITS[family](lab[0], lab[1], lab[2], unl[0], unl[1], method="classical")
        np.testing.assert_allclose(c.se, u.se, rtol=1e-10)
    c = ppi.ols(X, y, yhat, Xu, yhu, method="classical", cluster=ids)
    u = ppi.ols(X, y, yhat, Xu, yhu, method="classical")
    np.testing.assert_allclose(c.se ** 2, u.se ** 2 * n / (n - 1), rtol=1e-10)
    # PPI with clusters of size one in both samples: the unclustered ddof-1 pieces at ddof 0, times
    # (n+N)/(n+N-1)
    c = ppi.ols(X, y, yhat, Xu, yhu, method="ppi", cluster=ids, cluster_unlabeled=ids_u)
    u = ppi.ols(X, y, yhat, Xu, yhu, method="ppi")
    r = own_fit_rows(X, y) - own_fit_rows(X, yhat)
    s = own_fit_rows(Xu, yhu)
    meat = np.cov(r.T, ddof=0) / n + np.cov(s.T, ddof=0) / N
    np.testing.assert_allclose(c.se ** 2, np.diag(meat) * (n + N) / (n + N - 1), rtol=1e-10)
    np.testing.assert_allclose(u.se ** 2, np.diag(np.cov(r.T) / n + np.cov(s.T) / N), rtol=1e-10)


def test_cluster_inputs_paired_by_label_and_checked():
    rng = np.random.default_rng(4)
    y = pd.Series(rng.normal(size=50), index=np.arange(50) + 100)
    yhat = y + rng.normal(size=50)
    cl = pd.Series(np.repeat(np.arange(10), 5), index=y.index).sample(frac=1.0, random_state=1)
    yhu = rng.normal(size=300)
    a = ppi.mean(y, yhat, yhu, cluster=cl)
    b = ppi.mean(y, yhat, yhu, cluster=cl.iloc[::-1])        # the same ids in another row order
    c = ppi.mean(y, yhat, yhu, cluster=cl.to_numpy())  # by position: other clusters
    assert a.clustered and a.se == b.se and a.se != c.se
    from llmsurrogate.exceptions import InvalidArgumentError, ShapeError
    with pytest.raises(ShapeError, match="`cluster`"):
        ppi.mean(y, yhat, rng.normal(size=300), cluster=np.arange(49))
    with pytest.raises(InvalidArgumentError, match="`cluster`"):
        ppi.mean(y, yhat, rng.normal(size=300), cluster=np.zeros(50))
    with pytest.raises(InvalidArgumentError, match="`cluster_unlabeled`"):
        ppi.mean(y, yhat, rng.normal(size=300), cluster_unlabeled=[None] * 300)


def test_mean_k_columns_element_mode_equals_each_column_alone():
    rng = np.random.default_rng(8)
    (_, y, yhat, cl), (_, yhu, clu) = _data(rng, 300, 2000, 25)
    w, wu = rng.uniform(0.5, 2, 300), rng.uniform(0.5, 2, 2000)
    Y = np.column_stack([y, -0.5 * y + rng.normal(size=300)])
    YH = np.column_stack([yhat, -0.5 * yhat + rng.normal(size=300)])
    YU = np.column_stack([yhu, -0.5 * yhu + rng.normal(size=2000)])
    res = ppi.mean(Y, YH, YU, lam_mode="element", weights=w, weights_unlabeled=wu, cluster=cl, cluster_unlabeled=clu)
    for k in range(2):
        one = ppi.mean(Y[:, k], YH[:, k], YU[:, k], weights=w, weights_unlabeled=wu, cluster=cl, cluster_unlabeled=clu)
        assert res.lam[k] == pytest.approx(one.lam, rel=1e-12)
        assert res.se[k] == pytest.approx(one.se, rel=1e-12)
    assert _round_trips(res)


def _round_trips(res):
    return ppi.PPIResult.from_json(res.to_json()) == res
