"""llmsurrogate.ppi against formulas written out here, independently of ppi_py and of the package's
own code paths (docs/methods/ppi.md):

* lambda = 0 is the classical estimator: the mean's closed form; OLS against numpy's lstsq and the
  HC0 sandwich summed row by row (the classical baseline is HC0, lambda = 0 of the PPI formula
  is HC0 times n / (n - 1));
* lambda = 1 is the textbook PPI mean (Angelopoulos et al. 2023): mean(yhat~) - mean(yhat - y),
  variance Var(yhat~)/N + Var(yhat - y)/n;
* the tuned lambda of the mean: Cov(Y, Yhat) / ((1 + n/N) Var(Yhat, Yhat~ pooled));
* the quantile's interval against a brute-force scan of every candidate value (a rows x candidates
  matrix, as ppi_py builds it), weighted and not, and its p-value at any value;
* the logistic and Poisson fits (Newton) against scipy.optimize on the same objective written in
  ppi_py's three-term form, and lambda-hat for one coordinate (``coord``) from the formula;
* effective_n: n at lambda = 0, and Broska, Howes & van Loon's n(n + N)/(n + (1 - rho^2) N) for the
  tuned mean.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import norm

from llmsurrogate import ppi


def _mean_data(seed=0, n=250, N=4000, weights=False):
    rng = np.random.default_rng(seed)
    y = rng.normal(2.0, 1.0, n + N)
    yhat = 0.8 * y + rng.normal(0.3, 0.7, n + N)
    w = rng.uniform(0.5, 3.0, n) if weights else None
    wu = rng.uniform(0.5, 3.0, N) if weights else None
    return y[:n], yhat[:n], yhat[n:], w, wu


def _design(seed=0, n=300, N=3000, d=3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n + N), rng.normal(size=(n + N, d - 1))])
    return rng, X[:n], X[n:]


@pytest.mark.parametrize("weights", [False, True])
def test_mean_lambda_zero_is_the_classical_mean(weights):
    y, yhat, yu, w, wu = _mean_data(1, weights=weights)
    n = y.size
    wn = np.ones(n) if w is None else w * n / w.sum()
    est = np.mean(wn * y)
    se = np.sqrt(np.mean((wn * (y - est)) ** 2) / n)   # ddof 0, the weighted (ratio) mean linearised; ppi_py's classical_mean_ci without weights
    z = norm.ppf(0.975)
    for res in (ppi.mean(y, yhat, yu, lam=0.0, weights=w, weights_unlabeled=wu),
                ppi.mean(y, yhat, yu, method="classical", weights=w, weights_unlabeled=wu)):
        assert res.estimate == pytest.approx(est, abs=1e-13)
        assert res.se == pytest.approx(se, abs=1e-13)
        assert (res.ci_low, res.ci_high) == pytest.approx((est - z * se, est + z * se), abs=1e-13)
        assert res.effective_n == pytest.approx(n, abs=1e-9)


def test_mean_lambda_one_is_the_textbook_ppi_mean():
    y, yhat, yu, _, _ = _mean_data(2)
    n, N = y.size, yu.size
    rectifier = [yh - yy for yy, yh in zip(y, yhat)]
    est = sum(yu) / N - sum(rectifier) / n
    var_u = sum((v - sum(yu) / N) ** 2 for v in yu) / N
    var_r = sum((v - sum(rectifier) / n) ** 2 for v in rectifier) / n
    se = (var_u / N + var_r / n) ** 0.5
    res = ppi.mean(y, yhat, yu, method="ppi", level=0.9)
    assert res.lam == 1.0
    assert res.estimate == pytest.approx(est, abs=1e-12)
    assert res.se == pytest.approx(se, abs=1e-12)
    assert res.ci_high - res.estimate == pytest.approx(norm.ppf(0.95) * se, abs=1e-12)


def test_mean_tuned_lambda_formula():
    y, yhat, yu, _, _ = _mean_data(3)
    n, N = y.size, yu.size
    cov = np.mean((y - y.mean()) * (yhat - yhat.mean()))            # ddof 0
    pooled = np.var(np.concatenate([yhat, yu]), ddof=1)
    lam = float(np.clip(cov / ((1 + n / N) * pooled), 0, 1))
    assert 0.05 < lam < 0.95
    res = ppi.mean(y, yhat, yu)
    assert res.lam == pytest.approx(lam, abs=1e-13)
    assert res.estimate == pytest.approx(lam * yu.mean() + np.mean(y - lam * yhat), abs=1e-13)


def test_shares_element_mode_is_each_column_tuned_alone():
    rng = np.random.default_rng(4)
    answers = rng.choice(3, size=3300, p=[0.5, 0.3, 0.2])
    y = np.eye(3)[answers]
    guess = np.where(rng.uniform(size=3300) < 0.7, answers, rng.integers(0, 3, 3300))
    yhat = 0.9 * np.eye(3)[guess] + 0.1 * rng.dirichlet(np.ones(3), 3300)
    both = ppi.mean(y[:300], yhat[:300], yhat[300:], lam_mode="element")
    for j in range(3):
        alone = ppi.mean(y[:300, j], yhat[:300, j], yhat[300:, j])
        assert both.lam[j] == pytest.approx(alone.lam, abs=1e-13)
        assert both.ci_low[j] == pytest.approx(alone.ci_low, abs=1e-13)
    overall = ppi.mean(y[:300], yhat[:300], yhat[300:])
    assert isinstance(overall.lam, float) and overall.terms == ["y0", "y1", "y2"]


def _hc0(X, y, w):
    """The HC0 covariance of weighted least squares, summed row by row."""
    bread = np.linalg.inv(sum(wi * np.outer(xi, xi) for xi, wi in zip(X, w)))
    beta = bread @ sum(wi * xi * yi for xi, yi, wi in zip(X, y, w))
    meat = sum((wi * (yi - xi @ beta)) ** 2 * np.outer(xi, xi) for xi, yi, wi in zip(X, y, w))
    return beta, bread @ meat @ bread


@pytest.mark.parametrize("weights", [False, True])
def test_ols_lambda_zero_is_least_squares_with_hc0(weights):
    rng, X, Xu = _design(5)
    n = X.shape[0]
    y = X @ [1.0, -0.5, 0.25] + rng.normal(size=n) * (1 + np.abs(X[:, 1]))   # heteroskedastic
    yhat = y + rng.normal(size=n)
    yu = Xu @ [1.0, -0.5, 0.25] + rng.normal(size=Xu.shape[0])
    w = rng.uniform(0.5, 2.0, n) if weights else np.ones(n)
    wn = w * n / w.sum()
    beta_lstsq = np.linalg.lstsq(X * np.sqrt(wn)[:, None], y * np.sqrt(wn), rcond=None)[0]
    beta, cov = _hc0(X, y, wn)
    np.testing.assert_allclose(beta, beta_lstsq, rtol=0, atol=1e-12)
    kw = {"weights": w if weights else None}
    classical = ppi.ols(X, y, yhat, Xu, yu, method="classical", **kw)
    np.testing.assert_allclose(classical.estimate, beta_lstsq, rtol=0, atol=1e-12)
    np.testing.assert_allclose(classical.se, np.sqrt(np.diag(cov)), rtol=1e-10, atol=0)
    lam0 = ppi.ols(X, y, yhat, Xu, yu, lam=0.0, **kw)
    np.testing.assert_allclose(lam0.estimate, beta_lstsq, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lam0.se, np.sqrt(np.diag(cov) * n / (n - 1)), rtol=1e-10, atol=0)
    np.testing.assert_allclose(lam0.effective_n, n, rtol=1e-12)
    np.testing.assert_allclose(classical.effective_n, n, rtol=0)


def _rectified_objective(family, X, y, yhat, Xu, yu, w, wu, lam):
    """ppi_py's three-term loss: lam/N sum w~ l(x~, yhat~) - lam/n sum w l(x, yhat) + 1/n sum w l(x, y)."""
    n, N = X.shape[0], Xu.shape[0]
    b = (lambda e: np.logaddexp(0, e)) if family == "logistic" else np.exp
    mean = expit if family == "logistic" else np.exp

    def loss(Xm, t, wm, theta):
        eta = Xm @ theta
        return np.sum(wm * (b(eta) - t * eta))

    def grad(Xm, t, wm, theta):
        return Xm.T @ (wm * (mean(Xm @ theta) - t))

    def f(theta):
        return lam / N * loss(Xu, yu, wu, theta) - lam / n * loss(X, yhat, w, theta) + loss(X, y, w, theta) / n

    def g(theta):
        return lam / N * grad(Xu, yu, wu, theta) - lam / n * grad(X, yhat, w, theta) + grad(X, y, w, theta) / n

    return f, g


