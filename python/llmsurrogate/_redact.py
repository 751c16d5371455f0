"""Secrets out of every record: the one place that says what in a URL is secret and hides it.

An endpoint URL may carry credentials: userinfo (``http://user:PASSWORD@host/v1``, or a token
alone, ``https://TOKEN@host``) and query parameters (``?api_key=SECRET``, Azure's ``sig=``, S3's
``X-Amz-Signature=``). :func:`redact_url` replaces the whole userinfo and the value of every
parameter whose name says "secret" (:func:`is_secret_name`) by :data:`REDACTED`; everything else
(scheme, host, port, path, ``api-version=...``) stays byte for byte, so a record still says which
endpoint answered. :func:`redact_text` does that to every URL in a text (error messages, log lines,
the words of a command line, ``run.json``); :func:`url_secrets` lists the secret strings of one URL
(decoded too, and the HTTP Basic token a client makes of the userinfo) for code that must also
scrub them where they appear without their URL (a server quoting a request header back).

>>> redact_url("http://me:pw@127.0.0.1:8000/v1?api_key=s3&api-version=2024-06-01")
'http://***@127.0.0.1:8000/v1?api_key=***&api-version=2024-06-01'
>>> redact_text("request to https://h/v1?Token=abc failed.")
'request to https://h/v1?Token=*** failed.'
"""

from __future__ import annotations

import base64
import logging
import re
from urllib.parse import unquote, unquote_plus

__all__ = ["REDACTED", "is_secret_name", "redact_url", "redact_text", "url_secrets", "redact_logs"]

#: What replaces a secret.
REDACTED = "***"

#: A parameter whose name (lower case, letters and digits only) contains one of these is secret.
_SECRET_PARTS = ("key", "token", "secret", "password", "passwd", "pwd", "signature", "credential", "auth",
                 "session", "jwt", "cookie", "bearer")
#: ... and one whose name is one of these (short names that would match too much inside others).
_SECRET_NAMES = frozenset({"sig", "code", "pass", "pw", "sid", "sas"})

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
_TRAILING = ".,;:!?)]}"


def is_secret_name(name: str) -> bool:
    """Whether a query parameter named ``name`` holds a secret (any case, any separators).

    >>> [is_secret_name(n) for n in ("api_key", "X-Amz-Signature", "accessToken", "sig", "api-version", "model")]
    [True, True, True, True, False, False]
    """
    n = re.sub(r"[^a-z0-9]", "", unquote_plus(str(name)).lower())
    return n in _SECRET_NAMES or any(part in n for part in _SECRET_PARTS)


def _redact_params(text: str) -> str:
    """``a=1&api_key=s`` -> ``a=1&api_key=***`` (separators ``&`` and ``;`` kept as they are)."""
    out = []
    for part in re.split(r"([&;])", text):
        name, eq, value = part.partition("=")
        out.append(f"{name}={REDACTED}" if eq and value and is_secret_name(name) else part)
    return "".join(out)


def _split(url: str) -> tuple[str, str, str, str, str] | None:
    """(scheme://, userinfo or '', host[:port], path, rest from ? or #), or None: not a URL."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#]*)(.*)$", url, re.S)
    if not m:
        return None
    scheme, authority, tail = m.groups()
    userinfo, at, host = authority.rpartition("@")
    cut = min([i for i in (tail.find("?"), tail.find("#")) if i >= 0], default=len(tail))
    return scheme, (userinfo if at else ""), host, tail[:cut], tail[cut:]


def redact_url(url: str) -> str:
    """``url`` with its userinfo and the values of its secret query (and fragment) parameters
    replaced by :data:`REDACTED`; a URL with neither comes back unchanged.

    >>> redact_url("https://TOKEN@gw.example.org/openai/v1?sig=abc&format=json#access_token=x")
    'https://***@gw.example.org/openai/v1?sig=***&format=json#access_token=***'
    >>> redact_url("https://api.openai.com/v1")
    'https://api.openai.com/v1'
    """
    text = str(url)
    parts = _split(text)
    if parts is None:
        return text
    scheme, userinfo, host, path, rest = parts
    query, hash_, fragment = rest.partition("#")
    if query.startswith("?"):
        query = "?" + _redact_params(query[1:])
    fragment = _redact_params(fragment) if "=" in fragment else fragment
    return f"{scheme}{REDACTED + '@' if userinfo else ''}{host}{path}{query}{hash_}{fragment}"


def redact_text(text: object) -> str:
    """``text`` with every URL in it passed through :func:`redact_url` (punctuation that ends a
    sentence or closes a bracket after a URL is not taken as part of it).

    >>> redact_text("('http://u:p@h/v1'), and <http://h/v1?key=k>.")
    "('http://***@h/v1'), and <http://h/v1?key=***>."
    """
    def one(m: re.Match) -> str:
        url = m.group(0)
        tail = ""
        while url and url[-1] in _TRAILING:
            url, tail = url[:-1], url[-1] + tail
        return redact_url(url) + tail

    return _URL.sub(one, str(text))


def url_secrets(url: str) -> list[str]:
    """The secret strings of ``url`` as they may appear elsewhere: the userinfo and its password
    (as written and percent-decoded; the user name alone only where there is no password: then it
    is the token), the values of secret parameters (both forms) and the HTTP Basic token of the
    userinfo (what a client sends in ``Authorization``). Longest first.

    >>> url_secrets("http://me:pw%21@h/v1?token=t0k")
    ['me:pw%21', 'bWU6cHch', 'me:pw!', 'pw%21', 'pw!', 't0k']
    """
    parts = _split(str(url))
    if parts is None:
        return []
    _, userinfo, _, _, rest = parts
    found: list[str] = []
    if userinfo:
        user, _, password = userinfo.partition(":")
        found += [userinfo, password, unquote(userinfo), unquote(password)]
        if not password:  # https://TOKEN@host: the name is the secret
            found += [user, unquote(user)]
        token = f"{unquote(user)}:{unquote(password)}".encode("utf-8")
        found.append(base64.b64encode(token).decode("ascii"))
    query, _, fragment = rest.partition("#")
    for chunk in (query.lstrip("?"), fragment):
        for part in re.split(r"[&;]", chunk):
            name, eq, value = part.partition("=")
            if eq and value and is_secret_name(name):
                found += [value, unquote_plus(value)]
    unique = sorted({s for s in found if s}, key=lambda s: (-len(s), found.index(s)))
    return unique


class _RedactingFilter(logging.Filter):
    """Rewrites a log record whose message holds a URL with a secret (``httpx`` logs every
    request's URL at INFO, userinfo and query included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is left to logging
            return True
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = _RedactingFilter()
#: The loggers of the HTTP clients an endpoint URL goes through (the ``openai`` client and its
#: transport, urllib3 for anything else).
CLIENT_LOGGERS = ("openai", "openai._base_client", "httpx", "httpx2", "httpcore", "httpcore2", "urllib3",
                  "urllib3.connectionpool")


def redact_logs(names=CLIENT_LOGGERS) -> None:
    """Attach the redacting filter to the loggers ``names`` (once each): their records keep no
    URL secret, whatever handler the user configured."""
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
