"""Any OpenAI-compatible chat server: `openai:<base-url>#<model>` (llama.cpp server, vLLM, LM Studio...).

Spoken with plain `httpx`: POST `<base-url>/chat/completions`. The request options use the same
(Ollama) names as every other backend and are translated here:

    temperature, top_p, seed, stop,           sent as they are (temperature 0 and seed 42
    presence_penalty, frequency_penalty,      unless the request says otherwise; logprobs /
    logprobs, top_logprobs                    top_logprobs: token probabilities, for the judge)
    num_predict                               max_tokens (default 256: some servers stop at 16)
    format "json" / a JSON schema             response_format json_object / json_schema
    anything else (num_ctx, top_k...)         not sent; listed in raw["ignored_options"]

The API key comes from `$RAGQUAL_OPENAI_API_KEY`, else `$OPENAI_API_KEY`, sent as a Bearer token
when set. `name` is the whole `<base-url>#<model>`, so two servers that both call a model "gemma"
never share cached answers. The key and any password in the base URL are registered with
`ragqual.core.redact`, so a server that echoes them back (an error body repeating the request
headers) cannot get them into a stored error or a printed message; every text taken from a
server is redacted here too.

`raw` is the server's JSON body, which holds the reply once as `choices[0].message.content`
(ragqual.core.replies reads it there), plus `ignored_options` when some were not sent. Responses
cached before the reply was stored once also hold it as a top-level `message.content`.

digest() is None: `/models` lists ids and owners (and, for some servers, a creation time that
changes at every restart), nothing derived from the weights. Cached answers are therefore keyed
by URL and model name; clear the cache when the weights behind a name change.

Before a run is created, `ensure_available` asks `GET <base-url>/models` (with the same retries
as a call): a server that never answers is refused there, so no run is recorded. Any HTTP answer
counts as reachable, except 401/403 (the key is refused); a server without `/models` is not
refused for that, since the warm-up tells.

Errors, as for the Ollama backend:

    connection refused, DNS, dropped or reset -> retried with backoff (the warm-up as much as a
      connection, other transport                trial); when every attempt failed: ServiceUnavailable
                                                 "not reachable" while the server has never answered,
                                                 else ModelCallFailed "failed after N attempts"
    the whole call over its time limit,       -> retried with backoff, then ModelCallFailed
      HTTP 429, HTTP 5xx                         (the limit bounds the whole call: see adapters.deadline)
    HTTP 404                                  -> ServiceUnavailable (wrong base URL or model)
    HTTP 401 / 403                            -> ServiceUnavailable (names the key variables)
    other HTTP 4xx                            -> ModelCallFailed, not retried
    a body that is not a chat completion,     -> ModelCallFailed "malformed", not retried
      or whose message content is null
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from ragqual.adapters.deadline import call_deadline, deadline_transport
from ragqual.adapters.llm import ChatMessage, ChatRequest, ChatResponse
from ragqual.adapters.retry import AttemptObserver, Retryable, with_retries
from ragqual.core.replies import holding
from ragqual.core.redact import redact_text, remember_bearer, remember_url_secrets
from ragqual.errors import InputError, ModelCallFailed, ServiceUnavailable

KEY_VARIABLES = ("RAGQUAL_OPENAI_API_KEY", "OPENAI_API_KEY")
DEFAULT_OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 42}
DEFAULT_NUM_PREDICT = 256
WARM_UP_PROMPT = "Reply with the single word: ready."
WARM_UP_NUM_PREDICT = 4
_PASSED = ("temperature", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty", "logprobs",
           "top_logprobs")
_MAX_ERROR_TEXT = 300


def parse_target(target: str) -> tuple[str, str]:
    """("http://h:8080/v1", "gemma") from "http://h:8080/v1#gemma"."""
    base, sep, model = target.strip().rpartition("#")
    if not sep or not base or not model.strip():
        raise InputError(f"an OpenAI-compatible model URI is openai:<base-url>#<model>, "
                         f"e.g. openai:http://127.0.0.1:8080/v1#gemma; got 'openai:{target}'")
    if not base.startswith(("http://", "https://")):
        raise InputError(f"the base URL must start with http:// or https://, got '{base}'")
    return base.rstrip("/"), model.strip()


def api_key_from_env() -> str | None:
    return next((os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None)


def request_body(model: str, request: ChatRequest) -> tuple[dict[str, Any], list[str]]:
    """(the /chat/completions JSON body, names of the options it does not carry)."""
    options = {**DEFAULT_OPTIONS, **request.options}
    body: dict[str, Any] = {"model": model, "messages": _messages(request.system, request.messages)}
    body.update({k: options[k] for k in _PASSED if k in options})
    body["max_tokens"] = int(options.get("num_predict", DEFAULT_NUM_PREDICT))
    if request.format is not None:
        body["response_format"] = _response_format(request.format)
    ignored = sorted(k for k in options if k not in _PASSED and k != "num_predict")
    return body, ignored


def _messages(system: str, messages: tuple[ChatMessage, ...]) -> list[dict[str, str]]:
    head = [{"role": "system", "content": system}] if system else []
    return head + [{"role": m.role, "content": m.content} for m in messages]


def _response_format(fmt: str | dict[str, Any]) -> dict[str, Any]:
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, dict):
        return {"type": "json_schema", "json_schema": {"name": "response", "schema": fmt}}
    raise InputError(f"unknown response format {fmt!r}: use 'json' or a JSON schema")


def _one_line(text: str, limit: int = _MAX_ERROR_TEXT) -> str:
    """One line of text from a server, credentials masked, at most `limit` characters."""
    flat = redact_text(" ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _error_text(response: httpx.Response) -> str:
    """The server's own error message when it sent one as JSON, else the start of the body."""
    try:
        payload = response.json()
    except ValueError:
        return _one_line(response.text)
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        error = error.get("message", error)
    return _one_line(str(error))


