"""LLM scoring in constant memory per prompt (issue 37, item 4).

``risk_scores`` made every row's dict, every prompt, every cache key and every result array up
front and held them to the end (about 1.6 KB a prompt beyond a window of token ids as Python
int lists, 6.4 KB a prompt). Now the rows, prompts and keys are made a chunk at a time
(``scoring.PROMPT_CHUNK``), the missing ones wait for their window (``scoring.WINDOW``) and the
backend packs a window's token ids in an int32 array: what a run holds grows with the prompts by
the result only. The memory is measured (tracemalloc's peak of Python and numpy allocations) at
two sizes with a small chunk and window, so the growth per prompt is what is compared; the old
code fails the bound. The results are the same to the bit whatever the chunks, and the windows
handed to the backend are those of the unstreamed cache path."""

from __future__ import annotations

import gc
import os
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import risk, testing
from llmsurrogate.llm import cache as cache_mod
from llmsurrogate.llm import scoring
from llmsurrogate.llm.cache import Cache, NullCache, cached_batches
from llmsurrogate.llm.tasks import acs_income_task

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

TASK = acs_income_task()


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    from llmsurrogate.llm.hf import TransformersBackend

    path = testing.build_model(tmp_path_factory.mktemp("model") / "tiny", "gpt2", hidden=16, layers=1, seed=0)
    return TransformersBackend(path, device="cpu")


