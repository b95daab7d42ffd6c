"""Where requests go (wire reference section 1) and what ``GET /v1/models`` says (section 6).

`Endpoint` normalises a base URL written with or without ``/v1`` and with trailing slashes (so
never ``/v1/v1/models``), rejects userinfo, a query or a fragment, and gives the request targets
and headers. `parse_models` reads a model list and tells chat models from the rest by the
practical name heuristic. No I/O.
"""

from __future__ import annotations

import enum
from typing import Final, final
from urllib.parse import urlsplit

import attrs

from .._json import canonical
from ..errors import PeerProtocolError

__all__ = ["Endpoint", "ModelInfo", "ModelKind", "model_kind", "parse_models"]


@final
@attrs.frozen
class Endpoint:
    """An OpenAI-compatible server's base URL, normalised.

    Attributes:
        scheme, host, port: where to connect.
        prefix: the path up to and including ``/v1``.
        api_key: sent as ``Authorization: Bearer``; ``None`` sends none (LM Studio's default).
    """

    scheme: str
    host: str
    port: int
    prefix: str
    api_key: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def parse(cls, base_url: str, api_key: str | None = None) -> Endpoint:
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
        return cls(parts.scheme, parts.hostname, port, path, api_key)

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
    ) -> list[tuple[str, str]]:
        """Request headers: Host, Authorization (if a key), Accept, and for a body its
        Content-Type and exact Content-Length."""
        out = [("Host", self.authority), ("Accept", accept)]
        if self.api_key is not None:
            out.append(("Authorization", f"Bearer {self.api_key}"))
        if content_length is not None:
            out.append(("Content-Type", content_type))
            out.append(("Content-Length", str(content_length)))
        return out


@final
class ModelKind(enum.Enum):
    CHAT = "chat"
    EMBEDDING = "embedding"
    RERANKING = "reranking"
    SPEECH = "speech"
    IMAGE = "image"


# wire reference section 6: there is no standard field, only the names
_HINTS: Final = (
    (ModelKind.EMBEDDING, ("embed", "bge", "clip")),
    (ModelKind.RERANKING, ("rerank",)),
    (ModelKind.SPEECH, ("whisper", "tts", "asr", "speech", "audio")),
    (ModelKind.IMAGE, ("image", "flux", "sdxl", "diffusion")),
)


def model_kind(model_id: str) -> ModelKind:
    """What a model is for, guessed from its id (section 6's name heuristic)."""
    name = model_id.lower()
    for kind, hints in _HINTS:
        if any(h in name for h in hints):
            return kind
    return ModelKind.CHAT


@final
@attrs.frozen(kw_only=True)
class ModelInfo:
    id: str
    name: str | None
    kind: ModelKind


def parse_models(body: bytes) -> tuple[ModelInfo, ...]:
    """``GET /v1/models``: ``{"data": [{"id": ..., "name": ...}]}``.

    Raises:
        PeerProtocolError: the body is not that shape; the message says what was found.
    """
    try:
        doc = canonical(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise PeerProtocolError(f"the model list is not JSON: {exc}") from exc
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise PeerProtocolError("the model list has no 'data' array")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise PeerProtocolError(f"data[{i}] has no string 'id': {item!r}"[:200])
        name = item.get("name")
        out.append(
            ModelInfo(
                id=item["id"],
                name=name if isinstance(name, str) else None,
                kind=model_kind(item["id"]),
            )
        )
    return tuple(out)
