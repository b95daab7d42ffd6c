"""A Gemini stream's chunk envelope, learned from one chunk, so that chunks repeating it skip
the parser.

Google writes every chunk of an answer in the same bytes: the same keys in the same order, the
same ``role``, ``index``, ``modelVersion`` and ``responseId``, often the same quiet
``safetyRatings``. Only one string changes (a part's ``text``, or the ``stringValue`` of a
streamed argument's piece) and the cumulative ``usageMetadata``'s counts. The OpenAI decoder's
envelope (`svir_proto.openai._envelope`) has one hole; this one has two.

Rule 1 (what is learned): a chunk the hot loop of `svir_proto.gemini.stream` has just read
    (one text or thought part of candidate 0, or one more piece of a streamed string argument),
    whose hole's key (``"text":`` or ``"stringValue":``) and ``"usageMetadata":`` each occur
    once, the usage after the hole. The envelope is its bytes up to the hole string's body
    (``head``), from the body's closing quote to the usage (``after``), and after the usage
    (``tail``); the usage's bytes become a pattern in which each number is any JSON integer
    of at most 18 digits (`svir_proto._jsonbytes.counts_pattern`).
Rule 2 (what matches): a chunk that begins with ``head`` and ends with ``tail``, where the
    last ``after`` is preceded by one valid JSON string body (`svir_proto._jsonbytes`'s
    reading, its policy on escapes and surrogates included) and followed by bytes the usage's
    pattern matches whole. A short chunk is read by one pattern from the hole on; in a long
    one, the last ``after`` is found from the end (`svir_proto._jsonbytes.from_end`), where a
    pattern would walk the string byte by byte. JSON's grammar makes such a chunk mean what the
    learned one meant, with its own string and counts: its nesting is the learned one's, so no
    depth check is due.
Rule 3 (doubt): anything else, or bytes that are not UTF-8, is read the hot loop's or the
    general way, which applies the policy and reports what is wrong and where: the envelope
    changes speed, never the events, errors or result. The usage is kept as bytes and parsed
    when someone needs it (`GeminiStreamDecoder` settles it).
Rule 4 (giving up): after `BUDGET` envelopes in a row that no chunk repeated, none is learned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Final

from .._jsonbytes import LONG_HOLE, MAX_LEARNED, counts_pattern, from_end, string_text
from .._template import BUDGET

__all__ = ["BUDGET", "USAGE", "Envelope", "string_text"]

_USAGE: Final = b'"usageMetadata":'
_SPACE: Final = (b" ", b"\t", b"\n", b"\r")
_STRING: Final = rb'([^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*)'
"""A JSON string's body up to its closing quote: no quote, backslash or control character but
in an escape (which `string_text` then checks)."""
USAGE: Final = 2
"""The group of `Envelope.rest` that is the usage."""
_RAW: Final = json.JSONDecoder()

Match = Callable[[bytes | bytearray, int], "re.Match[bytes] | None"]
Leading = Callable[[bytes | bytearray, int, int], "re.Match[bytes] | None"]
Unpacked = tuple[bytes, int, Match, int, bytes, int, Match, str, bool]

KINDS: Final = {"text": b'"text":', "thought": b'"text":', "piece": b'"stringValue":'}
"""What a hit means (`GeminiStreamDecoder._on_batch`), and the key of its hole."""


class Envelope:
    """The bytes around a stream's changing string and usage; see the module docstring."""

    __slots__ = ("head", "hits", "kind", "leading", "rated", "unpacked")

    def __init__(self, kind: str, head: bytes, after: bytes, rest: bytes, long_at: int) -> None:
        self.kind = kind  # "text", "thought" or "piece"
        self.head = head  # up to the hole string's body
        self.rated = False  # the chunk repeats the last quiet safety ratings: one more repeat
        self.hits = 0
        key, skip = from_end(after)
        pattern = re.compile(_STRING + rest)
        closing = re.compile(b"()" + rest)
        self.leading: tuple[Leading, Leading] = (pattern.match, closing.match)
        """The two patterns of `unpacked`, matched where a buffer holds a chunk and maybe more
        after it (`svir_proto.gemini._array`'s elements): each ends where the chunk does."""
        self.unpacked: Unpacked = (
            head,
            len(head),
            pattern.fullmatch,
            long_at,
            key,
            skip,
            closing.fullmatch,
            kind,
            False,
        )
        """What the decoder's hot loop reads (`read`): the head and its length; the pattern of
        a short chunk from the hole's body on, and the length from which a chunk is long; the
        end of ``after`` and how far before it ``after`` begins, and the pattern of a long
        chunk from the hole's closing quote; the kind and whether it is rated."""

    def rate(self) -> None:
        """Each chunk that repeats this envelope repeats the last quiet safety ratings."""
        self.rated = True
        self.unpacked = (*self.unpacked[:8], True)

    def read(self, payload: bytes | bytearray) -> tuple[str, re.Match[bytes]] | None:
        """The hole's text and the match of the rest (the usage its group `USAGE`) of a chunk
        that repeats this envelope (Rule 2), or ``None``; the decoder's hot loop does this
        inline.

        Raises:
            UnicodeDecodeError: the hole is not UTF-8 (the general way applies the policy).
        """
        head, opened, whole, long_at, key, skip, rest, _, _ = self.unpacked
        if not payload.startswith(head):
            return None
        if len(payload) < long_at:  # one pattern: the hole's body, then the rest
            m = whole(payload, opened)
            closed = -1 if m is None else m.end(1)
        else:  # a long hole: its end found from the end (Rule 2)
            closed = payload.rfind(key) - skip
            m = rest(payload, closed) if closed >= opened else None
        if m is None:
            return None
        hole = string_text(payload, opened, closed)
        return None if hole is None else (hole, m)

    @classmethod
    def learn(cls, payload: bytes | bytearray, kind: str) -> Envelope | None:
        """The envelope of a chunk the hot loop read as ``kind``, or ``None`` when its bytes
        do not allow one (Rule 1)."""
        key = KINDS[kind]
        at = payload.find(key)
        usage_at = payload.find(_USAGE)
        if (
            at < 0
            or usage_at < at
            or payload.find(key, at + 1) >= 0
            or payload.find(_USAGE, usage_at + 1) >= 0
        ):
            return None
        try:
            text = bytes(payload).decode()
            opened = _value(payload, at + len(key))  # the hole string's opening quote
            closed = _end(text, payload, opened) - 1  # its closing quote
            usage_start = _value(payload, usage_at + len(_USAGE))
            usage_end = _end(text, payload, usage_start)
        except (ValueError, IndexError):  # not UTF-8 included: the general way's policy
            return None
        if payload[opened] != 0x22 or payload[usage_start] != 0x7B:  # a string, an object
            return None
        if len(payload) - (closed - opened) > MAX_LEARNED:  # `svir_proto._jsonbytes` Rule 4
            return None
        after = bytes(payload[closed:usage_start])
        rest = [re.escape(after), b"(", counts_pattern(bytes(payload[usage_start:usage_end]))[0]]
        rest += [b")", re.escape(bytes(payload[usage_end:]))]
        long_at = len(payload) - (closed - opened - 1) + LONG_HOLE
        return cls(kind, bytes(payload[: opened + 1]), after, b"".join(rest), long_at)


def _value(payload: bytes | bytearray, at: int) -> int:
    """Where the value after a key's colon begins."""
    while payload[at : at + 1] in _SPACE:
        at += 1
    return at


def _end(text: str, payload: bytes | bytearray, start: int) -> int:
    """Where the JSON value beginning at byte ``start`` ends (a byte offset)."""
    first = len(payload[:start].decode())
    _, last = _RAW.raw_decode(text, first)
    return start + len(text[first:last].encode())