class OpenAIChatModel:
    """A `ChatModel` behind an OpenAI-compatible `/chat/completions` endpoint."""

    provider = "openai"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout: float = 120.0, retries: int = 2, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep,
                 transport: httpx.BaseTransport | None = None):
        if retries < 0:
            raise InputError(f"retries must be 0 or more, got {retries}")
        self.base_url, self.model = base_url.rstrip("/"), model
        self.name = f"{self.base_url}#{model}"
        remember_url_secrets(self.base_url)
        self.shown_url = redact_text(self.base_url)  # what messages name
        self.timeout, self.retries, self.backoff, self.sleep = timeout, retries, backoff, sleep
        key = api_key if api_key is not None else api_key_from_env()
        remember_bearer(key)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport or deadline_transport())
        self.observer: AttemptObserver | None = None  # the run's circuit breaker, when there is one
        self._answered = False  # the server has answered at least once: it was reachable at the start

    def digest(self) -> None:
        """None: see the module docstring."""
        return None

    def ensure_available(self) -> None:
        """Refuse before a run starts when the server never answers (see the module docstring)."""
        url = f"{self.base_url}/models"
        with_retries(lambda: self._probe_once(url), retries=self.retries, backoff=self.backoff,
                     sleep=self.sleep, gave_up=self._gave_up)

    def _probe_once(self, url: str) -> None:
        try:
            with call_deadline(self.timeout):
                response = self._client.get(url)
        except httpx.TransportError as err:
            raise self._attempt_failure(err) from None
        self._answered = True
        if response.status_code in (401, 403):
            raise self._refused(response.status_code)

    def warm_up(self, options: Mapping[str, Any] | None = None) -> None:
        """One tiny generation, with the retries of any call: a server that never answered is
        ServiceUnavailable (the run stops), one that fails every attempt a ModelCallFailed."""
        self.chat(ChatRequest(system="", messages=(ChatMessage("user", WARM_UP_PROMPT),),
                              options={**(options or {}), "num_predict": WARM_UP_NUM_PREDICT}))

    def chat(self, request: ChatRequest) -> ChatResponse:
        body, ignored = request_body(self.model, request)
        return with_retries(lambda: self._chat_once(body, ignored), retries=self.retries, backoff=self.backoff,
                            sleep=self.sleep, gave_up=self._gave_up, observer=self.observer)

    def close(self) -> None:
        self._client.close()

    # -- one attempt ------------------------------------------------------------------------------

    def _chat_once(self, body: dict[str, Any], ignored: list[str]) -> ChatResponse:
        url = f"{self.base_url}/chat/completions"
        started = time.perf_counter()
        try:
            with call_deadline(self.timeout):
                response = self._client.post(url, json=body)
        except httpx.TransportError as err:
            raise self._attempt_failure(err) from None
        self._answered = True
        latency_ms = (time.perf_counter() - started) * 1000.0
        self._check_status(response)
        return self._to_response(response, ignored, latency_ms)

    def _attempt_failure(self, err: httpx.TransportError) -> Retryable:
        """One failed attempt, retried. A connection made but not answered in time is a timeout;
        anything else (refused, reset, dropped, not connected in time) is a transport failure,
        which `_gave_up` calls "unreachable" only while the server has never answered."""
        if isinstance(err, httpx.TimeoutException) and not isinstance(err, httpx.ConnectTimeout):
            return Retryable("timeout", type(err).__name__)
        return Retryable("transport", f"{type(err).__name__} from {self.shown_url}: {_one_line(str(err), 120)}")

    def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        text = _error_text(response)
        if status == 404:
            raise ServiceUnavailable(
                f"{redact_text(str(response.request.url))} answered 404 for model '{self.model}' ({text}): "
                f"check that the base URL ends where /chat/completions starts (often /v1) and that the model "
                f"is listed at {self.shown_url}/models")
        if status in (401, 403):
            raise self._refused(status)
        if status == 429 or status >= 500:
            raise Retryable("server_error", f"HTTP {status}: {text}")
        raise ModelCallFailed(f"{self.shown_url} rejected the call to '{self.model}' "
                              f"(HTTP {status}): {text}", reason="rejected")

    def _to_response(self, response: httpx.Response, ignored: list[str], latency_ms: float) -> ChatResponse:
        try:
            raw = response.json()
            message = raw["choices"][0]["message"]
            text = message["content"]
            if text is None:
                raise TypeError("the message content is null")
            usage = raw.get("usage") or {}
            if not isinstance(text, str) or not isinstance(usage, dict):
                raise TypeError("the message content is not text, or the usage is not an object")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
            raise ModelCallFailed(
                f"malformed response from {self.shown_url}: {type(err).__name__} {_one_line(str(err))}; "
                f"body starts {_one_line(response.text, 120)!r}", reason="malformed") from None
        raw = holding(text, raw)
        if ignored:
            raw["ignored_options"] = ignored
        return ChatResponse(text=text, raw=raw, prompt_tokens=usage.get("prompt_tokens"),
                            completion_tokens=usage.get("completion_tokens"),
                            latency_ms=latency_ms, load_ms=None, cost=None)

    def _refused(self, status: int) -> ServiceUnavailable:
        return ServiceUnavailable(f"{self.shown_url} refused the credentials (HTTP {status}): set "
                                  f"{' or '.join(KEY_VARIABLES)}")

    def _unreachable(self, failure: Retryable, attempts: int) -> ServiceUnavailable:
        return ServiceUnavailable(
            f"no OpenAI-compatible server is reachable at {self.shown_url} (it never answered; "
            f"{attempts} attempt(s), last: {failure.detail.split(' from ', 1)[0]}): start it "
            f"(e.g. `python -m llama_cpp.server --model <file.gguf>`) or fix the URL in "
            f"openai:<base-url>#<model>")

    def _gave_up(self, failure: Retryable, attempts: int) -> ServiceUnavailable:
        if not self._answered and failure.reason == "transport":
            return self._unreachable(failure, attempts)
        if failure.reason == "timeout":
            message = (f"model '{self.model}' at {self.shown_url} timed out after {attempts} "
                       f"attempts ({self.timeout:g} s each)")
        else:
            message = (f"{self.shown_url} failed on '{self.model}' after {attempts} attempts: "
                       f"{failure.detail}")
        return ModelCallFailed(message, reason=failure.reason, attempts=attempts)
