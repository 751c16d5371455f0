"""TransformersBackend throughput on a CUDA GPU against the same machine's CPU (same process).

A randomly initialised Llama (``--hidden``/``--layers``; weights do not matter for speed) with the
offline tokenizer of ``llmsurrogate.testing`` scores multiple-choice ACSIncome prompts (both answer
orders, as ``risk_scores`` does) and computes full prompt log-probs (the Min-K% input). Reported:
prompts per second for the CPU (float32) and the GPU (float32, bfloat16), batch sizes 16 and 64,
with and without shared-prefix reuse, plus the largest difference from the CPU's numbers.

    python benchmarks/bench_llm_gpu.py [--rows 500] [--hidden 1024] [--layers 12]

Writes ``benchmarks/results/llm_gpu.json`` (or ``--out``). Needs a CUDA GPU and the ``hf`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--cpu-rows", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--batch-sizes", default="16,64")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "llm_gpu.json"))
    a = ap.parse_args()
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _harness import loadavg, stamp

    load0 = loadavg()

    import torch
    import transformers

    import llmsurrogate
    from llmsurrogate import datasets, testing
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.prompts import multiple_choice_prompt
    from llmsurrogate.llm.tasks import acs_income_task

    if not torch.cuda.is_available():
        raise SystemExit("bench_llm_gpu.py needs a CUDA GPU")
    task = acs_income_task()
    rows = datasets.load_acs_income_rows()
    rows = rows.sample(n=a.rows, replace=len(rows) < a.rows, random_state=0).to_dict("records")
    prompts = [multiple_choice_prompt(task, r, q) for r in rows for q in task.question.permutations()]
    with tempfile.TemporaryDirectory() as tmp:
        path = testing.build_model(Path(tmp) / "m", "llama", hidden=a.hidden, layers=a.layers,
                                   heads=max(2, a.hidden // 64), seed=0)
        n_params = None
        res = {"info": {"machine": platform.platform(), "gpu": torch.cuda.get_device_name(0),
                        "torch": torch.__version__, "transformers": transformers.__version__,
                        "llmsurrogate": llmsurrogate.__version__, "cpu_threads": torch.get_num_threads(),
                        "hidden": a.hidden, "layers": a.layers, "prompts": len(prompts)},
               "runs": []}
        ref_b = TransformersBackend(path, device="cpu", batch_size=16)
        n_params = sum(p.numel() for p in ref_b.model.parameters())
        res["info"]["parameters"] = int(n_params)
        ntok = [len(ref_b.tokenizer(p)["input_ids"]) for p in prompts[:50]]
        res["info"]["mean_prompt_tokens"] = float(np.mean(ntok))
        ids = ref_b.answer_tokens(["A", "B"])
        token_ids = sorted({t for v in ids.values() for _, t in v})
        cpu_prompts = prompts[: a.cpu_rows]
        t_cpu, ref = timed(lambda: ref_b.next_token_logprobs(cpu_prompts, token_ids), 1)
        res["runs"].append({"device": "cpu", "dtype": "float32", "batch_size": 16, "share_prefix": True,
                            "what": "next_token", "prompts": len(cpu_prompts), "seconds": t_cpu,
                            "prompts_per_s": len(cpu_prompts) / t_cpu})
        print(f"cpu float32: {len(cpu_prompts) / t_cpu:8.1f} prompts/s", flush=True)
        ref_pl = ref_b.prompt_logprobs(cpu_prompts[:16])
        del ref_b
        sizes = [int(v) for v in a.batch_sizes.split(",")]
        for dtype in a.dtypes.split(","):
            for bs in sizes:
                for share in (True, False):
                    b = TransformersBackend(path, device="cuda", dtype=dtype, batch_size=bs, share_prefix=share)
                    b.next_token_logprobs(prompts[:bs], token_ids)  # warm-up (kernels, allocator)
                    torch.cuda.synchronize()
                    t, out = timed(lambda: b.next_token_logprobs(prompts, token_ids), a.repeat)
                    diff = float(np.max(np.abs(out[: len(cpu_prompts)] - ref)))
                    run = {"device": "cuda", "dtype": dtype, "batch_size": bs, "share_prefix": share,
                           "what": "next_token", "prompts": len(prompts), "seconds": t,
                           "prompts_per_s": len(prompts) / t, "speedup_vs_cpu": (len(prompts) / t) / (len(cpu_prompts) / t_cpu),
                           "max_abs_diff_vs_cpu": diff}
                    res["runs"].append(run)
                    print(f"cuda {dtype:8s} bs={bs:3d} share={share!s:5s}: {run['prompts_per_s']:8.1f} prompts/s "
                          f"({run['speedup_vs_cpu']:.1f}x cpu), max |diff| {diff:.2e}", flush=True)
                    if share and bs == max(sizes):
                        t, rag = timed(lambda: b.prompt_logprobs(prompts), 1)
                        pl = b.prompt_logprobs(cpu_prompts[:16])
                        d = float(np.nanmax(np.abs(pl.values - ref_pl.values)))
                        res["runs"].append({"device": "cuda", "dtype": dtype, "batch_size": bs, "what": "prompt_logprobs",
                                            "prompts": len(prompts), "seconds": t, "prompts_per_s": len(prompts) / t,
                                            "tokens_per_s": float(len(rag.values) / t), "max_abs_diff_vs_cpu": d})
                        print(f"cuda {dtype:8s} prompt_logprobs: {len(prompts) / t:8.1f} prompts/s, "
                              f"{len(rag.values) / t:10.0f} tokens/s, max |diff| {d:.2e}", flush=True)
                    del b
                    torch.cuda.empty_cache()
    res.update(stamp(load0, ["torch", "transformers"]))  # environment, versions, load (GPU vs CPU: same machine)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
