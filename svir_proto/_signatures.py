"""Signatures of one vendor's reasoning carried in another dialect's signature field: how they
are written and read back (`svir_proto.hub` says why). A leaf module: the decoders' common
base (`svir_proto._dialect`) reads them back, and the hub and the encoders write them. No I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

from .events import REASONING_CARRIERS, ReasoningBlock

__all__ = [
    "CARRIED",
    "CARRIED_BASE64",
    "carried_in_base64",
    "carried_signature",
    "from_thinking_block",
    "thinking_block",
    "thinking_signature",
    "uncarried",
    "unwrapped",
]

CARRIED: Final = "svir1."
"""How a `carried_signature` begins: no vendor's signature does (theirs are base64)."""
REDACTED: Final = "+redacted"
"""After the carrier of a redacted block's data (Anthropic's ``redacted_thinking``), which goes
back as such a block, never as a signature (audit 36: a signature of redacted data is refused)."""
_TAG: Final = re.compile(r"[A-Za-z0-9_-]*")
CARRIED_BASE64: Final = base64.b64encode(CARRIED.encode()).decode()
"""How `carried_in_base64` begins (``c3ZpcjEu``: `CARRIED`'s six bytes are eight characters,
the same in both alphabets)."""


def carried_signature(
    signature: str, carrier: str, item_id: str | None, *, redacted: bool = False
) -> str:
    """A signature of reasoning ``carrier`` carries (signing ``item_id``, if any) as a dialect
    whose own reasoning another vendor signs writes it: ``svir1.CARRIER.ITEM.SIGNATURE``, ITEM
    the item's id in URL-safe base64 without padding (empty: none), CARRIER followed by
    `REDACTED` for a redacted block's data; read back by `uncarried`."""
    tag = base64.urlsafe_b64encode((item_id or "").encode()).decode().rstrip("=")
    return f"{CARRIED}{carrier}{REDACTED if redacted else ''}.{tag}.{signature}"


def uncarried(signature: str, text: str = "") -> ReasoningBlock | None:
    """The reasoning block of a `carried_signature` a client sent back (with the reasoning's
    ``text``; none for a redacted block), or ``None`` when ``signature`` is not one: the
    dialect's own."""
    if not signature.startswith(CARRIED):
        return None
    carrier, dot, rest = signature[len(CARRIED) :].partition(".")
    redacted = carrier.endswith(REDACTED)
    carrier = carrier.removesuffix(REDACTED)
    tag, dot2, own = rest.partition(".")
    if not (dot and dot2 and own) or carrier not in REASONING_CARRIERS or not _TAG.fullmatch(tag):
        return None
    try:
        item = base64.urlsafe_b64decode(tag + "=" * (-len(tag) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):  # (a ValueError: not base64, not UTF-8)
        return None
    return ReasoningBlock(
        text="" if redacted else text,
        signature=own,
        carrier=carrier,  # type: ignore[arg-type]  # checked against the carriers above
        redacted=redacted,
        item_id=item or None,
    )


def carried_in_base64(
    signature: str, carrier: str, item_id: str | None, *, redacted: bool = False
) -> str:
    """`carried_signature` for a dialect whose signature field is bytes in base64 (Gemini's
    ``thoughtSignature``: the google-genai SDK refuses an answer whose signature is not
    base64, attack 62 F2, and sends it back in the URL-safe alphabet): the carried form's
    UTF-8 in base64, read back by `unwrapped`."""
    carried = carried_signature(signature, carrier, item_id, redacted=redacted)
    return base64.b64encode(carried.encode()).decode()


def unwrapped(signature: str) -> str:
    """The `carried_signature` that `carried_in_base64` wrote, in either base64 alphabet, with
    or without its padding; any other ``signature`` (a vendor's own) as it is."""
    if not signature.startswith(CARRIED_BASE64):
        return signature
    try:
        raw = base64.b64decode(  # (strictly: what is not base64 is a vendor's own)
            signature.replace("+", "-").replace("/", "_") + "=" * (-len(signature) % 4),
            altchars=b"-_",
            validate=True,
        )
        return raw.decode() if raw.startswith(CARRIED.encode()) else signature
    except (binascii.Error, UnicodeDecodeError):  # (a ValueError: not base64, not UTF-8)
        return signature


def thinking_signature(signature: str, carrier: str, item_id: str | None) -> str:
    """A thinking block's ``signature`` for a signature of ``carrier``: Anthropic's own as it
    is, another vendor's carried, so that a client that sends it back sends it to its vendor
    (Gemini's, on the call it signed)."""
    return signature if carrier == "thinking" else carried_signature(signature, carrier, item_id)


def thinking_block(block: ReasoningBlock) -> dict[str, str]:
    """``block`` as the ``thinking_blocks`` entry of a Chat Completions message (LiteLLM's
    field, which Anthropic's blocks have, for a dialect with none): ``thinking`` with its text
    and signature, or ``redacted_thinking`` with its data; read back by `from_thinking_block`."""
    if block.redacted:
        data = block.signature
        if block.carrier != "thinking":
            data = carried_signature(data, block.carrier, block.item_id, redacted=True)
        return {"type": "redacted_thinking", "data": data}
    signature = thinking_signature(block.signature, block.carrier, block.item_id)
    return {"type": "thinking", "thinking": block.text, "signature": signature}


def from_thinking_block(kind: str, text: str, signature: str) -> ReasoningBlock:
    """The reasoning block of a ``thinking_blocks`` entry a client sent back: ``kind``
    ``thinking`` (``text`` and ``signature``) or ``redacted_thinking`` (``signature``: its
    data); another vendor's signature, carried, is that vendor's again."""
    if kind == "redacted_thinking":
        return uncarried(signature) or ReasoningBlock(
            text="", signature=signature, carrier="thinking", redacted=True
        )
    return uncarried(signature, text) or ReasoningBlock(
        text=text, signature=signature, carrier="thinking"
    )
