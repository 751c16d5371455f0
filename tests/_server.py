"""The shared life cycle of the tests' real OpenAI-compatible servers (:class:`ServerProcess`):
a child process on a free port of 127.0.0.1, started without the caller's ``OPENAI_API_KEY``,
its output in a log file, ready when ``/v1/models`` answers (bounded), stopped by terminate, then
kill. :class:`~_llama_server.LlamaServer` (llama.cpp) and :class:`~_vllm_server.VLLMServer`
(vLLM) say only which command to run and how long to wait.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """A server child process; subclasses give :meth:`command` and the class attributes below."""

    #: the server's name in error messages
    name = "server"
    #: seconds between readiness probes
    poll_interval = 0.2
    #: seconds to wait after terminate before kill
    stop_timeout = 10
    #: characters of the log's end quoted when the server fails
    log_tail = 2000
    #: quote the log's end when the server does not answer in time (not only when it exits)
    log_on_timeout = False

    def __init__(self, *, log_path: Path, startup_timeout: float):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(log_path)
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """The child's environment: this process's, without the API key."""
        return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}

    def _log_end(self) -> str:
        return self.log_path.read_text(errors="replace")[-self.log_tail:]

    def start(self):
        cmd, env = self.command(), self.environment()
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self._log_end()}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(self.poll_interval)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer within {self.startup_timeout}s"
                           + (f": {self._log_end()}" if self.log_on_timeout else ""))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
