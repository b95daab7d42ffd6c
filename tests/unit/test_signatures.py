"""Signatures of one vendor's reasoning carried in another dialect's field
(`svir_proto._signatures`): written, read back, and never read from what is not one."""

from __future__ import annotations

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
