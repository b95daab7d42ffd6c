"""What every API's model listing shares (`svir_proto.openai.models`, and Anthropic's and
Gemini's ``models`` modules): its body's parse, its bounds, and what a model id in a request
path may be.

Rule 1 (bounds): a listing is read up to `MAX_MODELS` entries (more is said, as a page is);
    a creation time is read only between the epoch and the year 9999 (a time in milliseconds,
    or past any calendar a writer has, is no time: review 72 1).
Rule 2 (a model id in a path, `path_id`): no character a path or its query would read
    otherwise (``?``, ``#``, ``\\``, a space or a control character), and no segment that is
    ``.``, ``..`` or empty, as it came and each time it is decoded, at most three times (an
    encoded ``/`` is a separator then: ``org%2Fname`` is served; review 72 6: the third
    decoding was not checked). An upstream, or a proxy before it, that normalises its path
    would take the others elsewhere in its API, with the gateway's key (attack 26). A
    segment's ``;`` parameters are dropped first, as servlet containers do before they
    normalise (``..;x`` is ``..`` there: attack 29). Gemini's ids (``one``) are one segment
    with no ``:`` (which names a method).

No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar
from urllib.parse import unquote

from ._json import canonical
from .errors import PeerProtocolError

T = TypeVar("T")
MAX_MODELS: Final = 10_000
"""Entries a listing is read to (Rule 1): OpenRouter, the largest catalogue we know, lists
about 400; LM Studio with a hundred models answers 60 KB. A 4 MiB body of tiny entries holds
some 260,000, which written again in another API's shape came to 30 MB (review 72 5)."""
_LAST_SECOND: Final = 253_402_300_799
"""9999-12-31T23:59:59Z, the last second RFC 3339's four-digit year has (Rule 1)."""
_NOT_IN_PATH: Final = frozenset("?#\\ \x7f") | frozenset(map(chr, range(32)))


def listing_document(body: bytes, what: str) -> Any:
    """A listing's body parsed.

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


def entries(data: list[Any]) -> tuple[list[Any], bool]:
    """A listing's entries as far as they are read (Rule 1), and whether there were more."""
    return data[:MAX_MODELS], len(data) > MAX_MODELS


def read_data(
    body: bytes, one: bool, entry: Callable[[object, str], T]
) -> tuple[tuple[T, ...], bool, Any]:
    """A listing whose models are its ``data`` array (OpenAI's, Anthropic's), or one model's
    object (``one``), each read by ``entry(item, where)``: the models, whether there were
    more than it reads (Rule 1), and the document (what else it says of its pages).

    Raises:
        PeerProtocolError: not JSON, or no such listing.
    """
    doc = listing_document(body, "the model" if one else "the model list")
    if one:
        return (entry(doc, "the model"),), False, doc
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise PeerProtocolError("the model list has no 'data' array")
    read, more = entries(data)
    return tuple(entry(item, f"data[{i}]") for i, item in enumerate(read)), more, doc


def seconds(value: object) -> int | None:
    """A creation time in seconds since the epoch, if it is one (Rule 1)."""
    return value if type(value) is int and 0 <= value <= _LAST_SECOND else None


def count(value: object) -> int | None:
    """A token limit, if it is one (a positive integer)."""
    return value if type(value) is int and value > 0 else None


def path_id(id_: str, *, one: bool = False) -> bool:
    """Whether ``id_`` may go in a request path as a model id (Rule 2); ``one``: a Gemini id."""
    for _ in range(4):  # as it came, and decoded as often as a chain of proxies might
        if _NOT_IN_PATH & set(id_) or (one and ("/" in id_ or ":" in id_)):
            return False
        if any(s.split(";", 1)[0] in ("", ".", "..") for s in id_.split("/")):
            return False
        id_, was = unquote(id_), id_
        if id_ == was:
            return True
    return False  # encoded more deeply than anyone sends a model id
