"""Model listings: `ModelInfo`, one model of any API's listing, and OpenAI's listing read and
written (wire reference section 6): ``GET /v1/models`` is ``{"object": "list", "data":
[{"id", "object": "model", "created", "owned_by"}]}`` and ``GET /v1/models/{id}`` one such
object. It is the listing of every dialect of OpenAI's API (Chat Completions, Responses) and
of the LLM-Stream servers, which serve it beside their streams.

Rule 1 (reading): an entry needs a string ``id``, not empty; ``name`` (LM Studio's, vLLM's
    ``root`` is not one), ``created`` and ``owned_by`` are kept when they are of their type
    (`svir_proto._models`: a time within the calendar), and anything else is not read.
    OpenAI's listing has no pages: one of more than `svir_proto._models.MAX_MODELS` entries is
    read to there, and says it had more.
Rule 2 (writing): every entry has the four fields openai-python reads; ``created`` is 0 and
    ``owned_by`` ``"unknown"`` where the listing read did not say (as the gateway writes a
    stream's ``created`` 0 when its upstream gave none).

No I/O here.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final, final

import attrs

from .._json import dumps
from .._models import entry_problem, read_data, seconds

__all__ = ["ModelInfo", "ModelKind", "model_kind", "models_json", "parse_models", "read_models"]

PAGING: Final[tuple[str, ...]] = ()
"""The query parameters of its pages: none, it has none."""
EVERY: Final = ""
"""The query that asks for every model: none is needed."""


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
    (ModelKind.SPEECH, ("whisper", "tts", "asr", "speech", "audio", "transcribe")),
    (ModelKind.IMAGE, ("image", "flux", "sdxl", "diffusion", "dall-e")),
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
    """One model of a listing, whatever API listed it (OpenAI's here, Anthropic's and Gemini's
    in their packages' ``models`` modules).

    Attributes:
        id: what a request names it by (Gemini's ``models/x`` is ``x``).
        name: what it is called for a person (``name``, ``display_name``, ``displayName``).
        kind: what it is for, guessed from its id (`model_kind`).
        created: when it was made, seconds since the epoch (OpenAI's ``created``,
            Anthropic's ``created_at``); ``None`` where the listing does not say.
        owned_by: who serves it (OpenAI's ``owned_by``).
        input_limit, output_limit: the tokens a request may take and an answer may give
            (Anthropic's ``max_input_tokens`` and ``max_tokens``, Gemini's
            ``inputTokenLimit`` and ``outputTokenLimit``), where the listing says.
    """

    id: str
    name: str | None
    kind: ModelKind
    created: int | None = None
    owned_by: str | None = None
    input_limit: int | None = None
    output_limit: int | None = None


def parse_models(body: bytes) -> tuple[ModelInfo, ...]:
    """``GET /v1/models``: ``{"data": [{"id": ..., "name": ...}]}`` (`read_models`).

    Raises:
        PeerProtocolError: the body is not that shape; the message says what was found.
    """
    return read_models(body)[0]


def read_models(body: bytes, *, one: bool = False) -> tuple[tuple[ModelInfo, ...], bool]:
    """A listing's models (Rule 1), or the one model of ``GET /v1/models/{id}`` (``one``),
    and whether the server has more than it reads.

    Raises:
        PeerProtocolError: the body is not that shape; the message says what was found.
    """
    models, more, _ = read_data(body, one, _entry)
    return models, more


def _entry(item: object, where: str) -> ModelInfo:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        raise entry_problem(where, item, "id")
    name, owner = item.get("name"), item.get("owned_by")
    return ModelInfo(
        id=item["id"],
        name=name if isinstance(name, str) else None,
        kind=model_kind(item["id"]),
        created=seconds(item.get("created")),
        owned_by=owner if isinstance(owner, str) else None,
    )


def models_json(models: Sequence[ModelInfo], *, one: bool = False) -> bytes:
    """The listing of ``models`` (Rule 2), or its one model's object (``one``)."""
    objects: list[dict[str, Any]] = [
        {
            "id": m.id,
            "object": "model",
            "created": m.created or 0,
            "owned_by": m.owned_by or "unknown",
            **({"name": m.name} if m.name is not None else {}),
        }
        for m in models
    ]
    if one:
        return dumps(objects[0])
    return dumps({"object": "list", "data": objects})
