"""TransformersBackend throughput on a CUDA GPU against the same machine's CPU (same process).

A randomly initialised Llama (``--hidden``/``--layers``; weights do not matter for speed) with the
offline tokenizer of ``llmsurrogate.testing`` scores multiple-choice ACSIncome prompts (both answer
orders, as ``risk_scores`` does) and computes full prompt log-probs (the Min-K% input). Reported:
prompts per second for the CPU (float32) and the GPU (float32, bfloat16), batch sizes 16 and 64,
with and without shared-prefix reuse, plus the largest difference from the CPU's numbers.

    python benchmarks/bench_llm_gpu.py [--rows 500] [--hidden 1024] [--layers 12]

Writes ``benchmarks/results/llm_gpu.json`` (or ``--out``). Needs a CUDA GPU and the ``hf`` extra.

``risk`` mode: ``risk_scores`` prompts per second on one model through each backend, interleaved round
by round through the harness: ``VLLMBackend`` (one exact pass per prompt where the installed vLLM has
``SamplingParams(logprob_token_ids=...)``), ``TransformersBackend`` and folktexts'
``TransformersLLMClassifier`` (its own process). The model has the shape of a 1B Llama-3 (hidden 2048,
16 layers, 32 heads / 8 KV heads, MLP 8192, a 128,256-token output vocabulary, tied embeddings),
randomly initialised, in bfloat16; its tokenizer is the offline one of ``llmsurrogate.testing`` (800
tokens: prompts are longer in tokens than with Llama's tokenizer; every forward pass still computes all
128,256 logits). Scores of each bfloat16 side are compared with a float32 TransformersBackend reference
on a subset; the model FLOPs of a forward pass over the prompt tokens give the share of the GPU's
bfloat16 dense peak::

    python benchmarks/bench_llm_gpu.py risk [--rows 2000] [--rounds 3] [--folktexts-python python3]

Writes ``benchmarks/results/llm_gpu_risk.json`` (or ``--out``).
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


#: bfloat16 dense tensor-core peak (FLOP/s) by GPU name (vendor data sheets, SXM parts)
BF16_PEAK = {"H100": 989.4e12, "H200": 989.4e12, "A100": 312e12, "L40S": 362e12}


def _llama_1b(path, torch, transformers, testing, a, seed: int = 0):
    """Save a randomly initialised Llama-3.2-1B-shaped model (bfloat16) and the offline tokenizer."""
    tok = testing.build_tokenizer(path, "bpe", seed=seed)
    cfg = transformers.LlamaConfig(hidden_size=a.hidden, intermediate_size=a.mlp, num_hidden_layers=a.layers,
                                   num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                                   max_position_embeddings=2048,
                                   rope_theta=500000.0, vocab_size=a.vocab, tie_word_embeddings=True,
                                   bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                   pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    with torch.device(a.device):
        model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():  # sharpen (the tied input/output matrix) so that scores vary across rows
        model.get_input_embeddings().weight.mul_(a.sharpen)
    model = model.to(torch.bfloat16).eval()
    model.save_pretrained(path)
    n_params = sum(p.numel() for p in model.parameters())
    n_embed = model.get_input_embeddings().weight.numel()
    return n_params, n_embed


def risk_main(argv):
    ap = argparse.ArgumentParser(prog="bench_llm_gpu.py risk")
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--ref-rows", type=int, default=128, help="rows scored by the float32 reference")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--mlp", type=int, default=8192)
    ap.add_argument("--sharpen", type=float, default=4.0, help="scale of the random tied embedding matrix")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test of this script with vLLM's CPU build")
    ap.add_argument("--batch-size", type=int, default=64, help="TransformersBackend's and folktexts' batch size")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.5)
    ap.add_argument("--enforce-eager", action="store_true")
    ap.add_argument("--max-num-seqs", type=int, default=1024, help="VLLMBackend batch_size (vLLM's max_num_seqs)")
    ap.add_argument("--max-num-batched-tokens", type=int, default=65536, help="0: vLLM's default")
    ap.add_argument("--prompts-per-call", type=int, default=8192)
    ap.add_argument("--folktexts-python", default=None, help="an interpreter with folktexts (default: none)")
    ap.add_argument("--ab-detokenize", action="store_true",
                    help="also time VLLMBackend with the engine detokenizing its outputs (the pre-0.2 scoring "
                         "passes), interleaved with the rest: the effect of detokenize=False in the same session")
    ap.add_argument("--ab-front-end", action="store_true",
                    help="also time VLLMBackend with its front end as before 0.2 in the same rounds: one LLM.generate "
                         "call per pass (no tokenizing while the engine runs), and that with the params deep-copied "
                         "per request and the outputs detokenized; then time where one call of each spends it")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "llm_gpu_risk.json"))
    a = ap.parse_args(argv)
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _folktexts_runner as folktexts
    from _harness import Run

    import torch
    import transformers

    from llmsurrogate import risk, testing
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.tasks import acs_income_task
    from llmsurrogate.llm.vllm import VLLMBackend

    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_llm_gpu.py risk needs a CUDA GPU")
    gpu = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    peak = next((v for k, v in BF16_PEAK.items() if k in gpu), None)
    run = Run("llm_gpu_risk", python_packages=["torch", "transformers", "vllm", "folktexts"],
              notes=f"{2 * a.rows} prompts per round (ACSIncome multiple choice, both answer orders); rounds "
                    "interleaved through the harness; speedup = other side's time / VLLMBackend's time")
    task = acs_income_task()
    df = testing.synthetic_census(a.rows, seed=42)
    tmp = Path(tempfile.mkdtemp(prefix="bench_gpu_risk_"))
    path = tmp / "llama1b"
    t0 = time.perf_counter()
    n_params, n_embed = _llama_1b(path, torch, transformers, testing, a)
    print(f"model: {n_params / 1e9:.3f}B parameters, built in {time.perf_counter() - t0:.0f} s", flush=True)

    hf = TransformersBackend(path, device=a.device, dtype="bfloat16", batch_size=a.batch_size)
    t0 = time.perf_counter()
    gpu_mem = a.gpu_memory_utilization if a.device == "cuda" else None
    vl = VLLMBackend(path, dtype="bfloat16", gpu_memory_utilization=gpu_mem, device=a.device,
                     enforce_eager=a.enforce_eager, max_model_len=2048, batch_size=a.max_num_seqs,
                     prompts_per_call=a.prompts_per_call,
                     engine_options={"max_num_batched_tokens": a.max_num_batched_tokens} if a.max_num_batched_tokens else None)
    vllm_start = time.perf_counter() - t0
    print(f"vLLM engine started in {vllm_start:.0f} s (one_pass={vl.one_pass}, dtype={vl.dtype})", flush=True)

    out = {}
    sides = {"ours": lambda: out.__setitem__("vllm", risk.risk_scores(df, task, vl)),
             "TransformersBackend": lambda: out.__setitem__("hf", risk.risk_scores(df, task, hf))}
    if a.ab_detokenize and vl._detokenize_flag:
        def detokenized():
            vl._detokenize_flag = False
            try:
                out["vllm_detok"] = risk.risk_scores(df, task, vl)
            finally:
                vl._detokenize_flag = True

        sides["VLLMBackend, outputs detokenized"] = detokenized
    if a.ab_front_end:
        sides[ONE_CALL] = lambda: out.__setitem__("vllm_one_call", _one_generate_call(vl, lambda: risk.risk_scores(df, task, vl)))
        sides[OLD_FRONT_END] = lambda: out.__setitem__("vllm_old", _one_generate_call(vl, lambda: risk.risk_scores(df, task, vl),
                                                                                       old_params=True))
    fk_rounds = []
    if a.folktexts_python:
        data_csv = tmp / "rows.csv"
        df[list(task.features) + ["PINCP>50000"]].to_csv(data_csv, index=False)

        def fk_side():
            res, err = folktexts.run(a.folktexts_python, path, data_csv, tmp / "fk.json", repeat=1, threads=4,
                                     batch_size=a.batch_size, device=a.device, dtype="bfloat16")
            if err is not None:
                raise RuntimeError(f"folktexts failed: {err[-3000:]}")
            fk_rounds.append(res["times"][0])
            out["folktexts"] = res

        sides["folktexts"] = fk_side
    paths_before = dict(vl.path_counts)
    row = run.compare(f"risk_scores, {2 * a.rows} prompts, bf16", ours=sides.pop("ours"),
                      extra=sides, rounds=a.rounds, warmup=1)
    if fk_rounds:  # folktexts' own timing of its scoring call, without its process start and model load
        row["sides"]["folktexts"]["rounds_s_process"] = row["sides"]["folktexts"]["rounds_s"]
        row["sides"]["folktexts"].update({"min_s": min(fk_rounds[1:] or fk_rounds),
                                          "median_s": float(np.median(fk_rounds[1:] or fk_rounds)),
                                          "rounds_s": fk_rounds[1:] or fk_rounds,
                                          "timed_as": "folktexts' compute_risk_estimates_for_dataframe, model loaded"})
        for name in ("TransformersBackend", "folktexts"):
            s, o = row["sides"][name], row["sides"]["ours"]
            row["speedup"][name] = {"min": s["min_s"] / o["min_s"], "median": s["median_s"] / o["median_s"]}
    n_prompts = 2 * a.rows
    sv, sh = out["vllm"].scores, out["hf"].scores
    ov, oh = (np.asarray(out[k].table["score_order_0"], dtype=float) for k in ("vllm", "hf"))
    calls = {k: vl.path_counts[k] - paths_before[k] for k in vl.path_counts}
    # float32 reference on a subset of rows
    hf = None  # free its GPU memory for the float32 reference
    if a.device == "cuda":
        torch.cuda.empty_cache()
    ref_b = TransformersBackend(path, device=a.device, dtype="float32", batch_size=a.batch_size)
    sub = df.head(a.ref_rows)
    ref_res = risk.risk_scores(sub, task, ref_b)
    ref, ref_o = ref_res.scores, np.asarray(ref_res.table["score_order_0"], dtype=float)
    k = len(ref)
    agreement = {"reference": f"TransformersBackend float32 on the same GPU, first {k} rows",
                 "max_abs_diff_vllm_bf16_vs_f32": float(np.max(np.abs(sv[:k] - ref))),
                 "max_abs_diff_transformers_bf16_vs_f32": float(np.max(np.abs(sh[:k] - ref))),
                 "max_abs_diff_vllm_vs_transformers_bf16": float(np.max(np.abs(sv - sh))),
                 "mean_abs_diff_vllm_vs_transformers_bf16": float(np.mean(np.abs(sv - sh))),
                 "score_sd": float(np.std(ref)), "score_range": [float(ref.min()), float(ref.max())],
                 "one_answer_order": {
                     "max_abs_diff_vllm_bf16_vs_f32": float(np.max(np.abs(ov[:k] - ref_o))),
                     "max_abs_diff_transformers_bf16_vs_f32": float(np.max(np.abs(oh[:k] - ref_o))),
                     "max_abs_diff_vllm_vs_transformers_bf16": float(np.max(np.abs(ov - oh))),
                     "score_sd": float(np.std(ref_o)), "score_range": [float(ref_o.min()), float(ref_o.max())]}}
    if "vllm_detok" in out:
        agreement["max_abs_diff_vllm_detokenize_false_vs_true"] = float(np.max(np.abs(sv - out["vllm_detok"].scores)))
    if a.ab_front_end:
        agreement["max_abs_diff_vllm_vs_one_generate_call"] = float(np.max(np.abs(sv - out["vllm_one_call"].scores)))
        agreement["max_abs_diff_vllm_vs_old_front_end"] = float(np.max(np.abs(sv - out["vllm_old"].scores)))
        run.extra["front_end_one_call_s"] = {
            "ours": _breakdown(vl, lambda: risk.risk_scores(df, task, vl)),
            ONE_CALL: _breakdown(vl, lambda: _one_generate_call(vl, lambda: risk.risk_scores(df, task, vl)))}
    if "folktexts" in out:
        fk = np.asarray(out["folktexts"]["scores"])
        agreement["max_abs_diff_folktexts_bf16_vs_f32"] = float(np.max(np.abs(fk[:k] - ref)))
    # model FLOPs of the prefill: 2 x (non-embedding parameters) per token + 2 x hidden x vocab for
    # the logits of the last position (the tied output matrix), attention's quadratic term added
    toks = np.array([len(ref_b.tokenizer(p)["input_ids"]) for p in
                     [q for r in sub.to_dict("records") for q in _prompts(task, r)]])
    mean_tokens = float(toks.mean())
    per_prompt = (2 * (n_params - n_embed) * mean_tokens + 2 * a.hidden * a.vocab
                  + 2 * a.layers * a.hidden * mean_tokens ** 2)
    mfu = {name: per_prompt * n_prompts / s["min_s"] / peak if peak else None for name, s in row["sides"].items()}
    run.extra.update({
        "gpu": gpu, "bf16_peak_flops": peak, "parameters": n_params, "vocab": a.vocab,
        "mean_prompt_tokens": mean_tokens, "prompts": n_prompts, "vllm_engine_start_s": vllm_start,
        "vllm_one_pass": vl.one_pass, "vllm_dtype": vl.dtype,
        "vllm_settings": {"batch_size": a.max_num_seqs, "max_num_batched_tokens": a.max_num_batched_tokens or None,
                          "prompts_per_call": vl.prompts_per_call, "gpu_memory_utilization": gpu_mem}, "vllm_paths_in_timed_runs": calls,
        "prompts_per_s": {name: n_prompts / s["min_s"] for name, s in row["sides"].items()},
        "share_of_bf16_peak": mfu, "agreement": agreement,
        "model": f"random-init Llama (hidden {a.hidden}, {a.layers} layers, {a.heads}/{a.kv_heads} heads, MLP "
                 f"{a.mlp}, tied embeddings x{a.sharpen}), vocab {a.vocab}, bfloat16; offline 800-token BPE tokenizer"})
    print(json.dumps({k: run.extra[k] for k in ("prompts_per_s", "share_of_bf16_peak", "agreement",
                                                 "vllm_paths_in_timed_runs")}, indent=1), flush=True)
    run.write(a.out)


#: the A/B sides of --ab-front-end
ONE_CALL = "VLLMBackend, one generate call"
OLD_FRONT_END = "VLLMBackend, one generate call, params deep-copied, outputs detokenized"


class _GenerateOnly:
    """An engine as VLLMBackend used it before LLM.enqueue: one ``generate`` call per pass."""

    def __init__(self, llm):
        self.llm = llm

    def generate(self, *args, **kwargs):
        return self.llm.generate(*args, **kwargs)


def _one_generate_call(vl, fn, old_params: bool = False):
    """``fn()`` with ``vl`` handing each pass to the engine in one generate call (and, with
    ``old_params``, SamplingParams deep-copied per request and outputs detokenized, as before 0.2)."""
    llm, flags = vl.llm, (vl._skip_clone_flag, vl._detokenize_flag)
    vl.llm = _GenerateOnly(llm)
    if old_params:
        vl._skip_clone_flag = vl._detokenize_flag = False
    try:
        return fn()
    finally:
        vl.llm, (vl._skip_clone_flag, vl._detokenize_flag) = llm, flags


def _breakdown(vl, fn) -> dict:
    """Seconds one call ``fn()`` spends in all (total), tokenizing (summed over chunks, some in a
    background thread), handing prompts to the engine (LLM.enqueue), waiting for it
    (wait_for_completion) or in LLM.generate."""
    spent = {"tokenize": 0.0, "enqueue": 0.0, "wait_for_completion": 0.0, "generate": 0.0}

    def timed_call(name, f):
        def g(*args, **kwargs):
            t = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - t
        return g

    llm = vl.llm
    vl._encode_room = timed_call("tokenize", vl._encode_room)
    for name in ("enqueue", "wait_for_completion", "generate"):
        setattr(llm, name, timed_call(name, getattr(llm, name)))
    t0 = time.perf_counter()
    try:
        fn()
    finally:
        total = time.perf_counter() - t0
        del vl._encode_room
        for name in ("enqueue", "wait_for_completion", "generate"):
            delattr(llm, name)
    return {"total": total, **spent}


def _prompts(task, row):
    from llmsurrogate.llm.prompts import multiple_choice_prompt

    return [multiple_choice_prompt(task, row, q) for q in task.question.permutations()]


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["risk"]:
        risk_main(sys.argv[2:])
    else:
        main()
