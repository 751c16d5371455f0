"""Caches that cannot lie (issue 11, defect 3): every cache kind -- the LLM outputs (SQLite), the
transfer-table fits and the ESS command line's grid points (``.entry`` files), all in the one entry
format of ``llmsurrogate._store`` (issue 20) -- rejects an entry with flipped bytes, a truncated or
empty value, a NaN, one written by another version, or one in an older release's format, as a
counted miss; the result equals a clean run's, and the damaged entry is repaired.
A damaged SQLite file is a clear error naming the file; a full disk says so."""

from __future__ import annotations

import json
import sqlite3
import struct
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from llmsurrogate.exceptions import ComputationError, LLMSurrogateError, LLMSurrogateWarning
from llmsurrogate.llm.cache import Cache, CacheCorruptError, cached_batches

# ------------------------------------------------------------------------------------------------
# LLM cache
# ------------------------------------------------------------------------------------------------
N_PROMPTS = 30


def _value(i: int) -> np.ndarray:
    return np.array([np.log((i % 7 + 1) / 9), np.log(1 - (i % 7 + 1) / 9), -np.inf], dtype=np.float32)


def _score(cache, n=N_PROMPTS):
    """cached_batches over n prompts; returns (arrays, indices computed)."""
    keys = [Cache.key(backend="oracle", model="m", prompt=f"p{i}", template="t", params={"ids": [1, 2, 3]})
            for i in range(n)]
    computed: list[int] = []

    def compute(idx):
        computed.extend(idx)
        return [_value(i) for i in idx]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = cached_batches(cache, keys, compute, batch_size=8)
    warned = [w for w in caught if issubclass(w.category, LLMSurrogateWarning)]
    return np.stack(rows), sorted(computed), keys, warned


def _sql(cache, query, *args):
    with sqlite3.connect(cache.path) as conn:
        return conn.execute(query, args).fetchall()


def _tamper_llm(cache, key, mode):
    (blob, prod), = _sql(cache, "SELECT value, producer FROM outputs WHERE key = ?", key)
    if mode == "flip":
        b = bytearray(blob)
        b[1] ^= 0x40
        _sql(cache, "UPDATE outputs SET value = ? WHERE key = ?", bytes(b), key)
    elif mode == "truncate":
        _sql(cache, "UPDATE outputs SET value = ? WHERE key = ?", blob[:-3], key)
    elif mode == "empty":
        _sql(cache, "UPDATE outputs SET value = ? WHERE key = ?", b"", key)
    elif mode == "nan":
        _sql(cache, "UPDATE outputs SET value = ? WHERE key = ?", np.full(3, np.nan, np.float32).tobytes(), key)
    elif mode == "nan_forged":  # a NaN with a valid checksum: rejected for the NaN alone
        from llmsurrogate.llm.cache import _entry_checksum

        nan = np.full(3, np.nan, np.float32).tobytes()
        _sql(cache, "UPDATE outputs SET value = ?, checksum = ? WHERE key = ?", nan,
             _entry_checksum(key, prod, "<f4", nan), key)
    elif mode == "other_version":
        p = json.loads(prod)
        p["llmsurrogate"] = "0.0.1"
        _sql(cache, "UPDATE outputs SET producer = ? WHERE key = ?", json.dumps(p), key)
    elif mode == "no_checksum":  # an entry of a release before checksums
        _sql(cache, "UPDATE outputs SET checksum = '', producer = '' WHERE key = ?", key)
    else:  # pragma: no cover
        raise AssertionError(mode)


@pytest.mark.parametrize("mode", ["flip", "truncate", "empty", "nan", "nan_forged", "other_version", "no_checksum"])
def test_llm_cache_tampered_entry_is_a_counted_miss(tmp_path, mode):
    clean, computed, keys, warned = _score(Cache(tmp_path / "clean"))
    assert computed == list(range(N_PROMPTS)) and not warned
    cache = Cache(tmp_path / "c")
    _score(cache)
    bad = [3, 17]
    for i in bad:
        _tamper_llm(cache, keys[i], mode)
    again = Cache(tmp_path / "c")
    rows, computed, _, warned = _score(again)
    assert computed == bad  # only the tampered prompts are recomputed
    assert again.rejected == 2 and again.misses == 2 and again.hits == N_PROMPTS - 2
    assert len(warned) == 1 and "2 stored output(s)" in str(warned[0].message)
    np.testing.assert_array_equal(rows, clean)
    # the entries are repaired: a third run computes nothing and rejects nothing
    third = Cache(tmp_path / "c")
    rows, computed, _, warned = _score(third)
    assert computed == [] and third.rejected == 0 and not warned
    np.testing.assert_array_equal(rows, clean)


