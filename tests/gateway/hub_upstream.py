"""An upstream for `test_hostile_hub`: the hostile battery's upstream (`HostileUpstream`, whose
every scenario it still serves), plus answers to *translated* requests, in the upstream's own
dialect, chosen by the request id ``NAME[:ARG]~TAG`` (the gateway sends a translated request's
id upstream as ``X-Request-Id``):

- ``tool-index:N``: an OpenAI stream whose one tool call has the wire index ``N``, then
  ``finish_reason: tool_calls`` and ``[DONE]``.
- ``tool-args:ARGS``: an OpenAI stream whose one tool call (``get``, index 0) has the
  arguments ``ARGS`` (``broken``: ``{"q": `` then ``oops``, not JSON; ``array``: ``[1,2]``).
- ``anthropic-text:MIB``: an Anthropic Messages stream of ``MIB`` MiB of text (64 KiB a
  delta), then its end; ``responses-text:MIB`` and ``gemini-text:MIB`` the same in those
  dialects.
- ``anthropic-bad-json``: an Anthropic stream, a text delta, then an event that is not JSON.
- ``anthropic-forever``: an Anthropic stream's start, then a ``ping`` every 0.2 s, for ever.
- ``anthropic-partial:KIB``: an Anthropic stream's start, then ``KIB`` KiB of a text delta
  that never ends, until the gateway goes.
- ``chat-bad-json``: an OpenAI stream, a text delta, then an event that is not JSON.
- ``chat-split``: the recorded llama.cpp stream, one byte a write (TCP_NODELAY).
- ``chat-cut-pair``: an OpenAI stream whose text ``A\U0001f600B`` a JavaScript server cut in
  UTF-16 units: ``"A\\ud83d"``, then ``"\\ude00B"``.
- ``no-read``: the request's head is read, then nothing (not its body) until the gateway goes.

Requests on any path are taken (a Messages upstream is asked on ``/v1/messages``).
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any, Final

from tests.gateway.hostile_upstream import (
    OK_FIXTURE,
    SSE_HEAD,
    HostileUpstream,
    Seen,
    _Conn,
    _Gone,
    chunk,
    events_of,
)

DONE: Final = b"data: [DONE]\n\n"
MINE: Final = frozenset(
    {
        "tool-index", "tool-args", "anthropic-text", "responses-text", "gemini-text",
        "anthropic-bad-json", "anthropic-forever", "anthropic-partial", "chat-bad-json",
        "chat-split", "chat-cut-pair", "no-read",
    }
)  # fmt: skip


def sse(doc: Any, event: str | None = None) -> bytes:
    head = b"" if event is None else b"event: %s\n" % event.encode()
    return head + b"data: " + json.dumps(doc).encode() + b"\n\n"


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse(
        {
            "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )  # fmt: skip


def tool_call(index: int, args: str, *, call_id: str = "call_1", name: str = "get") -> bytes:
    return chat_chunk(
        {
            "tool_calls": [
                {"index": index, "id": call_id, "type": "function",
                 "function": {"name": name, "arguments": args}},
            ]
        }
    )  # fmt: skip


def anthropic_start() -> list[bytes]:
    return [
        sse(
            {"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "content": [],
                "model": "claude", "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}}},
            "message_start",
        ),
        sse(
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        ),
    ]  # fmt: skip


def anthropic_delta(text: str) -> bytes:
    return sse(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        "content_block_delta",
    )


def anthropic_end() -> list[bytes]:
    return [
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 5}},
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]  # fmt: skip


def responses_events(mib: int) -> tuple[list[bytes], bytes, list[bytes]]:
    item = {"type": "message", "id": "i", "role": "assistant", "status": "in_progress",
            "content": []}  # fmt: skip
    resp = {"id": "r", "object": "response", "status": "in_progress", "model": "m", "output": []}
    start = [
        sse({"type": "response.created", "response": resp}, "response.created"),
        sse({"type": "response.output_item.added", "output_index": 0, "item": item},
            "response.output_item.added"),
        sse({"type": "response.content_part.added", "item_id": "i", "output_index": 0,
             "content_index": 0, "part": {"type": "output_text", "text": ""}},
            "response.content_part.added"),
    ]  # fmt: skip
    delta = sse(
        {"type": "response.output_text.delta", "item_id": "i", "output_index": 0,
         "content_index": 0, "delta": "t" * 65536},
        "response.output_text.delta",
    )  # fmt: skip
    done = {**resp, "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1,
                                                     "total_tokens": 2}}  # fmt: skip
    end = [sse({"type": "response.completed", "response": done}, "response.completed")]
    return start, delta, end


def gemini_event(text: str, finish: str | None = None) -> bytes:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return sse({"candidates": [cand]})


class _HubConn(_Conn):
    def serve(self, seen: Seen) -> bool:
        name, *args = seen.rid.split("~", 1)[0].split(":")
        if name not in MINE:
            return super().serve(seen)
        if name == "no-read":
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            until = time.monotonic() + 60  # not a byte more is read: the gateway's writes
            while time.monotonic() < until and not self.server._closed:  # fill the socket
                time.sleep(0.1)
            raise _Gone
        seen.body = self.read_body(seen)
        seen.body_size = len(seen.body)
        return bool(getattr(self, "_" + name.replace("-", "_"))(args))

    def _stream_of(self, events: list[bytes]) -> bool:
        self.send(SSE_HEAD + b"".join(chunk(e) for e in events) + b"0\r\n\r\n")
        return True

    def _tool_index(self, args: list[str]) -> bool:
        index = int(args[0])
        return self._stream_of(
            [chat_chunk({"role": "assistant", "content": ""}), tool_call(index, "{}"),
             chat_chunk({}, "tool_calls"), DONE]
        )  # fmt: skip

    def _tool_args(self, args: list[str]) -> bool:
        pieces = {"broken": ['{"q": ', "oops"], "array": ["[1,2]"]}[args[0]]
        calls = [tool_call(0, pieces[0])] + [
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
            for p in pieces[1:]
        ]
        return self._stream_of(
            [chat_chunk({"role": "assistant", "content": ""}), *calls,
             chat_chunk({}, "tool_calls"), DONE]
        )  # fmt: skip

    def _chat_cut_pair(self, args: list[str]) -> bool:
        return self._stream_of(
            [chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"content": "A\ud83d"}),
             chat_chunk({"content": "\ude00B"}), chat_chunk({}, "stop"), DONE]
        )  # fmt: skip

    def _anthropic_text(self, args: list[str]) -> bool:
        self.send(SSE_HEAD + b"".join(chunk(e) for e in anthropic_start()))
        one = chunk(anthropic_delta("t" * 65536))
        for _ in range(int(args[0]) * 16):
            self.send(one)
        return self._stream_body_end(anthropic_end())

    def _responses_text(self, args: list[str]) -> bool:
        start, delta, end = responses_events(int(args[0]))
        self.send(SSE_HEAD + b"".join(chunk(e) for e in start))
        one = chunk(delta)
        for _ in range(int(args[0]) * 16):
            self.send(one)
        return self._stream_body_end(end)

    def _gemini_text(self, args: list[str]) -> bool:
        self.send(SSE_HEAD)
        one = chunk(gemini_event("t" * 65536))
        for _ in range(int(args[0]) * 16):
            self.send(one)
        return self._stream_body_end([gemini_event("", "STOP")])

    def _stream_body_end(self, events: list[bytes]) -> bool:
        self.send(b"".join(chunk(e) for e in events) + b"0\r\n\r\n")
        return True

    def _anthropic_bad_json(self, args: list[str]) -> bool:
        return self._stream_of(
            [*anthropic_start(), anthropic_delta("x"),
             b"event: content_block_delta\ndata: {not json\n\n", *anthropic_end()]
        )  # fmt: skip

    def _anthropic_forever(self, args: list[str]) -> bool:
        self.send(SSE_HEAD + b"".join(chunk(e) for e in anthropic_start()))
        while True:
            self.send(chunk(sse({"type": "ping"}, "ping")))
            self.wait_gone(0.2)

    def _anthropic_partial(self, args: list[str]) -> bool:
        delta = anthropic_delta("a")
        self.send(SSE_HEAD + b"".join(chunk(e) for e in anthropic_start()))
        self.send(chunk(delta[: delta.index(b'"a"') + 2]))  # its text's opening quote, and "a"
        for _ in range(int(args[0]) // 64):
            self.send(chunk(b"a" * 65536))
        self.wait_gone()
        return False

    def _chat_bad_json(self, args: list[str]) -> bool:
        return self._stream_of(
            [chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"content": "x"}),
             b"data: {not json\n\n", chat_chunk({}, "stop"), DONE]
        )  # fmt: skip

    def _chat_split(self, args: list[str]) -> bool:
        data = SSE_HEAD + b"".join(chunk(e) for e in events_of(*OK_FIXTURE)) + b"0\r\n\r\n"
        for i in range(len(data)):
            self.send(data[i : i + 1])
            if i % 64 == 0:
                time.sleep(0.0005)
        return True


class HubUpstream(HostileUpstream):
    """`HostileUpstream` with the scenarios above; requests on any path are taken."""

    connection = _HubConn

    def anomaly(self, what: str) -> None:
        if what.startswith("a request the gateway must not make") and "POST /v1" in what:
            return  # a translated request goes to its dialect's path
        super().anomaly(what)
