"""Tables built from the raw certainty equivalents against the authors' published matrices (issue 24;
docs/methods/transfer.md, "Tables from raw data and the published matrices").

Every row of our r = 1 CPT tables either reproduces the published row (relative 1e-5) or comes
with a certificate computed here: our in-sample objective is at most the authors' (their published
in-sample error, the matrix's diagonal, and the in-sample error of their fitted parameters), and
where the two are equal the parameters differ only along directions the training pool does not
identify, where ours is the more restricted model (more parameters at their default 1).

The authors' parameters below were inferred from the published rows (nonlinear least squares of
the 44 published RMSEs of a row on the parameters, within the bounds of their code); the test
checks that they reproduce the published row, so they are their fit, not a claim about it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _published import fixture_order, matrix_with_in_sample
from llmsurrogate import datasets as ds
from llmsurrogate import transfer as tr

# parameters (free ones, in the order alpha, beta, delta, gamma) of the authors' fits on the
# training pools (published matrix index) whose published row differs from ours
AUTHORS = {
    "g": {35: [0.735623082531], 38: [0.735623082531], 41: [0.735623082531], 43: [0.735623082531]},
    "ab": {35: [0.718836069539, 0.999940095781], 36: [0.887259683051, 0.523254419828], 37: [0.560627067366, 0.999917732113], 39: [0.984749598554, 0.999933892907], 40: [0.881624366976, 0.999935507938], 41: [0.0968326149348, 0.678097172865], 43: [0.875245802517, 0.999928614492]},
    "dg": {35: [0.616198197105, 0.20474229523], 38: [0.771131800718, 0.722510898709], 39: [0.723965035071, 0.870988031931], 41: [0.485449896883, 0.499999998693], 43: [0.828028551182, 0.999935349165]},
    "abg": {35: [0.718836069539, 0.999940095782, 0.999940095782], 36: [0.85458281596, 0.857072299895, 0.488366469629], 37: [0.584905413714, 0.789057241295, 0.445832158552], 39: [0.608450459293, 0.756022150227, 0.52196398218], 40: [0.866827713561, 0.750697563456, 0.639536250254], 41: [0.0968326116564, 0.999933892731, 0.999933892731], 43: [0.875245802517, 0.999928614492, 0.999928614493]},
    "abdg": {34: [0.999999999831, 0.499999999935, 1.95490804717, 0.438999048719], 35: [0.999940386118, 0.999932020957, 0.616255451021, 0.765504325899], 37: [0.72758717086, 0.797302038775, 0.746207196678, 0.432789424369], 38: [0.898631486894, 0.999999987037, 0.899981298501, 0.999999995839], 39: [0.995053105251, 0.999999964294, 0.973613421596, 0.99999662792], 41: [0.654385933843, 0.837595839077, 0.639593474243, 0.837593768372], 42: [2.5729584327e-05, 0.999973520737, 1.20956065633, 1.80320004605e-05], 43: [0.999930422848, 0.999938152676, 0.828111963326, 0.689487655557]},
}

TABLE5 = {  # paper Table 5, tau = 0.95, RMSE: raw and deterioration intervals
    "EU_iso": [(2.56, 16.41), (1.00, 1.30)], "g": [(2.50, 15.83), (1.00, 1.47)],
    "ab": [(2.56, 16.13), (1.00, 1.30)], "dg": [(2.48, 17.19), (1.00, 1.53)],
    "abg": [(2.47, 15.91), (1.00, 1.85)], "abdg": [(2.46, 15.99), (1.00, 1.82)],
}
# the Table 5 cells our tables do not reproduce to two decimals: all come from rows trained on pools
# that leave a CPT parameter unidentified (equal in-sample fit, different parameters); the test below
# shows that the authors' fits on those rows give the paper's value
NOT_REPRODUCED = {("ab", "raw", "hi"), ("abg", "deterioration", "hi"), ("abdg", "raw", "hi")}


@pytest.fixture(scope="module")
def pools():
    ce = ds.load_certainty_equivalents()
    ids = ds.certainty_equivalent_domains()["domain_id"].to_numpy()[fixture_order()]
    return ce, [(g[["z1", "z2", "p1"]].to_numpy(float), g["ce"].to_numpy(float))
                for g in (ce[ce["domain_id"] == d] for d in ids)]


def authors_row(free, x, pools):
    """RMSE on every pool of the CPT rule with the authors' parameters x."""
    m = tr.CPT(free)
    theta = np.ones(4)
    theta[["abdg".index(c) for c in free]] = x
    m.theta_ = theta
    return np.array([math.sqrt(np.mean((m.predict(X) - y) ** 2)) for X, y in pools])


