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


# --- chain of thought (method="chain_of_thought") -------------------------------------------------


def _cot_unstreamed(backend, task, rows, *, cache, max_new_tokens, user=None):
    """cot_risk as it was before it streamed: every generation prompt, generated text and scoring
    prompt made up front (generate_cached and option_probabilities on lists)."""
    from llmsurrogate.llm.prompts import COT_PREFILL, multiple_choice_prompt, reasoning_of

    questions = task.question.orderings()
    user = user or (lambda row, q: multiple_choice_prompt(task, row, q, prefill=False))
    pairs = [(row, q) for row in rows for q in questions]
    prompts = [user(row, q) + "\n" + COT_PREFILL for row, q in pairs]
    texts = scoring.generate_cached(backend, prompts, max_new_tokens=max_new_tokens, cache=cache)
    cut = [reasoning_of(t, q) for t, (_, q) in zip(texts, pairs)]
    final = [p + r + "\n" + q.prefill for p, (r, _), (_, q) in zip(prompts, cut, pairs)]
    probs, mass = scoring.option_probabilities(backend, final, task.question.keys, cache=cache, progress=False)
    n, k = len(rows), len(questions)
    scores, masses, per = scoring._order_scores(probs, mass, questions, n)
    stated = np.full((n, k), np.nan)
    for i, ((_, key), (_, q)) in enumerate(zip(cut, pairs)):
        if key is not None:
            stated[i // k, i % k] = scoring._positive_weights(q)[q.keys.index(key)]
    return scores, masses, per, [cut[i * k][0] for i in range(n)], stated, \
        scoring._order_distribution(probs, questions, task.question, n)


def _cot_peak_bytes(backend, rows, cache):
    gc.collect()
    tracemalloc.start()
    try:
        risk.risk_scores(rows, TASK, backend, "chain_of_thought", cache=cache, max_new_tokens=8, progress=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_chain_of_thought_memory_per_prompt_does_not_grow_with_the_prompts(backend, tmp_path, monkeypatch):
    """Chain of thought at 150 and 450 rows (300 and 900 prompts), chunks of 64 prompts, scoring
    windows of 128 (generation windows: 64): the generation prompts, the generated texts and the
    scoring prompts are made a chunk at a time and dropped once scored, so what grows with the
    prompts is the result (the table with its reasoning column, the answer keys'
    log-probabilities and their copies) and 5 bytes a prompt of repeat bookkeeping: about 500
    bytes a prompt, not every prompt and text (the old code: about 2,900)."""
    monkeypatch.setattr(scoring, "PROMPT_CHUNK", 64, raising=False)
    monkeypatch.setattr(scoring, "WINDOW", 128)
    df = testing.synthetic_census(450, seed=5)
    risk.risk_scores(df.head(10), TASK, backend, "chain_of_thought", max_new_tokens=8, progress=False)  # warm-up
    small = _cot_peak_bytes(backend, df.head(150), tmp_path / "small")
    large = _cot_peak_bytes(backend, df, tmp_path / "large")
    per_prompt = (large - small) / (2 * (450 - 150))
    assert per_prompt < COT_BOUND, \
        f"{per_prompt:.0f} bytes held per prompt ({small / 1e6:.1f} MB -> {large / 1e6:.1f} MB)"


COT_BOUND = 1000


def test_chain_of_thought_equal_to_the_bit_whatever_the_chunks(backend, tmp_path, monkeypatch):
    """Chain of thought streamed in one chunk, in chunks of 7 and of 64 prompts (generation windows
    of 64, scoring windows of 64 and 8192 prompts), with repeated rows far apart and a cache holding
    every third row: the same bytes and cache counts as the unstreamed path (every prompt and
    text made up front), and as each other."""
    df = testing.synthetic_census(150, seed=8)
    df = pd.concat([df, df.iloc[:50], df.iloc[5:9]], ignore_index=True)  # repeated rows, far apart
    rows = df[list(TASK.features)].to_dict("records")

    def counts(c):
        return c.hits, c.misses

    refs = {}
    for name, chunk, window in (("one chunk", 10**6, 8192), ("chunks of 7", 7, 64), ("chunks of 64", 64, 8192)):
        monkeypatch.setattr(scoring, "PROMPT_CHUNK", chunk)
        monkeypatch.setattr(scoring, "WINDOW", window)  # the scoring windows decide the batches: the same in both
        if window not in refs:
            ref_cache = Cache(tmp_path / f"ref_{window}")
            _cot_unstreamed(backend, TASK, rows[::3], cache=ref_cache, max_new_tokens=6)
            ref_cache.hits = ref_cache.misses = 0
            refs[window] = ref_cache, _cot_unstreamed(backend, TASK, rows, cache=ref_cache, max_new_tokens=6)
        ref_cache, ref = refs[window]
        c = Cache(tmp_path / name.replace(" ", "_"))
        scoring.cot_risk(backend, TASK, rows[::3], cache=c, max_new_tokens=6)
        c.hits = c.misses = 0
        got = scoring.cot_risk(backend, TASK, rows, cache=c, max_new_tokens=6, return_probabilities=True)
        assert counts(c) == counts(ref_cache), name
        assert got[3] == ref[3], name  # the reasoning
        for a, b in zip(got[:3] + got[4:], ref[:3] + ref[4:]):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), name
        nocache = scoring.cot_risk(backend, TASK, rows[:40], max_new_tokens=6)
        want = _cot_unstreamed(backend, TASK, rows[:40], cache=None, max_new_tokens=6)
        assert nocache[3] == want[3]
        for a, b in zip(nocache[:3] + nocache[4:], want[:3] + want[4:5]):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), name


