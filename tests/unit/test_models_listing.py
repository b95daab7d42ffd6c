"""The model listing of each API (`svir_proto.dialects.ModelsAPI`), read and written: what each
reader takes and refuses, and the `ModelsRequest` an `Exchange` sends for each."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import Exchange, ModelsRequest, PeerProtocolError
from svir_proto._models import path_id
from svir_proto.anthropic import models as anthropic_models
from svir_proto.dialects import dialect
from svir_proto.gemini import models as gemini_models
from svir_proto.openai import Endpoint, ModelInfo, ModelKind, parse_models
from svir_proto.openai import models as openai_models

EP = Endpoint.parse("https://api.example.com/v1", api_key="k")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("2025-02-19T00:00:00Z", 1739923200),
        ("2025-02-19T00:00:00.123456789Z", 1739923200),
        ("2025-02-19T01:00:00+01:00", 1739923200),
        ("2025-02-19T00:00:00", 1739923200),  # no zone: UTC
        ("2025-02-19T00:00:00.5z", 1739923200),
        ("yesterday", None),
        ("", None),
        (17, None),
        ("2025-02-19T00:00:00Z" + " " * 60, None),  # longer than any time
    ],
)
def test_anthropic_times_read_as_seconds(value: object, seconds: int | None) -> None:
    body = json.dumps({"id": "c", "created_at": value}).encode()
    (model,), more = anthropic_models.read_models(body, one=True)
    assert (model.created, more) == (seconds, False)


def test_anthropic_writes_the_epoch_and_the_id_where_nothing_was_said() -> None:
    model = ModelInfo(id="x", name=None, kind=ModelKind.CHAT)
    assert json.loads(anthropic_models.models_json([model], one=True)) == {
        "type": "model", "id": "x", "display_name": "x", "created_at": "1970-01-01T00:00:00Z",
        "lifecycle": "active",
    }  # fmt: skip
    assert json.loads(anthropic_models.models_json([])) == {
        "data": [], "has_more": False, "first_id": None, "last_id": None,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("api", "body", "one", "problem"),
    [
        (openai_models, b"nope", False, "the model list is not JSON"),
        (openai_models, b"{", True, "the model is not JSON"),
        (openai_models, b"[]", False, "no 'data' array"),
        (openai_models, b'{"data": [{"id": ""}]}', False, "data[0] has no string 'id'"),
        (openai_models, b'{"object": "model"}', True, "the model has no string 'id'"),
        (anthropic_models, b'{"models": []}', False, "no 'data' array"),
        (anthropic_models, b'{"data": [7]}', False, "data[0] has no string 'id'"),
        (anthropic_models, b'"x"', True, "the model has no string 'id'"),
        (gemini_models, b"[]", False, "not Gemini's"),
        (gemini_models, b'{"object": "list", "data": []}', False, "not Gemini's .*'data'"),
        (gemini_models, b'{"error": {"code": 500}}', False, "not Gemini's .*'error'"),
        (gemini_models, b'{"models": [{"name": "models/"}]}', False, "models.0. has no string"),
        (gemini_models, b'{"models": {}}', False, "'models' is not an array"),
        (gemini_models, b'{"models": [{"id": "x"}]}', False, "models[0] has no string 'name'"),
        (gemini_models, b'{"name": 3}', True, "the model has no string 'name'"),
        (gemini_models, b"[" * 600 + b"]" * 600, False, "the model list is not JSON"),
    ],
)
def test_a_body_of_another_shape_is_a_peer_error_that_says_what(
    api: object, body: bytes, one: bool, problem: str
) -> None:
    with pytest.raises(PeerProtocolError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        api.read_models(body, one=one)  # type: ignore[attr-defined]


def test_gemini_reads_an_empty_listing_and_its_next_page() -> None:
    assert gemini_models.read_models(b"{}") == ((), False)
    models, more = gemini_models.read_models(
        b'{"models": [{"name": "models/m"}, {"name": "tunedModels/t"}], "nextPageToken": "x"}'
    )
    assert ([m.id for m in models], more) == (["m", "tunedModels/t"], True)
    assert gemini_models.read_models(b'{"nextPageToken": ""}') == ((), False)
    written = json.loads(gemini_models.models_json(models))
    assert [m["name"] for m in written["models"]] == ["models/m", "tunedModels/t"]


def test_gemini_says_which_models_generate() -> None:
    written = json.loads(
        gemini_models.models_json(
            [
                ModelInfo(id="chat", name="Chat", kind=ModelKind.CHAT),
                ModelInfo(id="bge-embed", name=None, kind=ModelKind.EMBEDDING),
            ]
        )
    )
    assert written == {
        "models": [
            {
                "name": "models/chat",
                "displayName": "Chat",
                "supportedGenerationMethods": ["generateContent", "streamGenerateContent"],
            },
            {
                "name": "models/bge-embed",
                "displayName": "bge-embed",
                "supportedGenerationMethods": [],
            },
        ]
    }


def test_openai_keeps_what_it_has_a_field_for() -> None:
    body = b'{"data": [{"id": "m", "name": "M", "created": 5, "owned_by": "me", "root": "r"}]}'
    (model,) = parse_models(body)
    assert (model.id, model.name, model.created, model.owned_by) == ("m", "M", 5, "me")
    assert json.loads(openai_models.models_json([model], one=True)) == {
        "id": "m", "object": "model", "created": 5, "owned_by": "me", "name": "M",
    }  # fmt: skip
    plain = ModelInfo(id="p", name=None, kind=ModelKind.CHAT, created=None)
    assert json.loads(openai_models.models_json([plain])) == {
        "object": "list",
        "data": [{"id": "p", "object": "model", "created": 0, "owned_by": "unknown"}],
    }


@pytest.mark.parametrize(
    ("request_", "target", "key"),
    [
        (ModelsRequest(), "/v1/models", ("authorization", "Bearer k")),
        (ModelsRequest(dialect="responses", model="org/m"), "/v1/models/org/m", None),
        (ModelsRequest(dialect="messages"), "/v1/models?limit=1000", ("x-api-key", "k")),
        (ModelsRequest(dialect="messages", model="c"), "/v1/models/c", ("x-api-key", "k")),
        (ModelsRequest(dialect="gemini"), "/v1beta/models?pageSize=1000", ("x-goog-api-key", "k")),
        (ModelsRequest(dialect="gemini", model="g"), "/v1beta/models/g", None),
        (ModelsRequest(dialect="llm-stream"), "/v1/models", ("authorization", "Bearer k")),
    ],
)
def test_each_api_is_asked_where_it_lists_with_its_key(
    request_: ModelsRequest, target: str, key: tuple[str, str] | None
) -> None:
    exchange = Exchange(EP, request_)
    assert (exchange.method, exchange.target) == ("GET", target)
    if key is not None:
        assert key in [(k.lower(), v) for k, v in exchange.headers]
    spec = dialect(request_.dialect)
    assert spec.models is not None


@pytest.mark.parametrize("model", ["", "a?b", "a#b", "a\\b", "a\nb", "a\x7fb", "../files", "a/./b"])
def test_a_model_no_path_can_carry_is_refused(model: str) -> None:
    with pytest.raises(ValueError, match="model must be an id a path can carry"):
        ModelsRequest(model=model)


@pytest.mark.parametrize("created", [10**12, -1, 2**63, 1.5, True])
def test_a_creation_time_out_of_any_calendar_is_no_time(created: object) -> None:
    """Review 72 1: an OpenAI upstream's ``created`` in milliseconds made the Anthropic
    listing's ``created_at`` raise OverflowError, and its client got no answer."""
    body = json.dumps({"data": [{"id": "m", "created": created}]}).encode()
    (model,) = parse_models(body)
    assert model.created is None
    assert json.loads(anthropic_models.models_json([model]))["data"][0]["created_at"] == (
        "1970-01-01T00:00:00Z"
    )


