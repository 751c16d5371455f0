"""Forecast and quantile intervals on error tables read in chunks (issue 37, item 2): a ``.npy``
file, a ``numpy.memmap``, a Parquet file and Dask collections. The streamed selection must give the
in-memory interval bit for bit, whatever the chunking and however many refinement passes it takes
(forced here with a small budget), and hold memory that does not grow with the table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from _samples import error_matrices, float_bits

import llmsurrogate.transfer as tr
from llmsurrogate.exceptions import InvalidArgumentError, NonFiniteError, ShapeError
from llmsurrogate.transfer import ErrorTable, _stream

dask_array = pytest.importorskip("dask.array")
dask_dataframe = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")


@pytest.fixture
def small_budget(monkeypatch):
    """Force refinement passes and many chunks at test sizes."""
    monkeypatch.setattr(_stream, "BUDGET", 16)
    monkeypatch.setattr(_stream, "CHUNK", 300)


_bits = float_bits


def _matrices():
    yield from error_matrices()
    yield "all equal", np.full((9, 9), 0.25)         # every refinement to the last bit


def _sources(m, tmp_path):
    np.save(tmp_path / "c.npy", m)
    np.save(tmp_path / "f.npy", np.asfortranarray(m))
    np.save(tmp_path / "f32.npy", m.astype(np.float32))
    long = ErrorTable.from_matrix(m).tidy().sample(frac=1.0, random_state=3)   # rows shuffled
    long.to_parquet(tmp_path / "l.parquet", row_group_size=50)
    yield "npy", str(tmp_path / "c.npy")
    yield "npy (Fortran order)", tmp_path / "f.npy"
    yield "memmap", np.load(tmp_path / "c.npy", mmap_mode="r")
    yield "dask array", dask_array.from_array(m, chunks=(m.shape[0] // 3 + 1, m.shape[0] // 2 + 1))
    yield "parquet", tmp_path / "l.parquet"
    yield "dask dataframe", dask_dataframe.from_pandas(long, npartitions=3)


@pytest.mark.filterwarnings("ignore::llmsurrogate.exceptions.CoverageWarning")
@pytest.mark.parametrize("name,m", list(_matrices()), ids=[name for name, _ in _matrices()])
def test_streamed_intervals_equal_the_in_memory_ones_bit_for_bit(name, m, tmp_path, small_budget):
    for label, src in _sources(m, tmp_path):
        for tau in (0.6, 0.9, 1.0):
            assert _bits(tr.forecast_interval(src, tau=tau)) == _bits(tr.forecast_interval(m, tau=tau)), (label, tau)
        assert _bits(tr.forecast_interval(src, tau=0.9, mode="transferUQ", pooled=True)) == \
            _bits(tr.forecast_interval(m, tau=0.9, mode="transferUQ", pooled=True)), label   # (R's reading)
        interval = tr.forecast_interval(src, 0.8)
        assert interval.guaranteed == tr.forecast_interval(m, 0.8).guaranteed   # n and r read from the source
        got, want = tr.qte_interval(src, 0.9), tr.qte_interval(m, 0.9)
        assert _bits(got["lb"]) == _bits(want["lb"]) and _bits(got["ub"]) == _bits(want["ub"]), label
    f32 = tr.forecast_interval(tmp_path / "f32.npy", tau=0.9)
    assert _bits(f32) == _bits(tr.forecast_interval(m.astype(np.float32).astype(np.float64), tau=0.9))


def test_an_r2_parquet_table(tmp_path, small_budget):
    n = 8
    rows = [(a, b, d) for d in range(n) for a in range(n) for b in range(a + 1, n) if d not in (a, b)]
    frame = pd.DataFrame(rows, columns=["train_1", "train_2", "test"])
    frame["error"] = np.random.default_rng(2).gamma(2.0, size=len(frame))
    frame.to_parquet(tmp_path / "r2.parquet", row_group_size=37)
    got, want = tr.qte_interval(tmp_path / "r2.parquet", 0.9), tr.qte_interval(frame, 0.9)
    assert _bits(got["lb"]) == _bits(want["lb"]) and _bits(got["ub"]) == _bits(want["ub"])
    assert _bits(tr.forecast_interval(tmp_path / "r2.parquet", tau=0.9)) == _bits(tr.forecast_interval(frame, tau=0.9))


def test_bad_streamed_tables_get_clear_errors(tmp_path):
    m = np.random.default_rng(1).random((6, 6))
    m[2, 4] = np.nan
    np.save(tmp_path / "m.npy", m)
    with pytest.raises(NonFiniteError, match=r"train=2, test=4 is missing"):
        tr.forecast_interval(tmp_path / "m.npy", tau=0.9)
    m[2, 4] = np.inf
    with pytest.raises(NonFiniteError, match=r"train=4, test=2 is not finite"):
        tr.forecast_interval(dask_array.from_array(m.T, chunks=(4, 4)), tau=0.9)
    long = ErrorTable.from_matrix(np.ones((5, 5))).tidy()
    long.iloc[:-1].to_parquet(tmp_path / "short.parquet")
    with pytest.raises(ShapeError, match="19 errors, but 5 domains with r = 1 need 20"):
        tr.forecast_interval(tmp_path / "short.parquet", tau=0.9)
    long.assign(train=long["train"].where(long.index != 3, long["test"])).to_parquet(tmp_path / "self.parquet")
    with pytest.raises(InvalidArgumentError, match="row 4 has its test domain among its training domains"):
        tr.qte_interval(tmp_path / "self.parquet", 0.9)
    np.save(tmp_path / "rect.npy", np.ones((3, 4)))
    with pytest.raises(ShapeError, match="square"):
        tr.forecast_interval(tmp_path / "rect.npy", tau=0.9)
    np.save(tmp_path / "i8.npy", np.ones((3, 3), dtype=np.int64))
    with pytest.raises(InvalidArgumentError, match="float64 holds exactly"):
        tr.forecast_interval(tmp_path / "i8.npy", tau=0.9)
    with pytest.raises(InvalidArgumentError, match="no file"):
        tr.forecast_interval(tmp_path / "missing.npy", tau=0.9)
    with pytest.raises(InvalidArgumentError, match="read in chunks by forecast_interval and qte_interval only"):
        tr.weighted_forecast_interval(tmp_path / "rect.npy", [1.0, 1.0, 1.0], tau=0.9)


_PEAK = textwrap.dedent("""
    import gc, json, sys
    import numpy as np
    import llmsurrogate.transfer as tr
    from llmsurrogate.transfer import _stream

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

    _stream.CHUNK = 1 << 16
    path, warm, load = sys.argv[1], sys.argv[2], sys.argv[3] == "load"
    read = np.load if load else (lambda p: p)
    tr.forecast_interval(read(warm), tau=0.9)   # imports and one-off setup, on a small table
    tr.qte_interval(read(warm), 0.9)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    tr.forecast_interval(read(path), tau=0.9)
    tr.qte_interval(read(path), 0.9)
    print(json.dumps({"peak": status("VmHWM") - base}))
