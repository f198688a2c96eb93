"""The small interface every chat-model backend implements (mock, Ollama, llama.cpp, OpenAI-compatible).

The trial loop only sees `ChatModel`; a new backend is a new class here plus an
entry in `ragqual.adapters.model_registry`, never a change to the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """Everything that can change an answer. All of it enters the response-cache key."""

    system: str
    messages: tuple[ChatMessage, ...]
    options: dict[str, Any] = field(default_factory=dict)  # temperature, seed, top_p, num_ctx, num_predict...
    format: str | dict[str, Any] | None = None  # "json" or a JSON schema, or None for text

    def key_material(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "options": self.options,
            "format": self.format,
        }


@dataclass(frozen=True)
class ChatResponse:
    text: str
    raw: dict[str, Any]  # JSON-able raw response as the backend returned it
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    load_ms: float | None = None
    cost: float | None = None


@runtime_checkable
class ChatModel(Protocol):
    provider: str  # "mock", "ollama", "llamacpp", "openai"
    name: str  # model name as the user gave it

    def digest(self) -> str | None:
        """A content digest of the model weights when the backend reports one."""

    def warm_up(self) -> None:
        """Prepare for scoring (evict other models, one throwaway generation)."""

    def chat(self, request: ChatRequest) -> ChatResponse:
        ...

# A backend may also define `ensure_available() -> None`, raising ServiceUnavailable when the
# model is missing; the trial loop calls it before a run starts (Ollama does).
