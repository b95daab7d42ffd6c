"""What a Responses request document may hold (OpenAI API reference, "Responses": create a
response), checked once for both directions: `ResponsesRequest` checks its own document at
construction (a `ValueError` naming the field) and `ResponsesRequest.parse` checks a body
(a `RequestError` naming the JSON path, ``$.input[1].content[0].image_url``).

Rule 1: ``model`` is a non-empty string; ``input`` a string or an array of items.
Rule 2: an item is a ``message`` (``type`` ``message``, or no type and a ``role``: the API's
    "easy" input message) with a role of ``user``, ``system``, ``developer`` or ``assistant``
    and content a string or an array of parts: ``input_text``, ``input_image`` (a ``data:``
    URL of base64, an ``http(s)`` URL, or a ``file_id``) and ``input_file`` for the first
    three roles, ``output_text`` and ``refusal`` for the assistant; a ``function_call``
    (``call_id``, ``name``, ``arguments``), a ``function_call_output`` (``call_id``,
    ``output``: a string or input parts) or a ``reasoning`` item (``summary`` of
    ``summary_text`` parts, ``encrypted_content``, ``content`` of ``reasoning_text`` parts).
    Items and parts of other types (the built-in tools' items, ``item_reference``,
    ``input_audio``...) are kept as they are: the API adds them, and the upstream judges them.
Rule 3: ``tools``: a ``function`` tool has a name of 1 to 64 of ``A-Za-z0-9_-``, unique, and
    optional ``description`` (string), ``parameters`` (object), ``strict`` (boolean); tools of
    other types are kept as they are. ``tool_choice`` is ``auto``, ``none``, ``required``, or
    an object with a ``type`` (``{"type": "function", "name": ...}`` names a function of
    ``tools``).
Rule 4: ``max_output_tokens`` a positive integer, ``temperature`` 0 to 2, ``top_p`` 0 to 1,
    ``reasoning.effort`` and ``reasoning.summary`` from the reference's lists,
    ``parallel_tool_calls``, ``store`` and ``stream`` booleans, ``include`` strings,
    ``previous_response_id`` a string, ``metadata`` at most 16 string pairs (keys of 64
    characters at most, values of 512), ``text.format.type`` one of ``text``,
    ``json_object``, ``json_schema`` (which needs a ``name`` and a ``schema``).
Rule 5: ``null`` stands for a field left out; fields the reference names that are not read
    here (``truncation``, ``service_tier``, ``user``, ``prompt_cache_key``...) and unknown ones
    are kept as they are.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

from ..llmstream.request import RequestError

__all__: list[str] = []

ROLES: Final = ("user", "system", "developer", "assistant")
REASONING_EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh")
SUMMARIES: Final = ("auto", "concise", "detailed")
STATUSES: Final = ("in_progress", "completed", "incomplete")
TOOL_CHOICES: Final = ("auto", "none", "required")
FORMATS: Final = ("text", "json_object", "json_schema")
TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_DATA_URL: Final = re.compile(r"data:([^;,/]+/[^;,]+)((?:;[^,]*)?);base64,(.*)", re.DOTALL)
MAX_DATA_PARAMETERS: Final = 16
"""Parameters a data URL may have (``;charset=utf-8``...): a few at most."""


def data_url(url: str) -> tuple[str, str] | None:
    """A base64 data URL's media type and data, or ``None``: its type ends at its first ``/``,
    and each of at most `MAX_DATA_PARAMETERS` parameters is ``;name=value``, its name ending
    at its first ``=``. (Parameters read by a pattern that could split them many ways took
    minutes, attack 27; one that repeated a group for each kept a frame for each, 1.8 GB for
    7.5 million, attack 37.)"""
    m = _DATA_URL.fullmatch(url)
    if m is None:
        return None
    parameters = m[2]
    if parameters:
        if parameters.count(";") > MAX_DATA_PARAMETERS:
            return None
        for p in parameters[1:].split(";"):
            name, eq, _ = p.partition("=")
            if not name or not eq:
                return None
    return m[1], m[3]


MAX_METADATA: Final = 16
MAX_METADATA_KEY: Final = 64
MAX_METADATA_VALUE: Final = 512
INPUT_PARTS: Final = ("input_text", "input_image", "input_file")
OUTPUT_PARTS: Final = ("output_text", "refusal")


def need(cond: bool, path: str, problem: str) -> None:
    if not cond:
        raise RequestError(path, problem)


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _optional(doc: dict[str, Any], key: str, kind: type, p: str) -> None:
    """``doc[key]`` is absent, null, or of ``kind`` (a boolean is no number, nor a string)."""
    v = doc.get(key)
    ok = isinstance(v, bool) if kind is bool else isinstance(v, kind) and not isinstance(v, bool)
    need(v is None or ok, f"{p}.{key}", f"must be a {_name(kind)}, not {v!r}"[:200])


def _name(kind: type) -> str:
    return {str: "string", bool: "boolean", dict: "object", list: "array"}.get(kind, kind.__name__)


def _string(doc: dict[str, Any], key: str, p: str, *, empty: bool = True) -> None:
    v = doc.get(key)
    problem = "a string is required" if empty else "a non-empty string is required"
    need(isinstance(v, str) and (empty or bool(v)), f"{p}.{key}", problem)


def check_request(doc: object, p: str = "$") -> None:
    """Rules 1 to 5 for a whole request document."""
    need(isinstance(doc, dict), p, "a request must be a JSON object")
    assert isinstance(doc, dict)
    _string(doc, "model", p, empty=False)
    items = doc.get("input")
    if items is not None and not isinstance(items, str):
        need(isinstance(items, list), f"{p}.input", "must be a string or an array of items")
        for i, item in enumerate(items):
            check_item(item, f"{p}.input[{i}]")
    _optional(doc, "instructions", str, p)
    tools = doc.get("tools")
    names: set[str] = set()  # the function tools
    if tools is not None:
        need(isinstance(tools, list), f"{p}.tools", "must be an array")
        for i, tool in enumerate(tools):
            check_tool(tool, f"{p}.tools[{i}]", names)
    choice = doc.get("tool_choice")
    if choice is not None and not (isinstance(choice, str) and choice in TOOL_CHOICES):
        tp = f"{p}.tool_choice"
        need(
            isinstance(choice, dict),
            tp,
            f"must be auto, none, required or an object, not {choice!r}"[:200],
        )
        need(
            isinstance(choice.get("type"), str) and bool(choice["type"]),
            f"{tp}.type",
            "a non-empty string is required",
        )
        if choice["type"] == "function":
            _string(choice, "name", tp, empty=False)
            need(
                choice["name"] in names,
                f"{tp}.name",
                f"{choice['name']!r} is not a function in tools"[:200],
            )
    mt = doc.get("max_output_tokens")
    need(
        mt is None or (type(mt) is int and mt > 0),
        f"{p}.max_output_tokens",
        f"a positive integer, not {mt!r}"[:200],
    )
    t = doc.get("temperature")
    need(
        t is None or (_number(t) and 0 <= t <= 2),
        f"{p}.temperature",
        f"a number in 0..2, not {t!r}"[:200],
    )
    tp_ = doc.get("top_p")
    need(
        tp_ is None or (_number(tp_) and 0 <= tp_ <= 1),
        f"{p}.top_p",
        f"a number in 0..1, not {tp_!r}"[:200],
    )
    reasoning = doc.get("reasoning")
    if reasoning is not None:
        rp = f"{p}.reasoning"
        need(isinstance(reasoning, dict), rp, "must be an object")
        effort = reasoning.get("effort")
        need(
            effort is None or effort in REASONING_EFFORTS,
            f"{rp}.effort",
            f"must be one of {', '.join(REASONING_EFFORTS)}, not {effort!r}"[:200],
        )
        summary = reasoning.get("summary")
        need(
            summary is None or summary in SUMMARIES,
            f"{rp}.summary",
            f"must be one of {', '.join(SUMMARIES)}, not {summary!r}"[:200],
        )
    for key in ("parallel_tool_calls", "store", "stream"):
        v = doc.get(key)
        need(v is None or isinstance(v, bool), f"{p}.{key}", f"must be a boolean, not {v!r}"[:200])
    include = doc.get("include")
    need(
        include is None or (isinstance(include, list) and all(isinstance(x, str) for x in include)),
        f"{p}.include",
        "must be an array of strings",
    )
    _optional(doc, "previous_response_id", str, p)
    meta = doc.get("metadata")
    if meta is not None:
        mp = f"{p}.metadata"
        need(isinstance(meta, dict), mp, "must be an object")
        need(len(meta) <= MAX_METADATA, mp, f"at most {MAX_METADATA} pairs, not {len(meta)}")
        for k, v in meta.items():
            need(
                len(k) <= MAX_METADATA_KEY,
                f"{mp}[{k[:20]!r}]",
                f"a key of at most {MAX_METADATA_KEY} characters",
            )
            need(
                isinstance(v, str) and len(v) <= MAX_METADATA_VALUE,
                f"{mp}[{k!r}]",
                f"a string of at most {MAX_METADATA_VALUE} characters",
            )
    text = doc.get("text")
    if text is not None:
        need(isinstance(text, dict), f"{p}.text", "must be an object")
        fmt = text.get("format")
        if fmt is not None:
            fp = f"{p}.text.format"
            need(isinstance(fmt, dict), fp, "must be an object")
            need(
                fmt.get("type") in FORMATS,
                f"{fp}.type",
                f"must be one of {', '.join(FORMATS)}, not {fmt.get('type')!r}"[:200],
            )
            if fmt["type"] == "json_schema":
                _string(fmt, "name", fp, empty=False)
                need(
                    isinstance(fmt.get("schema"), dict),
                    f"{fp}.schema",
                    "a JSON Schema object is required",
                )


def item_kind(item: dict[str, Any]) -> object:
    """An item's type; an "easy" input message has none, only a role (Rule 2)."""
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind


