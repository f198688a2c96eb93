"""A stand-in OpenAI-compatible server on 127.0.0.1 that misbehaves on schedule.

    with FakeOpenAI(faults=every(3, "drop")) as server:
        OpenAIChatModel(server.base_url, "m")

POST /v1/chat/completions answers `echo: <last user message>` unless `faults(n)` names a fault
for the n-th request (1-based, counting every request, warm-up included):

    "drop"          headers and half the body, then the connection is closed (RemoteProtocolError)
    "reset"         the connection is reset (RST) before anything is sent
    "hang"          nothing is sent until the server stops
    "drip"          a normal reply sent one byte every `drip_seconds`
    "null_content"  a chat completion whose message content is null
    "huge"          a normal reply whose text is `huge_chars` characters long
    "echo_auth_500" HTTP 500 whose JSON error message repeats the request's Authorization header
    "echo_auth"     a normal reply whose text repeats the request's Authorization header

`fault_for(n, body)`, when given, is asked instead of `faults(n)` with the request's JSON body
(to fault, say, only the warm-up requests). GET /v1/models lists one model, never faulted.

Every request is one connection (HTTP/1.0). `server.requests` counts requests, `server.served`
lists what each one got, and `server.dripped` how many bytes drip replies sent before the
client went away; `server.arrivals` when each request came (time.monotonic()).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Schedule = Callable[[int], str | None]
FAULTS = ("drop", "reset", "hang", "drip", "null_content", "huge", "echo_auth_500", "echo_auth")
WARM_UP_TEXT = "Reply with the single word: ready."


def is_warm_up(body: dict[str, Any]) -> bool:
    return any(m.get("content") == WARM_UP_TEXT for m in body.get("messages", []))


def every(n: int, fault: str) -> Schedule:
    """`fault` on every n-th request."""
    return lambda i: fault if i % n == 0 else None


def always(fault: str) -> Schedule:
    return lambda i: fault


def after(n: int, fault: str) -> Schedule:
    """Healthy for the first n requests, then `fault` for good."""
    return lambda i: fault if i > n else None


def completion(text: str | None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


class FakeOpenAI:
    def __init__(self, faults: Schedule | None = None, *, drip_seconds: float = 0.2, huge_chars: int = 10_000_000,
                 reply: Callable[[dict[str, Any]], str] | None = None,
                 fault_for: Callable[[int, dict[str, Any]], str | None] | None = None):
        self.faults = faults or (lambda i: None)
        self.fault_for = fault_for
        self.gets = 0
        self.drip_seconds, self.huge_chars = drip_seconds, huge_chars
        self.reply = reply or _echo
        self.requests = 0
        self.served: list[str] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.dripped = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def take(self, body: dict[str, Any]) -> str | None:
        with self.lock:
            self.requests += 1
            self.arrivals.append(time.monotonic())
            fault = self.fault_for(self.requests, body) if self.fault_for else self.faults(self.requests)
            self.served.append(fault or "ok")
            return fault


def _echo(body: dict[str, Any]) -> str:
    users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return f"echo: {users[-1] if users else ''}"


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            with fake.lock:
                fake.gets += 1
            self._send(200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            fault = fake.take(body)
            try:
                self._serve(fault, body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up

        def _serve(self, fault: str | None, body: dict[str, Any]) -> None:
            if fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                return
            if fault == "hang":
                fake.stopping.wait(60)
                return
            auth = self.headers.get("Authorization", "")
            if fault == "echo_auth_500":
                self._send(500, json.dumps({"error": {"message": f"upstream refused the request; it carried "
                                                                 f"Authorization: {auth}"}}).encode())
                return
            if fault == "echo_auth":
                data = json.dumps(completion(f"your request carried Authorization: {auth}")).encode()
                self._send(200, data)
                return
            text = None if fault == "null_content" else ("x" * fake.huge_chars if fault == "huge" else fake.reply(body))
            data = json.dumps(completion(text)).encode()
            if fault == "drop":
                self._headers(200, len(data))
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault == "drip":
                self._drip(data)
                return
            self._send(200, data)

        def _drip(self, data: bytes) -> None:
            self._headers(200, len(data))
            self.wfile.flush()
            for i in range(len(data)):
                if fake.stopping.wait(fake.drip_seconds):
                    return
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                with fake.lock:
                    fake.dripped += 1

        def _headers(self, status: int, length: int) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(length))
            self.end_headers()

        def _send(self, status: int, data: bytes) -> None:
            self._headers(status, len(data))
            self.wfile.write(data)

    return Handler
