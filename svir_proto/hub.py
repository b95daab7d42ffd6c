"""The hub: the one neutral request every dialect translates to and from (ARCHITECTURE.md,
"Dialects: one hub, N adapters").

The neutral request is the LLM-Stream request, `LLMRequest`: the draft's fields, and under the
``vendor:svir`` extension what a vendor request carries that the draft has no field for. Each
dialect package has a ``hub`` module with ``to_hub(request) -> LLMRequest`` and
``from_hub(request) -> its request``; translating dialect A's request to dialect B is
``B.from_hub(A.to_hub(request))``, so N dialects need N adapters, never N². What a target
cannot carry is listed by its ``from_hub`` (its docstring), never dropped silently.

The neutral extension (`HUB_EXTENSION`), in the request's ``extensions``:

=======================  ===========================================================================
key                      value
=======================  ===========================================================================
``tool_choice``          ``"auto"``, ``"none"``, ``"required"`` (some tool must be called), or
                         ``{"name": NAME}`` (that tool)
``parallel_tool_calls``  a boolean: whether the model may call several tools in one turn
``reasoning``            ``{"effort": "low"|"medium"|"high"|..., "budget_tokens": N,
                         "summary": "auto"|"concise"|"detailed"}``, each optional
``response_format``      JSON output: ``{"type": "json_object"}``, or ``{"type": "json_schema",
                         "name": NAME, "schema": {...}, "strict": BOOL}``
``service``              the `SERVICE` options: ``{"user": ID, "store": BOOL, ...}``
``strict_tools``         the names of the tools held to their schema (`strict_tools`)
``stop``                 (none: stop sequences are the draft's ``parameters.stop_sequences``)
``paths``                each message's path in the request it came from (``system``,
                         ``messages[0]``, ``input[3]``, ``contents[2]``...), by its index, when
                         they are not the hub's own: what a target says lost names them
                         (`message_path`; attack 50b N7: a note named ``messages[2]`` for a
                         Messages client's ``messages[1]``)
``stateful``             ``{"dialect": NAME, "paths": [PATH, ...]}``: where the request refers to
                         state the server of dialect NAME keeps (a Responses request's
                         ``previous_response_id``, a file by its id, an ``item_reference``);
                         it cannot go to another dialect, which has no such state
                         (`svir_proto.dialects.translate_request` refuses it, naming them)
=======================  ===========================================================================

and in a message's ``extensions`` (`LLMMessage.extensions`):

=======================  ===========================================================================
key                      value
=======================  ===========================================================================
``reasoning``            an assistant message's signed reasoning, in order: a list of
                         ``{"text", "signature", "carrier", "redacted"?, "item_id"?}``
                         (`ReasoningBlock`), to send back unchanged to the dialect that signed it
``order``                an assistant message's reasoning, text and calls in the order they came,
                         when its dialect keeps it (Messages, Responses, Gemini) and it is not
                         reasoning, text, calls: ``"r"`` the next reasoning block, ``"c"`` the
                         next call, N the next N characters of its text (``["r", 1, "r",
                         "c"]``); a dialect that keeps order sends the turn back so (attack
                         50b N1: an interleaved turn went back rebuilt, which Anthropic
                         refuses), read by `message_pieces`
``is_error``             ``true`` on a tool message whose result is an error (Anthropic's
                         ``tool_result.is_error``); a dialect with no such mark sends the
                         result as `error_result`
``image_detail``         how closely the model is to look at each image that says so:
                         ``{"INDEX": "low"|"high"|"auto"|...}``, by the image's index among
                         the message's parts (OpenAI's ``detail``, Chat's and the Responses
                         API's; the Chat API takes these three only)
``linked``               the images the message gives by URL, which the draft cannot carry (it
                         carries images as data): ``[{"at": N, "url": URL, "detail"?: ...}]``,
                         each before the message's part N (N the count of parts when it
                         comes last; a string content is one text part, an empty one none),
                         in order (`LinkedImage`): every vendor dialect takes a user's image by
                         URL. Read on user messages only. An LLM-Stream client may write it
                         too (the hub's extension is the draft's ``vendor:svir``): it asks for
                         no more than a Chat client's ``image_url`` does, and an LLM-Stream
                         upstream refuses it (review 42 F8)
=======================  ===========================================================================

Other vendors' own fields go under their own keys (``vendor:openai``, ``vendor:anthropic``,
``vendor:gemini``): read by that dialect's ``from_hub`` only.

A signature of one vendor's reasoning written in another dialect's signature field (Gemini's
``thoughtSignature`` as an Anthropic ``thinking`` block's ``signature``, an Anthropic signature
as a Responses item's ``encrypted_content``) goes out as `carried_signature`: the carrier, the
item it signs and the signature, so that, sent back by the client, it is read as the reasoning
of its own vendor (`uncarried`) and goes back to that vendor whole, on what it signed (a
Gemini call), not dropped as another vendor's (client round 32).

This module holds values and pure functions: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar, final

import attrs

from ._signatures import CARRIED, carried_signature, uncarried
from .events import REASONING_CARRIERS, ReasoningBlock
from .llmstream.request import LLMMessage, LLMRequest, LLMTextPart, LLMToolCall

__all__ = [
    "CARRIED",
    "HUB_EXTENSION",
    "HubToolChoice",
    "LinkedImage",
    "EFFORT_BUDGETS",
    "SAMPLING",
    "carried_signature",
    "effort_for",
    "hub_options",
    "message_extensions",
    "message_image_detail",
    "message_linked",
    "message_pieces",
    "message_path",
    "AssistantPiece",
    "error_result",
    "error_text",
    "message_is_error",
    "message_reasoning",
    "not_carried",
    "own_fields",
    "parallel_tool_calls",
    "reasoning_options",
    "response_format",
    "result_text",
    "sampling",
    "service",
    "service_of",
    "SERVICE",
    "stateful",
    "strict_tools",
    "tool_choice",
    "unbudgeted",
    "uncarried",
    "unsent_reasoning",
    "unsent_summary",
    "web_url",
    "with_linked",
]

HUB_EXTENSION: Final = "vendor:svir"
HubToolChoice = Literal["auto", "none", "required"] | tuple[Literal["name"], str]
"""A neutral tool choice: one of the three words, or ``("name", NAME)`` for one tool."""


def _ours(extensions: Mapping[str, Any]) -> Mapping[str, Any]:
    value = extensions.get(HUB_EXTENSION)
    return value if isinstance(value, Mapping) else {}


def hub_options(
    *,
    tool_choice: HubToolChoice | None = None,
    parallel_tool_calls: bool | None = None,
    reasoning: Mapping[str, Any] | None = None,
    stateful: tuple[str, list[str]] | None = None,
    response_format: Mapping[str, Any] | None = None,
    service: Mapping[str, Any] | None = None,
    strict_tools: Iterable[str] = (),
    paths: Sequence[str] = (),
) -> dict[str, Any]:
    """The neutral options as a request's ``extensions`` (empty when none is set): merge them
    into `LLMRequest.extensions` with the vendor's own keys. ``stateful``: the dialect and
    the paths of a request that refers to its server's state; ``paths``: each message's in
    the request it came from (written unless they are the hub's own)."""
    ours: dict[str, Any] = {}
    if any(path != f"messages[{i}]" for i, path in enumerate(paths)):
        ours["paths"] = list(paths)
    if response_format is not None:
        ours["response_format"] = dict(response_format)
    if stateful is not None and stateful[1]:
        ours["stateful"] = {"dialect": stateful[0], "paths": list(stateful[1])}
    if tool_choice is not None:
        ours["tool_choice"] = (
            {"name": tool_choice[1]} if isinstance(tool_choice, tuple) else tool_choice
        )
    if parallel_tool_calls is not None:
        ours["parallel_tool_calls"] = parallel_tool_calls
    if reasoning:
        ours["reasoning"] = dict(reasoning)
    if service:
        ours["service"] = dict(service)
    strict = list(strict_tools)
    if strict:
        ours["strict_tools"] = strict
    return {HUB_EXTENSION: ours} if ours else {}


_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,8}")
"""A part's index as `message_extensions` writes it (a key of ``image_detail``)."""
_PATH: Final = re.compile(r"[A-Za-z]{1,24}(\[[0-9]{1,9}\])?(\.[A-Za-z]{1,24}(\[[0-9]{1,9}\])?)?")
"""A path `message_path` takes: ``messages[3]``, ``systemInstruction.parts[0]`` (review 50
r1: a path of any length began every note of its message, as many as a request wrote)."""


