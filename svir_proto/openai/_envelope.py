"""A stream's chunk envelope, learned from one chunk, so that chunks repeating it skip the parser.

A server wraps every delta of a stream in the same bytes: the same ``id``, ``created``,
``model``, keys in the same order, often the same content-filter verdict. Only the delta
changes, and Azure's and OpenAI's ``obfuscation`` padding. Parsing that envelope again on every
chunk is most of a decoder's cost; an `Envelope` reads it once.

Rule 1 (what is learned): a chunk of at most 64 KiB that the decoder has just read the
    general way, with one choice whose ``delta`` is an object, no ``finish_reason``, no
    annotation offsets, and no ``error`` or prompt verdict; its key ``"delta":`` occurs once.
    The envelope is its bytes before the delta (``head``) and after it (``tail``), each with
    at most one ``"obfuscation":"..."`` value left open as a hole. A ``usage`` object (vLLM's
    ``continuous_usage_stats``: on every chunk, its counts growing) after the delta, whose
    values are integers, ``null`` or objects of those, is a hole too, its numbers holes
    (`svir_proto._jsonbytes.counts_pattern`); not with padding.
Rule 2 (what matches): a chunk that begins with ``head`` and ends with ``tail``, whose hole (if
    any) holds ASCII letters and digits only, or whose usage hole holds the learned usage's
    bytes with any integers of at most 18 digits for its numbers. JSON's grammar lets any value
    stand where the learned delta stood, the padding is a string nobody reads and the usage
    has the learned keys, so such a chunk means what the learned chunk meant, with its own
    delta and counts (`Envelope.read`, `Envelope.usage`).
Rule 3 (the delta): the decoder reads the deltas a stream is made of without a parser (their
    text as it is, or through the JSON string scanner when it has escapes): ``{"content":"..."}``
    (`Envelope.read`), a tool call's arguments and reasoning (`plain_delta`); any other delta
    is parsed on its own. A delta the parser refuses, or any doubt (invalid UTF-8, a chunk
    long enough to nest too deep), sends the whole chunk the general way, which reports what
    is wrong and where: the envelope changes speed, never the events, errors or result.
Rule 4 (giving up): a stream whose envelope changes on every chunk (an ``id`` per chunk) would
    learn in vain; after `BUDGET` envelopes in a row that no chunk repeated, no more are learned.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from .._json import string_body
from .._jsonbytes import (
    MAX_LEARNED,
    PAD,
    after_space,
    counts_pattern,
    few_escapes,
    is_padding,
    padding_hole,
    string_text,
    value_end,
)
from .._template import BUDGET
from ..events import ReasoningCarrier, Usage, usage_counts

__all__ = [
    "BUDGET",
    "LEARNED_FROM",
    "NO_FILTERS",
    "USAGE_PATHS",
    "Envelope",
    "Read",
    "learnable",
    "plain_delta",
]

_DELTA: Final = b'"delta":'
_CONTENT: Final = b'{"content":"'
_CONTENT_SPACED: Final = b'{"content": "'  # Python's default separators (mlx-lm)
_CONTENT_END: Final = b'"}'
_STRING_BODY: Final = rb'([^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*)"'
"""What a string may hold, then its quote: runs between escapes (a pattern keeps a frame for
each repetition: one per escape, not one per byte, attack 37)."""
_PLAIN_DELTA: Final = re.compile(
    rb'\{"(?:(reasoning_content|reasoning)":"'
    + _STRING_BODY
    + rb'|tool_calls":\[\{"index":(0|[1-9][0-9]{0,17}),"function":\{"arguments":"'
    + _STRING_BODY
    + rb"\}\}\])\}"
)
"""A plain delta other than content: reasoning, or one call's arguments (an index of 18 digits
at most: beyond, `_json` Rule 2 reads a float, which the general way refuses)."""
_ARGUMENTS_OF: Final = b'{"tool_calls":[{"index":'  # then one digit, then:
_ARGUMENTS: Final = b',"function":{"arguments":"'
_ARGUMENTS_END: Final = b'"}}]}'
_REASONING_OF: Final = b'{"reasoning'  # (`_CARRIERS`' keys)
_USAGE: Final = b'"usage":'
USAGE_PATHS: Final = (
    ("prompt_tokens",),
    ("completion_tokens",),
    ("total_tokens",),
    ("completion_tokens_details", "reasoning_tokens"),
    ("prompt_tokens_details", "cached_tokens"),
)
"""Where a usage object holds the counts of `Usage`'s fields, in their order."""
_CARRIERS: Final[dict[bytes, ReasoningCarrier]] = {
    b"reasoning_content": "reasoning_content",
    b"reasoning": "reasoning",
}


