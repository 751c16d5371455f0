"""Issue 26: the first call on a new table (R's forecast_interval() on a new long data frame) takes
the short paths, with the same numbers and the same errors as the full ones.

* the order statistics an interval needs are selected (not read from the Rust-side sorted table,
  which is not built for them; issue 37): bit for bit the core table's (signed zeros ordered as
  ``f64::total_cmp`` orders them), from a table or straight from a matrix, and a table whose
  columns the core table rejects gets the core table's error;
* a complete ``r = 1`` table whose rows are already in the table's order skips the placement by
  slot: the same table as rows in any order;
* ``_pooled_codes`` with every error finite skips the NaN bookkeeping: the same errors for bad
  input (infinite error, test domain among the training domains, too few domains) as a pandas long
  frame gives;
* R's long data frames are kept by equality of their bytes (not a hash of them).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import llmsurrogate.transfer as tr
from llmsurrogate import _core, datasets
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning, NonFiniteError
from llmsurrogate.rbridge import transfer as rt
from llmsurrogate.transfer import CodedLong, ErrorTable
from llmsurrogate.transfer._common import SquareMatrix, _core_table, _order_statistics, _ordered
from llmsurrogate.transfer._table import PooledErrors, _pooled


def _bits(a: np.ndarray) -> list[int]:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64).tolist()


def _r_spec(values: np.ndarray, train: np.ndarray, test: np.ndarray, labels: list) -> dict:
    """What R's .coded_long() sends for a long frame whose domains are 1-based numbers (codes =
    number - 1): int32 codes column after column, the errors as doubles."""
    codes = np.concatenate([train, test]).astype("<i4")
    return {"nrow": len(values), "ncol": 2, "codes": codes.tobytes(), "errors": np.asarray(values, "<f8").tobytes(),
            "labels": {"kind": "integer", "values": labels}}


def _square_rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) of every off-diagonal cell, column by column (R's which(row != col))."""
    test, train = np.nonzero(~np.eye(n, dtype=bool).T)
    return train, test


@pytest.fixture(scope="module")
def cpt() -> np.ndarray:
    return datasets.load_transfer_errors("abdg").to_numpy()


def _all_ranks(t) -> np.ndarray:
    """Every order statistic, -inf and +inf included (ranks 0..N+1), by selection."""
    return _order_statistics(t, np.arange(t.N + 2))


def _core_sorted(t) -> list[int]:
    return _bits(np.r_[-np.inf, _core.TransferTable(t.values, t.test, t.n).sorted_values(), np.inf])


def test_selected_order_statistics_are_the_core_tables_bit_for_bit(cpt):
    rng = np.random.default_rng(26)
    # signed zeros (NumPy's SIMD sort may turn -0.0 into 0.0) and ties
    zeros = rng.choice([0.0, -0.0, 1.5, -2.0, 1e-300, -1e-300], size=(9, 9))
    fortran = np.asfortranarray(np.round(rng.normal(size=(6, 6)), 1))
    cases = [cpt, zeros, np.round(rng.normal(size=(12, 12)), 1), rng.random((3, 3)), fortran, cpt[::2, ::2]]
    for m in cases:
        t = ErrorTable.from_matrix(m)
        square = _ordered(m)
        assert isinstance(square, SquareMatrix) and (square.n, square.r, square.N) == (t.n, t.r, t.N)
        assert _bits(_all_ranks(square)) == _core_sorted(t)   # straight from the matrix
        assert _bits(_all_ranks(t)) == _core_sorted(t)        # from the table's columns
        assert "_llms_core" not in t.__dict__  # no core table built (a SquareMatrix has nowhere to keep one)
        # ranks in any order, repeated: each its own value
        ranks = np.array([t.N, 1, t.N + 1, 0, 2, 2, t.N // 2])
        assert _bits(_order_statistics(square, ranks)) == [_core_sorted(t)[i] for i in ranks]
    # r = 2 and a balanced pooled table (ordered pairs) too
    n = 7
    rows = [(a, b, d) for d in range(n) for a in range(n) for b in range(n) if len({a, b, d}) == 3]
    frame = pd.DataFrame(rows, columns=["t1", "t2", "test"]).assign(val=np.round(rng.normal(size=len(rows)), 1))
    unordered = frame[frame.t1 < frame.t2].rename(columns={"t1": "train_1", "t2": "train_2", "val": "error"})
    for t in (_pooled(frame, arg="err"), ErrorTable.from_long(unordered)):
        assert _bits(_all_ranks(t)) == _core_sorted(t)
    # a matrix that is not plain float64 is read as a table (the same values)
    for other in (cpt.astype(np.float32), cpt.astype(object), pd.DataFrame(cpt)):
        assert not isinstance(_ordered(other), SquareMatrix)
    assert not isinstance(_ordered(cpt, pooled=True), SquareMatrix)


@pytest.mark.parametrize("values,test,n", [
    (np.array([1.0, np.inf, 2.0, 3.0]), np.array([0, 0, 1, 1]), 2),     # not finite
    (np.array([1.0, np.nan, 2.0, 3.0]), np.array([0, 0, 1, 1]), 2),     # missing
    (np.array([1.0, 2.0, 3.0]), np.array([0, 1, 1]), 2),                # unbalanced
    (np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 1, 2, 2]), 2),        # a test domain outside 0..n-1
    (np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, -1, 1, 1]), 2),       # negative
    (np.array([1.0, 2.0]), np.array([0, 0]), 1),                        # one domain
])
def test_a_table_the_core_table_rejects_gets_its_error(values, test, n):
    t = ErrorTable(values=values, test=test, train=np.zeros((len(values), 1), dtype=np.int64),
                   domains=list(range(n)))
    with pytest.raises(Exception) as want:
        _core.TransferTable(values, test, n)
    with pytest.raises(type(want.value), match=f"^{want.value}$".replace("(", r"\(").replace(")", r"\)")):
        _order_statistics(t, [1])
    with pytest.raises(type(want.value), match=f"^{want.value}$".replace("(", r"\(").replace(")", r"\)")):
        tr.forecast_interval(t, tau=0.9)


