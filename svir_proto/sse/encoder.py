"""Server-sent events from events to bytes, for servers and the gateway. No I/O."""

from __future__ import annotations

from typing import final

from .decoder import ServerSentEvent

__all__ = ["SSEEncoder"]


@final
class SSEEncoder:
    """Encode events as ``text/event-stream`` bytes, for servers and the gateway.

    Data containing line breaks (LF, CRLF or CR) goes out as several ``data`` lines, which a
    decoder joins with LF: the text comes back with LF line breaks. Every method returns
    ``bytes`` and keeps no state.
    """

    def event(
        self,
        data: str,
        *,
        event: str | None = None,
        id: str | None = None,
        retry: int | None = None,
    ) -> bytes:
        """One event, ending in its blank line.

        Raises:
            ValueError: ``event`` or ``id`` contains a line break, ``id`` contains NUL, or
                ``retry`` is negative: the stream could not carry them.
        """
        parts: list[str] = []
        if event is not None:
            _check_line("event", event)
            parts.append(f"event: {event}\n")
        if id is not None:
            _check_line("id", id)
            if "\0" in id:
                raise ValueError("id must not contain NUL: decoders ignore such an id")
            parts.append(f"id: {id}\n")
        if retry is not None:
            if retry < 0:
                raise ValueError(f"retry must be >= 0, not {retry}")
            parts.append(f"retry: {retry}\n")
        if "\n" in data or "\r" in data:
            for line in data.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
                parts.append(f"data: {line}\n")
        else:
            parts.append(f"data: {data}\n")
        parts.append("\n")
        return "".join(parts).encode("utf-8")

    def encode(self, item: ServerSentEvent) -> bytes:
        """A `ServerSentEvent` as bytes (its ``event`` written only when not ``message``)."""
        return self.event(
            item.data,
            event=None if item.event == "message" else item.event,
            id=item.id or None,
            retry=item.retry,
        )

    def comment(self, text: str = "") -> bytes:
        """A comment line and a blank line: a keep-alive that dispatches nothing."""
        _check_line("comment", text)
        return f": {text}\n\n".encode() if text else b":\n\n"


def _check_line(what: str, value: str) -> None:
    if "\n" in value or "\r" in value:
        raise ValueError(f"{what} must not contain a line break: {value!r}")