def _glm_data(family, seed, weights):
    rng, X, Xu = _design(seed, n=400, N=3000)
    beta = np.array([0.2, 0.7, -0.4])
    Xall = np.vstack([X, Xu])
    if family == "logistic":
        yall = rng.binomial(1, expit(Xall @ beta)).astype(float)
        yhall = expit(0.6 * Xall @ beta + (yall - 0.5) + rng.normal(0, 1.2, yall.size))
    else:
        yall = rng.poisson(np.exp(Xall @ beta)).astype(float)
        yhall = np.maximum(yall + rng.normal(0, 1.2, yall.size), 0)
    n = X.shape[0]
    w = rng.uniform(0.5, 2.0, n) if weights else None
    wu = rng.uniform(0.5, 2.0, Xu.shape[0]) if weights else None
    return X, yall[:n], yhall[:n], Xu, yhall[n:], w, wu


def _scipy_fit(family, X, y, yhat, Xu, yu, w, wu, lam):
    n, N = X.shape[0], Xu.shape[0]
    wn = np.ones(n) if w is None else w * n / w.sum()
    wun = np.ones(N) if wu is None else wu * N / wu.sum()
    f, g = _rectified_objective(family, X, y, yhat, Xu, yu, wn, wun, lam)
    return minimize(f, np.zeros(X.shape[1]), jac=g, method="BFGS", options={"gtol": 1e-12, "maxiter": 10_000}).x


