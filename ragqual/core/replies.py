"""Where a stored raw output holds the model's answer, in every layout the history has.

A backend's raw response holds the answer where its server put it: `message.content` (Ollama's
chat shape, and the mock's), `response` (Ollama's generate shape), or the first choice's
`message.content` or `text` (OpenAI-compatible servers, llama.cpp). OpenAI-compatible and
llama.cpp responses written before the answer was stored once (and still in the response cache)
also copy it to a top-level `message.content`.

The RAG subject's raw output wraps that response as `backend`. Rows written before the answer was
stored once also copy it to a top-level `message.content`, so they hold it twice; new rows hold it
only inside `backend`. A replayed answer (`answers:`) holds it as `message.content`, with no
backend. `answer_in` reads every one of these, so old and new rows read identically.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def answer_in(raw: Any) -> str | None:
    """The answer text of a raw response or raw output: `message.content`, else `response`, else
    the first choice's `message.content` or `text` (OpenAI's and llama.cpp's shapes), else the
    same inside `backend`; None when there is none."""
    if not isinstance(raw, Mapping):
        return None
    found = _first_text(_content(raw.get("message")), raw.get("response"))
    choices = raw.get("choices")
    if found is None and isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        found = _first_text(_content(choices[0].get("message")), choices[0].get("text"))
    if found is not None:
        return found
    backend = raw.get("backend")
    return answer_in(backend) if isinstance(backend, Mapping) and backend is not raw else None


def _content(message: Any) -> Any:
    """A chat message's content (None when `message` is not a mapping)."""
    return message.get("content") if isinstance(message, Mapping) else None


def _first_text(*candidates: Any) -> str | None:
    return next((str(c) for c in candidates if isinstance(c, str)), None)


def holding(answer: str, response: dict[str, Any]) -> dict[str, Any]:
    """A backend's raw `response` that `answer_in` reads `answer` from: the response as it is when
    it already holds exactly that text, else with the answer added as `message.content`."""
    if answer_in(response) == answer:
        return response
    return {**response, "message": {"role": "assistant", "content": answer}}


def without_copy(answer: str, backend: Any) -> dict[str, Any]:
    """A subject's raw output for `answer` given by a backend's raw response: the response as
    `backend`, and the answer again as a top-level `message` only when the response does not
    already hold exactly that text (the answer is then stored once)."""
    if answer_in(backend) == answer:
        return {"backend": backend}
    return {"message": {"role": "assistant", "content": answer}, "backend": backend}