def test_a_matrix_with_a_missing_cell_gets_the_tables_error(cpt):
    m = cpt.copy()
    m[3, 7] = np.nan
    with pytest.raises(NonFiniteError) as want:
        ErrorTable.from_matrix(m)
    for call in (lambda: tr.forecast_interval(m, tau=0.9), lambda: tr.qte_interval(m, 0.9)):
        with pytest.raises(NonFiniteError, match=f"^{want.value}$".replace("(", r"\(").replace(")", r"\)")):
            call()
    m[3, 7] = cpt[3, 7]
    m[5, 5] = np.inf  # the diagonal is ignored
    assert tr.forecast_interval(m, tau=0.9) == tr.forecast_interval(ErrorTable.from_matrix(cpt), tau=0.9)


def test_rows_in_table_order_and_shuffled_give_the_same_table(cpt):
    n = cpt.shape[0]
    train, test = _square_rows(n)
    values = cpt[train, test]
    in_order = _pooled(CodedLong(values, test, train[:, None], list(range(n))), arg="err")
    perm = np.random.default_rng(1).permutation(values.size)
    shuffled = _pooled(CodedLong(values[perm], test[perm], train[perm, None], list(range(n))), arg="err")
    ref = ErrorTable.from_matrix(cpt)
    for t in (in_order, shuffled):
        assert type(t) is ErrorTable
        assert _bits(t.values) == _bits(ref.values)
        assert t.test.tolist() == ref.test.tolist() and t.train.tolist() == ref.train.tolist()


def _frame(values, train, test) -> pd.DataFrame:
    return pd.DataFrame({"a": train + 1, "b": test + 1, "val": values})


def _same_error(frame: pd.DataFrame, coded: CodedLong, **kw) -> None:
    with pytest.raises(Exception) as want:
        _pooled(frame, arg="err", **kw)
    with pytest.raises(type(want.value)) as got:
        _pooled(coded, arg="err", **kw)
    assert str(got.value) == str(want.value)


