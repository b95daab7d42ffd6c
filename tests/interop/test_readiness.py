"""``/readyz`` follows the upstream (issue 17, item 5): 200 while it answers the probe, 503 with
the reason while it does not (stopped, or a port nothing listens on), and 200 again once it is
back; ``/healthz`` (liveness) stays 200 throughout. The probe runs in the background every
``probe_interval`` seconds; the tests wait for its verdict (polling, with a generous bound: no
wall-clock assertion)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.gateway.test_gateway_server import gateway
from tests.interop.upstream import InteropUpstream, closed_port, document

openai = pytest.importorskip("openai")

PATIENCE = 60.0  # seconds to wait for the probe's verdict on a loaded machine


def get(root: str, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(root + path, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def until(root: str, status: int, why: str = "") -> dict[str, Any]:
    """``/readyz``'s answer once it is ``status`` with ``why`` in its reason (before the first
    probe it is 503, "not probed yet")."""
    deadline = time.monotonic() + PATIENCE
    while True:
        got, body = get(root, "/readyz")
        if (got == status and why in body["reason"]) or time.monotonic() > deadline:
            assert (got, why in body["reason"]) == (status, True), body
            return body
        time.sleep(0.02)


def test_readyz_while_the_upstream_is_up_then_stopped() -> None:
    up = InteropUpstream()
    try:
        with gateway(up.interop("openai-text"), probe_interval=0.05) as (base, _):
            root = base.removesuffix("/v1")
            ready = until(root, 200)
            assert ready["status"] == "ready"
            with openai.OpenAI(base_url=base, api_key="sk", max_retries=0) as client:
                assert client.models.list().data  # what the probe saw, a client sees
            up.close()
            down = until(root, 503, "cannot be reached")
            assert down["status"] == "not ready"
            assert get(root, "/healthz") == (200, {"status": "ok"})  # alive all the same
    finally:
        up.close()


def test_readyz_with_nothing_at_the_upstreams_port() -> None:
    with gateway(f"http://127.0.0.1:{closed_port()}/v1", probe_interval=0.05) as (base, _):
        root = base.removesuffix("/v1")
        down = until(root, 503, "cannot be reached")
        assert down["status"] == "not ready"
        assert get(root, "/healthz") == (200, {"status": "ok"})
        with (
            openai.OpenAI(base_url=base, api_key="sk", max_retries=0) as client,
            pytest.raises(openai.APIStatusError) as raised,
        ):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 502  # the upstream cannot be reached: a gateway error


def test_readyz_when_the_upstream_answers_its_probe_with_an_error(
    upstream: InteropUpstream,
) -> None:
    with gateway(upstream.base("status", "500", "vllm"), probe_interval=0.05) as (base, _):
        down = until(base.removesuffix("/v1"), 503, "500")
    assert "The model does not exist." in down["reason"]  # what the upstream said


class Listing(BaseHTTPRequestHandler):
    """An upstream that only lists its models."""

    def do_GET(self) -> None:
        body = document("openai-models")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.send(body)

    def send(self, body: bytes) -> None:
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_readyz_comes_back_with_the_upstream() -> None:
    port = closed_port()
    with gateway(f"http://127.0.0.1:{port}/v1", probe_interval=0.05) as (base, _):
        root = base.removesuffix("/v1")
        until(root, 503, "cannot be reached")
        server = ThreadingHTTPServer(("127.0.0.1", port), Listing)  # the upstream starts
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            ready = until(root, 200)
        finally:
            server.shutdown()
            server.server_close()
    assert ready["status"] == "ready"
    assert "3 models" in ready["reason"]


class Dripping(Listing):
    """An upstream that lists its models one byte every 0.2 s: every read comes in time, the
    whole never does (attack 27: ``/readyz`` stayed 200 while such a probe went on)."""

    stop = threading.Event()

    def send(self, body: bytes) -> None:
        self.wfile.flush()
        for i in range(len(body)):
            if self.stop.wait(0.2):
                return
            self.wfile.write(body[i : i + 1])
            self.wfile.flush()


def test_readyz_is_not_ready_while_the_probe_drips_past_its_timeout() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Dripping)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Dripping.stop.clear()
    try:
        upstream = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with gateway(upstream, probe_interval=0.05, probe_timeout=1.0) as (base, _):
            down = until(base.removesuffix("/v1"), 503, "took over 1.0 s")
        assert down["status"] == "not ready"
    finally:
        Dripping.stop.set()
        server.shutdown()
        server.server_close()


def test_readyz_in_front_of_llamacpp(llama: str) -> None:
    with gateway(llama, probe_interval=0.05) as (base, _):
        ready = until(base.removesuffix("/v1"), 200)
    assert ready["status"] == "ready"
    assert "1 models" in ready["reason"]
