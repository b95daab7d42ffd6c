"""Stopping a test server's socket from a thread that does not own it.

Closing a socket while another thread is blocked in it does not stop that thread: on Linux a
listener closed under a blocked ``accept`` stays listening and takes one more connection, and a
thread between reading a socket's descriptor and its system call can use the number after
another socket got it, serving a connection that belongs to another server. CI saw a module's
gateway answered by some other test server's 404, its own server never asked (stop 23, stop
37). So a server's ``close`` only wakes its sockets (`wake`: ``shutdown``, which ends a blocked
``accept`` with an error and a blocked ``recv`` with the end of the stream), and the thread
that owns each socket closes it."""

from __future__ import annotations

import contextlib
import socket


def wake(sock: socket.socket) -> None:
    """End what another thread waits for on ``sock`` (and the connection), leaving the close to
    that thread. An `ssl.SSLSocket` is shut down below its TLS, which its owner still holds."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
