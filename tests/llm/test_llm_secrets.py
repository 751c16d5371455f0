"""Secrets in endpoint URLs (issue 34, item 5): ``--base-url http://user:PASSWORD@host/v1`` or
``...?api_key=SECRET`` is redacted in every record, log line and error message.

The writers tested, each with such a URL: the backend's ``repr`` and ``identity`` (the scoring
results' ``meta["backend"]``, ``run.json``, the scoring cache's keys), ``LLMPredictor``'s repr, the
manifest's command line, the messages of every error (an unreachable endpoint, a bad URL, a hostile
server quoting the request's ``Authorization`` header back -- with userinfo that header is HTTP Basic,
the base64 of ``user:password``), log records, the response cache, and a whole ``llmsurrogate risk``
run through llama.cpp's real server (stdout, stderr and every file under ``--out`` and ``--cache``).

Hostile-suite strategy for URLs with credentials (this file, not tests/package/test_hostile_inputs.py:
these calls need the ``openai`` extra, sockets and a server, not the hostile suite's memory-capped
child): :func:`credential_urls` draws URLs with userinfo (percent-encoded characters, a user name that
is itself a token) and query parameters whose names say "secret" in many spellings (``api_key``,
``API-KEY``, ``apiKey``, ``access_token``, ``sig``, ``X-Amz-Signature``, ``client_secret``, ...),
mixed with parameters that are not secret (``api-version``), which must survive.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _cli_env import _env  # noqa: E402
from _fault_proxy import FaultProxy  # noqa: E402
from _llama_server import MODEL_ALIAS, LlamaServer, gpt2_to_gguf, llama_cpp_available  # noqa: E402

pytest.importorskip("openai")

USER = "alice-USERNAME-5d1e"
PASSWORD = "pw-PASSWORD-DO-NOT-LEAK-93b1"
QUERY_SECRET = "qs-SECRET-DO-NOT-LEAK-c04f"
SIG = "sig-SIGNATURE-DO-NOT-LEAK-77aa"
KEY = "sk-envkey-DO-NOT-LEAK-1f2e"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
SECRETS = (PASSWORD, QUERY_SECRET, SIG, KEY, BASIC)

needs_server = pytest.mark.skipif(not llama_cpp_available(),
                                  reason="llama-cpp-python[server] is not installed (pip install 'llmsurrogate[serve]'; "
                                         "make test installs it)")


def _closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _secret_url(host_port: str, path: str = "/v1") -> str:
    return (f"http://{USER}:{PASSWORD}@{host_port}{path}?api_key={QUERY_SECRET}&api-version=2024-06-01"
            f"&Sig={SIG}")


def _leaks(text: str, secrets=SECRETS) -> list[str]:
    return [s for s in secrets if s in text]


# ------------------------------------------------------------------ the one redaction helper

def test_redact_url_hides_userinfo_and_secret_query_values_only():
    from llmsurrogate._redact import REDACTED, redact_text, redact_url

    url = _secret_url("127.0.0.1:8000")
    got = redact_url(url)
    assert _leaks(got) == [] and USER not in got
    assert got == f"http://{REDACTED}@127.0.0.1:8000/v1?api_key={REDACTED}&api-version=2024-06-01&Sig={REDACTED}"
    # nothing to hide: the URL comes back unchanged, byte for byte
    for plain in ("http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "https://h/v1?api-version=2024-06-01&x=",
                  "http://[::1]:8000/v1"):
        assert redact_url(plain) == plain
    # in running text: every URL, wherever it sits (quotes, parentheses, end of a sentence)
    text = f"request to {url} failed ('{url}'; see <{url}>). Also {url}."
    assert _leaks(redact_text(text)) == []
    assert redact_text(text).count("127.0.0.1:8000/v1") == 4


# ------------------------------------------------------------------ writers without a server

def test_backend_repr_identity_and_predictor_hold_no_url_secret():
    from llmsurrogate import testing
    from llmsurrogate.llm.openai_backend import OpenAIBackend
    from llmsurrogate.llm.scoring import LLMPredictor

    be = OpenAIBackend("m", base_url=_secret_url(f"127.0.0.1:{_closed_port()}"), token_ids=False)
    shown = repr(be) + json.dumps(be.identity) + repr(LLMPredictor(be, testing.synthetic_income_task()))
    assert _leaks(shown) == [] and USER not in shown
    assert "api-version=2024-06-01" in be.identity["base_url"]  # what is not secret stays (part of the endpoint)


def test_error_messages_and_logs_hold_no_url_secret(caplog, monkeypatch):
    """An unreachable endpoint: the message of the error after the retries (and every log record
    of the run) names the endpoint without its secrets."""
    from llmsurrogate.llm.openai_backend import OpenAIBackend, RequestFailedError

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    be = OpenAIBackend("m", base_url=_secret_url(f"127.0.0.1:{_closed_port()}"), max_retries=1, backoff=0.0,
                       timeout=2.0, token_ids=False)
    with caplog.at_level(logging.DEBUG), pytest.raises(RequestFailedError) as ei:
        be.generate(["Hello"], max_new_tokens=1)
    import traceback

    text = "".join(traceback.format_exception(ei.value)) + caplog.text
    assert "127.0.0.1" in str(ei.value)
    assert _leaks(text) == [], text[-2000:]


def test_a_bad_url_is_refused_without_echoing_its_secret():
    from llmsurrogate.exceptions import InvalidArgumentError
    from llmsurrogate.llm.openai_backend import OpenAIBackend

    with pytest.raises(InvalidArgumentError, match="base_url") as ei:
        OpenAIBackend("m", base_url=f"ftp://{USER}:{PASSWORD}@h/v1?token={QUERY_SECRET}")
    assert _leaks(str(ei.value)) == []


def test_manifest_command_line_holds_no_url_secret():
    from llmsurrogate._manifest import redact_command_line

    argv = ["llmsurrogate", "risk", "--base-url", _secret_url("h:1"), f"--base-url={_secret_url('h:2')}",
            "--model", "m"]
    got = redact_command_line(argv)
    assert _leaks(" ".join(got)) == []
    assert got[0:3] == argv[0:3] and got[-2:] == ["--model", "m"] and "h:1/v1" in got[3] and "h:2/v1" in got[4]


class _Refusing:
    """An HTTP server on 127.0.0.1 that answers every request 401 (a wrong password), quoting the
    request's URL back the way some servers do."""

    def __enter__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _refuse(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                body = json.dumps({"error": {"message": f"unauthorized: {self.path}", "type": "auth"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _refuse

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_cli_error_holds_no_url_secret(tmp_path):
    """The command line against an endpoint that refuses the credentials (HTTP 401, the request's
    path and query quoted back): exit 1, one line on stderr, no secret, nothing written that holds one."""
    from llmsurrogate import testing

    data = tmp_path / "rows.csv"
    testing.synthetic_census(2, seed=4).to_csv(data, index=False)
    with _Refusing() as server:
        url = _secret_url(f"127.0.0.1:{server.port}")
        out = subprocess.run(_risk_args(url, data, tmp_path / "cache", tmp_path / "out"),
                             env=_env(OPENAI_API_KEY=KEY), capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    assert "Error:" in out.stderr and "127.0.0.1" in out.stderr
    assert _leaks(out.stdout + out.stderr) == [], out.stderr[-2000:]
    for f in [f for d in (tmp_path / "cache", tmp_path / "out") if d.exists() for f in d.rglob("*") if f.is_file()]:
        assert _leaks(f.read_bytes().decode("latin-1")) == [], f


# ------------------------------------------------------------------ hostile strategy: URLs with credentials

_SECRET_NAMES = ("api_key", "API_KEY", "api-key", "apiKey", "ApiKey", "key", "KEY", "token", "Token", "access_token",
                 "accessToken", "refresh_token", "id_token", "auth", "Authorization", "password", "passwd", "pwd",
                 "secret", "client_secret", "sig", "SIG", "signature", "X-Amz-Signature", "X-Amz-Security-Token",
                 "x-api-key", "subscription-key", "session", "sessionid", "credential", "jwt", "code")
_PLAIN_NAMES = ("api-version", "model", "deployment", "format", "region", "v", "user_agent_hint")
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


_HOSTS = st.sampled_from(["127.0.0.1:8000", "example.org", "gw.example.org:8443", "[::1]:9000", "localhost"])


@st.composite
def credential_urls(draw, hosts=_HOSTS):
    """(url, secrets that must not appear, plain parts that must stay)."""
    secret = st.text(_ALPHABET, min_size=10, max_size=24).map(lambda s: "S3cr" + s)
    scheme = draw(st.sampled_from(["http", "https"]))
    host = draw(hosts)
    path = draw(st.sampled_from(["/v1", "/openai/v1", "", "/v1/"]))
    secrets, plain = [], []
    userinfo = ""
    form = draw(st.sampled_from(["none", "user:password", "token@", "user:encoded"]))
    if form == "user:password":
        user, pw = "U" + draw(secret), draw(secret)
        userinfo, secrets = f"{user}:{pw}@", [user, pw]
    elif form == "token@":
        tok = draw(secret)
        userinfo, secrets = f"{tok}@", [tok]
    elif form == "user:encoded":
        pw = draw(secret) + draw(st.sampled_from(["@:/", "%#?", " &="]))
        userinfo = f"bob:{quote(pw, safe='')}@"
        secrets = [quote(pw, safe=""), pw]
    params = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            v = draw(secret)
            params.append(f"{draw(st.sampled_from(_SECRET_NAMES))}={v}")
            secrets.append(v)
        else:
            name, v = draw(st.sampled_from(_PLAIN_NAMES)), draw(st.sampled_from(["2024-06-01", "gpt", "eu", "1"]))
            params.append(f"{name}={v}")
            plain.append(f"{name}={v}")
    query = ("?" + "&".join(params)) if params else ""
    return f"{scheme}://{userinfo}{host}{path}{query}", secrets, plain + [host]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=credential_urls())
def test_hostile_credential_urls_are_redacted_everywhere_but_the_endpoint_stays(case):
    from llmsurrogate._manifest import redact_command_line
    from llmsurrogate._redact import redact_text, redact_url
    from llmsurrogate.llm.openai_backend import OpenAIBackend

    url, secrets, plain = case
    be = OpenAIBackend("m", base_url=url, token_ids=False)
    written = [redact_url(url), redact_text(f"failed: {url}."), " ".join(redact_command_line(["x", "--base-url", url])),
               repr(be), json.dumps(be.identity)]
    for text in written:
        assert _leaks(text, secrets) == [], (url, text)
        for part in plain:
            assert part in text, (url, part, text)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=credential_urls(hosts=st.builds(lambda: f"127.0.0.1:{_closed_port()}")))
def test_hostile_credential_urls_never_reach_an_error_message(case):
    """The same URLs pointed at a closed port of 127.0.0.1: the error names the endpoint, never a secret."""
    from llmsurrogate.llm.openai_backend import OpenAIBackend, RequestFailedError

    url, secrets, _ = case
    be = OpenAIBackend("m", base_url=url, max_retries=0, timeout=2.0, token_ids=False)
    with pytest.raises(RequestFailedError) as ei:
        be.generate(["x"], max_new_tokens=1)
    assert _leaks(str(ei.value), secrets) == [], str(ei.value)


# ------------------------------------------------------------------ a real server: the whole run

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed (pip install 'llmsurrogate[serve]'; make test installs it)")
    pytest.importorskip("torch")
    from llmsurrogate import testing

    root = tmp_path_factory.mktemp("secrets_tiny")
    model = testing.build_model(root / "gpt2", "gpt2", seed=1)
    with LlamaServer(gpt2_to_gguf(model, root / "gpt2.gguf"), log_path=root / "server.log") as srv:
        yield srv


def _risk_args(url, data, cache, out, *extra):
    return [sys.executable, "-m", "llmsurrogate.cli", "risk", "--data", str(data), "--task", "ACSIncome",
            "--backend", "openai", "--model", MODEL_ALIAS, "--base-url", url, "--cache", str(cache), "--out", str(out),
            "--n-boot", "0", "--no-plot", *extra]


@needs_server
def test_cli_run_through_a_credential_url_writes_no_secret(server, tmp_path):
    """A whole ``llmsurrogate risk`` run through ``http://user:PASSWORD@host/v1?api_key=SECRET``
    (the proxy answers some requests with 500 first): it works (the query goes with every request),
    and neither its output nor any file it writes holds a secret; run.json names the endpoint."""
    from llmsurrogate import testing

    data = tmp_path / "rows.csv"
    testing.synthetic_census(4, seed=9).to_csv(data, index=False)
    with FaultProxy(server.url, faults={"500": 0.3}) as proxy:
        url = _secret_url(f"127.0.0.1:{proxy.port}")
        out = subprocess.run(_risk_args(url, data, tmp_path / "cache", tmp_path / "out"),
                             env=_env(OPENAI_API_KEY=KEY), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert proxy.counts["delivered"] >= 8  # 4 rows x 2 answer orders answered
    assert _leaks(out.stdout + out.stderr) == []
    written = [f for d in (tmp_path / "cache", tmp_path / "out") for f in d.rglob("*") if f.is_file()]
    assert len(written) >= 3
    for f in written:
        assert _leaks(f.read_bytes().decode("latin-1")) == [], f
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert f"127.0.0.1:{proxy.port}/v1" in run["backend"]["base_url"]
    assert "api-version=2024-06-01" in run["backend"]["base_url"]


@needs_server
def test_hostile_server_quoting_basic_auth_back_leaks_nothing(server, tmp_path, caplog):
    """With userinfo the client sends HTTP Basic (base64 of user:password); a server that quotes the
    header back in its errors must not get it into the error, the logs or the cache."""
    from llmsurrogate.llm.openai_backend import OpenAIBackend, RequestFailedError

    with FaultProxy(server.url, faults={"echo_auth": 1.0}, max_faults_per_prompt=None) as proxy:
        be = OpenAIBackend(MODEL_ALIAS, base_url=_secret_url(f"127.0.0.1:{proxy.port}"), cache=tmp_path / "c",
                           max_retries=1, backoff=0.01, token_ids=False)
        with caplog.at_level(logging.DEBUG), pytest.raises(RequestFailedError) as ei:
            be.generate(["Hello there"], max_new_tokens=1)
        assert proxy.counts["echo_auth"] >= 2  # the header did reach the (hostile) server
    import traceback

    text = "".join(traceback.format_exception(ei.value)) + caplog.text
    assert _leaks(text) == [] and "***" in text, text[-2000:]
    for f in (tmp_path / "c").rglob("*"):
        if f.is_file():
            assert _leaks(f.read_bytes().decode("latin-1")) == [], f
