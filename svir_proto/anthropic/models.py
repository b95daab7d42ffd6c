"""Anthropic's model listing, read and written (Models API: ``GET /v1/models`` is ``{"data":
[{"type": "model", "id", "display_name", "created_at", "lifecycle", "max_input_tokens",
"max_tokens"}], "has_more", "first_id", "last_id"}``, ``GET /v1/models/{id}`` one such object;
its pages are asked with ``limit``, ``after_id`` and ``before_id``).

Rule 1 (reading): an entry needs a string ``id``, not empty; ``display_name`` is its name,
    ``created_at`` (RFC 3339) its ``created``, ``max_input_tokens`` and ``max_tokens`` its
    limits, when they read (`svir_proto._models`); ``has_more`` says the server has more
    models than the answer holds, and so does one past `svir_proto._models.MAX_MODELS`.
Rule 2 (writing): every entry has the fields the anthropic SDK requires: ``display_name`` is
    the id where the listing read had no name, ``created_at`` the epoch where it had no time
    (the API's own word for an unknown release date), ``lifecycle`` ``active`` (the upstream
    lists it: it serves it); the limits where known. One answer holds them all (``has_more``
    false).

No I/O here.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any, Final

from .._json import dumps
from .._models import count, entry_problem, read_data, seconds
from ..openai.models import ModelInfo, model_kind

__all__ = ["models_json", "read_models"]

PAGING: Final = ("limit", "after_id", "before_id")
"""The query parameters of its pages (a listing relayed as it came passes them on)."""
EVERY: Final = "?limit=1000"
"""The query that asks for the most one answer holds (1,000)."""
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def read_models(body: bytes, *, one: bool = False) -> tuple[tuple[ModelInfo, ...], bool]:
    """A listing's models (Rule 1), or the one model of ``GET /v1/models/{id}`` (``one``),
    and whether the server has more than it reads.

    Raises:
        PeerProtocolError: the body is not that shape; the message says what was found.
    """
    models, more, doc = read_data(body, one, _entry)
    return models, more or (not one and doc.get("has_more") is True)


def _entry(item: object, where: str) -> ModelInfo:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        raise entry_problem(where, item, "id")
    name = item.get("display_name")
    return ModelInfo(
        id=item["id"],
        name=name if isinstance(name, str) else None,
        kind=model_kind(item["id"]),
        created=_seconds(item.get("created_at")),
        input_limit=count(item.get("max_input_tokens")),
        output_limit=count(item.get("max_tokens")),
    )


def _seconds(value: object) -> int | None:
    """RFC 3339 (``2025-02-19T00:00:00Z``) as seconds since the epoch, or ``None``."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value[:-1] + "+00:00" if value[-1:] in ("Z", "z") else value
    dot = text.find(".")
    if dot > 0:  # (Python 3.10 reads 3 or 6 digits of a fraction only: the seconds are enough)
        end = dot + 1
        while end < len(text) and text[end].isdigit():
            end += 1
        text = text[:dot] + text[end:]
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return seconds(int((when - _EPOCH).total_seconds()))


def models_json(models: Sequence[ModelInfo], *, one: bool = False) -> bytes:
    """The listing of ``models`` (Rule 2), or its one model's object (``one``)."""
    objects = [_object(m) for m in models]
    if one:
        return dumps(objects[0])
    return dumps(
        {
            "data": objects,
            "has_more": False,
            "first_id": objects[0]["id"] if objects else None,
            "last_id": objects[-1]["id"] if objects else None,
        }
    )


def _object(m: ModelInfo) -> dict[str, Any]:
    created = _EPOCH + datetime.timedelta(seconds=m.created or 0)  # (within 9999: `seconds`)
    out: dict[str, Any] = {
        "type": "model",
        "id": m.id,
        "display_name": m.name or m.id,
        "created_at": f"{created.year:04d}" + created.strftime("-%m-%dT%H:%M:%SZ"),
        "lifecycle": "active",
    }
    if m.input_limit is not None:
        out["max_input_tokens"] = m.input_limit
    if m.output_limit is not None:
        out["max_tokens"] = m.output_limit
    return out