def built(free, pools):
    ce, data = pools
    order = fixture_order()
    mat = np.sqrt(matrix_with_in_sample(ce, tr.CPT(free), "mse"))[np.ix_(order, order)]
    theta = np.array([tr.CPT(free).fit(X, y).theta_ for X, y in data])
    return mat, theta


@pytest.mark.parametrize("free", ["g", "ab", "dg", "abg", "abdg"])
def test_each_row_is_the_published_one_or_an_at_least_as_good_fit(pools, free):
    mine, theta = built(free, pools)
    theirs = ds.load_transfer_errors(free).to_numpy(float)
    rel = np.abs(mine - theirs) / theirs
    differing = {k for k in range(44) if rel[k].max() > 1e-5}
    assert differing == set(AUTHORS[free])
    for k in sorted(differing):
        x = np.array(AUTHORS[free][k])
        row = authors_row(free, x, pools[1])
        # these parameters are the authors' fit: they give the published row
        assert np.max(np.abs(row - theirs[k]) / theirs[k]) < 2e-8, k
        # certificate: our in-sample error is at most theirs (published and recomputed)
        assert mine[k, k] <= theirs[k, k] * (1 + 1e-12), k
        assert mine[k, k] <= row[k] * (1 + 1e-12), k
        if row[k] <= mine[k, k] * (1 + 1e-12):
            # an equal fit: ours is the more restricted model on the flat set of minimisers
            ours_x = theta[k, ["abdg".index(c) for c in free]]
            assert np.sum(ours_x == 1.0) > np.sum(np.abs(x - 1.0) < 1e-12), (k, ours_x, x)
        else:
            assert (free, k) == ("abdg", 42)  # the one strictly better fit (the authors' optimiser stopped early)
            assert mine[k, k] < theirs[k, k] * (1 - 5e-6)


def interval(v, tau=0.95):
    v = np.sort(v)
    k = math.ceil(tau * v.size - 1e-9)
    return v[v.size - k], v[k - 1]


@pytest.mark.parametrize("name", list(TABLE5))
def test_table5_from_raw_data(pools, name):
    """Table 5's raw and deterioration intervals from our tables equal the paper's to two decimals,
    except the cells in NOT_REPRODUCED; with the authors' (equally good) fits on the differing rows
    in their place, every cell equals the one computed from the published matrix (which is the
    paper's, but for dg's raw lower end: 2.47 against a printed 2.48, docs/methods/transfer.md §6.9;
    our own table gives 2.48)."""
    ce, data = pools
    order = fixture_order()
    model = tr.EU(zero_prize="authors") if name == "EU_iso" else tr.CPT(name)
    mine = np.sqrt(matrix_with_in_sample(ce, model, "mse"))[np.ix_(order, order)]
    swapped = mine.copy()
    for k, x in AUTHORS.get(name, {}).items():
        swapped[k] = authors_row(name, np.array(x), data)
    published = ds.load_transfer_errors(name).to_numpy(float)
    off = ~np.eye(44, dtype=bool)

    def table5(mat, kind):
        vals = mat[off] if kind == "raw" else (mat / np.diag(mat)[None, :])[off]
        return np.round(interval(vals), 2)

    for kind, paper in zip(("raw", "deterioration"), TABLE5[name]):
        got, alt, pub = table5(mine, kind), table5(swapped, kind), table5(published, kind)
        np.testing.assert_array_equal(alt, pub, err_msg=f"{name} {kind}: the authors' fits on the differing rows")
        for end, g, p in zip(("lo", "hi"), got, paper):
            if (name, kind, end) in NOT_REPRODUCED:
                assert g != pytest.approx(p, abs=1e-9), f"{name} {kind} {end} now reproduced: update the docs"
            else:
                assert g == pytest.approx(p, abs=1e-9), f"{name} {kind} {end}: {g} vs {p}"