def test_chain_of_thought_prompts_repeated_across_orders(tmp_path, monkeypatch):
    """A user_fn that renders some rows' answer orders the other way round (and leaves out the age):
    one row's first-order prompt is then another row's second-order prompt, first seen chunks
    earlier. Generated once, its reasoning is the row's; the key it states has the value of the
    option at that key in each position's own order; all as the unstreamed path gives them."""
    from llmsurrogate.llm import CallableBackend
    from llmsurrogate.llm.prompts import multiple_choice_prompt

    task = testing.synthetic_income_task()
    qs = task.question.orderings()

    def user(row, q):
        if row["AGEP"] >= 50:
            q = qs[1 - qs.index(q)]
        return multiple_choice_prompt(task, {**row, "AGEP": 30}, q, prefill=False)

    def model(prompt):
        if prompt.endswith("step by step."):
            return {" Answer": 0.0}
        if prompt.endswith(" Answer"):
            return {" is": 0.0}
        if prompt.endswith(" is"):
            return {" A" if "A. Above" in prompt.split("Question:")[-1] else " B": 0.0}
        if prompt.endswith("Answer:"):
            return {" A": -0.2, " B": -1.7} if "Bachelor" in prompt else {" A": -1.1, " B": -0.4}
        return {}

    vocab = [" A", " B", "A", "B", " Answer", " is"]
    rows = [{"AGEP": 40, "SCHL": 21, "WKHP": 40, "SEX": 1}, {"AGEP": 33, "SCHL": 16, "WKHP": 20, "SEX": 2}] * 3 + \
        [{"AGEP": 60, "SCHL": 21, "WKHP": 40, "SEX": 1}, {"AGEP": 45, "SCHL": 16, "WKHP": 20, "SEX": 2}]
    monkeypatch.setattr(scoring, "PROMPT_CHUNK", 4)
    calls = []

    def backend():
        b = CallableBackend(model, vocab=vocab, name="swap")
        generate = b.generate
        b.generate = lambda ps, max_new_tokens=16: calls.append(list(ps)) or generate(ps, max_new_tokens)
        return b

    got = scoring.cot_risk(backend(), task, rows, max_new_tokens=3, user_fn=user, return_probabilities=True)
    assert sum(len(c) for c in calls) == 4  # 16 prompts, 4 distinct
    want = _cot_unstreamed(backend(), task, rows, cache=None, max_new_tokens=3, user=user)
    assert got[3] == want[3]
    for a, b in zip(got[:3] + got[4:], want[:3] + want[4:]):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    # row 6's first order is row 0's second: its text, read in its own order (A is Below there)
    assert (got[3][0], got[3][6]) == (" Answer is B", " Answer is A")
    assert got[4][0].tolist() == [1.0, 1.0] and got[4][6].tolist() == [0.0, 0.0]
