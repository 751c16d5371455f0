"""The ESS real-data demo: the textbook CPT rule and a small run on the bundled data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmsurrogate.ess.demo import cpt_tk1992_certainty_equivalent, run_ess_demo, tk_weight


def _w(p, c):
    return p**c / (p**c + (1 - p) ** c) ** (1 / c)


@pytest.mark.parametrize("z1,z2,p1", [(100.0, 0.0, 0.5), (30.0, 10.0, 0.1), (-20.0, -5.0, 0.75),
                                      (25.0, -10.0, 0.5), (-30.0, 15.0, 0.2), (5.0, 20.0, 0.3)])
def test_cpt_tk1992_by_hand(z1, z2, p1):
    a = b = 0.88
    lam, g, d = 2.25, 0.61, 0.69

    def v(x):
        return x**a if x >= 0 else -lam * (-x) ** b

    (hi, phi), (lo, plo) = sorted([(z1, p1), (z2, 1 - p1)], reverse=True)
    if lo >= 0:
        V = _w(phi, g) * v(hi) + (1 - _w(phi, g)) * v(lo)
    elif hi <= 0:
        V = _w(plo, d) * v(lo) + (1 - _w(plo, d)) * v(hi)
    else:
        V = _w(phi, g) * v(hi) + _w(plo, d) * v(lo)
    want = V ** (1 / a) if V >= 0 else -((-V / lam) ** (1 / b))
    got = float(cpt_tk1992_certainty_equivalent(z1, z2, p1)[0])
    assert got == pytest.approx(want, rel=1e-12)


def test_tk_weight_shape():
    assert float(tk_weight(0.5, 0.61)) == pytest.approx(0.4206, abs=1e-4)   # TK (1992) figure
    assert float(tk_weight(0.01, 0.61)) > 0.01 and float(tk_weight(0.99, 0.61)) < 0.99


def test_run_ess_demo_small():
    out = run_ess_demo(domain_id=11, grid=(1, 5, 50), n_estimators=10)
    tab = out["table"]
    assert list(tab["algorithm"]) == ["rf", "lasso"]
    assert (tab["n"] == 1032).all()
    for algo in ("rf", "lasso"):
        res = out[algo]
        assert res.lower_bound in (1, 2, 6, 51)
        assert res.llm_error == pytest.approx(tab["rule MSE"].iloc[0])
        assert math.isfinite(res.table["algo_error"].iloc[-1])
