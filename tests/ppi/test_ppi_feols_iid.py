"""ppi.feols(vcov="iid") (docs/methods/ppi.md §9.4): at lambda = 0 fe.feols's iid on the labelled rows;
for lambda = 1, a given lambda and the tuned one, a computation by hand on the explicit dummy design
(numpy, no demeaning); close to the hetero variance when the residuals are homoskedastic and not when
they are not; the row order and the index do not matter."""

import inspect

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import fe, ppi
from llmsurrogate.exceptions import InvalidArgumentError
from scipy.optimize import minimize_scalar

FIRMS, YEARS = 5, 3


def _rows(rng, m, het=False, n_firm=FIRMS, n_year=YEARS):
    df = pd.DataFrame({"firm": rng.integers(0, n_firm, m), "year": rng.integers(0, n_year, m),
                       "x1": rng.normal(size=m), "x2": rng.normal(size=m)})
    df["x1"] += 0.3 * df["firm"]
    sd = 0.3 + 1.5 * np.abs(df["x2"].to_numpy()) if het else 1.0
    u = np.sin(df["firm"].to_numpy())
    df["y"] = 1.0 * df["x1"] - 0.5 * df["x2"] + u + 0.2 * df["year"] + rng.normal(size=m) * sd
    df["llm_y"] = df["y"] + rng.normal(scale=0.7, size=m) + 0.3 * u
    df["w"] = rng.uniform(0.5, 2.0, m)
    return df


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(36)
    lab, unl = _rows(rng, 70), _rows(rng, 400)
    assert lab["firm"].nunique() == FIRMS and lab["year"].nunique() == YEARS
    return lab, unl.drop(columns="y")


def _design(df, fes):
    """x1, x2, one dummy per firm and one per year but the first (levels fixed, so that both samples
    have the same columns)."""
    cols = [df[["x1", "x2"]].to_numpy(float)]
    for j, (f, levels) in enumerate(((f, {"firm": FIRMS, "year": YEARS}[f]) for f in fes)):
        D = (df[f].to_numpy()[:, None] == np.arange(levels)[None, :]).astype(float)
        cols.append(D if j == 0 else D[:, 1:])
    return np.column_stack(cols)


def _by_hand(lab, unl, fes, lam, weights, coord):
    """The iid PPI variance of §9.4 on the explicit dummy design, written out: the estimate
    WLS(Z, y - lam yhat) + lam WLS(Z~, yhat~); residual variances sum w e^2 / (rows - columns) of
    the three regressions y ~ Z, yhat ~ Z (labelled) and yhat~ ~ Z~; each sample's own design:
    V(lam) = s_r^2(lam) (Z'WZ)^-1 + lam^2 s_u^2 (Z~'W~Z~)^-1, slopes block. A tuned
    lambda (lam=None) minimises the slopes' summed variance (or coord's) numerically."""
    Zl, Zu = _design(lab, fes), _design(unl, fes)
    n, N, p = Zl.shape[0], Zu.shape[0], Zl.shape[1]
    assert np.linalg.matrix_rank(Zl) == p and np.linalg.matrix_rank(Zu) == p
    y, yh, yhu = (lab["y"].to_numpy(float), lab["llm_y"].to_numpy(float), unl["llm_y"].to_numpy(float))
    if weights:
        wl = lab["w"].to_numpy(float) * n / lab["w"].sum()
        wu = unl["w"].to_numpy(float) * N / unl["w"].sum()
    else:
        wl, wu = np.ones(n), np.ones(N)

    def wls(Z, t, w):
        return np.linalg.solve(Z.T @ (w[:, None] * Z), Z.T @ (w * t))

    ey, eh, eu = y - Zl @ wls(Zl, y, wl), yh - Zl @ wls(Zl, yh, wl), yhu - Zu @ wls(Zu, yhu, wu)
    Ml, Mu = Zl.T @ (wl[:, None] * Zl), Zu.T @ (wu[:, None] * Zu)

    def V(lam):   # each sample's own sigma^2 (Z'WZ)^-1
        s_r = np.sum(wl * (ey - lam * eh) ** 2) / (n - p)
        s_u = lam ** 2 * np.sum(wu * eu ** 2) / (N - p)
        return (s_r * np.linalg.inv(Ml) + s_u * np.linalg.inv(Mu))[:2, :2]

    if lam is None:
        def target(v):
            m = V(v)
            return np.trace(m) if coord is None else m[coord, coord]
        lam = float(minimize_scalar(target, bounds=(0.0, 1.0), method="bounded",
                                    options={"xatol": 1e-12}).x)
    theta = wls(Zl, y - lam * yh, wl) + lam * wls(Zu, yhu, wu)
    return lam, theta[:2], np.sqrt(np.diag(V(lam)))