@pytest.mark.parametrize("family", ["logistic", "poisson"])
@pytest.mark.parametrize("lam,weights", [(0.0, False), (0.35, False), (1.0, False), (0.6, True)])
def test_newton_fit_is_scipys_minimiser_of_the_same_objective(family, lam, weights):
    X, y, yhat, Xu, yu, w, wu = _glm_data(family, 6, weights)
    theta = _scipy_fit(family, X, y, yhat, Xu, yu, w, wu, lam)
    fn = getattr(ppi, family)
    res = fn(X, y, yhat, Xu, yu, lam=lam, weights=w, weights_unlabeled=wu)
    np.testing.assert_allclose(res.estimate, theta, rtol=0, atol=1e-7)


def _stats(family, theta, X, y, yhat, Xu, yu, wn, wun):
    mean = expit if family == "logistic" else np.exp
    mu, muu = mean(X @ theta), mean(Xu @ theta)
    v, vu = (mu * (1 - mu), muu * (1 - muu)) if family == "logistic" else (mu, muu)
    g = (wn * (mu - y))[:, None] * X
    gh = (wn * (mu - yhat))[:, None] * X
    ghu = (wun * (muu - yu))[:, None] * Xu
    H = ((X * (wn * v)[:, None]).T @ X + (Xu * (wun * vu)[:, None]).T @ Xu) / (X.shape[0] + Xu.shape[0])
    return g, gh, ghu, np.linalg.inv(H)


