"""The OpenAI-compatible backend: request translation by hand, HTTP statuses through httpx's own
MockTransport, failures against a stub server and a closed port on 127.0.0.1, and structure,
telemetry and determinism against a real llama_cpp.server serving Gemma 3 270M."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from ragqual.adapters.llm import ChatMessage, ChatModel, ChatRequest
from ragqual.adapters.model_registry import make_model
from ragqual.adapters.ollama_chat import ModelCallFailed
from ragqual.adapters.openai_model import OpenAIChatModel, parse_target, request_body
from ragqual.engine.subject import reply_text
from ragqual.errors import EXIT_SERVICE, InputError, ServiceUnavailable
from tests.support.fake_ollama import refused_url
from tests.support.llama_server import LlamaServer, llama_server  # noqa: F401 (fixture)

SHORT = 16
QUESTION = ChatRequest(
    system="Answer from the context only.",
    messages=(ChatMessage("user", "Who wrote the report?"), ChatMessage("assistant", "Ada did."),
              ChatMessage("user", "When was it published?")),
    options={"num_predict": SHORT},
)
COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "In 1843."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35},
}


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for variable in ("OPENAI_API_KEY", "RAGQUAL_OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)


def no_sleep(seconds: float) -> None:
    pass


# -- the URI and the request body -----------------------------------------------------------------

@pytest.mark.parametrize("target, expected", [
    ("http://127.0.0.1:8080/v1#gemma", ("http://127.0.0.1:8080/v1", "gemma")),
    ("https://host/v1/#org/model#2", ("https://host/v1/#org/model", "2")),
    ("http://h/v1/#m", ("http://h/v1", "m")),
])
def test_the_target_splits_at_the_last_hash(target, expected):
    assert parse_target(target) == expected


@pytest.mark.parametrize("target", ["http://h/v1", "http://h/v1#", "#m", "h:8080/v1#m"])
def test_a_target_without_url_or_model_is_an_input_error(target):
    with pytest.raises(InputError, match="openai:|http://"):
        parse_target(target)


def test_the_body_puts_the_system_text_first_and_translates_options():
    request = ChatRequest(system="Be brief.", messages=(ChatMessage("user", "Hi"),),
                          options={"num_predict": 7, "top_p": 0.9, "num_ctx": 4096, "stop": ["\n"]})
    body, ignored = request_body("m", request)
    assert body == {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "temperature": 0, "seed": 42, "top_p": 0.9, "stop": ["\n"], "max_tokens": 7,
    }
    assert ignored == ["num_ctx"]


def test_the_body_has_a_bounded_default_length_and_no_empty_system_message():
    body, _ = request_body("m", ChatRequest(system="", messages=(ChatMessage("user", "Hi"),)))
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert body["max_tokens"] == 256 and "response_format" not in body


@pytest.mark.parametrize("fmt, expected", [
    ("json", {"type": "json_object"}),
    ({"type": "object"}, {"type": "json_schema",
                          "json_schema": {"name": "response", "schema": {"type": "object"}}}),
])
def test_a_json_format_becomes_a_response_format(fmt, expected):
    body, _ = request_body("m", ChatRequest(system="", messages=(), format=fmt))
    assert body["response_format"] == expected


def test_an_unknown_format_is_an_input_error():
    with pytest.raises(InputError, match="response format"):
        request_body("m", ChatRequest(system="", messages=(), format="yaml"))


def test_the_registry_builds_it_with_the_whole_target_as_its_name():
    model = make_model("openai:http://127.0.0.1:9/v1#gemma", timeout=3.0, retries=0)
    assert isinstance(model, OpenAIChatModel) and isinstance(model, ChatModel)
    assert (model.provider, model.name, model.model) == ("openai", "http://127.0.0.1:9/v1#gemma", "gemma")
    assert model.digest() is None
    with pytest.raises(InputError, match="openai:<base-url>#<model>"):
        make_model("openai:gemma")


# -- statuses and keys through httpx.MockTransport ------------------------------------------------

def mocked(handler, **kwargs) -> tuple[OpenAIChatModel, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    kwargs.setdefault("sleep", no_sleep)
    return OpenAIChatModel("http://srv/v1", "m", transport=httpx.MockTransport(record), **kwargs), seen


def test_an_answer_carries_text_usage_and_the_raw_body():
    model, seen = mocked(lambda request: httpx.Response(200, json=COMPLETION))
    response = model.chat(QUESTION)
    assert (response.text, response.prompt_tokens, response.completion_tokens) == ("In 1843.", 31, 4)
    assert response.raw == COMPLETION  # the server's body as it came, the answer in it once
    assert reply_text(response.raw) == "In 1843."  # what subjects read back from the store
    assert response.load_ms is None and response.cost is None
    assert response.latency_ms >= 0
    assert str(seen[0].url) == "http://srv/v1/chat/completions"
    assert json.loads(seen[0].content)["messages"][0] == {"role": "system",
                                                          "content": "Answer from the context only."}
    assert "authorization" not in seen[0].headers


@pytest.mark.parametrize("variables, expected", [
    ({"OPENAI_API_KEY": "sk-a"}, "Bearer sk-a"),
    ({"OPENAI_API_KEY": "sk-a", "RAGQUAL_OPENAI_API_KEY": "sk-b"}, "Bearer sk-b"),
])
def test_the_api_key_comes_from_the_environment(monkeypatch, variables, expected):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    model, seen = mocked(lambda request: httpx.Response(200, json=COMPLETION))
    model.chat(QUESTION)
    assert seen[0].headers["authorization"] == expected


@pytest.mark.parametrize("status, error, match", [
    (404, ServiceUnavailable, "answered 404 for model 'm'"),
    (401, ServiceUnavailable, "OPENAI_API_KEY"),
    (400, ModelCallFailed, r"rejected the call to 'm' \(HTTP 400\): context too long"),
])
def test_statuses_that_are_not_retried(status, error, match):
    body = {"error": {"message": "context too long", "type": "invalid_request_error"}}
    model, seen = mocked(lambda request: httpx.Response(status, json=body), retries=3)
    with pytest.raises(error, match=match) as failure:
        model.chat(QUESTION)
    assert len(seen) == 1
    assert failure.value.exit_code == EXIT_SERVICE
    if status == 404:
        assert not isinstance(failure.value, ModelCallFailed)


def test_rate_limits_are_retried_with_growing_waits_then_succeed():
    answers = iter([httpx.Response(429, json={"error": "slow down"})] * 2 + [httpx.Response(200, json=COMPLETION)])
    waits: list[float] = []
    model, seen = mocked(lambda request: next(answers), retries=2, backoff=0.5, sleep=waits.append)
    assert model.chat(QUESTION).text == "In 1843."
    assert len(seen) == 3 and waits == [0.5, 1.0]


@pytest.mark.parametrize("body", [{"choices": []}, {"choices": [{"message": {"content": ["a"]}}]},
                                  ["not", "an", "object"]])
def test_a_body_that_is_not_a_chat_completion_fails_the_call(body):
    model, seen = mocked(lambda request: httpx.Response(200, json=body), retries=2)
    with pytest.raises(ModelCallFailed, match="malformed response") as failure:
        model.chat(QUESTION)
    assert failure.value.reason == "malformed" and len(seen) == 1


# -- a stub server and a closed port on 127.0.0.1 -------------------------------------------------

class Stub:
    """A tiny HTTP server whose /v1/chat/completions misbehaves as told."""

    def __init__(self, fault: str):
        self.fault, self.calls, self.stopping = fault, 0, threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _stub_handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Stub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _stub_handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            stub.calls += 1
            if stub.fault == "hang":
                stub.stopping.wait(30)  # ends at shutdown
                return
            status, data = {"http_500": (500, b'{"error": {"message": "model crashed"}}'),
                            "malformed_json": (200, b'{"choices": [{"message": {"content": "in')}[stub.fault]
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@pytest.fixture
def stub(request) -> Iterator[Stub]:
    with Stub(request.param) as server:
        yield server


def test_a_closed_port_is_a_service_unavailable_naming_the_url():
    base = refused_url() + "/v1"
    model = OpenAIChatModel(base, "m", timeout=2.0, retries=3, sleep=no_sleep)
    with pytest.raises(ServiceUnavailable, match=f"no OpenAI-compatible server is reachable at {base}") as failure:
        model.chat(QUESTION)
    assert not isinstance(failure.value, ModelCallFailed)


@pytest.mark.parametrize("stub", ["http_500"], indirect=True)
def test_server_errors_are_retried_then_fail_that_call(stub):
    model = OpenAIChatModel(stub.base_url, "m", timeout=2.0, retries=2, sleep=no_sleep)
    with pytest.raises(ModelCallFailed, match="after 3 attempts: HTTP 500: model crashed") as failure:
        model.chat(QUESTION)
    assert (failure.value.reason, failure.value.attempts, stub.calls) == ("server_error", 3, 3)


@pytest.mark.parametrize("stub", ["malformed_json"], indirect=True)
def test_malformed_json_fails_that_call_without_retrying(stub):
    model = OpenAIChatModel(stub.base_url, "m", timeout=2.0, retries=2, sleep=no_sleep)
    with pytest.raises(ModelCallFailed, match="malformed response") as failure:
        model.chat(QUESTION)
    assert (failure.value.reason, stub.calls) == ("malformed", 1)


@pytest.mark.parametrize("stub", ["hang"], indirect=True)
def test_a_server_that_never_answers_times_out_on_each_attempt(stub):
    model = OpenAIChatModel(stub.base_url, "m", timeout=0.3, retries=1, sleep=no_sleep)
    with pytest.raises(ModelCallFailed, match="timed out after 2 attempts") as failure:
        model.chat(QUESTION)
    assert (failure.value.reason, failure.value.attempts, stub.calls) == ("timeout", 2, 2)


# -- a real llama_cpp.server --------------------------------------------------------------------

def served(server: LlamaServer, **kwargs) -> OpenAIChatModel:
    return OpenAIChatModel(server.base_url, server.alias, timeout=120.0, retries=0, **kwargs)


@pytest.mark.llamacpp
def test_a_real_server_answer_has_every_field_and_its_telemetry(llama_server):
    response = served(llama_server).chat(QUESTION)
    assert isinstance(response.text, str)
    assert response.prompt_tokens > 0 and 0 < response.completion_tokens <= SHORT
    assert response.latency_ms > 0
    assert response.raw["choices"][0]["message"]["content"] == response.text
    assert reply_text(response.raw) == response.text
    assert response.raw["usage"]["completion_tokens"] == response.completion_tokens
    assert json.loads(json.dumps(response.raw)) == response.raw


@pytest.mark.llamacpp
def test_a_real_server_gives_the_same_answer_twice_at_temperature_zero(llama_server):
    model = served(llama_server)
    request = ChatRequest(system="", messages=(ChatMessage("user", "Where is the Eiffel tower?"),),
                          options={"num_predict": SHORT, "temperature": 0, "seed": 7})
    first, second = model.chat(request), model.chat(request)
    assert second.text == first.text
    assert second.completion_tokens == first.completion_tokens


@pytest.mark.llamacpp
def test_a_real_server_warms_up_and_the_wrong_base_url_is_a_404(llama_server):
    served(llama_server).warm_up()
    wrong = OpenAIChatModel(llama_server.base_url.removesuffix("/v1"), "gemma", timeout=30.0)
    with pytest.raises(ServiceUnavailable, match="answered 404") as failure:
        wrong.chat(QUESTION)
    assert not isinstance(failure.value, ModelCallFailed)
