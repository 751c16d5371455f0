"""``llmsurrogate.fe.feols`` against R's references through rpy2: ``lm()`` with factor dummies plus
``sandwich`` (``vcovHC``/``vcovCL``), and ``estimatr::lm_robust(fixed_effects = ...)``.

Where the definitions coincide the numbers agree to 1e-8 relative; where they differ the test
checks the stated analytic relation instead (docs/methods/lookahead.md §5.3.1):

* **Coefficients** are the same estimator everywhere (the within estimator equals OLS on the
  dummies, Frisch-Waugh-Lovell), with and without analytic weights.
* **iid and HC1** coincide: our ``df_k = k + sum(L_f) - (m - 1)`` is the rank of ``lm()``'s dummy
  design, ``p``; iid divides by ``N - p``, HC1 multiplies by ``N / (N - p)`` as ``sandwich``'s
  ``type = "HC1"`` and estimatr's ``se_type = "HC1"``.
* **One-way CRV1** is ``G/(G-1) * (N-1)/(N-df_k)`` here (pyfixest's and fixest's default), and
  ``G/(G-1) * (N-1)/(N-p)`` in ``sandwich::vcovCL(type = "HC1", cadjust = TRUE)`` and in
  estimatr's ``se_type = "stata"``, which count every fixed-effect level in ``p``. fixest removes
  from ``df_k`` the levels of a fixed effect **nested** in the cluster variable (each level inside
  one cluster; e.g. date effects with date clusters), adding one back. So the two coincide when no
  fixed effect is nested in the cluster (date effects with firm clusters), and otherwise
  ``V_ours / V_R = (N - p) / (N - df_k)`` exactly, which is what is tested.
* **Two-way CRV1** (``{"CRV1": "firm+date"}``) is ``V_a + V_b - V_{a∩b}``, each term with the same
  factor ``G/(G-1) * (N-1)/(N-df_k)``, ``G = min(G_a, G_b)`` (fixest's ``G_df = "min"``).
  ``sandwich::vcovCL(cluster = ~ firm + date)`` gives each term its own ``G_j/(G_j - 1)`` and the
  common ``(N-1)/(N-p)``; estimatr has no two-way clustering. The test rebuilds ours from
  ``sandwich``'s three one-way matrices ``V_j`` (each ``(N-1)/(N-p) * G_j/(G_j-1) * B M_j B``):
  ``V_ours = (N-p)/(N-df_k) * G/(G-1) * sum_j sign_j (G_j-1)/G_j V_j``.

Needs R with the Debian packages r-cran-sandwich and r-cran-estimatr (``make r-deps``), and rpy2;
fails, not skips, without them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe
from llmsurrogate.rbridge import pandas_to_r

from _r import rpy2_robjects, rscript  # noqa: F401  (the rpy2 fixture: R started once)

pytestmark = pytest.mark.r

RTOL = 1e-8
TERMS = ["x", "z", "x:z"]


@pytest.fixture(scope="module")
def r(rpy2_robjects):
    ro = rpy2_robjects
    for pkg in ("sandwich", "estimatr"):
        if not ro.r(f"isTRUE(requireNamespace('{pkg}', quietly = TRUE))")[0]:
            pytest.fail(f"R package {pkg!r} is missing: apt-get install r-cran-{pkg} (make r-deps)", pytrace=False)
    # R helpers: the slope block of a variance matrix, and the fits
    ro.r("""
    .fe_block <- function(V, terms) { V <- as.matrix(V); V[terms, terms, drop = FALSE] }
    .fe_lm <- function(fml, d, w = FALSE) {
      d$firm <- factor(d$firm); d$date <- factor(d$date)
      if (w) lm(as.formula(fml), d, weights = d$w) else lm(as.formula(fml), d)
    }
    .fe_robust <- function(fml, d, fixed, se_type, clusters = NULL, w = FALSE) {
      d$firm <- factor(d$firm); d$date <- factor(d$date)
      args <- list(formula = as.formula(fml), data = d, fixed_effects = as.formula(fixed), se_type = se_type)
      if (!is.null(clusters)) args$clusters <- d[[clusters]]
      if (w) args$weights <- d$w
      fit <- do.call(estimatr::lm_robust, args)
      list(coef = coef(fit), vcov = vcov(fit))
    }
    """)
    return ro


@pytest.fixture(scope="module")
def panel():
    """Unbalanced panel: 25 firms, 15 dates, firm effects correlated with x, date shocks."""
    rng = np.random.default_rng(20260)
    n = 500
    firm = rng.integers(0, 25, n)
    date = rng.integers(0, 15, n)
    x = rng.normal(size=n) + 0.05 * firm
    z = rng.normal(size=n)
    y = 1.5 * x - 0.5 * z + 0.3 * x * z + 0.2 * firm + rng.normal(size=15)[date] + rng.normal(size=n) * (1 + 0.5 * np.abs(x))
    return pd.DataFrame({"firm": [f"f{i:02d}" for i in firm], "date": [f"d{i:02d}" for i in date], "x": x, "z": z,
                         "y": y, "w": rng.uniform(0.5, 2.0, n)})


def _fit(fml, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may be dropped: the R fits keep every row
        return fe.feols(fml, data, **kw)


def _r_lm(r, fml, panel, w=False):
    return r.r[".fe_lm"](fml, pandas_to_r(panel), w)


def _block(r, V, terms):
    return np.asarray(r.r[".fe_block"](V, r.StrVector(terms)))


def _close(ours, ref, rtol=RTOL):
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=0)


def _coef(r, fit, terms):
    cf = r.r["coef"](fit)
    names = list(r.r["names"](cf))
    return np.array([cf[names.index(t)] for t in terms])


def _rank(r, fit):
    return int(r.r("function(f) f$rank")(fit)[0])


# ---- coincident definitions: equal to 1e-8 relative -----------------------------------------------

@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fixef", ["firm", "firm + date"])
def test_iid_and_hc1_equal_lm_sandwich_and_estimatr(r, panel, fixef, weighted):
    """iid and HC1 with one and two fixed effects, with and without analytic weights: our df_k is
    lm()'s rank, so summary.lm's variance, sandwich::vcovHC(type = "HC1") and estimatr's
    "classical"/"HC1" are ours."""
    w = "w" if weighted else None
    dummies = " + ".join(f"factor({f})" for f in fixef.split(" + "))
    ref = _r_lm(r, f"y ~ x + z + x:z + {dummies}", panel, weighted)
    d = pandas_to_r(panel)
    iid = _fit(f"y ~ x + z + x:z | {fixef}", panel, weights=w)
    het = _fit(f"y ~ x + z + x:z | {fixef}", panel, vcov="hetero", weights=w)
    assert iid.df_k == _rank(r, ref)
    _close(iid.coef(), _coef(r, ref, TERMS))
    _close(iid.vcov(), _block(r, r.r["vcov"](ref), TERMS))
    _close(het.vcov(), _block(r, r.r("sandwich::vcovHC")(ref, type="HC1"), TERMS))
    for se_type, ours in (("classical", iid), ("HC1", het)):
        rob = r.r[".fe_robust"]("y ~ x + z + x:z", d, f"~ {fixef}", se_type, r.NULL, weighted)
        _close(ours.coef(), np.asarray(rob.rx2("coef")))
        _close(ours.vcov(), np.asarray(rob.rx2("vcov")))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fixef,cluster", [("date", "firm"), ("firm", "date")])
def test_one_way_crv1_equals_vcovcl_and_estimatr_when_no_fixed_effect_is_nested(r, panel, fixef, cluster, weighted):
    """One-way CRV1 where the fixed effect is not nested in the cluster variable (date effects
    with firm clusters, firm effects with date clusters): fixest's df_k equals the full rank p
    that sandwich::vcovCL(type = "HC1") and estimatr's se_type = "stata" use, so the factors
    G/(G-1) (N-1)/(N-p) coincide."""
    w = "w" if weighted else None
    ref = _r_lm(r, f"y ~ x + z + x:z + factor({fixef})", panel, weighted)
    ours = _fit(f"y ~ x + z + x:z | {fixef}", panel, vcov={"CRV1": cluster}, weights=w)
    assert ours.df_k == _rank(r, ref)
    vcl = r.r("function(f, d, g) sandwich::vcovCL(f, cluster = d[[g]], type = 'HC1', cadjust = TRUE)")(
        ref, pandas_to_r(panel), cluster)
    _close(ours.vcov(), _block(r, vcl, TERMS))
    rob = r.r[".fe_robust"]("y ~ x + z + x:z", pandas_to_r(panel), f"~ {fixef}", "stata", cluster, weighted)
    _close(ours.coef(), np.asarray(rob.rx2("coef")))
    _close(ours.vcov(), np.asarray(rob.rx2("vcov")))
    assert ours.df_t == panel[cluster].nunique() - 1


def test_no_fixed_effects_equals_lm_with_intercept(r, panel):
    """Without fixed effects an intercept is fitted; every variance coincides with R's."""
    ref = _r_lm(r, "y ~ x + z", panel)
    terms_r = ["(Intercept)", "x", "z"]
    _close(_fit("y ~ x + z", panel).vcov(), _block(r, r.r["vcov"](ref), terms_r))
    _close(_fit("y ~ x + z", panel, vcov="hetero").vcov(), _block(r, r.r("sandwich::vcovHC")(ref, type="HC1"), terms_r))
    vcl = r.r("function(f, d) sandwich::vcovCL(f, cluster = d$firm, type = 'HC1')")(ref, pandas_to_r(panel))
    ours = _fit("y ~ x + z", panel, vcov={"CRV1": "firm"})
    _close(ours.coef(), _coef(r, ref, terms_r))
    _close(ours.vcov(), _block(r, vcl, terms_r))


