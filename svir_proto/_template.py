"""A delta event's bytes, learned from one event, so that the events repeating them skip the
parser (as `svir_proto.openai._envelope` does for Chat Completions chunks), for the dialects
whose deltas are typed events with a number: the Responses API and LLM-Stream.

A server writes the deltas of one part in the same bytes: the same type, item, index, keys in
the same order. Only the delta's text, the event's number and OpenAI's ``obfuscation``
padding change.

Rule 1 (what is learned): a delta event that the decoder has just read the general way, whose
    delta key (Responses: ``"delta":``, LLM-Stream: ``"text":``) occurs once, its value a
    string, and whose number (``"sequence_number":``, ``"seq":``; if it has one) comes before
    the delta. The template is its bytes before the number, between the number and the
    delta's opening quote, and after the delta's closing quote, with at most one
    ``"obfuscation":"..."`` value after the delta left open as a hole. The decoder says which
    events it may learn from (the bytes of one whose meaning is more than its delta are not).
Rule 2 (what matches): an event that begins with those bytes, with the very number the
    stream expects next where the number stood (its digits as JSON writes them), and ends
    with them, its hole (if any) holding ASCII letters and digits only. Such an event means
    what the learned one meant, with its own delta: the same part of the same item.
Rule 3 (the delta): its text is read without a parser (`svir_proto._jsonbytes` Rule 1); any
    doubt (invalid UTF-8, an unescaped quote, a surrogate) sends the event the general way,
    which reports what is wrong and where. A template changes speed, never the events,
    errors or result.
Rule 4 (reading ahead): a read that completes a run of typed deltas repeating the template
    (and perhaps begins the next one) is read by the template from the framer's held piece
    on, before the lanes, which take what follows; what it holds after the run is the
    beginning of the next delta, held as the lane would hold it.
Rule 5 (giving up): a stream whose bytes change on every event (GitHub Copilot's new ids)
    would learn in vain; after `BUDGET` templates in a row that no event repeated, no more are
    learned. A try whose bytes cannot be learned (another writer's key order) counts as one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from ._jsonbytes import (
    LONG_HOLE,
    MAX_LEARNED,
    PAD,
    after_space,
    from_end,
    padding_hole,
    string_text,
    value_end,
)

__all__: list[str] = []

BUDGET: Final = 8
"""Templates (and the other dialects' envelopes) learned in a row that nothing repeated,
before a decoder stops learning (Rule 5)."""
_BODY: Final = rb'([^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*)'
"""A JSON string's body: runs of what it may hold as it is, between escapes (Rule 3)."""
_PADDING: Final = rb"[A-Za-z0-9]*"


def budget_after(previous: Template | None, budget: int) -> int:
    """What is left of the budget (Rule 5) when a decoder learns again, ``previous`` its last
    template: all of it when that template was repeated, one less when it was not."""
    if previous is None:
        return budget
    return BUDGET if previous.hits else budget - 1


class Template:
    """The bytes around one part's deltas; see the module docstring.

    ``head`` is the bytes up to the delta's opening quote (with ``%d`` where the number
    stands, when the stream numbers its events), compared at once; ``match`` a pattern for
    the rest: the delta's body (what a JSON string holds as it is, or escapes), the bytes
    after it, and the padding's letters and digits. A pattern compares bytes one by one, so
    it begins past the long head.
    """

    __slots__ = (
        "after", "carrier", "event", "head", "hits", "hot", "key", "line", "match", "numbered",
        "skip", "whole",
    )  # fmt: skip

    def __init__(
        self, head: bytes, mid: bytes, tail: bytes, rest: bytes | None, numbered: bool
    ) -> None:
        if numbered:
            head = head.replace(b"%", b"%%") + b"%d" + mid.replace(b"%", b"%%")
        padding = b"" if rest is None else _PADDING + re.escape(rest)
        rule = _BODY + re.escape(tail) + padding
        self.head: Final = head
        self.match: Final = re.compile(rule, re.DOTALL).fullmatch
        self.event: Final = re.compile(rule + b"\n\n", re.DOTALL).match  # and its blank line
        # a long delta's end is found from the event's end (`long`, `from_end`), then a
        # pattern for the bytes after the body
        self.key, self.skip = from_end(tail)
        self.after: Final = re.compile(re.escape(tail) + padding, re.DOTALL).fullmatch
        self.numbered: Final = numbered
        self.hits = 0
        self.hot: Any = None  # what the decoder keeps with it: the part its deltas are of
        self.carrier: Any = None  # a reasoning delta's
        self.whole: bytes | None = None  # ``head`` after the event line it came with (`typed`)
        self.line: Final = b"\n" not in head + tail + (rest or b"")  # its data was one line

    @classmethod
    def learn(
        cls, payload: bytes | bytearray, seq: int | None, key: bytes, number: bytes
    ) -> Template | None:
        """The template of a delta event read the general way (Rule 1), or ``None``: its
        delta the string after ``key`` (``b'"delta":'``), its number ``seq`` after ``number``
        (``b'"sequence_number":'``), or none."""
        at = payload.find(key)
        if at < 0 or payload.find(key, at + 1) >= 0:
            return None
        start = after_space(payload, at + len(key))  # the opening quote, if a string's
        end = value_end(payload, start) if payload[start : start + 1] == b'"' else None
        if end is None:  # not a string, or not UTF-8: the general way applied the policy
            return None
        if len(payload) - (end - start) > MAX_LEARNED:  # `svir_proto._jsonbytes` Rule 4
            return None
        head, tail = bytes(payload[: start + 1]), bytes(payload[end - 1 :])
        mid = b""
        if seq is not None:
            pos = head.find(number)
            if pos < 0 or head.find(number, pos + 1) >= 0 or number in tail:
                return None  # the number after the delta: not learned
            digits = after_space(head, pos + len(number))
            if not head.startswith(str(seq).encode(), digits):
                return None
            head, mid = head[:digits], head[digits + len(str(seq)) :]
        tail, rest = padding_hole(tail)
        if rest is None and PAD in tail:
            return None  # padding that is not a plain value: kept literal would be wrong
        return cls(head, mid, tail, rest, seq is not None)

    def typed(self, sse_type: str) -> None:
        """The deltas came in typed events named ``sse_type``: `one` and `ahead` read such
        events, if the learned one's data was one line (the data of an event in two data
        lines, which the framer joined at an LF, is not the bytes on the wire)."""
        if not self.line:
            return
        name = sse_type.encode()
        self.whole = (
            b"event: %s\ndata: " % name + self.head
            if not self.numbered
            else (b"event: " + name.replace(b"%", b"%%") + b"\ndata: " + self.head)
        )

    def long(self, data: bytes | bytearray, start: int, end: int) -> str | None:
        """The delta whose body begins at ``start`` in an event's payload that ends at ``end``,
        found from the end (`svir_proto._jsonbytes.from_end`), or ``None`` (Rule 3): for a
        long delta, which a pattern would walk a byte at a time before it reached the bytes
        after it.

        Raises:
            UnicodeDecodeError: the delta is not UTF-8.
        """
        closed = data.rfind(self.key, start, end) - self.skip
        if closed < start or self.after(data, closed, end) is None:
            return None
        return string_text(data, start, closed)

    def one(self, data: bytes, seq: int) -> str | None:
        """The delta of ``data`` if it is one whole typed event (`typed`) that repeats this
        template with number ``seq`` (Rule 2), then a blank line with LF line ends; else, or
        on any doubt, ``None``. The template's bytes and a delta's body hold no line end, so
        such bytes are one event."""
        whole = self.whole
        if whole is None or not data.endswith(b"\n\n"):
            return None
        opening = whole % seq if self.numbered else whole
        if not data.startswith(opening):
            return None
        try:
            if len(data) - len(opening) > LONG_HOLE:
                return self.long(data, len(opening), len(data) - 2)
            m = self.match(data, len(opening), len(data) - 2)
            if m is None:
                return None
            raw = m[1]  # text_of, inline: nearly every delta is plain
            return raw.decode() if 0x5C not in raw else text_of(data, m)
        except UnicodeDecodeError:  # the general way applies the policy
            return None

    def ahead(
        self, data: bytes | bytearray, seq: int, room: int, limit: int
    ) -> tuple[list[str], int, int, bool]:
        """The deltas of the whole typed events (`typed`) at the front of ``data`` that repeat
        this template (Rule 2), the first numbered ``seq``, each with LF line ends, at most
        ``limit`` bytes long, their texts at most ``room`` characters in all: the texts that
        are not empty, how many events were read, the bytes they took, and whether what
        follows them is the beginning of the next such event (a beginning of its head, or its
        head and no line end after it), which gives nothing yet. Nothing raises: any doubt
        ends the run. The template's bytes and a delta's body hold no line end, so these are
        the events the framer would find there."""
        texts: list[str] = []
        whole = self.whole
        if whole is None:
            return texts, 0, 0, False
        add = texts.append
        event = self.event
        numbered = self.numbered
        first = seq
        pos = 0
        last = data.rfind(b"\n\n")  # no event past it is whole: the pattern never runs on
        # an unfinished one (its failure costs ~80 ns a byte, on every read of a long delta)
        try:
            while True:
                opening = whole % seq if numbered else whole
                start = pos + len(opening)
                if start > last or not data.startswith(opening, pos):
                    break
                # (a delta's body holds no LF: the pattern stops at the first; a line longer
                # than LONG_HOLE it could not match, and `long` reads it: the pattern is not
                # tried on it, its failure would walk LONG_HOLE bytes)
                line = data.find(b"\n", start)
                m = event(data, start, start + LONG_HOLE) if line - start < LONG_HOLE else None
                if m is not None:
                    end = m.end()
                    raw = m[1]
                    text = raw.decode() if 0x5C not in raw else text_of(data, m)
                else:  # a long delta, or none
                    end = line + 2
                    if end < 2 or data[end - 1 : end] != b"\n":
                        break
                    text = self.long(data, start, end - 2)
                if end - pos > limit:
                    break
                if text:
                    if len(text) > room:
                        break
                    room -= len(text)
                    add(text)
                elif text is None:
                    break
                seq += 1  # (counting the events read, when they are not numbered)
                pos = end
        except UnicodeDecodeError:  # the general way applies the policy
            pass
        if seq == first:
            return texts, 0, 0, False
        begun = data.find(b"\r", pos) < 0 and self.begins(data, pos, seq)
        return texts, seq - first, pos, begun

    def begins(self, data: bytes | bytearray, pos: int, seq: int) -> bool:
        """``data[pos:]`` is the beginning of a typed event (`typed`) that repeats this
        template, numbered ``seq``: a beginning of its head, or its head and no LF after it."""
        whole = self.whole
        if whole is None:
            return False
        opening = whole % seq if self.numbered else whole
        if len(data) - pos <= len(opening):
            return opening.startswith(data[pos:])
        return data.startswith(opening, pos) and data.find(b"\n", pos + len(opening)) < 0

    def read(self, payload: bytes | bytearray, seq: int | None) -> str | None:
        """The delta of an event that repeats this template with number ``seq`` (Rule 2),
        or ``None``.

        Not UTF-8, or any other doubt: ``None`` (the general way applies the policy).
        """
        if self.numbered and seq is None:
            return None
        texts, taken, _ = self.run((payload,), 0, seq or 0, len(payload))
        if not taken:
            return None
        return texts[0] if texts else ""

    def run(
        self, payloads: Sequence[bytes | bytearray], i: int, seq: int, room: int
    ) -> tuple[list[str], int, int]:
        """The deltas of ``payloads[i]`` on that repeat this template (Rule 2), the first
        numbered ``seq`` (when the stream numbers them), their texts at most ``room``
        characters in all: the texts that are not empty, the index of the first event not
        read (for the general way, which says what is wrong with it, if anything is), and the
        room left. Nothing raises: any doubt ends the run."""
        texts: list[str] = []
        add = texts.append
        head, match = self.head, self.match
        numbered = self.numbered
        first = seq
        try:
            for data in payloads[i:] if i else payloads:
                if numbered:
                    opening = head % seq
                    if not data.startswith(opening):
                        break
                    start = len(opening)
                elif data.startswith(head):
                    start = len(head)
                else:
                    break
                if len(data) - start > LONG_HOLE:
                    found = self.long(data, start, len(data))
                else:
                    m = match(data, start)
                    if m is None:
                        break
                    raw = m[1]  # text_of, inline: nearly every delta is plain, or arguments
                    if 0x5C not in raw:
                        found = raw.decode()
                    elif 0x5C not in (unquoted := raw.replace(b'\\"', b'"')):
                        found = unquoted.decode()
                    else:
                        found = string_text(data, m.start(1), m.end(1))
                if found is None:
                    break
                text = found
                if text:
                    room -= len(text)
                    if room < 0:
                        room += len(text)
                        break
                    add(text)
                seq += 1  # (counting the events read, when they are not numbered)
        except UnicodeDecodeError:  # the general way applies the policy
            pass
        return texts, i + seq - first, room


def text_of(data: bytes | bytearray, m: re.Match[bytes]) -> str | None:
    """The text of the delta with escapes that a template's pattern matched in ``data``, or
    ``None`` when it is not one valid string (`svir_proto._jsonbytes.string_text`, its common
    case first: the pattern found the quotes; the callers read a delta without a backslash
    themselves).

    Raises:
        UnicodeDecodeError: the delta is not UTF-8.
    """
    raw = m[1]
    unquoted = raw.replace(b'\\"', b'"')
    if 0x5C not in unquoted:
        return unquoted.decode()  # a call's JSON arguments: quotes only
    return string_text(data, m.start(1), m.end(1))
