"""LM-head economy on the CPU (issue 13, item 0): risk_scores prompts/s of TransformersBackend at the
tiny vocabulary and at 32k and 128k vocabularies, the full-logits path against the head-only-where-read
path, with and without shared prefixes.

The tokenizer of ``llmsurrogate.testing`` is trained to 800 tokens; the 32k and 128k models widen the
output layer (``resize_token_embeddings``: config.vocab_size, the logits dimension, grows; the
tokenizer keeps its 800 tokens), which is where the head's cost lives. "full logits" is the backend
with ``_skip_head = False`` (the head over every position, as before this change: the shared-prefix
pass and ``next_token_logprobs_after`` computed logits at every prefix position).

The machine's load average is recorded before and after each configuration: on a shared, noisy box
these numbers check the path; they are not final. Writes ``benchmarks/results/llm_cpu.json``::

    python benchmarks/bench_llm_cpu.py [--rows 150] [--repeat 2] [--threads 1]
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "llm_cpu.json"
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=150)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--vocabs", default="800,32000,128000")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()

    import torch
    import transformers

    from llmsurrogate import risk, testing
    from llmsurrogate.llm.hf import TransformersBackend

    torch.set_num_threads(a.threads)
    rows = testing.synthetic_census(a.rows, seed=1).drop(columns="p_true")
    from llmsurrogate.llm.tasks import acs_income_task

    task = acs_income_task()
    res = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "threads": a.threads,
                       "note": "shared, noisy 2-core box with other workers running: numbers check the path, "
                               "they are not final"},
           "rows": a.rows, "prompts": 2 * a.rows, "repeat": a.repeat, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = testing.build_model(Path(tmp) / "m800", "gpt2", seed=1)
        for vocab in [int(v) for v in a.vocabs.split(",")]:
            path = base
            if vocab != 800:
                m = transformers.AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
                m.resize_token_embeddings(vocab, mean_resizing=False)
                path = Path(tmp) / f"m{vocab}"
                m.save_pretrained(path)
                transformers.AutoTokenizer.from_pretrained(base, local_files_only=True).save_pretrained(path)
            scores = {}
            for share in (True, False):
                for skip in (False, True):
                    b = TransformersBackend(path, device="cpu", share_prefix=share)
                    b._skip_head = skip
                    load0 = os.getloadavg()
                    times = []
                    for _ in range(a.repeat):
                        t = time.perf_counter()
                        s = risk.risk_scores(rows, task, b).scores
                        times.append(time.perf_counter() - t)
                    scores[(share, skip)] = s
                    run = {"vocab": vocab, "share_prefix": share,
                           "path": "head only where read" if skip else (
                               "full logits (before)" if share else
                               "full logits at every position (not a before number: the old plain path "
                               "already used logits_to_keep=1, as the new one does)"),
                           "prompts_per_s": round(2 * a.rows / min(times), 1), "times_s": [round(x, 3) for x in times],
                           "loadavg_before": [round(x, 2) for x in load0],
                           "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
                    res["runs"].append(run)
                    print(json.dumps(run), flush=True)
                    del b
            ref = scores[(True, False)]
            res.setdefault("max_abs_score_difference_vs_full_logits", {})[str(vocab)] = float(max(
                np.max(np.abs(v - ref)) for v in scores.values()))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res["max_abs_score_difference_vs_full_logits"]))


if __name__ == "__main__":
    main()
