"""An HTTP proxy of our own for the transports' proxy support: ``CONNECT`` tunnels, and requests
in absolute form forwarded in origin form; it records what it was asked (`seen`) and can demand
credentials (answering 407 without them). Real sockets on loopback, a thread per connection."""

from __future__ import annotations

import select
import socket
import threading
from typing import NamedTuple
from urllib.parse import urlsplit

from tests.sockets import wake


class Asked(NamedTuple):
    method: str
    target: str
    authorization: str | None


class Proxy:
    def __init__(self, *, authorization: str | None = None) -> None:
        self.authorization = authorization  # the Proxy-Authorization it demands, if any
        self.seen: list[Asked] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop: the threads close their own sockets (`tests.sockets`)."""
        with self._lock:
            self._closed = True
            wake(self._listener)
            for s in list(self._open):
                wake(s)

    def _accept(self) -> None:
        try:
            while True:
                try:
                    sock, _ = self._listener.accept()
                except OSError:
                    return
                with self._lock:
                    if self._closed:  # accepted as it closed: not served
                        sock.close()
                        return
                    self._open.add(sock)
                threading.Thread(target=self._serve, args=(sock,), daemon=True).start()
        finally:
            self._listener.close()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                piece = client.recv(65536)
                if not piece or len(data) > 65536:
                    return
                data += piece
            head, rest = data.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ")
            fields = [line.split(":", 1) for line in lines[1:]]
            auth = next((v.strip() for k, v in fields if k.lower() == "proxy-authorization"), None)
            with self._lock:
                self.seen.append(Asked(method, target, auth))
            if self.authorization is not None and auth != self.authorization:
                client.sendall(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"
                )
                return
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                url = urlsplit(target)
                upstream = socket.create_connection((url.hostname, url.port or 80))
                kept = [f"{k}:{v}" for k, v in fields if k.lower() != "proxy-authorization"]
                origin = f"{method} {url.path} {version}\r\n" + "\r\n".join(kept) + "\r\n\r\n"
                upstream.sendall(origin.encode("latin-1"))
            if rest:
                upstream.sendall(rest)
            self._relay(client, upstream)
        except (OSError, ValueError):  # a socket closed under it (close(): select's ValueError)
            pass
        finally:
            for s in (client, upstream):
                if s is not None:
                    s.close()
                    with self._lock:
                        self._open.discard(s)

    @staticmethod
    def _relay(a: socket.socket, b: socket.socket) -> None:
        """Bytes both ways until either side closes (keep-alive requests pass through as they
        are: they go to the same server)."""
        while True:
            readable, _, _ = select.select([a, b], [], [], 30)
            if not readable:
                return
            for s in readable:
                data = s.recv(65536)
                if not data:
                    return
                (b if s is a else a).sendall(data)