def _peak_bytes(backend, rows, cache):
    gc.collect()
    tracemalloc.start()
    try:
        risk.risk_scores(rows, TASK, backend, cache=cache, progress=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_held_per_prompt_does_not_grow_with_the_prompts(backend, tmp_path, monkeypatch):
    """Peak traced memory at 600 and 1,800 rows (1,200 and 3,600 prompts) with chunks of 256 and
    windows of 512 prompts: the growth per prompt is the result's (about 0.1 KB: the table's
    columns, the answer keys' log-probabilities and their float64 copies, 24 bytes of seen keys),
    not 1.6 KB (the old code: every row's dict, prompt, key and result array)."""
    monkeypatch.setattr(scoring, "PROMPT_CHUNK", 256, raising=False)  # the old code has no chunks
    monkeypatch.setattr(scoring, "WINDOW", 512)
    df = testing.synthetic_census(1800, seed=5)
    risk.risk_scores(df.head(20), TASK, backend, progress=False)  # warm-up
    small = _peak_bytes(backend, df.head(600), tmp_path / "small")
    large = _peak_bytes(backend, df, tmp_path / "large")
    per_prompt = (large - small) / (2 * (1800 - 600))
    assert per_prompt < 400, f"{per_prompt:.0f} bytes held per prompt ({small / 1e6:.1f} MB -> {large / 1e6:.1f} MB)"


def test_scores_equal_to_the_bit_whatever_the_chunks(backend, tmp_path, monkeypatch):
    """Scoring in one chunk and one window, and in chunks of 7 rows' prompts and windows of 64
    (the same windows either way: the windows are cut from the missing prompts, whatever the
    chunks), with repeated rows and a cache holding every third row: the same bytes, the same
    cache counts."""
    df = testing.synthetic_census(300, seed=8)
    df = pd.concat([df, df.iloc[:120], df.iloc[5:9]], ignore_index=True)  # repeated rows, far apart
    runs = {}
    for name, chunk in (("one chunk", 10**6), ("chunks of 7", 7), ("chunks of 64", 64)):
        monkeypatch.setattr(scoring, "PROMPT_CHUNK", chunk)
        monkeypatch.setattr(scoring, "WINDOW", 64)
        c = Cache(tmp_path / name.replace(" ", "_"))
        risk.risk_scores(df.iloc[::3], TASK, backend, cache=c, progress=False)
        got = risk.risk_scores(df, TASK, backend, cache=c, progress=False)
        nocache = risk.risk_scores(df, TASK, backend, progress=False)
        num = risk.risk_scores(df.iloc[:60], TASK, backend, method="numeric_argmax", progress=False)
        runs[name] = (got, nocache, num)
    ref = runs["one chunk"]
    for name, run in runs.items():
        for a, b in zip(run, ref):
            assert list(a.table.columns) == list(b.table.columns)
            for col in a.table.columns:
                assert np.asarray(a.table[col]).tobytes() == np.asarray(b.table[col]).tobytes(), (name, col)
        assert {k: run[0].meta[k] for k in ("cache_hits", "cache_misses")} == \
            {k: ref[0].meta[k] for k in ("cache_hits", "cache_misses")}


@pytest.mark.parametrize("window,chunk", [(5, 3), (5, 5), (8, 13), (64, 2)])
@pytest.mark.parametrize("use_cache", [True, False])
def test_streamed_windows_are_those_of_the_unstreamed_path(tmp_path, window, chunk, use_cache):
    """cached_rows hands the backend the windows cached_batches would (the distinct missing
    prompts in the order of their first occurrence, cut every `window`), whatever the chunks the
    prompts come in; a repeated prompt is computed once; the hit and miss counts agree."""
    rng = np.random.default_rng(window * 100 + chunk)
    prompts = [f"p{int(i)}" for i in rng.integers(0, 40, size=90)]  # repeats, near and far
    keys = Cache.keys(backend="t", model="m", prompts=prompts, template="t", params={})
    stored = sorted(set(prompts))[::4]

    def setup(name):
        if not use_cache:
            return NullCache()
        c = Cache(tmp_path / name)
        c.put_many([(k, np.array([float(p[1:])], np.float32)) for p, k in zip(prompts, keys) if p in stored])
        c.hits = c.misses = 0
        return c

    calls_old, calls_new = [], []

    def compute_old(idx):
        calls_old.append([prompts[i] for i in idx])
        return [np.array([float(prompts[i][1:])], np.float32) for i in idx]

    def compute_new(batch):
        calls_new.append(list(batch))
        return iter([(np.arange(len(batch))[::-1], [np.array([float(p[1:])], np.float32) for p in batch[::-1]])])

    old_cache, new_cache = setup("old"), setup("new")
    old = np.stack(cached_batches(old_cache, keys, compute_old, batch_size=window, progress=False))
    chunks = (prompts[a: a + chunk] for a in range(0, len(prompts), chunk))
    new = cache_mod.cached_rows(new_cache, chunks, len(prompts), 1,
                                lambda ps: Cache.keys(backend="t", model="m", prompts=ps, template="t", params={}),
                                compute_new, window=window, progress=False, commit_every=2)
    assert calls_new == calls_old
    assert new.tobytes() == old.astype(np.float32).tobytes()
    np.testing.assert_array_equal(new[:, 0], [float(p[1:]) for p in prompts])
    assert (new_cache.hits, new_cache.misses) == (old_cache.hits, old_cache.misses)


def test_packed_token_ids_group_prefixes_as_the_lists_did():
    """TokenIds orders prompts as their id lists order and finds the same shared prefixes (the
    groups decide the batches, so the bits): checked against the list algorithm it replaced."""
    from llmsurrogate.llm.hf import TokenIds, TransformersBackend

    def groups_of_lists(seqs, min_share=0.5, max_group=24):  # the algorithm on lists, as it was
        order = sorted(range(len(seqs)), key=lambda i: seqs[i])
        groups, cur, plen = [], [order[0]], len(seqs[order[0]]) - 1
        for i in order[1:]:
            a, b = seqs[cur[0]], seqs[i]
            lcp = 0
            m = min(len(a), len(b))
            while lcp < m and a[lcp] == b[lcp]:
                lcp += 1
            new = min(plen, lcp, len(b) - 1)
            if len(cur) < max_group and new >= 1 and new >= min_share * len(b):
                cur.append(i)
                plen = new
            else:
                groups.append((cur, plen))
                cur, plen = [i], len(b) - 1
        groups.append((cur, plen))
        return groups

    rng = np.random.default_rng(3)
    stems = [rng.integers(0, 70000, size=int(rng.integers(1, 30))).tolist() for _ in range(15)]
    seqs = [stems[int(rng.integers(15))][: int(rng.integers(1, 31))] + rng.integers(0, 3, size=int(rng.integers(0, 4))).tolist()
            for _ in range(400)]
    seqs = [s for s in seqs if s] + [[2**31 - 1], [0], [256, 1], [256]]
    packed = TokenIds.of(seqs)
    assert [packed[i] for i in range(len(seqs))] == seqs
    assert TransformersBackend._prefix_groups(packed) == groups_of_lists(seqs)
    assert TransformersBackend._prefix_groups(seqs) == groups_of_lists(seqs)


def test_the_openai_backends_topk_records_take_under_120_bytes_a_prompt():
    """OpenAIBackend keeps each scored prompt's top-k report for topk_report/topk_summary: in
    numeric columns (16 bytes of the prompt's SHA-256 and 8 numbers), not a dict of dicts keyed by
    a hex string (some 600 bytes a prompt for the backend's life; issue 37, item 4). The newest
    record of a prompt scored twice is the one read, and it counts once."""
    import tracemalloc

    from llmsurrogate.llm.openai_backend import TopkRecords

    rec = dict(requested=4, seen=3, keys=2, keys_unseen=1, seen_mass=0.5, topk_mass=0.75, unseen_bound=0.25, k=20)
    records = TopkRecords()
    records.add("warm", rec)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    n = 40_000
    for i in range(n):
        records.add(f"prompt {i}", {**rec, "seen": i % 5})
    per_prompt = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    assert per_prompt < 120, per_prompt
    records.add("prompt 7", {**rec, "seen": 4, "unseen_bound": 0.5})   # scored again
    assert records.get("prompt 7")["seen"] == 4 and records.get("prompt 8")["seen"] == 3
    assert records.get("never") is None and len(records) == n + 1
    assert records.values()[:, 6].max() == 0.5
