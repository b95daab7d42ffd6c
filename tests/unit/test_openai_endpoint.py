"""Endpoint normalisation (wire reference 1) and the model list (section 6)."""

from __future__ import annotations

import pytest

from svir_proto import PeerProtocolError
from svir_proto.openai import (
    USER_AGENT,
    Endpoint,
    ModelKind,
    merge_headers,
    model_kind,
    parse_models,
    request_headers,
)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:1234",
        "http://localhost:1234/",
        "http://localhost:1234/v1",
        "http://localhost:1234/v1/",
        "http://localhost:1234/v1//",
        "  http://localhost:1234/v1  ",
    ],
)
def test_base_url_forms_normalise_alike(url: str) -> None:
    e = Endpoint.parse(url)
    assert e.models_url == "http://localhost:1234/v1/models"
    assert e.chat_completions_url == "http://localhost:1234/v1/chat/completions"
    assert e.chat_completions_path == "/v1/chat/completions"


def test_prefixes_ports_and_ipv6() -> None:
    e = Endpoint.parse("https://example.test/openai/deployments/x/")
    assert (e.scheme, e.host, e.port, e.prefix) == (
        "https",
        "example.test",
        443,
        "/openai/deployments/x/v1",
    )
    assert e.authority == "example.test"
    assert Endpoint.parse("http://[::1]:8080/v1").authority == "[::1]:8080"
    assert Endpoint.parse("http://h:80").authority == "h"


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("http://user:pw@h/v1", "user or password"),
        ("http://h/v1?x=1", "query"),
        ("http://h/v1?", "query"),
        ("http://h/v1#frag", "fragment"),
        ("ftp://h/v1", "scheme"),
        ("h:1234/v1", "scheme"),
        ("http:///v1", "no host"),
        ("http://h:99999", "port"),
    ],
)
def test_rejected_base_urls(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Endpoint.parse(url)


def test_headers() -> None:
    e = Endpoint.parse("http://h:1/v1", api_key="sk-1")
    assert e.headers(content_length=12) == [
        ("Host", "h:1"),
        ("Accept", "text/event-stream"),
        ("Accept-Encoding", "identity"),  # a client of its own must not be offered gzip
        ("User-Agent", USER_AGENT),
        ("Authorization", "Bearer sk-1"),
        ("Content-Type", "application/json"),
        ("Content-Length", "12"),
    ]
    assert ("Authorization", "Bearer sk-1") not in Endpoint.parse("http://h/v1").headers()
    with pytest.raises(ValueError, match="api_key"):
        Endpoint.parse("http://h", api_key="a\nb")
    assert "sk-1" not in repr(e)


def test_models_and_their_kinds() -> None:
    body = (
        b'{"object":"list","data":['
        b'{"id":"qwen3-8b"},{"id":"text-embedding-nomic-embed-text-v1.5","name":"Nomic"},'
        b'{"id":"bge-reranker-v2"},{"id":"whisper-large-v3"},{"id":"FLUX.1-schnell"},'
        b'{"id":"jina-reranker"},{"id":"kokoro-tts"}]}'
    )
    models = parse_models(body)
    assert [(m.id, m.kind) for m in models] == [
        ("qwen3-8b", ModelKind.CHAT),
        ("text-embedding-nomic-embed-text-v1.5", ModelKind.EMBEDDING),
        ("bge-reranker-v2", ModelKind.EMBEDDING),  # "bge" is checked first: an embedding family
        ("whisper-large-v3", ModelKind.SPEECH),
        ("FLUX.1-schnell", ModelKind.IMAGE),
        ("jina-reranker", ModelKind.RERANKING),
        ("kokoro-tts", ModelKind.SPEECH),
    ]
    assert models[1].name == "Nomic"
    assert model_kind("sdxl-turbo") is ModelKind.IMAGE


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"nope", "not JSON"),
        (b"[]", "no 'data'"),
        (b'{"data":{}}', "no 'data'"),
        (b'{"data":[{"name":"x"}]}', r"data\[0\]"),
    ],
)
def test_malformed_model_lists(body: bytes, match: str) -> None:
    with pytest.raises(PeerProtocolError, match=match):
        parse_models(body)


def test_the_callers_headers_replace_ours_of_the_same_name() -> None:
    e = Endpoint.parse("http://h/v1", api_key="sk-1")
    out = e.headers(
        user_agent="agent/1",
        extra={"authorization": "Bearer other", "OpenAI-Organization": "org-1"},
    )
    assert ("User-Agent", "agent/1") in out
    assert [v for k, v in out if k.lower() == "authorization"] == ["Bearer other"]
    assert out[-1] == ("OpenAI-Organization", "org-1")
    pairs = e.headers(extra=[("x-a", "1"), ("x-a", "2")])  # pairs may repeat a name
    assert pairs[-2:] == [("x-a", "1"), ("x-a", "2")]


@pytest.mark.parametrize(
    ("headers", "error", "match"),
    [
        ({"Content-Length": "3"}, ValueError, "sets this header itself"),
        ({"accept-encoding": "gzip"}, ValueError, "sets this header itself"),
        ({"bad name": "x"}, ValueError, "not a header name"),
        ({"x-a": "one\r\ntwo"}, ValueError, "one line"),
        ({"x-a": 1}, TypeError, "must be str"),
        ([("x-a",)], TypeError, "pair"),
    ],
)
def test_bad_headers_are_refused_naming_them(
    headers: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        request_headers(headers)  # type: ignore[arg-type]


def test_merged_headers_later_layers_win() -> None:
    assert merge_headers({"X-A": "1", "X-B": "1"}, None, {"x-a": "2"}) == (
        ("X-B", "1"),
        ("x-a", "2"),
    )
    assert merge_headers() == ()


def test_from_env_reads_what_openai_python_reads() -> None:
    e = Endpoint.from_env({"OPENAI_BASE_URL": "http://h:8080", "OPENAI_API_KEY": "sk-2"})
    assert (e.authority, e.prefix, e.api_key) == ("h:8080", "/v1", "sk-2")
    default = Endpoint.from_env({"OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""})
    assert default.chat_completions_url == "https://api.openai.com/v1/chat/completions"
    assert default.api_key is None
