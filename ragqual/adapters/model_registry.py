"""Model URIs to chat models: the one place that knows which backends exist.

    mock              MockChatModel(the subject's mock reply)
    ollama:<model>    OllamaChatModel(<model>) on --ollama-host / OLLAMA_HOST
    llamacpp:<path-or-alias>
                      LlamaCppChatModel: a GGUF file run in-process, or an alias such as
                      gemma3-270m (extra `ragqual[llamacpp]`)
    openai:<base-url>#<model>
                      OpenAIChatModel: any OpenAI-compatible server, e.g.
                      openai:http://127.0.0.1:8080/v1#gemma
    answers:<file.jsonl>
                      AnswersModel: answers produced elsewhere, replayed from a JSONL file
                      (adapters.answers_model); calls no model

A new backend is one builder function and one entry in BUILDERS; the trial loop never changes.

How long one model call may take before it counts as timed out (and is retried) comes from the
caller, else the environment variable RAGQUAL_MODEL_TIMEOUT (seconds), else 120 s; the limit
bounds the whole call, however slowly the server sends. How many times a failed call is tried
again comes from the caller, else RAGQUAL_MODEL_RETRIES, else 2.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragqual.adapters.llm import ChatModel, ChatRequest
from ragqual.errors import InputError

TIMEOUT_ENV = "RAGQUAL_MODEL_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
RETRIES_ENV = "RAGQUAL_MODEL_RETRIES"
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class ModelOptions:
    """What a builder may need besides the URI; backends ignore what they do not use."""

    mock_reply: Callable[[ChatRequest], str] | None = None
    ollama_host: str | None = None
    timeout: float = 120.0
    retries: int = 2
    extra: dict[str, Any] | None = None


def _mock(name: str, opts: ModelOptions) -> ChatModel:
    from ragqual.adapters.mock_model import MockChatModel

    if name:
        raise InputError(f"the mock model takes no name, got 'mock:{name}': use --model mock")
    if opts.mock_reply is None:
        raise InputError("this subject has no mock model: pass --model ollama:<model>")
    return MockChatModel(opts.mock_reply)


def _ollama(name: str, opts: ModelOptions) -> ChatModel:
    from ragqual.adapters.ollama_chat import OllamaChatModel

    if not name:
        raise InputError("an Ollama model URI needs a model name: ollama:<model>, e.g. ollama:qwen2.5:0.5b")
    return OllamaChatModel(name, host=opts.ollama_host, timeout=opts.timeout, retries=opts.retries)


def _llamacpp(name: str, opts: ModelOptions) -> ChatModel:
    from ragqual.adapters.llamacpp_model import LlamaCppChatModel

    extra = opts.extra or {}
    return LlamaCppChatModel(name, n_threads=extra.get("n_threads"), n_ctx=extra.get("n_ctx"))


def _openai(name: str, opts: ModelOptions) -> ChatModel:
    from ragqual.adapters.openai_model import OpenAIChatModel, parse_target

    base_url, model = parse_target(name)
    return OpenAIChatModel(base_url, model, timeout=opts.timeout, retries=opts.retries)


def _answers(name: str, opts: ModelOptions) -> ChatModel:
    from ragqual.adapters.answers_model import AnswersModel

    return AnswersModel(name.strip())


# scheme -> builder(name after the first colon, options).
BUILDERS: dict[str, Callable[[str, ModelOptions], ChatModel]] = {
    "mock": _mock,
    "ollama": _ollama,
    "llamacpp": _llamacpp,
    "openai": _openai,
    "answers": _answers,
}

REPLAY_SCHEMES = ("answers",)
"""Schemes whose model replays stored answers: the trial loop asks `lookup`, never `chat`."""


def split_uri(uri: str) -> tuple[str, str]:
    """("ollama", "qwen2.5:0.5b") from "ollama:qwen2.5:0.5b"; an unknown scheme lists the valid ones."""
    scheme, _, name = uri.strip().partition(":")
    if scheme not in BUILDERS:
        valid = ", ".join(s if s == "mock" else f"{s}:<file>" if s in REPLAY_SCHEMES else f"{s}:<model>"
                          for s in BUILDERS)
        raise InputError(f"unknown model {uri!r}: valid models are {valid}")
    return scheme, name


def model_timeout(timeout: float | None = None) -> float:
    """Seconds one model call may take: `timeout`, else RAGQUAL_MODEL_TIMEOUT, else 120."""
    if timeout is not None:
        return timeout
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InputError(f"{TIMEOUT_ENV} must be a number of seconds above 0, got {raw!r}")
    return seconds


def model_retries(retries: int | None = None) -> int:
    """Retries after a failed attempt: `retries`, else RAGQUAL_MODEL_RETRIES, else 2."""
    if retries is not None:
        return retries
    raw = os.environ.get(RETRIES_ENV, "").strip()
    if not raw:
        return DEFAULT_RETRIES
    if not raw.isdigit():
        raise InputError(f"{RETRIES_ENV} must be a whole number of retries (0 or more), got {raw!r}")
    return int(raw)


def make_model(
    uri: str,
    *,
    mock_reply: Callable[[ChatRequest], str] | None = None,
    ollama_host: str | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    **extra: Any,
) -> ChatModel:
    """Build the chat model a URI names (`timeout`, `retries` None: see `model_timeout`, `model_retries`)."""
    scheme, name = split_uri(uri)
    opts = ModelOptions(mock_reply=mock_reply, ollama_host=ollama_host, timeout=model_timeout(timeout),
                        retries=model_retries(retries), extra=extra or None)
    return BUILDERS[scheme](name, opts)
