"""The on-disk LLM cache: keys, kill-and-resume with a real subprocess, two concurrent writers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

from llmsurrogate.llm.cache import Cache, cached_batches

# A scoring run in its own process: the CallableBackend oracle sleeps per prompt and appends
# every prompt it computes to a log, so the test can see exactly what was (re)computed.
WORKER = textwrap.dedent('''
    import json, math, sys, time
    import numpy as np
    from llmsurrogate.llm.base import CallableBackend
    from llmsurrogate.llm.cache import Cache
    from llmsurrogate.llm.scoring import option_probabilities

    cache_dir, log_path, out_path, n, delay = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])

    def fn(prompt):
        with open(log_path, "a") as fh:
            fh.write(prompt + "\\n")
        time.sleep(delay)
        k = int(prompt.split()[-1])
        p = (k % 7 + 1) / 9
        return {" A": math.log(p), " B": math.log(1 - p)}

    backend = CallableBackend(fn, name="oracle")
    prompts = [f"prompt number {i}" for i in range(n)]
    probs, mass = option_probabilities(backend, prompts, ["A", "B"], cache=Cache(cache_dir), batch_size=4,
                                       commit_every=4)
    with open(out_path, "w") as fh:
        json.dump(probs[:, 1].tolist(), fh)
''')


def _run(args, **kw):
    return subprocess.Popen([sys.executable, "-c", WORKER, *map(str, args)], **kw)


def test_kill_and_resume_redoes_no_finished_prompt(tmp_path):
    n = 40
    cache_dir, log1, out = tmp_path / "cache", tmp_path / "log1", tmp_path / "out.json"
    proc = _run([cache_dir, log1, out, n, 0.03])
    deadline = time.time() + 60
    while time.time() < deadline:  # wait until a few batches are stored, then kill hard
        if (cache_dir / Cache.FILENAME).exists() and len(Cache(cache_dir)) >= 12:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    stored = len(Cache(cache_dir))
    assert 12 <= stored < n
    computed_first = set(log1.read_text().splitlines())
    log2 = tmp_path / "log2"
    assert _run([cache_dir, log2, out, n, 0.0]).wait() == 0
    recomputed = set(log2.read_text().splitlines())
    assert len(recomputed) == n - stored  # nothing stored is computed again
    assert len(recomputed & computed_first) <= 4  # at most the batch in flight at the kill
    resumed = json.loads(out.read_text())
    # an uninterrupted run in a fresh cache gives the same scores
    fresh = tmp_path / "fresh.json"
    assert _run([tmp_path / "cache2", tmp_path / "log3", fresh, n, 0.0]).wait() == 0
    assert resumed == json.loads(fresh.read_text())
    expect = [1 - ((i % 7 + 1) / 9) for i in range(n)]  # P(B) = 1 - p
    np.testing.assert_allclose(resumed, expect, rtol=1e-6)
    assert Cache(cache_dir).integrity_ok()


def test_two_processes_writing_one_cache(tmp_path):
    code = textwrap.dedent('''
        import sys, numpy as np
        from llmsurrogate.llm.cache import Cache
        c = Cache(sys.argv[1], timeout=60)
        start = int(sys.argv[2])
        for b in range(40):
            keys = [c.key(backend="b", model="m", prompt=f"p{start + 25 * b + i}", template="t", params=None)
                    for i in range(25)]
            c.put_many([(k, np.full(3, start + 25 * b + i, np.float32)) for i, k in enumerate(keys)])
    ''')
    # overlapping ranges: 0..999 and 500..1499
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(s)]) for s in (0, 500)]
    assert [p.wait() for p in procs] == [0, 0]
    c = Cache(tmp_path)
    assert len(c) == 1500 and c.integrity_ok()
    keys = [c.key(backend="b", model="m", prompt=f"p{i}", template="t", params=None) for i in range(1500)]
    got = c.get_many(keys)
    assert all(got[k].tolist() == [float(i)] * 3 for i, k in enumerate(keys))


def test_keys_separate_every_field():
    base = dict(backend="hf", model="m@abc", prompt="p", template="v1", params={"ids": [1, 2]})
    k0 = Cache.key(**base)
    for field, other in [("backend", "vllm"), ("model", "m@abd"), ("prompt", "p "), ("template", "v2"),
                         ("params", {"ids": [2, 1]})]:
        assert Cache.key(**{**base, field: other}) != k0
    assert Cache.keys(backend="hf", model="m@abc", prompts=["p"], template="v1", params={"ids": [1, 2]}) == [k0]
    assert len(k0) == 64


def test_cached_batches_computes_duplicates_once(tmp_path):
    calls = []

    def compute(idx):
        calls.append(list(idx))
        return [np.array([float(i)], np.float32) for i in idx]

    keys = ["a", "b", "a", "c"]
    out = cached_batches(Cache(tmp_path), keys, compute, batch_size=2)
    assert [o.tolist() for o in out] == [[0.0], [1.0], [0.0], [3.0]]
    assert calls == [[0, 1], [3]]
    calls.clear()
    cached_batches(Cache(tmp_path), keys, compute, batch_size=2)
    assert calls == []


def test_keys_and_task_fingerprints_are_stable_across_processes():
    code = ("from llmsurrogate.llm.cache import Cache; from llmsurrogate.llm.tasks import acs_income_task; "
            "print(Cache.key(backend='hf', model='m', prompt='p\u00e9', template='t', params={'b': [1], 'a': 2}), "
            "acs_income_task().fingerprint())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("0", "1", "12345")}
    assert len(outs) == 1


def test_one_owner_per_cache_file_the_response_store_is_a_view(tmp_path):
    """The openai path hands its Cache to the backend, which stores responses through a view of it
    (its own producer tag and counts, the owner's file and connections) instead of opening the
    SQLite file a second time (issue 20); a folder is opened by the backend itself."""
    from llmsurrogate.llm._http import RESPONSE_PRODUCER, HTTPTransport, _ResponseCache
    from llmsurrogate.llm.cache import NullCache, as_cache, using_cache

    cache = Cache(tmp_path)
    view = HTTPTransport._as_response_cache(cache)
    assert view._local is cache._local and view.path == cache.path and view.producer == RESPONSE_PRODUCER
    k = Cache.key(backend="openai", model="m", prompt="p", template="t", params={})
    view.put_many([(k, np.frombuffer(b"{}", dtype=np.uint8))], kind="openai_response")
    assert bytes(view.get_many([k])[k]) == b"{}" and view.hits == 1
    assert cache.get_many([k]) == {} and cache.rejected == 1  # another producer: not an LLM output of this process
    view.close()  # a view closes nothing: the owner's connection stays usable
    assert len(cache) == 1
    own = HTTPTransport._as_response_cache(tmp_path / "other")
    assert isinstance(own, _ResponseCache) and own.producer == RESPONSE_PRODUCER
    assert isinstance(HTTPTransport._as_response_cache(None), NullCache)
    # `cache` is one thing everywhere: None, a folder path or a Cache
    assert isinstance(as_cache(None), NullCache) and as_cache(cache) is cache
    with using_cache(str(tmp_path)) as opened:
        assert isinstance(opened, Cache) and len(opened) == 1
    with using_cache(cache) as same:
        assert same is cache
    assert len(cache) == 1  # not closed by using_cache


def test_llm_rows_use_the_shared_entry_format():
    from llmsurrogate._store import canonical
    from llmsurrogate.llm.cache import ENTRY_FORMAT, _entry_checksum, entry_producer

    assert entry_producer() == ENTRY_FORMAT.producer_text == canonical(ENTRY_FORMAT.producer)
    assert set(ENTRY_FORMAT.producer) == {"llmsurrogate", "torch", "transformers", "vllm"}
    assert _entry_checksum("k", "p", "<f4", b"x") == ENTRY_FORMAT.checksum("k", "p", "<f4", b"x")
