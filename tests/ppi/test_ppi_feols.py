"""ppi.feols (docs/methods/ppi.md §9): equal to ppi.ols on the explicit dummy design (slopes, lambda-hat
for a coord, SEs; hetero and clustered), and with lam = 0 to fe.feols on the labelled rows."""

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import fe, ppi


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


@pytest.mark.parametrize("fes", [("firm",), ("firm", "year")])
@pytest.mark.parametrize("vcov", ["hetero", {"CRV1": "firm"}])
@pytest.mark.parametrize("kw", [{"method": "ppi"}, {"lam": 0.35}, {"coord": "x1"}, {"method": "classical"},
                                {"coord": "x2", "weights": "w"}])
def test_equals_ppi_ols_on_the_explicit_dummy_design(data, fes, vcov, kw):
    lab, unl = data
    res = ppi.feols("y ~ x1 + x2 | " + " + ".join(fes), lab, unl, prediction="llm_y", vcov=vcov, **kw)
    okw = dict(kw)
    if "weights" in okw:
        okw["weights"], okw["weights_unlabeled"] = lab["w"], unl["w"]
    if "coord" in okw:
        okw["coord"] = ["x1", "x2"].index(okw["coord"])
    if isinstance(vcov, dict):
        okw["cluster"], okw["cluster_unlabeled"] = lab["firm"], unl["firm"]
    ref = ppi.ols(_dummies(lab, fes), lab["y"].to_numpy(), lab["llm_y"].to_numpy(), _dummies(unl, fes),
                  unl["llm_y"].to_numpy(), **okw)
    tol = 1e-10 if len(fes) == 1 else 1e-7    # two fixed effects: demeaning by alternating projections
    assert res.terms == ["x1", "x2"]
    np.testing.assert_allclose(res.lam, ref.lam, rtol=tol, atol=tol)
    np.testing.assert_allclose(res.estimate, ref.estimate[:2], rtol=tol)
    np.testing.assert_allclose(res.se, ref.se[:2], rtol=tol)
    np.testing.assert_allclose(res.table["classical_std_error"], ref.table["classical_std_error"][:2], rtol=tol)
    if "coord" in kw:
        assert 0 < res.lam < 1


@pytest.mark.parametrize("fes", ["firm", "firm + year"])
def test_lam_zero_equals_fe_feols_on_the_labelled_rows(data, fes):
    lab, unl = data
    n = len(lab)
    fml = f"y ~ x1 + x2 | {fes}"
    # hetero: the PPI variance at lambda = 0 has the ddof-1 meat, fe's HC1 has n - 1 over n - k with k the
    # slopes and the fixed effects' levels: SE_fe^2 = SE_ppi^2 * (n - 1) / (n - k)
    res = ppi.feols(fml, lab, unl, prediction="llm_y", lam=0.0)
    ref = fe.feols(fml, lab, vcov="hetero", fixef_rm="none")
    np.testing.assert_allclose(res.estimate, ref.coef().to_numpy(), rtol=1e-10)
    k = 2 + lab["firm"].nunique() + (lab["year"].nunique() - 1 if "year" in fes else 0)
    np.testing.assert_allclose(ref.se().to_numpy() ** 2, res.se ** 2 * (n - 1) / (n - k), rtol=1e-8)
    # CRV1 by firm: both take G/(G-1); fe also (n - 1)/(n - k) with the firm effect nested in the cluster (k: the
    # slopes, plus the year levels but one)
    res = ppi.feols(fml, lab, unl, prediction="llm_y", lam=0.0, vcov={"CRV1": "firm"})
    ref = fe.feols(fml, lab, vcov={"CRV1": "firm"}, fixef_rm="none")
    k = 2 + (lab["year"].nunique() - 1 if "year" in fes else 0) + 1
    np.testing.assert_allclose(ref.se().to_numpy() ** 2, res.se ** 2 * (n - 1) / (n - k), rtol=1e-8)


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
