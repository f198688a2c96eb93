"""The Ollama chat backend, spoken through the official `ollama` client.

Every failure the client can raise is translated here into the ragqual error tree:

    builtin ConnectionError, httpx.ConnectError,
    httpx.ConnectTimeout, other TransportError -> retried with backoff; when every attempt failed,
                                               ServiceUnavailable (not reachable, how to start it)
                                               while the server has never answered, else
                                               ModelCallFailed "failed after N attempts"
    ResponseError 404 (model not found)     -> ServiceUnavailable (names `ollama pull <model>`)
    the whole call over its time limit      -> retried with backoff, then ModelCallFailed
                                               (the limit bounds the whole call: adapters.deadline)
    ResponseError 5xx (or a streamed error) -> retried with backoff, then ModelCallFailed
    other ResponseError (4xx)               -> ModelCallFailed, not retried
    unparseable JSON / unexpected shape,    -> ModelCallFailed "malformed", not retried
      a message whose content is null

The client raises the builtin `ConnectionError` when a plain request cannot connect,
but a streamed request lets `httpx.ConnectError` through untouched, so both are caught.
`ModelCallFailed` is the one a trial loop may record against a single trial and go on;
a plain `ServiceUnavailable` means no further call can succeed. A password in the host URL is
registered with `ragqual.core.redact`, and every text taken from the server is redacted.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

import httpx
import ollama
import pydantic

from ragqual.adapters.deadline import call_deadline, deadline_transport
from ragqual.adapters.llm import ChatRequest, ChatResponse
from ragqual.adapters.retry import AttemptObserver, Retryable, with_retries
from ragqual.core.redact import redact_text, remember_url_secrets
from ragqual.errors import InputError, ModelCallFailed, ServiceUnavailable  # noqa: F401 - ModelCallFailed re-exported

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 42}
WARM_UP_PROMPT = "Reply with the single word: ready."
WARM_UP_NUM_PREDICT = 8
_MAX_ERROR_TEXT = 300

T = TypeVar("T")


class _Malformed(Exception):
    """Internal: the server answered, but not with anything a chat reply can be built from."""


def resolve_host(host: str | None = None) -> str:
    """Explicit host, else `OLLAMA_HOST`, else the local default (its password registered)."""
    resolved = host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
    remember_url_secrets(resolved)
    return resolved


def with_default_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Temperature 0 and a fixed seed unless the caller set them; everything else passes through."""
    return {**DEFAULT_OPTIONS, **(options or {})}