LEARNED_FROM: Final = 1 << 16
"""The longest chunk an envelope is learned from (Rule 1): finding a delta's end parses it
again, 0.27 s for a delta of 8 MB of tiny objects (attack 41 F3). The decoder does not try
one (it is no try of Rule 4: the envelope it has stays); the next chunk, a few hundred bytes
in a stream of tokens, teaches the same envelope."""


_Match = Callable[[bytes | bytearray, int], "re.Match[bytes] | None"]


_NO_MATCH: Final[_Match] = re.compile(rb"(?!)").match
"""A pattern that matches nothing: an envelope's with no usage hole."""


class Envelope:
    """The bytes around a stream's deltas; see the module docstring.

    ``read`` is chosen when it is learned: with no padding, with padding before the delta, or
    after it. Each finds the delta with a few C-level comparisons, and reads it at once when it
    is plain content, which is nearly every chunk of an answer.
    """

    __slots__ = (
        "args_closed",
        "args_opened",
        "content",
        "content_closed",
        "content_counts",
        "content_opened",
        "counts",
        "filters",
        "head",
        "head_rest",
        "hits",
        "matched",
        "plain_counts",
        "plain_size",
        "read",
        "reasoning_opened",
        "slots",
        "tail",
        "tail_rest",
    )

    def __init__(
        self,
        head: bytes,
        head_rest: bytes | None,
        tail: bytes,
        tail_rest: bytes | None,
        filters: object,
        content: bytes = _CONTENT,
    ) -> None:
        self.head = head  # up to the delta, or up to the padding's value
        self.head_rest = head_rest  # from the padding's closing quote up to the delta
        self.tail = tail  # after the delta, up to the padding's value (or the end)
        self.tail_rest = tail_rest  # from the padding's closing quote to the end
        self.filters = filters  # the choice's content_filter_results, when it had the key
        self.hits = 0
        self.content = content  # how plain content opens: with a space after the colon or not
        # Without padding, a chunk of plain content, arguments or reasoning is found with two
        # comparisons each (`_read_plain`): the head and the delta's opening, the delta's end
        # and the tail.
        self.content_opened = head + content
        self.content_closed = _CONTENT_END + tail
        self.plain_size = len(self.content_opened) + len(self.content_closed)
        """The least a chunk of plain content takes: the envelope and ``{"content":""}``."""
        self.args_opened = head + _ARGUMENTS_OF
        self.args_closed = _ARGUMENTS_END + tail
        self.reasoning_opened = head + _REASONING_OF  # then _content":" or ":", and content's end
        self.read: Callable[[bytes | bytearray], Read]
        self.counts: _Match | None = None
        """The usage hole's pattern to the end (Rule 1), when the envelope has one."""
        self.content_counts: _Match = _NO_MATCH  # and from plain content's body
        self.plain_counts: _Match = _NO_MATCH  # and from another plain delta
        self.slots: tuple[int, ...] = ()  # each of USAGE_PATHS' group in those, or 0: none
        self.matched: re.Match[bytes] | None = None  # the usage `read` found last
        if head_rest is not None:
            self.read = self._read_padded_head
        elif tail_rest is not None:
            self.read = self._read_padded_tail
        else:
            self.read = self._read_plain

    @classmethod
    def learn(
        cls, payload: bytes | bytearray, choice: dict[str, object], usage: object = None
    ) -> Envelope | None:
        """The envelope of a chunk read the general way whose choice is `learnable`, its
        ``usage`` (``None``, or `learnable`'s counts), or ``None`` when its bytes do not allow
        one (Rule 1)."""
        at = payload.find(_DELTA)
        if at < 0 or payload.find(_DELTA, at + 1) >= 0:
            return None
        start = after_space(payload, at + len(_DELTA))  # Python's default separators, too
        end = value_end(payload, start)
        if end is None or len(payload) - (end - start) > MAX_LEARNED:  # not UTF-8 (the
            return None  # general way applied the policy); too long to learn (Rule 4 there)
        head, tail = bytes(payload[:start]), bytes(payload[end:])
        head, head_rest = padding_hole(head)
        tail, tail_rest = padding_hole(tail)
        if head_rest is not None and tail_rest is not None:
            return None
        if head_rest is None and tail_rest is None and (PAD in head or PAD in tail):
            return None  # padding that is not a plain value: kept literal would be wrong
        counted = None
        if usage is not None:
            if head_rest is not None or tail_rest is not None:
                return None
            counted = _counted(payload, end, usage)
            if counted is None:
                return None
            tail, tail_rest = tail[: counted[0] - end], counted[1]
        filters = choice.get("content_filter_results", NO_FILTERS)
        content = _CONTENT_SPACED if b'": ' in payload[:start] else _CONTENT
        envelope = cls(head, None if counted else head_rest, tail, tail_rest, filters, content)
        if counted is not None:
            pattern, after = counted[2], re.escape(counted[1])
            # group 1: plain content's body, when the pattern begins there; then the counts
            # three patterns, each with four groups before the counts (`_plain_of`'s): from
            # the usage, from plain content's body, from a plain delta other than content
            envelope.counts = re.compile(b"()()()()" + pattern + after).fullmatch
            envelope.content_counts = re.compile(
                _STRING_BODY + b"()()()" + re.escape(b"}" + tail) + pattern + after
            ).fullmatch
            envelope.plain_counts = re.compile(
                _PLAIN_DELTA.pattern + re.escape(tail) + pattern + after
            ).fullmatch
            envelope.slots = tuple(i + 4 if i else 0 for i in counted[3])
            envelope.read = envelope._read_counted
        return envelope

    def usage(self) -> Usage:
        """The counts of the chunk `read` found last, when the envelope has a usage hole."""
        m = self.matched
        a, b, c, d, e = self.slots
        return usage_counts(
            int(m[a]) if a else None,  # type: ignore[index]
            int(m[b]) if b else None,  # type: ignore[index]
            int(m[c]) if c else None,  # type: ignore[index]
            int(m[d]) if d else None,  # type: ignore[index]
            int(m[e]) if e else None,  # type: ignore[index]
        )

    # ``read``: what a chunk that repeats this envelope (Rule 2) holds (see `Read`), or ``None``
    # when it does not repeat it. Raises UnicodeDecodeError for a plain delta that is not
    # UTF-8 (the general way applies the policy).

    def _read_plain(self, payload: bytes | bytearray) -> Read:
        # what _delta_at finds first, nearly every chunk: plain content, a call's arguments
        # (an index of one digit) or reasoning, each tested against the head and tail joined to
        # its ends
        # (when the body is not one string, _delta_at would find the same: the delta's span)
        opened = self.content_opened
        if payload.startswith(opened):
            closed = len(payload) - len(self.content_closed)
            if closed >= len(opened) and payload.endswith(self.content_closed):
                text = string_text(payload, len(opened), closed)
                if text is not None:
                    return text
                return len(self.head), len(payload) - len(self.tail)
        elif payload.startswith(self.args_opened):
            at = len(self.args_opened)  # the index's digit
            closed = len(payload) - len(self.args_closed)
            if (
                closed >= at + 27
                and 0x30 <= payload[at] <= 0x39
                and payload.startswith(_ARGUMENTS, at + 1)
                and payload.endswith(self.args_closed)
            ):
                text = string_text(payload, at + 27, closed)
                if text is not None:
                    return payload[at] - 0x30, text
                return len(self.head), len(payload) - len(self.tail)  # two calls' pieces, say
        elif payload.startswith(self.reasoning_opened):  # a reasoning server's every chunk
            at = len(self.reasoning_opened)
            carrier: ReasoningCarrier | None = None
            if payload.startswith(b'_content":"', at):
                at, carrier = at + 11, "reasoning_content"
            elif payload.startswith(b'":"', at):
                at, carrier = at + 3, "reasoning"
            closed = len(payload) - len(self.content_closed)
            if carrier is not None and closed >= at and payload.endswith(self.content_closed):
                text = string_text(payload, at, closed)
                if text is not None:
                    return carrier, text
        if payload.startswith(self.head) and payload.endswith(self.tail):
            return _delta_at(payload, len(self.head), len(payload) - len(self.tail), self.content)
        return None

    def _read_counted(self, payload: bytes | bytearray) -> Read:
        # plain content, nearly every chunk, or another plain delta: one pattern from the delta
        # to the end; else the delta ends where the last ``tail`` begins (no string of the
        # usage holds it)
        opened = self.content_opened
        head = self.head
        few = few_escapes(payload)  # else no pattern: `svir_proto._jsonbytes` Rule 5
        if few and payload.startswith(opened):
            m = self.content_counts(payload, len(opened))
            if m is not None:
                self.matched = m
                raw = m[1]
                if 0x5C not in raw:
                    return raw.decode()
                text = string_text(payload, m.start(1), m.end(1))
                return (len(head), m.end(1) + 2) if text is None else text
        elif not payload.startswith(head):
            return None
        elif few:
            m = self.plain_counts(payload, len(head))
            if m is not None:
                self.matched = m
                got = _plain_of(payload, m)
                return (len(head), payload.rfind(self.tail)) if got is None else got
        tail = self.tail
        closed = payload.rfind(tail, len(head))
        if closed < 0:
            return None
        m = self.counts(payload, closed + len(tail))  # type: ignore[misc]
        if m is None:
            return None
        self.matched = m
        return _delta_at(payload, len(head), closed, self.content)

    def _read_padded_head(self, payload: bytes | bytearray) -> Read:
        head = self.head
        rest = self.head_rest
        if payload.startswith(head) and payload.endswith(self.tail):
            quote = payload.find(b'"', len(head))
            if (
                quote >= 0
                and is_padding(payload[len(head) : quote])
                and payload.startswith(rest, quote)  # type: ignore[arg-type]
            ):
                return _delta_at(
                    payload,
                    quote + len(rest),  # type: ignore[arg-type]
                    len(payload) - len(self.tail),
                    self.content,
                )
        return None

    def _read_padded_tail(self, payload: bytes | bytearray) -> Read:
        head = self.head
        rest = self.tail_rest
        if payload.startswith(head) and payload.endswith(rest):  # type: ignore[arg-type]
            end = len(payload) - len(rest)  # type: ignore[arg-type]
            quote = payload.rfind(b'"', len(head), end)
            if (
                quote >= 0
                and is_padding(payload[quote + 1 : end])
                and payload.endswith(self.tail, len(head), quote + 1)
            ):
                return _delta_at(payload, len(head), quote + 1 - len(self.tail), self.content)
        return None


