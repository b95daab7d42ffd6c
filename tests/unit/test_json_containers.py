"""`_json` Rule 6: a payload holds at most `MAX_VALUES` values, whatever parser is installed,
in every dialect's decoder (attack 80 F1: 8 MiB of ``[],`` in one upstream event took 1.4 to
2.7 s of a gateway's event loop to parse, every other stream stalled; attack 81 F1: 8 MiB of
``1,`` and one lone surrogate, 4 s on the standard library's path)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from svir_proto import PeerProtocolError, _json, dialects
from svir_proto._json import LONG, MAX_VALUES, JSONPolicyError, canonical, too_many
from svir_proto.events import StreamStarted
from svir_proto.gemini import GeminiStreamDecoder

BACKENDS = ["orjson", "json"] if _json.orjson else ["json"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    before = _json.BACKEND
    _json.use(request.param)
    try:
        yield request.param
    finally:
        _json.use(before)


def many(n: int, member: str = "x") -> str:
    """An object whose member holds ``n - 2`` numbers: ``n`` values as Rule 6 counts them (its
    brackets, its colon, and the commas between the numbers)."""
    return '{"' + member + '":[' + ",".join(["1"] * (n - 2)) + "]}"


def test_rule_6_counts_values_outside_strings() -> None:
    assert not too_many("[]" * 10)  # (short: not counted)
    assert not too_many(("[" + "1," * LONG)[:LONG])  # (only a longer payload is counted)
    assert not too_many(many(MAX_VALUES))
    assert too_many(many(MAX_VALUES + 1))
    assert too_many(many(MAX_VALUES + 1).encode())
    assert too_many(many(MAX_VALUES // 2 + 8, "a\ud800b") + "," + many(MAX_VALUES // 2)[1:])
    code = json.dumps({"text": "[{,:" * (LONG // 4)})  # code: what separates no value
    assert sum(map(code.count, "[{,:")) > MAX_VALUES
    assert not too_many(code)
    assert json.loads(code) == canonical(code)


def test_rule_6_is_the_reference_parsers_error_before_any_other(backend: str) -> None:
    with pytest.raises(JSONPolicyError, match=f"more than {MAX_VALUES} values"):
        canonical(many(MAX_VALUES + 1) + " trailing")  # (and not JSON either)
    assert len(canonical(many(MAX_VALUES))["x"]) == MAX_VALUES - 2  # type: ignore[index]


def event_of(dialect: str, extra: str) -> bytes:
    """A first event of ``dialect`` that carries ``extra`` as one more member."""
    first = {
        "chat": '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        '"choices":[{"index":0,"delta":{"role":"assistant","content":"a"}}],',
        "messages": '{"type":"message_start","message":{"id":"m","type":"message",'
        '"role":"assistant","model":"m","content":[],"usage":{"input_tokens":1}},',
        "responses": '{"type":"response.created","sequence_number":0,"response":{"id":"r",'
        '"object":"response","created_at":1,"status":"in_progress","model":"m","output":[]},',
        "gemini": '{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"},"index":0}],',
        "llm-stream": '{"v":"1.0","seq":0,"type":"stream.start","model":"m","created":1,',
    }[dialect]
    return first.encode() + extra[1:].encode()


@pytest.mark.parametrize("dialect", ["chat", "messages", "responses", "gemini", "llm-stream"])
def test_every_decoder_refuses_an_event_of_too_many_containers(backend: str, dialect: str) -> None:
    """The events before the refused one come first, then the error, which says why and
    where; an event as large whose containers are in bounds is read."""
    spec = dialects.dialect(dialect)
    options = {"max_result_size": 1 << 26, "max_tool_calls": 128, "errors": "strict"}
    head = b"event: stream.start\n" if dialect == "llm-stream" else b""
    ok = head + b"data: " + event_of(dialect, many(MAX_VALUES // 2)) + b"\n\n"
    decoder = spec.new_decoder(None, max_event_size=1 << 23, **options)  # type: ignore[arg-type]
    assert any(isinstance(e, StreamStarted) for e in decoder.feed(ok))
    bad = head + b"data: " + event_of(dialect, many(MAX_VALUES + 1)) + b"\n\n"
    decoder = spec.new_decoder(None, max_event_size=1 << 23, **options)  # type: ignore[arg-type]
    assert decoder.feed(bad[: len(bad) // 2]) == []
    with pytest.raises(PeerProtocolError, match=f"more than {MAX_VALUES} values") as caught:
        decoder.feed(bad[len(bad) // 2 :])
    assert caught.value.offset == len(head) + 6


@pytest.mark.parametrize("alt_sse", [True, False])
def test_a_gemini_array_element_of_too_many_containers_is_refused(
    backend: str, alt_sse: bool
) -> None:
    """Gemini's hot loop parses every chunk itself (and, in an array, tries one that may not
    be whole yet): it is bounded too."""
    chunk = event_of("gemini", many(MAX_VALUES + 1))
    body = b"data: " + chunk + b"\r\n\r\n" if alt_sse else b"[" + chunk + b"]"
    with pytest.raises(PeerProtocolError, match=f"more than {MAX_VALUES} values"):
        read_all(GeminiStreamDecoder(), body)


def read_all(decoder: GeminiStreamDecoder, body: bytes) -> list[object]:
    return [*decoder.feed(body), *decoder.close()]


def test_a_request_may_hold_more_values_than_an_event() -> None:
    """A request is parsed off the loop when it is long (the gateway's worker threads): an
    agent's thousands of messages hold hundreds of thousands of values; past
    `MAX_REQUEST_VALUES` it is refused as an event is past `MAX_VALUES`."""
    from svir_proto._json import MAX_REQUEST_VALUES
    from svir_proto.anthropic import MessagesRequest
    from svir_proto.llmstream.request import RequestError

    one = {"role": "user", "content": [{"type": "text", "text": "x"}]}
    body = {"model": "m", "max_tokens": 8, "messages": [one] * 20_000}  # 200,000 values
    text = json.dumps(body)
    assert too_many(text)
    assert not too_many(text, limit=MAX_REQUEST_VALUES)
    assert len(MessagesRequest.parse(text.encode()).messages) == 20_000
    body["messages"] = [one] * 110_000  # 1.1 million
    with pytest.raises(RequestError, match=f"more than {MAX_REQUEST_VALUES} values"):
        MessagesRequest.parse(json.dumps(body).encode())
