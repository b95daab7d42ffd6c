"""`ChatStreamWatcher`: what a relay needs to know of a Chat Completions stream it passes on as
it came, for a fraction of decoding it.

A gateway that relays an OpenAI upstream to an OpenAI client passes the upstream's bytes on
unchanged (the most faithful relay there is); it still has to know how the stream goes: that
it progresses, how it ends (``[DONE]``, a finish, an error chunk, LM Studio's ``event: error``),
its usage. The watcher is the decoder, with every rule and bound of it, less what a relay does
not need:

Rule 1: text and reasoning deltas are not events and are not kept: the client reads them. A
    run of chunks that each begin and end as the learned envelope around plain content
    (`_envelope`; nearly every chunk), all valid UTF-8, is counted and not read further: the
    envelope holds the chunk's ``finish_reason``, ``usage`` and everything else a relay
    watches, as the learned chunk had them (none).
Rule 2: every event the stream carries is counted (`seen`): its progress.
Rule 3: everything else is the decoder's: `Finished`, `Usage`, `StreamFailed`, `StreamEnded`,
    tool-call pieces, filter verdicts, and its errors for bytes that break the protocol.

This module never does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import methodcaller

from ..events import ReasoningCarrier
from .stream import ChatStreamDecoder

__all__ = ["ChatStreamWatcher"]


class ChatStreamWatcher(ChatStreamDecoder):
    """`ChatStreamDecoder` without its text and reasoning (see the module's rules); options as
    its."""

    seen = 0
    """Events the stream has carried so far (chunks, ``[DONE]``): its progress."""

    def _on_batch(self, at: int, payloads: Sequence[bytes | bytearray], gap: int) -> None:
        self.seen += len(payloads)
        envelope = self._envelope
        if (
            envelope is not None
            and envelope.head_rest is None
            and envelope.tail_rest is None
            and not self._done
            and payloads  # a read that completed no event brings none
            and min(map(len, payloads)) >= envelope.plain_size
            and all(map(methodcaller("startswith", envelope.content_opened), payloads))
            and all(map(methodcaller("endswith", envelope.content_closed), payloads))
            and _utf8(payloads)  # JSON text is UTF-8 (RFC 8259 8.1): the decoder's rule too
        ):
            return  # Rule 1: a run that repeats the envelope around plain content
        ChatStreamDecoder._on_batch(self, at, payloads, gap)

    def _on_event(self, sse_type: str | None, payload: bytes | bytearray, at: int) -> None:
        if sse_type is not None and sse_type != "message":
            self.seen += 1  # an event: error, or one of no meaning here
        ChatStreamDecoder._on_event(self, sse_type, payload, at)

    def _content(self, content: str, at: int) -> None:
        pass  # Rule 1: the client's to read; nothing is kept, so nothing grows

    def _reason(self, text: str, carrier: ReasoningCarrier) -> None:
        pass


def _utf8(payloads: Sequence[bytes | bytearray]) -> bool:
    """Whether every payload is UTF-8 (ASCII ones, nearly all, at C speed)."""
    for payload in payloads:
        if not payload.isascii():
            try:
                payload.decode()
            except UnicodeDecodeError:
                return False
    return True
