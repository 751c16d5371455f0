"""Batching between the cache and the backend (issue 13, item 2), on the CPU.

The cache's commit granularity (``commit_every``) is separate from the backend's batch size: a
backend that streams its batches (``next_token_logprobs_batches``) gets a large window of prompts,
sorts them by length and picks its own batches; results are written as they finish and come back in
input order, with the same scores as before.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmsurrogate.llm.cache import Cache, cached_batches


class SpyCache(Cache):
    """A Cache that records the size of every transaction."""

    def __init__(self, d):
        super().__init__(d)
        self.commits = []

    def put_many(self, items, kind=""):
        items = list(items)
        self.commits.append(len(items))
        super().put_many(items, kind=kind)


def _keys(n):
    return Cache.keys(backend="b", model="m", prompts=[f"p{i}" for i in range(n)], template="t", params={})


def _value(i):
    return np.array([i, 2 * i], dtype=np.float32)


def _streaming(batch, lengths=None, fail_after=None):
    """A compute(indices) that yields (positions, arrays) in length-sorted batches of ``batch``."""
    calls = []

    def compute(idx):
        calls.append(list(idx))

        def gen():
            order = np.argsort([lengths[i] for i in idx], kind="stable") if lengths else np.arange(len(idx))
            for b, s in enumerate(range(0, len(order), batch)):
                if fail_after is not None and b == fail_after:
                    raise KeyboardInterrupt("killed")
                pos = order[s: s + batch]
                yield pos, [_value(idx[p]) for p in pos]
        return gen()
    return compute, calls


@pytest.mark.parametrize("batch", [1, 5, 50, 300])
@pytest.mark.parametrize("commit_every", [1, 12, 64])
def test_commit_granularity_is_independent_of_the_backend_batch(tmp_path, batch, commit_every):
    n = 137
    lengths = list(np.random.default_rng(batch).integers(1, 100, size=n))
    cache = SpyCache(tmp_path)
    compute, calls = _streaming(batch, lengths)
    out = cached_batches(cache, _keys(n), compute, batch_size=None, commit_every=commit_every)
    assert len(calls) == 1 and len(calls[0]) == n  # the whole window in one backend call
    for i, a in enumerate(out):  # input order restored
        np.testing.assert_array_equal(a, _value(i))
    assert sum(cache.commits) == n
    # every transaction but the last holds at least commit_every results and at most one backend
    # batch more than that: the granularity follows commit_every, not the backend's batch
    for c in cache.commits[:-1]:
        assert commit_every <= c < commit_every + batch
    assert len(cache.commits) <= -(-n // commit_every)


def test_a_killed_stream_loses_less_than_one_commit_and_resumes(tmp_path):
    n, batch, commit_every = 100, 7, 20
    compute, _ = _streaming(batch, fail_after=9)  # 9 batches (63 prompts) finished, then killed
    cache = SpyCache(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        cached_batches(cache, _keys(n), compute, batch_size=None, commit_every=commit_every)
    stored = len(cache)
    assert 63 - stored < commit_every  # finished but unwritten: fewer than commit_every
    compute2, calls = _streaming(batch)
    out = cached_batches(SpyCache(tmp_path), _keys(n), compute2, batch_size=None, commit_every=commit_every)
    assert len(calls[0]) == n - stored  # the rerun redoes only what was not written
    for i, a in enumerate(out):
        np.testing.assert_array_equal(a, _value(i))


def test_a_list_returning_compute_commits_per_call(tmp_path):
    cache = SpyCache(tmp_path)
    out = cached_batches(cache, _keys(10), lambda idx: [_value(i) for i in idx], batch_size=4)
    assert cache.commits == [4, 4, 2]
    assert [float(a[0]) for a in out] == list(range(10))


def test_a_stream_missing_results_is_an_error(tmp_path):
    def compute(idx):
        return iter([(np.arange(len(idx) - 1), [_value(i) for i in idx[:-1]])])

    with pytest.raises(RuntimeError, match="results for"):
        cached_batches(Cache(tmp_path), _keys(5), compute, batch_size=None, commit_every=2)


# --- through TransformersBackend ------------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llmsurrogate import datasets, risk, testing  # noqa: E402
from llmsurrogate.llm import scoring  # noqa: E402
from llmsurrogate.llm.hf import TransformersBackend  # noqa: E402
from llmsurrogate.llm.prompts import multiple_choice_prompt  # noqa: E402
from llmsurrogate.llm.tasks import acs_income_task  # noqa: E402

TASK = acs_income_task()
ROWS = datasets.load_acs_income_rows()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return testing.build_model(tmp_path_factory.mktemp("batching") / "m", "gpt2", seed=1)


@pytest.mark.parametrize("share", [True, False])
def test_backend_batches_are_sorted_by_length_and_cover_every_prompt(model, share):
    b = TransformersBackend(model, device="cpu", batch_size=4, share_prefix=share)
    prompts = [multiple_choice_prompt(TASK, r, q) for r in ROWS.to_dict("records") for q in TASK.question.permutations()]
    prompts += ["Answer:", "The age is: 40 years old.\nAnswer:"]
    ids = [5, 6, 7]
    got = list(b.next_token_logprobs_batches(prompts, ids))
    seen = np.concatenate([idx for idx, _ in got])
    assert sorted(seen.tolist()) == list(range(len(prompts)))
    assert all(len(idx) <= 4 for idx, _ in got)
    full = b.next_token_logprobs(prompts, ids)
    for idx, rows in got:
        np.testing.assert_array_equal(full[idx], rows)
    if not share:  # plain path: batches in ascending length order
        lens = [len(s) for s in b._encode(prompts)]
        flat = [lens[i] for i in seen]
        assert flat == sorted(flat)


def test_cached_scores_equal_the_backend_and_the_old_chunking(model, tmp_path, monkeypatch):
    b = TransformersBackend(model, device="cpu", batch_size=5)
    prompts = [multiple_choice_prompt(TASK, r, q) for r in ROWS.to_dict("records") for q in TASK.question.permutations()]
    prompts = list(dict.fromkeys(prompts))  # the cache computes a repeated prompt once: another window
    ids = list(range(0, 300, 7))
    direct = b.next_token_logprobs(prompts, ids)
    cache = SpyCache(tmp_path / "c")
    got = scoring.next_token_logprobs_cached(b, prompts, ids, cache=cache, commit_every=8)
    np.testing.assert_array_equal(got, direct)  # one window: the same batches as the direct call
    assert sum(cache.commits) == len(prompts) and all(c >= 8 for c in cache.commits[:-1])
    again = scoring.next_token_logprobs_cached(b, prompts, ids, cache=cache)
    np.testing.assert_array_equal(again, direct)
    # the old path: max(batch_size, COMMIT_EVERY) prompts per non-streaming call
    class NotStreaming:  # the same backend without next_token_logprobs_batches
        identity = b.identity
        next_token_logprobs = b.next_token_logprobs

    calls = []
    monkeypatch.setattr(NotStreaming, "next_token_logprobs",
                        lambda self, p, i: calls.append(len(p)) or b.next_token_logprobs(p, i))
    old = scoring.next_token_logprobs_cached(NotStreaming(), prompts, ids, cache=None, batch_size=16,
                                             commit_every=8)
    assert calls == [16, len(prompts) - 16]
    # other windows group shared prefixes and pad differently: float32 rounding only
    np.testing.assert_allclose(old, direct, atol=2e-5)


def test_risk_scores_default_batching_equals_a_fixed_batch(model):
    b = TransformersBackend(model, device="cpu")
    s_default = risk.risk_scores(ROWS, TASK, b)
    s_fixed = risk.risk_scores(ROWS, TASK, b, batch_size=16)
    np.testing.assert_allclose(s_default.scores, s_fixed.scores, atol=1e-6)
    num_default = risk.risk_scores(ROWS.iloc[:6], TASK, b, method="numeric")
    num_fixed = risk.risk_scores(ROWS.iloc[:6], TASK, b, method="numeric", batch_size=16)
    np.testing.assert_allclose(num_default.scores, num_fixed.scores, atol=1e-6)