Read = str | tuple[int, int] | tuple[int | ReasoningCarrier, str] | None
"""What `Envelope.read` finds in a chunk: its plain content's text; ``(index, text)`` or
``(key, text)`` for another plain delta (`plain_delta`); ``(start, end)``, where any other
delta lies; ``None``, not a repeat of the envelope."""


def _delta_at(payload: bytes | bytearray, start: int, end: int, content: bytes) -> Read:
    """`Envelope.read`'s answer for the delta at ``payload[start:end]``."""
    if end <= start:
        return None
    if payload.startswith(content, start):
        opened = start + len(content)
        if end - opened >= 2 and payload.endswith(_CONTENT_END, start, end):
            text = string_text(payload, opened, end - 2)
            if text is not None:
                return text
        return start, end
    if (
        payload.startswith(_ARGUMENTS_OF, start)
        and payload.startswith(_ARGUMENTS, start + 25)
        and 0x30 <= payload[start + 24] <= 0x39  # one digit: the common case, at once
        and end - start >= 56
        and payload.endswith(_ARGUMENTS_END, start, end)
    ):
        text = string_text(payload, start + 51, end - 5)
        if text is not None:
            return payload[start + 24] - 0x30, text
        return start, end
    plain = plain_delta(payload, start, end)
    return (start, end) if plain is None else plain


