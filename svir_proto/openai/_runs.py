"""`ChatStreamRuns`: the Chat Completions decoder for a translator that copies the answer's
text as the upstream wrote it, instead of a `TextDelta` per chunk that is encoded again.

A gateway that translates an OpenAI upstream to LLM-Stream writes each delta's text again as a
JSON string; where the upstream's string is already what the encoder writes, its bytes can go
as they came. This decoder gives a run of such chunks as one `TextRun` of their strings'
bodies (`LLMStreamEncoder.deltas` copies them), and is `ChatStreamDecoder` in everything else:

Rule 1 (a run): chunks in a row that repeat the learned envelope (`_envelope`) around plain
    content: the envelope's bytes, ``{"content":"`` (with the envelope's spacing), a body,
    ``"}``, the envelope's bytes, all of it on the wire as in the chunk it was learned from.
    Only while the envelope has no padding hole and no filter verdict that would be news (none,
    or the last one, which found nothing: counted as a repeat, as the decoder counts it), and
    the stream has not ended.
Rule 2 (a body that is copied): one that is exactly what `svir_proto._json.dumps` writes
    between the quotes for its text, with orjson as with the standard library (the two write
    the same bytes for every valid string): valid UTF-8, no raw quote or control character,
    escapes only as both write them: ``\\"``, ``\\\\``, ``\\b``, ``\\f``, ``\\n``, ``\\r``,
    ``\\t``, and ``\\u00xx`` in lower case for the other control characters. Any other body
    (``\\u00e9`` from a server that escapes what is not ASCII, ``\\/``, a surrogate's escape,
    invalid UTF-8) ends the run and is read the general way, as is every chunk that is not a
    repeat. With ``think_tags``, a body with ``<`` is read the general way (it may open a
    marker), and so are the chunks while a ``<think>`` is open or a marker's beginning is held,
    a few at a time (`FLOOR`), so that runs resume soon after the marker that closes it.
    Empty content is counted and gives no text, as it gives no event.
Rule 3 (the same stream): with each run as its `TextRun.deltas`, the events, the result, the
    errors and their offsets are `ChatStreamDecoder`'s with ``keep_text=False``, however the
    body is split. A run's text is never decoded, so none is kept: ``keep_text`` is ``False``.
Rule 4 (linear): runs are found a block of chunks at a time with a few C-level passes (the
    block joined and compared with the envelope joined around the bodies cut from it; the
    bodies joined and checked at once), at most `BLOCK` chunks; after a chunk that ends a run,
    the next block is at most twice that run (and `FLOOR`), so that finding where a run ends
    costs about what the run did. A read that completes one chunk (a live stream's every read,
    the express's) makes no run: it is the decoder's, a `TextDelta`, which costs no more.

This module never does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, Final

from .._jsonbytes import NOT_PLAIN, few_escapes
from ..events import text_run
from ._envelope import NO_FILTERS, Envelope
from .stream import ChatStreamDecoder
from .watch import _opening

__all__: list[str] = []

BLOCK: Final = 64
"""The most chunks a block holds (Rule 4)."""
FLOOR: Final = 8
"""The least the block after a run's end may hold (Rule 4): a few chunks cost little more to
try than one."""

_ESCAPE: Final = rb'\\(?:["\\bfnrt]|u00(?:0[0-7bef]|1[0-9a-f]))'
"""The escapes `_json.dumps` writes (Rule 2): the short ones, and ``\\u00xx`` for the other
control characters."""


_Match = Callable[[bytes | bytearray], "re.Match[bytes] | None"]


def _as_dumped(plain: bytes) -> tuple[_Match, _Match]:
    """``fullmatch`` of a body that is what `_json.dumps` writes (runs of ``plain`` bytes
    between its escapes), and of such bodies joined with LF; ``None`` for bodies with too many
    escapes to match (`svir_proto._jsonbytes` Rule 5), which are decoded."""
    body = plain + b"*(?:" + _ESCAPE + plain + b"*)*"
    one, joined = re.compile(body).fullmatch, re.compile(body + b"(?:\n" + body + b")*").fullmatch

    def dumped(data: bytes | bytearray) -> re.Match[bytes] | None:
        return one(data) if few_escapes(data) else None

    def all_dumped(data: bytes | bytearray) -> re.Match[bytes] | None:
        return joined(data) if few_escapes(data) else None

    return dumped, all_dumped


_DUMPED: Final = _as_dumped(rb'[^"\\\x00-\x1f]')
_DUMPED_UNMARKED: Final = _as_dumped(rb'[^"\\\x00-\x1f<]')  # with think_tags (Rule 2)


class ChatStreamRuns(ChatStreamDecoder):
    """`ChatStreamDecoder` that gives runs of plain content as `TextRun` events (the module's
    rules). Options as `ChatStreamDecoder`'s; ``keep_text`` must be ``False`` (Rule 3).

    Raises:
        ValueError: ``keep_text=True``.
    """

    def __init__(self, *, keep_text: bool = False, **options: Any) -> None:
        if keep_text:
            raise ValueError("a text run is not decoded, so not kept: keep_text must be False")
        super().__init__(keep_text=False, **options)
        self._reach = BLOCK  # chunks the next block may hold (Rule 4)
        marks = self._think is not None
        self._unsafe = NOT_PLAIN + b"<" if marks else NOT_PLAIN
        self._dumped, self._all_dumped = _DUMPED_UNMARKED if marks else _DUMPED

    def _on_batch(self, at: int, payloads: Sequence[bytes | bytearray], gap: int) -> None:
        """The runs of the payloads at once (`_run`), each stretch between them the general
        way (`ChatStreamDecoder._on_batch`, which may learn or change the envelope on the
        way): a stretch from a payload that is in no run to the next one that may be."""
        decode = ChatStreamDecoder._on_batch
        n = len(payloads)
        if n == 1:  # the express's every read, a live stream's: one chunk, no run to make
            decode(self, at, payloads, gap)
            return
        i = 0
        while i < n:
            envelope = self._envelope
            if envelope is not None and self._running(envelope):
                j = self._run(envelope, payloads, i)
                if j == n:
                    return
                if j > i:
                    at += sum(map(len, payloads[i:j])) + (j - i) * gap
                    i = j
                k = _opening(envelope.content_opened, payloads, i + 1)
            elif envelope is None and self._budget and not self._done:
                k = i + 1  # the decoder reads it, and may learn an envelope from it
            elif envelope is not None and self._thinking():
                k = i + FLOOR  # a few at a time: runs may follow the marker that closes it
            else:
                k = n
            part = payloads[i:k]
            decode(self, at, part, gap)
            at += sum(map(len, part)) + (k - i) * gap
            i = k

    def _running(self, envelope: Envelope) -> bool:
        """Whether chunks that repeat ``envelope`` may make runs (Rules 1 and 2)."""
        return self._repeats_plainly(envelope) and not self._thinking()

    def _thinking(self) -> bool:
        """Whether inline reasoning is being split (Rule 2): a ``<think>`` open, or a
        marker's beginning held."""
        think = self._think
        return think is not None and bool(think.inside or think.held)

    def _run(self, envelope: Envelope, payloads: Sequence[bytes | bytearray], i: int) -> int:
        """Queue the runs from ``payloads[i]`` on, a block at a time (Rule 4); the index of
        the first payload that is in none."""
        opened = envelope.content_opened
        closed = envelope.content_closed
        body = itemgetter(slice(len(opened), -len(closed)))
        around = closed + b"\n" + opened
        n = len(payloads)
        while i < n:
            if not payloads[i].startswith(opened):
                return i
            reach = self._reach
            block = payloads[i : i + reach]
            bodies = list(map(body, block))
            if opened + around.join(bodies) + closed == b"\n".join(block):
                k = len(block)  # each is the envelope around its body (Rule 1)
            else:  # one is not: the first such (a bytes' length tells a short one)
                size = envelope.plain_size
                k = next(
                    j
                    for j, payload in enumerate(block)
                    if len(payload) < size
                    or not payload.startswith(opened)
                    or not payload.endswith(closed)
                )
            texts, taken = self._copied(bodies, k)
            if taken:
                self._took(envelope, texts, taken)
            if taken < len(block):
                self._reach = min(BLOCK, max(2 * taken + 1, FLOOR))
                return i + taken
            self._reach = min(BLOCK, 2 * reach)
            i += taken
        return n

    def _took(self, envelope: Envelope, texts: bytes, k: int) -> None:
        """What reading the ``k`` chunks whose bodies ``texts`` holds (joined with LF) one by
        one would do (Rule 3)."""
        envelope.hits += k
        if envelope.filters is not NO_FILTERS and envelope.filters is not None:
            self._repeats += k  # the quiet verdict, repeated (Rule 1)
        if not texts or texts[0] == 0x0A or texts[-1] == 0x0A or b"\n\n" in texts:
            kept = [text for text in texts.split(b"\n") if text]  # empty content: no delta
            if not kept:
                return
            texts, k = b"\n".join(kept), len(kept)
        self._queue.append(text_run(texts, k))  # type: ignore[arg-type]

    def _copied(self, bodies: list[bytes | bytearray], k: int) -> tuple[bytes, int]:
        """How many of the first ``k`` bodies are copied (Rule 2), from the first, and their
        bodies joined with LF. (A body holds no LF: a data line of a batch holds none; the
        joined bodies are checked with their count of LF all the same.)"""
        if not k:
            return b"", 0
        joined = b"\n".join(bodies[:k] if k < len(bodies) else bodies)
        if (
            len(joined.translate(None, self._unsafe)) == len(joined) - k + 1
            or (self._all_dumped(joined) is not None and joined.count(b"\n") == k - 1)
        ) and _utf8(joined):
            return joined, k
        dumped = self._dumped  # (each may pass alone where their escapes together are too
        k = next(  # many to match at once: `few_escapes`; review 38)
            (j for j, b in enumerate(bodies[:k]) if dumped(b) is None or not _utf8(b)), k
        )
        return b"\n".join(bodies[:k]), k


def _utf8(data: bytes | bytearray) -> bool:
    try:
        return data.isascii() or bool(data.decode())
    except UnicodeDecodeError:
        return False
