"""The `mock` chat model: a deterministic stand-in that needs no server.

Each subject supplies its own reply function (a keyword baseline, an echo of the context...).
Telemetry is estimated, not measured against a real tokenizer: tokens are whitespace-separated
words, latency is the time the reply function took, and cost is 0.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from ragqual.adapters.llm import ChatRequest, ChatResponse
from ragqual.core.hashing import sha256_hex

MOCK_VERSION = "mock-v1"
Reply = Callable[[ChatRequest], str]


def _words(text: str) -> int:
    return len(text.split())


def reply_fingerprint(reply: Reply) -> str:
    """A short hash of the reply function's source, so an edited baseline is a new cache key."""
    target: Any = getattr(reply, "__func__", reply)
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):
        source = getattr(target, "__qualname__", repr(target))
    return sha256_hex(source)[:16]


class MockChatModel:
    """A `ChatModel` whose answer is `reply(request)`; the same request always gets the same answer."""

    provider = "mock"

    def __init__(self, reply: Reply, name: str = "mock"):
        self.name = name
        self._reply = reply
        self._digest = f"{MOCK_VERSION}:{reply_fingerprint(reply)}"

    def digest(self) -> str:
        """`mock-v1` plus a hash of the reply function: changing the baseline misses the cache."""
        return self._digest

    def warm_up(self) -> None:
        """Nothing to load."""

    def chat(self, request: ChatRequest) -> ChatResponse:
        started = time.perf_counter()
        text = self._reply(request)
        latency_ms = (time.perf_counter() - started) * 1000.0
        prompt = " ".join([request.system, *(m.content for m in request.messages)])
        return ChatResponse(
            text=text,
            raw={"model": self.name, "message": {"role": "assistant", "content": text}, "done": True},
            prompt_tokens=_words(prompt),
            completion_tokens=_words(text),
            latency_ms=latency_ms,
            load_ms=None,
            cost=0.0,
        )
