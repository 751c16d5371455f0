"""The bridge of R's feols() methods (no R needed): the handle R keeps, plain values out, R's
coefficient names, and the answers against least squares written with NumPy (dummies for the
fixed effects). The R package's own tests compare the same methods with lm()."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import rbridge
from llmsurrogate.rbridge import fe as rfe

pytestmark = pytest.mark.filterwarnings("ignore:1 row\\(s\\) dropped:UserWarning")


def _r_frame_payload(frame: pd.DataFrame) -> dict:
    """``frame`` as R's feols() sends it (``__rframe__``: typed columns, missing values listed)."""
    kinds = {"f": "double", "i": "integer", "O": "character", "b": "logical"}
    cols = []
    for c in frame.columns:
        v = frame[c]
        na = [i for i, m in enumerate(pd.isna(v)) if m]
        vals = [None if m else (x.item() if hasattr(x, "item") else x) for x, m in zip(v.tolist(), pd.isna(v))]
        cols.append({"kind": kinds[v.dtype.kind], "values": vals, "na": na})
    return {"__rframe__": {"names": list(frame.columns), "columns": cols}}


@pytest.fixture(scope="module")
def panel():
    rng = np.random.default_rng(5)
    n = 120
    df = pd.DataFrame({"firm": rng.choice(["a", "b", "c", "d"], n), "x": rng.normal(size=n),
                       "g": rng.choice(["lo", "hi", "mid"], n)})
    df["y"] = 2 * df["x"] + df["firm"].map({"a": 0.0, "b": 1.0, "c": -1.0, "d": 2.0}) + rng.normal(size=n)
    df.loc[7, "x"] = np.nan
    return df


def _dummy_ls(df: pd.DataFrame, regressors: list[str], fe: str):
    """Least squares of y on the regressors and one dummy per level of ``fe``: (beta, fitted)."""
    ok = df[regressors + ["y"]].notna().all(axis=1).to_numpy()
    sub = df[ok]
    D = pd.get_dummies(sub[fe]).to_numpy(dtype=float)
    X = np.column_stack([sub[regressors].to_numpy(dtype=float), D])
    beta, *_ = np.linalg.lstsq(X, sub["y"].to_numpy(), rcond=None)
    return beta, X @ beta, np.flatnonzero(ok), dict(zip(sorted(sub[fe].unique()), beta[len(regressors):]))


def test_feols_with_handle_returns_plain_values_and_a_handle(panel):
    out = rbridge.call("fe.feols", "y ~ x | firm", _r_frame_payload(panel), None, None, handle=True)
    assert out["fit"]["__result__"] == "FeolsResult"
    assert isinstance(out["handle"], rfe.FeolsHandle)
    h = out["handle"]
    beta, fitted, rows, effects = _dummy_ls(panel, ["x"], "firm")
    got_rows = rbridge.call("fe.obs_rows", h)
    assert got_rows == [int(r) + 1 for r in rows]  # R's 1-based positions
    got = rbridge.call("fe.fitted", h)
    assert all(type(v) is float for v in got)  # plain floats (reticulate 1.28 takes no numpy 2 arrays)
    np.testing.assert_allclose(got, fitted, rtol=0, atol=1e-10)
    np.testing.assert_allclose(rbridge.call("fe.resid", h), panel["y"].to_numpy()[rows] - fitted, atol=1e-10)
    fx = rbridge.call("fe.fixef", h)
    assert fx["firm"]["levels"] == ["a", "b", "c", "d"]
    np.testing.assert_allclose(fx["firm"]["values"], [effects[k] for k in "abcd"], atol=1e-10)
    mm = rbridge.call("fe.model_matrix", h)
    assert mm["names"] == ["x"]
    np.testing.assert_allclose(mm["values"][0], panel["x"].to_numpy()[rows])
    assert rbridge.call("fe.weights", h) is None
    new = pd.DataFrame({"x": [1.0, 0.5, np.nan], "firm": ["b", "zz", "a"]})
    pred = rbridge.call("fe.predict", h, _r_frame_payload(new))
    assert pred[1] is None and pred[2] is None  # an unseen level, a missing value: R's NA
    assert pred[0] == pytest.approx(beta[0] * 1.0 + effects["b"], abs=1e-10)