def message_path(request: LLMRequest, i: int) -> str:
    """Message ``i``'s path in the request it came from (``paths``), else the hub's."""
    paths = _ours(request.extensions).get("paths")
    if isinstance(paths, list) and 0 <= i < len(paths):
        path = paths[i]
        if isinstance(path, str) and _PATH.fullmatch(path) is not None:
            return path
    return f"messages[{i}]"


def tool_choice(request: LLMRequest) -> HubToolChoice | None:
    """The request's neutral tool choice, if it has one that makes sense (else ``None``)."""
    value = _ours(request.extensions).get("tool_choice")
    if value in ("auto", "none", "required"):
        return value  # type: ignore[no-any-return]
    if isinstance(value, Mapping) and isinstance(value.get("name"), str) and value["name"]:
        return ("name", value["name"])
    return None


def parallel_tool_calls(request: LLMRequest) -> bool | None:
    value = _ours(request.extensions).get("parallel_tool_calls")
    return value if isinstance(value, bool) else None


def reasoning_options(request: LLMRequest) -> Mapping[str, Any]:
    """The request's neutral reasoning options (``effort``, ``budget_tokens``, ``summary``)."""
    value = _ours(request.extensions).get("reasoning")
    return value if isinstance(value, Mapping) else {}


def unsent_summary(request: LLMRequest, api: str) -> str | None:
    """What a dialect with no reasoning summary style says lost of a request that asked for
    one (``auto``, the server's own, is none: review 48 M3, review 49 2a), else ``None``."""
    summary = reasoning_options(request).get("summary")
    if summary in (None, "auto"):
        return None
    return f"reasoning summary {summary!r} has no field in the {api}: not sent"


