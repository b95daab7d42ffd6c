"""Where a Gemini request goes, and how the server side reads where it came: the model is in
the path, not in the body (Gemini API reference, "generateContent": ``POST
https://generativelanguage.googleapis.com/v1beta/{model=models/*}:generateContent`` and
``:streamGenerateContent``; the SSE form needs ``alt=sse``).

Rule 1: a model without a collection (``gemini-2.5-flash``) is in ``models/``; a resource name
    of the collections that generate (``models/x``, ``tunedModels/x``, Vertex AI's
    ``projects/p/locations/l/publishers/google/models/x`` and ``.../endpoints/x``) is used as
    it is. Its
    characters are percent-encoded where a path needs it (not ``/``, ``-``, ``.``, ``_``,
    ``~``). A model of another collection (``cachedContents/x``: attack 67 F2, a translated
    client's model sent the gateway's key there), or whose id is not what Rule 3 takes of a
    path (one segment; no ``\\``, ``%``, ``;`` or control character; not ``.`` or ``..``),
    is refused (each id of a Vertex AI name alike): a server, or a proxy in front of it,
    would read another resource.
Rule 2: the key goes in the ``x-goog-api-key`` header, as the ``google-genai`` SDK sends it
    (never in the query, where logs keep it).
Rule 3: `parse_target` reads ``/{version}/{collection}/{id}:{method}[?query]``: the
    methods ``generateContent`` and ``streamGenerateContent`` (streaming), ``alt`` and, for
    old clients, ``key`` from the query. The id is one segment, decoded once: one that holds
    ``/`` or ``\\`` once decoded (``cachedContents%2Fx`` names another collection, which a
    gateway would send its key to: attack 62 F4), a ``%`` still (encoded twice: a proxy that
    decodes again would see a separator), a ``;`` (a servlet container's path parameter:
    ``..;x`` is ``..`` there), or is ``.`` or ``..``, is refused, and so is one that is not
    UTF-8 once decoded or holds a control character. ``alt`` is ``sse`` or ``json`` (the
    default: a stream that is one JSON array); Google's others (``proto``, ``media``) are
    refused. Anything else is a `RequestError`.

No I/O here.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Final, NamedTuple

from ..llmstream.request import RequestError

__all__ = [
    "API_KEY_HEADER",
    "GeminiTarget",
    "headers",
    "is_target",
    "target",
    "parse_target",
]

API_KEY_HEADER: Final = "x-goog-api-key"
_VERSION: Final = re.compile(r"v[0-9][A-Za-z0-9]*")
"""What an API version is (the path's first segment: ``v1beta``, ``v1``, ``v1alpha``)."""
_PATH: Final = re.compile(
    rf"/({_VERSION.pattern})/((?:models|tunedModels)/[^:/]+):"
    "(generateContent|streamGenerateContent)"
)
_SAFE: Final = "/-._~"


class GeminiTarget(NamedTuple):
    """What a request target says (Rule 3)."""

    version: str
    model: str
    """``gemini-2.5-flash`` for ``models/gemini-2.5-flash``; other collections in full."""
    stream: bool
    alt: str | None
    key: str | None


def _resource(model: str) -> str:
    """The resource name of ``model`` (Rule 1).

    Raises:
        ValueError: not a model of a collection that generates, or an id a server, or a
            proxy in front of it, would read as another resource (sent with our key).
    """
    segments = model.strip("/").split("/")
    if len(segments) == 1:
        segments.insert(0, "models")
    names = segments[-2::-2]  # the collections, from the last: the ids are between them
    if tuple(reversed(names)) not in _COLLECTIONS or len(segments) != 2 * len(names):
        raise ValueError(
            f"model {model!r}: not a resource that generates (models/ID, tunedModels/ID, "
            "Vertex AI's projects/P/locations/L/publishers/P/models/ID or .../endpoints/ID)"
        )
    for id_ in segments[1::2]:
        problem = _id_problem(id_)
        if problem is not None:
            raise ValueError(f"model {model!r}: {problem}")
    return "/".join(segments)


_COLLECTIONS: Final = frozenset(
    (
        ("models",),
        ("tunedModels",),
        ("projects", "locations", "publishers", "models"),  # Vertex AI's
        ("projects", "locations", "endpoints"),
    )
)
"""The collections whose resources generate (Rule 1), as the path names them."""


def _id_problem(id_: str) -> str | None:
    """What makes ``id_`` (decoded) no model id a path may carry (Rules 1 and 3), or ``None``."""
    if any(c in id_ for c in "/\\%;") or id_ in ("", ".", ".."):
        return (
            f"the model id {id_!r} must be one path segment (no '/', '\\', '%' or ';'; not "
            "empty, '.' or '..')"
        )
    if any(c < " " or c == "\x7f" for c in id_):
        return f"the model id {id_!r} holds a control character"
    return None


def target(model: str, *, stream: bool = True, version: str = "v1beta") -> str:
    """The request target for ``model`` (Rule 1): streaming with ``alt=sse``.

    Raises:
        ValueError: ``model`` or ``version`` would make a path that means another.
    """
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise ValueError(f"version must be the API's (v1beta, v1, ...), not {version!r}")
    path = f"/{version}/{urllib.parse.quote(_resource(model), safe=_SAFE)}"
    return path + (":streamGenerateContent?alt=sse" if stream else ":generateContent")


def headers(api_key: str | None, *, content_length: int | None = None) -> list[tuple[str, str]]:
    """The request headers a Gemini server needs (Rule 2); the transport adds Host.

    Raises:
        ValueError: the key holds a line break (it would split the header).
    """
    out = [("content-type", "application/json")]
    if content_length is not None:
        out.append(("content-length", str(content_length)))
    if api_key:
        if "\r" in api_key or "\n" in api_key:
            raise ValueError("api_key holds a line break")
        out.append((API_KEY_HEADER, api_key))
    return out


def is_target(path: str) -> bool:
    """Whether a request target's path (no query) is Gemini's generate path (Rule 3's
    grammar), for a server that routes on it; `parse_target` reads it."""
    return _PATH.fullmatch(path) is not None


def parse_target(target: str) -> GeminiTarget:
    """Read a request target (Rule 3), for the server side.

    Raises:
        RequestError: not a Gemini generate target; ``path`` is ``target``.
    """
    try:
        split = urllib.parse.urlsplit(target)
    except ValueError as exc:  # an absolute form's host that is no host ("[::1")
        raise RequestError("target", f"not a request target: {exc}") from None
    m = _PATH.fullmatch(split.path)
    if m is None:
        raise RequestError(
            "target",
            f"{split.path!r} is not /VERSION/models/MODEL:generateContent or "
            ":streamGenerateContent",
        )
    version, resource, method = m.groups()
    collection, _, id_ = resource.partition("/")
    try:
        id_ = urllib.parse.unquote(id_, errors="strict")
    except UnicodeDecodeError:  # (replaced, it would name another model upstream: review 63)
        raise RequestError("target", "the model id is not UTF-8 once decoded") from None
    problem = _id_problem(id_)
    if problem is not None:
        raise RequestError("target", problem)
    resource = f"{collection}/{id_}"
    query = urllib.parse.parse_qs(split.query)
    alt = query.get("alt", [None])[-1]
    if alt not in (None, "json", "sse"):
        raise RequestError("target", f"alt={alt} is not served: only alt=sse or alt=json")
    key = query.get("key", [None])[-1]
    model = resource.removeprefix("models/")
    return GeminiTarget(
        version=version,
        model=model,
        stream=method == "streamGenerateContent",
        alt=alt,
        key=key,
    )
