"""Gemini's model listing, read and written (Gemini API, "models.list": ``GET
/v1beta/models`` is ``{"models": [{"name": "models/x", "displayName", ...,
"supportedGenerationMethods"}], "nextPageToken"}``, ``GET /v1beta/models/x`` one such object;
its pages are asked with ``pageSize`` and ``pageToken``).

Rule 1 (reading): an entry needs a string ``name``, not empty; its id is the name without
    ``models/`` (what a request's path names, `svir_proto.gemini.endpoint`), ``displayName`` its
    name; a ``nextPageToken`` says the server has more models than the answer holds. A
    listing without ``models`` lists none (Gemini leaves an empty list out).
Rule 2 (writing): every entry has ``name`` (``models/`` and the id), ``displayName`` (the id
    where the listing read had no name) and ``supportedGenerationMethods``, which
    google-genai reads: ``generateContent`` and ``streamGenerateContent`` for a model that
    chats (`ModelKind`), none for the others; one answer holds them all (no
    ``nextPageToken``).

No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .._json import dumps
from ..errors import PeerProtocolError
from ..openai.endpoint import ModelInfo, ModelKind, model_kind
from ..openai.models import entry_problem, listing_document

__all__ = ["models_json", "read_models"]

PAGING: Final = ("pageSize", "pageToken")
"""The query parameters of its pages (a listing relayed as it came passes them on)."""
EVERY: Final = "?pageSize=1000"
"""The query that asks for the most one answer holds (1,000)."""
_METHODS: Final = ["generateContent", "streamGenerateContent"]


def read_models(body: bytes, one: bool = False) -> tuple[tuple[ModelInfo, ...], bool]:
    """A listing's models (Rule 1), or the one model of ``GET /v1beta/models/{id}``
    (``one``), and whether the server has more than the answer holds.

    Raises:
        PeerProtocolError: the body is not that shape; the message says what was found.
    """
    doc = listing_document(body, "the model" if one else "the model list")
    if one:
        return (_entry(doc, "the model"),), False
    if not isinstance(doc, dict):
        raise PeerProtocolError("the model list is not a JSON object")
    data = doc.get("models", [])
    if not isinstance(data, list):
        raise PeerProtocolError("the model list's 'models' is not an array")
    models = tuple(_entry(item, f"models[{i}]") for i, item in enumerate(data))
    token = doc.get("nextPageToken")
    return models, isinstance(token, str) and token != ""


def _entry(item: object, where: str) -> ModelInfo:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        raise entry_problem(where, item, "name")
    id_ = item["name"].removeprefix("models/") or item["name"]
    name = item.get("displayName")
    return ModelInfo(id=id_, name=name if isinstance(name, str) else None, kind=model_kind(id_))


def models_json(models: Sequence[ModelInfo], one: bool = False) -> bytes:
    """The listing of ``models`` (Rule 2), or its one model's object (``one``)."""
    objects = [
        {
            "name": f"models/{m.id}",
            "displayName": m.name or m.id,
            "supportedGenerationMethods": _METHODS if m.kind is ModelKind.CHAT else [],
        }
        for m in models
    ]
    if one:
        return dumps(objects[0])
    return dumps({"models": objects})
