"""The gateway's listener and client sockets on a selector event loop (plain asyncio), without
asyncio's server: what a connection costs before its request is read is a time to first token.

asyncio's server accepts in one turn of the loop, starts a task for the connection in a second,
makes the transport in it, tells the protocol in a third and reads in a fourth. Here an accept
reads at once: the request is most often there already (the client wrote it as soon as it
connected), so a connection's first bytes reach its protocol in the turn that accepted it.

`Stream` is asyncio's socket transport, cut to what the gateway's `_Client` calls (``write``,
``write_eof``, ``pause_reading``, ``resume_reading``, ``close``, ``abort``, ``is_closing``,
``can_write_eof``), with asyncio's semantics: writes go to the socket at once and the rest is
buffered, the protocol's ``pause_writing`` past `HIGH_WATER` and ``resume_writing`` at
`LOW_WATER`; ``close`` waits for the buffer; ``connection_lost`` comes once, in a later turn,
and closes the socket. On another loop (uvloop, whose own server is in C) the gateway uses
``loop.create_server``.

Out of descriptors, accepting pauses for `RETRY` seconds (as asyncio's own accept does) and the
caller's ``refused`` hook is told, so it can count and log.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import struct
import sys
from collections.abc import Callable
from typing import Any, Final

if sys.platform == "linux":
    import fcntl
    import termios

__all__: list[str] = []

MAX_READ: Final = 256 * 1024  # asyncio's own recv size
HIGH_WATER: Final = 64 * 1024  # asyncio's default write-buffer limits
LOW_WATER: Final = 16 * 1024
_NO_PROTOCOL: Final = asyncio.Protocol()  # a lost connection's: one that does nothing
RETRY: Final = 1.0  # asyncio's ACCEPT_RETRY_DELAY
CAPACITY: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
"""The errors of an accept that ran out of something (descriptors, memory): waited out, for
`RETRY`, on every backend (so that what streams free meanwhile goes to the upstream connections
of the clients already accepted, not to new ones: attack 35, F2)."""


def queued(sock: socket.socket | None) -> int:
    """Bytes the kernel still holds to send on ``sock`` (Linux's ``SIOCOUTQ``: not yet taken
    by the peer); 0 where that cannot be asked. A client that reads takes them: what its
    deadline watches, as a full socket is writable again only once a third or so is free."""
    if sock is None:
        return 0
    if sys.platform != "linux":  # pragma: no cover - the ioctl is Linux's
        return 0
    try:  # (imported with this module: an import can fail when descriptors are short)
        got = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
        left = int.from_bytes(got, sys.byteorder)
        if left and sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == _TCP_CLOSE:
            return 0  # the peer reset it: they are never sent, though still counted (attack 48
            # F4: a client that closed before its 400 came held its descriptor, on anyio, for
            # send_timeout, waiting for it to take them)
    except (OSError, ValueError):  # closed, or not a socket the ioctl knows
        return 0
    return left


_TCP_CLOSE: Final = 7  # ``tcpi_state`` of a connection that is over (Linux's TCP_CLOSE)


_RESET: Final = struct.pack("ii", 1, 0)  # struct linger: l_onoff 1, l_linger 0


def reset_unsent(sock: socket.socket | None) -> None:
    """Make the close of ``sock`` a reset if the kernel still holds bytes for the peer
    (``SO_LINGER`` 0, as nginx's ``reset_timedout_connection``): a connection the gateway gives
    up on would otherwise leave its send queue, up to the socket's buffer, in an orphaned
    socket the kernel keeps for minutes while the peer answers its probes and takes nothing,
    counted by no bound of the gateway (attack 46 G1). A socket whose bytes were all taken is
    closed as it would be."""
    if sock is None or not queued(sock):
        return
    with contextlib.suppress(OSError, ValueError):  # (gone already)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)


def unread(sock: socket.socket, limit: int = MAX_READ) -> bytes:
    """What the peer sent on ``sock`` that the kernel holds and nobody read, ``limit`` bytes at
    most: asyncio closes a transport whose write failed (the peer reset the connection) without
    reading it, and an answer the peer sent before it reset went with it (attack 69 F5: an
    upstream's early 400, refusing a body it did not read, was a 502 on asyncio, not on trio).
    Linux gives the bytes queued before a reset, then the reset."""
    got = bytearray()
    with (
        contextlib.suppress(OSError, ValueError),  # the reset, after them; or closed already
        socket.fromfd(sock.fileno(), sock.family, sock.type) as own,  # (a descriptor of its
    ):  # own: the transport's socket object reads nothing)
        own.setblocking(False)
        while len(got) < limit and (data := own.recv(limit - len(got))):
            got += data
    return bytes(got)


_GONE: Final = (BlockingIOError, InterruptedError)


class Stream(asyncio.Transport):
    """An accepted client socket; see the module docstring."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol: asyncio.Protocol
    ) -> None:
        super().__init__()
        self._loop: asyncio.AbstractEventLoop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._protocol = protocol
        self._buffer = bytearray()
        self._closing = False
        self._paused = False  # reading
        self._eof = False  # write_eof asked
        self._lost = False  # connection_lost is due
        self._full = False  # the protocol was told pause_writing
        self._ended = False  # the client's EOF came

    def start(self) -> None:
        """Tell the protocol, then read what came already, then wait for the rest."""
        self._protocol.connection_made(self)
        if self.is_reading():
            self._read_ready()
            if self.is_reading() and not self._ended:
                self._loop.add_reader(self._fd, self._read_ready)

    # -- reading ------------------------------------------------------------------------------

    def _read_ready(self) -> None:
        try:
            data = self._sock.recv(MAX_READ)
        except _GONE:
            return
        except OSError as exc:
            self._force_close(exc)
            return
        try:
            if data:
                self._protocol.data_received(data)
                return
            self._ended = True
            self._loop.remove_reader(self._fd)
            if not self._protocol.eof_received():
                self.close()
        except Exception as exc:  # the protocol's bug, as asyncio's transport takes it
            self._loop.call_exception_handler(
                {"message": "the protocol failed", "exception": exc, "transport": self}
            )
            self._force_close(exc)

    def is_reading(self) -> bool:
        return not self._closing and not self._paused

    def pause_reading(self) -> None:
        if self.is_reading():
            self._paused = True
            self._loop.remove_reader(self._fd)

    def resume_reading(self) -> None:
        if self._closing or not self._paused:
            return
        self._paused = False
        self._loop.add_reader(self._fd, self._read_ready)

    # -- writing ------------------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._eof:
            raise RuntimeError("cannot write after write_eof()")
        if self._lost or not data:
            return
        if not self._buffer:
            try:
                sent = self._sock.send(data)
            except _GONE:
                sent = 0
            except OSError as exc:
                self._force_close(exc)
                return
            if sent == len(data):
                return
            data = memoryview(data)[sent:]
            self._loop.add_writer(self._fd, self._write_ready)
        self._buffer += data
        if not self._full and len(self._buffer) > HIGH_WATER:
            self._full = True
            self._protocol.pause_writing()

    def _write_ready(self) -> None:
        if self._lost:
            return
        try:
            sent = self._sock.send(self._buffer)
        except _GONE:
            return
        except OSError as exc:
            self._loop.remove_writer(self._fd)
            self._buffer.clear()
            self._force_close(exc)
            return
        del self._buffer[:sent]
        if self._full and len(self._buffer) <= LOW_WATER:
            self._full = False
            self._protocol.resume_writing()
        if self._buffer:
            return
        self._loop.remove_writer(self._fd)
        if self._closing:
            self._lose(None)
        elif self._eof:
            try:
                self._sock.shutdown(socket.SHUT_WR)
            except OSError as exc:  # it reset meanwhile
                self._force_close(exc)

    def get_write_buffer_size(self) -> int:
        return len(self._buffer)

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        if self._closing or self._eof:
            return
        self._eof = True
        if not self._buffer:
            self._sock.shutdown(socket.SHUT_WR)

    # -- closing ------------------------------------------------------------------------------

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._loop.remove_reader(self._fd)
        if not self._buffer:
            self._lose(None)

    def abort(self) -> None:
        self._force_close(None)

    def _force_close(self, exc: Exception | None) -> None:
        if self._lost:
            return
        if self._buffer:
            self._buffer.clear()
            self._loop.remove_writer(self._fd)
        if not self._closing:
            self._closing = True
            self._loop.remove_reader(self._fd)
        self._lose(exc)

    def _lose(self, exc: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        self._loop.call_soon(self._connection_lost, exc)

    def _connection_lost(self, exc: Exception | None) -> None:
        try:
            self._protocol.connection_lost(exc)
        finally:
            self._sock.close()
            # the protocol holds this transport: the cycle is broken here, as asyncio's own
            # transports break it, so that a connection's memory (its session, a whole
            # answer) goes when it ends, not at a full collection that seldom comes (attack
            # 51 F4: 1.4 GB after 1,500 requests, none of them active)
            self._protocol = _NO_PROTOCOL

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "socket":
            return self._sock
        if name == "peername":
            try:
                return self._sock.getpeername()
            except OSError:
                return default
        return default


class Listener:
    """Accept on ``host:port`` (every address it resolves to) for ``protocol()``; ``refused``
    is called with the error when accepting pauses for want of descriptors or memory."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol: Callable[[], asyncio.Protocol],
        refused: Callable[[OSError], None],
        sockets: list[socket.socket],
    ) -> None:
        self._loop = loop
        self._protocol = protocol
        self._refused = refused
        self.sockets = sockets
        self._closed = False
        for sock in sockets:
            loop.add_reader(sock.fileno(), self._accept, sock)

    @classmethod
    def open(
        cls,
        loop: asyncio.AbstractEventLoop,
        protocol: Callable[[], asyncio.Protocol],
        refused: Callable[[OSError], None],
        host: str,
        port: int,
        backlog: int,
    ) -> Listener:
        """Bind and listen as ``loop.create_server`` does (``SO_REUSEADDR``, every address
        ``host`` resolves to, IPv6 sockets for IPv6 only)."""
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        sockets: list[socket.socket] = []
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                sock = socket.socket(family, kind, proto)
                sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(address)
                sock.listen(backlog)
                sock.setblocking(False)
                if not port:  # the port the first socket got, for the others too
                    port = sock.getsockname()[1]
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        return cls(loop, protocol, refused, sockets)

    def _accept(self, listener: socket.socket) -> None:
        for _ in range(64):  # then let the loop turn: the others' reads wait too
            try:
                sock, _ = listener.accept()
            except _GONE:
                return
            except OSError as exc:
                if exc.errno in CAPACITY:  # wait for descriptors to come back
                    self._loop.remove_reader(listener.fileno())
                    self._loop.call_later(RETRY, self._resume, listener)
                    self._refused(exc)
                # else ECONNABORTED and its kind: that connection is gone, the next may not be
                return
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                Stream(self._loop, sock, self._protocol()).start()
            except OSError:  # it reset already
                sock.close()

    def _resume(self, listener: socket.socket) -> None:
        if not self._closed:
            self._loop.add_reader(listener.fileno(), self._accept, listener)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sock in self.sockets:
            self._loop.remove_reader(sock.fileno())
            sock.close()
