"""The R package's error matrices cross the bridge as the raw bytes of their doubles
(llmsurrogate.rbridge._r_matrix): same answers as the long form, missing cells still pooled with
the warning, repeated matrices reuse their table."""

import math
import warnings

import numpy as np
import pytest

from llmsurrogate import rbridge
from llmsurrogate import transfer as tr
from llmsurrogate.transfer import ErrorTable


def _payload(m: np.ndarray) -> dict:
    return {"__rmatrix__": {"bytes": np.asarray(m, dtype="<f8").ravel(order="F").tobytes(), "nrow": m.shape[0]}}


def _long(m: np.ndarray) -> dict:
    n = m.shape[0]
    idx = [(i, j) for j in range(n) for i in range(n) if i != j]
    return {"train": [i + 1 for i, _ in idx], "test": [j + 1 for _, j in idx],
            "error": [None if math.isnan(m[i, j]) else float(m[i, j]) for i, j in idx]}


@pytest.fixture
def matrix():
    rng = np.random.default_rng(3)
    m = rng.random((7, 7))
    np.fill_diagonal(m, np.nan)  # R's NA on the diagonal arrives as NaN and is ignored
    return m


def test_complete_matrix_is_a_table_with_r_positions(matrix):
    t = rbridge.from_r(_payload(matrix))
    assert isinstance(t, ErrorTable)
    assert list(t.domains) == list(range(1, 8))
    for cov, side in [(0.8, "two"), (0.9, "left"), (0.95, "right")]:
        assert tr.forecast_interval(t, cov, side=side, pooled=True) == \
            tr.forecast_interval(_long(matrix), cov, side=side, pooled=True)
    a = tr.qte_interval(t, 0.8, side="two", betas=[0.3, 0.5], pooled=True)
    b = tr.qte_interval(_long(matrix), 0.8, side="two", betas=[0.3, 0.5], pooled=True)
    assert rbridge.to_plain(a) == rbridge.to_plain(b)


def test_repeated_matrix_reuses_its_table_and_changed_matrix_does_not(matrix):
    t1 = rbridge.from_r(_payload(matrix))
    assert rbridge.from_r(_payload(matrix)) is t1
    changed = matrix.copy()
    changed[0, 1] += 1.0
    assert rbridge.from_r(_payload(changed)) is not t1


def test_missing_cell_becomes_the_pooled_long_form_with_its_warning(matrix):
    m = matrix.copy()
    m[2, 4] = np.nan
    out = rbridge.from_r(_payload(m))
    assert out == _long(m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = rbridge.r_call("transfer.forecast_interval", _payload(m), 0.8, side="two", correction=False, tau=None,
                             mode="exact", pooled=True)
    assert res["warnings"] and "missing" in res["warnings"][0]["message"]


def test_r_call_matches_the_long_form(matrix):
    a = rbridge.r_call("transfer.forecast_interval", _payload(matrix), 0.9, side="two", correction=False, tau=None,
                       mode="transferUQ", pooled=True)
    b = rbridge.r_call("transfer.forecast_interval", {"__rframe__": {"names": ["train", "test", "error"], "columns": [
        {"kind": "integer", "values": _long(matrix)["train"], "na": []},
        {"kind": "integer", "values": _long(matrix)["test"], "na": []},
        {"kind": "double", "values": _long(matrix)["error"], "na": []}]}}, 0.9, side="two", correction=False,
        tau=None, mode="transferUQ", pooled=True)
    assert a == b