def test_anthropic_times_before_the_epoch_are_no_time() -> None:
    body = b'{"id": "c", "created_at": "0001-01-01T00:00:00Z"}'
    assert anthropic_models.read_models(body, one=True)[0][0].created is None
    late = ModelInfo(id="x", name=None, kind=ModelKind.CHAT, created=253_402_300_799)
    assert anthropic_models.models_json([late], one=True).count(b"9999-12-31T23:59:59Z") == 1


def test_token_limits_go_from_one_api_to_the_other() -> None:
    """Review 72 4: Gemini's limits were dropped, and the Anthropic entry lacked the
    ``lifecycle`` the anthropic SDK requires."""
    gemini = b'{"models": [{"name": "models/g", "inputTokenLimit": 1000, "outputTokenLimit": 100}]}'
    (model,), _ = gemini_models.read_models(gemini)
    assert (model.input_limit, model.output_limit) == (1000, 100)
    entry = json.loads(anthropic_models.models_json([model]))["data"][0]
    assert (entry["max_input_tokens"], entry["max_tokens"], entry["lifecycle"]) == (
        1000,
        100,
        "active",
    )
    (back,), _ = anthropic_models.read_models(anthropic_models.models_json([model]))
    assert (back.input_limit, back.output_limit) == (1000, 100)
    again = json.loads(gemini_models.models_json([back], one=True))
    assert (again["inputTokenLimit"], again["outputTokenLimit"]) == (1000, 100)
    assert json.loads(openai_models.models_json([back], one=True)).keys() == {
        "id",
        "object",
        "created",
        "owned_by",
        "name",
    }  # fmt: skip  (OpenAI's listing has no field for a limit)


