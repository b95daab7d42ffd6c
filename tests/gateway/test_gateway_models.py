"""The model listing through the gateway, in every client's API from every upstream's (attack
69 F8: a Gemini upstream's listing reached openai's and anthropic's SDKs as an empty list, and
google-genai's own listing path was a 404). Real SDKs (openai, anthropic, google-genai) list
and get models from the gateway in front of our replay server, which answers each API's
listing (`tests.transports.server.listed`): what each reads is what the upstream's API's
reader (`ModelsAPI.read`) reads from the same bytes."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest

from svir_proto.dialects import dialect
from svir_proto.openai.endpoint import Endpoint, ModelInfo
from tests.gateway.test_gateway_server import backend, gateway  # noqa: F401  (both servers)
from tests.transports.server import ReplayServer, listed

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")

UPSTREAMS = [  # (the upstream's dialect, the listing its server answers)
    ("chat", "openai"),
    ("chat", "llama-cpp"),
    ("responses", "openai"),
    ("llm-stream", "openai"),
    ("messages", "anthropic"),
    ("gemini", "gemini"),
]
TOKEN = "the-gateways-token"


def models_of(upstream: str, api: str) -> tuple[ModelInfo, ...]:
    """What the upstream's API's reader reads from its listing."""
    reader = dialect(upstream).models
    assert reader is not None
    return reader.read(listed(api, "/models")[1])[0]


@contextmanager
def through(replay: ReplayServer, upstream: str, api: str, **options: Any) -> Iterator[str]:
    """The gateway's root URL, in front of ``api``'s listing spoken by a ``upstream`` server."""
    with gateway(replay.base("listing", api), upstream_dialect=upstream, **options) as (base, _):
        yield base.removesuffix("/v1")


def genai_client(root: str, key: str = "k") -> Any:
    from google.genai import types

    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=root))


def asked_of(replay: ReplayServer, request_id: str) -> list[Any]:
    """What the gateway asked the upstream for the request it answered with ``request_id``
    (the replay server serves a module's tests; the readiness probes carry no id)."""
    return [r for r in replay.requests if r.headers.get("x-request-id") == request_id]


def head(root: str, method: str, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    where = urlsplit(root)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        fields: dict[str, str] = {}
        for k, v in response.getheaders():  # (a repeated field's values joined: RFC 9110 5.3)
            fields[k.lower()] = f"{fields[k.lower()]}, {v}" if k.lower() in fields else v
        return response.status, fields, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(("upstream", "api"), UPSTREAMS)
def test_every_sdk_lists_the_upstreams_models(
    replay: ReplayServer, upstream: str, api: str
) -> None:
    want = models_of(upstream, api)
    ids = [m.id for m in want]
    with through(replay, upstream, api) as root:
        with openai.OpenAI(base_url=root + "/v1", api_key="k", max_retries=0) as oc:
            said = list(oc.models.list())
            assert [m.id for m in said] == ids
            assert [m.created for m in said] == [m.created or 0 for m in want]
        with anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as ac:
            said = list(ac.models.list())
            assert [m.id for m in said] == ids
            assert [m.display_name for m in said] == [m.name or m.id for m in want]
        gc = genai_client(root)
        said = list(gc.models.list())
        assert [m.name for m in said] == [f"models/{i}" for i in ids]
        assert [m.display_name for m in said] == [m.name or m.id for m in want]


@pytest.mark.parametrize(("upstream", "api"), UPSTREAMS)
def test_every_sdk_gets_one_model_and_a_404_for_another(
    replay: ReplayServer, upstream: str, api: str
) -> None:
    first = models_of(upstream, api)[0]
    with through(replay, upstream, api) as root:
        with openai.OpenAI(base_url=root + "/v1", api_key="k", max_retries=0) as oc:
            assert oc.models.retrieve(first.id).id == first.id
            with pytest.raises(openai.NotFoundError, match="no nothing-here"):
                oc.models.retrieve("nothing-here")
        with anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as ac:
            model = ac.models.retrieve(first.id)
            assert (model.id, model.type) == (first.id, "model")
            with pytest.raises(anthropic.NotFoundError, match="no nothing-here"):
                ac.models.retrieve("nothing-here")
        gc = genai_client(root)
        assert gc.models.get(model=first.id).name == f"models/{first.id}"
        with pytest.raises(genai.errors.ClientError, match="no nothing-here") as caught:
            gc.models.get(model="nothing-here")
        assert caught.value.code == 404


@pytest.mark.parametrize(
    ("upstream", "api", "key", "value"),
    [
        ("messages", "anthropic", "x-api-key", "up-key"),
        ("gemini", "gemini", "x-goog-api-key", "up-key"),
        ("chat", "openai", "authorization", "Bearer up-key"),
    ],
)
def test_the_upstreams_key_goes_where_its_api_takes_it(
    replay: ReplayServer, upstream: str, api: str, key: str, value: str
) -> None:
    """The listing was sent with a bearer token whatever the upstream (an Anthropic or Gemini
    server refuses it), and to OpenAI's path (Gemini's is ``/v1beta/models``)."""
    endpoint = Endpoint.parse(replay.base("listing", api), api_key="up-key")
    with gateway(endpoint, upstream_dialect=upstream) as (root, _):
        status, got, _ = head(root.removesuffix("/v1"), "GET", "/v1/models")
    assert status == 200
    (sent,) = asked_of(replay, got["x-request-id"])
    assert sent.headers.get(key) == value
    if upstream == "messages":
        assert sent.headers.get("anthropic-version")
        assert "authorization" not in sent.headers
    want = {"gemini": "/v1beta/models?pageSize=1000", "messages": "/v1/models?limit=1000"}
    assert sent.target.endswith(want.get(upstream, "/v1/models"))


@pytest.mark.parametrize(
    ("upstream", "api", "path", "headers"),
    [
        ("gemini", "gemini-paged", "/v1/models", {}),
        ("gemini", "gemini-paged", "/v1/models", {"anthropic-version": "2023-06-01"}),
        ("messages", "anthropic-paged", "/v1beta/models", {}),
        ("messages", "anthropic-paged", "/v1/models", {}),
    ],
)
def test_a_translated_listing_says_when_the_upstream_has_more_models(
    replay: ReplayServer, upstream: str, api: str, path: str, headers: dict[str, str]
) -> None:
    with through(replay, upstream, api) as root:
        status, got, body = head(root, "GET", path, **headers)
    assert status == 200
    assert "more models than one answer" in got["svir-lost"]
    doc = json.loads(body)
    listed_ = doc.get("data") or doc.get("models")
    assert len(listed_) == len(models_of(upstream, api.removesuffix("-paged")))
    assert "nextPageToken" not in doc
    assert doc.get("has_more", False) is False


@pytest.mark.parametrize(
    ("upstream", "api", "path", "headers", "asked"),
    [
        (
            "gemini", "gemini-paged", "/v1beta/models?pageSize=1&pageToken=p2&key=the-clients",
            {}, "/v1beta/models?pageSize=1&pageToken=p2",
        ),
        (
            "messages", "anthropic-paged", "/v1/models?limit=1&after_id=claude-x&other=1",
            {"anthropic-version": "2023-06-01"}, "/v1/models?limit=1&after_id=claude-x",
        ),
    ],
)  # fmt: skip
def test_a_listing_of_the_clients_own_api_is_relayed_with_its_page(
    replay: ReplayServer,
    upstream: str,
    api: str,
    path: str,
    headers: dict[str, str],
    asked: str,
) -> None:
    """The same API's listing goes as it came, with the page asked (and nothing else of the
    client's query: a Gemini client's key is the gateway's token, never the upstream's)."""
    with through(replay, upstream, api) as root:
        status, got, body = head(root, "GET", path, **headers)
    assert status == 200
    assert body == listed(api, asked)[1]
    assert "svir-lost" not in got
    (sent,) = asked_of(replay, got["x-request-id"])
    assert sent.target.endswith(asked)


@pytest.mark.parametrize(("upstream", "api"), [("gemini", "gemini"), ("messages", "anthropic")])
def test_a_head_of_a_translated_listing_says_the_gets_length(
    replay: ReplayServer, upstream: str, api: str
) -> None:
    with through(replay, upstream, api) as root:
        got_status, got, body = head(root, "GET", "/v1/models")
        head_status, heads, nothing = head(root, "HEAD", "/v1/models")
    assert (got_status, head_status, nothing) == (200, 200, b"")
    assert heads["content-length"] == got["content-length"] == str(len(body))


def test_each_sdks_key_is_the_gateways_token_on_its_listing(replay: ReplayServer) -> None:
    """The anthropic SDK sends its key as ``x-api-key`` and google-genai as ``x-goog-api-key``,
    on the listing too; a wrong one is refused in the SDK's own error shape."""
    with through(replay, "chat", "openai", token=TOKEN) as root:
        with anthropic.Anthropic(base_url=root, api_key=TOKEN, max_retries=0) as ac:
            assert [m.id for m in ac.models.list()] == [m.id for m in models_of("chat", "openai")]
        with (
            anthropic.Anthropic(base_url=root, api_key="wrong", max_retries=0) as ac,
            pytest.raises(anthropic.AuthenticationError),
        ):
            list(ac.models.list())
        gc = genai_client(root, TOKEN)  # (the pager's client: closed once it is collected)
        assert len(list(gc.models.list())) == 3
        wrong = genai_client(root, "wrong")
        with pytest.raises(genai.errors.ClientError) as caught:
            list(wrong.models.list())
        assert caught.value.code == 401


@pytest.mark.parametrize(
    ("upstream", "api", "problem"),
    [("messages", "gemini", "no 'data' array"), ("gemini", "openai", "not Gemini's")],
)
def test_a_listing_the_upstreams_api_does_not_read_is_a_502(
    replay: ReplayServer, upstream: str, api: str, problem: str
) -> None:
    """A listing of another API's shape than the upstream's: Gemini's from a server said to
    speak Anthropic's API, OpenAI's from one said to speak Gemini's (review 72 3: it read as
    an empty listing, a 200 with no models; the readiness probe took it for one too)."""
    with (
        through(replay, upstream, api) as root,
        openai.OpenAI(base_url=root + "/v1", api_key="k", max_retries=0) as oc,
        pytest.raises(openai.APIStatusError, match=problem) as caught,
    ):
        oc.models.list()
    assert caught.value.status_code == 502


@pytest.mark.parametrize(("upstream", "api"), [("gemini", "gemini"), ("messages", "anthropic")])
def test_the_readiness_probe_asks_the_upstreams_own_listing(
    replay: ReplayServer, upstream: str, api: str
) -> None:
    """The probe asked OpenAI's ``/v1/models`` with a bearer token whatever the upstream: an
    Anthropic or Gemini upstream was never ready (its listing has another shape)."""
    with through(replay, upstream, api, probe_interval=0.05) as root:
        for _ in range(400):  # (each probe is a request to a server on loopback)
            status, _, body = head(root, "GET", "/readyz")
            if status == 200:
                break
            time.sleep(0.05)
    assert status == 200, body
    assert b"lists 2 models" in body


def test_times_no_calendar_has_are_no_times(replay: ReplayServer) -> None:
    """Review 72 1: an upstream's ``created`` in milliseconds made the Anthropic listing raise,
    and the anthropic SDK got no answer."""
    with (
        through(replay, "chat", "openai-ms") as root,
        anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as ac,
    ):
        said = list(ac.models.list())
    assert [m.id for m in said] == [m.id for m in models_of("chat", "openai")]
    assert {m.created_at.year for m in said} == {1970}
    assert {m.lifecycle for m in said} == {"active"}


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/v1/models/a\\b", {"anthropic-version": "2023-06-01"}),
        ("/v1/models/a#b", {"x-goog-api-key": "k"}),
        ("/v1/models/a%25252F..%25252F..%25252Fadmin", {}),
        ("/v1beta/models/a%252F..", {}),
        ("/v1beta/models/m:countTokens", {}),
    ],
)
def test_a_model_id_no_path_may_carry_is_a_404_in_the_clients_shape(
    replay: ReplayServer, path: str, headers: dict[str, str]
) -> None:
    """Review 72 2, 6: a translated listing's ``ModelsRequest`` refused ``\\`` and ``#`` with a
    ValueError, and the client got no answer; an id encoded three times went upstream."""
    with through(replay, "chat", "openai") as root:
        before = len(replay.requests)
        status, _, body = head(root, "GET", path, **headers)
    assert status == 404, body
    error = json.loads(body)
    assert "not_found" in json.dumps(error) or error["error"]["status"] == "NOT_FOUND"
    assert not [r for r in replay.requests[before:] if "/models/" in r.target]


