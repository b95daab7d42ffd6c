"""Hypothesis: a model listing of every API (`ModelsRequest`) through `ClientConnection`, framed
any way and split into reads anywhere: the models its API's reader reads from the body; random
bytes after its head raise only `PeerProtocolError`, the same however split; and a listing
written in one API reads back in every API as the same models."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import ClientConnection, ModelsListed, ModelsRequest, PeerProtocolError
from svir_proto.dialects import dialect
from svir_proto.openai import Endpoint, ModelInfo, model_kind
from tests.helpers import run, split_at, splits
from tests.transports.server import listed

EP = Endpoint.parse("http://127.0.0.1:1/v1", api_key="k")
LISTINGS = [
    ("chat", "openai"),
    ("chat", "llama-cpp"),
    ("messages", "anthropic"),
    ("messages", "anthropic-paged"),
    ("gemini", "gemini"),
    ("gemini", "gemini-paged"),
]


@st.composite
def responses(draw: st.DrawFn, body: bytes) -> bytes:
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    if draw(st.booleans()):
        return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
    cuts = draw(st.lists(st.integers(0, len(body)), max_size=20))
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in split_at(body, cuts))
    return f"{head}Transfer-Encoding: chunked\r\n\r\n".encode() + chunks + b"0\r\n\r\n"


def connection(upstream: str) -> ClientConnection:
    conn = ClientConnection(EP)
    b"".join(conn.send(ModelsRequest(dialect=upstream)))  # type: ignore[arg-type]
    return conn


@given(st.sampled_from(LISTINGS), st.data())
def test_any_framing_any_split_gives_the_apis_models(
    listing: tuple[str, str], data: st.DataObject
) -> None:
    upstream, api = listing
    body = listed(api, "/models")[1]
    reader = dialect(upstream).models
    assert reader is not None
    want = reader.read(body)
    conn = connection(upstream)
    events = run(conn, data.draw(splits(data.draw(responses(body)))))
    (last,) = [e for e in events if isinstance(e, ModelsListed)]
    assert (last.models, last.more) == want
    assert last.more is api.endswith("-paged")


@given(st.sampled_from(["chat", "messages", "gemini"]), st.binary(max_size=300), st.data())
def test_random_bodies_raise_only_remote_errors_the_same_way_however_split(
    upstream: str, raw: bytes, data: st.DataObject
) -> None:
    stream = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(raw) + raw
    outcomes = []
    for pieces in ([stream], data.draw(splits(stream))):
        conn = connection(upstream)
        try:
            outcomes.append(("ok", [e for e in run(conn, pieces) if isinstance(e, ModelsListed)]))
        except PeerProtocolError as exc:
            outcomes.append(("error", str(exc)))
    assert outcomes[0] == outcomes[1]


ids = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20
).filter(lambda s: not s.startswith("models/"))


@given(
    st.lists(
        st.tuples(ids, st.none() | st.text(max_size=10), st.none() | st.integers(0, 2**31)),
        max_size=5,
    ),
    st.sampled_from(["chat", "messages", "gemini"]),
    st.sampled_from(["chat", "messages", "gemini"]),
)
def test_a_listing_written_in_one_api_reads_back_in_another(
    entries: list[tuple[str, str | None, int | None]], first: str, then: str
) -> None:
    """What each API has a field for survives: the ids always, a name where both have one
    (every API), the time where both have one (not Gemini's)."""
    models = tuple(
        ModelInfo(id=i, name=name, kind=model_kind(i), created=created)
        for i, name, created in entries
    )
    one, two = dialect(first).models, dialect(then).models
    assert one is not None
    assert two is not None
    back, more = two.read(two.write(one.read(one.write(models))[0]))
    assert more is False
    assert [m.id for m in back] == [m.id for m in models]
    if "gemini" not in (first, then):
        assert [m.created or 0 for m in back] == [m.created or 0 for m in models]