def test_llm_cache_of_an_older_schema_is_migrated_and_its_entries_recomputed(tmp_path):
    (tmp_path / "old").mkdir()
    with sqlite3.connect(tmp_path / "old" / Cache.FILENAME) as conn:
        conn.execute("CREATE TABLE outputs (key TEXT PRIMARY KEY, kind TEXT NOT NULL, dtype TEXT NOT NULL, "
                     "value BLOB NOT NULL, created REAL NOT NULL) WITHOUT ROWID")
        keys = _score(None)[2]
        # an older release's values, wrong on purpose: they must not be used
        conn.executemany("INSERT INTO outputs VALUES (?, '', '<f4', ?, 0)",
                         [(k, np.zeros(3, np.float32).tobytes()) for k in keys])
    clean = _score(Cache(tmp_path / "clean"))[0]
    cache = Cache(tmp_path / "old")
    rows, computed, _, warned = _score(cache)
    assert computed == list(range(N_PROMPTS)) and cache.rejected == N_PROMPTS and warned
    np.testing.assert_array_equal(rows, clean)


def test_llm_cache_rows_of_the_release_before_the_shared_entry_format_are_still_hits(tmp_path):
    """The shared entry format kept the LLM rows as they were (producer text + BLAKE2b over key,
    producer, dtype and bytes): a row written by hand that way is used, not recomputed."""
    from llmsurrogate import __version__
    from llmsurrogate._atomic import checksum

    keys = _score(None)[2]
    cache = Cache(tmp_path / "c")
    prod = json.dumps({"llmsurrogate": __version__, **{d: _dist_version(d) for d in ("torch", "transformers", "vllm")}},
                      sort_keys=True, separators=(",", ":"))
    rows = []
    for i, k in enumerate(keys):
        blob = _value(i).tobytes()
        rows.append((k, "", "<f4", blob, 0.0, prod, checksum(k, prod, "<f4", blob)))
    with sqlite3.connect(cache.path) as conn:
        conn.executemany("INSERT INTO outputs (key, kind, dtype, value, created, producer, checksum) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    again = Cache(tmp_path / "c")
    got, computed, _, warned = _score(again)
    assert computed == [] and again.hits == N_PROMPTS and again.rejected == 0 and not warned
    np.testing.assert_array_equal(got, _score(None)[0])


def _dist_version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize("damage", ["garbage", "truncated_header", "truncated_pages"])
def test_damaged_sqlite_file_is_a_clear_error_naming_it(tmp_path, damage):
    cache = Cache(tmp_path)
    keys = [Cache.key(backend="b", model="m", prompt=f"p{i}", template="t", params=None) for i in range(3000)]
    cache.put_many([(k, np.full(16, i, np.float32)) for i, k in enumerate(keys)])
    cache.close()
    with sqlite3.connect(cache.path) as conn:  # fold the WAL into the main file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = cache.path.read_bytes()
    for side in ("-wal", "-shm"):
        (tmp_path / (Cache.FILENAME + side)).unlink(missing_ok=True)
    if damage == "garbage":
        cache.path.write_bytes(b"this is not a database at all " * 200)
    elif damage == "truncated_header":
        cache.path.write_bytes(raw[:50])
    else:
        cache.path.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(CacheCorruptError) as err:
        c = Cache(tmp_path)
        c.get_many(keys)
        c.put_many([(keys[0], np.zeros(16, np.float32))])
    msg = str(err.value)
    assert str(cache.path) in msg and "move it aside" in msg and "\n" not in msg
    assert isinstance(err.value, LLMSurrogateError)


def test_full_disk_is_reported_as_such(tmp_path):
    cache = Cache(tmp_path)
    conn = cache._conn()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLite answers SQLITE_FULL beyond this
    keys = [Cache.key(backend="b", model="m", prompt=f"p{i}", template="t", params=None) for i in range(500)]
    with pytest.raises(ComputationError) as err:
        cache.put_many([(k, np.zeros(512, np.float32)) for k in keys])
    assert "full" in str(err.value) and "cannot rollback" not in str(err.value)
    assert str(cache.path) in str(err.value)
    assert not conn.in_transaction
    cache.put_many([(keys[0], np.zeros(2, np.float32))])  # the connection is still usable
    assert len(cache) == 1


# ------------------------------------------------------------------------------------------------
# Transfer-table fits
# ------------------------------------------------------------------------------------------------
def _lotteries(n=5, m=30, seed=3):
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n):
        z1 = rng.choice([10.0, 20.0, 50.0], size=m)
        p = rng.choice([0.25, 0.5, 0.75], size=m)
        rows.append(pd.DataFrame({"domain": f"D{d}", "z1": z1, "z2": 0.2 * z1, "p1": p,
                                  "ce": p * z1 * (0.8 + 0.05 * d) + rng.normal(0, 1, size=m)}))
    return pd.concat(rows, ignore_index=True)


