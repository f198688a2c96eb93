"""A stand-in Ollama server on 127.0.0.1 for tests that drive the real `ollama` client.

It speaks the part of the Ollama HTTP API ragqual uses:

    POST /api/chat      non-stream JSON or NDJSON stream; telemetry on the final object
    POST /api/generate  same, with `response`; `keep_alive: 0` unloads the model
    POST /api/embed     deterministic unit vectors from a hash of each input text
    POST /api/show      model details, model_info and the digest
    GET  /api/tags      the models present, each with its digest
    GET  /api/ps        the models resident in memory
    GET  /api/version

Usage:

    with FakeOllama(models={"tiny:latest": "sha256:abc"}) as server:
        client = ollama.Client(host=server.url)

Fault modes (set `fault=` or assign `server.fault` between calls) apply to the model
calls in `fault_paths` (chat, generate, embed by default):

    "missing_model"   404 {"error": "model 'x' not found"}
    "hang"            the response never finishes (a stream sends one chunk first);
                      the wait is bounded and ends at shutdown, so it never blocks a test
    "http_500"        500 {"error": "..."}
    "malformed_json"  200 with a body that is not valid JSON
    "drip"            a normal non-stream reply sent one byte every `drip_seconds`
                      (`server.dripped` counts the bytes sent before the client left)
    "null_content"    a non-stream chat reply whose message content is null

`fault_times=N` limits a fault to the first N faultable calls, to test recovery.
Every request is logged in `server.requests` as (path, json body or None), and
`server.calls` counts requests per path.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], str]

FAULTS = ("missing_model", "hang", "http_500", "malformed_json", "drip", "null_content")
MODEL_CALL_PATHS = ("/api/chat", "/api/generate", "/api/embed")
SERVER_ERROR_TEXT = "llama runner process has terminated: exit status 2"
LOAD_DURATION_NS = 5_000_000
CREATED_AT = "2024-01-01T00:00:00Z"
DEFAULT_MODELS = {"tiny:latest": "sha256:" + "0" * 64}


def refused_url() -> str:
    """A 127.0.0.1 URL with nothing listening: the port was bound once, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def tagged(name: str) -> str:
    """Ollama's own normal form: `name` means `name:latest`."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def fake_embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for `text`: the same text always gives the same vector."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        block = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in block)
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def default_reply(body: dict[str, Any]) -> str:
    """Echo the last user turn (chat) or the prompt (generate), marked so tests can tell."""
    if "messages" in body:
        users = [m.get("content", "") for m in body["messages"] if m.get("role") == "user"]
        return f"echo: {users[-1] if users else ''}"
    return f"echo: {body.get('prompt', '')}"


def count_tokens(text: str) -> int:
    """The stand-in's token count: whitespace-separated words."""
    return len(text.split())