""")


def _peak(tmp_path, D, load=False):  # noqa: N803
    if not (tmp_path / f"{D}.npy").exists():
        np.save(tmp_path / f"{D}.npy", np.random.default_rng(D).gamma(2.0, 1.0, size=(D, D)))
    np.save(tmp_path / "warm.npy", np.random.default_rng(0).gamma(2.0, 1.0, size=(60, 60)))
    run = subprocess.run([sys.executable, "-c", _PEAK, str(tmp_path / f"{D}.npy"), str(tmp_path / "warm.npy"),
                          "load" if load else "stream"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])["peak"] / (D * (D - 1))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak resident size from /proc")
def test_memory_does_not_grow_with_the_streamed_table(tmp_path):
    """Peak resident memory of forecast_interval + qte_interval on .npy files of 1200^2 and 2400^2
    errors, each in a fresh process: its growth between the two sizes, per error, is under 1 byte
    (chunks and histograms of fixed size); loading the file first (the table in memory) grows by
    more than 8 bytes an error."""
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("cannot reset the peak resident size (/proc/self/clear_refs)")
    step = 2400 * 2399 - 1200 * 1199

    def growth(load):
        return (_peak(tmp_path, 2400, load) * 2400 * 2399 - _peak(tmp_path, 1200, load) * 1200 * 1199) / step

    streamed, loaded = growth(False), growth(True)
    assert streamed < 1.0 and loaded > 8.0, (streamed, loaded)
