"""ppi.feols (docs/methods/ppi.md §9): the point estimate equal to ppi.ols on the explicit dummy design; the
variance equal to a brute-force computation on that design (each sample's own OLS with dummies, the influence
rows and the sandwich written out; hetero and clustered), the tuned lambda its minimiser; with lam = 0 equal to
fe.feols on the labelled rows (hetero, CRV1, iid); continuous in lambda with few labelled rows per level."""

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import fe, ppi
from ppi_ols_reference import own_fit_rows


def _rows(rng, m, n_firm=12, n_year=5):
    df = pd.DataFrame({"firm": rng.integers(0, n_firm, m), "year": rng.integers(0, n_year, m),
                       "x1": rng.normal(size=m), "x2": rng.normal(size=m)})
    df["x1"] += 0.3 * df["firm"]
    u = np.sin(df["firm"].to_numpy())
    df["y"] = 1.0 * df["x1"] - 0.5 * df["x2"] + u + 0.2 * df["year"] + rng.normal(size=m) * (1 + 0.5 * np.abs(df["x2"]))
    df["llm_y"] = df["y"] + rng.normal(scale=0.8, size=m) + 0.5 * u
    df["w"] = rng.uniform(0.5, 2.0, m)
    return df


def _dummies(df, fes):
    """x1, x2 and one dummy per firm, one per year but the first (the explicit design)."""
    cols = [df[["x1", "x2"]].to_numpy(float)]
    for j, f in enumerate(fes):
        levels = sorted(df[f].unique())
        D = (df[f].to_numpy()[:, None] == np.array(levels)[None, :]).astype(float)
        cols.append(D if j == 0 else D[:, 1:])
    return np.column_stack(cols)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    lab, unl = _rows(rng, 400), _rows(rng, 3000)
    return lab, unl.drop(columns="y")


def _brute_force(lab, unl, fes, lam, vcov, weights):
    """The variance of §9.2 written out on the explicit dummy design: each sample's own weighted
    OLS with the dummies (y - lam yhat on the labelled rows, lam yhat~ on the unlabelled rows), the
    slopes' influence rows (Z'WZ)^-1 z_i w_i e_i, fixest's factor per sample (HC1 m/(m - rank);
    CRV1 (m - 1)/(m - df_k), the firm dummies nested in the firm clusters) and the sandwich: hetero
    the sum of the outer products, CRV1 G/(G-1) times the cluster totals' (one numbering over both
    samples). Returns the estimate and the covariance of x1, x2."""
    out = []
    for df, target in ((lab, lab["y"] - lam * lab["llm_y"]), (unl, lam * unl["llm_y"])):
        Z = _dummies(df, fes)
        m, p = Z.shape
        assert np.linalg.matrix_rank(Z) == p
        w = df["w"].to_numpy(float) if weights else np.ones(m)
        bread = np.linalg.inv(Z.T @ (Z * w[:, None]))
        beta = bread @ (Z.T @ (w * target.to_numpy(float)))
        e = target.to_numpy(float) - Z @ beta
        psi = (Z * (w * e)[:, None] @ bread)[:, :2]
        if isinstance(vcov, dict):
            fac = (m - 1) / (m - (p - (df["firm"].nunique() - 1)))
        else:
            fac = m / (m - p)
        out.append((beta[:2], psi * np.sqrt(fac)))
    (b_l, psi_l), (b_u, psi_u) = out
    if lam == 0:
        psi_u = psi_u * 0
    if isinstance(vcov, dict):
        ids = pd.concat([lab["firm"], unl["firm"]] if lam != 0 else [lab["firm"]], ignore_index=True)
        rows = np.vstack([psi_l, psi_u]) if lam != 0 else psi_l
        T = pd.DataFrame(rows).groupby(ids.to_numpy()).sum().to_numpy()
        G = T.shape[0]
        V = G / (G - 1) * T.T @ T
    else:
        V = psi_l.T @ psi_l + psi_u.T @ psi_u
    return b_l + b_u, V


@pytest.mark.parametrize("fes", [("firm",), ("firm", "year")])
@pytest.mark.parametrize("vcov", ["hetero", {"CRV1": "firm"}])
@pytest.mark.parametrize("kw", [{"method": "ppi"}, {"lam": 0.35}, {"method": "classical"}, {"lam": 0.6, "weights": "w"},
                                {"coord": "x2", "weights": "w"}, {}])