def test_bad_long_tables_raise_as_a_pandas_frame_does(cpt):
    n = cpt.shape[0]
    train, test = _square_rows(n)
    values = cpt[train, test].copy()
    labels = list(range(1, n + 1))  # as _frame() labels them
    inf = values.copy()
    inf[10] = np.inf
    _same_error(_frame(inf, train, test), CodedLong(inf, test, train[:, None], labels))
    clash = train.copy()
    clash[5] = test[5]
    _same_error(_frame(values, clash, test), CodedLong(values, test, clash[:, None], labels))
    nan = np.full(values.size, np.nan)
    _same_error(_frame(nan, train, test), CodedLong(nan, test, train[:, None], labels))
    with pytest.raises(NonFiniteError, match=r"row 10 \(0-based\) is inf"):
        _pooled(CodedLong(inf, test, train[:, None], labels), arg="err")
    with pytest.raises(InvalidArgumentError, match=r"row 5 \(0-based\) has its test domain"):
        _pooled(CodedLong(values, test, clash[:, None], labels), arg="err")
    # two domains with r = 2 (the two-column form): n <= r
    two = CodedLong(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 1]), np.zeros((3, 0), dtype=np.int64), [1, 2])
    _same_error(pd.DataFrame({"b": [1, 2, 2], "val": [1.0, 2.0, 3.0]}), two, r=2)
    with pytest.raises(InvalidArgumentError, match=r"need more domains than training domains \(n > r\); got n = 2"):
        _pooled(two, arg="err", r=2)


