"""Where a stored raw output holds the model's answer, in every layout the history has.

A backend's raw response holds the answer as `message.content` (Ollama's shape, which every
backend mirrors; `response` in Ollama's generate shape). The RAG subject's raw output wraps that
response as `backend`: before the change that stores it once, it also copied the answer to a
top-level `message.content`, so old rows hold it twice; new rows hold it only as
`backend.message.content`. A replayed answer (`answers:`) holds it as `message.content`, with
no backend. `answer_in` reads every one of these, so old and new rows read identically.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def answer_in(raw: Any) -> str | None:
    """The answer text of a raw response or raw output: `message.content`, else `response`, else
    the same inside `backend`; None when there is none."""
    if not isinstance(raw, Mapping):
        return None
    message = raw.get("message")
    if isinstance(message, Mapping) and isinstance(message.get("content"), str):
        return str(message["content"])
    if isinstance(raw.get("response"), str):
        return str(raw["response"])
    backend = raw.get("backend")
    return answer_in(backend) if isinstance(backend, Mapping) and backend is not raw else None


def without_copy(answer: str, backend: Any) -> dict[str, Any]:
    """A subject's raw output for `answer` given by a backend's raw response: the response as
    `backend`, and the answer again as a top-level `message` only when the response does not
    already hold exactly that text (the answer is then stored once)."""
    if answer_in(backend) == answer:
        return {"backend": backend}
    return {"message": {"role": "assistant", "content": answer}, "backend": backend}