def test_equals_the_brute_force_on_the_explicit_dummy_design(data, fes, vcov, kw):
    """The point estimate is ppi.ols's on the explicit dummy design; the variance the brute force
    (_brute_force); the tuned lambda minimises it (its trace over the slopes, or coord's entry)."""
    lab, unl = data
    res = ppi.feols("y ~ x1 + x2 | " + " + ".join(fes), lab, unl, prediction="llm_y", vcov=vcov, **kw)
    tol = 1e-10 if len(fes) == 1 else 1e-7    # two fixed effects: demeaning by alternating projections
    lam = res.lam
    okw = {"lam": lam} if lam != 0 else {"method": "classical"}
    if "weights" in kw:
        okw["weights"], okw["weights_unlabeled"] = lab["w"], unl["w"]
    ref = ppi.ols(_dummies(lab, fes), lab["y"].to_numpy(), lab["llm_y"].to_numpy(), _dummies(unl, fes),
                  unl["llm_y"].to_numpy(), **okw)
    assert res.terms == ["x1", "x2"]
    np.testing.assert_allclose(res.estimate, ref.estimate[:2], rtol=tol)
    est, V = _brute_force(lab, unl, fes, lam, vcov, "weights" in kw)
    np.testing.assert_allclose(res.estimate, est, rtol=tol)
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(V)), rtol=tol)
    _, V0 = _brute_force(lab, unl, fes, 0.0, vcov, "weights" in kw)
    np.testing.assert_allclose(res.table["classical_std_error"], np.sqrt(np.diag(V0)), rtol=tol)
    if kw in ({}, {"coord": "x2", "weights": "w"}):
        assert 0 < lam < 1
        k = 1 if "coord" in kw else None

        def crit(v):
            C = _brute_force(lab, unl, fes, v, vcov, "weights" in kw)[1]
            return np.trace(C) if k is None else C[k, k]
        grid = np.linspace(max(lam - 0.05, 1e-6), lam + 0.05, 11)
        assert crit(lam) <= min(crit(v) for v in grid) * (1 + 1e-9)


@pytest.mark.parametrize("fes", ["firm", "firm + year"])
@pytest.mark.parametrize("weights", [None, "w"])
@pytest.mark.parametrize("vcov", ["hetero", {"CRV1": "firm"}, {"CRV1": "year"}, "iid"])
def test_lam_zero_equals_fe_feols_on_the_labelled_rows(data, fes, weights, vcov):
    """lambda = 0: fe.feols on the labelled rows, coefficients and standard errors (fixest's
    small-sample factors included), and so the classical baseline of every method."""
    lab, unl = data
    fml = f"y ~ x1 + x2 | {fes}"
    ref = fe.feols(fml, lab, vcov=vcov, weights=weights, fixef_rm="none")
    tol = 1e-10 if fes == "firm" else 1e-7
    for kw in ({"lam": 0.0}, {"method": "classical"}):
        res = ppi.feols(fml, lab, unl, prediction="llm_y", vcov=vcov, weights=weights, **kw)
        np.testing.assert_allclose(res.estimate, ref.coef().to_numpy(), rtol=tol)
        np.testing.assert_allclose(res.se, ref.se().to_numpy(), rtol=1e-10)
    res = ppi.feols(fml, lab, unl, prediction="llm_y", vcov=vcov, weights=weights, method="ppi")
    np.testing.assert_allclose(res.table["classical_std_error"], ref.se().to_numpy(), rtol=1e-10)


