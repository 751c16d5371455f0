"""ErrorTable: the three input conventions and their validation."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import polars as pl
import pytest

from llmsurrogate.exceptions import InvalidArgumentError, NonFiniteError, ShapeError
from llmsurrogate.results import Result
from llmsurrogate.transfer import ErrorTable

E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # docs/methods/transfer.md T1: row = train, col = test


def long_frame(matrix):
    n = matrix.shape[0]
    return pd.DataFrame([{"train": i, "test": j, "error": matrix[i, j]}
                         for i in range(n) for j in range(n) if i != j])


def test_matrix_long_and_table_agree():
    a = ErrorTable.from_matrix(E)
    b = ErrorTable.coerce(long_frame(E).sample(frac=1, random_state=0))
    c = ErrorTable.coerce(pl.from_pandas(long_frame(E)))
    garbage = E.copy()
    np.fill_diagonal(garbage, 1e9)
    d = ErrorTable.coerce(garbage)
    for t in (b, c, d):
        assert np.array_equal(t.values, a.values) and np.array_equal(t.test, a.test)
        assert np.array_equal(t.train, a.train)
    assert ErrorTable.coerce(a) is a
    assert a.to_matrix().to_numpy()[0, 1] == 1.0 and np.isnan(a.to_matrix().to_numpy()[0, 0])
    assert Result.from_json(a.to_json()) == a


def test_labelled_matrix_keeps_labels_and_reorders_columns():
    labels = ["Chile", "Peru", "Spain"]
    df = pd.DataFrame(E, index=labels, columns=labels)[["Spain", "Chile", "Peru"]]
    t = ErrorTable.from_matrix(df)
    assert t.domains == labels
    assert np.array_equal(t.values, ErrorTable.from_matrix(E).values)
    assert set(t.tidy()["test"]) == set(labels)


def test_r_greater_than_one_long_format():
    n, r = 5, 2
    rows = []
    for tr in itertools.combinations(range(n), r):
        for d in range(n):
            if d not in tr:
                rows.append({"train_1": tr[1], "train_2": tr[0], "test": d, "error": float(sum(tr) * 10 + d)})
    t = ErrorTable.from_long(pd.DataFrame(rows))
    assert (t.n, t.r, t.N, t.K) == (5, 2, 30, 6)
    assert (t.train[:, 0] < t.train[:, 1]).all()
    np.testing.assert_array_equal(np.bincount(t.test), [6] * 5)
    back = t.tidy()
    assert list(back.columns) == ["train_1", "train_2", "test", "error"]


@pytest.mark.parametrize("make, exc, words", [
    (lambda: ErrorTable.coerce(np.where(np.eye(3, k=1) == 1, np.nan, E)), NonFiniteError, ["train=0", "test=1", "missing"]),
    (lambda: ErrorTable.coerce(np.where(np.eye(3, k=1) == 1, np.inf, E)), NonFiniteError, ["not finite"]),
    (lambda: ErrorTable.coerce(np.ones((2, 3))), ShapeError, ["square"]),
    (lambda: ErrorTable.coerce(np.ones((1, 1))), InvalidArgumentError, ["at least 2 domains"]),
    (lambda: ErrorTable.coerce(pd.concat([long_frame(E), long_frame(E).head(1)])), InvalidArgumentError, ["duplicate"]),
    (lambda: ErrorTable.coerce(long_frame(E).iloc[1:]), ShapeError, ["need 6"]),
    (lambda: ErrorTable.coerce(long_frame(E).assign(test=lambda d: d["train"])), InvalidArgumentError, ["among its training"]),
    (lambda: ErrorTable.coerce("errors.csv"), InvalidArgumentError, ["square error matrix"]),
    (lambda: ErrorTable.from_long(long_frame(E), error="err"), Exception, ["'err'", "did you mean 'error'"]),
    (lambda: ErrorTable.from_long(long_frame(E).rename(columns={"train": "src"})), InvalidArgumentError, ["no training-domain"]),
])
def test_bad_tables(make, exc, words):
    with pytest.raises(exc) as info:
        make()
    for w in words:
        assert w in str(info.value), str(info.value)


def test_same_design():
    a = ErrorTable.from_matrix(E)
    a.same_design(ErrorTable.from_matrix(E + 1))
    with pytest.raises(ShapeError, match="other domains"):
        a.same_design(ErrorTable.from_matrix(np.ones((4, 4))))


def test_long_r1_rows_in_any_order_give_the_matrix_table_and_bad_rows_are_named():
    """The r = 1 long frame is placed by (test, train) slot without a sort: any row order gives the
    matrix's table; a repeated pair or a row tested on its training domain is still an error."""
    rng = np.random.default_rng(0)
    m = rng.random((7, 7))
    ref = ErrorTable.from_matrix(m)
    long = ref.tidy().sample(frac=1.0, random_state=3).reset_index(drop=True)
    t = ErrorTable.from_long(long)
    assert np.array_equal(t.values, ref.values) and np.array_equal(t.test, ref.test)
    assert np.array_equal(t.train, ref.train)
    dup = long.copy()
    dup.loc[0, ["train", "test"]] = dup.loc[1, ["train", "test"]].to_numpy()
    with pytest.raises(InvalidArgumentError, match="duplicate entry"):
        ErrorTable.from_long(dup)
    clash = long.copy()
    clash.loc[5, "train"] = clash.loc[5, "test"]
    with pytest.raises(InvalidArgumentError, match="among its training domains"):
        ErrorTable.from_long(clash)