SAMPLING: Final = {
    "seed": int,
    "top_k": int,
    "presence_penalty": float,
    "frequency_penalty": float,
}
"""The parameters beside the draft's four (which it allows: "Vendors MAY define additional
parameters") that more than one dialect has a field for, under these names in the request's
``parameters``, and the type of their values (an int is a float too)."""


def sampling(request: LLMRequest) -> dict[str, Any]:
    """The request's `SAMPLING` parameters whose values are of their type (others: none)."""
    out: dict[str, Any] = {}
    for name, kind in SAMPLING.items():
        value = request.parameters.get(name)
        if kind is int and type(value) is float and value.is_integer():
            value = int(value)  # (Gemini's topK, written 40.0)
        if isinstance(value, kind if kind is int else (int, float)) and type(value) is not bool:
            out[name] = value
    return out


SERVICE: Final = {
    "user": str,
    "store": bool,
    "service_tier": str,
    "prompt_cache_key": str,
    "safety_identifier": str,
    "verbosity": str,
}
"""How the provider is to serve the request, beside what the model is to write, that more than
one dialect has a field for: the end user's id (Chat's and Responses' ``user``, Anthropic's
``metadata.user_id``), whether the answer is stored, the tier that serves it, its prompt
cache's key, the id a provider's safety checks know the user by, and how wordy the answer
is (Chat's ``verbosity``, Responses' ``text.verbosity``): under the hub's ``service`` key, with
the type of each value (audit 36: they were dropped between the two OpenAI dialects)."""


def service(request: LLMRequest) -> dict[str, Any]:
    """The request's `SERVICE` options whose values are of their type (others: none)."""
    value = _ours(request.extensions).get("service")
    return service_of(value) if isinstance(value, Mapping) else {}


def service_of(values: Mapping[str, Any]) -> dict[str, Any]:
    """The `SERVICE` options among a dialect's own fields of the same names (``user``...)."""
    return {k: values[k] for k, kind in SERVICE.items() if isinstance(values.get(k), kind)}


