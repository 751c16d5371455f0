"""OpenAIBackend against a real OpenAI-compatible server (issue 14).

The server is llama.cpp's, from the ``llama-cpp-python`` package (the ``serve`` extra; ``make
test`` installs it), started here on 127.0.0.1 and stopped here, serving the tiny GPT-2 test model
converted to GGUF (tests/_llama_server.py). Between client and server, tests/_fault_proxy.py
injects faults (429 with Retry-After, 500, slow answers past the timeout, truncated JSON, dropped
connections) and counts requests per prompt. No mock stands in for the server.

Agreement with TransformersBackend on the same weights: the server puts BOS (``<|endoftext|>``)
first, so the transformers side scores ``"<|endoftext|>" + prompt``. llama.cpp computes in float32
with its own kernels (GELU approximation among them): log-probabilities agree within
``LOGPROB_ATOL`` = 1e-3 and answer probabilities within ``PROB_ATOL`` = 2e-4 (measured: 7e-5, 1.1e-4 on
prompt tokens, 2e-5; printed by
``test_answer_probabilities_agree_with_transformers``).

A second real server, vLLM's own (tests/_vllm_server.py; tests marked ``vllm``, run by ``make
test-vllm`` in the vLLM venv): the same tiny GPT-2 in float32, no BOS added (its tokenizer adds
none), so the transformers side scores the prompt itself. Agreement within the same tolerances
(measured in ``test_vllm_server_agrees_with_transformers_keyed_by_token_id``, printed). The
fault-proxy, budget and kill/resume tests run against both servers.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _fault_proxy import FaultProxy  # noqa: E402
from _llama_server import MODEL_ALIAS, LlamaServer, gpt2_to_gguf, llama_cpp_available  # noqa: E402
from _vllm_server import VLLMServer, vllm_available  # noqa: E402
from _cli_env import _env  # the CLI subprocess environment (the kill tests)  # noqa: E402

from llmsurrogate.llm.openai_backend import (  # noqa: E402
    BudgetExceededError, Ledger, RateLimiter, RequestFailedError, _retry_after, parse_probability)

LOGPROB_ATOL = 1e-3
PROB_ATOL = 2e-4
BOS = "<|endoftext|>"
SECRET = "sk-test-DO-NOT-LEAK-7f3a9c2e1b"

needs_server = pytest.mark.skipif(not llama_cpp_available(),
                                  reason="llama-cpp-python[server] is not installed (pip install 'llmsurrogate[serve]'; "
                                         "make test installs it)")


# ------------------------------------------------------------------ no server needed

def test_parse_probability_ladder():
    assert parse_probability("75", "Answer (between 0 and 1): 0.") == 0.75
    assert parse_probability("750", "0.") == 0.75
    assert parse_probability("x", "0.") is None
    assert parse_probability("It is 80%") == 0.8
    assert parse_probability("0.3 or maybe 0.35") == 0.35
    assert parse_probability("Probability: 80") == 0.8
    assert parse_probability("250") is None


def test_retry_after_header_forms():
    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after": "0.25"}) == 0.25
    assert _retry_after({"retry-after-ms": "150"}) == 0.15
    assert _retry_after({"retry-after": "garbage"}) is None
    assert _retry_after(None) is None


def test_rate_limiter_waits_for_the_window():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    lim = RateLimiter(rpm=3, tpm=100, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        lim.acquire(10)
    assert not slept
    lim.acquire(10)  # 4th request in the minute: waits until the first leaves the window
    assert now[0] >= 60.0
    lim2 = RateLimiter(tpm=50, clock=lambda: now[0], sleep=sleep)
    lim2.acquire(40)
    t0 = now[0]
    lim2.acquire(20)  # 60 tokens > 50 in the window
    assert now[0] - t0 >= 59.0


def test_ledger_cost_needs_prices():
    led = Ledger({"input": 2.0, "output": 10.0})
    led.add_usage({"prompt_tokens": 1000, "completion_tokens": 100})
    assert led.cost == pytest.approx((1000 * 2 + 100 * 10) / 1e6)
    assert Ledger().cost is None
    with pytest.raises(ValueError):
        Ledger({"input": -1})


def test_backend_needs_prices_for_max_cost_and_never_takes_the_key():
    pytest.importorskip("openai")
    from llmsurrogate.llm.openai_backend import OpenAIBackend

    with pytest.raises(ValueError, match="prices"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", max_cost=1.0)
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", api_key_env=SECRET + "!")
    with pytest.raises(ValueError, match="http"):
        OpenAIBackend("m", base_url="127.0.0.1:9")


# ------------------------------------------------------------------ the real server

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("torch")
    from llmsurrogate import testing

    root = tmp_path_factory.mktemp("openai_tiny")
    model = testing.build_model(root / "gpt2", "gpt2", seed=1)
    gguf = gpt2_to_gguf(model, root / "gpt2.gguf") if llama_cpp_available() else None
    return {"model": model, "gguf": gguf, "root": root}


@pytest.fixture(scope="module")
def server(tiny):
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed (pip install 'llmsurrogate[serve]'; make test installs it)")
    with LlamaServer(tiny["gguf"], log_path=tiny["root"] / "server.log") as srv:
        yield srv


@pytest.fixture(scope="module")
def vllm_server(tiny):
    """vLLM's OpenAI server on the same tiny GPT-2 (make test-vllm)."""
    if not vllm_available():
        pytest.skip("vLLM is not installed (make test-vllm runs these tests in .venv-vllm)")
    with VLLMServer(tiny["model"], log_path=tiny["root"] / "vllm-server.log") as srv:
        yield srv


