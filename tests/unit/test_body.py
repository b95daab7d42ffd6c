"""RequestBody: exact lengths before the first byte, pieces from disk, honest failures."""

from __future__ import annotations

import base64
import json
import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto.body import (
    Base64Bytes,
    Base64File,
    BodyChangedError,
    JSONTextFile,
    RequestBody,
    escaped_length,
    splice,
)


@pytest.mark.parametrize("n", range(10))
def test_base64_length_is_four_ceil_n_over_three(n: int, tmp_path: Path) -> None:
    data = os.urandom(n)
    seg = Base64Bytes(data)
    assert seg.length == 4 * -(-n // 3) == len(base64.b64encode(data))
    assert b"".join(seg.pieces(3)) == base64.b64encode(data)
    f = tmp_path / "x.bin"
    f.write_bytes(data)
    assert b"".join(Base64File(f).pieces(6)) == base64.b64encode(data)


@given(st.text())
def test_escaped_length_matches_the_standard_library(text: str) -> None:
    if any("\ud800" <= c <= "\udfff" for c in text):
        return  # lone surrogates are not UTF-8 text
    data = text.encode("utf-8")
    expected = len(json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"))
    assert escaped_length(data) == expected


@given(text=st.text(), piece=st.integers(3, 64))
def test_text_file_pieces_equal_json_dumps(
    text: str, piece: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if any("\ud800" <= c <= "\udfff" for c in text):
        return
    f = tmp_path_factory.mktemp("t") / "f.txt"
    f.write_bytes(text.encode("utf-8"))
    seg = JSONTextFile(f, piece_size=piece)
    out = b"".join(seg.pieces(piece))
    assert out == json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")
    assert seg.length == len(out)


def test_iterating_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    img = tmp_path / "i.bin"
    img.write_bytes(os.urandom(1000))
    body = splice(
        {"a": "x PH1 y", "b": ["PH2"]}, {"PH1": Base64File(img), "PH2": Base64Bytes(b"hi")}
    )
    first = body.read()
    assert first == body.read()
    assert len(first) == body.content_length
    assert all(isinstance(p, bytes) for p in body)


def test_a_file_that_grows_or_shrinks_is_an_error(tmp_path: Path) -> None:
    img = tmp_path / "i.bin"
    img.write_bytes(b"a" * 300)
    body = RequestBody([b"[", Base64File(img), b"]"])
    img.write_bytes(b"a" * 299)
    with pytest.raises(BodyChangedError, match="shorter"):
        body.read()
    img.write_bytes(b"a" * 301)
    with pytest.raises(BodyChangedError, match="longer"):
        body.read()


def test_text_file_must_be_utf8_now_and_when_sent(tmp_path: Path) -> None:
    f = tmp_path / "t.txt"
    f.write_bytes(b"caf\xe9")
    with pytest.raises(ValueError, match="not UTF-8"):
        JSONTextFile(f)
    f.write_bytes(b"cafe")
    seg = JSONTextFile(f)
    f.write_bytes(b"caf\xe9")
    with pytest.raises(BodyChangedError, match="UTF-8"):
        b"".join(seg.pieces(2))
    f.write_bytes(b'ca"e')  # same size, longer once escaped
    with pytest.raises(BodyChangedError, match="changed"):
        b"".join(seg.pieces(2))


def test_splice_needs_each_placeholder_once() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        splice({"a": "PH PH"}, {"PH": Base64Bytes(b"")})
    with pytest.raises(ValueError, match="exactly once"):
        splice({"a": "x"}, {"PH": Base64Bytes(b"")})
    with pytest.raises(ValueError, match="piece_size"):
        RequestBody([b"x"], piece_size=2)


@pytest.mark.slow
def test_memory_stays_near_the_piece_size_for_a_large_image(tmp_path: Path) -> None:
    img = tmp_path / "big.png"
    with img.open("wb") as f:
        for _ in range(24):
            f.write(os.urandom(1 << 20))  # 24 MiB: 32 MiB once in base64
    body = splice({"u": "data:image/png;base64,PH"}, {"PH": Base64File(img)}, piece_size=48 * 1024)
    tracemalloc.start()
    total = 0
    for piece in body:
        total += len(piece)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (
        total
        == body.content_length
        == 4 * -(-(24 << 20) // 3) + len(b'{"u":"data:image/png;base64,"}')
    )
    assert peak < 1 << 20, f"peak {peak} bytes while sending 32 MiB"


def test_async_iteration_gives_the_same_pieces(tmp_path: Path) -> None:
    import anyio

    from svir_proto.body import Base64File

    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 100)
    body = RequestBody([b'{"a":"', Base64File(path), b'"}'], piece_size=300)

    async def collect() -> list[bytes]:
        return [piece async for piece in body]

    pieces = anyio.run(collect)
    assert pieces == list(body)
    assert len(b"".join(pieces)) == body.content_length


def test_read_with_a_size_is_a_files_read_and_starts_over_at_the_end() -> None:
    body = RequestBody([b"abcdefgh", b"ij"], piece_size=3)
    got = [body.read(4) for _ in range(4)]
    assert got == [b"abcd", b"efgh", b"ij", b""]
    assert body.read(100) == b"abcdefghij"  # again from the start, for a retry
    assert body.read() == b"abcdefghij"