def strict_tools(request: LLMRequest) -> frozenset[str]:
    """The names of the tools whose arguments the request holds to their schema (Chat's and
    Responses' ``strict: true``). A dialect whose tools are strict unless said otherwise (the
    Responses API) is told ``strict: false`` for every other tool."""
    value = _ours(request.extensions).get("strict_tools")
    return (
        frozenset(v for v in value if isinstance(v, str))
        if isinstance(value, list)
        else frozenset()
    )


_ASKS_NOTHING: Final = {"store": (False,), "service_tier": ("auto", "default")}
"""`SERVICE` values that ask for what a dialect without the field does anyway (no storing, the
usual tier): not said lost (review 37: Codex and the AI SDK send ``store: false`` always)."""


def unsent_reasoning(
    where: str, blocks: Iterable[ReasoningBlock], carriers: Iterable[str]
) -> list[str]:
    """What a dialect that takes back the reasoning of ``carriers`` only says of the other
    ``blocks`` of the message at ``where`` (`message_path`): another vendor's signed
    reasoning, or reasoning no signature closed (attack 49b F4: a thought Gemini did not sign
    was said another vendor's)."""
    theirs = set(carriers)
    foreign = [b for b in blocks if b.carrier not in theirs]
    out = []
    if any(b.signature or b.redacted for b in foreign):
        out.append(f"{where}: reasoning another vendor signed: not sent")
    if any(not (b.signature or b.redacted) for b in foreign):
        out.append(f"{where}: reasoning that no signature vouches for: not sent")
    return out


def not_carried(
    request: LLMRequest,
    api: str,
    *,
    parameters: Iterable[str],
    served: Iterable[str] = (),
    strict: bool = False,
    metadata: Iterable[str] = (),
    carriers: Iterable[str] = (),
    image_detail: bool = False,
    systems_in_place: bool = True,
) -> list[str]:
    """What a target dialect (``api``: "the Messages API") does not carry of the request's
    options, a sentence each, for its ``from_hub``'s ``lost``: parameters but
    ``parameters``; `SERVICE` options but ``served`` (but values that ask for nothing a
    dialect without them does not do); the tools held ``strict`` unless it has that; metadata
    but ``metadata`` (and ``request_id``, which goes as the ``X-Request-Id`` header); and
    each message with reasoning of a carrier but ``carriers`` (another vendor's, which it
    refuses, or unsigned, which no vendor but the Chat API's servers takes back; none: the
    target carries none); images' ``detail`` unless it has that (but
    ``auto``, which asks for nothing); and, unless the target keeps a system message where
    it stands (``systems_in_place``), each that comes after the conversation began, which
    joins the top-level system prompt (fidelity 42 F9); and the participants' names
    (`unnamed`)."""
    out = [
        sentence
        for i, m in enumerate(request.messages)
        for sentence in unsent_reasoning(message_path(request, i), message_reasoning(m), carriers)
    ]
    if not image_detail:
        out += [
            f"{message_path(request, i)}.content[{at}]: an image's detail ({detail!r}) has no "
            f"field in {api}: not sent"
            for i, m in enumerate(request.messages)
            for at, detail in sorted(message_image_detail(m).items())
            if detail != "auto"
        ]
        out += [
            f"{message_path(request, i)}.content: the detail ({image.detail!r}) of an image by "
            f"URL has no field in {api}: not sent"
            for i, m in enumerate(request.messages)
            for image in message_linked(m)
            if image.detail is not None and image.detail != "auto"
        ]
    out += [
        f"parameters.{key} has no field in {api}: not sent"
        for key in sorted(set(request.parameters) - set(parameters))
    ]
    options = service(request)
    out += [
        f"{key} is not sent to {api}"
        for key in sorted(set(options) - set(served))
        if options[key] not in _ASKS_NOTHING.get(key, ())
    ]
    if not systems_in_place:
        began = next((i for i, m in enumerate(request.messages) if m.role != "system"), None)
        out += [
            f"{message_path(request, i)}: a system message after the conversation began joins "
            f"{api}'s system prompt: its place is not kept"
            for i, m in enumerate(request.messages)
            if began is not None and i > began and m.role == "system"
        ]
    if not strict and strict_tools(request):
        out.append(f"tools held strict to their schema: {api} has no such mark")
    out += [
        f"metadata.{key} is not sent to {api}"
        for key in sorted(set(request.metadata) - {"request_id", *metadata})
    ]
    return out + unnamed(request, api)