def _build(data, cache_dir):
    from llmsurrogate.transfer import error_table
    from llmsurrogate.transfer._build import collect_cache_stats

    with collect_cache_stats() as stats, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = error_table(data, "eu", r=1, cache=cache_dir, n_jobs=1)
    warned = [w for w in caught if issubclass(w.category, LLMSurrogateWarning) and "cached fit" in str(w.message)]
    return table, stats, warned


def _tamper_fit(path, mode):
    raw = path.read_bytes()
    magic, meta, blob = raw.split(b"\n", 2)
    if mode == "flip":
        b = bytearray(raw)
        b[-5] ^= 0x01
        path.write_bytes(bytes(b))
    elif mode == "truncate":
        path.write_bytes(raw[:-4])
    elif mode == "empty":
        path.write_bytes(b"")
    elif mode == "nan":
        path.write_bytes(magic + b"\n" + meta + b"\n" + struct.pack("<d", float("nan")) + blob[8:])
    elif mode == "other_version":
        m = json.loads(meta)
        m["producer"]["scikit-learn"] = "0.1"
        path.write_bytes(magic + b"\n" + json.dumps(m).encode() + b"\n" + blob)
    elif mode == "old_npy":  # an older release's entry: a plain .npy of other values
        path.unlink()
        np.save(path.with_suffix(".npy"), np.zeros(5))
    elif mode == "old_fit":  # the release before the shared entry format: a valid `.fit` of other values
        from llmsurrogate._atomic import checksum, producer

        path.unlink()
        prod = producer("numpy", "scikit-learn")
        values = np.zeros(5, "<f8").tobytes()
        head = {"producer": prod, "n": 5,
                "checksum": checksum(path.stem, json.dumps(prod, sort_keys=True), values)}
        path.with_suffix(".fit").write_bytes(b"LLMSURROGATE-TRANSFER-FIT 1\n" + json.dumps(head, sort_keys=True).encode()
                                             + b"\n" + values)
    else:  # pragma: no cover
        raise AssertionError(mode)


@pytest.mark.parametrize("mode", ["flip", "truncate", "empty", "nan", "other_version", "old_npy", "old_fit"])
def test_transfer_fit_cache_tampered_entry_is_a_counted_miss(tmp_path, mode):
    data = _lotteries()
    clean, stats, _ = _build(data, None)
    assert stats.computed == 5 and stats.hits == 0
    _build(data, tmp_path / "c")
    files = sorted((tmp_path / "c").rglob("*.entry"))
    assert len(files) == 5
    _tamper_fit(files[2], mode)
    table, stats, warned = _build(data, tmp_path / "c")
    assert (stats.hits, stats.computed, stats.rejected) == (4, 1, 1)
    assert len(warned) == 1
    np.testing.assert_array_equal(table.values, clean.values)
    table, stats, warned = _build(data, tmp_path / "c")  # repaired
    assert (stats.hits, stats.computed, stats.rejected) == (5, 0, 0) and not warned
    np.testing.assert_array_equal(table.values, clean.values)


def test_transfer_build_cli_reports_cache_counts(tmp_path):
    from llmsurrogate.cli import cli

    _lotteries().to_csv(tmp_path / "d.csv", index=False)
    args = ["transfer", "build", "--data", str(tmp_path / "d.csv"), "--model", "eu", "--out", str(tmp_path / "t.csv"),
            "--cache", str(tmp_path / "c"), "--n-jobs", "1"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    ref = (tmp_path / "t.csv").read_bytes()
    assert "cache: 0 fits reused, 5 computed, 0 rejected" in first.stderr
    next((tmp_path / "c").rglob("s1.entry")).write_bytes(b"")
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0, second.output
    assert "cache: 4 fits reused, 1 computed, 1 rejected" in second.stderr
    assert (tmp_path / "t.csv").read_bytes() == ref


# ------------------------------------------------------------------------------------------------
# ESS command line: finished grid points
# ------------------------------------------------------------------------------------------------
def _ess_data(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 2))
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": X[:, 0] + rng.normal(size=n), "llm": 0.8 * X[:, 0]})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    return path


