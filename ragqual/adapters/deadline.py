"""One time limit for a whole model call, not for each read.

httpx's timeouts bound each network operation: a server that drips one byte a second never
trips a 3-second read timeout, and keeps the call alive for as long as it likes. Here every
socket operation of a call is given the time left until the call's deadline, so the call as a
whole (connect, send, headers, body, every streamed chunk) ends within its limit.

    client = httpx.Client(transport=deadline_transport())
    with call_deadline(3.0):
        client.post(...)          # raises httpx.ReadTimeout (a TimeoutException) at 3 s

The deadline is per thread, so concurrent trials each have their own. Outside `call_deadline`
the transport behaves like httpx's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

_local = threading.local()


@contextmanager
def call_deadline(seconds: float) -> Iterator[None]:
    """Every network operation on this thread inside the block ends `seconds` from now at the latest."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = previous


def _bounded(timeout: float | None, expired: type[Exception]) -> float | None:
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the call took longer than its time limit")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with every operation cut at the thread's call deadline."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None):
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_transport(**kwargs: Any) -> httpx.HTTPTransport:
    """httpx's default transport whose connections honour `call_deadline`.

    httpx does not let a caller choose httpcore's network backend, so the pool's backend is
    swapped after construction (httpx 0.28 keeps it in `_pool._network_backend`); a test drives
    a slow-drip server through it, so a change in httpx fails loudly rather than silently.
    """
    transport = httpx.HTTPTransport(**kwargs)
    pool = transport._pool
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError("this httpx version keeps its network backend elsewhere: update ragqual.adapters.deadline")
    pool._network_backend = DeadlineBackend(pool._network_backend)
    return transport
