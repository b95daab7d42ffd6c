"""OpenAI's model listing, read and written (wire reference section 6): ``GET /v1/models`` is
``{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}`` and ``GET
/v1/models/{id}`` one such object. It is the listing of every dialect of OpenAI's API (Chat
Completions, Responses) and of the LLM-Stream servers, which serve it beside their streams.

Rule 1 (reading): an entry needs a string ``id``, not empty; ``name`` (LM Studio's, vLLM's
    ``root`` is not one), ``created`` (an integer) and ``owned_by`` are kept when they are of
    their type, and anything else is not read. OpenAI's listing has no pages.
Rule 2 (writing): every entry has the four fields openai-python reads; ``created`` is 0 and
    ``owned_by`` ``"unknown"`` where the listing read did not say (as the gateway writes a
    stream's ``created`` 0 when its upstream gave none).

No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .._json import canonical, dumps
from ..errors import PeerProtocolError
from .endpoint import ModelInfo, model_kind

__all__ = ["models_json", "read_models"]

PAGING: Final[tuple[str, ...]] = ()
"""The query parameters of its pages: none, it has none."""
EVERY: Final = ""
"""The query that asks for every model: none is needed."""


def listing_document(body: bytes, what: str = "the model list") -> Any:
    """A listing's body parsed (every API's: `read_models`, and Anthropic's and Gemini's).

    Raises:
        PeerProtocolError: not JSON, or too deep for the rules of `svir_proto._json`.
    """
    try:
        return canonical(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise PeerProtocolError(f"{what} is not JSON: {exc}") from exc


def entry_problem(where: str, item: object, key: str) -> PeerProtocolError:
    """The error of an entry without its id (a string, not empty, under ``key``)."""
    return PeerProtocolError(f"{where} has no string {key!r}: {item!r}"[:200])


def read_models(body: bytes, one: bool = False) -> tuple[tuple[ModelInfo, ...], bool]:
    """A listing's models (Rule 1), or the one model of ``GET /v1/models/{id}`` (``one``),
    and whether the server has more than the answer holds (never, here).

    Raises:
        PeerProtocolError: the body is not that shape; the message says what was found.
    """
    doc = listing_document(body, "the model" if one else "the model list")
    if one:
        return (_entry(doc, "the model"),), False
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise PeerProtocolError("the model list has no 'data' array")
    return tuple(_entry(item, f"data[{i}]") for i, item in enumerate(data)), False


def _entry(item: object, where: str) -> ModelInfo:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        raise entry_problem(where, item, "id")
    name, created, owner = item.get("name"), item.get("created"), item.get("owned_by")
    return ModelInfo(
        id=item["id"],
        name=name if isinstance(name, str) else None,
        kind=model_kind(item["id"]),
        created=created if type(created) is int else None,
        owned_by=owner if isinstance(owner, str) else None,
    )


def models_json(models: Sequence[ModelInfo], one: bool = False) -> bytes:
    """The listing of ``models`` (Rule 2), or its one model's object (``one``)."""
    objects = [
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
