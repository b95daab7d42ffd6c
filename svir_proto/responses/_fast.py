"""A delta event's bytes, learned from one event, so that the events repeating them skip the
parser (as `svir_proto.openai._envelope` does for Chat Completions chunks).

A Responses server writes the deltas of one part in the same bytes: the same ``type``,
``item_id``, ``output_index``, ``content_index`` (or ``summary_index``), keys in the same
order. Only the ``delta``, the ``sequence_number`` and OpenAI's ``obfuscation`` padding change.

Rule 1 (what is learned): a delta event (text, refusal, reasoning, arguments) that the decoder
    has just read the general way, whose key ``"delta":`` occurs once, its value a string,
    and whose ``sequence_number`` (if it has one) comes before the delta. The template is
    its bytes before the number, between the number and the delta's opening quote, and after
    the delta's closing quote, with at most one ``"obfuscation":"..."`` value after the delta
    left open as a hole.
Rule 2 (what matches): an event that begins with those bytes, with the very number the
    stream expects next where the number stood, and ends with them, its hole (if any) holding
    ASCII letters and digits only. Such an event means what the learned one meant, with its
    own delta: the same part of the same item.
Rule 3 (the delta): its text is read without a parser (as it is, or through the JSON string
    scanner when it has escapes); any doubt (invalid UTF-8, an unescaped quote, a surrogate)
    sends the event the general way, which reports what is wrong and where. A template
    changes speed, never the events, errors or result.
Rule 4 (giving up): a stream whose bytes change on every event (GitHub Copilot's new ids)
    would learn in vain; after `BUDGET` templates in a row that no event repeated, no more are
    learned.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from .._json import string_body
from ..openai._envelope import _hole

__all__: list[str] = []

BUDGET: Final = 8
_DELTA: Final = b'"delta":"'
_NUMBER: Final = b'"sequence_number":'
_RAW: Final = json.JSONDecoder()
_BODY: Final = rb'((?:[^"\\\x00-\x1f]|\\.)*)'
"""A JSON string's body: characters it may hold as they are, or an escape (Rule 3)."""
_PADDING: Final = rb"[A-Za-z0-9]*"


class Template:
    """The bytes around one part's deltas; see the module docstring.

    The template is the learned bytes up to the number (or the delta) compared at once, then
    one compiled pattern: the number (no leading zero, as JSON writes it), the learned bytes
    literally, the delta's body (any character a JSON string may hold as it is, or an escape:
    the scanner then reads it), the learned bytes, the padding's letters and digits.
    """

    __slots__ = ("carrier", "event", "group", "hits", "hot", "match", "numbered", "prefix")

    def __init__(
        self, head: bytes, mid: bytes, tail: bytes, rest: bytes | None, numbered: bool
    ) -> None:
        number = rb"(0|[1-9][0-9]*)" + re.escape(mid) if numbered else b""
        padding = b"" if rest is None else _PADDING + re.escape(rest)
        self.prefix: Final = head  # compared at once; the pattern matches what follows it
        self.match: Final = re.compile(
            number + _BODY + re.escape(tail) + padding, re.DOTALL
        ).fullmatch
        self.numbered: Final = numbered
        self.group: Final = 2 if numbered else 1  # the delta's body
        self.hits = 0
        # what the decoder's hot path reads at once: the prefix, the pattern, the delta's
        # group, the kind of part (t text, r refusal, s summary, c reasoning text, a
        # arguments), the item, the part's key and its pieces
        self.hot: tuple[Any, ...] = (head, self.match, self.group, "", None, None, None)
        self.carrier: Any = None  # a reasoning delta's
        self.event: bytes | None = None  # ``event: NAME`` and ``data: `` of the event it came in

    @classmethod
    def learn(cls, payload: bytes | bytearray, seq: int | None) -> Template | None:
        """The template of a delta event read the general way (Rule 1), or ``None``."""
        at = payload.find(_DELTA)
        if at < 0 or payload.find(b'"delta":', at + 1) >= 0:
            return None
        start = at + len(_DELTA) - 1  # the opening quote
        try:
            text = bytes(payload).decode()
            first = len(payload[:start].decode())
            _, last = _RAW.raw_decode(text, first)
        except ValueError:  # UnicodeDecodeError included: the general way applied the policy
            return None
        end = start + len(text[first:last].encode())  # after the closing quote
        head, tail = bytes(payload[: start + 1]), bytes(payload[end - 1 :])
        mid = b""
        if seq is not None:
            number = _NUMBER + str(seq).encode()
            pos = head.find(number)
            if pos < 0 or head.find(_NUMBER, pos + 1) >= 0 or _NUMBER in tail:
                return None  # the number after the delta: not learned
            head, mid = head[: pos + len(_NUMBER)], head[pos + len(number) :]
        tail, rest = _hole(tail)
        if rest is None and b'"obfuscation":"' in tail:
            return None  # padding that is not a plain value: kept literal would be wrong
        return cls(head, mid, tail, rest, seq is not None)

    def read(self, payload: bytes | bytearray, seq: int | None) -> str | None:
        """The delta of an event that repeats this template with number ``seq`` (Rule 2),
        or ``None``.

        Raises:
            UnicodeDecodeError: the delta is not UTF-8 (the general way applies the policy).
        """
        prefix = self.prefix
        m = self.match(payload, len(prefix)) if payload.startswith(prefix) else None
        if m is None or (self.numbered and (seq is None or int(m[1]) != seq)):
            return None
        raw = m[self.group]
        return raw.decode() if 0x5C not in raw else self.unescape(payload, m)

    def unescape(self, payload: bytes | bytearray, m: re.Match[bytes]) -> str | None:
        """The text of a delta with escapes (the JSON string scanner reads it with its closing
        quote), or ``None`` when it is not one valid string."""
        group = self.group
        raw = m[group]
        if raw.count(b"\\") == raw.count(b'\\"'):  # quotes only: a call's JSON arguments
            return raw.replace(b'\\"', b'"').decode()  # (a body holds no bare quote)
        return string_body(payload[m.start(group) : m.end(group) + 1])
