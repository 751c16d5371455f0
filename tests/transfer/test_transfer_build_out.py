"""``error_table(..., out=path)``: the table written to Parquet/CSV as the fits finish (issue 37, item 3).

The rows go to the file in the fits' order (training set by training set, the test domains outside
each in ascending order), whatever order the fits finish in (cache hits first, workers); the file
holds the in-memory table bit for bit, for every metric and normalisation and both designs; a
failure leaves no file; and the memory held does not grow with the table.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import datasets
from llmsurrogate import transfer as tr
from llmsurrogate._atomic import write_frame
from llmsurrogate.exceptions import ComputationError, InvalidArgumentError
from llmsurrogate.transfer import ErrorTable, _build, _write


@pytest.fixture(scope="module")
def ce():
    """Five small subject pools of the bundled data; labels: ``domain_id`` (integers), ``name`` (text)."""
    frame = datasets.load_certainty_equivalents(domains=[3, 7, 8, 9, 10])
    return frame.assign(name=frame["domain"].astype(str).str.slice(0, 12) + frame["domain_id"].astype(str))


def _fit_ordered(table: ErrorTable) -> pd.DataFrame:
    """The in-memory table's long frame in the fits' order (training set, then test domain, by
    position among the table's domains)."""
    keys = [table.test] + [table.train[:, k] for k in reversed(range(table.r))]
    return table.tidy().iloc[np.lexsort(keys)].reset_index(drop=True)


def _same_file_as(path, frame: pd.DataFrame, tmp_path) -> bool:
    """``path`` holds the bytes ``write_frame`` writes for ``frame`` (attrs aside)."""
    frame = frame.copy()
    frame.attrs = {}
    ref = tmp_path / f"ref{path.suffix}"
    write_frame(ref, frame)
    return path.read_bytes() == ref.read_bytes()


# ---- the file holds the table -------------------------------------------------------------------
@pytest.mark.parametrize("r", [1, 2])
@pytest.mark.parametrize("normalize", [None, "deterioration", "shortfall"])
@pytest.mark.parametrize("metric", ["mse", "rmse"])
@pytest.mark.parametrize("subsets", ["all", 4])
def test_file_is_the_in_memory_table(ce, tmp_path, r, normalize, metric, subsets):
    kw = {"r": r, "metric": metric, "normalize": normalize, "subsets": subsets, "domain": "domain_id", "n_jobs": 1,
          "progress": False}
    if normalize == "shortfall":  # another model, and another model's in-sample errors given
        given = tr.in_sample_errors(ce, tr.CPT("ab"), metric=metric, domain="domain_id", n_jobs=1).to_numpy()
        kw["shortfall_models"] = [tr.EU(), given * 0.5]
    ref = tr.error_table(ce, tr.CPT("g"), **kw)
    written = tr.error_table(ce, tr.CPT("g"), out=tmp_path / "t.parquet", **kw)
    long = pd.read_parquet(written.path)
    assert written.path == tmp_path / "t.parquet" and written.r == r and written.domains == [3, 7, 8, 9, 10]
    if subsets == "all":
        got = ErrorTable.from_long(long)
        assert got.domains == ref.domains and got.values.tobytes() == ref.values.tobytes()
        assert (written.rows, written.training_sets, written.complete) == (ref.N, math.comb(5, r), True)
        assert written.metric == ref.metric and written.name == ref.name == "CPT"
        assert _same_file_as(written.path, _fit_ordered(ref), tmp_path)  # fits' order, write_frame's bytes
    else:  # a sample: its long frame (already in the fits' order), byte for byte
        assert (written.rows, written.training_sets, written.complete) == (len(ref), 4, False)
        assert written.metric == ref.attrs["metric"]
        assert long["error"].to_numpy().tobytes() == ref["error"].to_numpy().tobytes()
        assert _same_file_as(written.path, ref, tmp_path)
    train = [c for c in long.columns if c.startswith("train")]
    assert long.columns.tolist() == [*train, "test", "error"] and len(train) == r
    fits = long[train].drop_duplicates().to_numpy().tolist()
    assert fits == sorted(fits)  # training set by training set, in combinations order
    for _, rows in long.groupby(train, sort=False):
        assert rows["test"].is_monotonic_increasing


@pytest.mark.parametrize("labels", ["name", "domain", "domain_id"])
def test_shuffled_rows_and_labels_of_each_kind(ce, tmp_path, labels):
    """Rows in any order (the index a permutation), text, categorical or integer labels: the
    file is the in-memory table of the same frame (a categorical's domains come back sorted)."""
    frame = ce.sample(frac=1.0, random_state=3)
    assert not frame.index.is_monotonic_increasing
    for r in (1, 2):
        ref = tr.error_table(frame, tr.CPT("g"), r=r, domain=labels, n_jobs=1, progress=False)
        written = tr.error_table(frame, tr.CPT("g"), r=r, domain=labels, n_jobs=1, progress=False,
                                 out=tmp_path / f"{labels}{r}.parquet")
        got = ErrorTable.from_long(pd.read_parquet(written.path))
        if labels == "domain":  # the table's domains in category order: compare by label
            ref = ErrorTable.from_long(ref.tidy().astype({c: str for c in ref.tidy().columns[:-1]}))
        assert got.domains == ref.domains and got.values.tobytes() == ref.values.tobytes()


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip"])
def test_csv_plain_and_compressed_in_blocks(ce, tmp_path, monkeypatch, suffix):
    """CSV in blocks of lines (here 7), compressed as it goes: the text of the table's long frame in
    the fits' order (one header); read back it is the table."""
    monkeypatch.setattr(_write, "_OUT_ROWS", 7)
    ref = tr.error_table(ce, tr.CPT("g"), r=2, metric="rmse", domain="name", n_jobs=1, progress=False)
    written = tr.error_table(ce, tr.CPT("g"), r=2, metric="rmse", domain="name", n_jobs=1, progress=False,
                             out=tmp_path / f"t{suffix}")
    assert written.rows == ref.N == 30
    long = pd.read_csv(written.path)
    got = ErrorTable.from_long(long)
    assert got.domains == ref.domains and got.values.tobytes() == ref.values.tobytes()
    import bz2
    import gzip
    import lzma
    import zipfile

    if suffix == ".csv.zip":
        archive = zipfile.ZipFile(written.path)
        assert archive.namelist() == ["t.csv"]
        raw = archive.read("t.csv")
    else:
        opener = {".csv": open, ".csv.gz": gzip.open, ".csv.bz2": bz2.open, ".csv.xz": lzma.open}[suffix]
        with opener(written.path, "rb") as fh:
            raw = fh.read()
    assert raw.decode() == _fit_ordered(ref).to_csv(index=False)


def test_parquet_row_groups(ce, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(_write, "_OUT_ROWS", 8)
    written = tr.error_table(ce, tr.CPT("g"), r=2, domain="name", n_jobs=1, progress=False, out=tmp_path / "t.pq")
    meta = pq.ParquetFile(written.path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [8, 8, 8, 6]


class _NoFit:
    def get_params(self, deep=True):
        return {}

    def fit(self, X, y):
        raise AssertionError("fitted before the output was checked")

    def predict(self, X):
        return np.zeros(len(X))


def test_output_checked_before_any_fit(ce, tmp_path):
    (tmp_path / "folder.parquet").mkdir()
    with pytest.raises(InvalidArgumentError, match=r"argument `out` .*folder\.parquet is a folder"):
        tr.error_table(ce, _NoFit(), domain="name", out=tmp_path / "folder.parquet")
    written = tr.error_table(ce, tr.CPT("g"), domain="name", n_jobs=1, progress=False, out=tmp_path / "new" / "t.csv")
    assert written.path.is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["folder.parquet", "new"]


def test_zstandard_csv_needs_zstandard_and_is_checked_before_any_fit(ce, tmp_path):
    try:
        import zstandard  # noqa: F401
    except ImportError:
        with pytest.raises(InvalidArgumentError, match=r"argument `out`: writing t\.csv\.zst .*needs zstandard"):
            tr.error_table(ce, _NoFit(), domain="name", out=tmp_path / "t.csv.zst")
        assert list(tmp_path.iterdir()) == []
        return
    written = tr.error_table(ce, tr.CPT("g"), domain="name", n_jobs=1, progress=False, out=tmp_path / "t.csv.zst")
    ref = tr.error_table(ce, tr.CPT("g"), domain="name", n_jobs=1, progress=False)
    got = ErrorTable.from_long(pd.read_csv(written.path))
    assert got.values.tobytes() == ref.values.tobytes()


def test_mixed_labels_go_to_csv_not_parquet(ce, tmp_path):
    """Labels of both kinds in one column: CSV takes them; Parquet is refused before any fit,
    naming ``out`` (pyarrow failed at the first row group)."""
    frame = ce.assign(mixed=ce["domain_id"].map({3: "a", 7: 7, 8: "c", 9: 9, 10: "e"}).astype(object))
    with pytest.raises(InvalidArgumentError, match=r"argument `out`: .*labels mix number \(7\), text \('a'\)"):
        tr.error_table(frame, tr.CPT("g"), domain="mixed", out=tmp_path / "t.parquet")
    assert list(tmp_path.iterdir()) == []
    ref = tr.error_table(frame, tr.CPT("g"), domain="mixed", n_jobs=1, progress=False)
    written = tr.error_table(frame, tr.CPT("g"), domain="mixed", n_jobs=1, progress=False, out=tmp_path / "t.csv")
    assert written.path.read_text() == _fit_ordered(ref).to_csv(index=False)


# ---- the order: the fits', whatever order they finish in ------------------------------------------
def test_rows_in_the_fits_order_whatever_order_fits_finish(ce, tmp_path):
    """n_jobs=1 and 2 (Rust threads; scikit-learn's LinearRegression) and a warm cache whose
    scattered hits come first: the same bytes."""
    from sklearn.linear_model import LinearRegression

    for model, tag in [(tr.CPT("g"), "cpt"), (LinearRegression(), "lr")]:
        files = []
        for n_jobs in (1, 2):
            files.append(tr.error_table(ce, model, r=2, domain="name", n_jobs=n_jobs, progress=False,
                                        out=tmp_path / f"{tag}{n_jobs}.parquet").path)
        cache = tmp_path / f"cache-{tag}"
        tr.error_table(ce, model, r=2, subsets=4, seed=5, domain="name", n_jobs=1, progress=False, cache=cache)
        with _build.collect_cache_stats() as stats:
            files.append(tr.error_table(ce, model, r=2, domain="name", n_jobs=1, progress=False, cache=cache,
                                        out=tmp_path / f"{tag}-cached.parquet").path)
        assert (stats.hits, stats.computed) == (4, 6)
        assert files[0].read_bytes() == files[1].read_bytes() == files[2].read_bytes()


def test_sink_writes_batches_in_any_order_as_the_fits_order(tmp_path):
    """Batches of any positions in any order (as cache hits and workers give them): the file is
    the one of the batches in order, and only the batches before a missing fit are held."""
    n, r = 7, 2
    combos = np.array(list(itertools.combinations(range(n), r)), dtype=np.int64)
    rng = np.random.default_rng(0)
    mse = rng.random((len(combos), n)) + 0.1
    labels = [f"d{i}" for i in range(n)]

    def write(batches, name, divisor=None):
        with _write._TidyFile(tmp_path / name, labels, r, rows=5) as out:
            sink = _write._FitOrderSink(out, combos, n, metric="rmse", divisor=divisor,
                                        non_finite=lambda *a: AssertionError(a))
            held = []
            for idx in batches:
                sink(idx, mse[idx])
                held.append(len(sink.pending))
            assert sink.finish() == len(combos) * (n - r)
        return (tmp_path / name).read_bytes(), held

    by = rng.random(n) + 0.5
    ref, held = write([np.arange(len(combos))], "ref.parquet", by)
    assert held == [0]
    order = rng.permutation(len(combos))
    got, held = write(np.array_split(order, 6), "any.parquet", by)
    assert got == ref and held[-1] == 0
    # the fits in reverse, one at a time: every one held until the first comes
    got, held = write([np.array([i]) for i in reversed(range(len(combos)))], "reversed.parquet", by)
    assert got == ref and held == list(range(1, len(combos))) + [0]
    long = pd.read_parquet(tmp_path / "ref.parquet")
    expect = [(labels[a], labels[b], labels[d]) for a, b in combos for d in range(n) if d not in (a, b)]
    assert list(long[["train_1", "train_2", "test"]].itertuples(index=False, name=None)) == expect
    i, d = 3, 5  # fit (0, 4), test d5
    assert long["error"].iloc[i * (n - r) + 3] == np.sqrt(mse[i, d]) / by[d]


# ---- failures -------------------------------------------------------------------------------------
class _Overflows:
    """Least squares on z1, except that its predictions overflow on domain 5 after a fit on
    domains 3 and 4, and on domain 0 after a fit on 4 and 5 (``z2`` holds the domain's number)."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        self.coef_ = np.linalg.lstsq(np.column_stack([X[:, 0], np.ones(len(X))]), y, rcond=None)[0]
        self.seen_ = set(np.unique(X[:, 1]).tolist())
        return self

    def predict(self, X):
        pred = np.column_stack([X[:, 0], np.ones(len(X))]) @ self.coef_
        bad = ((X[:, 1] == 5) & ({3, 4} <= self.seen_)) | ((X[:, 1] == 0) & ({4, 5} <= self.seen_))
        return np.where(bad, np.inf, pred)


def _marked(n=6, m=12):
    rng = np.random.default_rng(2)
    return pd.DataFrame({"domain": np.repeat([f"D{d}" for d in range(n)], m), "z1": rng.normal(size=n * m),
                         "z2": np.repeat(np.arange(n, dtype=float), m), "p1": 0.5, "ce": rng.normal(size=n * m)})


@pytest.fixture()
def opened(monkeypatch):
    """The paths whose temporary file the writer opened."""
    paths = []
    real = _write.atomic_target

    def spy(path, **kw):
        paths.append(path)
        return real(path, **kw)

    monkeypatch.setattr(_write, "atomic_target", spy)
    return paths


@pytest.mark.parametrize("metric", ["mse", "rmse"])
def test_non_finite_error_is_named_as_in_memory_and_leaves_no_file(tmp_path, monkeypatch, opened, metric):
    """The first non-finite error in the fits' order (train (D3, D4), test D5, the 13th fit; the
    table's order would name train (D4, D5), test D0) raises the in-memory build's error, fitted
    or from the cache; the blocks written before it (cache hits one at a time, blocks of 2 rows)
    are removed with the temporary file."""
    data, cache = _marked(), tmp_path / "cache"
    with pytest.raises(ComputationError) as in_memory:
        tr.error_table(data, _Overflows(), r=2, metric=metric, n_jobs=1, progress=False, cache=cache)
    assert "(inf) for train=['D3', 'D4'], test='D5'" in str(in_memory.value)
    monkeypatch.setattr(_write, "_OUT_ROWS", 2)
    monkeypatch.setattr(_build, "_HIT_BATCH", 1)
    out = tmp_path / "out"
    out.mkdir()
    for name, cached in [("t.parquet", None), ("t.parquet", cache), ("t.csv", cache)]:
        with pytest.raises(ComputationError) as streamed:
            tr.error_table(data, _Overflows(), r=2, metric=metric, n_jobs=1, progress=False, cache=cached,
                           out=out / name)
        assert str(streamed.value) == str(in_memory.value)
        assert list(out.iterdir()) == []
    assert opened[-2:] == [out / "t.parquet", out / "t.csv"]  # written to before the error (the cached runs)


def test_an_interruption_leaves_no_file(ce, tmp_path, monkeypatch, opened):
    """Interrupted (Ctrl-C) after blocks were written: no file, no temporary file."""
    cache = tmp_path / "cache"
    tr.error_table(ce, tr.CPT("g"), r=2, domain="name", n_jobs=1, progress=False, cache=cache)
    monkeypatch.setattr(_write, "_OUT_ROWS", 3)
    monkeypatch.setattr(_build, "_HIT_BATCH", 1)
    real, calls = _build._Cache.get, []

    def get(self, subset, n):
        calls.append(subset)
        if len(calls) == 8:
            raise KeyboardInterrupt
        return real(self, subset, n)

    monkeypatch.setattr(_build._Cache, "get", get)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(KeyboardInterrupt):
        tr.error_table(ce, tr.CPT("g"), r=2, domain="name", n_jobs=1, progress=False, cache=cache,
                       out=out / "t.parquet")
    assert opened == [out / "t.parquet"] and list(out.iterdir()) == []


# ---- memory -------------------------------------------------------------------------------------
_PEAK = textwrap.dedent("""
    import gc, json, sys
    import numpy as np, pandas as pd
    import llmsurrogate.transfer as tr
    from llmsurrogate.transfer import _write

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

    n, out, stream = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "stream"
    sys.path.insert(0, sys.argv[4])
    from _samples import lotteries
    _write._OUT_ROWS = 1 << 14
    data = lotteries(n)
    small = lotteries(8)
    if stream:   # imports and one-off setup, on a small table
        tr.error_table(small, tr.EU(), r=2, progress=False, out=out)
    else:
        tr.error_table(small, tr.EU(), r=2, progress=False).values.copy()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    if stream:
        rows = tr.error_table(data, tr.EU(), r=2, progress=False, out=out).rows
    else:
        rows = tr.error_table(data, tr.EU(), r=2, progress=False).N
    print(json.dumps({"peak": status("VmHWM") - base, "rows": rows}))
""")


def _peak(tmp_path, n, stream):
    run = subprocess.run([sys.executable, "-c", _PEAK, str(n), str(tmp_path / f"{n}.parquet"),
                          "stream" if stream else "memory", str(Path(__file__).resolve().parents[1])],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    res = json.loads(run.stdout.strip().splitlines()[-1])
    assert res["rows"] == n * math.comb(n - 1, 2)
    return res["peak"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak resident size from /proc")
def test_memory_does_not_grow_with_the_table(tmp_path):
    """EU, r = 2, 80 and 160 domains (246,480 and 2,009,760 errors: 16 MB of errors, 64 MB with the
    table's layout), row groups of 2^14 rows, each build in a fresh process. With ``out`` the peak
    resident memory above the start grows by under 4 bytes per added error (2.2-2.7 measured: the
    list of training sets, the Parquet footer's 4 KB per row group, and buffers of bounded size
    that fill up), half of the 8 bytes of the errors alone; in memory the peak is over 8 bytes an
    error (34 measured)."""
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("cannot reset the peak resident size (/proc/self/clear_refs)")
    small, large = 80 * math.comb(79, 2), 160 * math.comb(159, 2)
    streamed = (_peak(tmp_path, 160, True) - _peak(tmp_path, 80, True)) / (large - small)
    in_memory = _peak(tmp_path, 160, False) / large
    print(f"peak: with out= {streamed:.2f} B per added error; in memory {in_memory:.2f} B per error")
    assert streamed < 4.0 and in_memory > 8.0, (streamed, in_memory)
