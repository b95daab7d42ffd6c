"""The hostile battery of the dialect hub (attack 22): the real ``svir gateway`` on both
backends, attacked through its translating routes (Anthropic Messages, OpenAI Responses,
LLM-Stream, and ``--upstream-dialect`` upstreams), through its bodies prepared off the event
loop, through its upstream pool and its local endpoints.

Every gateway this module starts has its address space bounded (`MEMORY_MB`, by
``RLIMIT_AS`` in the child): a find that makes the gateway take memory without bound must not
take the shared machine's. After each attack `healthy` (the hostile battery's check: alive,
the openai package and an LLM-Stream client served whole, nothing held, a clean log).

The finds are ``xfail(strict=True)``: each docstring says the attack, what the gateway did and
what it should do. The other tests are attacks the gateway survived.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svir_proto.dialects import dialect
from svir_proto.gateway.config import GatewayConfig
from svir_proto.openai.endpoint import Endpoint
from tests.gateway.battery import (
    BACKENDS,
    anomaly_fixture,
    gateway_fixtures,
    tag,
    upstream_fixture,
)
from tests.gateway.hostile_gateway import (
    BAD_LOG,
    Gateway,
    Raw,
    healthy,
    llm_body,
    nothing_held,
    openai_body,
    post,
    request,
    responses,
    wait_until,
)
from tests.gateway.hostile_upstream import OK_TEXT, SSE_HEAD, chunk
from tests.gateway.hub_upstream import (
    HubUpstream,
    anthropic_delta,
    anthropic_end,
    anthropic_start,
    gemini_event,
    responses_events,
)
from tests.gateway.sansio import opened

pytestmark = pytest.mark.slow
LLM = "application/llm-request+json"
MEMORY_MB = 2048
"""The address space each gateway of this module may take (its own, not the machine's)."""


# -- the processes (`battery`) ---------------------------------------------------------------


class BoundedGateway(Gateway):
    """`Gateway` with its address space bounded to `MEMORY_MB` (``RLIMIT_AS``): what it would
    take past the bound is a ``MemoryError`` in it, not the machine's memory."""

    def __init__(self, upstream: str, backend: str, **options: Any) -> None:
        super().__init__(upstream, backend, memory_mb=MEMORY_MB, **options)


@contextlib.contextmanager
def bounded(upstream: str, backend: str, **options: str | None) -> Iterator[BoundedGateway]:
    gw = BoundedGateway(upstream, backend, **options)
    try:
        yield gw
    finally:
        gw.stop()


up = upstream_fixture(HubUpstream)
_gateways, gw = gateway_fixtures(
    lambda up, backend: BoundedGateway(up.base, backend, max_connections="400", max_streams="64")
)
_no_smuggling = anomaly_fixture()


# -- clients ------------------------------------------------------------------------------

TOOL = {"type": "object", "properties": {"q": {"type": "string"}}}


def messages_body(**extra: Any) -> bytes:
    doc = {
        "model": "m", "max_tokens": 16, "stream": True,
        "messages": [{"role": "user", "content": "hi"}], **extra,
    }  # fmt: skip
    return json.dumps(doc).encode()


def responses_body(**extra: Any) -> bytes:
    return json.dumps({"model": "m", "stream": True, "input": "hi", **extra}).encode()


ROUTES = {
    "messages": ("/v1/messages", "application/json"),
    "responses": ("/v1/responses", "application/json"),
    "llm-stream": ("/v1/chat/completions", LLM),
    "openai": ("/v1/chat/completions", "application/json"),
}


def ask(
    gw: Gateway, client: str, body: bytes, rid: str | None = None, *, timeout: float = 60
) -> tuple[int, dict[str, str], bytes]:
    path, kind = ROUTES[client]
    headers = {"Content-Type": kind}
    if rid is not None:
        headers["X-Request-Id"] = rid
    return request(gw, "POST", path, body, headers, timeout=timeout)


def ask_patiently(
    gw: Gateway, client: str, body: bytes, *, timeout: float = 120
) -> tuple[int, dict[str, str], bytes]:
    """`ask` as the vendors' SDKs do: a 503 is asked again after its ``Retry-After``, and so
    is a connection the gateway closed while the body was still going out (it refused the
    request before its end: its 503 may not have been read)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            status, headers, got = ask(gw, client, body, timeout=max(left, 1))
        except (OSError, http.client.HTTPException):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
            continue
        if status != 503 or time.monotonic() > deadline:
            return status, headers, got
        time.sleep(float(headers.get("retry-after", "1")))


def body_for(client: str, **extra: Any) -> bytes:
    if client == "messages":
        return messages_body(**extra)
    if client == "responses":
        return responses_body(**extra)
    if client == "llm-stream":  # no request id in the body: the header's goes upstream
        doc = json.loads(llm_body("m", **extra))
        del doc["metadata"]
        return json.dumps(doc).encode()
    return openai_body(None, **extra)


def sse_events(body: bytes) -> list[tuple[str, str]]:
    """(event name, data) of each event of an SSE body."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        name, data = "message", []
        for line in block.decode("utf-8", "replace").split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            out.append((name, "\n".join(data)))
    return out


def anthropic_text(body: bytes) -> str:
    return "".join(
        json.loads(d)["delta"].get("text", "")
        for n, d in sse_events(body)
        if n == "content_block_delta"
    )


def ended_in_dialect(client: str, body: bytes) -> bool:
    """Whether a streamed answer ended with its dialect's end (success or error)."""
    names = [n for n, _ in sse_events(body)]
    datas = [d for _, d in sse_events(body)]
    if client == "messages":
        return bool(names) and names[-1] in ("message_stop", "error")
    if client == "responses":
        return bool(names) and names[-1] in ("response.completed", "response.failed",
                                             "response.incomplete", "error")  # fmt: skip
    if client == "llm-stream":
        return bool(names) and names[-1] == "stream.end"
    return bool(datas) and datas[-1] == "[DONE]"


# ================================================================================================
# Finds
# ================================================================================================


@pytest.mark.parametrize(("backend", "client"), [("asyncio", "openai"), ("trio", "openai"),
                                                 ("asyncio", "messages")])  # fmt: skip
def test_a_huge_tool_call_index_from_the_upstream_does_not_take_all_memory(
    up: HubUpstream, backend: str, client: str
) -> None:
    """Attack: the upstream answers with one tool call whose ``index`` is 10**12, then
    ``finish_reason: tool_calls`` and ``[DONE]`` (three small chunks).

    What the gateway did (fixed since: the missing indices are counted up to eight,
    `_toolcalls._gaps`): the stream's watcher (relay) or decoder (translated) checks at the
    finish that the indices are contiguous, and names the missing ones with
    ``sorted(set(range(max(wire) + 1)) - set(wire))``: 10**12 ints. Unbounded, the process took
    23 GB and was killed by the kernel's OOM killer (found so, in-process); here, its address
    space bounded, the session raises ``MemoryError``, the connection "failed" (a traceback in
    the log) and the client's answer is cut. Every client of an OpenAI upstream is exposed,
    the plain relay too, and any upstream (or what poses as one) can do it with one request.

    What it should do: refuse the gap in bounded memory (name a few missing indices, or
    none), and end the client's answer with an error in its dialect and its end marker."""
    with bounded(up.base, backend) as g:
        g.set_mark()
        status, _, body = ask(g, client, body_for(client), tag("tool-index:1000000000000"))
        assert g.alive(), "the gateway died"
        assert status == 200, (status, body[:300])
        assert ended_in_dialect(client, body), body[-600:]
        log = g.log_since_mark()
        assert not [x for x in log.splitlines() if BAD_LOG.search(x)], log[-3000:]
        healthy(g)


def _session(upstream_dialect: str) -> Any:
    from svir_proto.gateway import GatewayConfig, GatewaySession, GatewayState
    from svir_proto.openai import Endpoint

    config = GatewayConfig(
        upstream=Endpoint.parse("http://127.0.0.1:1"),
        upstream_dialect=upstream_dialect,  # type: ignore[arg-type]
        allowed_hosts=frozenset({"x"}),
    )
    return GatewaySession(GatewayState(config, new_id=lambda: "r-1"), 0.0)


def _post(path: str, kind: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def _text_events(upstream_dialect: str, n: int) -> tuple[list[bytes], bytes, list[bytes]]:
    if upstream_dialect == "messages":
        return anthropic_start(), anthropic_delta("t" * 65536), []
    if upstream_dialect == "responses":
        start, delta, _ = responses_events(1)
        return start, delta, []
    return [], gemini_event("t" * 65536), []


@pytest.mark.parametrize("upstream_dialect", ["messages", "responses", "gemini"])
def test_sans_io_the_answer_of_a_vendor_upstream_is_not_held(upstream_dialect: str) -> None:
    """Attack: an upstream of another dialect (``--upstream-dialect messages``, ``responses``
    or ``gemini``) streams a long answer: 8 MiB of text, 64 KiB a delta.

    What the gateway did: it passed every delta on, and kept all of it too (the upstream
    dialect's decoder accumulates the text in its `result`: 8 MiB held after 8 MiB relayed;
    25 MiB after 25). Against an OpenAI upstream the same answer holds 0.1 MiB
    (``keep_text=False``). With 256 streams that is up to 16 GiB, bound by nothing the README
    names ("never buffered whole"), outside ``--max-buffered``.

    What it should do: hold no answer text it has passed on, whatever the upstream's dialect."""
    s = _session(upstream_dialect)
    opened(s, _post("/v1/chat/completions", "application/json", openai_body(None)))
    start, delta, _ = _text_events(upstream_dialect, 128)
    tracemalloc.start()
    try:
        got = len(s.upstream_data(SSE_HEAD + b"".join(chunk(e) for e in start), 0.0))
        one = chunk(delta)
        for _ in range(128):
            got += len(s.upstream_data(one, 0.0))
            s.actions.clear()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got > 8 * 1024 * 1024, "the deltas did not reach the client"
    assert held < 2 * 1024 * 1024, f"{held / 2**20:.1f} MiB held after 8 MiB relayed"


def test_a_long_answer_of_a_messages_upstream_reaches_the_client_whole(up: HubUpstream) -> None:
    """Attack: ``--upstream-dialect messages``; the upstream streams a 68 MiB answer (1,088
    deltas of 64 KiB) to an OpenAI client.

    What the gateway did: it relayed 64 MiB, then ended the stream with "the upstream broke
    the protocol: the response is larger than max_result_size (67108864 characters)" and
    ``[DONE]``, the gateway's RSS grown by the answer (the decoder kept all of its text).

    What it should do: pass the answer on whole, holding none of it (as it does for an OpenAI
    upstream: `test_hostile.test_memory_does_not_grow_with_the_answer`)."""
    with bounded(up.base, "asyncio", upstream_dialect="messages") as g:
        import openai

        client = openai.OpenAI(base_url=g.base, api_key="none", max_retries=0, timeout=120)
        try:
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
                extra_headers={"X-Request-Id": tag("anthropic-text:68")},
            )  # fmt: skip
            size, before, peak = 0, g.rss_mb(), 0.0
            for n, c in enumerate(stream):
                if c.choices:
                    size += len(c.choices[0].delta.content or "")
                if n % 64 == 0:
                    peak = max(peak, g.rss_mb())
        finally:
            client.close()
        assert size == 68 * 1024 * 1024, f"{size} characters of {68 * 1024 * 1024}"
        assert peak - before < 48, f"the gateway grew by {peak - before:.0f} MiB"


@pytest.mark.parametrize("args", ["broken", "array"])
def test_an_anthropic_client_never_gets_a_tool_use_input_that_is_not_an_object(
    up: HubUpstream, args: str
) -> None:
    """Attack: an OpenAI upstream answers a Messages client's request (one tool declared) with
    a tool call whose arguments are ``{"q": `` then ``oops`` (not JSON), or ``[1,2]`` (JSON,
    not an object), then ``finish_reason: tool_calls``.

    What the gateway did (fixed since: `anthropic.encoder.an_object`): it passed the
    arguments on as ``input_json_delta`` pieces and ended
    the message with ``stop_reason: tool_use`` and ``message_stop``: a success whose
    ``tool_use.input`` is ``{"q": oops`` or ``[1,2]``. The Messages API's ``input`` is always
    a JSON object; the anthropic SDK parses the joined pieces at ``content_block_stop`` and
    fails (or hands its caller a list).

    What it should do: end the stream with an Anthropic ``error`` event (the upstream broke
    the dialect), as it does for a tool call with no name or a repeated id."""
    with bounded(up.base, "asyncio") as g:
        tools = [{"name": "get", "description": "", "input_schema": TOOL}]
        status, _, body = ask(g, "messages", messages_body(tools=tools), tag(f"tool-args:{args}"))
        assert status == 200, body[:300]
        events = sse_events(body)
        names = [n for n, _ in events]
        if "error" in names:
            return  # refused in the dialect: right
        joined = "".join(
            json.loads(d)["delta"].get("partial_json", "")
            for n, d in events
            if n == "content_block_delta"
        )
        assert names[-1] == "message_stop", names
        value = json.loads(joined)  # the SDK's parse
        assert isinstance(value, dict), f"tool_use.input is {value!r}"


def _abandon(g: Gateway, body: bytes, path: str = "/v1/messages", wait: float = 0.3) -> None:
    """Send a whole translated request, then (once the gateway has read it: a reset drops
    what it has not) reset: its body is being prepared."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    r = Raw(g)
    try:
        r.send(head + body)
        time.sleep(wait)
    finally:
        r.reset()


def _many_messages(mib: int) -> bytes:
    one = {"role": "user", "content": [{"type": "text", "text": "x"}]}
    n = (mib * 1024 * 1024 - 1024) // (len(json.dumps(one)) + 2)
    return messages_body(messages=[one] * n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bodies_whose_clients_left_are_not_prepared_past_the_budget(
    up: HubUpstream, backend: str
) -> None:
    """Attack: ``--max-buffered`` 8 MiB, ``--max-body`` 4 MiB; twelve clients each send a
    whole 4 MiB Messages request (a hundred thousand small messages: over 256 KiB, so it is
    prepared in a worker thread) and reset the connection at once.

    What the gateway did: each client's leaving gave its slot and its share of the budget
    back at once, so the next was admitted, while its body (and, once parsed, its hundred
    thousand messages) stayed in the executor's queue and threads until prepared for nobody:
    the process grew by 400-650 MiB against an 8 MiB budget, and a later client's
    translated request waited behind all of it.

    What it does now: a body being prepared holds its share of the budget until its
    preparation ends, and that share is what parsing it builds (`_cost.parse_cost`: about
    120 MiB for this body), not its bytes: past ``--max-buffered`` alone, it is 413 as it
    comes, before it is read whole; so the memory and the work of prepared bodies stay within
    ``--max-buffered``."""
    body = _many_messages(4)
    with bounded(
        up.base, backend, max_buffered=str(8 * 1024 * 1024), max_body=str(4 * 1024 * 1024)
    ) as g:
        base = g.rss_mb()
        peak = [base]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError, ValueError):
                    peak[0] = max(peak[0], g.rss_mb())
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            for _ in range(12):
                _abandon(g, body)
                # the budget is free again at once: each is admitted
                wait_until(lambda: g.metrics()["svir_gateway_buffered_bytes"] == 0, 20, 0.02)
            time.sleep(1.0)
        finally:
            stop.set()
            watcher.join()
        grown = peak[0] - base
        nothing_held(g, seconds=120)
        assert g.alive()
        assert grown < 8 * 6, f"the gateway grew by {grown:.0f} MiB for an 8 MiB body budget"


# ================================================================================================
# Attacks survived
# ================================================================================================

DEEP = b'{"model":"m","max_tokens":1,"stream":true,"messages":' + b"[" * 100_000 + b"]" * 100_000
HOSTILE_BODIES: dict[str, Callable[[str], bytes]] = {
    "deep": lambda c: DEEP,
    "deep-object": lambda c: b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "invalid-utf8": lambda c: body_for(c).replace(b'"hi"', b'"h\xff\xfei"'),
    "lone-surrogate": lambda c: body_for(c).replace(b'"hi"', b'"h\\ud800i"'),
    "lone-low-surrogate": lambda c: body_for(c).replace(b'"hi"', b'"\\udc00"'),
    "raw-surrogate-utf8": lambda c: body_for(c).replace(b'"hi"', b'"\xed\xa0\x80"'),
    "nul": lambda c: body_for(c).replace(b'"hi"', b'"h\\u0000i"'),
    "huge-float": lambda c: body_for(c, temperature=7).replace(b": 7", b": 1e999"),
    "huge-int": lambda c: body_for(c, max_tokens=7).replace(b": 7", b": " + b"9" * 5000),
    "negative-tokens": lambda c: body_for(c, max_tokens=-1),
    "dup-keys": lambda c: body_for(c)[:-1] + b', "stream": false, "stream": true}',
    "wrong-types": lambda c: json.dumps(
        {"model": 5, "messages": "hi", "stream": "yes", "input": {}}
    ).encode(),
    "array": lambda c: b"[1,2,3]",
    "empty": lambda c: b"",
    "null": lambda c: b"null",
    "trailing": lambda c: body_for(c) + b" {}",
    "bom": lambda c: b"\xef\xbb\xbf" + body_for(c),
    "tools-junk": lambda c: body_for(c, tools=[{"name": 5}, None, [], {"type": "function"}]),
    "images": lambda c: body_for(c, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "%%%"}},
        {"type": "input_image", "image_url": "data:;base64,==="},
        {"type": "image_url", "image_url": {"url": 5}}]}]),
    # a value no check foresaw the type of: a list is not hashable (attack round 32, F1)
    "unhashable": lambda c: body_for(c, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": [], "data": "AAAA"}},
        {"type": "input_image", "image_url": [], "detail": {}},
        {"type": "image_url", "image_url": {"url": [], "detail": []}}]}]),
}  # fmt: skip


@pytest.mark.parametrize("client", ["messages", "responses", "llm-stream"])
@pytest.mark.parametrize("name", list(HOSTILE_BODIES))
def test_a_hostile_translated_body_is_answered(gw: Gateway, client: str, name: str) -> None:
    """Bodies that break JSON or the dialect, on each translating route: a 4xx in the
    client's dialect (or, for what is valid after all, an answer), never a failure."""
    status, _, body = ask(gw, client, HOSTILE_BODIES[name](client), timeout=60)
    assert status in (200, 400, 413, 422), (status, body[:300])
    if status != 200:
        assert body[:1] == b"{", body[:200]
        json.loads(body)
    assert gw.alive()
    log = gw.log_since_mark()
    assert not [x for x in log.splitlines() if BAD_LOG.search(x)], log[-3000:]


def test_after_the_hostile_bodies_the_gateway_is_healthy(gw: Gateway) -> None:
    healthy(gw)


@pytest.mark.parametrize("client", ["messages", "responses", "llm-stream"])
def test_thousands_of_tools_and_messages_are_translated(gw: Gateway, client: str) -> None:
    """Five thousand tools and five thousand messages (over 256 KiB: prepared off the loop)."""
    if client == "messages":
        tools: list[Any] = [{"name": f"t{i}", "input_schema": TOOL} for i in range(5000)]
        msgs: Any = {"messages": [{"role": "user", "content": "hi"}] * 5000}
    elif client == "responses":
        tools = [{"type": "function", "name": f"t{i}", "parameters": TOOL} for i in range(5000)]
        msgs = {"input": [{"role": "user", "content": "hi"}] * 5000}
    else:
        names = tuple(f"t{i}" for i in range(5000))  # llm_body makes the tools of names
        msgs = {"messages": [{"role": "user", "content": "hi"}] * 5000}
        tools = names  # type: ignore[assignment]
    status, _, body = ask(gw, client, body_for(client, tools=tools, **msgs), timeout=90)
    assert status == 200, body[:300]
    assert ended_in_dialect(client, body), body[-300:]
    nothing_held(gw)


def test_many_large_translated_bodies_at_once(gw: Gateway) -> None:
    """Six 1 MiB Messages bodies at once (each prepared in a worker thread, each holding about
    30 MiB of the 128 MiB budget: what parsing it builds): all answered, those the budget
    refused (503) once asked again."""
    body = _many_messages(1)
    results: list[int] = []

    def one() -> None:
        status, _, got = ask_patiently(gw, "messages", body, timeout=150)
        results.append(status if ended_in_dialect("messages", got) else -status)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert results == [200] * 6, results
    healthy(gw)


@pytest.mark.parametrize("when", ["mid-body", "after-body"])
def test_a_client_that_leaves_while_its_large_body_is_read_or_prepared(
    gw: Gateway, when: str
) -> None:
    """A 3 MiB Messages body (about 90 MiB of the budget, parsed), the client reset in the
    middle of it or right after it: the slot and the budget are given back."""
    body = _many_messages(3)
    if when == "after-body":
        _abandon(gw, body)
    else:
        head = (
            "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        r = Raw(gw)
        r.send(head + body[: len(body) // 2])
        time.sleep(0.2)
        r.reset()
    nothing_held(gw, seconds=90)
    healthy(gw)


@pytest.mark.parametrize("client", ["messages", "responses", "llm-stream"])
def test_bad_json_mid_stream_from_the_upstream_is_an_error_in_the_dialect(
    gw: Gateway, client: str
) -> None:
    status, _, body = ask(gw, client, body_for(client), tag("chat-bad-json"))
    assert status == 200, body[:300]
    assert ended_in_dialect(client, body), body[-400:]
    names = [n for n, _ in sse_events(body)]
    assert "error" in names or any("error" in d for _, d in sse_events(body)), names
    healthy(gw)


@pytest.mark.parametrize("client", ["messages", "responses", "llm-stream", "openai"])
def test_an_upstream_stream_split_at_every_byte_is_translated_whole(
    gw: Gateway, client: str
) -> None:
    status, _, body = ask(gw, client, body_for(client), tag("chat-split"), timeout=90)
    assert status == 200, body[:300]
    assert ended_in_dialect(client, body), body[-300:]
    if client == "messages":
        assert anthropic_text(body) == OK_TEXT
    nothing_held(gw)


@pytest.mark.parametrize("client", ["messages", "responses", "llm-stream", "openai"])
def test_a_surrogate_pair_cut_between_two_chunks_is_one_character(gw: Gateway, client: str) -> None:
    """Audit 36 r07: a JavaScript server's pair cut in UTF-16 units, two valid chunks. A
    translated client gets the character (it got an error before); an OpenAI client gets the
    upstream's bytes, halves and all, to join as a JavaScript client does."""
    status, _, body = ask(gw, client, body_for(client), tag("chat-cut-pair"))
    assert status == 200, body[:300]
    assert ended_in_dialect(client, body), body[-300:]
    if client == "openai":
        assert b'"A\\ud83d"' in body
        assert b'"\\ude00B"' in body
    else:
        decoder = dialect(client).decoder()  # (the clients' names are the dialects')
        decoder.feed(body)
        decoder.close()
        assert decoder.result.text == "A\U0001f600B"
        assert decoder.result.complete
    healthy(gw)


@pytest.mark.parametrize("client", ["messages", "responses", "llm-stream"])
def test_a_gap_in_the_tool_call_indices_ends_in_the_dialect(gw: Gateway, client: str) -> None:
    status, _, body = ask(gw, client, body_for(client), tag("tool-index:3"))
    assert status == 200, body[:300]
    assert ended_in_dialect(client, body), body[-300:]
    assert gw.alive()


@pytest.mark.parametrize("code", [302, 999])
@pytest.mark.parametrize("client", ["messages", "responses", "llm-stream", "openai"])
@pytest.mark.parametrize("stream", [True, False])
def test_an_upstream_status_that_is_no_error_status_is_a_bad_gateway(
    gw: Gateway, client: str, code: int, stream: bool
) -> None:
    """Attack round 31, F5: an upstream answered a redirect, or 999, a number no HTTP status
    has. A Messages client got 500 (the gateway's own error) and a Responses client the 999
    itself: every client of a translated request gets 502, in its dialect; an OpenAI client of
    this OpenAI upstream gets the redirect relayed as it came (as nginx relays it), and 502 for
    the 999 (RFC 9110 15: an invalid status is read as a server's error)."""
    if client == "llm-stream" and not stream:
        pytest.skip("LLM-Stream's answer is a stream")
    body = body_for(client) if stream else body_for(client, stream=False)
    status, _, got = ask(gw, client, body, tag(f"status:{code}"))
    relayed = client == "openai" and code == 302
    assert status == (302 if relayed else 502), (status, got[:300])
    assert "error" in json.loads(got), got[:300]
    assert gw.alive()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_messages_upstream_that_never_ends_is_cut_at_the_progress_deadline(
    up: HubUpstream, backend: str
) -> None:
    """``--upstream-dialect messages``; the upstream starts, then only pings for ever: the
    client's answer ends with an error after ``--timeout`` (4 s), the upstream is closed."""
    with bounded(up.base, backend, upstream_dialect="messages") as g:
        rid = tag("anthropic-forever")
        status, _, body = ask(g, "openai", body_for("openai"), rid, timeout=60)
        assert status == 200
        assert ended_in_dialect("openai", body), body[-300:]
        assert b"no progress" in body, body[-300:]
        assert up.find(rid).gone.wait(20), "the upstream connection was left open"
        nothing_held(g)


@pytest.mark.parametrize("backend", BACKENDS)
def test_translated_events_that_never_end_hold_the_budget_not_more(
    up: HubUpstream, backend: str
) -> None:
    """Attack 37: a translated stream's event not whole yet is held by its decoder, up to
    ``--max-event`` a stream (8 MiB), and was held against no budget (``--max-partial`` was
    the relays'). Eight Chat clients of a Messages upstream that each begins a 3 MiB event
    and goes quiet hold at most the budget: the rest end at once with an error (not at
    ``--timeout``), and all of it is given back when they leave."""
    with bounded(
        up.base, backend, upstream_dialect="messages", max_partial=str(8 * 1024 * 1024)
    ) as g:
        clients = [Raw(g) for _ in range(8)]
        try:
            for r in clients:
                rid = tag("anthropic-partial:3072")
                r.send(post(body_for("openai"), extra=f"X-Request-Id: {rid}\r\n"))
            refused = 0
            for r in clients:  # (the two that fit end at --timeout, when they stall)
                r.read(30, until=lambda got: b"data: [DONE]" in got)
                assert b"data: [DONE]" in r.got, r.tail(400)
                refused += b"no room now for the rest of the upstream" in r.got
                assert b"a" * 100 not in r.got  # nothing of the event that never ended
                assert g.metrics()["svir_gateway_partial_bytes"] <= 8 * 1024 * 1024
            assert refused >= 5, refused
        finally:
            for r in clients:
                r.close()
        nothing_held(g)
        assert wait_until(lambda: g.metrics()["svir_gateway_partial_bytes"] == 0, 10)
        status, _, body = ask(g, "openai", body_for("openai"), tag("anthropic-text:1"))
        assert status == 200
        assert ended_in_dialect("openai", body), body[-300:]


@pytest.mark.parametrize(
    "scenario", ["trailing-garbage", "continue", "http10", "close", "fin-after", "length"]
)
def test_a_pooled_connection_never_gives_a_client_another_answer(
    gw: Gateway, scenario: str
) -> None:
    """Pool poisoning: the upstream's answer is followed by junk on the kept-alive connection
    (or comes after a 100, or as HTTP/1.0, or with a close); the next requests of other
    clients, translated and not, each get their own whole answer."""
    ask(gw, "messages", body_for("messages"), tag(scenario))
    for client in ("messages", "openai", "llm-stream", "responses", "messages"):
        status, _, body = ask(gw, client, body_for(client), tag("ok"))
        assert status == 200, (client, body[:300])
        assert ended_in_dialect(client, body), (client, body[-300:])
        assert b"GARBAGE" not in body
        assert b"hello" not in body
        if client == "messages":
            assert anthropic_text(body) == OK_TEXT
    nothing_held(gw)


def test_local_endpoints_under_a_pipelined_flood(gw: Gateway) -> None:
    """300 pipelined GET and HEAD of the local endpoints, with query strings up to 12 KiB, on
    one connection: every one answered in order, up to ``--max-requests`` (100: the last
    answer closes the connection). (Pipelined behind a relayed request, such as the model
    listing, a client may send only ``--max-head`` bytes: Rule 5, by design.)"""
    limit = GatewayConfig(upstream=Endpoint.parse("http://127.0.0.1:1")).max_requests
    paths = ["/healthz", "/readyz", "/metrics", "/healthz", "/metrics"]
    data = bytearray()
    heads: list[bool] = []
    for i in range(300):
        method = "HEAD" if i % 3 == 0 else "GET"
        query = "?" + "q=" + "a" * (i * 40)
        data += f"{method} {paths[i % 5]}{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        heads.append(method == "HEAD")
    with Raw(gw) as r:
        r.send(bytes(data))

        def enough(got: bytearray) -> bool:
            return got.count(b"HTTP/1.1 ") >= limit and got.endswith((b"\n", b"}"))

        r.read(60, until=enough)
        got = responses(r.got, tuple(heads[:limit]))
        assert r.closed_by_peer()
    final = [x for x in got if x.status >= 200]
    assert len(final) == limit, len(final)
    assert all(x.status in (200, 503) for x in final), [x.status for x in final][:20]
    healthy(gw)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH", "X"])
def test_odd_methods_on_local_endpoints(gw: Gateway, method: str) -> None:
    for path in ("/healthz", "/metrics", "/v1/models", "/v1/messages", "/v1/responses"):
        with Raw(gw) as r:
            r.send(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
                   .encode())  # fmt: skip
            r.read(15, until=lambda got: b"\r\n\r\n" in got)
            status = int(r.got.split(b" ", 2)[1])
            assert status in (405, 404, 400, 501, 415), (method, path, r.got[:200])
    assert gw.alive()


@pytest.mark.parametrize(
    "backend",
    BACKENDS,
)
def test_a_passed_through_body_is_not_held_when_the_upstream_does_not_read_it(
    up: HubUpstream, backend: str
) -> None:
    """Attack: an OpenAI client sends a 30 MiB body (over 64 KiB: passed through piece by
    piece, never held whole, outside ``--max-buffered``) to an upstream that reads the
    request's head and then nothing.

    What the gateway did (trio fixed since: the client is not read while the upstream's
    outbox holds more than ``HIGH_WATER``): on asyncio the upstream socket's full buffer
    pauses the client (10 MB sent, the gateway grew by under 1 MiB). On trio the client's
    reads went on and each piece was put in the upstream's outbox (`_Up.out`, no bound): the
    client sent all 30 MiB and the gateway grew by 25 MiB, until ``--timeout`` (300 s by
    default); 256 such streams hold 8 GiB.

    What it should do: stop reading the client while the upstream's outbox is over a bound, as
    the client's own outbox does for the other direction (``HIGH_WATER``)."""
    body = openai_body(None, padding="p" * (30 * 1024 * 1024))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        f"application/json\r\nX-Request-Id: {tag('no-read')}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with bounded(up.base, backend) as g:
        base = g.rss_mb()
        r = Raw(g)
        sent = 0
        try:
            r.sock.settimeout(8)
            r.sock.sendall(head)
            view = memoryview(body)
            with contextlib.suppress(OSError):
                while sent < len(body):
                    sent += r.sock.send(view[sent : sent + 65536])
            time.sleep(0.5)
            grown = g.rss_mb() - base
        finally:
            r.reset()
        assert grown < 12, f"the gateway holds {grown:.0f} MiB of a body it passes on ({sent} sent)"
        nothing_held(g)


@pytest.mark.parametrize("path", ["/v1/models", "/v1/models/m"])
def test_a_model_listing_with_a_body_is_answered(gw: Gateway, path: str) -> None:
    """Attack: ``GET /v1/models`` (or ``/v1/models/m``) with ``Content-Length: 200000`` and its
    200,000 bytes of body, then a pipelined ``GET /healthz``.

    What the gateway did (fixed since: a request's own body is no backlog,
    `GatewayConnection.backlog`): nothing at all: the connection closed without a response (a
    body on a GET "is read and dropped", but the listing is forwarded at its head, the phase is
    then ``answer``, and every byte read in it counts against ``--max-head`` as a pipelined
    head: the request is cancelled). ``GET /healthz`` with the same body gets its 200 (and a
    close); with a 5-byte body the listing is answered too.

    What it should do: answer the listing (the body read and dropped, as for ``/healthz``), or
    refuse the request with a status (413 or 400) before closing; never a silent close."""
    n = 200_000
    with Raw(gw) as r:
        r.send(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {n}\r\n\r\n".encode()
            + b"x" * n
            + b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        )
        r.read(15, until=lambda got: got.count(b"HTTP/1.1 ") >= 2 and got.endswith(b"}"))
        got = responses(r.got)
    assert got, "the connection was closed without an answer"
    assert got[0].status in (200, 400, 413), got
    healthy(gw)


def test_a_large_request_is_not_prepared_behind_the_work_of_clients_that_left(
    up: HubUpstream,
) -> None:
    """Attack (asyncio): eight clients each send a whole 4 MiB Messages request (prepared off
    the loop) and reset; then an honest client sends a 1 MiB Messages request.

    What the gateway did: the honest request's preparation was queued behind the eight
    abandoned ones (about 3 s of CPU each, one GIL), so its answer began only after all of
    them, tens of seconds later; meanwhile it had no deadline (phase ``answer``, no upstream
    yet) and got no keep-alive, while ``/metrics`` showed no stream held but its own.

    What it does now: each abandoned body holds what its parse builds (about 120 MiB of the
    128 MiB budget) until its preparation ends, so one at a time is admitted (the others are
    503) and none waits in a queue; a preparation stops between its steps once its client
    left. The honest request is 503 while one holds the budget, and is asked again as the
    vendors' SDKs do (`ask_patiently`): it is answered in about the time its own body takes,
    plus at most one abandoned parse."""
    body = _many_messages(4)
    small = _many_messages(1)
    with bounded(up.base, "asyncio", max_body=str(4 * 1024 * 1024)) as g:
        start = time.monotonic()
        status, _, got = ask(g, "messages", small, timeout=120)
        alone = time.monotonic() - start
        assert status == 200, got[:300]
        for _ in range(8):
            _abandon(g, body, wait=0.6)
        start = time.monotonic()
        status, _, got = ask_patiently(g, "messages", small, timeout=180)
        took = time.monotonic() - start
        assert status == 200, got[:300]
        assert took < max(8.0, 4 * alone), f"answered in {took:.1f} s (alone: {alone:.1f} s)"
        nothing_held(g, seconds=120)


def _raw_chat(created: bytes, extra: bytes = b"") -> bytes:
    return (
        b'data: {"id":"c","object":"chat.completion.chunk","created":%s,"model":"m","choices":'
        b'[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]%s}\n\n' % (created, extra)
    )


def _anthropic_usage(usage: bytes) -> list[bytes]:
    start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":'
        b'"message","role":"assistant","content":[],"model":"c","stop_reason":null,"usage":%s}}'
        b"\n\n" % usage
    )
    return [start, *anthropic_start()[1:], anthropic_delta("x"), *anthropic_end()]


NUMBERS = {
    ("chat", "created-inf"): [_raw_chat(b"1e999")],
    ("chat", "created-negative"): [_raw_chat(b"-1e300")],
    ("chat", "created-string"): [_raw_chat(b'"x"')],
    ("chat", "usage-inf-nan"): [
        _raw_chat(b"1", b',"usage":{"prompt_tokens":1e999,"completion_tokens":NaN}')
    ],
    ("chat", "usage-floats"): [
        _raw_chat(b"1", b',"usage":{"prompt_tokens":1.5e300,"completion_tokens":2.5}')
    ],
    ("messages", "usage-inf"): _anthropic_usage(b'{"input_tokens":1e999,"output_tokens":1.5}'),
    ("messages", "usage-huge"): _anthropic_usage(
        b'{"input_tokens":-1,"output_tokens":99999999999999999999999}'
    ),
}
CLIENT_REQUESTS = {
    "openai": ("/v1/chat/completions", "application/json"),
    "llm-stream": ("/v1/chat/completions", LLM),
    "messages": ("/v1/messages", "application/json"),
    "responses": ("/v1/responses", "application/json"),
}


@pytest.mark.parametrize("client", list(CLIENT_REQUESTS))
@pytest.mark.parametrize(("upstream", "name"), list(NUMBERS))
def test_sans_io_hostile_numbers_from_the_upstream_never_make_invalid_json(
    upstream: str, name: str, client: str
) -> None:
    """Infinite, NaN, negative, fractional and enormous numbers in an upstream's ``created``
    and usage: what the client gets is a status or a stream whose every event is strict JSON
    (no ``Infinity``, no ``NaN``)."""
    if (upstream, client) in (("chat", "openai"), ("messages", "messages")):
        pytest.skip("relayed as it came")
    s = _session(upstream)
    path, kind = CLIENT_REQUESTS[client]
    opened(s, _post(path, kind, body_for(client)))
    out: bytes = s.upstream_data(SSE_HEAD, 0.0)
    for e in NUMBERS[(upstream, name)]:
        out += s.upstream_data(chunk(e), 0.0)
    out += s.upstream_data(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n", 0.0)
    got = responses(out)
    assert got, out[:300]
    assert got[0].status in (200, 502), got

    def refuse(word: str) -> object:
        raise AssertionError(f"{word} in the client's JSON")

    if got[0].status != 200:
        json.loads(got[0].body, parse_constant=refuse)
        return
    for _, data in sse_events(got[0].body):
        if data != "[DONE]":
            json.loads(data, parse_constant=refuse)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reader", ["steady", "trickle"])
def test_a_steady_reader_of_an_answers_last_events_is_not_cut(
    up: HubUpstream, backend: str, reader: str
) -> None:
    """Attack 41 F7: a Responses client's last events repeat the whole answer (8 MiB of 2
    MiB of text), written at once at the close; the close had one deadline (``send_timeout``
    and the linger), so a client that read them steadily but slower was cut. It holds while
    the client takes MIN_TAKEN of them every ``send_timeout``; one that trickles (review 41:
    a segment a deadline kept a connection for days) is cut."""
    body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
    head = (
        "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"X-Request-Id: {tag('anthropic-text:2')}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    end = b"\r\n0\r\n\r\n"
    with bounded(
        up.base, backend, upstream_dialect="messages", send_timeout="1", max_answer=str(4 << 20)
    ) as g:
        with Raw(g, rcvbuf=65536) as r:
            r.send(head.encode() + body)
            r.sock.settimeout(30)
            got = bytearray()
            while not got.endswith(end):
                if reader == "trickle" and b"response.output_text.done" in got[-(1 << 20) :]:
                    held = g.fds()  # its connection among them
                    until = time.monotonic() + 30
                    while g.fds() >= held and time.monotonic() < until:
                        if not r.sock.recv(1024):
                            break
                        time.sleep(0.2)  # 5 KB/s
                    assert g.fds() < held, "a client taking 5 KB/s of the last events kept them"
                    return  # (the kernel still sends what it took: no reset waits for it)
                data = r.sock.recv(65536)
                if not data:
                    break
                got += data
                time.sleep(0.05)  # at most 1.3 MB/s: each second it reads some
        assert got.endswith(end), got[-300:]
        names = re.findall(rb"event: (response\.[a-z_.]+)", bytes(got))
        assert names[-1] == b"response.completed", names[-6:]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reader", ["whole", "none"])
def test_an_answer_the_client_did_not_take_by_the_close_is_logged_cut(
    up: HubUpstream, backend: str, reader: str
) -> None:
    """Attack 41 F7: a request was logged and counted when its session ended, before the
    close had sent its answer: one the close's deadline then cut was logged ``outcome=ok``.
    A connection that closes with the answer still to send says its request once the answer
    is out, or ``cut`` when the client did not take it."""
    body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
    rid = tag("anthropic-text:2")
    head = (
        "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Connection: close\r\nX-Request-Id: {rid}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with bounded(
        up.base, backend, upstream_dialect="messages", send_timeout="1", max_answer=str(4 << 20)
    ) as g:
        with Raw(g, rcvbuf=4096 if reader == "none" else None) as r:
            r.send(head.encode() + body)
            r.sock.settimeout(60)
            got = bytearray()
            if reader == "whole":
                while data := r.sock.recv(1 << 20):
                    got += data
                assert got.endswith(b"\r\n0\r\n\r\n")
            deadline = time.monotonic() + 60  # reading nothing: the close's deadline
            while f"id={rid}" not in g.log.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)  # (send_timeout and the linger) cuts it
        want = "ok" if reader == "whole" else "cut"
        (line,) = [x for x in g.log.read_text().splitlines() if f"id={rid}" in x]
        assert f"outcome={want} " in line, line
        counted = g.metrics()
        assert counted[f'svir_gateway_requests_total{{dialect="responses",outcome="{want}"}}'] == 1


def _anthropic_start_named(mid: str, model: str) -> bytes:
    start = json.loads(anthropic_start()[0].split(b"data: ", 1)[1])
    start["message"].update(id=mid, model=model)
    return b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n"


@pytest.mark.parametrize("length", [256, 257])
@pytest.mark.parametrize("which", ["id", "model"])
def test_sans_io_a_long_name_from_the_upstream_is_not_repeated_in_every_event(
    length: int, which: str
) -> None:
    """Attack 43 F1: a Messages upstream named its message (or model) once, in a megabyte; a
    Chat client's every chunk repeated it (0.43 MB of upstream answer became 400 MB, 3.1 GB
    held for a client that read nothing). A name past `MAX_NAME` is not repeated: the
    gateway's own goes instead, and that is said; one at it is the answer's (and a relayed
    answer keeps any: review 43 M3)."""
    s = _session("messages")
    opened(s, _post("/v1/chat/completions", "application/json", openai_body(None)))
    name = "n" * length
    start = (
        _anthropic_start_named(name, "claude")
        if which == "id"
        else _anthropic_start_named("msg_1", name)
    )
    out = s.upstream_data(SSE_HEAD, 0.0)
    out += s.upstream_data(chunk(start), 0.0)
    for piece in anthropic_start()[1:] + [anthropic_delta("t")] * 50 + anthropic_end():
        out += s.upstream_data(chunk(piece), 0.0)
    out += s.upstream_data(b"0\r\n\r\n", 0.0)
    (got,) = responses(out)
    assert got.status == 200
    assert got.body.count(b't"') >= 50  # (the answer, whole)
    if length == 256:
        assert got.body.count(name.encode()) == 52  # (each chunk: its own, as it came)
        assert b"svir-lost" not in got.body
        return
    assert name.encode() not in got.body
    what = "response id" if which == "id" else "model name"
    said = (
        f": svir-lost \"the upstream's {what} (257 characters, past 256) is not repeated in every "
        "event: the gateway's own goes instead\""
    )
    assert said.encode() in got.body
    assert got.body.index(said.encode()) < got.body.index(b"data: [DONE]")


def test_sans_io_a_long_model_name_from_the_client_is_refused() -> None:
    """Attack 43 F1b: a client's model of a megabyte was written in every chunk of an answer
    whose upstream names no model (llama.cpp's Responses stream): 0.09 MB became 502 MB. A
    translated request's model past `MAX_MODEL` is refused, naming it; a long one under it (a
    local model's path) goes."""
    from svir_proto.gateway.connection import MAX_MODEL

    s = _session("responses")
    asked = openai_body("m" * (MAX_MODEL + 1))
    (got,) = responses(opened(s, _post("/v1/chat/completions", "application/json", asked)))
    assert got.status == 400
    assert json.loads(got.body)["error"]["param"] == "$.model"
    s = _session("responses")
    asked = openai_body("m" * MAX_MODEL)
    assert not responses(opened(s, _post("/v1/chat/completions", "application/json", asked)))


def test_sans_io_what_the_clients_encoder_could_not_write_is_said() -> None:
    """Fidelity 43 F02: what the client's encoder could not write (here: the upstream gave no
    usage, and a Messages client's ``message_delta`` says 0 output tokens) was kept in its
    ``lost`` and never said; it goes as a ``svir-lost`` comment before the stream's end, with
    what the upstream's decoder noted."""
    s = _session("chat")
    opened(s, _post("/v1/messages", "application/json", messages_body()))
    out = s.upstream_data(SSE_HEAD, 0.0)
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    for choice in ({"index": 0, "delta": {"content": "hi"}},
                   {"index": 0, "delta": {}, "finish_reason": "stop"}):  # fmt: skip
        data = json.dumps({**head, "choices": [choice]})
        out += s.upstream_data(chunk(f"data: {data}\n\n".encode()), 0.0)
    out += s.upstream_data(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n", 0.0)
    body = responses(out)[0].body
    said = b': svir-lost "usage: the upstream gave none, so message_delta says 0 output tokens"'
    assert said in body
    assert body.index(said) < body.index(b"event: message_stop")


def test_sans_io_a_relayed_answer_keeps_a_long_name() -> None:
    """Review 43 M3: a relayed answer repeats nothing of the gateway's own; a long model name
    (vLLM names a model by its path) goes to the client as the upstream wrote it."""
    s = _session("chat")
    opened(s, _post("/v1/chat/completions", "application/json", openai_body(None)))
    model = "/mnt/models/" + "m" * 300
    head = {"id": "c", "object": "chat.completion.chunk", "model": model}
    out = s.upstream_data(SSE_HEAD, 0.0)
    for choice in ({"index": 0, "delta": {"content": "hi"}},
                   {"index": 0, "delta": {}, "finish_reason": "stop"}):  # fmt: skip
        data = json.dumps({**head, "choices": [choice]})
        out += s.upstream_data(chunk(f"data: {data}\n\n".encode()), 0.0)
    out += s.upstream_data(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n", 0.0)
    (got,) = responses(out)
    assert got.status == 200
    assert got.body.count(model.encode()) == 2
    assert b"svir-lost" not in got.body


@pytest.mark.parametrize("end", ["reset", "broken"])
def test_sans_io_what_was_lost_is_said_when_the_stream_fails(end: str) -> None:
    """Review 43 M5: what the upstream's decoder noted, and what the client's encoder could not
    write, were said only at a stream's clean end; one the upstream broke or dropped said
    nothing of them. They come before its error's end too."""
    s = _session("gemini")
    opened(s, _post("/v1/messages", "application/json", messages_body()))
    grounded = {"candidates": [{"content": {"role": "model", "parts": [{"text": "a"}]},
                                "groundingMetadata": {"webSearchQueries": ["wien"]}}],
                "responseId": "r", "modelVersion": "g"}  # fmt: skip
    out = s.upstream_data(SSE_HEAD, 0.0)
    out += s.upstream_data(chunk(b"data: " + json.dumps(grounded).encode() + b"\r\n\r\n"), 0.0)
    if end == "reset":
        out += s.upstream_failed("reset by peer", 0.0)
    else:
        out += s.upstream_data(chunk(b"data: [1]\r\n\r\n"), 0.0)  # (no object: a broken event)
    body = responses(out)[0].body
    said = b': svir-lost "groundingMetadata is not carried'
    assert body.count(said) == 1
    last = body.rindex(b"event: ")
    assert body.index(said) < last  # (before the stream's last event)
    if end == "broken":  # (an error event ends it, after them; a reset is a cut)
        assert body.index(said) < body.index(b"event: error")
