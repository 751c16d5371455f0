"""Run folktexts' TransformersLLMClassifier on a local model and a CSV, in the interpreter that has
folktexts installed (``.venv-bench``). The benchmarks call :func:`run`, which starts this file
there; it imports nothing of folktexts in their own interpreter.

    python _folktexts_runner.py MODEL_DIR DATA_CSV OUT_JSON --repeat 3 --threads 1 --batch-size 16
"""

import argparse
import json
import logging
import os
import subprocess
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def run(python, model, data, out, *, repeat, threads, batch_size, correct_order_bias=True, device="cpu",
        dtype="float32", env=None):
    """Time folktexts in its own interpreter ``python``: ``({"folktexts_version", "times", "scores"},
    None)``, or ``(None, its stderr)`` when the process failed."""
    cmd = [str(python), str(Path(__file__).resolve()), str(model), str(data), str(out), "--repeat", str(repeat),
           "--threads", str(threads), "--batch-size", str(batch_size), "--device", device, "--dtype", dtype]
    if not correct_order_bias:
        cmd += ["--correct-order-bias", "0"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return None, proc.stderr
    return json.loads(Path(out).read_text()), None


def _without_netcal():
    """folktexts imports ``netcal.metrics.ECE`` at the top of its evaluation module, which the risk
    estimates timed here never call. Where netcal (a heavy package: pyro, tensorboard, ...) is not
    installed, as on the offline GPU machine, stand in a module whose ECE refuses to run."""
    import importlib.util
    import sys
    import types

    if importlib.util.find_spec("netcal") is not None:
        return
    netcal, metrics = types.ModuleType("netcal"), types.ModuleType("netcal.metrics")

    class ECE:  # a refusal, not an implementation
        def __init__(self, *args, **kwargs):
            raise RuntimeError("netcal is not installed; folktexts' ECE is not part of this benchmark")

    metrics.ECE = ECE
    netcal.metrics = metrics
    sys.modules.update({"netcal": netcal, "netcal.metrics": metrics})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model"); ap.add_argument("data"); ap.add_argument("out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--correct-order-bias", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    a = ap.parse_args()
    import pandas as pd
    import torch
    import transformers

    logging.disable(logging.WARNING)  # folktexts logs one warning per low-mass prompt
    torch.set_num_threads(a.threads)
    _without_netcal()
    from folktexts import __version__
    from folktexts.acs import ACSTaskMetadata
    from folktexts.classifier import TransformersLLMClassifier

    model = transformers.AutoModelForCausalLM.from_pretrained(a.model, local_files_only=True,
                                                              dtype=getattr(torch, a.dtype)).to(a.device)
    tok = transformers.AutoTokenizer.from_pretrained(a.model, local_files_only=True)
    df = pd.read_csv(a.data)
    clf = TransformersLLMClassifier(model=model, tokenizer=tok, task=ACSTaskMetadata.get_task("ACSIncome"),
                                    batch_size=a.batch_size, context_size=600,
                                    correct_order_bias=bool(a.correct_order_bias))
    times, scores = [], None
    for _ in range(a.repeat):
        t = time.perf_counter()
        scores = clf.compute_risk_estimates_for_dataframe(df)
        times.append(time.perf_counter() - t)
    json.dump({"folktexts_version": __version__, "times": times, "scores": [float(x) for x in scores]},
              open(a.out, "w"))


if __name__ == "__main__":
    main()