NO_FILTERS: Final = object()
"""`Envelope.filters` of a choice without ``content_filter_results``."""


def _counted(
    payload: bytes | bytearray, end: int, usage: object
) -> tuple[int, bytes, bytes, tuple[int, ...]] | None:
    """The usage hole of a chunk whose delta ends at ``end`` (Rule 1): where the usage's value
    begins, the bytes after it, its pattern (`counts_pattern`) and the group of each of
    `USAGE_PATHS` in it (0: none); ``None`` when its bytes do not allow one."""
    leaves = _leaves(usage, ())
    at = payload.find(_USAGE, end)
    if leaves is None or at < 0 or payload.find(_USAGE, at + 1) >= 0 or payload.find(_USAGE) < at:
        return None
    start = after_space(payload, at + len(_USAGE))
    stop = value_end(payload, start) or start  # (the payload was read back already: UTF-8)
    pattern, groups = counts_pattern(bytes(payload[start:stop]))
    m = re.fullmatch(pattern, payload[start:stop])
    if m is None or groups != len(leaves) or [int(g) for g in m.groups()] != [n for _, n in leaves]:
        return None  # a key twice, say: the parsed object is not the bytes in order
    if len(_KEY.findall(payload, start, stop)) != _keys(usage):
        return None  # a key twice, its first value null (which holds no number to tell)
    paths = [path for path, _ in leaves]
    slots = tuple(paths.index(p) + 1 if p in paths else 0 for p in USAGE_PATHS)
    return start, bytes(payload[stop:]), pattern, slots