def own_fields(api: str, keys: Iterable[str]) -> list[str]:
    """The sentences of a dialect's ``unread``: the fields of its requests that only it reads
    (kept under its vendor key), not sent to another dialect."""
    return [f"{key}: a field of {api} only: not sent" for key in sorted(keys)]


EFFORT_BUDGETS: Final = {"minimal": 1024, "low": 1024, "medium": 2048, "high": 4096, "xhigh": 8192}
"""The thinking budget in tokens that an effort asks for, for a dialect that takes a budget
only (Anthropic's ``thinking.budget_tokens``, whose least is 1024), and the other way for one
that takes an effort only (OpenAI's): the budgets LiteLLM gives the efforts."""


def effort_for(options: Mapping[str, Any]) -> str | None:
    """The effort neutral reasoning options ask for: their ``effort``, else that of their
    ``budget_tokens`` (up to 1024 low, up to 2048 medium, more high; 0, no thinking, or a
    negative budget, Gemini's "as the model sees fit": none said); ``None`` when they ask none."""
    effort = options.get("effort")
    if isinstance(effort, str):
        return effort
    budget = options.get("budget_tokens")
    if type(budget) is not int or budget <= 0:  # (0: no thinking, which needs no effort: one
        return None  # sent to a model that does not reason is refused; review 36)
    return "low" if budget <= 1024 else "medium" if budget <= 2048 else "high"


def unbudgeted(request: LLMRequest, api: str) -> list[str]:
    """A thinking budget that no effort stands for (0: no thinking; below 0, Gemini's "as the
    model sees fit"), said for a dialect whose reasoning is an effort or a positive budget
    only (fidelity 42 F12)."""
    options = reasoning_options(request)
    budget = options.get("budget_tokens")
    if options.get("effort") is not None or type(budget) is not int or budget > 0:
        return []
    means = "no thinking" if budget == 0 else "as the model sees fit"
    return [f"reasoning.budget_tokens {budget} ({means}) has no field in {api}: not sent"]


def unnamed(request: LLMRequest, api: str) -> list[str]:
    """The names of a conversation's participants (LLM-Stream's ``messages[i].name``), which
    no vendor dialect here carries, one sentence each (fidelity 42 F13)."""
    return [
        f"{message_path(request, i)}.name ({m.name!r}) has no field in {api}: not sent"
        for i, m in enumerate(request.messages)
        if m.name is not None
    ]


def response_format(request: LLMRequest) -> Mapping[str, Any] | None:
    """The request's neutral JSON output format, if it has one that makes sense."""
    value = _ours(request.extensions).get("response_format")
    if not isinstance(value, Mapping):
        return None
    if value.get("type") == "json_object":
        return {"type": "json_object"}
    if value.get("type") == "json_schema" and isinstance(value.get("schema"), Mapping):
        return value
    return None


def stateful(request: LLMRequest) -> tuple[str, tuple[str, ...]] | None:
    """The dialect whose server's state the request refers to, and where (``None``: none)."""
    value = _ours(request.extensions).get("stateful")
    if not isinstance(value, Mapping):
        return None
    name, paths = value.get("dialect"), value.get("paths")
    if not isinstance(name, str) or not isinstance(paths, list) or not paths:
        return None
    return name, tuple(str(p) for p in paths)


@final
@attrs.frozen
class LinkedImage:
    """An image a message gives by URL (``http``/``https``), carried by the hub's ``linked``
    extension: it goes before the message's part ``at``; ``detail`` as ``image_detail``'s."""

    at: int
    url: str
    detail: str | None = None