# ---- where the definitions differ: the stated analytic factor ----------------------------------

@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("cluster", ["date", "firm"])
def test_one_way_crv1_with_a_nested_fixed_effect_differs_by_the_df_factor(r, panel, cluster, weighted):
    """Two-way fixed effects with clusters on one of them (the paper's Table II: date clusters;
    Table VI: firm clusters): that fixed effect is nested in the cluster, fixest drops its L levels
    from df_k and adds one back, lm()/sandwich and estimatr ("stata") count them. So
    V_ours = V_R (N - p)/(N - df_k) with p = k + L_firm + L_date - 1 and df_k = p - L_cluster + 1."""
    w = "w" if weighted else None
    ref = _r_lm(r, "y ~ x + z + x:z + factor(firm) + factor(date)", panel, weighted)
    ours = _fit("y ~ x + z + x:z | firm + date", panel, vcov={"CRV1": cluster}, weights=w)
    n, p = len(panel), _rank(r, ref)
    assert p == 3 + panel["firm"].nunique() + panel["date"].nunique() - 1
    assert ours.df_k == p - panel[cluster].nunique() + 1
    factor = (n - p) / (n - ours.df_k)
    assert factor < 1 - 1e-3  # a real difference, not rounding
    vcl = r.r("function(f, d, g) sandwich::vcovCL(f, cluster = d[[g]], type = 'HC1', cadjust = TRUE)")(
        ref, pandas_to_r(panel), cluster)
    _close(ours.vcov(), factor * _block(r, vcl, TERMS))
    rob = r.r[".fe_robust"]("y ~ x + z + x:z", pandas_to_r(panel), "~ firm + date", "stata", cluster, weighted)
    _close(ours.coef(), np.asarray(rob.rx2("coef")))
    _close(ours.vcov(), factor * np.asarray(rob.rx2("vcov")))