class FakeOllama:
    """A threaded HTTP server bound to 127.0.0.1 on a free port; use as a context manager."""

    def __init__(
        self,
        models: Mapping[str, str] | None = None,
        *,
        reply: Reply | None = None,
        fault: str | None = None,
        fault_paths: Sequence[str] = MODEL_CALL_PATHS,
        fault_times: int | None = None,
        running: Sequence[str] = (),
        embed_dim: int = 8,
        chunk_words: int = 2,
        hang_seconds: float = 30.0,
        drip_seconds: float = 0.05,
    ):
        present = DEFAULT_MODELS if models is None else models
        self.models = {tagged(name): digest for name, digest in present.items()}
        self.reply = reply or default_reply
        self.fault = fault
        self.fault_paths = tuple(fault_paths)
        self.fault_times = fault_times
        self.running: dict[str, None] = {tagged(m): None for m in running}
        self.embed_dim = embed_dim
        self.chunk_words = chunk_words
        self.hang_seconds = hang_seconds
        self.drip_seconds = drip_seconds
        self.dripped = 0
        self.requests: list[tuple[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.faults_served = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; expected one of {FAULTS}")

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeOllama:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-ollama", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeOllama is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # -- what tests read ---------------------------------------------------------------------

    def bodies(self, path: str) -> list[dict[str, Any]]:
        """The JSON bodies the server received on `path`, in order."""
        with self._lock:
            return [body for p, body in self.requests if p == path]

    @property
    def model_calls(self) -> int:
        """Chat and generate requests received (faulted ones included)."""
        return self.calls["/api/chat"] + self.calls["/api/generate"]

    # -- used by the handler ----------------------------------------------------------------

    def record(self, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append((path, body))
            self.calls[path] += 1

    def take_fault(self, path: str) -> str | None:
        with self._lock:
            if self.fault is None or path not in self.fault_paths:
                return None
            if self.fault_times is not None and self.faults_served >= self.fault_times:
                return None
            self.faults_served += 1
            return self.fault

    def hang(self) -> None:
        """Wait long enough for any client timeout, but return at once on shutdown."""
        self._stopping.wait(self.hang_seconds)

    def has_model(self, name: str) -> bool:
        return tagged(name) in self.models

    def load(self, name: str, keep_alive: Any) -> None:
        with self._lock:
            if keep_alive in (0, "0", "0s", 0.0):
                self.running.pop(tagged(name), None)
            else:
                self.running[tagged(name)] = None

    def resident(self) -> list[str]:
        with self._lock:
            return list(self.running)


def _handler_for(server: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(_OllamaHandler):
        fake = server

    return Handler


class _OllamaHandler(BaseHTTPRequestHandler):
    fake: FakeOllama
    protocol_version = "HTTP/1.0"  # one request per connection; a stream ends when it closes

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    # -- dispatch ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self.fake.record(self.path, None)
        routes = {"/api/tags": self._tags, "/api/ps": self._ps, "/api/version": self._version}
        self._guarded(routes.get(self.path), None)

    def do_POST(self) -> None:
        body = self._read_json()
        self.fake.record(self.path, body)
        if body is None:
            self._send_json(400, {"error": "invalid JSON body"})
            return
        routes = {
            "/api/chat": self._chat, "/api/generate": self._generate,
            "/api/embed": self._embed, "/api/show": self._show,
        }
        self._guarded(routes.get(self.path), body)

    def _guarded(self, route: Callable[..., None] | None, body: Any) -> None:
        if route is None:
            self._send_json(404, {"error": f"404 page not found: {self.path}"})
            return
        try:
            if self._serve_fault(body):
                return
            route() if body is None else route(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout); nothing left to answer

    def _serve_fault(self, body: Any) -> bool:
        fault = self.fake.take_fault(self.path)
        if fault is None:
            return False
        model = (body or {}).get("model", "")
        if fault == "missing_model":
            self._send_json(404, {"error": f"model '{model}' not found"})
        elif fault == "http_500":
            self._send_json(500, {"error": SERVER_ERROR_TEXT})
        elif fault == "malformed_json":
            self._send_raw(200, b'{"model": "' + model.encode() + b'", "message": {"role": "assis')
        elif fault == "hang":
            self._hang((body or {}).get("stream", True) and self.path != "/api/embed", model)
        elif fault in ("drip", "null_content"):
            reply = {"model": model, "created_at": CREATED_AT, "done": True, "done_reason": "stop",
                     "message": {"role": "assistant", "content": None if fault == "null_content" else "ready"},
                     "response": "ready"}
            data = json.dumps(reply).encode()
            if fault == "null_content":
                self._send_raw(200, data)
            else:
                self._drip(data)
        return True

    def _drip(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.flush()
        for i in range(len(data)):
            if self.fake._stopping.wait(self.fake.drip_seconds):
                return
            self.wfile.write(data[i:i + 1])
            self.wfile.flush()
            with self.fake._lock:
                self.fake.dripped += 1

    def _hang(self, streaming: bool, model: str) -> None:
        if streaming:
            self._start_stream()
            self._stream_line({"model": model, "created_at": CREATED_AT,
                               "message": {"role": "assistant", "content": "partial"}, "done": False})
        self.fake.hang()

    # -- routes -------------------------------------------------------------------------------

    def _tags(self) -> None:
        models = [_model_entry(name, digest) for name, digest in self.fake.models.items()]
        self._send_json(200, {"models": models})

    def _ps(self) -> None:
        expires = (datetime.now(timezone.utc) + timedelta(minutes=5)).isoformat()
        models = [
            {**_model_entry(name, self.fake.models.get(name, "")), "expires_at": expires, "size_vram": 0}
            for name in self.fake.resident()
        ]
        self._send_json(200, {"models": models})

    def _version(self) -> None:
        self._send_json(200, {"version": "0.6.0-fake"})

    def _show(self, body: dict[str, Any]) -> None:
        name = body.get("model") or body.get("name") or ""
        if not self._require_model(name):
            return
        self._send_json(200, {
            "modelfile": f"FROM {name}",
            "parameters": "temperature 0.8",
            "template": "{{ .Prompt }}",
            "details": _details(),
            "model_info": {"general.architecture": "fake", "general.parameter_count": 1000},
            "capabilities": ["completion"],
            "modified_at": CREATED_AT,
            "digest": self.fake.models[tagged(name)],
        })

    def _chat(self, body: dict[str, Any]) -> None:
        self._answer(body, "message")

    def _generate(self, body: dict[str, Any]) -> None:
        name = body.get("model", "")
        if not self._require_model(name):
            return
        if not body.get("prompt") and body.get("keep_alive") in (0, "0", "0s", 0.0):
            self.fake.load(name, 0)
            self._send_json(200, {"model": name, "created_at": CREATED_AT, "response": "",
                                  "done": True, "done_reason": "unload"})
            return
        self._answer(body, "response")

    def _answer(self, body: dict[str, Any], field: str) -> None:
        name = body.get("model", "")
        if not self._require_model(name):
            return
        self.fake.load(name, body.get("keep_alive"))
        text = self.fake.reply(body)
        prompt_text = body.get("prompt") or " ".join(
            m.get("content", "") for m in body.get("messages", []))
        final = {
            "model": name, "created_at": CREATED_AT, "done": True, "done_reason": "stop",
            "total_duration": LOAD_DURATION_NS * 3, "load_duration": LOAD_DURATION_NS,
            "prompt_eval_count": count_tokens(prompt_text), "prompt_eval_duration": 1_000_000,
            "eval_count": count_tokens(text), "eval_duration": 2_000_000,
        }
        if body.get("stream", True):
            self._stream_answer(name, text, field, final)
        else:
            self._send_json(200, {**final, **_content(field, text)})

    def _stream_answer(self, name: str, text: str, field: str, final: dict[str, Any]) -> None:
        self._start_stream()
        for piece in _pieces(text, self.fake.chunk_words):
            self._stream_line({"model": name, "created_at": CREATED_AT, "done": False,
                               **_content(field, piece)})
        self._stream_line({**final, **_content(field, "")})

    def _embed(self, body: dict[str, Any]) -> None:
        name = body.get("model", "")
        if not self._require_model(name):
            return
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        dim = body.get("dimensions") or self.fake.embed_dim
        self._send_json(200, {
            "model": name,
            "embeddings": [fake_embedding(t, dim) for t in texts],
            "total_duration": LOAD_DURATION_NS * 2, "load_duration": LOAD_DURATION_NS,
            "prompt_eval_count": sum(count_tokens(t) for t in texts),
        })

    # -- plumbing -------------------------------------------------------------------------------

    def _require_model(self, name: str) -> bool:
        if self.fake.has_model(name):
            return True
        self._send_json(404, {"error": f"model '{name}' not found"})
        return False

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return None

    def _send_json(self, status: int, payload: Any) -> None:
        self._send_raw(status, json.dumps(payload).encode())

    def _send_raw(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()

    def _stream_line(self, payload: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(payload).encode() + b"\n")
        self.wfile.flush()


def _model_entry(name: str, digest: str) -> dict[str, Any]:
    return {"name": name, "model": name, "modified_at": CREATED_AT, "size": 1_000_000,
            "digest": digest, "details": _details()}


def _details() -> dict[str, Any]:
    return {"format": "gguf", "family": "fake", "families": ["fake"],
            "parameter_size": "1M", "quantization_level": "Q4_0"}


def _content(field: str, text: str) -> dict[str, Any]:
    if field == "message":
        return {"message": {"role": "assistant", "content": text}}
    return {"response": text}


def _pieces(text: str, words: int) -> list[str]:
    """Split `text` into stream chunks of a few words; joining them gives `text` back."""
    tokens = text.split(" ")
    step = max(1, words)
    chunks = [" ".join(tokens[i:i + step]) for i in range(0, len(tokens), step)]
    return [c + " " if i < len(chunks) - 1 else c for i, c in enumerate(chunks)]
