"""Server-sent events as `ServerSentEvent` and `SSEComment` items, with the pull API.

`SSEDecoder` is the framer (`svir_proto.sse.framer`, where the rules and the fast lanes are
described) plus UTF-8 decoding of each event's data, by the ``errors`` policy. This module must
never do I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Final, NamedTuple

from .._pull import PullDecoder
from ..errors import PeerProtocolError
from .framer import (
    DEFAULT_MAX_EVENT_SIZE,
    EndOfStream,
    Errors,
    RawItem,
    SSEFramer,
    batch_offsets,
    typed_offsets,
)

__all__ = ["SSEComment", "SSEDecoder", "SSEItem", "ServerSentEvent"]

_MANY: Final = 64  # from this many events in one piece, building them in C is cheaper
_new_tuple: Final = tuple.__new__  # builds a ServerSentEvent in C, skipping its Python __new__


class ServerSentEvent(NamedTuple):
    """One dispatched event: its type, data, the last event id, and the ``retry`` it carried.

    A named tuple rather than an attrs class: immutable, hashable and slotted all the same, and
    several times cheaper to build, which matters at one per event (see benchmarks/sse.py).
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


class SSEComment(NamedTuple):
    """A comment line (``:`` then text, one leading space removed); keep-alives look like this."""

    text: str


SSEItem = ServerSentEvent | SSEComment | EndOfStream


class SSEDecoder(PullDecoder[SSEItem]):
    """Decode a ``text/event-stream`` body, piece by piece, with the pull API (STYLE.md 2).

    Yields `ServerSentEvent` and `SSEComment` items, then one `EndOfStream`.

    Args:
        max_event_size: bytes an event may take on the wire, everything since the previous
            blank line counted (see the module docstring).
        errors: ``"strict"`` (invalid UTF-8 raises `PeerProtocolError` with its offset) or
            ``"replace"`` (U+FFFD, as browsers do).
    """

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, errors: Errors = "strict"):
        super().__init__()
        self._framer = SSEFramer(max_event_size=max_event_size, errors=errors)
        self._raw: list[RawItem] = []
        self._last_id = ""  # the framer's last_event_id, as of the last slow feed
        self._skipped = 0  # bytes the express took that the framer has not counted yet
        self._whole = self._framer.whole
        self._whole_typed = self._framer.whole_typed

    @property
    def max_event_size(self) -> int:
        return self._framer.max_event_size

    @property
    def retry(self) -> int | None:
        """The last valid ``retry`` the stream set, in milliseconds, or ``None``."""
        return self._framer.retry

    @property
    def last_event_id(self) -> str:
        """The id the next event will carry (Rule 4)."""
        return self._framer.last_event_id

    def feed(self, data: bytes | bytearray | memoryview) -> list[SSEItem]:
        # self._fast: None, the lanes are closed; False, the lane is open (SSEFramer.take);
        # True, the express too (feed takes a whole event itself: the framer holds no bytes).
        if self._fast and type(data) is bytes:
            # Express: the piece is one whole event of one data line, or of an event line and
            # a data line, as a live stream's every read is (the server flushes each token): no
            # buffer, no framing call, and its bytes are counted into the framer's offsets when
            # it is next used. Text that is not UTF-8 goes the slow way, which applies the
            # policy.
            end = self._whole(data)
            if end:
                try:
                    text = data[6 - self._framer.shift : end].decode()
                except UnicodeDecodeError:
                    pass
                else:
                    self._skipped += len(data)
                    return [_new_tuple(ServerSentEvent, ("message", text, self._last_id, None))]
            else:
                typed = self._whole_typed(data)
                if typed is not None:
                    sse_type, start, end = typed
                    try:
                        text = data[start:end].decode()
                    except UnicodeDecodeError:
                        pass
                    else:
                        self._skipped += len(data)
                        return [_new_tuple(ServerSentEvent, (sse_type, text, self._last_id, None))]
        if self._fast is not None and data and type(data) is bytes:
            # The fast lane: one call frames the piece (SSEFramer.take), and each payload of
            # the run of simple or typed events it completes is decoded once.
            framer = self._framer
            if self._skipped:
                framer.skip(self._skipped)
                self._skipped = 0
            at = framer._base - framer.shift  # (RawBatch's offsets: see `SSEFramer.shift`)
            got = framer.take(data)
            if got is None:
                return self._slow(None)
            self._fast = not framer._buf
            if isinstance(got, tuple):
                types, typed_payloads = got
                try:
                    return _typed_events(types, typed_payloads, self._last_id)
                except UnicodeDecodeError:
                    eol = (framer.gap - 6) // 2
                    self._raw.append((at, types, typed_payloads, self._last_id, eol))
                    return self._slow(None)
            try:  # (never `Runs`: this framer returns comments)
                return _events(got, self._last_id)  # type: ignore[arg-type]
            except UnicodeDecodeError:
                self._raw.append((at, got, self._last_id, framer.gap))  # type: ignore[arg-type]
                return self._slow(None)
        return self._slow(data)

    def _receive(self, data: bytes) -> None:
        if self._skipped:
            self._framer.skip(self._skipped)
            self._skipped = 0
        self._framer.receive(data)

    def _slow(self, data: bytes | bytearray | memoryview | None) -> list[SSEItem]:
        """`feed` the general way (``None``: the framer has the bytes already), then open the
        fast lanes again if the stream allows: the framer's lane is open (see
        `SSEFramer.lane`), this decoder is not poisoned, and no event waits in its queue; the
        express too if the framer holds no bytes."""
        self._fast = None
        out = self._received() if data is None else PullDecoder.feed(self, data)
        framer = self._framer
        if framer.lane and self._error is None:
            self._fast = not framer._buf
        self._last_id = framer.last_event_id
        return out

    def _fill(self) -> None:
        framer = self._framer
        raw = self._raw  # may hold a batch the fast lane could not decode
        self._raw = []
        framing: PeerProtocolError | None = None  # after the items framed before it
        try:
            framer.frame(raw)
        except PeerProtocolError as exc:
            framing = exc
        queue = self._queue
        errors = framer.errors
        for item in raw:
            if len(item) == 4:
                at, payloads, last_id, gap = item
                try:
                    queue += _events(payloads, last_id)
                except UnicodeDecodeError:  # the policy, or the error naming its byte
                    texts = self._decode_batch(payloads, batch_offsets(at, payloads, gap))
                    queue += [
                        _new_tuple(ServerSentEvent, ("message", t, last_id, None)) for t in texts
                    ]
                if self._deferred is not None:
                    return
            elif len(item) == 5:
                at, types, typed_payloads, last_id, eol = item
                try:
                    queue += _typed_events(types, typed_payloads, last_id)
                except UnicodeDecodeError:
                    offsets = typed_offsets(at, types, typed_payloads, eol)
                    texts = self._decode_batch(typed_payloads, offsets)
                    queue += [
                        _new_tuple(ServerSentEvent, (t, x, last_id, None))
                        for t, x in zip(types, texts, strict=False)  # texts: up to an error
                    ]
                if self._deferred is not None:
                    return
            elif len(item) == 2:
                queue.append(SSEComment(item[0]))
            else:
                etype, data, data_at, id_, retry, _ = item
                try:
                    text = data.decode("utf-8", errors)
                except UnicodeDecodeError:
                    try:
                        text = framer.decode_data(data, data_at)
                    except PeerProtocolError as exc:
                        self._deferred = exc
                        return
                queue.append(ServerSentEvent(etype or "message", text, id_, retry))
        if framing is not None:
            self._deferred = framing
        elif framer.end is not None and self._deferred is None:
            self._terminal = framer.end
            queue.append(framer.end)

    def _decode_batch(
        self, payloads: Sequence[bytes | bytearray], offsets: Sequence[int]
    ) -> list[str]:
        """Decode a batch's payloads (each at its offset) one by one with the UTF-8 policy;
        under ``strict``, up to the first that is not UTF-8, whose error (naming its byte) is
        deferred."""
        texts = []
        for payload, at in zip(payloads, offsets, strict=True):
            try:
                texts.append(self._framer.decode_data(payload, at))
            except PeerProtocolError as exc:
                self._deferred = exc
                return texts
        return texts