_KEY: Final = re.compile(rb'"(?:[^"\\]|\\.)*"')
"""A string: in a usage the hole takes (numbers, ``null`` and objects of them), a key."""


def _keys(value: object) -> int:
    """The keys of a parsed usage object, at every level."""
    if type(value) is not dict:
        return 0
    return len(value) + sum(map(_keys, value.values()))


def _leaves(value: object, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], int]] | None:
    """The integers of a usage object and where each is, in order; ``None`` when it holds
    anything else (a float, a string), nests deeper than two levels, or holds a number of more
    than 18 digits. A ``null`` (vLLM's ``"prompt_tokens_details":null``) holds none: the
    pattern keeps its bytes, so a chunk with a value there goes the general way."""
    if type(value) is int:
        return [(path, value)] if 0 <= value < 10**18 else None
    if value is None:
        return []
    if type(value) is not dict or len(path) > 1 or len(value) > 32:
        return None
    out: list[tuple[tuple[str, ...], int]] = []
    for key, item in value.items():
        got = _leaves(item, (*path, key))
        if got is None:
            return None
        out += got
    return out


def learnable(obj: dict[str, object]) -> dict[str, object] | None:
    """The one choice of a chunk whose envelope may be learned (Rule 1), or ``None``."""
    choices = obj.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if (
        type(choice) is not dict
        or type(choice.get("delta")) is not dict
        or choice.get("finish_reason") is not None
        or "content_filter_offsets" in choice
    ):
        return None
    for key in ("error", "prompt_filter_results", "prompt_annotations"):
        if obj.get(key) is not None:
            return None
    return choice


def plain_delta(payload: bytes | bytearray, start: int, end: int) -> Read:
    """Rule 3's other deltas read without a parser, the delta at ``payload[start:end]``:
    ``(index, text)`` for ``{"tool_calls":[{"index":<digits>,"function":{"arguments":"..."}}]}``,
    ``(key, text)`` for ``{"reasoning_content":"..."}`` and ``{"reasoning":"..."}``; else
    ``None``.

    Raises:
        UnicodeDecodeError: the text is not UTF-8 (the general way applies the policy).
    """
    if not few_escapes(payload, start, end):  # (`svir_proto._jsonbytes` Rule 5)
        return None
    m = _PLAIN_DELTA.fullmatch(payload, start, end)
    return None if m is None else _plain_of(payload, m)


def _plain_of(payload: bytes | bytearray, m: re.Match[bytes]) -> Read:
    """`plain_delta`'s answer for its pattern's match ``m`` in ``payload`` (groups 1 to 4)."""
    key, text, index, arguments = m.group(1, 2, 3, 4)
    raw = text if arguments is None else arguments
    if 0x5C in raw:  # a backslash: the JSON string scanner reads it, with its closing quote
        group = 2 if arguments is None else 4
        body = string_body(payload[m.start(group) : m.end(group) + 1])
        if body is None:
            return None
    else:
        body = raw.decode()
    if arguments is None:
        return _CARRIERS[key], body
    return int(index), body
