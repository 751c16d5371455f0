"""Variance estimators of the fixed-effects OLS and their small-sample corrections, as pyfixest
0.60 applies them by default (``ssc(k_adj=True, k_fixef="nonnested", G_adj=True, G_df="min")``,
fixest's defaults; docs/methods/lookahead.md §5.3.1).

Notation: N rows, k regressors (after collinear ones are dropped), ``bread = (X̃'WX̃)^-1``, scores
``s_i = w_i x̃_i e_i``, fixed effects with L_1..L_m levels. The fixed-effect degrees of freedom are
``k_fe = ΣL_f − (m − 1)`` (one level per extra fixed effect is redundant), and

* ``iid``: ``V = bread · Σ w_i e_i² / (N − df_k)``, ``df_k = k + k_fe``; t with ``N − df_k`` df;
* ``hetero`` (HC1): ``V = N/(N − df_k) · bread (Σ s_i s_iᵀ) bread``; t with ``N − df_k`` df;
* ``HC2`` / ``HC3`` (no fixed effects, as pyfixest): HC1 with ``s_i`` divided by ``sqrt(1 − h_i)`` /
  ``(1 − h_i)``, ``h_i = w_i x_iᵀ bread x_i`` the leverage; the factor ``N/(N − df_k)`` is kept, as
  pyfixest 0.60 keeps it (sandwich's HC2/HC3 have none);
* ``CRV1``: ``V = Σ_c sign_c · (N−1)/(N−df_k) · G/(G−1) · bread (Σ_g S_g S_gᵀ) bread`` over the
  cluster dimensions c (one; or for two-way ``a+b``: a, b and their intersection with sign −1),
  ``G = min`` of the dimensions' cluster counts; a fixed effect nested in a cluster dimension (each
  of its levels inside one cluster) does not count: ``df_k = k + k_fe − Σ_{nested} L_f +
  #nested``; t with ``G − 1`` df.

(``df_k`` is ``llmsurrogate._validation.fixest_df_k``, which ``ppi.feols`` uses too.)

Frequency weights (``weights_type="fweights"``, as pyfixest): a row of weight w counts as w rows:
``N = Σ w_i``; iid and CRV1 as above with that N; the hetero scores are ``sqrt(w_i) x̃_i e_i``
(and ``h_i / w_i`` the leverage of HC2/HC3).

Other small-sample corrections (:meth:`FeolsResult.with_vcov`'s ``k_adj`` and ``G_adj``, fixest's
``ssc(adj = , cluster.adj = )`` with fixest's meaning): the factors above are products of
``(N − 1)/(N − df_k)`` (``k_adj``) and ``G/(G − 1)`` (``G_adj``; ``G = N`` for hetero/HC2/HC3, as
fixest's hetero is clustering by row: ``(N−1)/(N−df_k) · N/(N−1) = N/(N−df_k)``; no factor for
iid, whose ``Σ w_i e_i² / (N − 1)`` times ``(N−1)/(N−df_k)`` is the ``/(N − df_k)`` above). Without
both (``k_adj=False, G_adj=False``) hetero, HC2 and HC3 are sandwich's ``vcovHC`` HC0, HC2 and HC3,
and CRV1 is ``vcovCL(type = "HC0", cadjust = FALSE)`` (per cluster dimension). pyfixest's
``ssc(k_adj=False)`` applies no factor to hetero at all (here: ``k_adj=False, G_adj=False``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import fixest_df_k, levels_nested_in
from ..exceptions import InvalidArgumentError


@dataclass(frozen=True)
class VcovSpec:
    """A parsed ``vcov`` argument: ``kind`` in iid/hetero/CRV1 and the cluster columns."""

    kind: str
    clusters: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if self.kind == "CRV1":
            return "CRV1 by " + "+".join(self.clusters)
        return {"iid": "iid", "hetero": "hetero (HC1)", "HC2": "HC2", "HC3": "HC3"}[self.kind]


def parse_vcov(vcov) -> VcovSpec:
    """``"iid"``, ``"hetero"`` / ``"HC1"``, or ``{"CRV1": "col"}`` / ``{"CRV1": "a+b"}``."""
    if vcov is None:
        return VcovSpec("iid")
    if isinstance(vcov, str):
        key = vcov.strip()
        if key == "iid":
            return VcovSpec("iid")
        if key in ("hetero", "HC1"):
            return VcovSpec("hetero")
        if key in ("HC2", "HC3"):
            return VcovSpec(key)
    elif isinstance(vcov, dict) and len(vcov) == 1:
        (kind, cols), = vcov.items()
        if kind == "CRV1" and isinstance(cols, str):
            names = tuple(c.strip() for c in cols.split("+"))
            if 1 <= len(names) <= 2 and all(names) and len(set(names)) == len(names):
                return VcovSpec("CRV1", names)
    raise InvalidArgumentError(
        f"argument `vcov` must be 'iid', 'hetero' (HC1), 'HC2', 'HC3', {{'CRV1': 'col'}} or {{'CRV1': 'col1+col2'}}; got {vcov!r}"
    )


def _meat_clusters(scores: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    sums = np.column_stack([np.bincount(codes, weights=scores[:, j], minlength=groups) for j in range(scores.shape[1])])
    return sums.T @ sums


def ssc_label(label: str, k_adj: bool = True, G_adj: bool = True) -> str:
    """``label`` with the small-sample factors applied when they are not both (the default).

    >>> ssc_label("HC2", k_adj=False, G_adj=False)
    'HC2; no small-sample factor'
    >>> ssc_label("CRV1 by firm", k_adj=False)
    'CRV1 by firm; small-sample factor G/(G-1) only'
    >>> ssc_label("iid")
    'iid'
    """
    if k_adj and G_adj:
        return label
    if not k_adj and not G_adj:
        return f"{label}; no small-sample factor"
    return f"{label}; small-sample factor {'(N-1)/(N-K)' if k_adj else 'G/(G-1)'} only"


@dataclass(frozen=True)
class VcovInputs:
    """What :func:`compute_vcov` reads, kept by a fit (in its estimation sample, not saved) so that
    :meth:`FeolsResult.with_vcov` recomputes the variance without refitting: the demeaned
    regressors of the coefficients kept and the residuals (both on the fit's standardized scale),
    the normalized weights, the bread, the fixed effects' codes and names, the codes of the fit's
    own cluster columns (by name), the frequency-weight factor, and the map back to the columns'
    units (``G``, ``r``: ``V = r (G V_s G') r``)."""

    X: np.ndarray
    resid: np.ndarray
    w: np.ndarray | None
    bread: np.ndarray
    fe_codes: list
    fe_names: list
    cluster_codes: dict
    fweights: float | None
    G: np.ndarray
    r: np.ndarray


@dataclass(frozen=True)
class VcovResult:
    vcov: np.ndarray
    df_k: int
    df_t: int
    ssc: tuple[float, ...]
    n_clusters: tuple[int, ...]


def compute_vcov(spec: VcovSpec, *, X: np.ndarray, resid: np.ndarray, w: np.ndarray | None, bread: np.ndarray,
                 fe_codes: list[np.ndarray], fe_names: list[str], cluster_codes: list[np.ndarray],
                 fweights: float | None = None, k_adj: bool = True, G_adj: bool = True) -> VcovResult:
    """The variance of the coefficients (see the module docstring). ``X`` and ``resid`` are the
    demeaned regressors and the residuals (unweighted); ``cluster_codes`` one code array per
    cluster column of ``spec``. ``fweights``: None for analytic weights, else the factor that turns
    ``w`` into the frequency weights (``w * fweights``). ``k_adj``, ``G_adj``: the factors
    ``(N - 1)/(N - df_k)`` and ``G/(G - 1)`` (fixest's ``ssc(adj, cluster.adj)``; the module
    docstring)."""
    rows, k = X.shape
    n = rows if fweights is None else int(round(float(np.sum(w)) * fweights))
    levels = [int(c.max()) + 1 for c in fe_codes]  # the codes are 0..L-1 (recode)
    k_fe = fixest_df_k(0, levels)
    ww = np.ones(n) if w is None else w
    scores = X * (ww * resid)[:, None]
    if spec.kind == "iid":
        df_k = k + k_fe
        if n - df_k <= 0:
            raise InvalidArgumentError(
                f"argument `data`: {n} rows leave no residual degrees of freedom for {k} regressors and {k_fe} fixed-effect levels")
        sigma2 = float(np.sum(ww * resid**2)) / ((n - df_k) if k_adj else (n - 1))
        return VcovResult(bread * sigma2, df_k, n - df_k, ((n - 1) / (n - df_k) if k_adj else 1.0,), ())
    if spec.kind in ("hetero", "HC2", "HC3"):
        df_k = k + k_fe
        if n - df_k <= 0:
            raise InvalidArgumentError(
                f"argument `data`: {n} rows leave no residual degrees of freedom for {k} regressors and {k_fe} fixed-effect levels")
        if fweights is not None:
            scores = scores / np.sqrt(ww * fweights)[:, None]
        if spec.kind != "hetero":
            if fe_codes:
                raise InvalidArgumentError(
                    f"argument `vcov`: {spec.kind} is not defined with fixed effects (the leverage of the absorbed "
                    "dummies is not computed, as in pyfixest); use 'hetero' (HC1) or a cluster")
            lev = np.einsum("ij,jk,ik->i", X, bread, X) * (ww if fweights is None else 1.0 / fweights)
            if np.any(lev >= 1 - 1e-10):
                raise InvalidArgumentError(
                    f"argument `vcov`: {spec.kind} is undefined here: a row has leverage 1 (it alone determines a "
                    "coefficient); use 'hetero' (HC1)")
            scores = scores / (np.sqrt(1 - lev) if spec.kind == "HC2" else (1 - lev))[:, None]
        # (n-1)/(n-df_k) * n/(n-1), written as n/(n-df_k) when both apply
        adj = n / (n - df_k) if k_adj and G_adj else (n - 1) / (n - df_k) if k_adj else n / (n - 1) if G_adj else 1.0
        return VcovResult(adj * bread @ (scores.T @ scores) @ bread, df_k, n - df_k, (adj,), ())
    # CRV1
    dims: list[tuple[np.ndarray, int, str]] = []
    for name, c in zip(spec.clusters, cluster_codes):
        g = int(c.max()) + 1
        if g < 2:
            raise InvalidArgumentError(
                f"argument `vcov`: cluster column {name!r} has a single level in the estimation sample; "
                "clustered standard errors need at least two clusters")
        dims.append((c, g, name))
    if len(dims) == 2:
        inter = dims[0][0].astype(np.int64) * dims[1][1] + dims[1][0]
        if dims[0][1] * dims[1][1] <= 8 * len(inter) + 1_000_000:
            present = np.bincount(inter) > 0
            inter_codes = (np.cumsum(present) - 1)[inter]
        else:
            _, inter_codes = np.unique(inter, return_inverse=True)
        dims.append((inter_codes, int(inter_codes.max()) + 1, "+".join(spec.clusters)))
    signs = [1.0, 1.0, -1.0][: len(dims)]
    g_min = min(d[1] for d in dims)
    # fixed effects nested in a cluster dimension
    nested = [fname in spec.clusters or any(levels_nested_in(fc, d[0]) for d in dims)
              for fname, fc in zip(fe_names, fe_codes)]
    df_k = fixest_df_k(k, levels, nested)
    if n - df_k <= 0:
        raise InvalidArgumentError(
            f"argument `data`: {n} rows leave no residual degrees of freedom for {k} regressors and the fixed effects")
    if k_adj and G_adj:
        adj = (n - 1) / (n - df_k) * g_min / (g_min - 1)
    else:
        adj = ((n - 1) / (n - df_k) if k_adj else 1.0) * (g_min / (g_min - 1) if G_adj else 1.0)
    v = np.zeros((k, k))
    for (codes, g, _), sign in zip(dims, signs):
        v += sign * adj * (bread @ _meat_clusters(scores, codes, g) @ bread)
    return VcovResult(v, df_k, g_min - 1, (adj,) * len(dims), tuple(d[1] for d in dims))


def to_units(vcov_s: np.ndarray, G: np.ndarray, r: np.ndarray):
    """The variance ``vcov_s`` of the coefficients of the standardized columns in the columns'
    units: ``Q = G V_s G'``, the standard errors ``r * sqrt(diag(Q))`` (exact where ``V``
    over- or underflows) and ``V = r Q r``. Returns ``V, se, Q``."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        Q = G @ vcov_s @ G.T
        se = r * np.sqrt(np.diag(Q))
        V = (r[:, None] * Q) * r[None, :]
    return V, se, Q


def check_variances(names, Q: np.ndarray, spec: VcovSpec) -> None:
    """Refuse a variance matrix ``Q`` with a negative diagonal entry (possible with two-way
    clustering, whose ``V_a + V_b - V_ab`` need not be positive semi-definite; fixest then
    replaces it by its nearest such matrix, this package refuses): :class:`InvalidArgumentError`
    naming ``vcov`` and the first such coefficient of ``names``."""
    negative = [name for name, q in zip(names, np.diag(Q)) if q < 0]
    if negative:
        why = (" (the two-way clustered variance V_a + V_b - V_ab is not positive semi-definite here)"
               if len(spec.clusters) == 2 else "")
        raise InvalidArgumentError(f"argument `vcov`: the variance of {negative[0]!r} is negative{why}; use another "
                                   "vcov (one-way clusters, or 'hetero')")
