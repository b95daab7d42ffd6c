"""The pull API every byte consumer shares: ``receive_data`` / ``next_event`` (STYLE.md 2).

`PullDecoder` implements, once, what each decoder would otherwise repeat: an event queue,
poisoning (after any exception every later call re-raises the stored original), refusing data
after the end of the body, the terminal event that repeats, and the helpers ``feed``, ``close``
and ``events`` built on the same queue. ``feed`` returns the events decoded before an error and
raises the error on the next call, so no event is ever dropped.

A subclass implements ``_receive(data)`` (store bytes; ``b""`` is end of body) and ``_fill()``,
which appends every event it can now decode to ``self._queue`` and, once the body is over,
appends the terminal event last and names it in ``self._terminal``. An error found while filling
goes in ``self._deferred``: the events queued before it are delivered first, and nothing that
comes after it is decoded (the body's end included: a cut would take the error's place).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Final, Generic, Literal, TypeVar

from .errors import CallerProtocolError, SvirProtocolError

__all__ = ["NEED_DATA", "NeedData"]


class NeedData(enum.Enum):
    """The type of `NEED_DATA`; an enum, so ``is NEED_DATA`` narrows under type checkers."""

    NEED_DATA = "NEED_DATA"


NEED_DATA: Final = NeedData.NEED_DATA
"""Returned by ``next_event()`` when no event can be produced until more bytes arrive."""

E = TypeVar("E")


class PullDecoder(Generic[E]):
    """Base of the byte-consuming decoders; see the module docstring."""

    def __init__(self) -> None:
        self._queue: list[E] = []
        self._qpos = 0
        self._dirty = False  # bytes arrived since the last _fill
        self._eof = False
        self._terminal: E | None = None
        self._terminated = False
        self._deferred: SvirProtocolError | None = None
        self._error: BaseException | None = None
        # A subclass may open fast lanes for feed() (any value but None) while nothing is
        # pending; every other entry point closes them, and the subclass decides when to open
        # them again.
        self._fast: bool | None = None

    @property
    def error(self) -> BaseException | None:
        """The error that poisoned this decoder, once a call raised it or returned the events
        decoded before it (the next call raises it). A transport checks this after ``feed``, so
        it raises at once instead of waiting for bytes that would only bring the error back."""
        return self._error

    @property
    def terminal(self) -> E | None:
        """The terminal event, once it has been decoded (it is queued, or was returned)."""
        return self._terminal

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Append a piece of the body; ``b""`` means the body has ended.

        Args:
            data: any bytes-like piece; it may end anywhere, even inside a UTF-8 character.

        Raises:
            CallerProtocolError: non-empty data after the end of the body.
            SvirProtocolError: the error that poisoned this decoder earlier, again.
        """
        self._fast = None
        if self._error is not None:
            raise self._error
        if not data:
            self._eof = True
            self._dirty = True
            self._receive(b"")
            return
        if self._eof:
            raise CallerProtocolError("received data after the end of the body")
        self._dirty = True
        self._receive(data if type(data) is bytes else bytes(data))

    def next_event(self) -> E | Literal[NeedData.NEED_DATA]:
        """Return the next event, or `NEED_DATA` when more bytes are needed first.

        After the terminal event, every call returns that same event again.

        Raises:
            PeerProtocolError: the bytes received break the protocol or exceed a limit. The
                decoder is then poisoned: every later call raises the same error, and its
                ``result`` (where it has one) keeps everything decoded before it.
        """
        self._fast = None
        if self._error is not None:
            raise self._error
        if self._qpos >= len(self._queue):
            if self._terminated:
                return self._terminal  # type: ignore[return-value]
            if not self._refill():
                return NEED_DATA
        event = self._queue[self._qpos]
        self._qpos += 1
        if event is self._terminal:
            self._terminated = True
        return event

    def feed(self, data: bytes | bytearray | memoryview) -> list[E]:
        """``receive_data(data)`` then every event now available, in order.

        If decoding fails after some events were produced, those events are returned and the
        error is raised by the next call.
        """
        # receive_data(data), inline: feed() runs once per network read
        if self._error is not None:
            raise self._error
        if data:
            if self._eof:
                raise CallerProtocolError("received data after the end of the body")
            self._receive(data if type(data) is bytes else bytes(data))
        else:
            self._eof = True
            self._receive(b"")
        return self._received()

    def _received(self) -> list[E]:
        """The rest of `feed`, once its bytes are received: every event now available."""
        self._dirty = True
        if self._terminated:  # a stream that ended at its marker may still see what follows
            self._dirty = False
            self._fill()
            self._queue = []
            if self._deferred is not None:  # and what follows may break the protocol
                self._error = self._deferred
                raise self._deferred
            return []
        out = self._queue  # events next_event() has not taken, then what _fill() appends
        if self._qpos:
            out = self._queue = out[self._qpos :]
            self._qpos = 0
        self._dirty = False
        try:
            self._fill()
        except Exception as exc:  # a bug, not a protocol error: still poison
            self._error = exc
            raise
        self._queue = []
        if self._terminal is not None and out and out[-1] is self._terminal:
            self._terminated = True
        if self._deferred is not None:
            self._error = self._deferred
            if not out:
                raise self._deferred
        return out

    def close(self) -> list[E]:
        """End the body (``receive_data(b"")``) and return the remaining events, the last one
        terminal. Once the body has ended, returns an empty list.

        Raises:
            SvirProtocolError: the body broke the protocol. ``close()`` is the last call, so it
                never returns without the terminal event: the events decoded before the error
                that it had not returned yet are on the error's ``pending_events``.
        """
        if self._error is not None:
            raise self._error
        if self._eof:
            return []
        out = self.feed(b"")
        error = self.error  # read afresh: feed() may have set it
        if isinstance(error, SvirProtocolError):
            error.pending_events = tuple(out)
            raise error
        return out

    def events(self) -> Iterator[E]:
        """Iterate over the events available now; stops at `NEED_DATA` or after the terminal."""
        while not self._terminated:
            event = self.next_event()
            if event is NEED_DATA:
                return
            yield event

    def _lane_out(self) -> list[E]:
        """What a fast lane of ``feed`` decoded (the queue), delivered as `_received` delivers
        it: the lane closed after an error (raised now if no event came before it) or after
        the terminal event; a subclass may keep the lane open otherwise."""
        out = self._queue
        self._queue = []
        if self._deferred is not None:
            self._fast = None
            self._error = self._deferred
            if not out:
                raise self._deferred
        elif self._terminal is not None:
            self._fast = None
            self._terminated = bool(out) and out[-1] is self._terminal
        return out

    def _refill(self) -> bool:
        """Decode what has arrived into a fresh queue; ``False`` if nothing is ready.

        Raises the deferred error (poisoning this decoder) once the queue is drained; bytes
        that came after it, the body's end included, are not decoded (a body that broke
        the protocol ends there: they made a cut of it, whose terminal event took the
        error's place, when they came before its events were taken).
        """
        if self._dirty and self._deferred is None:
            self._dirty = False
            self._queue = []
            self._qpos = 0
            try:
                self._fill()
            except Exception as exc:  # a bug, not a protocol error: still poison
                self._error = exc
                raise
            if self._queue:
                return True
        if self._deferred is not None:
            self._error = self._deferred
            raise self._deferred
        return False

    def _receive(self, data: bytes) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fill(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
