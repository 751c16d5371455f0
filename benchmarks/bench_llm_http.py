"""OpenAIBackend throughput over HTTP (issue 14): prompts per second against llama.cpp's server
(llama-cpp-python, the ``serve`` extra) serving the tiny GPT-2 test model, through the test suite's
proxy adding 200 ms of latency to every request -- the default concurrency against one request at
a time (expect close to the concurrency factor while the server is not the bottleneck) -- and the
cache's overhead per prompt (a rerun that reads every response back, and the time of one stored
write).

The server computes one prompt in a few milliseconds, so with 200 ms added the latency dominates, as
it does with a hosted API. Writes ``benchmarks/results/llm_http.json``::

    python benchmarks/bench_llm_http.py [--prompts 64] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "llm_http.json"
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()

    from _fault_proxy import FaultProxy
    from _llama_server import MODEL_ALIAS, LlamaServer, gpt2_to_gguf

    import importlib.metadata as md

    from llmsurrogate import testing
    from llmsurrogate.llm.openai_backend import OpenAIBackend
    from llmsurrogate.llm.prompts import multiple_choice_prompt

    task = testing.synthetic_income_task()
    rows = testing.synthetic_census(a.prompts, seed=2).to_dict("records")
    qs = task.question.permutations()
    prompts = [multiple_choice_prompt(task, r, qs[i % 2]) for i, r in enumerate(rows)]
    load0 = os.getloadavg()
    res = {"prompts": len(prompts), "latency_added_s": a.latency, "machine": {"cpus": os.cpu_count(),
           "platform": platform.platform()},
           "versions": {d: md.version(d) for d in ("llama_cpp_python", "openai", "llmsurrogate")}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = testing.build_model(tmp / "gpt2", "gpt2", seed=1)
        gguf = gpt2_to_gguf(model, tmp / "gpt2.gguf")
        with LlamaServer(gguf, threads=1) as srv, FaultProxy(srv.url, latency=a.latency) as proxy:
            probe = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url)
            ids = [i for k in "AB" for _, i in probe.answer_tokens(["A", "B"])[k]]
            probe.next_token_logprobs(prompts[:2], ids)  # warm-up: connections, server's first pass
            runs = {}
            for label, conc in (("concurrency_1", 1), ("concurrency_default", None)):
                kw = {} if conc is None else {"concurrency": conc}
                cache = tmp / f"cache_{label}"
                be = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=cache, **kw)
                t0 = time.perf_counter()
                be.next_token_logprobs(prompts, ids)
                dt = time.perf_counter() - t0
                # rerun: every response read back from the cache, no request
                n0 = proxy.counts["requests"]
                be2 = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=cache, **kw)
                t1 = time.perf_counter()
                be2.next_token_logprobs(prompts, ids)
                dt_rerun = time.perf_counter() - t1
                assert proxy.counts["requests"] == n0
                runs[label] = {"concurrency": be.concurrency, "seconds": round(dt, 3),
                               "prompts_per_s": round(len(prompts) / dt, 2),
                               "rerun_from_cache_seconds": round(dt_rerun, 4),
                               "rerun_ms_per_prompt": round(1000 * dt_rerun / len(prompts), 3),
                               "ledger": be.ledger.as_dict()}
            # the cost of storing one response (one SQLite transaction), measured on its own
            be = OpenAIBackend(MODEL_ALIAS, base_url=proxy.url, cache=tmp / "cache_write")
            resp = {"choices": [{"text": " A", "logprobs": {"top_logprobs": [{" A": -0.5}]}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 1}}
            n = 200
            t0 = time.perf_counter()
            for i in range(n):
                be._store(f"k{i}", resp)
            write_ms = 1000 * (time.perf_counter() - t0) / n
    speedup = runs["concurrency_default"]["prompts_per_s"] / runs["concurrency_1"]["prompts_per_s"]
    res.update(runs=runs, speedup=round(speedup, 2), cache_write_ms_per_response=round(write_ms, 3),
               loadavg_before=[round(x, 2) for x in load0], loadavg_after=[round(x, 2) for x in os.getloadavg()])
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: res[k] for k in ("speedup", "cache_write_ms_per_response")}, indent=1))
    for k, v in runs.items():
        print(k, v["concurrency"], v["prompts_per_s"], "prompts/s; rerun", v["rerun_ms_per_prompt"], "ms/prompt")


if __name__ == "__main__":
    main()