def check_item(item: object, p: str) -> None:
    need(isinstance(item, dict), p, "an input item must be an object")
    assert isinstance(item, dict)
    kind = item_kind(item)
    need(
        isinstance(kind, str) and bool(kind),
        f"{p}.type",
        f"a non-empty string is required, not {kind!r}"[:200],
    )
    for key in ("id", "status"):
        _optional(item, key, str, p)
    status = item.get("status")
    if kind in ("message", "function_call", "function_call_output", "reasoning"):
        need(
            status is None or status in STATUSES,
            f"{p}.status",
            f"must be one of {', '.join(STATUSES)}, not {status!r}"[:200],
        )
    if kind == "message":
        role = item.get("role")
        need(role in ROLES, f"{p}.role", f"must be one of {', '.join(ROLES)}, not {role!r}"[:200])
        _optional(item, "phase", str, p)
        content = item.get("content")
        if isinstance(content, str):
            return
        need(isinstance(content, list), f"{p}.content", "must be a string or an array of parts")
        assert isinstance(content, list)
        allowed = OUTPUT_PARTS if role == "assistant" else INPUT_PARTS
        for i, part in enumerate(content):
            check_part(part, f"{p}.content[{i}]", allowed)
    elif kind == "function_call":
        _string(item, "call_id", p, empty=False)
        _string(item, "name", p, empty=False)
        _string(item, "arguments", p)
    elif kind == "function_call_output":
        _string(item, "call_id", p, empty=False)
        output = item.get("output")
        if not isinstance(output, str):
            need(isinstance(output, list), f"{p}.output", "must be a string or an array of parts")
            assert isinstance(output, list)
            for i, part in enumerate(output):
                check_part(part, f"{p}.output[{i}]", INPUT_PARTS)
    elif kind == "reasoning":
        for key, part_type in (("summary", "summary_text"), ("content", "reasoning_text")):
            parts = item.get(key)
            if parts is None:
                continue
            need(isinstance(parts, list), f"{p}.{key}", "must be an array")
            for i, part in enumerate(parts):
                pp = f"{p}.{key}[{i}]"
                need(isinstance(part, dict), pp, "a part must be an object")
                need(
                    part.get("type") == part_type,
                    f"{pp}.type",
                    f"must be {part_type}, not {part.get('type')!r}"[:200],
                )
                _string(part, "text", pp)
        _optional(item, "encrypted_content", str, p)