def _events(payloads: list[bytearray], last_id: str) -> list[SSEItem]:
    """The events of a `RawBatch`'s payloads.

    Raises:
        UnicodeDecodeError: a payload is not UTF-8 (decoded strictly whatever the policy: the
            caller applies it, and names the byte).
    """
    if len(payloads) < _MANY:
        return [
            _new_tuple(ServerSentEvent, ("message", p.decode(), last_id, None)) for p in payloads
        ]
    # Many events (a large read): decode and build them in C, with no bytecode per event,
    # which pays for setting up the iterators.
    out: list[SSEItem] = []
    out += map(
        _new_tuple,
        repeat(ServerSentEvent),
        zip(repeat("message"), map(bytearray.decode, payloads), repeat(last_id), repeat(None)),
    )
    return out


def _typed_events(types: list[str], payloads: list[bytes], last_id: str) -> list[SSEItem]:
    """The events of a `RawTyped`'s types and payloads, as `_events` builds a batch's."""
    if len(payloads) < _MANY:
        return [
            _new_tuple(ServerSentEvent, (t, p.decode(), last_id, None))
            for t, p in zip(types, payloads, strict=True)
        ]
    out: list[SSEItem] = []
    out += map(
        _new_tuple,
        repeat(ServerSentEvent),
        zip(types, map(bytes.decode, payloads), repeat(last_id), repeat(None)),
    )
    return out