def test_a_duplicated_row_and_a_missing_error_stay_pooled_with_the_warning(cpt):
    n = cpt.shape[0]
    train, test = _square_rows(n)
    values = cpt[train, test].copy()
    dup_train = train.copy()
    dup_train[1] = dup_train[2]  # (train, test) of row 2 twice, that of row 1 never
    t = _pooled(CodedLong(values, test, dup_train[:, None], list(range(n))), arg="err")
    assert type(t) is PooledErrors and t.complete  # as before: pooled, N errors, balanced
    holes = values.copy()
    holes[[3, 70]] = np.nan
    spec = _r_spec(holes, train, test, list(range(1, n + 1)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rt.r_forecast_interval({"__rlong__": spec}, 0.8, mode="transferUQ", pooled=True)
    assert any("2 of its 1892 errors are missing" in str(w.message) for w in caught)
    f = np.sort(holes[~np.isnan(holes)])
    with pytest.warns(LLMSurrogateWarning, match="2 of its 1892 errors are missing"):
        assert got == tr.forecast_interval(_frame(holes, train, test), 0.8, mode="transferUQ", pooled=True)
    assert got[1] == f[int(np.ceil(0.9 * f.size)) - 1]


def test_new_r_frames_give_the_matrix_answers_and_equal_bytes_are_one_table(cpt):
    n = cpt.shape[0]
    train, test = _square_rows(n)
    rt._LONG_CACHE.clear()
    for k in range(10):  # more frames than are kept: every call a new frame
        m = cpt * (1 + k / 100)
        spec = _r_spec(m[train, test], train, test, list(range(1, n + 1)))
        for c in (0.8, 0.9, 0.95):
            for side, ours in (("two", "two"), ("left", "lower"), ("right", "upper")):
                got = rt.r_forecast_interval({"__rlong__": spec}, c, side=side, mode="transferUQ", pooled=True)
                assert got == tr.forecast_interval(m, c, side=ours, mode="transferUQ")
    spec = _r_spec(cpt[train, test], train, test, list(range(1, n + 1)))
    again = {**spec, "codes": bytearray(spec["codes"]), "errors": bytearray(spec["errors"])}  # new objects
    assert rt._r_long(spec) is rt._r_long(again)
    other = cpt[train, test].copy()
    other[-1] += 1e-9
    assert rt._r_long(_r_spec(other, train, test, list(range(1, n + 1)))) is not rt._r_long(spec)
    assert len(rt._LONG_CACHE) == rt._LONG_CACHE_SIZE


@pytest.mark.parametrize("numbers", [
    lambda rng: rng.permutation(np.repeat(np.arange(1, 9), 7)),             # 1..n, each present
    lambda rng: rng.choice([2, 3, 5, 11], size=56),                        # gaps
    lambda rng: rng.choice([-4, 0, 6, 2], size=56),                        # zero and negative
    lambda rng: rng.choice([1, 2_000_000_000, 70_000], size=56),           # beyond the counted range
])
def test_integer_domains_sent_as_numbers_read_as_the_coded_form(numbers):
    """R sends integer domain columns as the numbers (``numbers``, one raw vector per column); the
    table is the one the coded form (``codes`` into ``labels``, as R's .coded_long() codes other
    columns) gives."""
    rng = np.random.default_rng(7)
    v = np.asarray(numbers(rng), dtype="<i4")
    errors = rng.random(v.size // 2)
    labels = list(dict.fromkeys(v.tolist()))
    codes = np.array([labels.index(x) for x in v.tolist()], dtype="<i4")
    coded = {"nrow": errors.size, "ncol": 2, "codes": codes.tobytes(), "errors": errors.tobytes(),
             "labels": {"kind": "integer", "values": labels}}
    half = errors.size
    sent = {"nrow": half, "ncol": 2, "numbers": [bytearray(v[:half].tobytes()), bytearray(v[half:].tobytes())],
            "errors": bytearray(errors.tobytes())}  # as reticulate passes R's list of raw vectors
    a, b = rt._r_long(coded), rt._r_long(sent)
    assert a is not b
    assert a.domains == b.domains == sorted(labels) and all(type(d) is int for d in b.domains)
    assert a.test.tolist() == b.test.tolist() and a.train.tolist() == b.train.tolist()
    assert _bits(a.values) == _bits(b.values)
    assert [b.domains[c] for c in b.test] == v[errors.size:].tolist()  # each row keeps its domain
    with pytest.raises(InvalidArgumentError, match="domain codes"):
        rt._r_long({**sent, "nrow": errors.size + 1})


def test_a_new_frame_of_a_kept_design_reads_as_a_fresh_one(cpt):
    """A new frame with the domain columns of a kept one (other errors) reuses its domain codes; the
    table is the one read without anything kept, and its answers the matrix's."""
    n = cpt.shape[0]
    train, test = _square_rows(n)
    perm = np.random.default_rng(5).permutation(train.size)  # not the table's order
    for tr_, te_ in ((train, test), (train[perm], test[perm])):
        rt._LONG_CACHE.clear()
        first = rt._r_long(_r_spec(cpt[tr_, te_], tr_, te_, list(range(1, n + 1))))
        m = 2 * cpt
        spec = _r_spec(m[tr_, te_], tr_, te_, list(range(1, n + 1)))
        reused = rt._r_long(spec)
        assert reused is not first and reused.test is first.test and reused.domains == first.domains
        rt._LONG_CACHE.clear()
        fresh = rt._r_long(spec)
        assert fresh.test.tolist() == reused.test.tolist() and fresh.train.tolist() == reused.train.tolist()
        a, b = _pooled(reused, arg="err"), _pooled(fresh, arg="err")
        assert type(a) is type(b) is ErrorTable
        assert _bits(a.values) == _bits(b.values) and a.test.tolist() == b.test.tolist()
        assert rt.r_forecast_interval({"__rlong__": spec}, 0.9, mode="transferUQ", pooled=True) == \
            tr.forecast_interval(m, 0.9, mode="transferUQ")
        if tr_ is train:  # the table's order: its layout arrays are shared and read-only (a write fails
            with pytest.raises(ValueError, match="read-only"):  # rather than change other tables)
                a.test[0] = 1


def test_square_order_is_the_slot_placement():
    """``square_order``: where each row of the table's layout is, for rows that are every
    off-diagonal pair once (any order, domains from 0 or 1); ``None`` for anything else. Checked
    against the placement by pair written out row by row."""
    from llmsurrogate.transfer._table import square_layout, square_order
    rng = np.random.default_rng(26)
    for n in (2, 3, 7, 44):
        train, test = _square_rows(n)
        perm = rng.permutation(train.size)
        for base in (0, 1):
            order = square_order((train[perm] + base).astype("<i4"), (test[perm] + base).astype("<i4"), n, base=base)
            where = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(train[perm], test[perm]))}
            lt, ltr = square_layout(n)
            assert order.tolist() == [where[(int(a), int(b))] for a, b in zip(ltr[:, 0], lt)]
        bad = [train[perm].copy(), test[perm].copy()]
        bad[0][0] = bad[1][0]  # a row with its test domain as training domain
        assert square_order(bad[0], bad[1], n) is None
        for corner in (0, n - 1):  # the first and last slots (test = train = the smallest, largest domain)
            bad = [train[perm] + 1, test[perm] + 1]
            bad[0][0] = bad[1][0] = corner + 1
            assert square_order(bad[0], bad[1], n, base=1) is None
        twice = [train[perm].copy(), test[perm].copy()]
        twice[0][-1], twice[1][-1] = twice[0][0], twice[1][0]  # a pair twice (so one missing)
        assert square_order(twice[0], twice[1], n) is None
        assert square_order(train[:-1], test[:-1], n) is None  # a row short


def _numbers_spec(values, train, test) -> dict:
    """What R's .coded_long() sends for integer domain columns: the numbers, column after column, in
    one raw vector (reticulate passes it as a bytearray), and the errors."""
    numbers = np.concatenate([train, test]).astype("<i4")
    return {"nrow": len(values), "ncol": 2, "numbers": bytearray(numbers.tobytes()),
            "errors": bytearray(np.asarray(values, "<f8").tobytes())}


def test_a_new_design_in_any_order_is_placed_as_the_full_path_places_it(cpt):
    """An r = 1 frame of domains 1..n with every pair once in another order and other labels (R's
    relabelled, shuffled frames) is put in the table's order when read: the table, the sorted errors
    and the intervals are the pandas long frame's, bit for bit; a frame of the same design with a
    missing error, a pair twice or an infinite error reads (and fails) as the pandas frame does."""
    n = cpt.shape[0]
    train, test = _square_rows(n)
    rng = np.random.default_rng(11)
    relabel = rng.permutation(n) + 1
    perm = rng.permutation(train.size)
    a, b = relabel[train[perm]], relabel[test[perm]]
    values = cpt[train, test][perm]
    values[:3] = [0.0, -0.0, -0.0]  # signed zeros keep their order
    frame = pd.DataFrame({"train": a, "test": b, "error": values})
    rt._LONG_CACHE.clear()
    spec = _numbers_spec(values, a, b)
    coded = rt._r_long(spec)
    assert coded.__dict__.get("_r_order") is not None  # placed when read
    want, got = _pooled(frame, arg="err"), _pooled(coded, arg="err")
    assert type(want) is type(got) is ErrorTable
    assert _bits(got.values) == _bits(want.values) and got.domains == want.domains == list(range(1, n + 1))
    assert got.test.tolist() == want.test.tolist() and got.train.tolist() == want.train.tolist()
    assert _bits(_all_ranks(got)) == _core_sorted(want)
    for level, side in ((0.9, "two"), (0.8, "upper"), (0.95, "lower")):
        assert rt.r_forecast_interval({"__rlong__": spec}, level, side=side, mode="transferUQ", pooled=True) == \
            tr.forecast_interval(frame, level, side=side, mode="transferUQ", pooled=True)
    # the same design with other errors: placed as the kept frame's rows were
    again = rt._r_long(_numbers_spec(2 * values, a, b))
    assert again._r_order is coded._r_order and _bits(again.values) == _bits(2 * got.values)
    # a missing error: rows as given (as the pandas frame), not placed
    holed = values.copy()
    holed[5] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        for vals in (holed,):
            p = _pooled(rt._r_long(_numbers_spec(vals, a, b)), arg="err")
            q = _pooled(frame.assign(error=vals), arg="err")
            assert type(p) is type(q) is PooledErrors and p.missing == q.missing == 1
            assert _bits(p.values) == _bits(q.values) and p.test.tolist() == q.test.tolist()
    # an infinite error: the pandas frame's error (its row as given)
    inf = values.copy()
    inf[7] = np.inf
    with pytest.raises(NonFiniteError) as want_err:
        _pooled(frame.assign(error=inf), arg="err")
    with pytest.raises(NonFiniteError) as got_err:
        _pooled(rt._r_long(_numbers_spec(inf, a, b)), arg="err")
    assert str(got_err.value) == str(want_err.value) and "row 7" in str(got_err.value)
    # a pair twice (a clash-free frame that is not every pair once): pooled as the pandas frame pools it
    a2 = a.copy()
    b2 = b.copy()
    a2[0], b2[0] = a[1], b[1]
    p = _pooled(rt._r_long(_numbers_spec(values, a2, b2)), arg="err")
    q = _pooled(pd.DataFrame({"train": a2, "test": b2, "error": values}), arg="err")
    assert type(p) is type(q) and _bits(p.values) == _bits(q.values) and p.test.tolist() == q.test.tolist()
    # a clash: the pandas frame's error
    a3, b3 = a.copy(), b.copy()
    a3[4] = b3[4] = n  # (n, n): the last slot
    with pytest.raises(InvalidArgumentError) as want_err:
        _pooled(pd.DataFrame({"train": a3, "test": b3, "error": values}), arg="err")
    with pytest.raises(InvalidArgumentError) as got_err:
        _pooled(rt._r_long(_numbers_spec(values, a3, b3)), arg="err")
    assert str(got_err.value) == str(want_err.value)
