"""A small HTTP proxy on 127.0.0.1 that sits between a client and an upstream server on 127.0.0.1,
injects faults into a fraction of the requests, adds latency, and counts everything.

Faults (chosen per request from a seeded generator, so a run is reproducible):

* ``429``: answers 429 with ``Retry-After`` (seconds, fractional) without forwarding;
* ``500``: answers 500 with a JSON error body without forwarding;
* ``slow``: forwards, then holds the answer past the client's timeout (``slow_seconds``);
* ``truncated``: forwards, then returns 200 with the body cut in half (malformed JSON);
* ``drop``: forwards, then closes the connection without an answer;
* ``echo_auth``: answers 500 with a body that quotes the request's Authorization header (a hostile
  server: the client must not put the key into its errors).

Counts (thread-safe): ``requests`` (every POST: completions and vLLM's ``/tokenize``), ``get``
(GETs: the model list a client reads to tell the server; forwarded, never faulted, counted nowhere
else), ``forwarded`` (reached upstream), per fault kind; and for completion requests only
(``.../completions``): ``delivered`` (a complete 200 went back) and per prompt text
(``prompt_requests`` / ``prompt_delivered``). ``log`` holds (time, prompt, event) of completion
requests: ``"arrive"`` when one comes in, then its outcome (a fault's name, ``"delivered"``,
``"http_<status>"``) when it is answered.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FAULTS = ("429", "500", "slow", "truncated", "drop", "echo_auth")


def _prompt_of(body: bytes) -> str:
    try:
        d = json.loads(body)
    except ValueError:
        return ""
    if "prompt" in d:
        p = d["prompt"]
        return p if isinstance(p, str) else json.dumps(p)
    msgs = d.get("messages") or []
    return msgs[-1].get("content", "") if msgs else ""


class FaultProxy:
    """``FaultProxy(upstream_url, faults={"429": 0.1, ...}, latency=0.2)`` -> ``.url`` to give
    the client (same path prefix as the upstream's)."""

    def __init__(self, upstream: str, *, faults: dict[str, float] | None = None, latency: float = 0.0,
                 retry_after: float = 0.3, slow_seconds: float = 3.0, seed: int = 0, max_faults_per_prompt: int | None = 3):
        up = urlsplit(upstream)
        if up.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the proxy forwards to 127.0.0.1 only")
        self.up_host, self.up_port, self.prefix = "127.0.0.1", up.port, up.path.rstrip("/")
        self.faults = dict(faults or {})
        unknown = set(self.faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {unknown}")
        self.latency, self.retry_after, self.slow_seconds = latency, retry_after, slow_seconds
        self.max_faults_per_prompt = max_faults_per_prompt
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.counts: Counter = Counter()
        self.prompt_requests: Counter = Counter()
        self.prompt_delivered: Counter = Counter()
        self.prompt_faults: Counter = Counter()
        self.log: list[tuple[float, str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                proxy._handle(self, b"")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                proxy._handle(self, self.rfile.read(n) if n else b"")

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that went away (killed): quiet
                with proxy._lock:
                    proxy.counts["connection_errors"] += 1

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{self.prefix}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()
            self.prompt_requests.clear()
            self.prompt_delivered.clear()
            self.prompt_faults.clear()
            self.log.clear()

    def _pick(self, prompt: str) -> str | None:
        with self._lock:
            r = self._rng.random()
            if self.max_faults_per_prompt is not None and self.prompt_faults[prompt] >= self.max_faults_per_prompt:
                return None
            acc = 0.0
            for name, frac in self.faults.items():
                acc += frac
                if r < acc:
                    self.prompt_faults[prompt] += 1
                    return name
        return None

    def _note(self, prompt: str, outcome: str, completion: bool = True) -> None:
        if not completion:  # /tokenize: counted in `requests` (and its faults) only
            return
        with self._lock:
            if outcome not in FAULTS:  # faults are counted when injected (a slow one may still sleep)
                self.counts[outcome] += 1
            self.log.append((time.monotonic(), prompt, outcome))
            if outcome == "delivered":
                self.prompt_delivered[prompt] += 1

    def _forward(self, handler, body: bytes, count: bool = True):
        conn = http.client.HTTPConnection(self.up_host, self.up_port, timeout=120)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        headers["Content-Length"] = str(len(body))
        conn.request(handler.command, handler.path, body=body if handler.command == "POST" else None, headers=headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        if count:
            with self._lock:
                self.counts["forwarded"] += 1
        return r.status, r.getheader("Content-Type") or "application/json", data

    @staticmethod
    def _reply(handler, status: int, data: bytes, ctype: str = "application/json", extra: dict | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()

    def _handle(self, handler, body: bytes) -> None:
        if handler.command == "GET":
            with self._lock:
                self.counts["get"] += 1
            try:
                status, ctype, data = self._forward(handler, b"", count=False)
                self._reply(handler, status, data, ctype)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        prompt = _prompt_of(body) if body else ""
        completion = handler.path.split("?")[0].endswith("/completions")
        with self._lock:
            self.counts["requests"] += 1
            if body and completion:
                self.prompt_requests[prompt] += 1
                self.log.append((time.monotonic(), prompt, "arrive"))
        if self.latency:
            time.sleep(self.latency)
        fault = self._pick(prompt) if body else None
        if fault:
            with self._lock:
                self.counts[fault] += 1
        try:
            if fault == "429":
                self._reply(handler, 429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}',
                            extra={"Retry-After": f"{self.retry_after:g}"})
                self._note(prompt, "429", completion)
                return
            if fault == "500":
                self._reply(handler, 500, b'{"error": {"message": "internal error", "type": "server_error"}}')
                self._note(prompt, "500", completion)
                return
            if fault == "echo_auth":
                msg = json.dumps({"error": {"message": f"bad auth header: {handler.headers.get('Authorization')}"}})
                self._reply(handler, 500, msg.encode())
                self._note(prompt, "echo_auth", completion)
                return
            status, ctype, data = self._forward(handler, body)
            if fault == "slow":
                time.sleep(self.slow_seconds)
                try:
                    self._reply(handler, status, data, ctype)
                except OSError:
                    pass
                self._note(prompt, "slow", completion)
                return
            if fault == "truncated":
                self._reply(handler, 200, data[: len(data) // 2], ctype)
                self._note(prompt, "truncated", completion)
                return
            if fault == "drop":
                handler.close_connection = True
                try:
                    handler.connection.shutdown(2)
                except OSError:
                    pass
                self._note(prompt, "drop", completion)
                return
            self._reply(handler, status, data, ctype)
            self._note(prompt, "delivered" if status == 200 else f"http_{status}", completion)
        except (BrokenPipeError, ConnectionResetError):
            self._note(prompt, "client_gone", completion)
