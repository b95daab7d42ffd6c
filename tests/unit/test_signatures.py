"""Signatures of one vendor's reasoning carried in another dialect's field
(`svir_proto._signatures`): written, read back, and never read from what is not one."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto.events import REASONING_CARRIERS, ReasoningBlock, ReasoningSignature
from svir_proto.hub import carried_signature, uncarried

CARRIERS = sorted(REASONING_CARRIERS)


ID = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1)
"""An item's id: any text a peer can send (JSON text holds no lone surrogate: Rule 4)."""


@given(st.text(min_size=1), st.sampled_from(CARRIERS), st.none() | ID)
def test_every_signature_comes_back_as_it_went(
    signature: str, carrier: str, item_id: str | None
) -> None:
    carried = carried_signature(signature, carrier, item_id)
    assert uncarried(carried, "why") == ReasoningBlock(
        text="why",
        signature=signature,
        carrier=carrier,
        item_id=item_id,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    "signature",
    [
        "Ej0KOwHR7Yr0",  # a vendor's own
        "",
        "svir1.",
        "svir1.thought",
        "svir1.thought.ZmMtYTE",  # no signature after the item
        "svir1.thought.ZmMtYTE.",
        "svir1.nobody.ZmMtYTE.sig",  # no such carrier
        "svir1.thought.Zm!tYTE.sig",  # not URL-safe base64
        "svir1.thought._w.sig",  # base64 of bytes that are not UTF-8
        "svir2.thought.ZmMtYTE.sig",
    ],
)
def test_what_is_not_a_carried_signature_is_the_dialects_own(signature: str) -> None:
    assert uncarried(signature) is None


def test_a_decoder_reads_a_carried_signature_as_its_vendors() -> None:
    """A svir client of a gateway that carried Gemini's signature to it (an Anthropic stream)
    reads the reasoning block Gemini signed, as the gateway read it from Gemini."""
    from svir_proto.anthropic import MessagesStreamDecoder, MessagesStreamEncoder
    from svir_proto.events import ReasoningDelta, StreamEnded, StreamStarted

    sign = ReasoningSignature(signature="gem", carrier="thought", item_id="fc-1")
    events = [
        StreamStarted(response_id="r", model="m"),
        ReasoningDelta(text="hm", carrier="thought"),
        sign,
        StreamEnded(complete=True, done=True),
    ]
    encoder = MessagesStreamEncoder()
    body = b"".join(encoder.encode(e) for e in events)
    assert carried_signature("gem", "thought", "fc-1").encode() in body
    decoder = MessagesStreamDecoder()
    got = decoder.feed(body) + decoder.close()
    assert sign in got
    (block,) = decoder.result.reasoning_blocks
    assert (block.text, block.signature, block.carrier, block.item_id) == (
        "hm",
        "gem",
        "thought",
        "fc-1",
    )
    own = ReasoningSignature(signature="ant", carrier="thinking")
    encoder = MessagesStreamEncoder()
    body = b"".join(encoder.encode(e) for e in [events[0], own, events[-1]])
    assert b'"signature":"ant"' in body  # Anthropic's own goes as it is


def test_a_signature_that_only_looks_carried_is_the_dialects_own() -> None:
    """A peer's signature that begins as a carried one but is not one (`uncarried` reads
    nothing from it) is kept as it came, of the dialect's own carrier."""
    from svir_proto.anthropic import MessagesStreamDecoder, MessagesStreamEncoder
    from svir_proto.events import StreamEnded, StreamStarted

    odd = ReasoningSignature(signature="svir1.nobody.x.sig", carrier="thinking")
    events = [StreamStarted(response_id="r", model="m"), odd, StreamEnded(complete=True, done=True)]
    encoder = MessagesStreamEncoder()
    body = b"".join(encoder.encode(e) for e in events)
    decoder = MessagesStreamDecoder()
    assert odd in decoder.feed(body) + decoder.close()
    (block,) = decoder.result.reasoning_blocks
    assert (block.signature, block.carrier) == ("svir1.nobody.x.sig", "thinking")


@given(st.text(min_size=1), st.none() | ID)
def test_a_redacted_blocks_data_comes_back_redacted(signature: str, item_id: str | None) -> None:
    carried = carried_signature(signature, "thinking", item_id, redacted=True)
    assert carried != carried_signature(signature, "thinking", item_id)
    assert uncarried(carried, "shown") == ReasoningBlock(
        text="",  # a redacted block has no text
        signature=signature,
        carrier="thinking",
        redacted=True,
        item_id=item_id,
    )