AssistantPiece = ReasoningBlock | str | LLMToolCall
"""A piece of an assistant's turn: a reasoning block, text, a call (`message_pieces`)."""


def message_extensions(
    *,
    reasoning: Iterable[ReasoningBlock] = (),
    is_error: bool = False,
    image_detail: Mapping[int, str] | None = None,
    linked: Iterable[LinkedImage] = (),
    pieces: Iterable[AssistantPiece] = (),
) -> dict[str, Any]:
    """A message's neutral ``extensions`` (empty when there is nothing to carry); given an
    assistant's ``pieces`` as they came (its reasoning then the blocks among them), their
    ``order`` unless it is reasoning, text, calls."""
    ours: dict[str, Any] = {}
    blocks = [_block_out(b) for b in reasoning]
    if blocks:
        ours["reasoning"] = blocks
    order = _order(pieces)
    if order is not None:
        ours["order"] = order
    if is_error:
        ours["is_error"] = True
    if image_detail:
        ours["image_detail"] = {str(at): detail for at, detail in image_detail.items()}
    images = [
        {"at": i.at, "url": i.url, **({} if i.detail is None else {"detail": i.detail})}
        for i in linked
    ]
    if images:
        ours["linked"] = images
    return {HUB_EXTENSION: ours} if ours else {}


def _order(pieces: Iterable[AssistantPiece]) -> list[str | int] | None:
    """The ``order`` of an assistant's pieces, ``None`` for reasoning, text, calls."""
    out: list[str | int] = []
    for p in pieces:
        if not isinstance(p, str):
            out.append("r" if isinstance(p, ReasoningBlock) else "c")
        elif out and type(out[-1]) is int:
            out[-1] += len(p)  # (a text after a text: one run)
        elif p:
            out.append(len(p))
    kinds = "".join("t" if type(x) is int else str(x) for x in out)
    plain = kinds.count("t") <= 1 and list(kinds) == sorted(kinds, key="rtc".index)
    return None if plain else out


def message_pieces(message: LLMMessage) -> list[AssistantPiece]:
    """An assistant message's reasoning blocks, text and calls in the order they came (its
    ``order``), else its reasoning, its text, its calls; an order that does not count them as
    the message has them is not read."""
    blocks, calls = message_reasoning(message), message.tool_calls
    text = message.text
    plain: list[AssistantPiece] = [*blocks, *([text] if text else []), *calls]
    raw = _ours(message.extensions).get("order")
    if not isinstance(raw, list) or isinstance(message.content, tuple):
        return plain
    sizes = [x for x in raw if type(x) is int and x > 0]
    if (
        raw.count("r") != len(blocks)
        or raw.count("c") != len(calls)
        or len(sizes) + len(blocks) + len(calls) != len(raw)
        or sum(sizes) != len(text)
    ):
        return plain
    out: list[AssistantPiece] = []
    kept, made, at = iter(blocks), iter(calls), 0
    for x in raw:
        if x == "r":
            out.append(next(kept))
        elif x == "c":
            out.append(next(made))
        else:
            out.append(text[at : at + x])
            at += x
    return out


def message_linked(message: LLMMessage) -> tuple[LinkedImage, ...]:
    """The images the message gives by URL (``linked``), in their order; what is malformed
    (a URL that is not ``http``/``https`` of visible characters, say) is skipped, and a place past
    the message's parts is its end. A message but a user's has none: no dialect gives others
    images by URL."""
    raw = _ours(message.extensions).get("linked")
    if message.role != "user" or not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        at, url, detail = item.get("at"), item.get("url"), item.get("detail")
        if type(at) is int and at >= 0 and isinstance(url, str) and web_url(url):
            out.append(LinkedImage(at, url, detail if isinstance(detail, str) else None))
    return tuple(sorted(out, key=lambda i: i.at))  # (stable: in order at one place)


def web_url(url: str) -> bool:
    """An ``http`` or ``https`` URL of visible characters (no space, tab or control
    character): what every dialect sends on."""
    return url.startswith(("http://", "https://")) and url.isprintable() and " " not in url