@pytest.mark.parametrize("family,coord", [("logistic", 1), ("poisson", 2), ("logistic", None)])
def test_glm_lambda_for_one_coordinate_is_the_formula(family, coord):
    """ppi_py ignores ``coord`` for these two models (docs/methods/ppi.md §7); the right lambda-hat,
    written out: two steps of e_k'H^-1 (C + C') H^-1 e_k / (2 (1 + n/N) e_k'H^-1 V H^-1 e_k)."""
    X, y, yhat, Xu, yu, _, _ = _glm_data(family, 7, False)
    n, N = X.shape[0], Xu.shape[0]
    wn, wun = np.ones(n), np.ones(N)
    lam = 1.0
    for _ in range(2):
        theta = _scipy_fit(family, X, y, yhat, Xu, yu, None, None, lam)
        g, gh, ghu, Hi = _stats(family, theta, X, y, yhat, Xu, yu, wn, wun)
        gc, hc = g - g.mean(0), gh - gh.mean(0)
        C = (gc.T @ hc + hc.T @ gc) / n
        V = np.cov(np.vstack([gh, ghu]).T)
        A, B = Hi @ C @ Hi, Hi @ V @ Hi
        num, den = (np.trace(A), np.trace(B)) if coord is None else (A[coord, coord], B[coord, coord])
        lam = float(np.clip(num / (2 * (1 + n / N) * den), 0, 1))
    res = getattr(ppi, family)(X, y, yhat, Xu, yu, coord=coord)
    assert 0 < lam < 1
    assert res.lam == pytest.approx(lam, abs=1e-7)
    theta = _scipy_fit(family, X, y, yhat, Xu, yu, None, None, lam)
    g, gh, ghu, Hi = _stats(family, theta, X, y, yhat, Xu, yu, wn, wun)
    sigma = Hi @ (n / N * np.cov((lam * ghu).T) + np.cov((g - lam * gh).T)) @ Hi
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(sigma) / n), rtol=1e-6)


def _brute_quantile(y, yhat, yu, q, alpha, w=None, wu=None):
    n, N = y.size, yu.size
    w = np.ones(n) if w is None else w * n / w.sum()
    wu = np.ones(N) if wu is None else wu * N / wu.sum()
    grid = np.sort(np.concatenate([y, yhat, yu]))
    A = wu[:, None] * (yu[:, None] <= grid[None, :])
    R = w[:, None] * ((y[:, None] <= grid[None, :]).astype(float) - (yhat[:, None] <= grid[None, :]))
    F = A.mean(0) + R.mean(0)
    # the linearised variance of the two weighted (ratio) means: w (x - F_w), ddof 0 (ppi_py's std of w x
    # without weights; docs/methods/ppi.md §4.1)
    se = np.maximum(np.sqrt(np.mean((A - wu[:, None] * A.mean(0)) ** 2, axis=0) / N
                            + np.mean((R - w[:, None] * R.mean(0)) ** 2, axis=0) / n), 1e-16)
    p = 2 * norm.sf(np.abs(F - q) / se)
    kept = grid[p > alpha]
    return grid[np.argmin(np.abs(F - q))], kept[0], kept[-1], grid, p


@pytest.mark.parametrize("q,weights,discrete", [(0.5, False, False), (0.1, True, False), (0.8, False, True),
                                                (0.3, True, True)])
def test_quantile_interval_is_the_brute_force_scan(q, weights, discrete):
    rng = np.random.default_rng(8)
    m = 1500
    y = rng.integers(0, 20, m).astype(float) if discrete else rng.gamma(2.0, 1.0, m)
    yhat = (y + rng.integers(-3, 4, m)) if discrete else y * rng.lognormal(0, 0.3, m)
    w = rng.uniform(0.5, 2.0, 200) if weights else None
    wu = rng.uniform(0.5, 2.0, m - 200) if weights else None
    est, low, high, grid, p = _brute_quantile(y[:200], yhat[:200], yhat[200:], q, 0.1, w, wu)
    res = ppi.quantile(y[:200], yhat[:200], yhat[200:], q, level=0.9, weights=w, weights_unlabeled=wu)
    assert (res.estimate, res.ci_low, res.ci_high) == (est, low, high)
    for t in np.quantile(grid, [0.3, 0.45, 0.5, 0.55, 0.7]):   # the p-value at any value: the step function
        j = np.searchsorted(grid, t, side="right") - 1
        if p[j] >= 1e-6:
            assert res.p_value(t) == pytest.approx(p[j], abs=1e-12)


