"""Issue 21, item 7: predict(), resid(), fixef(), model_matrix(), obs_index and df_resid with
pyfixest's names; HC2 and HC3; frequency weights; pyfixest's other keywords refused by name.

References: pyfixest 0.60 (its MAP demeaner at 1e-13, its fixef()/predict() at lsqr tolerance
1e-14), statsmodels' HC2/HC3, the fit on duplicated rows for frequency weights, and a dummy
regression (numpy's lstsq) for the fixed effects of an interacted fixed effect.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe
from llmsurrogate.exceptions import InvalidArgumentError

pf = pytest.importorskip("pyfixest")

DATA = pf.get_data(N=1000, seed=76540251, beta_type="2", error_type="2")
DATA["fw"] = np.random.default_rng(1).integers(1, 4, len(DATA)).astype(float)


def reference(fml, data=DATA, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pf.feols(fml, data, demeaner=pf.MapDemeaner(fixef_tol=1e-13), **kw)


def ours(fml, data=DATA, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fe.feols(fml, data, **kw)


@pytest.mark.parametrize("weights", [None, "weights"])
@pytest.mark.parametrize("fml", ["Y ~ X1 + X2", "Y ~ X1 | f1", "Y ~ X1 + X2 | f1 + f2", "Y ~ X1 | f1 + f2 + f3",
                                 "Y ~ X1 + C(f1) | f2", "log(Y) ~ X1 + I(X2 ** 2)"])
def test_predict_resid_obs_index_model_matrix_equal_pyfixest(fml, weights):
    o, r = ours(fml, weights=weights), reference(fml, weights=weights)
    np.testing.assert_array_equal(o.obs_index, r._data.index.to_numpy())
    np.testing.assert_allclose(o.resid(), r.resid(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(o.predict(), r.predict(), rtol=0, atol=1e-9)
    mm = o.model_matrix()
    assert list(mm.columns) == list(r.coef().index) and list(mm.index) == list(o.obs_index)
    X = r._X_untransformed if weights else r._X
    if not r._has_fixef:  # pyfixest keeps the demeaned design there
        np.testing.assert_allclose(mm.to_numpy(), X, rtol=1e-14)
    # the columns named by the formula, from the data rows obs_index names
    if fml == "Y ~ X1 + X2":
        np.testing.assert_array_equal(mm["X2"].to_numpy(), DATA["X2"].to_numpy()[o.obs_index])
    assert o.df_resid == o.nobs - len(o.terms) - sum(o.fe_levels.values()) + max(len(o.fe_levels) - 1, 0)
    if not r._has_fixef or len(o.fe_levels) == 1:
        assert o.df_resid == r._df_t  # iid: N - df_k, no nesting to discount


@pytest.mark.parametrize("weights", [None, "weights"])
@pytest.mark.parametrize("fml", ["Y ~ X1 | f1", "Y ~ X1 + X2 | f1 + f2", "Y ~ X1 | f1 + f2 + f3",
                                 "Y ~ X1 + C(f1) | f2 + f3", "Y ~ X1 + X2:f1 | f3"])
def test_fixef_and_predict_on_new_data_equal_pyfixest(fml, weights):
    o, r = ours(fml, weights=weights), reference(fml, weights=weights)
    got, want = o.fixef(), r.fixef(atol=1e-14, btol=1e-14)
    assert list(got) == o.fixef_names
    for name, series in got.items():
        ref = pd.Series(want[f"C({name})"])
        # pyfixest leaves out the reference level of each fixed effect after the first; here it is 0
        extra = set(series.index) - set(ref.index)
        assert set(ref.index) <= set(series.index) and len(extra) == (0 if name == o.fixef_names[0] else 1)
        assert all(series[e] == 0 for e in extra)
        np.testing.assert_allclose(series.reindex(ref.index).to_numpy(), ref.to_numpy(), rtol=0, atol=1e-9)
    new = DATA.iloc[:150].copy()
    new.loc[new.index[:3], "f1"] = 99.0  # a level never seen
    p, q = o.predict(new), r.predict(newdata=new, atol=1e-14, btol=1e-14)
    if "C(f1)" in fml:
        # pyfixest (formulaic) encodes an unseen level of C(f1) as the reference level, a silent
        # wrong number; here it is NaN, as for an unseen fixed-effect level
        assert np.isnan(p[:3]).all() and np.isfinite(q[:3]).sum() >= 2  # (row 1 lacks another value)
        p, q = p[3:], q[3:]
    elif "| f1" in fml:
        assert np.isnan(p[:3]).all()  # an unseen fixed-effect level: NaN, as pyfixest
    np.testing.assert_array_equal(np.isnan(p), np.isnan(q))
    assert np.isfinite(p).sum() > 100
    np.testing.assert_allclose(p[np.isfinite(p)], q[np.isfinite(q)], rtol=0, atol=1e-9)


def test_predict_applies_the_formulas_transforms_to_new_data():
    df = DATA.dropna().reset_index(drop=True)
    fml = "Y ~ X1 + i(f1, X2, ref=1) + C(f2) + I(X2 ** 2) + log(X1 + 10) | f3"
    o = ours(fml, df)
    new = df.sample(80, random_state=2).reset_index(drop=True)
    new.loc[0, "f2"] = 1000.0  # an unseen level of C(f2): NaN, not the reference level
    new.loc[1, "X2"] = np.nan
    p = o.predict(new)
    # by hand: the dummies of the levels seen, the fixed effects from fixef()
    beta, fx = o.coef(), o.fixef()["f3"]
    want = np.full(len(new), np.nan)
    for j, row in new.iterrows():
        if j < 2:
            continue
        v = beta["X1"] * row.X1 + beta["I(X2 ** 2)"] * row.X2**2 + beta["log(X1 + 10)"] * np.log(row.X1 + 10)
        v += beta.get(f"f1::{row.f1}:X2", 0.0) * row.X2 + beta.get(f"C(f2)[T.{row.f2}]", 0.0)
        want[j] = v + fx[str(row.f3)]
    np.testing.assert_allclose(p, want, rtol=1e-12, atol=1e-12)
    # and on the estimation rows predict(newdata) is predict()
    np.testing.assert_allclose(o.predict(df.iloc[o.obs_index]), o.predict(), rtol=1e-12, atol=1e-10)


def test_fixef_of_an_interacted_fixed_effect_equals_a_dummy_regression():
    df = DATA.dropna().reset_index(drop=True)
    o = ours("Y ~ X1 | f1 + f2^f3", df, fixef_rm="none")
    a, b = pd.factorize(df["f1"])[0], pd.factorize(df["f2"].astype(str) + "^" + df["f3"].astype(str))[0]
    labels_b = np.array([str(v) for v in pd.factorize(df["f2"].astype(str) + "^" + df["f3"].astype(str))[1]])
    ref_b = int(np.argsort(labels_b, kind="stable")[0])  # fixef(): the first level in sorted order is 0
    Db = np.eye(b.max() + 1)[b]
    D = np.column_stack([np.eye(a.max() + 1)[a], np.delete(Db, ref_b, axis=1)])
    coef = np.linalg.lstsq(D, df["Y"].to_numpy() - o.coef()["X1"] * df["X1"].to_numpy() - o.resid(), rcond=None)[0]
    got = o.fixef()
    levels_a = [str(v) for v in pd.factorize(df["f1"])[1]]
    np.testing.assert_allclose(got["f1"].reindex(levels_a).to_numpy(), coef[: len(levels_a)], atol=1e-8)
    rest = np.insert(coef[len(levels_a):], ref_b, 0.0)
    np.testing.assert_allclose(got["f2^f3"].reindex(labels_b).to_numpy(), rest, atol=1e-8)
    assert "2.0^1.0" in got["f2^f3"].index or any("^" in s for s in got["f2^f3"].index)


def test_fixef_used_as_the_old_list_warns_and_saved_fits_load():
    o = ours("Y ~ X1 | f1 + f2")
    assert o.fixef_names == ["f1", "f2"]
    with pytest.warns(FutureWarning, match="fixef_names"):
        assert list(o.fixef) == ["f1", "f2"]
    with pytest.warns(FutureWarning):
        assert "f1" in o.fixef
    payload = o.to_dict()
    payload["fields"]["fixef"] = payload["fields"].pop("fixef_names")  # a fit saved before the rename
    for k in ("weights_type", "df_resid"):
        payload["fields"].pop(k)
    old = fe.FeolsResult.from_dict(payload)
    assert old.fixef_names == ["f1", "f2"] and old.df_resid is None
    again = fe.FeolsResult.from_json(o.to_json())
    assert again == o
    with pytest.raises(InvalidArgumentError, match="refit"):
        again.predict()
    with pytest.raises(InvalidArgumentError, match="no fixed effects"):
        ours("Y ~ X1").fixef()


@pytest.mark.parametrize("kind", ["HC2", "HC3"])
@pytest.mark.parametrize("weights", [None, "weights"])
def test_hc2_hc3_equal_pyfixest_and_statsmodels(kind, weights):
    sm = pytest.importorskip("statsmodels.api")
    o, r = ours("Y ~ X1 + X2 + C(f1)", vcov=kind, weights=weights), reference("Y ~ X1 + X2 + C(f1)", vcov=kind,
                                                                                   weights=weights)
    np.testing.assert_allclose(o.se().to_numpy(), r.se().to_numpy(), rtol=1e-10)
    assert o.vcov_type == kind
    mm = o.model_matrix()
    y = DATA["Y"].to_numpy()[o.obs_index]
    w = np.ones(len(y)) if weights is None else DATA["weights"].to_numpy()[o.obs_index]
    s = sm.WLS(y, mm.to_numpy(), weights=w).fit(cov_type=kind)
    n, k = mm.shape  # pyfixest (and so feols) keep HC1's N/(N-k) on HC2/HC3; statsmodels has none
    np.testing.assert_allclose(o.se().to_numpy(), s.bse * np.sqrt(n / (n - k)), rtol=1e-10)


def test_hc2_hc3_refused_with_fixed_effects():
    for kind in ("HC2", "HC3"):
        with pytest.raises(InvalidArgumentError, match=f"`vcov`: {kind}.*fixed effects"):
            ours("Y ~ X1 | f1", vcov=kind)


@pytest.mark.parametrize("fml, vcov", [(f, v) for f in ["Y ~ X1 + X2", "Y ~ X1 + X2 | f1"]
                                        for v in ["iid", "hetero", "HC3", {"CRV1": "group_id"}]
                                        if not (v == "HC3" and "|" in f)], ids=str)  # HC3: no FE
def test_frequency_weights_are_duplicated_rows_and_equal_pyfixest(fml, vcov):
    df = DATA.dropna().reset_index(drop=True)
    o = ours(fml, df, vcov=vcov, weights="fw", weights_type="fweights", fixef_rm="none")
    r = reference(fml, df, vcov=vcov, weights="fw", weights_type="fweights", fixef_rm="none")
    np.testing.assert_allclose(o.coef().to_numpy(), r.coef().to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(o.se().to_numpy(), r.se().to_numpy(), rtol=1e-9)
    assert o.nobs == r._N == df["fw"].sum() and o.df_t == r._df_t
    long = df.loc[df.index.repeat(df["fw"].astype(int))].reset_index(drop=True)
    d = ours(fml, long, vcov=vcov, fixef_rm="none")
    np.testing.assert_allclose(o.coef().to_numpy(), d.coef().to_numpy(), rtol=1e-10)
    if vcov != "HC3":  # HC3's leverage of a duplicated row is not the leverage of the weighted row
        np.testing.assert_allclose(o.se().to_numpy(), d.se().to_numpy(), rtol=1e-9)
    assert d.nobs == o.nobs and d.df_t == o.df_t


def test_frequency_weight_errors():
    with pytest.raises(InvalidArgumentError, match="`weights`.*whole numbers"):
        ours("Y ~ X1", weights="weights", weights_type="fweights")
    with pytest.raises(InvalidArgumentError, match="`weights_type`"):
        ours("Y ~ X1", weights="fw", weights_type="pweights")
    with pytest.raises(InvalidArgumentError, match="`weights_type`.*needs `weights`"):
        ours("Y ~ X1", weights_type="fweights")


@pytest.mark.parametrize("kw, name", [
    ({"ssc": {"k_adj": False, "k_fixef": "nonnested", "G_adj": True, "G_df": "min"}}, "ssc"),
    ({"split": "f1"}, "split"), ({"fsplit": "f1"}, "fsplit"), ({"vcov_kwargs": {"lag": 2}}, "vcov_kwargs"),
    ({"drop_intercept": True}, "drop_intercept"), ({"lean": True}, "lean"), ({"use_compression": True},
                                                                           "use_compression"),
    ({"demeaner": object()}, "demeaner"), ({"solver": "np.linalg.lstsq"}, "solver"), ({"context": {"f": 1}}, "context"),
])
def test_pyfixest_keywords_refused_by_name(kw, name):
    with pytest.raises(InvalidArgumentError, match=f"argument `{name}`"):
        ours("Y ~ X1 | f1", **kw)


def test_pyfixest_keywords_at_their_default_change_nothing():
    base = ours("Y ~ X1 | f1", vcov={"CRV1": "group_id"})
    same = ours("Y ~ X1 | f1", vcov={"CRV1": "group_id"}, ssc=pf.ssc(), split=None, lean=False, copy_data=True,
                demeaner=None)
    assert same == base or np.array_equal(same.se().to_numpy(), base.se().to_numpy())
    with pytest.raises(InvalidArgumentError, match="unknown argument `vcvo`.*`vcov`"):
        ours("Y ~ X1 | f1", vcvo="hetero")
