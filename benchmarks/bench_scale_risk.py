"""risk_scores at scale: time and resident memory along a run of many prompts (issue 37, item 4).

Multiple-choice scoring with order-bias correction (2 prompts per row) of synthetic ACSIncome rows
with the tiny test model (``llmsurrogate.testing.build_model``: random GPT-2, 1 layer, 16 dims,
BPE vocabulary 800) on the CPU, results written to an on-disk cache. A thread samples the
process's resident set (``VmRSS`` in ``/proc/self/status``) every ``--every`` seconds together with
the prompts done so far (the progress callback), so the record shows whether memory grows with
the prompts scored. The memory the run holds beyond the result table should not grow: the rows'
dicts, the prompts, their keys and token ids are made a chunk at a time
(``llmsurrogate.llm.scoring.PROMPT_CHUNK``) and the backend holds one window of token ids.

Compare two trees of the package by running this file with each on ``PYTHONPATH`` (the code
scored is the one imported; the record names its path)::

    python benchmarks/bench_scale_risk.py --prompts 500000 --out benchmarks/results/scale_risk.json
    PYTHONPATH=/tmp/oldpy/python python benchmarks/bench_scale_risk.py --prompts 50000 --out /tmp/old.json

``--stop-after`` stops a run after that many seconds (the samples so far are written), for a tree
whose run would take too long.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _harness import code_label, loadavg, result_path, stamp, threads  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


class Stop(Exception):
    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=500_000, help="prompts scored (2 per row)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    ap.add_argument("--stop-after", type=float, default=None, help="stop the run after this many seconds")
    ap.add_argument("--quick", action="store_true", help="20,000 prompts; writes quick/ (git-ignored)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.quick:
        a.prompts = min(a.prompts, 20_000)
    threads(a.threads)
    load = loadavg()
    import numpy as np
    import torch

    torch.set_num_threads(a.threads)
    import llmsurrogate
    from llmsurrogate import risk, testing
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.tasks import acs_income_task

    tmp = Path(tempfile.mkdtemp(prefix="bench_scale_risk_"))
    model = testing.build_model(tmp / "gpt2", "gpt2", hidden=16, layers=1, seed=0)
    backend = TransformersBackend(model, device="cpu")
    task = acs_income_task()
    rows = a.prompts // 2
    df = testing.synthetic_census(rows, seed=11)
    risk.risk_scores(df.head(64), task, backend, progress=False)  # warm-up: imports, the model's first passes
    samples, state = [], {"done": 0}
    t0 = time.perf_counter()
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append({"t_s": round(time.perf_counter() - t0, 2), "prompts_done": state["done"],
                            "rss_mb": round(rss_mb(), 1)})
            stop.wait(a.every)

    def progress(_label, done, _total):
        state["done"] = done
        if a.stop_after is not None and time.perf_counter() - t0 > a.stop_after:
            raise Stop

    rss_before = rss_mb()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    finished = True
    try:
        scores = risk.risk_scores(df, task, backend, cache=tmp / "cache", progress=progress)
    except Stop:
        finished, scores = False, None
    seconds = time.perf_counter() - t0
    stop.set()
    sampler.join()
    samples.append({"t_s": round(seconds, 2), "prompts_done": state["done"], "rss_mb": round(rss_mb(), 1)})
    rss = np.array([s["rss_mb"] for s in samples])
    done = np.array([s["prompts_done"] for s in samples], dtype=float)
    late = done >= done.max() * 0.1  # past the first window and chunk: the slope of RSS against prompts done
    # MB of RSS per prompt done -> bytes per prompt
    slope = float(np.polyfit(done[late], rss[late], 1)[0] * 2**20) if late.sum() > 2 and np.ptp(done[late]) > 0 \
        else None
    result = {
        "benchmark": "scale_risk",
        "code": code_label(llmsurrogate.__file__),
        "prompts": a.prompts, "rows": rows, "finished": finished, "prompts_done": int(state["done"]),
        "seconds": seconds, "prompts_per_second": state["done"] / seconds if seconds > 0 else None,
        "rss_mb_before": rss_before, "rss_mb_peak": float(rss.max()), "rss_mb_end": float(rss[-1]),
        "rss_growth_bytes_per_prompt": slope,
        "rss_growth_measured_as": "least-squares slope of RSS against prompts done, over the samples past 10% "
                                  "of the prompts done",
        "result_table_bytes": None if scores is None else int(scores.table.memory_usage(deep=True).sum()),
        "threads": a.threads, "model": "random GPT-2, 1 layer, 16 dims, BPE vocab 800 (testing.build_model)",
        "samples": samples,
        **stamp(load, ["torch", "transformers"]),
    }
    out = result_path("scale_risk", a.quick, a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("samples", "environment")}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