def test_a_redacted_block_goes_back_to_anthropic_as_one_through_a_responses_client() -> None:
    """Audit 36: an Anthropic answer with a signed and a redacted thinking block, written for a
    Responses client, whose output items come back in its next turn: the redacted block goes to
    Anthropic as a ``redacted_thinking`` block, never as a thinking block signed by its data
    (which Anthropic refuses), in order beside the signed one; and a svir client of such a
    stream reads the redacted block as its vendor's."""
    from svir_proto.dialects import translate_request
    from svir_proto.events import ReasoningDelta, StreamEnded, StreamStarted, ToolCall
    from svir_proto.responses import ResponsesRequest, ResponsesStreamDecoder
    from svir_proto.responses.encoder import ResponsesStreamEncoder

    events = [
        StreamStarted(response_id="msg_1", model="claude"),
        ReasoningDelta(text="plan", carrier="thinking"),
        ReasoningSignature(signature="SIG-A", carrier="thinking"),
        ReasoningSignature(signature="DATA-1", carrier="thinking", redacted=True),
        ToolCall(index=0, id="toolu_1", name="get_weather", arguments='{"city":"Vienna"}'),
        StreamEnded(complete=True, done=True),
    ]
    encoder = ResponsesStreamEncoder()
    body = b"".join(encoder.encode(e) for e in events)
    decoder = ResponsesStreamDecoder()
    decoder.feed(body)
    decoder.close()
    assert [(b.signature, b.redacted, b.text) for b in decoder.result.reasoning_blocks] == [
        ("SIG-A", False, "plan"),
        ("DATA-1", True, ""),
    ]
    output = [
        json.loads(line[6:])["item"]
        for line in body.split(b"\n")
        if line.startswith(b"data: ") and b'"response.output_item.done"' in line
    ]
    turn = {
        "model": "claude",
        "stream": True,
        "store": False,
        "input": [{"role": "user", "content": "weather?"}, *output],
    }
    sent = translate_request(ResponsesRequest.parse(json.dumps(turn)), "messages")
    (assistant,) = [m for m in sent.to_document()["messages"] if m["role"] == "assistant"]
    assert assistant["content"][:2] == [
        {"type": "thinking", "thinking": "plan", "signature": "SIG-A"},
        {"type": "redacted_thinking", "data": "DATA-1"},
    ]


def test_a_redacted_block_of_another_carrier_comes_back_as_its_own() -> None:
    """A ``thinking_blocks`` entry (`thinking_block`) of a redacted block another vendor's
    carrier holds (LLM-Stream carries the flag for any): its data carried, read back whole."""
    from svir_proto._signatures import from_thinking_block, thinking_block

    block = ReasoningBlock(
        text="", signature="DATA", carrier="summary", redacted=True, item_id="rs_1"
    )
    entry = thinking_block(block)
    assert entry["type"] == "redacted_thinking"
    assert from_thinking_block(entry["type"], "", entry["data"]) == block
    own = ReasoningBlock(text="", signature="DATA", carrier="thinking", redacted=True)
    assert thinking_block(own) == {"type": "redacted_thinking", "data": "DATA"}
    assert from_thinking_block("redacted_thinking", "", "DATA") == own


@given(st.text(min_size=1), st.sampled_from(CARRIERS), st.none() | ID, st.booleans())
def test_a_signature_carried_in_base64_comes_back_in_either_alphabet(
    signature: str, carrier: str, item_id: str | None, redacted: bool
) -> None:
    """Gemini's ``thoughtSignature`` is base64 bytes: google-genai checks it, and sends it
    back in the URL-safe alphabet, padded or not (attack 62 F1, F2)."""
    import base64

    from svir_proto._signatures import carried_in_base64, unwrapped

    wrapped = carried_in_base64(signature, carrier, item_id, redacted=redacted)
    assert base64.b64decode(wrapped, validate=True)
    plain = carried_signature(signature, carrier, item_id, redacted=redacted)
    urlsafe = base64.urlsafe_b64encode(base64.b64decode(wrapped)).decode()
    for sent_back in (wrapped, urlsafe, urlsafe.rstrip("=")):
        assert unwrapped(sent_back) == plain


@pytest.mark.parametrize(
    "signature",
    [
        "c3ZpcjEu",  # the prefix alone: base64 of "svir1." and nothing after it
        "c3ZpcjEu!!!!",  # not base64 past it
        "c3ZpcjEu/w==",  # base64, but not UTF-8 past the prefix
        "c3ZpcjEuYQ",  # unpadded and fine: read
        "EqQBCkYIBx==",  # a vendor's own
    ],
)
def test_what_only_looks_carried_in_base64_is_left_as_it_is(signature: str) -> None:
    from svir_proto._signatures import unwrapped

    got = unwrapped(signature)
    assert got == ("svir1." if signature == "c3ZpcjEu" else "svir1.a" if "YQ" in signature
                   else signature)  # fmt: skip
