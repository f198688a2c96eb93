"""What a subject may use during a trial: one way to call a model, through the response cache.

`call` resolves the variant's model (once per model URI), builds the response-cache key from
the provider, model name, model digest, the full request and the repeat index, and asks the
cache. Only a real miss reaches the model; before the first real call to a model it is warmed
up once (evict other models, one throwaway generation), so cache hits and replays never wake
a server. The warm-up is one call with the backend's retries (RAGQUAL_MODEL_RETRIES), tried once
per model whether or not it succeeds: a warm-up that fails every attempt is that trial's error
("the warm-up call failed: ..."), never repeated by the next trial. Every attempt of every call reports to
the run's circuit breaker (`engine.breaker`). Counters let callers and tests see exactly how
many model calls a run made.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from ragqual.adapters.cache import ResponseCache
from ragqual.vocab import ChatModel, ChatRequest, ChatResponse
from ragqual.core.cachekey import request_json, response_cache_key
from ragqual.engine.axes import Axis, key_options
from ragqual.engine.breaker import CircuitBreaker, breaker_threshold
from ragqual.engine.subject import Variant
from ragqual.errors import ModelCallFailed

ModelFactory = Callable[[str], ChatModel]
_ENCODED_HELD = 4096  # request encodings held (`TrialServices._request_json`); beyond, they start afresh


def _warm(model: ChatModel, options: dict[str, Any]) -> None:
    """Warm up with the trial options when the backend accepts them (a context size reloads Ollama)."""
    try:
        accepts = "options" in inspect.signature(model.warm_up).parameters
    except (TypeError, ValueError):
        accepts = False
    if accepts:
        model.warm_up(options=options)  # type: ignore[call-arg]
    else:
        model.warm_up()


def ensure_available(model: ChatModel) -> None:
    """Ask a backend that can tell (Ollama, OpenAI-compatible servers: `ensure_available`) whether
    its server answers and has the model; ServiceUnavailable (exit 3) when not."""
    ensure = getattr(model, "ensure_available", None)
    if ensure is not None:
        ensure()


class TrialServices:
    """Model access for subjects; safe to use from several worker threads at once."""

    def __init__(self, cache: ResponseCache, model_factory: ModelFactory, *, warm_up: bool = True,
                 breaker: CircuitBreaker | None = None, axes: tuple[Axis, ...] = ()):
        self.cache = cache
        self.axes = axes
        self.breaker = breaker
        self._factory = model_factory
        self._warm_up = warm_up
        self._models: dict[str, ChatModel] = {}
        self._replays: dict[str, bool] = {}  # per model URI: the model replays a file of answers
        self._warmed: set[str] = set()
        self._lock = threading.Lock()
        self._warm_lock = threading.Lock()
        self._encoded: dict[tuple[int, int], tuple[ChatRequest, Variant, bytes]] = {}
        self.model_calls = 0
        self.cache_hits = 0
        self.warm_ups = 0

    def model(self, variant: Variant) -> ChatModel:
        """The chat model of a variant, built once per model URI. A model once built is read
        without the lock (a model is never replaced or removed, and a dict read is atomic)."""
        built = self._models.get(variant.model)
        if built is not None:
            return built
        with self._lock:
            if variant.model not in self._models:
                model = self._factory(variant.model)
                if self.breaker is not None and hasattr(model, "observer"):
                    model.observer = self.breaker  # backends with retries report each attempt
                self._models[variant.model] = model
            return self._models[variant.model]

    def describe(self, variant: Variant) -> dict[str, Any]:
        """Provider, model name and digest: asks the backend for the digest (not a model call),
        after `ensure_available` (which refuses a server that never answers or lacks the model)."""
        model = self.model(variant)
        if self.cache.mode != "replay":  # a replay calls no model: its server need not be up
            ensure_available(model)
        return {"provider": model.provider, "model": model.name, "digest": model.digest()}

    def replays(self, variant: Variant) -> bool:
        """Whether the variant's model replays a file of answers (`answers:`), calling nothing: a
        property of the model, which is built once per URI, so it is looked at once per URI (the
        trial loop asks for every trial)."""
        found = self._replays.get(variant.model)
        if found is None:
            found = self._replays[variant.model] = callable(getattr(self.model(variant), "lookup", None))
        return found

    def replayed(self, variant: Variant, case_id: str, mode: str) -> tuple[Any, Any]:
        """(the answers file, its entry for one trial): ModelCallFailed when the file has none."""
        model: Any = self.model(variant)
        return model.answers, model.lookup(case_id, mode)

    def cache_key(self, variant: Variant, request: ChatRequest, repeat_index: int) -> str:
        """The response-cache key. A variant built from declared axes keys on exactly what is
        declared: every axis value (so a declared axis always changes the key, even where the
        request would not differ, such as a retrieval setting in oracle mode) and only the options
        of declared `call` axes (so an undeclared incidental option never changes it)."""
        return self._key(self.model(variant), variant, request, repeat_index)

    def _key(self, model: ChatModel, variant: Variant, request: ChatRequest, repeat_index: int) -> str:
        """`cache_key` with the variant's model at hand (`call` has it already)."""
        return response_cache_key(
            provider=model.provider, model=model.name, digest=model.digest(),
            request_json=self._request_json(variant, request), repeat_index=repeat_index,
        )

    def _request_json(self, variant: Variant, request: ChatRequest) -> bytes:
        """The canonical JSON of what the key reads of `request` (`cache_key`), as UTF-8, encoded once per
        request object and variant: a subject that hands every repeat the same request (the RAG
        subject does) has its long prompt encoded once, not once per repeat."""
        key = (id(request), id(variant))
        held = self._encoded.get(key)
        if held is not None and held[0] is request and held[1] is variant:
            return held[2]
        material = request.key_material()
        if variant.axes:
            material = {**material, "options": key_options(request.options, self.axes),
                        "axes": dict(sorted(variant.axes.items()))}
        encoded = request_json(material).encode("utf-8")
        if len(self._encoded) >= _ENCODED_HELD:
            self._encoded.clear()
        self._encoded[key] = (request, variant, encoded)
        return encoded

    def call(self, variant: Variant, request: ChatRequest, repeat_index: int) -> tuple[ChatResponse, str, bool]:
        """(response, cache key, cache hit). In replay mode a miss raises CacheMiss, calling nothing."""
        model = self.model(variant)
        key = self._key(model, variant, request, repeat_index)

        def real_call() -> ChatResponse:
            self._ensure_warm(variant.model, model, request.options)
            with self._lock:
                self.model_calls += 1
            return model.chat(request)

        response, hit = self.cache.get_or_call(key, real_call)
        if hit:
            with self._lock:
                self.cache_hits += 1
        return response, key, hit

    def _ensure_warm(self, uri: str, model: ChatModel, options: dict[str, Any]) -> None:
        if not self._warm_up:
            return
        with self._warm_lock:
            if uri in self._warmed:
                return
            self._warmed.add(uri)  # before the call: a warm-up that fails is not repeated per trial
            self.warm_ups += 1
            try:
                _warm(model, dict(options))
            except ModelCallFailed as failed:  # recorded on the trial that asked for it: say so
                raise ModelCallFailed(f"the warm-up call failed: {failed}", reason=failed.reason,
                                      attempts=failed.attempts) from None


def services_for(subject: Any, cache: ResponseCache, *, ollama_host: str | None = None,
                 warm_up: bool = True, max_failures: int | None = None) -> TrialServices:
    """Services whose models come from `model_registry`, with the subject's own mock, and a
    circuit breaker of `max_failures` (else RAGQUAL_MAX_FAILURES, else 5) consecutive failures."""
    from ragqual.adapters.model_registry import make_model
    from ragqual.engine.subject import Subject

    has_mock = type(subject).mock_reply is not Subject.mock_reply
    reply = subject.mock_reply if has_mock else None
    return TrialServices(
        cache, lambda uri: make_model(uri, mock_reply=reply, ollama_host=ollama_host), warm_up=warm_up,
        breaker=CircuitBreaker(breaker_threshold(max_failures)), axes=tuple(getattr(subject, "axes", ())),
    )