def check_part(part: object, p: str, allowed: tuple[str, ...]) -> None:
    need(isinstance(part, dict), p, "a content part must be an object")
    assert isinstance(part, dict)
    kind = part.get("type")
    need(
        isinstance(kind, str) and bool(kind),
        f"{p}.type",
        f"a non-empty string is required, not {kind!r}"[:200],
    )
    known = INPUT_PARTS + OUTPUT_PARTS
    need(
        kind in allowed or kind not in known,
        f"{p}.type",
        f"{kind} is not allowed here: one of {', '.join(allowed)}",
    )
    if kind == "input_text" or kind == "output_text":
        _string(part, "text", p)
        annotations = part.get("annotations")
        need(
            annotations is None or isinstance(annotations, list),
            f"{p}.annotations",
            "must be an array",
        )
    elif kind == "refusal":
        _string(part, "refusal", p)
    elif kind == "input_image":
        url, file_id = part.get("image_url"), part.get("file_id")
        need(
            (url is None) != (file_id is None),
            p,
            "an input_image needs exactly one of image_url and file_id",
        )
        _optional(part, "detail", str, p)
        if file_id is not None:
            _string(part, "file_id", p, empty=False)
        else:
            check_url(url, f"{p}.image_url", "image/")
    elif kind == "input_file":
        sources = [k for k in ("file_id", "file_url", "file_data") if part.get(k) is not None]
        need(
            len(sources) == 1,
            p,
            "an input_file needs exactly one of file_id, file_url and file_data",
        )
        for key in ("file_id", "file_url", "filename"):
            _optional(part, key, str, p)
        data = part.get("file_data")
        if data is not None:
            need(isinstance(data, str), f"{p}.file_data", "must be a string")
            if data.startswith("data:"):
                check_url(data, f"{p}.file_data", "")