@pytest.fixture(scope="module")
def hf(tiny):
    from llmsurrogate.llm.hf import TransformersBackend

    return TransformersBackend(tiny["model"], device="cpu")


@pytest.fixture()
def key_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return SECRET


def _backend(url, **kw):
    from llmsurrogate.llm.openai_backend import OpenAIBackend

    kw.setdefault("timeout", 30.0)
    # the untrained tiny model spreads its mass over all 800 tokens: by default ask for all of
    # them, so the answer spellings are seen (llama.cpp's server has no cap on k)
    kw.setdefault("top_logprobs", 800)
    return OpenAIBackend(MODEL_ALIAS, base_url=url, **kw)


def _mc_prompts(n=6, seed=3):
    from llmsurrogate import testing
    from llmsurrogate.llm.prompts import multiple_choice_prompt

    task = testing.synthetic_income_task()
    rows = testing.synthetic_census(n, seed=seed).to_dict("records")
    qs = task.question.permutations()
    return [multiple_choice_prompt(task, r, qs[i % 2]) for i, r in enumerate(rows)]


@needs_server
def test_server_tokenizes_like_the_hf_tokenizer(server, hf):
    import urllib.request

    for p in _mc_prompts(4) + ["Answer: A", " 12 345 6789 ĠÄ résumé\n\n- x"]:
        req = urllib.request.Request(server.url.rsplit("/v1", 1)[0] + "/extras/tokenize",
                                     data=json.dumps({"input": p}).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            ids = json.loads(r.read())["tokens"]
        assert ids == [0] + hf.tokenizer(p, add_special_tokens=False)["input_ids"], p[:60]


@needs_server
def test_answer_probabilities_agree_with_transformers(server, hf, tmp_path):
    from llmsurrogate.llm.scoring import option_probabilities

    prompts = _mc_prompts(6)
    be = _backend(server.url, cache=tmp_path)  # top 800: every token (truncation is tested below)
    spell = be.answer_tokens(["A", "B"])
    ids = [i for k in "AB" for _, i in spell[k]]
    lp = be.next_token_logprobs(prompts, ids)
    hf_spell = hf.answer_tokens(["A", "B"])
    texts = [s for k in "AB" for s, _ in spell[k]]
    hf_by_text = {s: i for k in "AB" for s, i in hf_spell[k]}
    ref = hf.next_token_logprobs([BOS + p for p in prompts], [hf_by_text[s] for s in texts if s in hf_by_text])
    cols = [j for j, s in enumerate(texts) if s in hf_by_text]
    got = lp[:, cols]
    seen = np.isfinite(got)
    assert seen.all(), "every answer spelling the HF tokenizer has should be in the top 800"
    diff = np.abs(got[seen] - ref[seen])
    print(f"max |Δ log p| over {seen.sum()} answer tokens: {diff.max():.2e}")
    assert diff.max() < LOGPROB_ATOL
    p_http, mass_http = option_probabilities(be, prompts, ["A", "B"])
    p_hf, mass_hf = option_probabilities(hf, [BOS + p for p in prompts], ["A", "B"])
    rep = be.topk_report(prompts)
    print(f"max |Δ P(key)|: {np.abs(p_http - p_hf).max():.2e}; keys outside the top k: {int(rep.keys_unseen.sum())}")
    full = rep.keys_unseen.to_numpy() == 0
    np.testing.assert_allclose(p_http[full], p_hf[full], atol=PROB_ATOL)
    assert (rep.unseen_bound >= 0).all() and (rep.topk_mass <= 1 + 1e-6).all()


@needs_server
def test_topk_truncation_is_reported_and_renormalised(server, hf):
    """top_logprobs=2 of 800 near-uniform tokens: the answer keys fall outside; the scores renormalise over what was seen and
    the report and the warning say so."""
    from llmsurrogate.exceptions import LLMSurrogateWarning
    from llmsurrogate.llm.scoring import option_probabilities

    prompts = _mc_prompts(4)
    be = _backend(server.url, top_logprobs=2)
    with pytest.warns(LLMSurrogateWarning, match="outside the top 2"):
        probs, mass = option_probabilities(be, prompts, ["A", "B"])
    rep = be.topk_report(prompts)
    assert (rep.keys_unseen >= 1).all()
    np.testing.assert_allclose(rep.unseen_bound, 1 - rep.topk_mass, atol=1e-9)
    assert be.ledger.topk_truncated == len(prompts)
    assert np.isfinite(probs).all() and np.allclose(probs.sum(axis=1), 1)


@needs_server
def test_prompt_logprobs_agree_with_transformers(server, hf):
    prompts = _mc_prompts(3) + ["The age is: 40 years old.\nAnswer:"]
    be = _backend(server.url)
    rag = be.prompt_logprobs(prompts)
    ref = hf.prompt_logprobs([BOS + p for p in prompts])
    worst = 0.0
    for i, p in enumerate(prompts):
        got, want = rag[i], ref[i][1:]  # the server does not echo BOS; its first token has no value
        assert len(got) == len(want) == len(hf.tokenizer(p, add_special_tokens=False)["input_ids"])
        assert np.isnan(got[0])
        d = np.abs(got[1:] - want[1:])
        worst = max(worst, float(d.max()))
    print(f"max |Δ log p| over prompt tokens: {worst:.2e}")
    assert worst < LOGPROB_ATOL


@needs_server
def test_generation_is_greedy_and_matches_transformers(server, hf):
    prompts = ["- The age is: 40 years old.\n- The sex is:", "Answer (between 0 and 1): 0."]
    be = _backend(server.url)
    got = be.generate(prompts, max_new_tokens=6)
    want = hf.generate([BOS + p for p in prompts], max_new_tokens=6)
    assert got == want


@pytest.mark.vllm
def test_vllm_server_agrees_with_transformers_keyed_by_token_id(vllm_server, hf, tmp_path):
    """Regression (issue 23): vLLM keys top_logprobs by token text, and distinct byte tokens of the
    byte-level vocabulary decode to the same text: all 800 tokens asked for come back as fewer
    keys with less mass, and the unseen-mass bound is wrong. Keyed by token id (token_ids=True)
    every token counts once: the top-800 mass is 1 and the answer log-probabilities equal the
    transformers backend's."""
    from llmsurrogate.llm.scoring import option_probabilities

    prompts = _mc_prompts(6)
    text_keyed = _backend(vllm_server.url, token_ids=False)
    spell = text_keyed.answer_tokens(["A", "B"])
    ids = [i for k in "AB" for _, i in spell[k]]
    text_keyed.next_token_logprobs(prompts, ids)
    collapsed = text_keyed.topk_report(prompts)
    assert (collapsed.k < 800).all() and (collapsed.topk_mass < 0.99).all()  # what the server does by text
    with FaultProxy(vllm_server.url) as proxy:
        be = _backend(proxy.url, token_ids=True, cache=tmp_path)
        lp = be.next_token_logprobs(prompts, ids)
        n = proxy.counts["requests"]
        assert n == len(prompts) + len(ids)  # a request per prompt, a /tokenize per spelling
        # a rerun reads the responses and the spellings' ids from the cache: no request
        again = _backend(proxy.url, token_ids=True, cache=tmp_path)
        np.testing.assert_array_equal(again.next_token_logprobs(prompts, ids), lp)
        assert proxy.counts["requests"] == n
    rep = be.topk_report(prompts)
    print(f"vLLM server top 800 by text: {int(collapsed.k.min())}-{int(collapsed.k.max())} keys, mass "
          f"{collapsed.topk_mass.min():.3f}; by token id: {int(rep.k.min())} keys, mass {rep.topk_mass.min():.6f}")
    assert (rep.k >= 800).all() and (rep.unseen_bound < 1e-4).all() and (rep.topk_mass > 1 - 1e-4).all()
    texts = [s for k in "AB" for s, _ in spell[k]]
    hf_by_text = {s: i for k in "AB" for s, i in hf.answer_tokens(["A", "B"])[k]}
    cols = [j for j, s in enumerate(texts) if s in hf_by_text]
    ref = hf.next_token_logprobs(prompts, [hf_by_text[texts[j]] for j in cols])
    got = lp[:, cols]
    assert np.isfinite(got).all() and np.isneginf(np.delete(lp, cols, axis=1)).all()
    d = np.abs(got - ref).max()
    p_http, _ = option_probabilities(be, prompts, ["A", "B"])
    p_hf, _ = option_probabilities(hf, prompts, ["A", "B"])
    dp = np.abs(p_http - p_hf).max()
    print(f"vLLM server vs transformers: max |Δ log p| {d:.2e} (atol {LOGPROB_ATOL}), max |Δ P(key)| {dp:.2e} "
          f"(atol {PROB_ATOL})")
    assert d < LOGPROB_ATOL and dp < PROB_ATOL


@pytest.mark.vllm
def test_vllm_server_token_ids_survive_faults_on_tokenize(vllm_server, tmp_path):
    """The spellings' ids come through /tokenize with the same retries as every request."""
    prompts = _mc_prompts(3, seed=61)
    want = _backend(vllm_server.url, token_ids=True)
    ids = [i for k in "AB" for _, i in want.answer_tokens(["A", "B"])[k]]
    ref = want.next_token_logprobs(prompts, ids)
    with FaultProxy(vllm_server.url, faults={"500": 0.4, "truncated": 0.2}, seed=3) as proxy:
        be = _backend(proxy.url, token_ids=True, cache=tmp_path, backoff=0.02)
        got = be.next_token_logprobs(prompts, ids)
        assert proxy.counts["500"] + proxy.counts["truncated"] >= 2
    assert be._server_ids == want._server_ids and len(be._server_ids) == len(ids)
    assert be.ledger.retries.get("tokenize", 0) >= 1
    np.testing.assert_array_equal(got, ref)


@pytest.mark.vllm
def test_vllm_server_prompt_logprobs_and_generation_agree_with_transformers(vllm_server, hf):
    """Echo: vLLM adds no BOS for this tokenizer and gives the first prompt token no value."""
    prompts = _mc_prompts(3) + ["The age is: 40 years old.\nAnswer:"]
    be = _backend(vllm_server.url)
    rag = be.prompt_logprobs(prompts)
    ref = hf.prompt_logprobs(prompts)
    worst = 0.0
    for i in range(len(prompts)):
        assert len(rag[i]) == len(ref[i]) and np.isnan(rag[i][0])
        worst = max(worst, float(np.abs(rag[i][1:] - ref[i][1:]).max()))
    print(f"vLLM server echo vs transformers: max |Δ log p| over prompt tokens {worst:.2e} (atol {LOGPROB_ATOL})")
    assert worst < LOGPROB_ATOL
    gen = ["- The age is: 40 years old.\n- The sex is:", "Answer (between 0 and 1): 0."]
    assert be.generate(gen, max_new_tokens=6) == hf.generate(gen, max_new_tokens=6)


@needs_server
def test_chat_endpoint_agrees_with_transformers_on_the_rendered_prompt(server, hf):
    """The chat path (``logprobs.content[0].top_logprobs``) against TransformersBackend on the
    prompt the server renders with the model's ChatML template (llama-cpp-python's template
    renderer adds no BOS: the template is taken to hold its own special tokens)."""
    prompts = _mc_prompts(3, seed=41)
    chat = _backend(server.url, endpoint="chat")
    spell = chat.answer_tokens(["A", "B"])
    texts = [s for k in "AB" for s, _ in spell[k]]
    hf_ids = {s: i for k in "AB" for s, i in hf.answer_tokens(["A", "B"])[k]}
    cols = [j for j, s in enumerate(texts) if s in hf_ids]
    a = chat.next_token_logprobs(prompts, [i for k in "AB" for _, i in spell[k]])[:, cols]
    rendered = [f"<|im_start|>user\n{p}<|im_end|>\n<|im_start|>assistant\n" for p in prompts]
    b = hf.next_token_logprobs(rendered, [hf_ids[texts[j]] for j in cols])
    assert np.isfinite(a).all()
    np.testing.assert_allclose(a, b, atol=LOGPROB_ATOL)


@needs_server
def test_token_ids_needs_a_vllm_server(server):
    """llama.cpp's server has no /tokenize: token_ids=True is refused by name, before any completion."""
    from llmsurrogate.llm.openai_backend import CapabilityError

    be = _backend(server.url, token_ids=True)
    ids = [i for k in "AB" for _, i in be.answer_tokens(["A", "B"])[k]]
    with pytest.raises(CapabilityError, match="token_ids=True needs a vLLM server"):
        be.next_token_logprobs(_mc_prompts(2), ids)
    assert be.ledger.responses == 0


@needs_server
def test_server_kind_is_asked_once_and_llama_cpp_keeps_text_keys(server, tmp_path):
    """Issue 34, item 6: token_ids=None (the default) asks the model list once (GET /models:
    llama.cpp's cards say owned_by "me", so text keys), stores the answer with the responses (a
    rerun asks nothing), and a text-keyed identity is the one token_ids=False has (the scoring
    cache's keys of earlier runs stay valid). topk_summary reports the unseen-mass bound."""
    prompts = _mc_prompts(4, seed=71)
    with FaultProxy(server.url) as proxy:
        be = _backend(proxy.url, cache=tmp_path, top_logprobs=5)
        assert be.uses_token_ids(ask=False) is None and proxy.counts["get"] == 0  # making it sends nothing
        ids = [i for k in "AB" for _, i in be.answer_tokens(["A", "B"])[k]]
        with pytest.warns(Warning, match="outside the top 5"):
            lp = be.next_token_logprobs(prompts, ids)
        assert be.token_ids is False and proxy.counts["get"] == 1
        assert be.identity == _backend(proxy.url, top_logprobs=5, token_ids=False).identity
        assert "token_ids" not in be.identity
        again = _backend(proxy.url, cache=tmp_path, top_logprobs=5)
        assert all(again.is_cached(prompts))  # the stored answer says how they were keyed: no request
        with pytest.warns(Warning, match="outside the top 5"):
            np.testing.assert_array_equal(again.next_token_logprobs(prompts, ids), lp)
        assert proxy.counts["get"] == 1 and proxy.counts["requests"] == len(prompts)
    rep = be.topk_report(prompts)
    summary = be.topk_summary()
    assert summary["keyed_by"] == "token text" and summary["prompts"] == len(prompts)
    assert summary["unseen_bound_max"] == pytest.approx(float(rep.unseen_bound.max()))
    assert summary["unseen_bound_max"] == pytest.approx(1 - float(rep.topk_mass.min()))
    assert summary["k_min"] == 5 and 0 < summary["unseen_bound_max"] < 1


@needs_server
def test_cli_token_ids_flag_and_unseen_bound_in_run_json(server, tmp_path):
    """The command line: run.json's topk says how the log-probabilities were keyed and the
    unseen-mass bound (equal to the bound a text-keyed backend reports for the same prompts);
    --token-ids forces id keys (llama.cpp has no /tokenize: refused by name), --no-token-ids text."""
    from llmsurrogate import testing
    from llmsurrogate.llm.openai_backend import OpenAIBackend
    from llmsurrogate.llm.prompts import multiple_choice_prompt
    from llmsurrogate.llm.tasks import acs_income_task

    frame = testing.synthetic_census(3, seed=17)
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False)
    out = subprocess.run(_score_args(server.url, data, tmp_path / "c1", tmp_path / "o1"), env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    topk = json.loads((tmp_path / "o1" / "run.json").read_text())["topk"]
    task = acs_income_task()
    prompts = [multiple_choice_prompt(task, r, q) for r in frame.to_dict("records") for q in task.question.permutations()]
    ref = OpenAIBackend(MODEL_ALIAS, base_url=server.url, token_ids=False)
    with pytest.warns(Warning):
        ref.next_token_logprobs(prompts, [i for _, i in ref.answer_tokens(["A"])["A"]])
    rep = ref.topk_report(prompts)
    assert topk["keyed_by"] == "token text" and topk["prompts"] == len(prompts) and topk["top_logprobs"] == 20
    assert topk["unseen_bound_max"] == pytest.approx(float(rep.unseen_bound.max()), rel=1e-6)
    assert "unseen" in out.stdout and "keyed by token text" in out.stdout
    forced = subprocess.run(_score_args(server.url, data, tmp_path / "c2", tmp_path / "o2", "--token-ids"),
                            env=_env(), capture_output=True, text=True, timeout=300)
    assert forced.returncode == 1 and "needs a vLLM server" in forced.stderr, forced.stderr[-2000:]
    off = subprocess.run(_score_args(server.url, data, tmp_path / "c3", tmp_path / "o3", "--no-token-ids"),
                         env=_env(), capture_output=True, text=True, timeout=300)
    assert off.returncode == 0, off.stderr[-2000:]
    assert json.loads((tmp_path / "o3" / "run.json").read_text())["topk"]["keyed_by"] == "token text"


@pytest.mark.vllm
def test_vllm_server_is_keyed_by_token_id_by_default(vllm_server, tmp_path):
    """Issue 34, item 6: against vLLM's server the default keys by token id (its model list says
    owned_by "vllm"): every one of the 800 tokens counts once (mass 1) where text keys merge the
    byte tokens (673 keys, 0.84 of the mass); the command line does the same, --no-token-ids not."""
    prompts = _mc_prompts(4, seed=81)
    be = _backend(vllm_server.url)
    ids = [i for k in "AB" for _, i in be.answer_tokens(["A", "B"])[k]]
    be.next_token_logprobs(prompts, ids)
    rep = be.topk_report(prompts)
    assert be.token_ids is True and be.identity["token_ids"] is True
    assert (rep.k >= 800).all() and (rep.topk_mass > 1 - 1e-4).all()
    text = _backend(vllm_server.url, token_ids=False)
    text.next_token_logprobs(prompts, ids)
    collapsed = text.topk_report(prompts)
    print(f"vLLM server, default: {int(rep.k.min())} keys, mass {rep.topk_mass.min():.6f}; text keys: "
          f"{int(collapsed.k.min())} keys, mass {collapsed.topk_mass.min():.3f}")
    assert (collapsed.k < 800).all() and (collapsed.topk_mass < 0.99).all()
    from llmsurrogate import testing

    data = tmp_path / "rows.csv"
    testing.synthetic_census(2, seed=19).to_csv(data, index=False)
    for flag, keyed in (((), "token id"), (("--no-token-ids",), "token text")):
        out = subprocess.run(_score_args(vllm_server.url, data, tmp_path / f"c{len(flag)}", tmp_path / f"o{len(flag)}",
                                         *flag), env=_env(), capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        assert json.loads((tmp_path / f"o{len(flag)}" / "run.json").read_text())["topk"]["keyed_by"] == keyed


@needs_server
def test_chat_endpoint_cannot_echo(server):
    from llmsurrogate.llm.openai_backend import CapabilityError

    be = _backend(server.url, endpoint="chat")
    with pytest.raises(CapabilityError, match="completions endpoint"):
        be.prompt_logprobs(["x y"])


@needs_server
def test_risk_scores_end_to_end_and_rerun_sends_nothing(server, hf, tmp_path):
    from llmsurrogate import risk, testing
    from llmsurrogate.llm.cache import Cache

    task = testing.synthetic_income_task()
    frame = testing.synthetic_census(8, seed=5)
    with FaultProxy(server.url) as proxy:
        be = _backend(proxy.url, cache=tmp_path / "c")
        cache = Cache(tmp_path / "c")
        res = risk.risk_scores(frame, task, be, "multiple_choice", cache=cache)
        first = proxy.counts["requests"]
        assert first == 16  # 8 rows x 2 answer orders
        be2 = _backend(proxy.url, cache=tmp_path / "c")
        res2 = risk.risk_scores(frame, task, be2, "multiple_choice", cache=Cache(tmp_path / "c"))
        assert proxy.counts["requests"] == first  # finished job: no request at all
        be3 = _backend(proxy.url, cache=tmp_path / "c")  # scoring cache gone, responses kept: still none
        risk.risk_scores(frame, task, be3, "multiple_choice", cache=None)
        assert proxy.counts["requests"] == first and be3.ledger.cached == 16
    np.testing.assert_array_equal(res.table["score"], res2.table["score"])
    assert res.table["score"].between(0, 1).all()


@needs_server
def test_faults_every_prompt_answered_once_and_right(server, tmp_path):
    _faults_case(server.url, tmp_path)


@pytest.mark.vllm
def test_vllm_server_faults_every_prompt_answered_once_and_right(vllm_server, tmp_path):
    _faults_case(vllm_server.url, tmp_path, token_ids=True)


def _faults_case(url, tmp_path, **kw):
    prompts = _mc_prompts(24, seed=11)
    clean = _backend(url, top_logprobs=800, **kw)
    ids = [i for k in "AB" for _, i in clean.answer_tokens(["A", "B"])[k]]
    want = clean.next_token_logprobs(prompts, ids)
    faults = {"429": 0.12, "500": 0.1, "slow": 0.06, "truncated": 0.1, "drop": 0.1}
    with FaultProxy(url, faults=faults, retry_after=0.3, slow_seconds=2.5, seed=7) as proxy:
        be = _backend(proxy.url, cache=tmp_path, timeout=1.5, backoff=0.05, max_backoff=0.5, concurrency=4,
                      top_logprobs=800, **kw)
        be._server_ids = dict(clean._server_ids)  # token_ids: the spellings' ids (/tokenize) are not under test here
        got = be.next_token_logprobs(prompts, ids)
        log = list(proxy.log)
        counts = dict(proxy.counts)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got[:, [0, 1, 3, 4]]).all()  # "\nA", "\nB" are no single token here
    injected = sum(counts.get(f, 0) for f in faults)
    assert injected >= 10, counts
    led = be.ledger.as_dict()
    assert led["retries_total"] == injected, (led, counts)
    assert led["retries"].get("429", 0) == counts.get("429", 0)
    assert led["responses"] == len(prompts)
    # Retry-After honoured: the next request for a prompt comes >= 0.3 s after its 429
    n429 = 0
    for k, (t, p, outcome) in enumerate(log):
        if outcome == "429":
            n429 += 1
            later = [t2 for t2, p2, o2 in log[k + 1:] if p2 == p and o2 == "arrive"]
            assert later and later[0] - t >= 0.29
    assert n429 == counts["429"]
    # exactly one stored response per prompt
    with sqlite3.connect(tmp_path / "llm_cache.sqlite") as db:
        n = db.execute("SELECT COUNT(*) FROM outputs WHERE kind='openai_response'").fetchone()[0]
    assert n == len(set(prompts))
    assert all(be.is_cached(prompts))


@needs_server
def test_budget_stops_cleanly_and_resumes(server, tmp_path):
    _budget_case(server.url, tmp_path)


@pytest.mark.vllm
def test_vllm_server_budget_stops_cleanly_and_resumes(vllm_server, tmp_path):
    _budget_case(vllm_server.url, tmp_path, token_ids=True)


def _budget_case(url, tmp_path, **kw):
    prompts = _mc_prompts(12, seed=21)
    ids_of = _backend(url, **kw)  # token_ids: the spellings' ids (/tokenize) first, outside the counted run
    if kw.get("token_ids"):
        for s, _ in [x for k in "AB" for x in ids_of.answer_tokens(["A", "B"])[k]]:
            ids_of._id_key(s)
    with FaultProxy(url) as proxy:
        be = _backend(proxy.url, cache=tmp_path, concurrency=3, max_tokens=1200, prices={"input": 1.0, "output": 2.0},
                      **kw)
        be._server_ids = dict(ids_of._server_ids)
        seen = []  # the ledger as the progress bar gets it: responses, tokens, cost in cents
        be.progress = lambda label, done, total: seen.append((label, done, total))
        ids = [i for k in "AB" for _, i in be.answer_tokens(["A", "B"])[k]]
        with pytest.raises(BudgetExceededError, match="budget max_tokens=1200 reached") as ei:
            be.next_token_logprobs(prompts, ids)
        last = {label: (done, total) for label, done, total in seen}
        assert last["HTTP responses"][0] == be.ledger.responses > 0
        assert last["tokens used"] == (be.ledger.tokens, 1200)
        assert last["cost (cents)"] == (round(100 * be.ledger.cost), None) and be.ledger.cost > 0
        msg = str(ei.value)
        assert "in the cache" in msg and "resume" in msg
        assert be.ledger.tokens <= 1200
        done = sum(be.is_cached(prompts))
        assert 0 < done < len(prompts)
        assert proxy.counts["requests"] == done
        be2 = _backend(proxy.url, cache=tmp_path, concurrency=3, **kw)
        be2._server_ids = dict(ids_of._server_ids)
        out = be2.next_token_logprobs(prompts, ids)
        assert proxy.counts["requests"] == len(prompts)  # no prompt asked twice
        assert max(proxy.prompt_requests.values()) == 1
        assert be2.ledger.cached == done
    assert np.isfinite(out[:, [0, 1, 3, 4]]).all()


def _score_args(url, data, cache, out, *extra):
    return [sys.executable, "-m", "llmsurrogate.cli", "risk", "--data", str(data), "--task", "ACSIncome",
            "--backend", "openai", "--model", MODEL_ALIAS, "--base-url", url, "--cache", str(cache), "--out", str(out),
            "--n-boot", "0", "--no-plot", *extra]


@needs_server
def test_kill9_cli_then_rerun_repeats_no_finished_prompt(server, tmp_path):
    _kill_case(server.url, tmp_path)


@pytest.mark.vllm
def test_vllm_server_kill9_cli_then_rerun_repeats_no_finished_prompt(vllm_server, tmp_path):
    _kill_case(vllm_server.url, tmp_path)


def _kill_case(url, tmp_path):
    from llmsurrogate import testing
    from llmsurrogate.llm.openai_backend import OpenAIBackend
    from llmsurrogate.llm.prompts import multiple_choice_prompt
    from llmsurrogate.llm.tasks import acs_income_task

    frame = testing.synthetic_census(20, seed=8)
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False)
    cache = tmp_path / "cache"
    with FaultProxy(url, latency=0.25) as proxy:
        proc = subprocess.Popen(_score_args(proxy.url, data, cache, tmp_path / "out1", "--concurrency", "2"),
                                env=_env(OPENAI_API_KEY=SECRET), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + 120
        while proxy.counts["delivered"] < 12 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        task = acs_income_task()
        rows = frame.to_dict("records")
        prompts = [multiple_choice_prompt(task, r, q) for r in rows for q in task.question.permutations()]
        probe = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=cache)
        finished = {p for p, c in zip(prompts, probe.is_cached(prompts)) if c}
        delivered_before = set(proxy.prompt_delivered)
        assert len(finished) >= 10 and len(finished) < len(prompts)  # 12 delivered, 2 in flight at most
        assert len(delivered_before - finished) <= 2  # at most the requests in flight at the kill
        proxy.reset()
        out = subprocess.run(_score_args(proxy.url, data, cache, tmp_path / "out2"), env=_env(OPENAI_API_KEY=SECRET),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        asked_again = set(proxy.prompt_requests)
    assert not (asked_again & finished)
    assert asked_again | finished == set(prompts)
    run = json.loads((tmp_path / "out2" / "run.json").read_text())
    assert run["ledger"]["cached_responses"] == len(finished)
    scores = (tmp_path / "out2" / "scores.csv").read_text()
    assert len(scores.splitlines()) == len(frame) + 1


@needs_server
def test_api_key_never_written_or_raised(server, tmp_path, key_env):
    from llmsurrogate.llm.openai_backend import OpenAIBackend

    prompts = _mc_prompts(4, seed=31)
    # a hostile server quotes the Authorization header back in its error
    with FaultProxy(server.url, faults={"echo_auth": 1.0}, max_faults_per_prompt=None) as proxy:
        be = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=tmp_path / "c", max_retries=1, backoff=0.01)
        assert SECRET not in repr(be) and SECRET not in json.dumps(be.identity)
        ids = [i for k in "AB" for _, i in be.answer_tokens(["A", "B"])[k]]
        with pytest.raises(RequestFailedError) as ei:
            be.next_token_logprobs(prompts, ids)
        text = str(ei.value) + repr(ei.value) + repr(ei.value.__cause__) + repr(ei.value.__context__)
        import traceback

        text += "".join(traceback.format_exception(ei.value))
        assert SECRET not in text and "***" in text
        assert proxy.counts["echo_auth"] >= 2  # the key did reach the (hostile) server: it was asked
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(be)
    # a full CLI run: nothing it writes holds the key
    from llmsurrogate import testing

    data = tmp_path / "rows.csv"
    testing.synthetic_census(4, seed=9).to_csv(data, index=False)
    with FaultProxy(server.url, faults={"500": 0.3}) as proxy:
        out = subprocess.run(_score_args(proxy.url, data, tmp_path / "cache", tmp_path / "out", "--price-input", "1",
                                         "--price-output", "2"),
                             env=_env(OPENAI_API_KEY=SECRET), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert SECRET not in out.stdout + out.stderr
    written = [f for d in (tmp_path / "cache", tmp_path / "out", tmp_path / "c") for f in d.rglob("*") if f.is_file()]
    assert len(written) >= 4
    for f in written:
        assert SECRET.encode() not in f.read_bytes(), f


@needs_server
def test_llm_predictor_ess_through_http(server, tmp_path):
    from llmsurrogate import ess, testing
    from llmsurrogate.llm.scoring import LLMPredictor

    task = testing.synthetic_income_task()
    frame = testing.synthetic_census(130, seed=12).drop(columns="p_true").dropna().reset_index(drop=True)
    n_prompts = 2 * len(frame)  # both answer orders
    with FaultProxy(server.url, faults={"500": 0.05, "429": 0.05}, retry_after=0.05) as proxy:
        be = _backend(proxy.url, cache=tmp_path, backoff=0.02)
        pred = LLMPredictor(be, task, cache=tmp_path)
        res = ess.equivalent_sample_size(frame, "PINCP>50000", pred, features=["AGEP", "SCHL", "WKHP", "SEX"],
                                         algorithm="lasso", grid=[20, 40], seed=0)
        n = proxy.counts["requests"]
        # identical prompts (rows equal on the task's four features) are asked once
        assert be.ledger.responses == len(proxy.prompt_delivered) <= n_prompts
        assert max(proxy.prompt_delivered.values()) == 1
        assert n == be.ledger.responses + be.ledger.as_dict()["retries_total"]
        again = LLMPredictor(_backend(proxy.url, cache=tmp_path), task, cache=tmp_path).predict(frame)
        assert proxy.counts["requests"] == n
    np.testing.assert_array_equal(again, pred.predict(frame))
    assert res.lower_bound >= 0 and np.isfinite(res.llm_error)


@needs_server
def test_score_table_takes_the_backend_description(server, tmp_path, key_env):
    """What R's risk_scores(backend = "openai", backend_options = list(...)) calls."""
    from llmsurrogate import testing
    from llmsurrogate.risk._scores import score_table

    frame = testing.synthetic_census(5, seed=13)
    opts = {"base_url": server.url, "concurrency": 2, "prices": {"input": 1.0, "output": 1.0}, "max_cost": 1.0}
    t = score_table(frame, "ACSIncome", MODEL_ALIAS, backend="openai", cache=str(tmp_path), backend_options=opts)
    assert len(t) == 5 and t["score"].between(0, 1).all()
    with pytest.raises(ValueError, match="unknown option"):
        score_table(frame, "ACSIncome", MODEL_ALIAS, backend="openai", backend_options={"api_key": SECRET})


@needs_server
def test_lookahead_lap_through_http(server, hf, tmp_path):
    """LAP (Min-K% Prob) of prompts scored by the served model equals LAP from TransformersBackend's
    per-token values on the same tokens. llama-cpp-python's echo gives the first prompt token no
    value even after BOS, so both sides score tokens 2..n."""
    from llmsurrogate.llm.base import RaggedLogprobs
    from llmsurrogate.lookahead import lap, lap_from_logprobs

    texts = _mc_prompts(4, seed=51) + ["Apple Inc. reported record quarterly revenue of $90 billion."]
    with FaultProxy(server.url) as proxy:
        be = _backend(proxy.url, cache=tmp_path)
        got = lap(texts, be, cache=tmp_path)
        n = proxy.counts["requests"]
        assert n == len(texts)
        again = lap(texts, _backend(proxy.url, cache=tmp_path), k=0.5, cache=tmp_path)  # another k: no request
        assert proxy.counts["requests"] == n and np.isfinite(again).all()
    ref = hf.prompt_logprobs([BOS + t for t in texts])
    vals = [np.concatenate([[np.nan], ref[i][2:]]).astype(np.float32) for i in range(len(texts))]
    lens = [len(v) for v in vals]
    rag = RaggedLogprobs(values=np.concatenate(vals), offsets=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
                         token_ids=np.zeros(sum(lens), np.int32))
    want = lap_from_logprobs(rag)
    np.testing.assert_allclose(got, want, rtol=2e-3)