def _ess(data, out):
    from llmsurrogate.cli import cli

    res = CliRunner().invoke(cli, ["ess", "--data", str(data), "--outcome", "y", "--prediction", "llm",
                                   "--algorithm", "lasso", "--grid", "1,2,5,20", "--out", str(out), "--no-plot",
                                   "--n-jobs", "1"])
    assert res.exit_code == 0, res.output
    return res


def _tamper_point(path, mode):
    text = path.read_text()
    magic, head, payload = path.read_bytes().split(b"\n", 2)
    if mode == "flip":
        i = text.index('"ecv"') + 8
        path.write_text(text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:])
    elif mode == "truncate":
        path.write_text(text[: len(text) // 2])
    elif mode == "empty":
        path.write_text("")
    elif mode == "nan":
        point = json.loads(payload)
        point["plain"]["ecv"] = float("nan")
        path.write_bytes(magic + b"\n" + head + b"\n" + json.dumps(point).encode())
    elif mode == "other_version":
        entry = json.loads(head)
        entry["producer"]["numpy"] = "1.0.0"
        path.write_bytes(magic + b"\n" + json.dumps(entry).encode() + b"\n" + payload)
    elif mode == "old_format":  # a bare point, as older releases wrote it
        path.write_bytes(payload)
    elif mode == "old_release":  # the release before the shared entry format: a valid N_<n>.json entry
        from llmsurrogate._atomic import checksum, producer

        point = json.loads(payload)
        prod = producer("numpy", "scikit-learn")
        old = {"format": 1, "producer": prod, "point": point,
               "checksum": checksum(json.dumps(prod, sort_keys=True), json.dumps(point, sort_keys=True, default=str))}
        path.unlink()
        path.with_suffix(".json").write_text(json.dumps(old, default=str))
    else:  # pragma: no cover
        raise AssertionError(mode)


@pytest.mark.parametrize("mode", ["flip", "truncate", "empty", "nan", "other_version", "old_format", "old_release"])
def test_ess_grid_point_cache_tampered_entry_is_a_counted_miss(tmp_path, mode):
    data = _ess_data(tmp_path)
    _ess(data, tmp_path / "clean")
    clean = (tmp_path / "clean" / "ess_table.csv").read_bytes()
    summary = (tmp_path / "clean" / "ess_summary.json").read_bytes()
    out = tmp_path / "out"
    _ess(data, out)
    point = next((out / ".ess_cache").rglob("N_5.entry"))
    _tamper_point(point, mode)
    res = _ess(data, out)
    assert "rejected 1 cached grid point(s)" in res.stderr
    assert "grid points: 3 reused, 1 computed, 1 rejected" in res.stderr
    assert (out / "ess_table.csv").read_bytes() == clean
    assert (out / "ess_summary.json").read_bytes() == summary
    res = _ess(data, out)  # repaired
    assert "grid points: 4 reused, 0 computed, 0 rejected" in res.stderr


def test_score_with_a_damaged_cache_file_is_one_line_exit_1(tmp_path):
    from llmsurrogate.cli import cli

    data = tmp_path / "rows.csv"
    pd.DataFrame({"AGEP": [30]}).to_csv(data, index=False)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / Cache.FILENAME).write_bytes(b"garbage " * 100)
    res = CliRunner().invoke(cli, ["risk", "--data", str(data), "--task", "ACSIncome", "--model",
                                   str(tmp_path / "no-model"), "--cache", str(tmp_path / "cache"),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "llm_cache.sqlite is damaged" in lines[0] and "move it aside" in lines[0]


def test_cache_means_one_thing_for_the_transfer_fits(tmp_path):
    """``cache=`` of a transfer build is a folder path or an llm Cache (its folder), as everywhere
    (issue 20): both reach the same entries; anything else is a clear error."""
    from llmsurrogate.exceptions import InvalidArgumentError
    from llmsurrogate.llm.cache import NullCache

    data = _lotteries()
    clean, stats, _ = _build(data, None)
    table, stats, _ = _build(data, tmp_path / "c")
    assert stats.computed == 5
    table, stats, _ = _build(data, Cache(tmp_path / "c"))
    assert (stats.hits, stats.computed) == (5, 0)
    np.testing.assert_array_equal(table.values, clean.values)
    table, stats, _ = _build(data, NullCache())
    assert (stats.hits, stats.computed) == (0, 5)
    with pytest.raises(InvalidArgumentError, match="argument `cache` must be None, a directory path or a Cache"):
        _build(data, 3)
