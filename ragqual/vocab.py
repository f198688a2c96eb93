"""Shared vocabulary every layer may import: what a chat model is asked and answers, and the
small protocols the retrieval tier's parts meet.

It imports nothing of ragqual, so core, store, adapters, engine, pipeline, subjects and the CLI
can all name these types without an arrow pointing up. A new chat backend implements `ChatModel`
(in `ragqual.adapters`) and registers in `ragqual.adapters.model_registry`; the trial loop only
sees this interface.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class ChatMessage:
    """One message of a chat request."""

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
    """A chat model's answer, its raw response and what the call cost (None when the backend does not say)."""

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


class DenseIndex(Protocol):
    """A vector index the retriever searches (adapters.qdrant_store, adapters.search_cache)."""

    def search(self, vector: np.ndarray, limit: int, score_threshold: float | None = None) -> list[Any]: ...

    def search_batch(self, vectors: np.ndarray, limit: int) -> list[list[Any]]: ...


class QueryEmbedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class ResultMemo(Protocol):
    """Where BM25 rankings of earlier runs are kept (adapters.search_cache.SearchCache)."""

    def key(self, kind: str, **fields: Any) -> str: ...

    def keyer(self, kind: str, vary: str, **fields: Any) -> Callable[[str], str]: ...

    def get(self, key: str, valid: Any) -> Any | None: ...

    def put(self, key: str, value: Any) -> None: ...
