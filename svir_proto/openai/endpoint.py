"""Where requests go (wire reference section 1) and what ``GET /v1/models`` says (section 6).

`Endpoint` normalises a base URL written with or without ``/v1`` and with trailing slashes (so
never ``/v1/v1/models``), rejects userinfo, a query or a fragment, and gives the request targets
and the complete request headers, so that a caller who sends the request with a client of its
own (httpx, aiohttp, a socket) sends what svir-proto's transports send. `parse_models` reads a
model list and tells chat models from the rest by the practical name heuristic.

Rule 1 (the headers): Host, Accept, ``Accept-Encoding: identity`` (the decoders read the bytes
    as sent: a server must not compress them), the User-Agent, the bearer token if any, and for
    a body its Content-Type and exact Content-Length; then the caller's own headers
    (`request_headers`), which replace ours of the same name, except the ones that frame the
    body or choose the dialect, which only svir-proto may set.

No I/O: `Endpoint.from_env` reads the mapping it is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final, final
from urllib.parse import urlsplit

import attrs

from .._version import VERSION
from .models import ModelInfo as ModelInfo  # (their home is `models`: imported here as before)
from .models import ModelKind as ModelKind
from .models import model_kind as model_kind
from .models import parse_models as parse_models

__all__ = [
    "DEFAULT_BASE_URL",
    "USER_AGENT",
    "Endpoint",
    "HeaderItems",
    "merge_headers",
    "request_headers",
]

USER_AGENT: Final = f"svir-proto/{VERSION}"
DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
"""Where openai-python sends requests when ``OPENAI_BASE_URL`` is not set."""

HeaderItems = Mapping[str, str] | Iterable[tuple[str, str]]
"""Request headers as a caller gives them: a mapping, or (name, value) pairs (a name may then
repeat)."""

# RFC 9110 5.1 (a token) and 5.5 (a field value: no CR, LF or NUL)
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BAD_VALUE: Final = re.compile(r"[\r\n\x00]")
MANAGED: Final = frozenset(
    {"host", "content-length", "transfer-encoding", "content-type", "accept", "accept-encoding"}
)
"""Headers only svir-proto sets: they frame the body, or say what the decoder can read."""
_OURS: Final = MANAGED | {"user-agent", "authorization"}
"""Every header `Endpoint.headers` may set."""


def request_headers(
    headers: HeaderItems | None, *, where: str = "headers"
) -> tuple[tuple[str, str], ...]:
    """A caller's extra request headers, checked (Rule 1): names are tokens, values single
    lines, and none of the `MANAGED` ones.

    Raises:
        ValueError: naming the header that is wrong.
        TypeError: a name or a value that is not a ``str``.
    """
    if headers is None:
        return ()
    items = tuple(headers.items() if isinstance(headers, Mapping) else headers)
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"{where}: each header must be a (name, value) pair, not {item!r}")
        name, value = item
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{where}[{name!r}]: a header's name and value must be str")
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"{where}: {name!r} is not a header name")
        if _BAD_VALUE.search(value):
            raise ValueError(f"{where}[{name!r}]: a header value must be one line")
        if name.lower() in MANAGED:
            raise ValueError(
                f"{where}[{name!r}]: svir-proto sets this header itself (it frames the body or "
                "says what the decoder reads)"
            )
    return items


def merge_headers(*layers: HeaderItems | None) -> tuple[tuple[str, str], ...]:
    """Caller headers from several places (a client's, then one request's): each layer's
    names replace the earlier layers' headers of the same name, case-insensitively.

    Raises:
        ValueError, TypeError: as `request_headers`.
    """
    out: tuple[tuple[str, str], ...] = ()
    for layer in layers:
        items = request_headers(layer)
        if items:
            names = {name.lower() for name, _ in items}
            out = (*(item for item in out if item[0].lower() not in names), *items)
    return out


@final
@attrs.frozen
class Endpoint:
    """An OpenAI-compatible server's base URL, normalised.

    Attributes:
        scheme, host, port: where to connect.
        prefix: the path up to and including ``/v1``.
        api_key: sent as ``Authorization: Bearer``; ``None`` sends none (LM Studio's default).
            Another dialect's request sends it where that API expects it
            (`svir_proto.dialects.DialectSpec.headers`: ``x-api-key`` to Anthropic's), unless
            ``bearer``.
        bearer: send the key as ``Authorization: Bearer`` whatever the dialect: a server of
            another vendor's dialect that reads only that (vLLM's ``/v1/messages``,
            vllm-project/vllm#51572; Ollama Cloud's).
    """

    scheme: str
    host: str
    port: int
    prefix: str
    api_key: str | None = attrs.field(default=None, repr=False)
    bearer: bool = attrs.field(default=False, kw_only=True)

    @classmethod
    def parse(cls, base_url: str, api_key: str | None = None, *, bearer: bool = False) -> Endpoint:
        """Raises ValueError naming what is wrong with ``base_url``."""
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"base URL {base_url!r}: the scheme must be http or https")
        if parts.username is not None or parts.password is not None:
            raise ValueError(f"base URL {base_url!r}: no user or password in the URL; pass api_key")
        if parts.query or base_url.rstrip().endswith("?"):
            raise ValueError(f"base URL {base_url!r} must not carry a query")
        if parts.fragment or "#" in base_url:
            raise ValueError(f"base URL {base_url!r} must not carry a fragment")
        if not parts.hostname:
            raise ValueError(f"base URL {base_url!r} has no host")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise ValueError(f"base URL {base_url!r}: bad port: {exc}") from exc
        path = parts.path.rstrip("/")
        if not path.endswith("/v1"):
            path += "/v1"
        if api_key is not None and ("\r" in api_key or "\n" in api_key or not api_key):
            raise ValueError("api_key must be a non-empty single line")
        return cls(parts.scheme, parts.hostname, port, path, api_key, bearer=bearer)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Endpoint:
        """The endpoint openai-python would use: ``OPENAI_BASE_URL`` (else OpenAI's own,
        `DEFAULT_BASE_URL`) and ``OPENAI_API_KEY`` from ``environ`` (pass ``os.environ``).
        Empty values count as unset, as openai-python counts them.

        Raises:
            ValueError: the base URL or the key is malformed.
        """
        base = environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        return cls.parse(base, environ.get("OPENAI_API_KEY") or None)

    @property
    def authority(self) -> str:
        """The ``Host`` header: the host, and the port unless it is the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def chat_completions_path(self) -> str:
        return self.prefix + "/chat/completions"

    @property
    def models_path(self) -> str:
        return self.prefix + "/models"

    @property
    def chat_completions_url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.chat_completions_path}"

    @property
    def models_url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.models_path}"

    def headers(
        self,
        *,
        content_length: int | None = None,
        content_type: str = "application/json",
        accept: str = "text/event-stream",
        user_agent: str = USER_AGENT,
        extra: HeaderItems | None = None,
    ) -> list[tuple[str, str]]:
        """The complete request headers (Rule 1), as svir-proto's transports send them.

        Args:
            content_length: the body's exact length (``RequestBody.content_length``); ``None``
                for a request without a body.
            content_type: the body's media type (``RequestBody.content_type``).
            accept: what the response may be.
            user_agent: the ``User-Agent``.
            extra: the caller's own headers (organisation and project ids, ``traceparent``,
                a gateway's headers): each replaces ours of the same name, case-insensitively;
                see `request_headers` for what they may not set.

        Raises:
            ValueError: an ``extra`` header that is malformed or managed.
        """
        out = [
            ("Host", self.authority),
            ("Accept", accept),
            ("Accept-Encoding", "identity"),
            ("User-Agent", user_agent),
        ]
        if self.api_key is not None:
            out.append(("Authorization", f"Bearer {self.api_key}"))
        if content_length is not None:
            out.append(("Content-Type", content_type))
            out.append(("Content-Length", str(content_length)))
        theirs = request_headers(extra)
        if theirs:
            replaced = {name.lower() for name, _ in theirs}
            if not replaced.isdisjoint(_OURS):
                out = [(k, v) for k, v in out if k.lower() not in replaced]
            out += theirs
        return out
