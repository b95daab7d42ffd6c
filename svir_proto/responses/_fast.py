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
from typing import Any, Final

from ..openai._envelope import _body, _hole, _padding

__all__: list[str] = []

BUDGET: Final = 8
_DELTA: Final = b'"delta":"'
_NUMBER: Final = b'"sequence_number":'
_RAW: Final = json.JSONDecoder()


class Template:
    """The bytes around one part's deltas; see the module docstring."""

    __slots__ = ("head", "hits", "mid", "numbered", "rest", "tail", "target")

    def __init__(
        self, head: bytes, mid: bytes, tail: bytes, rest: bytes | None, numbered: bool
    ) -> None:
        self.head = head  # up to the number (numbered), or up to the delta's opening quote
        self.mid = mid  # from after the number up to the delta's opening quote, included
        self.tail = tail  # from the delta's closing quote up to the padding's value, or the end
        self.rest = rest  # from the padding's closing quote to the end
        self.numbered = numbered
        self.hits = 0
        self.target: tuple[Any, Any, Any] = (None, None, None)  # where the decoder puts it

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
        head = self.head
        if not payload.startswith(head):
            return None
        if self.numbered:
            if seq is None:
                return None
            number = str(seq).encode()
            at = len(head)
            if not payload.startswith(number, at):
                return None
            at += len(number)
            if not payload.startswith(self.mid, at):
                return None
            start = at + len(self.mid)
        else:
            start = len(head)
        rest = self.rest
        tail = self.tail
        if rest is None:
            if not payload.endswith(tail):
                return None
            closed = len(payload) - len(tail)  # the delta's closing quote
        else:
            if not payload.endswith(rest):
                return None
            end = len(payload) - len(rest)
            quote = payload.rfind(b'"', start, end)  # the quote that opens the padding
            if quote < 0 or not _padding(payload[quote + 1 : end]):
                return None
            closed = quote + 1 - len(tail)
            if not payload.startswith(tail, closed):
                return None
        if closed < start:
            return None
        return _body(payload, start, closed)
