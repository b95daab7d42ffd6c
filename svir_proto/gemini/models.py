"""Gemini's model listing, read and written (Gemini API, "models.list": ``GET
/v1beta/models`` is ``{"models": [{"name": "models/x", "displayName", "inputTokenLimit",
"outputTokenLimit", "supportedGenerationMethods", ...}], "nextPageToken"}``, ``GET
/v1beta/models/x`` one such object; its pages are asked with ``pageSize`` and ``pageToken``).

Rule 1 (reading): a listing is an object of ``models`` and ``nextPageToken`` only (either left
    out: Gemini leaves an empty list out), anything else is no listing of Gemini's (review 72
    3: an OpenAI listing read as an empty one); an entry needs a string ``name``; its id is
    the name without ``models/`` (what a request's path names,
    `svir_proto.gemini.endpoint`), not empty; ``displayName`` is its name and the token
    limits its limits (`svir_proto._models`); a ``nextPageToken`` says the server has more
    models than the answer holds, and so does one past `svir_proto._models.MAX_MODELS`.
Rule 2 (writing): every entry has ``name`` (``models/`` and the id; a tuned model's
    ``tunedModels/`` name as it is), ``displayName`` (the id where the listing read had no
    name), the limits where known, and ``supportedGenerationMethods``, which google-genai
    reads: ``generateContent`` and ``streamGenerateContent`` for a model that chats
    (`ModelKind`) and that a Gemini path can name (`_generates`), none for the others; one
    answer holds them all (no ``nextPageToken``).

No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .._json import dumps
from .._models import count, entries, entry_problem, listing_document, path_id
from ..errors import PeerProtocolError
from ..openai.models import ModelInfo, ModelKind, model_kind

__all__ = ["models_json", "read_models"]

PAGING: Final = ("pageSize", "pageToken")
"""The query parameters of its pages (a listing relayed as it came passes them on)."""
EVERY: Final = "?pageSize=1000"
"""The query that asks for the most one answer holds (1,000)."""
_METHODS: Final = ("generateContent", "streamGenerateContent")
_LISTING: Final = frozenset({"models", "nextPageToken"})


def read_models(body: bytes, *, one: bool = False) -> tuple[tuple[ModelInfo, ...], bool]:
    """A listing's models (Rule 1), or the one model of ``GET /v1beta/models/{id}``
    (``one``), and whether the server has more than it reads.

    Raises:
        PeerProtocolError: the body is not that shape; the message says what was found.
    """
    doc = listing_document(body, "the model" if one else "the model list")
    if one:
        return (_entry(doc, "the model"),), False
    if not isinstance(doc, dict) or not _LISTING.issuperset(doc):
        found = sorted(doc)[:5] if isinstance(doc, dict) else type(doc).__name__
        raise PeerProtocolError(
            f"the model list is not Gemini's (an object of 'models' and 'nextPageToken'): {found}"
        )
    data = doc.get("models", [])
    if not isinstance(data, list):
        raise PeerProtocolError("the model list's 'models' is not an array")
    read, more = entries(data)
    models = tuple(_entry(item, f"models[{i}]") for i, item in enumerate(read))
    token = doc.get("nextPageToken")
    return models, more or (isinstance(token, str) and token != "")


def _entry(item: object, where: str) -> ModelInfo:
    name = item.get("name") if isinstance(item, dict) else None
    id_ = name.removeprefix("models/") if isinstance(name, str) else ""
    if not id_:
        raise entry_problem(where, item, "name")
    assert isinstance(item, dict)
    shown = item.get("displayName")
    return ModelInfo(
        id=id_,
        name=shown if isinstance(shown, str) else None,
        kind=model_kind(id_),
        input_limit=count(item.get("inputTokenLimit")),
        output_limit=count(item.get("outputTokenLimit")),
    )


def models_json(models: Sequence[ModelInfo], *, one: bool = False) -> bytes:
    """The listing of ``models`` (Rule 2), or its one model's object (``one``)."""
    objects = [_object(m) for m in models]
    if one:
        return dumps(objects[0])
    return dumps({"models": objects})


def _object(m: ModelInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": m.id if m.id.startswith("tunedModels/") else f"models/{m.id}",
        "displayName": m.name or m.id,
    }
    if m.input_limit is not None:
        out["inputTokenLimit"] = m.input_limit
    if m.output_limit is not None:
        out["outputTokenLimit"] = m.output_limit
    out["supportedGenerationMethods"] = list(_METHODS) if _generates(m) else []
    return out


def _generates(m: ModelInfo) -> bool:
    """Whether a Gemini client can ask ``m`` for an answer (Rule 2): a model that chats, whose id
    a Gemini path can name (one segment without ``:``: vLLM's ``org/name`` and Ollama's
    ``name:tag`` cannot be, attack 73 F3)."""
    return m.kind is ModelKind.CHAT and path_id(m.id, one=True)
