"""`ChatStreamWatcher`: what a relay needs to know of a Chat Completions stream it passes on as
it came, for a fraction of decoding it.

A gateway that relays an OpenAI upstream to an OpenAI client passes the upstream's bytes on
unchanged (the most faithful relay there is); it still has to know how the stream goes: that
it progresses, how it ends (``[DONE]``, a finish, an error chunk, LM Studio's ``event: error``),
its usage. The watcher is the decoder, with every rule and bound of it, less what a relay does
not need:

Rule 1: text and reasoning deltas are not events and are not kept: the client reads them. A
    chunk that begins and ends as the learned envelope around plain content (`_envelope`;
    nearly every chunk), valid UTF-8, is counted and not read further: the envelope holds the
    chunk's ``finish_reason``, ``usage`` and everything else a relay watches, as the learned
    chunk had them (none), and a filter verdict it holds is a repeat the decoder would count
    (one that found nothing: one that found something is news, and read). A run of events is
    read in stretches: those chunks at once, with a few C-level passes that stop at the first
    chunk that is not one, and each stretch between them by the decoder, which may learn or
    change the envelope on the way. Plain content is a string with nothing escaped, no quote
    and no control character, in UTF-8: its text as it is (what the decoder reads at once);
    one with an escape is the decoder's to read, and a string that is not valid JSON there
    (a raw quote or control character, a bad escape) the decoder's to refuse, as it does.
Rule 2: every event that carries something is counted (`seen`): its progress. A chunk of
    empty content, or of no choice and nothing else, carries nothing (a keep-alive in the
    shape of a chunk), nor does an event of a type with no meaning here (``ping``): they are
    no progress, as the decoder, which gives no event for them, holds for a translated stream
    (attack round 31, F3: an upstream sent one every half second and a relayed stream outlived
    ``--timeout``). An event the decoder reads counts when it gave an event that is progress
    (`svir_proto._progress`: a usage it gave last, or a piece of a call that carries nothing,
    is not), content or reasoning, or held a delta with any other key that is not empty, nor
    an object of empty members (the legacy ``function_call``, ``audio``: the client reads
    them; ``{"arguments": ""}`` is nothing, attack 50 F2).
Rule 3: everything else is the decoder's: `Finished`, `Usage`, `StreamFailed`, `StreamEnded`,
    tool-call pieces, filter verdicts, and its errors for bytes that break the protocol.

This module never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import indexOf, methodcaller
from typing import Final

from .._jsonbytes import NOT_PLAIN
from .._progress import news
from ..events import ReasoningCarrier
from ._envelope import NO_FILTERS, Envelope
from .stream import DELTA_KEYS, NOTHING, ChatStreamDecoder

__all__ = ["ChatStreamWatcher"]


class ChatStreamWatcher(ChatStreamDecoder):
    """`ChatStreamDecoder` without its text and reasoning (see the module's rules); options as
    its."""

    seen = 0
    """Events the stream has carried so far that carry something (Rule 2): its progress."""

    _carried = 0  # content and reasoning the decoder read (which this watcher does not keep)

    def _on_batch(self, at: int, payloads: Sequence[bytes | bytearray], gap: int) -> None:
        """Rule 1 over a run: the stretches of plain repeats of the envelope are counted and
        skipped, and each stretch between them goes to the decoder at once (which may learn
        an envelope, or change it, on the way)."""
        n = len(payloads)
        decode = self._decode
        envelope = self._envelope
        if n == 1:  # the express's every read, and every event the general way gives alone
            payload = payloads[0]
            if (
                envelope is not None
                and payload.startswith(envelope.content_opened)
                and payload.endswith(envelope.content_closed)
                and len(payload) >= envelope.plain_size
                and self._repeats_plainly(envelope)
                and _plain_text(
                    payload[len(envelope.content_opened) : -len(envelope.content_closed)]
                )
            ):
                self._repeated(envelope, 1)
                self.seen += len(payload) > envelope.plain_size  # content "": nothing
            else:
                decode(at, payloads, gap)
            return
        i = 0
        while i < n:
            envelope = self._envelope
            if envelope is None:  # the decoder reads the next payload, which may learn one
                k = i + 1 if self._budget and not self._done else n
            elif not self._repeats_plainly(envelope):
                k = n
            else:
                j = _plain(envelope, payloads, i)
                short = j - i < _FIRST_BLOCK
                if j > i:
                    self._repeated(envelope, j - i)
                    run = payloads[i:j]
                    empty = envelope.content_opened + envelope.content_closed  # content ""
                    self.seen += j - i - run.count(empty)
                    if j == n:
                        return
                    at += sum(map(len, run)) + (j - i) * gap
                    i = j
                k = _opening(envelope.content_opened, payloads, i + 1)
                if short:  # runs this short cost more to find than to decode: a stretch
                    k = max(k, min(n, i + _STRETCH))  # goes to the decoder whole
            part = payloads[i:k]
            decode(at, part, gap)
            at += sum(map(len, part)) + (k - i) * gap
            i = k

    def _decode(self, at: int, payloads: Sequence[bytes | bytearray], gap: int) -> None:
        """A stretch read by the decoder, each event counted when it gave an event, content or
        reasoning (Rule 2)."""
        decode = ChatStreamDecoder._on_batch
        queue = self._queue
        for payload in payloads:
            queued, carried, usage = len(queue), self._carried, self._usage
            decode(self, at, (payload,), gap)
            self.seen += self._carried != carried or (
                len(queue) != queued and any(news(e, usage) for e in queue[queued:])
            )
            at += len(payload) + gap

    def _repeated(self, envelope: Envelope, k: int) -> None:
        """Count ``k`` plain repeats of ``envelope`` as the decoder would."""
        envelope.hits += k
        if envelope.filters is not NO_FILTERS and envelope.filters is not None:
            self._repeats += k

    def _on_event(self, sse_type: str | None, payload: bytes | bytearray, at: int) -> None:
        if sse_type is None or sse_type == "message":  # a chunk: `_on_batch` counts it
            ChatStreamDecoder._on_event(self, sse_type, payload, at)
            return
        queued = len(self._queue)  # an error counts; an event of no meaning here (``ping``,
        ChatStreamDecoder._on_event(self, sse_type, payload, at)  # review of round 32) not
        self.seen += len(self._queue) != queued

    def _delta(self, delta: dict[str, object], at: int) -> None:
        # Rule 2: a delta of what the decoder gives no event for (the legacy function_call,
        # audio) carries something the client reads (review of round 32: a relayed stream
        # of them was cut at --timeout), unless all it has is nothing (attack 50 F2:
        # {"function_call": {"arguments": ""}} every 0.3 s kept a stalled relay past it)
        for key, value in delta.items():
            if key not in DELTA_KEYS and _carries(value):
                self._carried += 1
                break
        ChatStreamDecoder._delta(self, delta, at)

    def _content(self, content: str, at: int) -> None:
        # Rule 1: the client's to read; nothing is kept, so nothing grows
        self._carried += content != ""

    def _reason(self, text: str, carrier: ReasoningCarrier) -> None:
        self._carried += text != ""


def _carries(value: object) -> bool:
    """Whether a delta's value carries something: not nothing (`NOTHING`), nor an object whose
    members are all nothing (one level down: a recursion as deep as the JSON raised
    `RecursionError`, review 50 r5)."""
    if value in NOTHING:
        return False
    if type(value) is dict:
        return any(v not in NOTHING for v in value.values())
    return True


def _opening(opened: bytes, payloads: Sequence[bytes | bytearray], start: int) -> int:
    """The index of the first payload from ``start`` on that begins with ``opened``, else
    ``len(payloads)``: one C-level pass that stops there."""
    n = len(payloads)
    at = start
    step = _FIRST_BLOCK
    while at < n:  # a block at a time, as `_plain` goes (islice would walk from the first)
        block = payloads[at : at + step]
        step = min(4 * step, _BLOCK)
        k = _first(map(methodcaller("startswith", opened), block), True, len(block))
        if k < len(block):
            return at + k
        at += len(block)
    return n


def _plain(envelope: Envelope, payloads: Sequence[bytes | bytearray], start: int) -> int:
    """The index of the first payload from ``start`` on that is not the envelope around plain
    content (Rule 1), else ``len(payloads)``; a block at a time, from a few payloads up to
    `_BLOCK`, so that finding each one that is not costs about what lies before it, not what
    follows (a stream of text with a line break every ten chunks has runs of nine)."""
    n = len(payloads)
    opened = envelope.content_opened
    closed = envelope.content_closed
    size = envelope.plain_size
    at = start
    step = _FIRST_BLOCK
    while at < n:
        block = payloads[at : at + step]
        step = min(4 * step, _BLOCK)
        k = _first(map(methodcaller("startswith", opened), block), False, len(block))
        k = _first(map(methodcaller("endswith", closed), block[:k]), False, k)
        if k and min(map(len, block[:k])) < size:  # the envelope's ends overlap: not content
            k = next(i for i, payload in enumerate(block) if len(payload) < size)
        k = _text(block[:k] if k < len(block) else block, len(opened), len(closed))
        if k < len(block):
            return at + k
        at += len(block)
    return n


_FIRST_BLOCK: Final = 8
_STRETCH: Final = 32
_BLOCK: Final = 64


def _text(payloads: Sequence[bytes | bytearray], lo: int, hi: int) -> int:
    """How many of the payloads, from the first, hold between the envelope's ends (``lo`` bytes
    and ``hi`` bytes) a JSON string's body that is its text as it is: nothing escaped, no
    quote, no control character, UTF-8 (RFC 8259 7 and 8.1; what the decoder reads at once,
    `string_text`). Any other (an escape, say) is the decoder's to read, or to refuse."""
    if not payloads:
        return 0
    bodies: list[bytes | bytearray] = list(
        map(methodcaller("__getitem__", slice(lo, -hi)), payloads)
    )
    joined = b" ".join(bodies)  # a space between: no UTF-8 sequence runs from one to the next
    if len(joined.translate(None, NOT_PLAIN)) == len(joined):
        if joined.isascii():
            return len(bodies)
        try:
            joined.decode()
        except UnicodeDecodeError:
            pass
        else:
            return len(bodies)
    for k, body in enumerate(bodies):
        if not _plain_text(body):
            return k
    return len(bodies)  # pragma: no cover - the joined bodies had a fault, so one has


def _first(flags: Iterator[bool], flag: bool, otherwise: int) -> int:
    """The index of the first ``flag`` in ``flags`` (a C-level pass that stops there), else
    ``otherwise``."""
    try:
        return indexOf(flags, flag)
    except ValueError:
        return otherwise


def _plain_text(body: bytes | bytearray) -> bool:
    """`_text` for one body."""
    if len(body.translate(None, NOT_PLAIN)) != len(body):
        return False
    if body.isascii():
        return True
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True
