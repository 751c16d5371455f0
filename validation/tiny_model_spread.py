"""How much the README's tiny-model numbers move from CPU to CPU (issue 34 §1).

``testing.train_tiny_model`` trains in float32 on the CPU. Which SIMD kernels torch, MKL and oneDNN
pick depends on the processor (AVX-512 with AMX here, AVX2 on an older Xeon, SSE on anything), and
each gives float32 sums in another order: the trained weights, and the README's ROC AUC, ECE and
score range, differ from one CPU to the next (one new 2-core Xeon gave AUC 0.72 where the README said
0.71). This script trains the README's model once per *kernel variant* -- the environment variables
with which torch (``ATEN_CPU_CAPABILITY``), MKL (``MKL_ENABLE_INSTRUCTIONS``) and oneDNN
(``ONEDNN_MAX_CPU_ISA``) take the code paths another CPU would take -- each in a fresh process, and
records the README's numbers for each, with a hash of the trained weights to show the variants really
trained different models. ``tests/package/test_readme.py`` allows each number the spread found here
(plus a margin); the README states the numbers of one CPU and that tolerance.

Run (about 2-3 minutes a variant on 2 cores)::

    python validation/tiny_model_spread.py            # -> validation/results/tiny_model_spread.json
    python validation/tiny_model_spread.py --variants native avx2   # a subset
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "validation" / "results" / "tiny_model_spread.json"

# name -> environment: the kernels another CPU would run (each only narrows what this CPU may use)
VARIANTS = {
    "native": {},
    "aten_avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "aten_default": {"ATEN_CPU_CAPABILITY": "default"},
    "avx2_cpu": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "sse_cpu": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}

CHILD = r'''
import hashlib, json, sys
import numpy as np
from llmsurrogate import risk, testing
from llmsurrogate.llm import TransformersBackend

path = sys.argv[1]
info = testing.train_tiny_model(path, progress=False)          # the README's call (defaults)
backend = TransformersBackend(path)
census = testing.synthetic_census(1000, seed=1)
num = risk.risk_scores(census, testing.synthetic_income_task(), backend, method="numeric")
ev = num.evaluate(groups=census["SEX"])
auc = ev.metrics.set_index("metric").loc["roc_auc"]
scores = np.asarray(num.scores)
import torch
weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in backend.model.parameters())).hexdigest()
print(json.dumps({"final_loss": info["final_loss"], "seconds": info["seconds"], "weights_sha256": weights[:16],
                  "roc_auc": float(auc["value"]), "roc_auc_ci": [float(auc["ci_low"]), float(auc["ci_high"])],
                  "ece": float(ev.metric("ece")), "score_min": float(scores.min()), "score_max": float(scores.max()),
                  "torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability()}))
'''


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    results = {}
    for name in args.variants:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "HF_HUB_OFFLINE": "1", **VARIANTS[name]}
            run = subprocess.run([sys.executable, "-c", CHILD, str(Path(tmp) / "tiny-gpt2")], env=env,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                raise SystemExit(f"variant {name} failed:\n{run.stderr[-2000:]}")
            results[name] = {"env": VARIANTS[name], **json.loads(run.stdout.strip().splitlines()[-1])}
            print(name, json.dumps(results[name]), flush=True)
    keys = ("roc_auc", "ece", "score_min", "score_max")
    spread = {k: [min(r[k] for r in results.values()), max(r[k] for r in results.values())] for k in keys}
    distinct = len({r["weights_sha256"] for r in results.values()})
    args.out.write_text(json.dumps({"cpu": _cpu(), "variants": results, "spread": spread,
                                    "distinct_trained_models": distinct,
                                    "script": "validation/tiny_model_spread.py"}, indent=1) + "\n")
    print(f"spread over {len(results)} variants ({distinct} distinct trained models): {spread} -> {args.out}")


if __name__ == "__main__":
    main()