@pytest.mark.parametrize("vcov", ["hetero", {"CRV1": "firm"}, "iid"])
def test_few_labelled_rows_per_level_small_lam_keeps_the_classical_se(vcov):
    """The defect the coverage study found (docs/methods/ppi.md §5.4, §9.3): 150 firms with 3-5
    labelled rows each. The old variance (ppi_py's pooled-Hessian sandwich, regressors demeaned over
    both samples) gave lambda = 0.001 a standard error about 0.8 of the classical one for nearly
    the same estimate; the variance of the estimator computed is continuous in lambda."""
    rng = np.random.default_rng(11)
    firms = 150
    size = rng.integers(3, 6, firms)
    lab = pd.DataFrame({"firm": np.repeat(np.arange(firms), size)})
    unl = pd.DataFrame({"firm": np.repeat(np.arange(firms), 10 * size)})
    for df in (lab, unl):
        u = rng.normal(size=firms)[df["firm"].to_numpy()]
        df["x"] = 0.5 * u + rng.normal(size=len(df))
        df["y"] = df["x"] + u + rng.normal(size=len(df))
        df["llm_y"] = df["y"] + rng.normal(scale=0.5, size=len(df))
    unl = unl.drop(columns="y")
    res = ppi.feols("y ~ x | firm", lab, unl, prediction="llm_y", vcov=vcov, lam=0.001)
    assert abs(res.estimate - res.table["classical_estimate"][0]) < 0.01 * res.se
    assert res.se / res.table["classical_std_error"][0] == pytest.approx(1.0, abs=0.01)


def test_result_and_errors(data):
    lab, unl = data
    res = ppi.feols("y ~ x1 + x2 | firm", lab, unl, prediction="llm_y")
    assert list(res.tidy()["term"]) == ["x1", "x2"]
    assert "fixed-effects linear regression" in str(res)
    assert ppi.PPIResult.from_json(res.to_json()) == res
    cat = ppi.feols("y ~ x1 + C(year) | firm", lab, unl, prediction="llm_y", vcov={"CRV1": "firm"}, lam=0.5)
    two = ppi.feols("y ~ x1 | firm + year", lab, unl, prediction="llm_y", vcov={"CRV1": "firm"}, lam=0.5)
    np.testing.assert_allclose(cat.estimate[0], two.estimate, rtol=1e-7)   # year dummies = a year fixed effect
    np.testing.assert_allclose(cat.se[0], two.se, rtol=1e-7)
    from llmsurrogate.exceptions import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="`vcov`"):
        ppi.feols("y ~ x1 | firm", lab, unl, prediction="llm_y", vcov="HC1")   # 'iid': test_ppi_feols_iid.py
    with pytest.raises(InvalidArgumentError, match="`prediction`"):
        ppi.feols("y ~ x1 | firm", lab, unl, prediction="nope")
    with pytest.raises(InvalidArgumentError, match="`formula`"):
        ppi.feols("y ~ x1", lab, unl, prediction="llm_y")
    with pytest.raises(InvalidArgumentError, match="level"):
        ppi.feols("y ~ x1 | firm", lab, unl.assign(firm=unl["firm"] + 100), prediction="llm_y")


@pytest.mark.parametrize("lam", [0.0, 0.35, 1.0])
def test_ppi_ols_on_the_dummy_design_differs_from_feols_by_the_factors_only(data, lam):
    """ppi.ols on the explicit dummy design has the estimate of ppi.feols, and the variance of §9.2
    with the ddof-1 factor m/(m - 1) of §3.2 in place of fixest's m/(m - rank) in each sample
    (docs/methods/ppi.md §9.3): both are sums over the samples of the same influence rows' squares."""
    lab, unl = data
    fes = ("firm", "year")
    Z, Zu = _dummies(lab, fes), _dummies(unl, fes)
    ols = ppi.ols(Z, lab["y"], lab["llm_y"], Zu, unl["llm_y"], method="ppi++", lam=lam, intercept=False)
    fe_res = ppi.feols("y ~ x1 + x2 | firm + year", lab, unl, prediction="llm_y", method="ppi++", lam=lam)
    np.testing.assert_allclose(ols.estimate[:2], fe_res.estimate, rtol=1e-9)
    parts = [(own_fit_rows(Z, lab["y"]) - lam * own_fit_rows(Z, lab["llm_y"]), Z.shape)]
    if lam != 0:
        parts.append((lam * own_fit_rows(Zu, unl["llm_y"]), Zu.shape))
    S = [np.sum(r[:, :2] ** 2, axis=0) / m ** 2 for r, (m, _) in parts]   # sum of (Z'Z)^-1 z e squared
    np.testing.assert_allclose(np.asarray(ols.se[:2]) ** 2, sum(s * m / (m - 1) for s, (_, (m, _)) in zip(S, parts)),
                               rtol=1e-9)
    np.testing.assert_allclose(np.asarray(fe_res.se) ** 2,
                               sum(s * m / (m - p) for s, (_, (m, p)) in zip(S, parts)), rtol=1e-9)
