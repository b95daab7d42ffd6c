"""A small proxy on an app's existing ``httpx.AsyncClient``: it takes OpenAI chat requests,
sends them on through svir-proto's httpx transport (the app's client: its pool, its timeouts),
and streams each answer back to its client in the OpenAI dialect, as svir-proto decoded it.

    python examples/proxy_httpx.py --upstream http://localhost:8080 [--listen 127.0.0.1:8788]

Then point any OpenAI client at ``http://127.0.0.1:8788/v1``. It prints ``listening on
HOST:PORT`` once it accepts connections; a bad request gets a 400 that names the field.
"""

from __future__ import annotations

import argparse
import json

import anyio
import anyio.abc
import h11
import httpx

from svir_proto import RequestFailed, StreamEnded
from svir_proto.openai import ChatRequest, ChatStreamEncoder
from svir_proto.transports.httpx import AsyncClient

MAX_BODY = 8 * 1024 * 1024


async def read_request(
    stream: anyio.abc.ByteStream, conn: h11.Connection
) -> tuple[h11.Request, bytes] | None:
    head: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive(65536))
        elif isinstance(event, h11.Request):
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY:
                return None
        elif isinstance(event, h11.EndOfMessage) and head is not None:
            return head, bytes(body)
        else:
            return None


async def reply(
    stream: anyio.abc.ByteStream, conn: h11.Connection, status: int, message: str
) -> None:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    await stream.send(conn.send(h11.Response(status_code=status, headers=headers)) or b"")
    await stream.send(
        (conn.send(h11.Data(data=body)) or b"") + (conn.send(h11.EndOfMessage()) or b"")
    )


async def serve_one(stream: anyio.abc.ByteStream, upstream: AsyncClient) -> None:
    conn = h11.Connection(h11.SERVER)
    try:
        received = await read_request(stream, conn)
        if received is None:
            return
        head, body = received
        if head.method != b"POST" or not head.target.endswith(b"/chat/completions"):
            await reply(stream, conn, 404, "only POST /v1/chat/completions here")
            return
        try:
            request = ChatRequest.from_openai(json.loads(body))
        except (ValueError, TypeError) as exc:  # the message names the field
            await reply(stream, conn, 400, str(exc))
            return
        # the caller's own key goes on (a per-request header replaces the client's)
        auth = [(b"Authorization", v) for k, v in head.headers if k == b"authorization"]
        encoder = ChatStreamEncoder(model=request.model, tool_call_deltas=False)
        async with upstream.stream_chat(
            request, headers=[(k.decode(), v.decode()) for k, v in auth]
        ) as answer:
            started = False
            async for event in answer:
                if isinstance(event, RequestFailed):
                    f = event.failure
                    await reply(stream, conn, f.status or 502, f"upstream: {f.message}")
                    return
                if not started:
                    sse = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
                    await stream.send(conn.send(h11.Response(status_code=200, headers=sse)) or b"")
                    started = True
                data = encoder.encode(event)
                if data:
                    await stream.send(conn.send(h11.Data(data=data)) or b"")
                if isinstance(event, StreamEnded):
                    await stream.send(conn.send(h11.EndOfMessage()) or b"")
    except (anyio.EndOfStream, anyio.BrokenResourceError, h11.ProtocolError):
        pass  # the client went; the upstream request ended with the stream
    finally:
        await stream.aclose()


async def main(args: argparse.Namespace) -> None:
    host, _, port = args.listen.rpartition(":")
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=300.0)) as http:
        upstream = AsyncClient(args.upstream, http, api_key=args.upstream_key)
        listener = await anyio.create_tcp_listener(local_host=host, local_port=int(port))
        print(
            f"listening on {host}:{listener.extra(anyio.abc.SocketAttribute.local_port)}",
            flush=True,
        )

        async def handle(client: anyio.abc.SocketStream) -> None:
            await serve_one(client, upstream)

        await listener.serve(handle)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--upstream-key")
    parser.add_argument("--listen", default="127.0.0.1:8788")
    anyio.run(main, parser.parse_args())
