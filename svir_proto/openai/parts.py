"""The parts of a user message: text, images (from memory or disk, their type checked against
their bytes, or a URL the server fetches) and text files (read while the request is sent).
Wire reference section 2.2.

This module reads files only to measure them and check their type; no other I/O.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable
from typing import Final, Literal, final

import attrs

from ..body import JSONTextFile

__all__ = ["IMAGE_TYPES", "ImageDetail", "ImagePart", "TextFile", "TextPart", "url_image_type"]

ImageDetail = Literal["auto", "low", "high"]
"""OpenAI's ``image_url.detail``: how closely the model looks (and how many tokens it costs)."""
_DETAILS: Final = ("auto", "low", "high")

IMAGE_TYPES: Final = {
    "image/png": ((0, b"\x89PNG\r\n\x1a\n"),),
    "image/jpeg": ((0, b"\xff\xd8\xff"),),
    "image/gif": ((0, b"GIF87a"), (0, b"GIF89a")),
    "image/webp": ((0, b"RIFF"), (8, b"WEBP")),
}
"""The image media types servers take, each with the bytes a file of that type begins with."""
_EXTENSIONS: Final = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


def url_image_type(url: str) -> str | None:
    """The image type the path of ``url`` names by its extension (``.png``...), if any."""
    path = url.split("#", 1)[0].split("?", 1)[0]
    dot = path.rfind(".")
    return _EXTENSIONS.get(path[dot:].lower()) if dot > path.rfind("/") else None


def _sniff(head: bytes) -> str | None:
    for media_type, marks in IMAGE_TYPES.items():
        if media_type == "image/webp":
            if all(head[at : at + len(m)] == m for at, m in marks):
                return media_type
        elif any(head.startswith(m) for _, m in marks):
            return media_type
    return None


def _check_media_type(where: str, declared: str | None, head: bytes, ext: str | None) -> str:
    sniffed = _sniff(head)
    if declared is not None and declared not in IMAGE_TYPES:
        raise ValueError(f"{where}: media type {declared!r} is not one of {sorted(IMAGE_TYPES)}")
    if sniffed is None:
        raise ValueError(f"{where}: the bytes are not a PNG, JPEG, GIF or WebP image")
    if declared is not None and declared != sniffed:
        raise ValueError(f"{where}: declared {declared!r} but the bytes are {sniffed!r}")
    if ext is not None and _EXTENSIONS.get(ext, sniffed) != sniffed:
        raise ValueError(
            f"{where}: the name says {_EXTENSIONS[ext]!r} but the bytes are {sniffed!r}"
        )
    return sniffed


@final
@attrs.frozen(kw_only=True)
class TextPart:
    """Text in a user message."""

    text: str = attrs.field(validator=attrs.validators.instance_of(str))


def _detail(value: ImageDetail | None) -> ImageDetail | None:
    if value is not None and value not in _DETAILS:
        raise ValueError(f"image detail must be one of {_DETAILS} or None, not {value!r}")
    return value


@final
@attrs.frozen(kw_only=True)
class ImagePart:
    """An image, from bytes in memory or a file on disk (its media type checked against its
    first bytes), or at a URL the server fetches itself. Use `from_bytes`, `from_path` or
    `from_url`.

    Attributes:
        media_type: the image's type (``""`` for a URL: the server finds it out).
        detail: OpenAI's ``detail`` (`ImageDetail`), sent when set.
    """

    media_type: str
    data: bytes | None = None
    path: str | None = None
    size: int = 0
    url: str | None = None
    detail: ImageDetail | None = attrs.field(default=None, converter=_detail)

    @classmethod
    def from_bytes(
        cls, data: bytes, media_type: str | None = None, *, detail: ImageDetail | None = None
    ) -> ImagePart:
        if not isinstance(data, bytes):
            raise TypeError(f"image data must be bytes, not {type(data).__name__}")
        checked = _check_media_type("image", media_type, data[:16], None)
        return cls(media_type=checked, data=data, size=len(data), detail=detail)

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str],
        media_type: str | None = None,
        *,
        detail: ImageDetail | None = None,
    ) -> ImagePart:
        path = os.fspath(path)
        with open(path, "rb") as f:
            head = f.read(16)
        ext = os.path.splitext(path)[1].lower() or None
        checked = _check_media_type(f"image {path}", media_type, head, ext)
        return cls(media_type=checked, path=path, size=os.stat(path).st_size, detail=detail)

    @classmethod
    def from_url(cls, url: str, *, detail: ImageDetail | None = None) -> ImagePart:
        """An image by URL: ``http``/``https`` (the server fetches it; local servers may not),
        or a ``data:`` URL, which is decoded and checked as `from_bytes` checks bytes.

        Raises:
            ValueError: another scheme, or a ``data:`` URL that is not base64 of an image.
        """
        if not isinstance(url, str):
            raise TypeError(f"an image URL must be a str, not {type(url).__name__}")
        if url.startswith("data:"):
            head, _, payload = url[5:].partition(",")
            media_type, _, encoding = head.partition(";")
            if encoding != "base64":
                raise ValueError("a data: image URL must be base64 (data:<type>;base64,...)")
            try:
                data = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ValueError(f"a data: image URL is not base64: {exc}") from exc
            return cls.from_bytes(data, media_type or None, detail=detail)
        if not url.startswith(("http://", "https://")) or any(c in url for c in " \r\n"):
            raise ValueError(f"an image URL must be http, https or data: {url[:80]!r}")
        return cls(media_type="", url=url, detail=detail)


@final
@attrs.frozen(kw_only=True)
class TextFile:
    """A text file sent inside the message text as ``<file name="NAME">\\n...\\n</file>``.

    Give ``path`` (read while sending, checked to be UTF-8 now) or ``text``; ``name`` defaults
    to the path's file name.
    """

    name: str
    path: str | None = None
    text: str | None = None

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], name: str | None = None) -> TextFile:
        path = os.fspath(path)
        JSONTextFile(path)  # measure now: not UTF-8 is an error at construction
        return cls(name=name or os.path.basename(path), path=path)

    @classmethod
    def from_text(cls, text: str, name: str) -> TextFile:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return cls(name=name, text=text)

    def opening(self) -> str:
        return '<file name="' + self.name.replace("&", "&amp;").replace('"', "&quot;") + '">\n'


Part = TextPart | ImagePart | TextFile


def content_parts(value: str | Iterable[Part]) -> tuple[Part, ...]:
    if isinstance(value, str):
        return (TextPart(text=value),)
    parts = tuple(value)
    for i, part in enumerate(parts):
        if not isinstance(part, (TextPart, ImagePart, TextFile)):
            raise TypeError(f"content[{i}] must be a TextPart, ImagePart or TextFile, not {part!r}")
    return parts