@pytest.mark.parametrize("fixef", ["firm", "firm + date"])
def test_two_way_crv1_from_sandwichs_one_way_matrices(r, panel, fixef):
    """Two-way clustering by firm and date (not in estimatr). sandwich's own two-way matrix is
    the sum of its one-way ones (each with its own G_j/(G_j-1)); ours uses G = min(G_firm,
    G_date) and fixest's df_k for every term:
    V_ours = (N-p)/(N-df_k) G/(G-1) sum_j sign_j (G_j-1)/G_j V_j."""
    dummies = " + ".join(f"factor({f})" for f in fixef.split(" + "))
    ref = _r_lm(r, f"y ~ x + z + x:z + {dummies}", panel)
    d = pandas_to_r(panel)
    vcl = r.r("function(f, g) sandwich::vcovCL(f, cluster = g, type = 'HC1', cadjust = TRUE)")
    groups = {"firm": panel["firm"], "date": panel["date"], "both": panel["firm"] + "|" + panel["date"]}
    parts = {k: _block(r, vcl(ref, r.StrVector(list(g))), TERMS) for k, g in groups.items()}
    sizes = {k: g.nunique() for k, g in groups.items()}
    two_r = _block(r, r.r("function(f, d) sandwich::vcovCL(f, cluster = ~ firm + date, type = 'HC1', multi0 = FALSE)")(
        ref, d), TERMS)
    _close(two_r, parts["firm"] + parts["date"] - parts["both"])  # our reading of sandwich's definition
    ours = _fit(f"y ~ x + z + x:z | {fixef}", panel, vcov={"CRV1": "firm+date"})
    n, p = len(panel), _rank(r, ref)
    g = min(sizes["firm"], sizes["date"])
    combo = sum(s * (sizes[k] - 1) / sizes[k] * parts[k] for k, s in (("firm", 1), ("date", 1), ("both", -1)))
    _close(ours.vcov(), (n - p) / (n - ours.df_k) * g / (g - 1) * combo)
    assert ours.df_t == g - 1
