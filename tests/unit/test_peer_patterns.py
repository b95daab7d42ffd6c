"""Patterns made of, or run over, a peer's bytes stay bounded (`svir_proto._jsonbytes` Rules 4
and 5): attack 37 sent a usage with a 7 MB key, whose bytes every decoder's template compiled
into patterns (22 s of CPU on the event loop, hundreds of MB kept in ``re``'s cache), and a
chunk of 3.5 million escaped newlines, which a pattern repeating a group per escape matched
with a frame each (610 MB)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from svir_proto._jsonbytes import MAX_ESCAPES, MAX_LEARNED, few_escapes
from svir_proto._template import Template
from svir_proto.gemini._envelope import Envelope as GeminiEnvelope
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai._envelope import Envelope, learnable
from svir_proto.openai._runs import ChatStreamRuns
from svir_proto.responses.stream import DELTA_KEY, NUMBER_KEY

LONG = "k" * (MAX_LEARNED + 1)
USAGE = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


def chat(delta: dict[str, Any], usage: dict[str, Any] | None = None) -> bytes:
    doc: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }
    if usage is not None:
        doc["usage"] = usage
    return json.dumps(doc, separators=(",", ":")).encode()


def test_few_escapes() -> None:
    assert few_escapes(b"\\n" * MAX_ESCAPES)  # short: at most as many escapes as half of it
    assert few_escapes(b"a" * 10 * MAX_ESCAPES)
    many = b"a" * MAX_ESCAPES + b"\\n" * (MAX_ESCAPES + 1)
    assert not few_escapes(many)
    assert few_escapes(many, 0, MAX_ESCAPES + 8)  # a slice of it is short
    assert not few_escapes(many, 1)


def test_an_openai_envelope_is_not_learned_from_a_long_one() -> None:
    for usage in (USAGE, {**USAGE, LONG: 2}):
        payload = chat({"content": "a"}, usage)
        choice = learnable(json.loads(payload))
        assert choice is not None
        learned = Envelope.learn(payload, choice, usage)
        assert (learned is None) == (usage is not USAGE)
    long_head = chat({"content": "a"}).replace(b'"m"', b'"%s"' % LONG.encode())
    choice = learnable(json.loads(long_head))
    assert choice is not None
    assert Envelope.learn(long_head, choice) is None
    assert Envelope.learn(chat({"content": "a" * 10 * MAX_LEARNED}), choice) is not None  # a hole


def test_a_gemini_envelope_is_not_learned_from_a_long_one() -> None:
    def chunk(version: str) -> bytes:
        return json.dumps(
            {
                "candidates": [{"content": {"parts": [{"text": "a"}], "role": "model"}}],
                "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 4},
                "modelVersion": version,
            }
        ).encode()

    assert GeminiEnvelope.learn(chunk("gemini-2.5-flash"), "text") is not None
    assert GeminiEnvelope.learn(chunk(LONG), "text") is None


def test_a_delta_template_is_not_learned_from_a_long_one() -> None:
    event = b'{"type":"response.output_text.delta","item_id":"%s","delta":"a"}'
    assert Template.learn(event % b"msg_1", None, DELTA_KEY, NUMBER_KEY) is not None
    assert Template.learn(event % LONG.encode(), None, DELTA_KEY, NUMBER_KEY) is None


def test_llm_stream_counts_are_not_learned_from_a_long_usage() -> None:
    usage = {"seq": 4, "input_tokens": 1, "output_tokens": 2}
    long = {**usage, LONG: 1}
    d = LLMStreamDecoder()
    d._learn_counts(json.dumps(long).encode(), long)
    assert d._counts is None
    d._learn_counts(json.dumps(usage).encode(), usage)
    assert d._counts is not None


def peak(feed: Callable[[], object]) -> int:
    """The most bytes Python allocated at once while ``feed`` ran."""
    tracemalloc.start()
    try:
        feed()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("decoder", "usage"), [(ChatStreamRuns, None), (ChatStreamDecoder, USAGE)])
def test_a_chunk_of_escapes_is_read_without_a_frame_each(
    decoder: Callable[..., ChatStreamDecoder], usage: dict[str, Any] | None
) -> None:
    """A run (`ChatStreamRuns`) and a usage envelope's patterns (vLLM's usage on every chunk)
    matched 200,000 escaped newlines with a frame each, some 26 MB; the chunk goes the general
    way, to the same text."""
    d = decoder(keep_text=False)
    opening = b"".join(
        b"data: " + chat(delta, usage) + b"\n\n"
        for delta in ({"role": "assistant", "content": ""}, {"content": "a"}, {"content": "b"})
    )
    d.feed(opening)
    escapes = b"data: " + chat({"content": "\n" * 200_000}, usage) + b"\n\n"
    assert escapes.count(b"\\n") > 2 * MAX_ESCAPES
    events: list[Any] = []
    used = peak(lambda: events.extend(d.feed(escapes + escapes)))
    assert used < 8_000_000, used
    text = "".join(
        e.text if hasattr(e, "text") else "".join(x.text for x in e.deltas())
        for e in events
        if type(e).__name__ in ("TextDelta", "TextRun")
    )
    assert text == "\n" * 400_000


@pytest.mark.parametrize("key", ["content", "reasoning_content"])
def test_a_long_plain_delta_beside_a_usage_is_matched_without_a_frame_a_byte(key: str) -> None:
    """The pattern of a string's body repeated a group for each byte (``(?:a|\\\\.)*``): 400,000
    plain bytes beside a usage (vLLM's on every chunk) took some 50 MB; it repeats one per
    escape now, and reads the same text."""
    d = ChatStreamDecoder(keep_text=False)
    opening = b"".join(
        b"data: " + chat(delta, USAGE) + b"\n\n"
        for delta in ({"role": "assistant", "content": ""}, {key: "a"}, {key: "b"})
    )
    d.feed(opening)
    long = b"data: " + chat({key: "x" * 400_000}, USAGE) + b"\n\n"
    events: list[Any] = []
    used = peak(lambda: events.extend(d.feed(long)))
    assert used < 8_000_000, used
    assert "".join(e.text for e in events if hasattr(e, "text")) == "x" * 400_000


def test_the_checks_of_a_requests_bytes_keep_no_frame_per_piece() -> None:
    """Attack 37: a pattern that repeats a group keeps a frame for each repetition. A 30 MB
    base64 image to a Gemini upstream took 990 MB (groups of four), a data URL of 7.5 million
    parameters 1.8 GB, a payload whose depth is checked 570 MB for 5 million escapes, and a
    lone surrogate after 3.9 million backslashes 300 MB. Each is read the same way now, at
    about its size."""
    from svir_proto._json import _lone_at, too_deep
    from svir_proto.gemini.request import is_base64
    from svir_proto.responses._checks import MAX_DATA_PARAMETERS, data_url

    image = "QUJD" * 250_000
    assert peak(lambda: is_base64(image)) < 4_000_000  # (about its size: 30 MB before)
    assert is_base64(image + "QQ==")
    assert not is_base64(image + "Q")
    many = "data:image/png" + ";a=b" * 100_000 + ";base64,QUJD"
    assert peak(lambda: data_url(many)) < 4_000_000
    assert data_url(many) is None  # past MAX_DATA_PARAMETERS
    some = "data:image/png" + ";a=b" * MAX_DATA_PARAMETERS + ";base64,QUJD"
    assert data_url(some) == ("image/png", "QUJD")
    deep = b"[" * 600 + b'"' + b"\\n" * 500_000 + b'"' + b"]" * 600
    assert peak(lambda: too_deep(deep)) < 8_000_000
    assert too_deep(deep)
    lone = "\\" * 1_000_001 + "ud800"  # an odd run: its last backslash begins the escape
    assert peak(lambda: _lone_at(lone)) < 4_000_000
    assert _lone_at(lone) == 1_000_000
    assert _lone_at("\\" * 1_000_000 + "ud800") == 0  # an even run: no escape at all


def test_the_brackets_outside_strings_are_the_same_either_way() -> None:
    """Past `_FEW_ESCAPES`, or for JSON that parsed (attack 41 F3: a pattern over many tiny
    strings cost three times the passes), `too_deep` reads the strings without a pattern: for
    JSON (where a backslash stands in a string only), the brackets outside them are the
    same."""
    import random

    from svir_proto import _json

    rng = random.Random(7)
    pieces = ["[", "]", "{", "}", "\\", '"', "a", "\\\\", '\\"', "[\\"]
    for _ in range(50):
        value = [["".join(rng.choices(pieces, k=40)) for _ in range(3)] for _ in range(120)]
        raw = json.dumps(value).encode()
        assert raw.count(b"\\") > _json._FEW_ESCAPES
        reference = _json._STRING.sub(b"", raw).translate(None, _json._NOT_BRACKETS)
        assert _json._outside_strings(raw, False) == reference
        few = json.dumps(value[:10]).encode()
        assert few.count(b"\\") <= _json._FEW_ESCAPES
        by_pattern = _json._outside_strings(few, False)
        assert by_pattern == _json._outside_strings(few, True)
        assert by_pattern == _json._STRING.sub(b"", few).translate(None, _json._NOT_BRACKETS)


def test_many_small_chunks_whose_escapes_pass_the_bound_together() -> None:
    """Review 38: a read of 80 chunks of code, each under the bound, their escapes over it
    together: the joined check gave up, every chunk passed alone, and finding the first that
    did not raised StopIteration out of the decoder. They are one run, read as the decoder
    without runs reads them."""
    opening = b"".join(
        b"data: " + chat(delta) + b"\n\n"
        for delta in ({"role": "assistant", "content": ""}, {"content": "a"}, {"content": "b"})
    )
    code = [b"data: " + chat({"content": f'x = "{i}"\n\ty\\\n' * 20}) + b"\n\n" for i in range(80)]
    read = b"".join(code)
    assert read.count(b"\\") > MAX_ESCAPES
    texts = []
    for decoder in (ChatStreamRuns(keep_text=False), ChatStreamDecoder(keep_text=False)):
        decoder.feed(opening)
        events = decoder.feed(read)
        texts.append(
            "".join(
                e.text if hasattr(e, "text") else "".join(x.text for x in e.deltas())
                for e in events
                if type(e).__name__ in ("TextDelta", "TextRun")
            )
        )
    assert texts[0] == texts[1]
    assert texts[0].count("\t") == 80 * 20


def test_a_plain_delta_of_many_escapes_is_read_the_general_way() -> None:
    from svir_proto.openai._envelope import plain_delta

    few = b'{"reasoning_content":"' + b"\\n" * 10 + b'"}'
    assert plain_delta(few, 0, len(few)) == ("reasoning_content", "\n" * 10)
    many = b'{"reasoning_content":"' + b"\\n" * (MAX_ESCAPES + 1) + b'"}'
    assert plain_delta(many, 0, len(many)) is None  # (`_jsonbytes` Rule 5)


def test_a_data_url_parameter_needs_its_value() -> None:
    from svir_proto.responses._checks import data_url

    assert data_url("data:image/png;charset=x;base64,QUJD") == ("image/png", "QUJD")
    assert data_url("data:image/png;charset;base64,QUJD") is None
    assert data_url("data:image/png;=x;base64,QUJD") is None
