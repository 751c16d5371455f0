"""R's tiny_model() against the same training in Python (issue 26: "an R function builds the
documented tiny model in well under a minute").

Each round starts fresh processes, interleaved (the side that goes first rotates), and each side
reports the time of the call itself, measured in its own process:

* ``ours``: ``tiny_model()`` in Rscript (R's reference BLAS loaded by libR; the bridge makes torch
  keep its own BLAS, llmsurrogate.rbridge._blas);
* ``python``: ``llmsurrogate.rbridge.testing.r_tiny_model`` (what ``tiny_model()`` calls, the same
  settings) in a fresh Python process, the reference;
* ``r_torch_on_r_blas``: ``tiny_model()`` in Rscript with torch imported before the bridge, so that
  torch's ``sgemm_`` binds to R's BLAS: what ``tiny_model()`` did before the fix.

The final training loss of each side is recorded: ``ours`` and ``python`` train the same model, bit
for bit; with R's reference BLAS the products, and so the loss, differ.

    python benchmarks/bench_r_tiny_model.py [--quick] [--rounds 3]

Writes benchmarks/results/r_tiny_model.json (--quick: benchmarks/quick/r_tiny_model.json, 100
training steps instead of 300, one round).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Run, add_common_args, loadavg, result_path, summarize, threads

REPO = Path(__file__).resolve().parents[1]

# one line of JSON on stdout: the call's own seconds and the final loss
R_CODE = """
if (nzchar(Sys.getenv("BENCH_TORCH_FIRST"))) invisible(reticulate::import("torch"))
suppressPackageStartupMessages(library(llmsurrogate))
t <- Sys.time()
m <- tiny_model(path = Sys.getenv("BENCH_PATH"), steps = as.integer(Sys.getenv("BENCH_STEPS")))
s <- as.numeric(Sys.time() - t, units = "secs")
cat(sprintf('{"seconds": %.6f, "final_loss": %.17g}\\n', s, m$final_loss))
"""

PY_CODE = """
import json, os, time
from llmsurrogate.rbridge.testing import r_tiny_model
t = time.perf_counter()
m = r_tiny_model(os.environ["BENCH_PATH"], steps=int(os.environ["BENCH_STEPS"]))
print(json.dumps({"seconds": time.perf_counter() - t, "final_loss": m["final_loss"]}))
"""


def run_side(side: str, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, BENCH_PATH=str(Path(tmp) / "model"), BENCH_STEPS=str(steps),
                   LLMSURROGATE_PYTHON=sys.executable, RETICULATE_PYTHON=sys.executable,
                   R_LIBS=os.environ.get("R_LIBS", str(REPO / ".rlib")))
        if side == "python":
            cmd = [sys.executable, "-c", PY_CODE]
        else:
            cmd = ["Rscript", "-e", R_CODE]
            if side == "r_torch_on_r_blas":
                env["BENCH_TORCH_FIRST"] = "1"
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    add_common_args(parser)
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 300; --quick: 100)")
    args = parser.parse_args()
    n_threads = threads(args.threads or os.cpu_count() or 1)
    rounds = args.rounds or (1 if args.quick else 3)
    steps = args.steps or (100 if args.quick else 300)
    run = Run("r_tiny_model", quick=args.quick, python_packages=["torch", "transformers", "tokenizers"],
              r_packages=["llmsurrogate", "reticulate"],
              notes=f"seconds of the tiny_model() call itself ({steps} steps of 32 prompts, torch on one thread), "
                    "each round in fresh processes; 'python' is the same training called from Python (the "
                    "reference), 'r_torch_on_r_blas' tiny_model() with torch bound to R's BLAS (before the fix). "
                    f"Thread variables set to {n_threads}; the training itself uses one torch thread. R's call "
                    "includes starting Python and importing torch in that R session (its first call into Python).")
    sides = ["ours", "python", "r_torch_on_r_blas"]
    times: dict[str, list[float]] = {s: [] for s in sides}
    losses: dict[str, list[float]] = {s: [] for s in sides}
    load = loadavg()
    for r in range(rounds):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:
            res = run_side(side, steps)
            times[side].append(res["seconds"])
            losses[side].append(res["final_loss"])
    run.add(f"tiny_model() from R vs Python ({steps} steps, per call)", {s: summarize(t) for s, t in times.items()},
            peer_name="python", rounds=rounds, warmup=0, load_before=load, final_loss=losses,
            same_model_as_python=all(a == b for a, b in zip(losses["ours"], losses["python"])))
    run.write(result_path("r_tiny_model", args.quick, args.out))


if __name__ == "__main__":
    main()