@pytest.mark.parametrize("path", ["/v1/models/veo/operations/op", "/v1/models/m:countTokens"])
def test_an_id_goes_to_geminis_api_as_one_segment(replay: ReplayServer, path: str) -> None:
    """Review 72 8: ``/v1/models/{id}`` relayed ``veo/operations/op`` to a Gemini upstream,
    another of its resources, with the gateway's key."""
    with through(replay, "gemini", "gemini") as root:
        before = len(replay.requests)
        status, _, body = head(root, "GET", path, **{"x-goog-api-key": "k"})
    assert status == 404, body
    assert json.loads(body)["error"]["status"] == "NOT_FOUND"
    assert not [r for r in replay.requests[before:] if "/models/" in r.target]


def test_a_translated_listing_says_what_it_could_not_write(replay: ReplayServer) -> None:
    """Review 72 4, 7: what a translation drops, and a page it does not serve, are said."""
    with through(replay, "gemini", "gemini") as root:
        status, got, body = head(
            root, "GET", "/v1/models?limit=1&after_id=x", **{"anthropic-version": "2023-06-01"}
        )
    assert status == 200
    lost = got["svir-lost"]
    assert "the listing is gemini's, written in anthropic's" in lost
    assert "gives no creation times" in lost
    assert "the page asked (after_id, limit) is not served" in lost
    assert len(json.loads(body)["data"]) == 2


