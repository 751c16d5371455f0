"""LM-head economy on the CPU (issue 13, item 0): risk_scores throughput of TransformersBackend at the
tiny vocabulary (800) and at 32k and 128k vocabularies.

The tokenizer of ``llmsurrogate.testing`` is trained to 800 tokens; the 32k and 128k models widen the
output layer (``resize_token_embeddings``: config.vocab_size, the logits dimension, grows; the
tokenizer keeps its 800 tokens), which is where the head's cost lives. Per vocabulary, timed through
benchmarks/_harness.py in interleaved rounds (the side that goes first rotates) after a warm-up call:

* **ours**: ``TransformersBackend`` as shipped (the head only where it is read, shared prefixes);
* **full logits**: the same backend with ``_skip_head = False`` (the old path: logits at every
  position of the shared-prefix pass);
* **folktexts**: folktexts 0.7.1's ``TransformersLLMClassifier`` on the same widened model, rows and
  batch size, in its own interpreter (``--folktexts-python``, as in bench_risk_scores.py): one
  process per round, model loaded before its timed calls, its times recorded with ``Run.add``. Where
  it cannot run (no interpreter, or it fails on a widened model) the reason is recorded.

All sides on the same torch thread count (``--threads``, default 1) and batch size. The scores'
agreement is kept: max abs difference between our two paths (same method), and between ours with
``spelling="best_prefix"`` (folktexts' method) and folktexts (which casts to float16).

    python benchmarks/bench_llm_cpu.py [--rows 150] [--rounds 3] [--threads 1] [--quick]

Writes ``benchmarks/results/llm_cpu.json`` (``--quick``: 20 rows, 2 rounds, benchmarks/quick/).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _folktexts_runner as folktexts  # noqa: E402
from _harness import Run, add_common_args, loadavg, result_path, summarize, threads  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    ap = argparse.ArgumentParser()
    add_common_args(ap)
    ap.add_argument("--rows", type=int, default=150)
    ap.add_argument("--vocabs", default="800,32000,128000")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--folktexts-python", default=str(ROOT / ".venv-bench" / "bin" / "python"))
    a = ap.parse_args()
    if a.quick:
        a.rows = min(a.rows, 20)
    rounds = a.rounds or (2 if a.quick else 3)
    n_threads = threads(a.threads or 1)  # torch, BLAS and ours; folktexts' interpreter inherits it

    import torch
    import transformers

    torch.set_num_threads(n_threads)
    from llmsurrogate import risk, testing
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.tasks import acs_income_task

    task = acs_income_task()
    rows = testing.synthetic_census(a.rows, seed=1).drop(columns="p_true")
    n_prompts = 2 * a.rows
    run = Run("llm_cpu", quick=a.quick, python_packages=["torch", "transformers"],
              notes=f"risk_scores with order-bias correction, {n_prompts} prompts per round (tiny random GPT-2, 2 layers, "
                    f"64 dims; tokenizer 800 tokens, output layer widened to the vocabulary named), batch {a.batch_size}, "
                    f"{n_threads} torch thread(s) on every side. ours = head only where read (share_prefix default); "
                    "full logits = the same backend with _skip_head=False (the path before issue 13); folktexts = "
                    "folktexts 0.7.1 TransformersLLMClassifier in its own interpreter, one process per round (model "
                    "loaded before its 2 timed calls). speedup = other side / ours.")
    fk_python = Path(a.folktexts_python)
    fk_reason = None if fk_python.exists() else f"no interpreter with folktexts at {fk_python}"
    if fk_reason:
        print(f"folktexts side skipped: {fk_reason} (`make bench-venv` creates it)", flush=True)
    agreement, folktexts_info = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = testing.build_model(tmp / "m800", "gpt2", seed=1)
        data_csv = tmp / "rows.csv"
        rows[list(task.features) + ["PINCP>50000"]].to_csv(data_csv, index=False)
        for vocab in [int(v) for v in a.vocabs.split(",")]:
            path = base
            if vocab != 800:
                m = transformers.AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
                m.resize_token_embeddings(vocab, mean_resizing=False)
                path = tmp / f"m{vocab}"
                m.save_pretrained(path)
                transformers.AutoTokenizer.from_pretrained(base, local_files_only=True).save_pretrained(path)
                del m
            ours_b = TransformersBackend(path, device="cpu", batch_size=a.batch_size)
            assert ours_b._skip_head
            full_b = TransformersBackend(path, device="cpu", batch_size=a.batch_size)
            full_b._skip_head = False
            sides = {"ours": lambda b=ours_b: risk.risk_scores(rows, task, b).scores,
                     "full logits": lambda b=full_b: risk.risk_scores(rows, task, b).scores}
            s_ours, s_full = sides["ours"](), sides["full logits"]()  # warm-up, and the agreement
            ag = {"max_abs_diff_ours_vs_full_logits": float(np.max(np.abs(s_ours - s_full)))}
            times = {name: [] for name in sides}
            fk_times, fk_scores, fk_err = [], None, fk_reason
            load0 = loadavg()
            names = list(sides) + ["folktexts"]
            for r in range(rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    if name == "folktexts":
                        if fk_err:
                            continue
                        fk, err = folktexts.run(fk_python, path, data_csv, tmp / f"fk_{vocab}.json", repeat=2,
                                                threads=n_threads, batch_size=a.batch_size)
                        if err is not None:
                            fk_err = f"folktexts failed on the vocab-{vocab} model: " + err[-2000:]
                            print(fk_err, flush=True)
                            continue
                        fk_times += fk["times"]
                        fk_scores = np.asarray(fk["scores"])
                        folktexts_info["version"] = fk["folktexts_version"]
                    else:
                        t = time.perf_counter()
                        sides[name]()
                        times[name].append(time.perf_counter() - t)
            res = {name: summarize(ts) for name, ts in times.items()}
            if fk_times:
                res["folktexts"] = summarize(fk_times)
                bp = risk.risk_scores(rows, task, ours_b, spelling="best_prefix").scores
                ag["max_abs_diff_ours_best_prefix_vs_folktexts"] = float(np.max(np.abs(bp - fk_scores)))
                ag["max_abs_diff_ours_sum_vs_folktexts"] = float(np.max(np.abs(s_ours - fk_scores)))
            elif fk_err and fk_err != fk_reason:
                folktexts_info.setdefault("errors", {})[str(vocab)] = fk_err
            agreement[str(vocab)] = ag
            row = run.add(f"risk_scores, vocab {vocab:,}, {n_prompts} prompts", res,
                          peer_name="folktexts" if fk_times else None, rounds=rounds, warmup=1, load_before=load0,
                          threads=n_threads, vocab=vocab, batch_size=a.batch_size,
                          folktexts_rounds_note="2 timed calls per folktexts process" if fk_times else None,
                          folktexts_skipped=None if fk_times else fk_err)
            row["prompts_per_s"] = {k: n_prompts / v["min_s"] for k, v in res.items()}
            del ours_b, full_b
    run.extra.update({"rows": a.rows, "prompts": n_prompts, "agreement": agreement,
                      "folktexts": folktexts_info or None, "folktexts_skipped": fk_reason})
    run.write(result_path("llm_cpu", a.quick, a.out))
    print(json.dumps(agreement, indent=1))


if __name__ == "__main__":
    main()
