"""A content block's delta envelope, learned from one delta, so that the deltas repeating it skip
the JSON parser.

A server writes every piece of a block in the same bytes: Anthropic's
``{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"`` before the
piece and ``"}}`` after it (likewise ``thinking_delta``'s ``thinking`` and
``input_json_delta``'s ``partial_json``; llama.cpp's ``/v1/messages`` writes the same). Only the
piece changes; parsing the rest again on every event is most of a decoder's cost. An `Envelope`
reads it once per block.

Rule 1 (what is learned): a ``content_block_delta`` the decoder has just read the general way
    (`MessagesStreamDecoder`'s hot path: a ``text_delta``, ``thinking_delta`` or
    ``input_json_delta`` for an open block of its kind) whose piece is found in its payload as
    JSON writes it, quotes included (`written`: a long piece of code holds escapes, and a
    stream of them must be learned too). The envelope is the
    payload's bytes up to the piece (``head``, its opening quote included) and from the piece's
    closing quote (``tail``). It is kept only if the payload with another piece in that place
    parses to the same object but for the piece (the probe, `learn`), so the string there is
    the piece and nothing else, whatever the key order, spacing or duplicate keys.
Rule 2 (what matches): a payload that begins with ``head`` and ends with ``tail`` whose middle is
    exactly one JSON string body (`Envelope.read`): with no quote, backslash or control
    character it is the text as it is; with escapes the JSON string scanner reads it. Since the
    middle is one string, the payload is the learned object with that piece, and the decoder
    does at once what its hot path would. Anything else (a middle with an unescaped quote,
    invalid UTF-8, a lone surrogate) is read the general way, which reports what is wrong and
    where, or applies the UTF-8 policy: the envelope changes speed, never the events, errors
    or result.
Rule 3 (the express): a piece of the body that is exactly one such event, ``event:
    content_block_delta``, ``data: ``, the payload and a blank line with the lane's line ends
    (`Envelope.express`), within the event size bound, is what the typed express
    (`SSEFramer.whole_typed`) would take: a matching middle holds no line end.
Rule 4 (scope): an envelope belongs to its block, which stays open and of its kind while it
    lives: the decoder forgets it when the block stops or the stream ends, and learns the next
    block's. A stream whose deltas never repeat their bytes would learn in vain: after `BUDGET`
    failed learnings in a row, no more are tried.

This module never does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from .._jsonbytes import string_text
from .._template import BUDGET

__all__ = ["BUDGET", "DELTA", "Envelope", "learn", "written"]

DELTA: Final = "content_block_delta"
_PROBE: Final = "Z"
_EXPRESS: Final = b"event: " + DELTA.encode()


class Envelope:
    """The bytes around one block's pieces (Rule 1), and what the decoder needs to carry them.

    Attributes:
        head, tail: the payload's bytes before the piece's body and from its closing quote.
        index: the block's index; kind: its kind (the decoder's ``_TEXT``, ``_TOOL``, ...);
            number: the tool call a ``tool_use`` block is (``-1`` for other blocks).
        express: the bytes around the payload of a whole event (Rule 3), for LF line ends
            (index 0) and CRLF (index 1): (before the piece, after it, where the data begins).
    """

    __slots__ = ("express", "head", "index", "kind", "number", "tail")

    def __init__(self, head: bytes, tail: bytes, index: int, kind: int, number: int) -> None:
        self.head = head
        self.tail = tail
        self.index = index
        self.kind = kind
        self.number = number
        self.express = tuple(
            (_EXPRESS + eol + b"data: " + head, tail + eol + eol, len(_EXPRESS) + len(eol) + 6)
            for eol in (b"\n", b"\r\n")
        )

    def read(self, payload: bytes | bytearray) -> str | None:
        """The piece of a payload that repeats this envelope (Rule 2), or ``None``.

        Raises:
            UnicodeDecodeError: the piece is not UTF-8 (the general way applies the policy).
        """
        head = self.head
        if payload.startswith(head) and payload.endswith(self.tail):
            end = len(payload) - len(self.tail)
            if end >= len(head):
                return string_text(payload, len(head), end)
        return None


def written(piece: str) -> tuple[bytes, ...]:
    """The ways JSON writes ``piece`` with its quotes: with non-ASCII as it is and as ``\\u``
    escapes (one way, for an ASCII piece), each with the standard escapes (``\\"``, ``\\n``, ...),
    as Anthropic's servers and llama.cpp's write it: the bytes an envelope may be learned from."""
    raw = json.dumps(piece, ensure_ascii=False).encode("utf-8", "surrogatepass")
    escaped = json.dumps(piece).encode()
    return (raw,) if raw == escaped else (raw, escaped)


def learn(
    payload: bytes | bytearray,
    obj: dict[str, Any],
    key: str,
    loads: Callable[[bytes], object],
) -> tuple[bytes, bytes] | None:
    """The head and tail around the piece ``obj["delta"][key]`` in ``payload``, which parsed to
    ``obj``, if the piece is written as JSON writes it and the probe holds (Rule 1); else
    ``None``."""
    delta = obj["delta"]
    for raw in written(delta[key]):
        at = payload.rfind(raw)
        if at >= 0:
            break
    else:
        return None  # written with escapes of the server's own: a later piece may not be
    raw = raw[1:-1]
    head = bytes(payload[: at + 1])
    tail = bytes(payload[at + 1 + len(raw) :])
    # a probe other than the piece: were the piece found in another string equal to it, the
    # probe would change that string, and the object would differ (found by review: a piece
    # "Z" learned from a later "Z")
    probe = _PROBE if delta[key] != _PROBE else _PROBE.lower()
    try:
        probed = loads(head + probe.encode() + tail)
    except ValueError:  # what orjson refuses and the general way mended (a lone surrogate)
        return None
    if probed != {**obj, "delta": {**delta, key: probe}}:
        return None
    return head, tail