def test_a_probe_loop_whose_cancel_was_lost_ends_at_its_next_turn() -> None:
    """asyncio's ``wait_for`` before Python 3.12 can return a result that came as it was
    cancelled: the probe loop then went on, and the event loop's close waited for it for ever
    (a gateway stopped as its first probe was answered: this module's tests hung one run in
    four). The loop ends at its next turn once the server stops."""
    import asyncio

    from svir_proto.transports.gateway import GatewayServer

    server = GatewayServer(Endpoint.parse("http://127.0.0.1:9"), probe_timeout=1.0)
    turns: list[float] = []

    async def sleep(seconds: float) -> None:  # the server stops while this turn's probe ran
        turns.append(seconds)
        server._probing = False

    asyncio.run(server._probe_loop(sleep))
    assert len(turns) == 1
    assert server.state.readiness.ready is False


def test_a_gemini_client_is_told_which_models_its_paths_cannot_name(
    replay: ReplayServer,
) -> None:
    """Attack 73 F3: a listed model google-genai cannot call is listed without methods, and
    the listing says how many there are (``ft:gpt-4.1-mini:acme::Bx1`` of OpenAI's)."""
    with through(replay, "chat", "openai") as root:
        status, got, body = head(root, "GET", "/v1beta/models")
    assert status == 200
    assert "1 of the models have ids a Gemini path cannot name" in got["svir-lost"]
    methods = {m["name"]: m["supportedGenerationMethods"] for m in json.loads(body)["models"]}
    assert methods["models/ft:gpt-4.1-mini:acme::Bx1"] == []
    assert methods["models/gpt-4.1-mini-2025-04-14"]


@pytest.mark.parametrize("version", ["v1beta", "v1alpha"])
def test_one_model_on_geminis_own_path_is_relayed(replay: ReplayServer, version: str) -> None:
    with through(replay, "gemini", "gemini") as root:
        status, got, body = head(root, "GET", f"/{version}/models/gemini-2.5-flash")
    assert status == 200
    assert body == listed("gemini", "/models/gemini-2.5-flash")[1]
    (sent,) = asked_of(replay, got["x-request-id"])
    assert sent.target.endswith(f"/{version}/models/gemini-2.5-flash")