@pytest.mark.parametrize(
    ("api", "body"),
    [
        (openai_models, {"data": [{"id": f"m{i}"} for i in range(10_001)]}),
        (anthropic_models, {"data": [{"id": f"m{i}"} for i in range(10_001)]}),
        (gemini_models, {"models": [{"name": f"models/m{i}"} for i in range(10_001)]}),
    ],
)
def test_a_listing_is_read_to_its_bound_and_says_it_had_more(api: Any, body: object) -> None:
    """Review 72 5: 260,000 tiny entries, written again, made 30 MB and stalled the loop."""
    models, more = api.read_models(json.dumps(body).encode())
    assert (len(models), more) == (10_000, True)


@pytest.mark.parametrize(
    ("model", "gemini", "ok"),
    [
        ("org/name", False, True),
        ("org/name", True, False),
        ("m:countTokens", True, False),
        ("llama3:8b", False, True),
        ("a%25252F..%25252F..%25252Fadmin", False, False),  # decoded three times: a/../../admin
        ("a%2525252Fb", False, False),  # still encoded after three
        ("a%2Fb", False, True),
        ("..;x", False, False),
        ("a%20b", False, False),
        ("a%0Db", False, False),
        ("a%3Fb", False, False),
    ],
)
def test_what_a_path_may_carry_as_a_model_id(model: str, gemini: bool, ok: bool) -> None:
    """Review 72 2, 6, 8, 9: one rule for the gateway's routes and `ModelsRequest`."""
    assert path_id(model, one=gemini) is ok
    if ok:
        ModelsRequest(dialect="gemini" if gemini else "chat", model=model)
    else:
        with pytest.raises(ValueError, match="an id a path can carry"):
            ModelsRequest(dialect="gemini" if gemini else "chat", model=model)


def test_a_gemini_listing_gives_no_methods_for_an_id_its_paths_cannot_name() -> None:
    """Attack 73 F3: vLLM's ``org/name`` and Ollama's ``name:tag`` were listed as models that
    generate, and every call of google-genai to them was a 404."""
    models = [
        ModelInfo(id=i, name=None, kind=ModelKind.CHAT)
        for i in ("meta-llama/Llama-3.1-8B-Instruct", "llama3.2:latest", "qwen3")
    ]
    written = json.loads(gemini_models.models_json(models))["models"]
    assert [bool(m["supportedGenerationMethods"]) for m in written] == [False, False, True]