def check_url(url: object, p: str, media_prefix: str) -> None:
    """A ``data:`` URL of base64 whose media type begins with ``media_prefix``, or ``http(s)``."""
    need(isinstance(url, str), p, "a URL string is required")
    assert isinstance(url, str)
    if url.startswith(("https://", "http://")):
        return
    found = data_url(url)
    need(found is not None, p, "must be an http(s) URL or a data: URL of base64")
    assert found is not None
    media, data = found
    need(
        media.lower().startswith(media_prefix),
        p,
        f"the data: URL's media type {media!r} is not {media_prefix}*",
    )
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RequestError(p, f"the data: URL is not base64: {exc}") from exc


def check_tool(tool: object, p: str, names: set[str]) -> None:
    need(isinstance(tool, dict), p, "a tool must be an object")
    assert isinstance(tool, dict)
    kind = tool.get("type")
    need(
        isinstance(kind, str) and bool(kind),
        f"{p}.type",
        f"a non-empty string is required, not {kind!r}"[:200],
    )
    if kind != "function":
        return
    name = tool.get("name")
    need(
        isinstance(name, str) and TOOL_NAME.fullmatch(name) is not None,
        f"{p}.name",
        f"1 to 64 of A-Z a-z 0-9 _ -, not {name!r}"[:200],
    )
    assert isinstance(name, str)
    need(name not in names, f"{p}.name", f"{name!r} is declared twice")
    names.add(name)
    _optional(tool, "description", str, p)
    _optional(tool, "parameters", dict, p)
    _optional(tool, "strict", bool, p)