@pytest.mark.parametrize("fes", ["firm", "firm + year"])
@pytest.mark.parametrize("weights", [None, "w"])
def test_lam_zero_equals_fe_feols_iid_on_the_labelled_rows(small, fes, weights):
    lab, unl = small
    fml = f"y ~ x1 + x2 | {fes}"
    ref = fe.feols(fml, lab, vcov="iid", fixef_rm="none", weights=weights)
    for kw in ({"lam": 0.0}, {"method": "classical"}):
        res = ppi.feols(fml, lab, unl, prediction="llm_y", vcov="iid", weights=weights, **kw)
        np.testing.assert_allclose(res.estimate, ref.coef().to_numpy(), rtol=1e-10)
        np.testing.assert_allclose(res.se, ref.se().to_numpy(), rtol=1e-10)
        np.testing.assert_allclose(res.table["classical_std_error"], ref.se().to_numpy(), rtol=1e-10)
    # the classical baseline of every method is fe.feols's iid too
    res = ppi.feols(fml, lab, unl, prediction="llm_y", vcov="iid", method="ppi", weights=weights)
    np.testing.assert_allclose(res.table["classical_std_error"], ref.se().to_numpy(), rtol=1e-10)


@pytest.mark.parametrize("fes", [("firm",), ("firm", "year")])
@pytest.mark.parametrize("kw", [{"method": "ppi"}, {"lam": 0.35}, {}, {"coord": "x2"}, {"weights": "w"},
                                {"coord": "x1", "weights": "w"}])
def test_equals_the_formula_by_hand_on_the_dummy_design(small, fes, kw):
    lab, unl = small
    res = ppi.feols("y ~ x1 + x2 | " + " + ".join(fes), lab, unl, prediction="llm_y", vcov="iid", **kw)
    lam = 1.0 if kw.get("method") == "ppi" else kw.get("lam")
    coord = None if "coord" not in kw else ["x1", "x2"].index(kw["coord"])
    lam_ref, theta, se = _by_hand(lab, unl, fes, lam, "weights" in kw, coord)
    tol = 1e-10 if len(fes) == 1 else 1e-7    # two fixed effects: demeaning by alternating projections
    if lam is None:
        assert 0 < res.lam < 1
        assert res.lam == pytest.approx(lam_ref, abs=1e-6)     # the numerical minimiser
        lam_ref, theta, se = _by_hand(lab, unl, fes, res.lam, "weights" in kw, coord)
        assert any("reported variance" in note for note in res.notes)
    assert res.lam == pytest.approx(lam_ref, abs=1e-12)
    np.testing.assert_allclose(res.estimate, theta, rtol=tol)
    np.testing.assert_allclose(res.se, se, rtol=tol)
    assert res.vcov.startswith("iid")


def test_homoskedastic_close_to_hetero_heteroskedastic_not():
    ratios = {}
    for het in (False, True):
        rng = np.random.default_rng(11)
        lab, unl = _rows(rng, 1500, het, n_firm=15), _rows(rng, 15000, het, n_firm=15).drop(columns="y")
        for kw in ({"method": "ppi"}, {}, {"method": "classical"}):
            a = ppi.feols("y ~ x1 + x2 | firm", lab, unl, prediction="llm_y", vcov="iid", **kw)
            b = ppi.feols("y ~ x1 + x2 | firm", lab, unl, prediction="llm_y", **kw)
            ratios[het, kw.get("method", "ppi++")] = a.se / b.se
    for m in ("ppi", "ppi++", "classical"):
        assert np.all(np.abs(ratios[False, m] - 1) < 0.1), (m, ratios[False, m])
        # the variance grows with |x2|: the iid SE of x2 is too small
        assert ratios[True, m][1] < 0.85, (m, ratios[True, m])


def test_row_order_and_index_do_not_matter(small):
    lab, unl = small
    rng = np.random.default_rng(5)
    lab2 = lab.sort_values(["firm", "x1"]).set_index(rng.permutation(len(lab)) + 1000)
    unl2 = unl.iloc[rng.permutation(len(unl))]
    for kw in ({}, {"method": "ppi", "weights": "w"}, {"coord": "x1"}):
        a = ppi.feols("y ~ x1 + x2 | firm + year", lab, unl, prediction="llm_y", vcov="iid", **kw)
        b = ppi.feols("y ~ x1 + x2 | firm + year", lab2, unl2, prediction="llm_y", vcov="iid", **kw)
        assert a.lam == pytest.approx(b.lam, abs=1e-9)
        for col in ("estimate", "std_error", "classical_std_error"):
            np.testing.assert_allclose(a.table[col], b.table[col], rtol=1e-8)


def test_result_and_errors(small):
    lab, unl = small
    res = ppi.feols("y ~ x1 + x2 | firm", lab, unl, prediction="llm_y", vcov="iid")
    assert ppi.PPIResult.from_json(res.to_json()) == res
    assert "iid" in str(res.summary())
    with pytest.raises(InvalidArgumentError, match="`vcov` must be 'hetero', 'iid'"):
        ppi.feols("y ~ x1 | firm", lab, unl, prediction="llm_y", vcov="HC3")
    if "small_sample" in inspect.signature(ppi.feols).parameters:
        with pytest.raises(InvalidArgumentError, match="`small_sample`.*iid"):
            ppi.feols("y ~ x1 | firm", lab, unl, prediction="llm_y", vcov="iid", small_sample=True)
