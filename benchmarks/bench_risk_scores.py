"""LLM risk scores: our TransformersBackend vs folktexts on the same tiny model and rows (CPU).

* Throughput (prompts per second) of multiple-choice scoring with order-bias correction (2
  prompts per row), ours vs folktexts' ``TransformersLLMClassifier`` (run in its own interpreter,
  ``--folktexts-python``; folktexts 0.7.1 from PyPI runs offline on a local model folder). Same
  model (a random-init tiny GPT-2 from ``llmsurrogate.testing``), same rows (synthetic ACSIncome
  rows), same batch size, same torch thread count, best of ``--repeat`` runs each.
* Agreement of the scores: folktexts picks the answer-prefix variant with the most mass and casts
  probabilities to float16; our ``spelling="best_prefix"`` is the same method in float32, our
  default ``spelling="sum"`` adds the mass of all spellings.
* Cache overhead: scoring with a fresh on-disk cache vs no cache.
* Resume: re-running a finished run of 10,000 prompts (5,000 rows x 2 orders) from the cache.

Writes ``benchmarks/results/risk_scores.json``. Needs the ``hf`` extra here and folktexts in a
separate interpreter (its dependencies pin nothing we use, but keep it out of the package venv)::

    python3 -m venv .venv-bench && .venv-bench/bin/pip install folktexts   # 0.7.1; runs offline
    python benchmarks/bench_risk_scores.py [--rows 300] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import sys

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _folktexts_runner as folktexts  # noqa: E402
from _harness import Run, result_path, summarize, threads  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), times, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--resume-rows", type=int, default=5000)
    ap.add_argument("--sharpen", type=float, default=4.0)
    ap.add_argument("--folktexts-python", default=str(ROOT / ".venv-bench" / "bin" / "python"))
    ap.add_argument("--quick", action="store_true", help="100 rows, 2 rounds, resume 1,000 rows; writes quick/ (git-ignored)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.quick:
        a.rows, a.repeat, a.resume_rows = min(a.rows, 100), min(a.repeat, 2), min(a.resume_rows, 1000)
    threads(a.threads)  # torch, BLAS and ours on the same count; folktexts' interpreter inherits it
    run = Run("risk_scores", quick=a.quick, python_packages=["torch", "transformers"],
              notes=f"prompts per round: {2 * a.rows}; both sides on {a.threads} torch thread(s); rounds "
                    "interleaved: one folktexts process (2 timed calls after loading the model), then 2 of ours "
                    "with and 2 without prefix sharing; speedup = folktexts time / our time")

    import torch

    torch.set_num_threads(a.threads)
    import llmsurrogate
    from llmsurrogate import risk, testing
    from llmsurrogate.llm.cache import Cache
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.tasks import acs_income_task

    task = acs_income_task()
    tmp = Path(tempfile.mkdtemp(prefix="bench_risk_"))
    model = testing.build_model(tmp / "gpt2", "gpt2", seed=0)
    # sharpen the random model (scale the tied embedding / output matrix) so that its answer
    # probabilities vary across rows instead of all sitting at 0.5: agreement is then informative
    import transformers

    m = transformers.AutoModelForCausalLM.from_pretrained(model, local_files_only=True)
    with torch.no_grad():
        m.transformer.wte.weight.mul_(a.sharpen)
    m.save_pretrained(model)
    df = testing.synthetic_census(a.rows, seed=42)
    data_csv = tmp / "rows.csv"
    df[list(task.features) + ["PINCP>50000"]].to_csv(data_csv, index=False)
    n_prompts = 2 * a.rows
    results = {"machine": {"python": platform.python_version(), "platform": platform.platform(),
                           "cpus": os.cpu_count(), "torch_threads": a.threads, "torch": torch.__version__},
               "llmsurrogate": llmsurrogate.__version__, "rows": a.rows, "prompts": n_prompts,
               "batch_size": a.batch_size, "model": f"random-init GPT-2 (2 layers, 64 dims, BPE vocab 800), embeddings x{a.sharpen}"}

    # --- throughput, interleaved: this machine's 2 cores are shared, so folktexts and ours
    # alternate round by round and each side reports its best round ---------------------------
    backend = TransformersBackend(model, device="cpu", batch_size=a.batch_size)
    plain = TransformersBackend(model, device="cpu", batch_size=a.batch_size, share_prefix=False)
    fk_times, fk_scores, ours_times, plain_times = [], None, [], []
    have_fk = Path(a.folktexts_python).exists()
    if not have_fk:
        results["folktexts_error"] = f"no interpreter with folktexts at {a.folktexts_python}"
    ours = None
    for _ in range(a.repeat):
        if have_fk:
            fk, err = folktexts.run(a.folktexts_python, model, data_csv, tmp / "folktexts.json", repeat=2,
                                    threads=a.threads, batch_size=a.batch_size)
            if err is not None:
                results["folktexts_error"] = err[-3000:]
                have_fk = False
            else:
                fk_times += fk["times"]
                fk_scores = np.asarray(fk["scores"])
                results["folktexts_version"] = fk["folktexts_version"]
        for _ in range(2):
            t0 = time.perf_counter(); ours = risk.risk_scores(df, task, backend); ours_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter(); risk.risk_scores(df, task, plain); plain_times.append(time.perf_counter() - t0)
    t_ours, t_plain = min(ours_times), min(plain_times)
    ours_bp = risk.risk_scores(df, task, backend, spelling="best_prefix")
    results["ours"] = {"seconds": t_ours, "all_seconds": ours_times, "prompts_per_second": n_prompts / t_ours,
                       "prompts_per_second_without_prefix_sharing": n_prompts / t_plain,
                       "all_seconds_without_prefix_sharing": plain_times}
    if fk_scores is not None:
        t_fk = min(fk_times)
        s_fk = fk_scores
        results["folktexts"] = {"seconds": t_fk, "all_seconds": fk_times, "prompts_per_second": n_prompts / t_fk}
        results["speedup_vs_folktexts"] = t_fk / t_ours
        results["speedup_vs_folktexts_median_rounds"] = float(np.median(fk_times) / np.median(ours_times))
        results["speedup_vs_folktexts_without_prefix_sharing"] = t_fk / t_plain
        # agreement without order averaging (a random model does not read the options, so its
        # order-averaged scores all sit at 0.5): one answer order, per-prompt scores vary
        fk1, err = folktexts.run(a.folktexts_python, model, data_csv, tmp / "fk1.json", repeat=1, threads=a.threads,
                                 batch_size=a.batch_size, correct_order_bias=False)
        if err is not None:
            raise RuntimeError(f"folktexts failed on one answer order: {err[-3000:]}")
        fk1 = np.asarray(fk1["scores"])
        o1_bp = risk.risk_scores(df, task, backend, spelling="best_prefix", correct_order_bias=False).scores
        o1_sum = risk.risk_scores(df, task, backend, correct_order_bias=False).scores
        results["agreement_one_order"] = {
            "max_abs_diff_best_prefix": float(np.max(np.abs(o1_bp - fk1))),
            "mean_abs_diff_best_prefix": float(np.mean(np.abs(o1_bp - fk1))),
            "max_abs_diff_sum_of_spellings": float(np.max(np.abs(o1_sum - fk1))),
            "score_range_folktexts": [float(fk1.min()), float(fk1.max())],
            "score_sd_folktexts": float(fk1.std()),
            "corr_best_prefix": float(np.corrcoef(o1_bp, fk1)[0, 1]),
        }
        results["agreement"] = {
            "max_abs_diff_best_prefix": float(np.max(np.abs(ours_bp.scores - s_fk))),
            "mean_abs_diff_best_prefix": float(np.mean(np.abs(ours_bp.scores - s_fk))),
            "max_abs_diff_sum_of_spellings": float(np.max(np.abs(ours.scores - s_fk))),
            "score_range_ours": [float(ours.scores.min()), float(ours.scores.max())],
            "score_sd_ours": float(ours.scores.std()),
            "answer_mass_range_ours": [float(ours.table["answer_mass"].min()), float(ours.table["answer_mass"].max())],
        }

    # --- cache overhead: time spent in the cache (hashing keys, lookups, writes) during a run
    # that writes every prompt to a fresh cache, over that run's total time ----------------------
    class TimedCache(Cache):
        spent = 0.0

        def keys(self, **kw):
            t = time.perf_counter(); out = Cache.keys(**kw); TimedCache.spent += time.perf_counter() - t
            return out

        def get_many(self, keys):
            t = time.perf_counter(); out = super().get_many(keys); TimedCache.spent += time.perf_counter() - t
            return out

        def put_many(self, items, kind=""):
            items = list(items)
            t = time.perf_counter(); super().put_many(items, kind); TimedCache.spent += time.perf_counter() - t

    fractions = []
    for k in range(a.repeat):
        TimedCache.spent = 0.0
        cache = TimedCache(tmp / f"cache_{k}")
        t0 = time.perf_counter(); risk.risk_scores(df, task, backend, cache=cache); total = time.perf_counter() - t0
        fractions.append(TimedCache.spent / total)
    results["cache_overhead_fraction"] = {"median": float(np.median(fractions)), "all": fractions,
                                          "measured_as": "seconds inside the cache / seconds of the whole run"}

    # --- resume a finished run of 2 * resume_rows prompts ------------------------------------
    big = testing.synthetic_census(a.resume_rows, seed=7)
    rcache = Cache(tmp / "resume")
    t0 = time.perf_counter(); first = risk.risk_scores(big, task, backend, cache=rcache)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter(); again = risk.risk_scores(big, task, backend, cache=Cache(tmp / "resume"))
    t_resume = time.perf_counter() - t0
    assert np.array_equal(first.scores, again.scores) and again.meta["cache_misses"] == 0
    results["resume"] = {"prompts": 2 * a.resume_rows, "first_run_seconds": t_first, "resume_seconds": t_resume,
                         "unique_prompts_cached": len(rcache)}

    sides = {"ours": summarize(ours_times), "ours_without_prefix_sharing": summarize(plain_times)}
    if fk_times:
        sides["folktexts"] = summarize(fk_times)
    run.add(f"risk scores, {n_prompts} prompts (tiny GPT-2, CPU, batch {a.batch_size})", sides,
            peer_name="folktexts" if fk_times else None, rounds=a.repeat, threads=a.threads,
            folktexts=results.get("folktexts_version"))
    run.extra.update(results)
    run.write(result_path("risk_scores", a.quick, a.out))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