def _one_line(text: str, limit: int = _MAX_ERROR_TEXT) -> str:
    """One line of text from a server, credentials masked, at most `limit` characters."""
    flat = redact_text(" ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _same_model(a: str | None, b: str | None) -> bool:
    """Ollama treats `name` and `name:latest` as one model."""
    if not a or not b:
        return False
    return _with_tag(a) == _with_tag(b)


def _with_tag(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _unreachable(host: str) -> ServiceUnavailable:
    return ServiceUnavailable(
        f"Ollama is not reachable at {redact_text(host)}: start it with `ollama serve` "
        "or pass --ollama-host / set OLLAMA_HOST"
    )


def _missing(model: str, host: str) -> ServiceUnavailable:
    return ServiceUnavailable(f"model '{model}' is not present on {redact_text(host)}: run `ollama pull {model}`")


def _is_missing_model(err: ollama.ResponseError) -> bool:
    """A 404, or an error streamed without a status (-1) that says so."""
    return err.status_code == 404 or (err.status_code == -1 and "not found" in str(err.error).lower())


class _Caller:
    """Runs one client call with the error translation and the retry policy above."""

    def __init__(self, host: str, model: str, timeout: float, retries: int, backoff: float,
                 sleep: Callable[[float], None]):
        if retries < 0:
            raise InputError(f"retries must be 0 or more, got {retries}")
        self.host, self.model, self.timeout = redact_text(host), model, timeout  # host: as messages name it
        self.retries, self.backoff, self.sleep = retries, backoff, sleep
        self.observer: AttemptObserver | None = None  # the run's circuit breaker, when there is one
        self.answered = False  # the server has answered once: it was reachable at the start

    def run(self, call: Callable[[], T], model: str | None = None) -> T:
        """Call, retrying what is worth retrying; `model` names another model in messages."""
        model = model or self.model
        return with_retries(lambda: self._translated(call, model), retries=self.retries, backoff=self.backoff,
                            sleep=self.sleep, gave_up=lambda failure, n: self._gave_up(failure, n, model),
                            observer=self.observer)

    def _translated(self, call: Callable[[], T], model: str) -> T:
        try:
            with call_deadline(self.timeout):
                result = call()
        except (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError) as err:
            raise self._transport_failure(err, f"{type(err).__name__}: cannot connect to Ollama at "
                                               f"{self.host}") from None
        except httpx.TimeoutException as err:
            raise Retryable("timeout", type(err).__name__) from None
        except httpx.TransportError as err:
            raise self._transport_failure(err) from None
        except ollama.ResponseError as err:
            self.answered = True
            raise self._response_error(err, model) from None
        except (json.JSONDecodeError, pydantic.ValidationError, _Malformed) as err:
            raise ModelCallFailed(
                f"malformed response from Ollama at {self.host}: {_one_line(str(err))}",
                reason="malformed", attempts=1,
            ) from None
        self.answered = True
        return result

    def _transport_failure(self, err: Exception, detail: str | None = None) -> Retryable:
        """One failed attempt, retried; `_gave_up` says "unreachable" only if nothing ever answered."""
        return Retryable("transport", detail or f"{type(err).__name__} from Ollama at {self.host}: "
                                                f"{_one_line(str(err), 120)}")

    def _response_error(self, err: ollama.ResponseError, model: str) -> Exception:
        if model and _is_missing_model(err):
            return _missing(model, self.host)
        text = _one_line(err.error)
        if err.status_code >= 500 or err.status_code == -1:
            return Retryable("server_error", f"HTTP {err.status_code}: {text}"
                              if err.status_code != -1 else text)
        return ModelCallFailed(
            f"Ollama at {self.host} rejected the call to '{model}' "
            f"(HTTP {err.status_code}): {text}",
            reason="rejected", attempts=1,
        )

    def _gave_up(self, failure: Retryable, attempts: int, model: str) -> ServiceUnavailable:
        if not self.answered and failure.reason == "transport":
            return _unreachable(self.host)
        if failure.reason == "timeout":
            message = (f"model '{model}' on {self.host} timed out after {attempts} attempts "
                       f"({self.timeout:g} s each)")
        else:
            message = (f"Ollama at {self.host} failed on '{model}' after {attempts} attempts: "
                       f"{failure.detail}")
        return ModelCallFailed(message, reason=failure.reason, attempts=attempts)


class OllamaChatModel:
    """A `ChatModel` served by Ollama; deterministic by default (temperature 0, seed 42)."""

    provider = "ollama"

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        backoff: float = 0.5,
        stream: bool = False,
        keep_alive: float | str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.name = model
        self.host = resolve_host(host)
        self.timeout = timeout
        self.stream = stream
        self.keep_alive = keep_alive
        self._client = ollama.Client(host=self.host, timeout=timeout, transport=deadline_transport())
        self._caller = _Caller(self.host, model, timeout, retries, backoff, sleep)
        self._digest: str | None = None
        self._digest_known = False

    @property
    def observer(self) -> AttemptObserver | None:
        return self._caller.observer

    @observer.setter
    def observer(self, value: AttemptObserver | None) -> None:
        self._caller.observer = value

    def chat(self, request: ChatRequest) -> ChatResponse:
        messages = self._messages(request)
        options = with_default_options(request.options)
        return self._caller.run(lambda: self._chat_once(messages, options, request.format))

    def digest(self) -> str | None:
        """The digest `/api/tags` reports for this model, looked up once per instance."""
        if not self._digest_known:
            listed = self._caller.run(self._client.list)
            self._digest = next(
                (m.digest for m in listed.models if _same_model(m.model, self.name)), None
            )
            self._digest_known = True
        return self._digest

    def ensure_available(self) -> None:
        """Refuse before a run starts when the server does not have the model."""
        if self.digest() is None:
            raise _missing(self.name, self.host)

    def warm_up(self, options: Mapping[str, Any] | None = None) -> None:
        """Unload every other resident model, then burn one generation with this one.

        Pass the trial options (notably `num_ctx`) so the model is loaded the way the
        trials will use it; a different context size makes Ollama reload it.
        """
        for other in self.resident_models():
            if not _same_model(other, self.name):
                self._evict(other)
        burn = {**with_default_options(options), "num_predict": WARM_UP_NUM_PREDICT}
        self._caller.run(lambda: self._client.generate(
            model=self.name, prompt=WARM_UP_PROMPT, options=burn, keep_alive=self.keep_alive
        ))

    def _evict(self, other: str) -> None:
        self._caller.run(lambda: self._client.generate(model=other, prompt="", keep_alive=0), other)

    def resident_models(self) -> list[str]:
        """Names of the models the server holds in memory now (`/api/ps`)."""
        running = self._caller.run(self._client.ps)
        return [m.model or m.name or "" for m in running.models if (m.model or m.name)]

    def _messages(self, request: ChatRequest) -> list[dict[str, str]]:
        head = [{"role": "system", "content": request.system}] if request.system else []
        return head + [{"role": m.role, "content": m.content} for m in request.messages]

    def _chat_once(self, messages: list[dict[str, str]], options: dict[str, Any],
                   fmt: str | dict[str, Any] | None) -> ChatResponse:
        started = time.perf_counter()
        wire_format = _wire_format(fmt)
        if self.stream:
            text, final = _gather(self._client.chat(
                self.name, messages=messages, options=options, format=wire_format,
                stream=True, keep_alive=self.keep_alive,
            ))
        else:
            reply = self._client.chat(
                self.name, messages=messages, options=options, format=wire_format,
                stream=False, keep_alive=self.keep_alive,
            )
            if reply.message.content is None:
                raise _Malformed("the reply's message content is null")
            text, final = reply.message.content, reply
        latency_ms = (time.perf_counter() - started) * 1000.0
        return _to_response(text, final, latency_ms)


def _wire_format(fmt: str | dict[str, Any] | None) -> Literal["", "json"] | dict[str, Any] | None:
    """The request's format as Ollama takes it: "json", a JSON schema, or none."""
    if fmt is None or isinstance(fmt, dict):
        return fmt
    if fmt == "json":
        return "json"
    if fmt == "":
        return ""
    raise InputError(f"unsupported response format {fmt!r}: use \"json\" or a JSON schema")


def _gather(chunks: Iterable[ollama.ChatResponse]) -> tuple[str, ollama.ChatResponse]:
    """Join a streamed answer; the last chunk carries the telemetry."""
    parts: list[str] = []
    final: ollama.ChatResponse | None = None
    for chunk in chunks:
        parts.append(chunk.message.content or "")
        final = chunk
    if final is None:
        raise _Malformed("the stream ended without a single chunk")
    return "".join(parts), final


def _to_response(text: str, final: ollama.ChatResponse, latency_ms: float) -> ChatResponse:
    raw = final.model_dump(mode="json", exclude_none=True)
    raw.setdefault("message", {})["content"] = text
    return ChatResponse(
        text=text,
        raw=raw,
        prompt_tokens=final.prompt_eval_count,
        completion_tokens=final.eval_count,
        latency_ms=latency_ms,
        load_ms=None if final.load_duration is None else final.load_duration / 1e6,
        cost=None,
    )


def list_local_models(host: str | None = None, *, timeout: float = 10.0) -> list[str]:
    """Names of the models pulled on the server (`/api/tags`), sorted."""
    resolved = resolve_host(host)
    client = ollama.Client(host=resolved, timeout=timeout)
    caller = _Caller(resolved, "", timeout, retries=0, backoff=0.0, sleep=time.sleep)
    listed = caller.run(client.list)
    return sorted(m.model for m in listed.models if m.model)
