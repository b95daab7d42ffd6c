"""A stream's response id and model name, in every dialect: at most `MAX_NAME` characters.

A translating relay repeats them in every event it writes (a Chat chunk's ``id`` and
``model``, a Responses delta's item id): one long name, sent once, multiplied every event
after it (attack 43 F1: 0.43 MB of upstream answer became 400 MB for a Chat client).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from svir_proto import PeerProtocolError, dialects
from svir_proto._dialect import MAX_NAME
from svir_proto.events import StreamStarted


def _sse(event: str | None, doc: object) -> bytes:
    head = b"" if event is None else f"event: {event}\n".encode()
    return head + b"data: " + json.dumps(doc).encode() + b"\n\n"


STARTS: dict[str, Callable[[str, str], bytes]] = {
    "chat": lambda rid, model: _sse(None, {
        "id": rid, "object": "chat.completion.chunk", "model": model,
        "choices": [{"index": 0, "delta": {"content": "a"}}]}),
    "messages": lambda rid, model: _sse("message_start", {
        "type": "message_start", "message": {
            "id": rid, "type": "message", "role": "assistant", "content": [], "model": model,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    "responses": lambda rid, model: _sse("response.created", {
        "type": "response.created", "sequence_number": 0, "response": {
            "id": rid, "object": "response", "model": model, "status": "in_progress",
            "output": []}}),
    "gemini": lambda rid, model: _sse(None, {
        "candidates": [{"content": {"parts": [{"text": "a"}], "role": "model"}}],
        "responseId": rid, "modelVersion": model}),
    "llm-stream": lambda rid, model: _sse("stream.start", {
        "v": "1.0", "seq": 0, "type": "stream.start", "model": model, "created": 1,
        "request_id": rid}),
}  # fmt: skip
WHAT = {
    "chat": ("the chunk id", "the model name"),
    "messages": ("the message id", "the model name"),
    "responses": ("the response id", "the model name"),
    "gemini": ("the responseId", "the modelVersion"),
    "llm-stream": ("the request id", "the model name"),
}


@pytest.mark.parametrize("name", list(STARTS))
def test_a_name_of_max_name_characters_is_the_streams(name: str) -> None:
    decoder = dialects.dialect(name).decoder()
    started = decoder.feed(STARTS[name]("r" * MAX_NAME, "m" * MAX_NAME))[0]
    assert isinstance(started, StreamStarted)
    assert started.model == "m" * MAX_NAME
    rid = started.request_id if name == "llm-stream" else started.response_id
    assert rid == "r" * MAX_NAME


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("name", list(STARTS))
def test_a_longer_name_fails_the_stream_saying_which(name: str, which: int) -> None:
    names = ["r", "m"]
    names[which] *= MAX_NAME + 1
    body = STARTS[name](*names)
    decoder = dialects.dialect(name).decoder()
    with pytest.raises(PeerProtocolError) as info:
        decoder.feed(body + b"\n\n")  # (a chunk that ends where its event ends: read now)
    said = f"{WHAT[name][which]} is {MAX_NAME + 1} characters long, more than {MAX_NAME}"
    assert said in str(info.value)
    assert (info.value.limit, info.value.limit_value) == ("max_name", MAX_NAME)
    assert info.value.offset == body.index(b"data: ") + 6