def test_quantile_p_value_is_above_alpha_exactly_inside_the_interval():
    rng = np.random.default_rng(9)
    y = rng.normal(size=2300); yhat = y + rng.normal(0, 0.5, 2300)
    res = ppi.quantile(y[:300], yhat[:300], yhat[300:], 0.5, level=0.9)
    assert res.p_value(res.ci_low) > 0.1 and res.p_value(res.ci_high) > 0.1
    assert res.p_value(res.ci_low - 1e-9) <= 0.1 or res.p_value(res.ci_low - 1e-9) == res.p_value(res.ci_low)
    assert res.p_value(-1e6) == 0.0   # below every value: F = 0
    with pytest.warns(UserWarning, match="below 1e-06"):
        assert res.p_value(1.5) == 1e-6


def test_quantile_classical_is_ppi_pys_binomial_interval_with_the_ends_clipped():
    rng = np.random.default_rng(10)
    y = rng.normal(size=40)
    res = ppi.quantile(y, y, rng.normal(size=100), 0.02, method="classical", level=0.9)
    s = np.sort(y)
    half = norm.ppf(0.95) * np.sqrt(0.02 * 0.98 * 40)
    # ppi_py: sorted_Y[int(0.8 - 1.46)] = sorted_Y[0] (int truncates -0.66 to 0); int(2.26) = 2
    assert (res.ci_low, res.ci_high) == (s[max(int(0.8 - half), 0)], s[int(0.8 + half)])
    top = ppi.quantile(y, y, rng.normal(size=100), 0.99, method="classical", level=0.9)
    assert top.ci_high == s[-1]   # ppi_py indexes past the end here (IndexError); clipped


def test_effective_n_is_broska_howes_van_loon_for_the_tuned_mean():
    """n_eff = n (n + N) / (n + (1 - rho^2) N) (Broska, Howes & van Loon 2024) is the effective n of the
    PPI++ mean at the variance-optimal lambda; with a large sample the plug-in versions agree."""
    rng = np.random.default_rng(11)
    n, N = 2000, 200_000
    y = rng.normal(size=n + N)
    yhat = y + rng.normal(0, 0.8, n + N)
    res = ppi.mean(y[:n], yhat[:n], yhat[n:])
    rho2 = np.corrcoef(y[:n], yhat[:n])[0, 1] ** 2
    assert res.effective_n == pytest.approx(n * (n + N) / (n + (1 - rho2) * N), rel=0.02)
    assert ppi.mean(y[:n], yhat[:n], yhat[n:], method="classical").effective_n == n


def test_classical_quantile_p_value_is_the_binomial_z_test():
    rng = np.random.default_rng(12)
    y = rng.normal(size=100)
    res = ppi.quantile(y, y, rng.normal(size=50), 0.5, method="classical")
    se = np.sqrt(0.25 / 100)
    for t in (-10.0, -0.1, 0.0, 0.1, 10.0):
        F = np.mean(y <= t)
        p = 2 * norm.sf(abs(F - 0.5) / se)
        if p >= 1e-6:
            assert res.p_value(t) == pytest.approx(p, abs=1e-12), t


@pytest.mark.parametrize("family", ["logistic", "poisson"])
def test_weighted_classical_glm_is_the_weighted_sandwich(family):
    """ppi_py's classical logistic/Poisson intervals take no weights; the package's weighted version
    is the weighted fit with the sandwich of weighted gradients (ddof 1) and weighted Hessian."""
    X, y, yhat, Xu, yu, w, wu = _glm_data(family, 14, True)
    n = X.shape[0]
    wn = w * n / w.sum()
    theta = _scipy_fit(family, X, y, yhat, Xu, yu, w, wu, 0.0)
    mean = expit if family == "logistic" else np.exp
    mu = mean(X @ theta)
    v = mu * (1 - mu) if family == "logistic" else mu
    H = (X * (wn * v)[:, None]).T @ X / n
    g = (wn * (mu - y))[:, None] * X
    cov = np.linalg.inv(H) @ np.cov(g.T) @ np.linalg.inv(H) / n
    res = getattr(ppi, family)(X, y, yhat, Xu, yu, method="classical", weights=w, weights_unlabeled=wu)
    np.testing.assert_allclose(res.estimate, theta, rtol=0, atol=1e-7)
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(cov)), rtol=1e-6)
    assert res.effective_n.tolist() == [n] * 3
