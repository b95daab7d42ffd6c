"""The benchmarks' server: one seeded OpenAI stream, served over loopback from its own process
(so that its CPU is not counted as the client's), for every request, with keep-alive.

    python -m benchmarks._server CHUNKS MODE

prints its port, then serves until killed. The body is framed as llama.cpp and vLLM frame it,
one HTTP chunk per SSE event. MODE ``bulk`` writes 64 KiB at a time (a fast stream: reads are
full); ``flushed`` writes each event on its own, as a server that flushes every token does.
"""

from __future__ import annotations

import socket
import sys
import threading

from benchmarks.streams import openai_stream


def frames(chunks: int) -> list[bytes]:
    body = openai_stream(chunks)
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    return [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]


HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    b"Connection: keep-alive\r\n\r\n"
)


def serve(sock: socket.socket, chunks: list[bytes], mode: str) -> None:
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                data = sock.recv(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(buf) < length:
                buf += sock.recv(65536)
            buf = buf[length:]
            if mode == "flushed":
                sock.sendall(HEAD)
                for c in chunks:
                    sock.sendall(c)
            else:
                out = [HEAD]
                size = len(HEAD)
                for c in chunks:
                    out.append(c)
                    size += len(c)
                    if size >= 65536:
                        sock.sendall(b"".join(out))
                        out, size = [], 0
                sock.sendall(b"".join(out))
    except OSError:
        pass
    finally:
        sock.close()


def main() -> None:
    count, mode = int(sys.argv[1]), sys.argv[2]
    chunks = frames(count)
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(sock, chunks, mode), daemon=True).start()


if __name__ == "__main__":
    main()