def test_earlier_r_package_call_gets_the_result_alone_in_r_names(panel):
    out = rbridge.call("fe.feols", "y ~ x + factor(g)", _r_frame_payload(panel), None, None)
    assert out["__result__"] == "FeolsResult"
    terms = out["tidy"]["__frame__"]["term"]
    assert terms == ["(Intercept)", "x", "factor(g)lo", "factor(g)mid"]
    beta, *_ = np.linalg.lstsq(
        np.column_stack([np.ones(119), panel["x"].drop(index=7), pd.get_dummies(panel["g"].drop(index=7))[["lo", "mid"]]]
                        ).astype(float), panel["y"].drop(index=7).to_numpy(), rcond=None)
    np.testing.assert_allclose(out["tidy"]["__frame__"]["estimate"], beta, atol=1e-10)


def test_weights_of_the_rows_used_and_the_etable_in_r_names(panel):
    df = panel.assign(w=np.linspace(0.5, 2.0, len(panel)))
    out = rbridge.call("fe.feols", "y ~ x | firm", _r_frame_payload(df), None, "w", handle=True)
    np.testing.assert_array_equal(rbridge.call("fe.weights", out["handle"]), np.delete(df["w"].to_numpy(), 7))
    plain = rbridge.call("fe.feols", "y ~ x", _r_frame_payload(df), None, None)
    text = rbridge.call("fe.etable", [plain["json"]])
    assert "(Intercept)" in text and "\nIntercept" not in text


def test_r_term_names():
    assert rfe.r_term_names(["Intercept", "C(g)[T.b]", "x:C(g)[T.b]", "factor(h)[T.2]"], "y ~ x*factor(g) + factor(h)") \
        == ["(Intercept)", "factor(g)b", "x:factor(g)b", "factor(h)2"]
    # written as C(g), pyfixest's name stays
    assert rfe.r_term_names(["C(g)[T.b]"], "y ~ C(g)") == ["C(g)[T.b]"]


def test_a_bad_handle_is_refused():
    from llmsurrogate.exceptions import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="handle"):
        rbridge.call("fe.fitted", "not a fit")


def test_r_spelling_of_transforms_crosses_both_ways(panel):
    df = panel.assign(u=np.linspace(1.0, 3.0, len(panel)), h=np.arange(len(panel)) % 2)
    out = rbridge.call("fe.feols", "y ~ I(u^2) + factor(g) | firm^h", _r_frame_payload(df), None, None, handle=True,
                       r_variables=["y", "I(u^2)", "factor(g)"])
    # R's power is Python's **; the fixed effects' ^ stays an interaction
    assert out["handle"].fit.formula == "y ~ I(u**2) + factor(g) | firm^h"
    fit = rfe.FeolsResult.from_json(out["fit"]["json"])
    assert fit.formula == "y ~ I(u^2) + factor(g) | firm^h" and fit.terms == ["I(u^2)", "factor(g)lo", "factor(g)mid"]
    rows = np.asarray(rbridge.call("fe.obs_rows", out["handle"])) - 1
    np.testing.assert_allclose(rbridge.call("fe.model_matrix", out["handle"])["values"][0], df["u"].to_numpy()[rows] ** 2)


def test_collinear_terms_are_reported_in_r_names(panel):
    out = rbridge.r_call("fe.feols", "y ~ x + factor(g) | g", _r_frame_payload(panel), None, None, handle=True,
                         r_variables=["y", "x", "factor(g)"])
    assert any(w["message"].startswith("collinear regressor(s) dropped: factor(g)lo, factor(g)mid")
               for w in out["warnings"]), out["warnings"]
    assert out["value"]["fit"]["tidy"]["__frame__"]["term"] == ["x"]
    with pytest.warns(UserWarning, match=r"dropped: factor\(g\)lo, factor\(g\)mid"):
        res = rbridge.call("fe.feols", "y ~ x + factor(g) | g", _r_frame_payload(panel), None, None,
                           r_variables=["y", "x", "factor(g)"])
    assert "factor(g)lo" in res["summary"] and "[T." not in res["summary"]
