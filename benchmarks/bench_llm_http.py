"""OpenAIBackend throughput over HTTP (issue 14): next-token log-probabilities of multiple-choice
prompts against llama.cpp's server (llama-cpp-python, the ``serve`` extra) serving the tiny GPT-2
test model, through the test suite's proxy (tests/_fault_proxy.py) adding 200 ms of latency to
every request, as a hosted API would.

Timed through benchmarks/_harness.py, interleaved rounds after a warm-up:

* **ours**: ``OpenAIBackend.next_token_logprobs`` at the default concurrency (8), each round with a
  new backend on a fresh, empty on-disk cache (so no round reads an earlier round's responses; the
  writes are part of our time);
* **openai loop** (the peer): what a user writes by hand with the official ``openai`` client: one
  ``client.completions.create`` per prompt, one at a time, with the same parameters
  (``max_tokens=1, temperature=0, seed=0, logprobs=20``), reading the answer tokens' log-probabilities
  from the first position's ``top_logprobs``; no cache;
* **ours, concurrency 1** (extra side): our backend one request at a time, fresh cache each round.

The two paths' log-probabilities are compared (max abs difference). Two cache costs, ours only:
a rerun that reads every response back from a populated cache (no request; per prompt) and the
write of one response (one SQLite transaction).

    python benchmarks/bench_llm_http.py [--prompts 64] [--latency 0.2] [--rounds 5] [--quick]

Writes ``benchmarks/results/llm_http.json`` (``--quick``: 24 prompts, 2 rounds,
``benchmarks/quick/llm_http.json``). Without llama-cpp-python (``make build-test`` or
``make wheelhouse`` installs it) it prints why and exits 0 without writing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _harness import Run, add_common_args, result_path, threads  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap)
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.2)
    a = ap.parse_args()
    if a.quick:
        a.prompts = min(a.prompts, 24)
    rounds = a.rounds or (2 if a.quick else 5)
    threads(a.threads or 1)  # the server's and the client's threads: the same server serves both sides

    from _llama_server import MODEL_ALIAS, LlamaServer, gpt2_to_gguf, llama_cpp_available

    if not llama_cpp_available():
        print("bench_llm_http: skipped: llama-cpp-python (the `serve` extra) is not installed in this venv; "
              "`make build-test` (or `make wheelhouse` and the serve extra) installs it", flush=True)
        return 0
    try:
        import openai
    except ImportError:
        print("bench_llm_http: skipped: the official `openai` client (the `openai` extra) is not installed", flush=True)
        return 0
    from _fault_proxy import FaultProxy

    from llmsurrogate import LLMSurrogateWarning, testing
    from llmsurrogate.llm.openai_backend import OpenAIBackend
    from llmsurrogate.llm.prompts import multiple_choice_prompt

    # the random tiny model puts the answer tokens outside the top 20 on every prompt: the warning
    # saying so would repeat on every call (the peer reads the same top 20)
    warnings.filterwarnings("ignore", category=LLMSurrogateWarning)
    task = testing.synthetic_income_task()
    rows = testing.synthetic_census(a.prompts, seed=2).to_dict("records")
    qs = task.question.permutations()
    prompts = [multiple_choice_prompt(task, r, qs[i % 2]) for i, r in enumerate(rows)]
    run = Run("llm_http", quick=a.quick, python_packages=["openai", "llama_cpp_python"],
              notes=f"{len(prompts)} multiple-choice prompts, next-token log-probabilities (max_tokens=1, logprobs=20) "
                    f"from llama.cpp's server (tiny GPT-2, 1 thread) behind a proxy adding {a.latency * 1e3:.0f} ms per "
                    "request. ours = OpenAIBackend at its default concurrency (8), a new backend on a fresh empty cache "
                    "every round (writes included); openai loop = the official openai client, one "
                    "completions.create per prompt, same parameters, no cache; ours_concurrency_1 = our backend one "
                    "request at a time. Cache rows: ours only (no peer has a cache).")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = testing.build_model(tmp / "gpt2", "gpt2", seed=1)
        gguf = gpt2_to_gguf(model, tmp / "gpt2.gguf")
        with LlamaServer(gguf, threads=1) as srv, FaultProxy(srv.url, latency=a.latency) as proxy:
            probe = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url)
            spellings = probe.answer_tokens(["A", "B"])
            ids = [i for k in "AB" for _, i in spellings[k]]
            texts = [s for k in "AB" for s, _ in spellings[k]]
            fresh = itertools.count()

            def ours_at(conc):
                def fn():
                    kw = {} if conc is None else {"concurrency": conc}
                    be = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=tmp / f"cache_{next(fresh)}", **kw)
                    out = be.next_token_logprobs(prompts, ids)
                    fn.ledger = be.ledger.as_dict()
                    fn.concurrency = be.concurrency
                    return out
                return fn

            client = openai.OpenAI(api_key="no-key", base_url=proxy.url, max_retries=0)

            def openai_loop():
                out = np.full((len(prompts), len(ids)), -np.inf, dtype=np.float32)
                for i, p in enumerate(prompts):
                    resp = client.completions.create(model=MODEL_ALIAS, prompt=p, max_tokens=1, temperature=0.0,
                                                     seed=0, logprobs=20)
                    top = resp.choices[0].logprobs.top_logprobs[0]
                    for j, s in enumerate(texts):
                        if s in top:
                            out[i, j] = top[s]
                return out

            ours, ours_c1 = ours_at(None), ours_at(1)
            a_ours, a_peer = ours(), openai_loop()  # also the warm-up of connections and the server
            fin = np.isfinite(a_ours) & np.isfinite(a_peer)
            same_support = bool(np.array_equal(np.isfinite(a_ours), np.isfinite(a_peer)))
            max_diff = float(np.max(np.abs(a_ours[fin] - a_peer[fin]))) if fin.any() else None
            print(f"agreement: same tokens seen {same_support}, max abs logprob difference {max_diff}", flush=True)
            n0 = proxy.counts["requests"]
            run.compare(f"{len(prompts)} prompts, +{a.latency * 1e3:.0f} ms per request", ours, openai_loop,
                        peer_name="openai loop", extra={"ours_concurrency_1": ours_c1}, rounds=rounds, warmup=0,
                        prompts=len(prompts), latency_added_s=a.latency, concurrency_ours=ours.concurrency,
                        threads_note="server 1 thread; ours 8 requests in flight, the loop and ours_concurrency_1 one")
            requests = proxy.counts["requests"] - n0
            assert requests == 3 * rounds * len(prompts), requests  # every round asked every prompt: no cache hit

            # cache costs (ours only): a rerun reading every response from a populated cache ...
            warm_dir = tmp / "cache_warm"
            OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=warm_dir).next_token_logprobs(prompts, ids)
            n1 = proxy.counts["requests"]
            reader = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=warm_dir)  # reads the disk cache each call
            read = run.compare(f"rerun of {len(prompts)} prompts from the cache (no request)",
                               lambda: reader.next_token_logprobs(prompts, ids), rounds=max(rounds, 3), warmup=1)
            assert proxy.counts["requests"] == n1
            # ... and the write of one response (one SQLite transaction)
            be = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=tmp / "cache_write")
            resp = {"choices": [{"text": " A", "logprobs": {"top_logprobs": [{" A": -0.5}]}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 1}}
            keys = itertools.count()
            write = run.compare("cache write of one response", lambda: be._store(f"k{next(keys)}", resp),
                                rounds=max(rounds, 3), warmup=5, inner=200)
    run.extra.update({
        "prompts": len(prompts), "latency_added_s": a.latency,
        "agreement": {"same_tokens_in_top_k": same_support, "max_abs_logprob_diff_ours_vs_openai_loop": max_diff},
        "ledger_one_run_ours": ours.ledger,
        "cache_read_ms_per_prompt": 1e3 * read["sides"]["ours"]["min_s"] / len(prompts),
        "cache_write_ms_per_response": 1e3 * write["sides"]["ours"]["min_s"],
    })
    run.write(result_path("llm_http", a.quick, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
