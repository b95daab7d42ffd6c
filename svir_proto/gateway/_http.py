"""The HTTP/1.1 rules a gateway applies to a client's request head before anything else, and
the small answers it makes itself (RFC 9110, RFC 9112).

Rule 1 (framing, RFC 9112 6.1 and 6.3): a request with both ``Content-Length`` and
    ``Transfer-Encoding`` is refused (400) and its connection closed, even when the sizes agree:
    two framings are how requests are smuggled past a proxy. A folded header line (obs-fold,
    RFC 9112 5.2, which h11 would unfold) is refused the same way, and a version other than
    HTTP/1.0 and HTTP/1.1 is 505 (RFC 9110 15.6.6). A chunked body is read as RFC 9112 7.1
    says (no blank after a size unless an extension follows, a trailer within the head's
    bound) or refused. h11 refuses the rest (several differing lengths, a coding other than
    ``chunked``).
Rule 2 (who may use it, issue 16 item 5): a ``Host`` (or an absolute-form target's authority)
    that is not ``uri-host [":" port]`` (RFC 9110 7.2, RFC 3986 3.2.2: userinfo included, which
    RFC 9110 4.2.4 says to treat as an error) is 400 (RFC 9112 3.2; attack 67 F3:
    ``127.0.0.1:1@evil.com`` was read as loopback). With no token, ``Host`` must name an
    allowed host (the address listened on, a loopback name), else 421: a web page cannot
    reach a gateway on loopback through DNS rebinding. With a token, ``Authorization`` must be
    exactly one header, ``Bearer`` in any case, then the token (compared in constant time);
    two headers are 400.
Rule 3 (status lines): every status is sent with its reason phrase.
Rule 4 (request ids): an id a client gives (``X-Request-Id``, ``metadata.request_id`` of
    either dialect) is used only if it can be a header line as it is: printable ASCII
    (RFC 9110 5.5 field-vchar and inner spaces), no space at either edge, at most
    ``MAX_REQUEST_ID`` characters; any other is dropped, and the gateway makes one.

This module does no I/O.
"""

from __future__ import annotations

import hmac
import http
import re
from collections.abc import Iterable
from typing import Final

__all__: list[str] = []

MAX_REQUEST_ID: Final = 128
"""The longest request id taken from a client (Rule 4)."""
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


_REASONS: Final = {s.value: s.phrase.encode() for s in http.HTTPStatus}


def reason(status: int) -> bytes:
    """Rule 3: the reason phrase of a status (RFC 9110 section 15)."""
    return _REASONS.get(status, b"Unknown")


def request_id(value: str | None) -> str | None:
    """Rule 4: ``value`` if it may be a request id, else ``None`` (the gateway makes one)."""
    if (
        not value
        or len(value) > MAX_REQUEST_ID
        or not (value.isascii() and value.isprintable())
        or value != value.strip()
    ):
        return None
    return value


_HOST: Final = re.compile(
    r"(?:\[[0-9A-Fa-f:.]+\]|\[[vV][0-9A-Fa-f]+\.[A-Za-z0-9._~!$&'()*+,;=:-]+\]"
    r"|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?"
)
"""``uri-host [":" port]`` (RFC 3986 3.2.2: an IP literal in brackets, or a reg-name)."""


def host_valid(value: str) -> bool:
    """Rule 2: whether a ``Host`` value (or an authority) is a host and a port, nothing else."""
    return _HOST.fullmatch(value.strip()) is not None


def host_name(value: str) -> str:
    """The host of a ``Host`` header, lower case, without its port (``[::1]:80`` -> ``[::1]``)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def host_allowed(host: str | None, allowed: frozenset[str] | None) -> bool:
    """Rule 2: whether ``Host`` names one of ``allowed`` (``None``: any host)."""
    if allowed is None:
        return True
    if host is None:
        return False
    name = host_name(host)
    return name in allowed or name.endswith(".localhost") or name == "localhost"


def bearer(values: Iterable[str]) -> str | bool | None:
    """Rule 2: the token of the one ``Authorization: Bearer`` header; ``None``: no header or
    another scheme; ``False``: two headers (a request to refuse outright)."""
    found = list(values)
    if len(found) > 1:
        return False
    if not found:
        return None
    scheme, _, token = found[0].strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()


def token_matches(given: str | bool | None, token: str) -> bool:
    """Constant time, whatever was given."""
    candidate = given if isinstance(given, str) else ""
    return hmac.compare_digest(candidate.encode(), token.encode())