_Item = TypeVar("_Item")


def with_linked(
    items: Sequence[_Item], linked: Sequence[LinkedImage], image: Callable[[LinkedImage], _Item]
) -> list[_Item]:
    """``items`` (a message's parts, in a dialect's form) with each of ``linked`` (in order,
    as `message_linked` gives them) made by ``image`` and put at its place."""
    out: list[_Item] = []
    k = 0
    for i, item in enumerate(items):
        while k < len(linked) and linked[k].at <= i:
            out.append(image(linked[k]))
            k += 1
        out.append(item)
    out.extend(image(i) for i in linked[k:])
    return out


def message_image_detail(message: LLMMessage) -> dict[int, str]:
    """The ``detail`` of each image of the message that says it, by its index among the
    message's parts; what is malformed, or no part's, is skipped (review 50 r1: a request's
    every note of an image's detail came from entries no part had, as many as it wrote)."""
    raw = _ours(message.extensions).get("image_detail")
    parts = message.content if isinstance(message.content, tuple) else ()
    if not isinstance(raw, Mapping) or not parts:
        return {}
    return {
        int(at): detail
        for at, detail in raw.items()
        if isinstance(at, str)
        and _INDEX.fullmatch(at)  # (review 51 r3: "²" is a digit, and no int; no leading 0)
        and len(at) <= len(str(len(parts)))  # (a number of 5,000 digits is no int to read)
        and int(at) < len(parts)
        and isinstance(detail, str)
        and detail
    }


def message_reasoning(message: LLMMessage) -> tuple[ReasoningBlock, ...]:
    """An assistant message's signed reasoning blocks; what is malformed is skipped."""
    raw = _ours(message.extensions).get("reasoning")
    if not isinstance(raw, list):
        return ()
    blocks = []
    for b in raw:
        if not isinstance(b, Mapping):
            continue
        text, signature, carrier = b.get("text", ""), b.get("signature"), b.get("carrier")
        item = b.get("item_id")
        if (
            isinstance(text, str)
            and isinstance(signature, str)
            and isinstance(carrier, str)
            and carrier in REASONING_CARRIERS
        ):
            blocks.append(
                ReasoningBlock(
                    text=text,
                    signature=signature,
                    carrier=carrier,  # type: ignore[arg-type]
                    redacted=b.get("redacted") is True,
                    item_id=item if isinstance(item, str) else None,
                )
            )
    return tuple(blocks)


def message_is_error(message: LLMMessage) -> bool:
    """A tool message whose result is an error."""
    return _ours(message.extensions).get("is_error") is True


def error_text(message: LLMMessage) -> str | None:
    """A failed tool's result as text for a dialect with no error mark (`error_result`), when
    ``message`` is one and its result is text (a string, or text parts only: Anthropic's
    clients send blocks); else ``None``."""
    if not message_is_error(message):
        return None
    content = message.content
    if isinstance(content, tuple) and not all(isinstance(p, LLMTextPart) for p in content):
        return None
    return error_result(result_text(message))


def result_text(message: LLMMessage) -> str:
    """A tool result as one string, for a dialect that takes no parts there (Chat's ``tool``
    message, Gemini's ``functionResponse``): its text parts joined by a line end, never glued
    (fidelity 51 N5: "20C" and "Humidity: 50%" became "20CHumidity: 50%")."""
    return "\n".join(message.texts)


def error_result(text: str) -> str:
    """A failed tool's result as text for a dialect with no error mark (Chat's ``tool``
    message, a Responses ``function_call_output``): ``{"error": TEXT}``, the form Gemini's
    ``functionResponse`` gives a failure, so that the model reads a failure, not a result
    (audit 36: "timeout" read as what the tool returned)."""
    return json.dumps({"error": text}, ensure_ascii=False)


def _block_out(block: ReasoningBlock) -> dict[str, Any]:
    out: dict[str, Any] = {
        "text": block.text,
        "signature": block.signature,
        "carrier": block.carrier,
    }
    if block.redacted:
        out["redacted"] = True
    if block.item_id is not None:
        out["item_id"] = block.item_id
    return out
