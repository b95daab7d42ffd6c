"""The sans-IO `ClientConnection` on a plain socket: what a transport does, written out. Two
requests on one kept-alive connection; when the server closed it meanwhile (llama.cpp does so
after every stream), `StaleConnection` says so and the request goes again on a new one.

    python examples/sans_io_socket.py http://127.0.0.1:8080 [MODEL]
"""

from __future__ import annotations

import socket
import sys

from svir_proto import (
    NEED_DATA,
    ClientConnection,
    Completion,
    StaleConnection,
    TextDelta,
)
from svir_proto.openai import ChatRequest, Endpoint, UserMessage


def connect(endpoint: Endpoint) -> tuple[socket.socket, ClientConnection]:
    sock = socket.create_connection((endpoint.host, endpoint.port), timeout=60)
    return sock, ClientConnection(endpoint, headers={"X-Client": "sans-io-example"})


def exchange(sock: socket.socket, conn: ClientConnection, request: ChatRequest) -> Completion:
    """One request and its answer on ``conn``: write what it gives, read until it is done."""
    try:
        for piece in conn.send(request):
            sock.sendall(piece)
    except (BrokenPipeError, ConnectionResetError):
        conn.send_failed()  # the server may have answered already: read on
    while True:
        event = conn.next_event()
        if event is NEED_DATA:
            try:
                data = sock.recv(65536)  # b"" when the server closed: the end
            except ConnectionResetError:  # closed before our request came: a reset, the end
                data = b""
            conn.receive_data(data)
            continue
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
        if event is conn.terminal:  # StreamEnded, RequestFailed or ModelsListed
            print()
            return conn.result


def ask(endpoint: Endpoint, model: str, prompts: list[str]) -> list[Completion]:
    sock, conn = connect(endpoint)
    results = []
    try:
        for prompt in prompts:
            request = ChatRequest(
                model=model, messages=[UserMessage(content=prompt)], max_tokens=32
            )
            if conn.exchange is not None:  # a connection that served a response before
                while conn.finishing:  # the body's last bytes (a chunked body's end)
                    conn.feed(sock.recv(65536))
                if conn.reusable:
                    conn.start_next_cycle()
                else:
                    sock.close()
                    sock, conn = connect(endpoint)
            try:
                results.append(exchange(sock, conn, request))
            except StaleConnection:  # closed before this request reached it: once more, anew
                sock.close()
                sock, conn = connect(endpoint)
                results.append(exchange(sock, conn, request))
    finally:
        sock.close()
    return results


def main(argv: list[str]) -> int:
    endpoint = Endpoint.parse(argv[1] if len(argv) > 1 else "http://127.0.0.1:8080")
    model = argv[2] if len(argv) > 2 else "default"
    results = ask(endpoint, model, ["Say hello.", "Say goodbye."])
    return 0 if all(r.complete for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
