"""OllamaChatModel through the real `ollama` client against a stand-in server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from ragqual.adapters.llm import ChatMessage, ChatModel, ChatRequest
from ragqual.adapters.ollama_chat import ModelCallFailed, OllamaChatModel, list_local_models
from ragqual.errors import EXIT_SERVICE, ServiceUnavailable
from tests.support.fake_ollama import FakeOllama, fake_embedding, refused_url

DIGEST_M = "sha256:" + "a1" * 32
DIGEST_OTHER = "sha256:" + "b2" * 32
DIGEST_THIRD = "sha256:" + "c3" * 32

QUESTION = ChatRequest(
    system="Answer from the context only.",
    messages=(
        ChatMessage("user", "Who wrote the report?"),
        ChatMessage("assistant", "Ada did."),
        ChatMessage("user", "When was it published?"),
    ),
)


@pytest.fixture
def server():
    with FakeOllama(models={"m": DIGEST_M, "other:7b": DIGEST_OTHER}) as fake:
        yield fake


def model_for(server: FakeOllama, **kwargs) -> OllamaChatModel:
    kwargs.setdefault("sleep", lambda seconds: None)
    return OllamaChatModel("m", host=server.url, **kwargs)


def test_is_a_chat_model(server):
    model = model_for(server)
    assert isinstance(model, ChatModel)
    assert (model.provider, model.name) == ("ollama", "m")


@pytest.mark.parametrize("stream", [False, True])
def test_chat_returns_text_and_telemetry(server, stream):
    response = model_for(server, stream=stream).chat(QUESTION)
    assert response.text == "echo: When was it published?"
    # The stand-in counts words: 5 (system) + 4 + 2 + 4 (turns) in, 5 out.
    assert response.prompt_tokens == 15
    assert response.completion_tokens == 5
    assert response.load_ms == 5.0
    assert response.cost is None
    assert response.latency_ms is not None and response.latency_ms >= 0
    assert response.raw["message"]["content"] == response.text
    assert json.loads(json.dumps(response.raw)) == response.raw


def test_stream_and_plain_calls_agree(server):
    plain = model_for(server, stream=False).chat(QUESTION)
    streamed = model_for(server, stream=True).chat(QUESTION)
    assert [b["stream"] for b in server.bodies("/api/chat")] == [False, True]
    assert streamed.text == plain.text
    assert (streamed.prompt_tokens, streamed.completion_tokens, streamed.load_ms) == (
        plain.prompt_tokens, plain.completion_tokens, plain.load_ms)
    assert streamed.raw == plain.raw


def test_stream_joins_many_chunks(server):
    server.reply = lambda body: "one two three four five six seven"
    server.chunk_words = 1
    response = model_for(server, stream=True).chat(QUESTION)
    assert response.text == "one two three four five six seven"
    assert response.completion_tokens == 7


def test_system_prompt_goes_first_then_the_turns(server):
    model_for(server).chat(QUESTION)
    (body,) = server.bodies("/api/chat")
    assert body["model"] == "m"
    assert body["messages"] == [
        {"role": "system", "content": "Answer from the context only."},
        {"role": "user", "content": "Who wrote the report?"},
        {"role": "assistant", "content": "Ada did."},
        {"role": "user", "content": "When was it published?"},
    ]


def test_default_options_are_deterministic_and_others_pass_through(server):
    request = ChatRequest(system="s", messages=(ChatMessage("user", "q"),), options={"num_ctx": 8192})
    model_for(server).chat(request)
    (body,) = server.bodies("/api/chat")
    assert body["options"] == {"temperature": 0, "seed": 42, "num_ctx": 8192}


def test_caller_options_override_the_defaults(server):
    options = {"temperature": 0.7, "seed": 7, "top_p": 0.9, "num_predict": 64}
    model_for(server).chat(ChatRequest(system="s", messages=(ChatMessage("user", "q"),), options=options))
    (body,) = server.bodies("/api/chat")
    assert body["options"] == options


def test_format_and_keep_alive_pass_through(server):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    model = model_for(server, keep_alive="10m")
    model.chat(ChatRequest(system="s", messages=(ChatMessage("user", "q"),), format="json"))
    model.chat(ChatRequest(system="s", messages=(ChatMessage("user", "q"),), format=schema))
    first, second = server.bodies("/api/chat")
    assert (first["format"], second["format"]) == ("json", schema)
    assert first["keep_alive"] == "10m"


def test_digest_is_read_from_the_server_once(server):
    model = model_for(server)
    assert model.digest() == DIGEST_M
    assert model.digest() == DIGEST_M
    assert server.calls["/api/tags"] == 1
    assert OllamaChatModel("other:7b", host=server.url).digest() == DIGEST_OTHER


def test_digest_is_none_when_the_server_does_not_list_the_model(server):
    assert OllamaChatModel("absent", host=server.url).digest() is None


def test_list_local_models(server):
    assert list_local_models(server.url) == ["m:latest", "other:7b"]


def test_warm_up_evicts_other_models_and_burns_one_generation():
    models = {"m": DIGEST_M, "other:7b": DIGEST_OTHER, "third:1b": DIGEST_THIRD}
    with FakeOllama(models=models, running=["other:7b", "m:latest", "third:1b"]) as fake:
        OllamaChatModel("m", host=fake.url).warm_up(options={"num_ctx": 4096})
        generations = fake.bodies("/api/generate")
        evicted = {b["model"] for b in generations if b.get("keep_alive") == 0}
        burned = [b for b in generations if b["model"] == "m"]
        assert fake.calls["/api/ps"] == 1
        assert evicted == {"other:7b", "third:1b"}
        assert len(burned) == 1
        assert burned[0]["prompt"] and burned[0].get("keep_alive") != 0
        assert burned[0]["options"]["num_ctx"] == 4096
        assert burned[0]["options"]["temperature"] == 0
        assert fake.resident() == ["m:latest"]


def test_warm_up_with_nothing_resident_only_burns(server):
    model_for(server).warm_up()
    assert [b["model"] for b in server.bodies("/api/generate")] == ["m"]
    assert server.resident() == ["m:latest"]


@pytest.mark.parametrize("stream", [False, True])
def test_connection_refused_names_the_host_and_how_to_start(stream):
    url = refused_url()
    with pytest.raises(ServiceUnavailable) as caught:
        OllamaChatModel("m", host=url, stream=stream, retries=0).chat(QUESTION)
    message = str(caught.value)
    assert not isinstance(caught.value, ModelCallFailed)
    assert caught.value.exit_code == EXIT_SERVICE
    assert url in message and "`ollama serve`" in message and "OLLAMA_HOST" in message
    assert "\n" not in message


def test_connection_refused_on_digest_and_warm_up():
    url = refused_url()
    model = OllamaChatModel("m", host=url)
    for call in (model.digest, model.warm_up, lambda: list_local_models(url)):
        with pytest.raises(ServiceUnavailable, match="not reachable"):
            call()


@pytest.mark.parametrize("stream", [False, True])
def test_missing_model_names_ollama_pull(server, stream):
    with pytest.raises(ServiceUnavailable) as caught:
        OllamaChatModel("ghost:3b", host=server.url, stream=stream).chat(QUESTION)
    message = str(caught.value)
    assert not isinstance(caught.value, ModelCallFailed)
    assert "`ollama pull ghost:3b`" in message and server.url in message
    assert server.calls["/api/chat"] == 1  # not retried


def test_missing_model_fault_mode(server):
    server.fault = "missing_model"
    with pytest.raises(ServiceUnavailable, match="ollama pull m"):
        model_for(server).chat(QUESTION)


def test_warm_up_of_a_missing_model_names_ollama_pull(server):
    with pytest.raises(ServiceUnavailable, match="`ollama pull ghost`"):
        OllamaChatModel("ghost", host=server.url).warm_up()


@pytest.mark.parametrize("stream", [False, True])
def test_a_response_that_never_ends_times_out_after_retries(server, stream):
    server.fault = "hang"
    model = model_for(server, stream=stream, timeout=0.5, retries=1)
    with pytest.raises(ModelCallFailed) as caught:
        model.chat(QUESTION)
    assert "timed out after 2 attempts" in str(caught.value)
    assert caught.value.reason == "timeout" and caught.value.attempts == 2
    assert caught.value.exit_code == EXIT_SERVICE
    assert server.calls["/api/chat"] == 2


@pytest.mark.parametrize("stream", [False, True])
def test_http_500_is_retried_then_reported_with_the_server_text(server, stream):
    server.fault = "http_500"
    with pytest.raises(ModelCallFailed) as caught:
        model_for(server, stream=stream, retries=2).chat(QUESTION)
    message = str(caught.value)
    assert "llama runner process has terminated" in message and "500" in message
    assert "\n" not in message
    assert caught.value.attempts == 3
    assert server.calls["/api/chat"] == 3


def test_backoff_doubles_between_attempts(server):
    server.fault = "http_500"
    waits: list[float] = []
    with pytest.raises(ModelCallFailed):
        model_for(server, retries=3, backoff=0.25, sleep=waits.append).chat(QUESTION)
    assert waits == [0.25, 0.5, 1.0]


def test_a_transient_500_is_survived(server):
    server.fault, server.fault_times = "http_500", 1
    waits: list[float] = []
    response = model_for(server, retries=2, sleep=waits.append).chat(QUESTION)
    assert response.text == "echo: When was it published?"
    assert server.calls["/api/chat"] == 2
    assert waits == [0.5]


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_json_is_a_failed_call(server, stream):
    server.fault = "malformed_json"
    with pytest.raises(ModelCallFailed) as caught:
        model_for(server, stream=stream).chat(QUESTION)
    assert str(caught.value).startswith("malformed response from Ollama")
    assert "\n" not in str(caught.value)
    assert caught.value.reason == "malformed"
    assert server.calls["/api/chat"] == 1


def test_ollama_host_env_is_honoured(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    model = OllamaChatModel("m", sleep=lambda s: None)
    assert model.host == server.url
    assert model.chat(QUESTION).text == "echo: When was it published?"
    assert list_local_models() == ["m:latest", "other:7b"]


def test_explicit_host_wins_over_the_env(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", refused_url())
    assert model_for(server).chat(QUESTION).text == "echo: When was it published?"


def test_default_host_without_env(monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert OllamaChatModel("m").host == "http://127.0.0.1:11434"


def test_stand_in_embeddings_are_deterministic_unit_vectors(server):
    import ollama

    client = ollama.Client(host=server.url)
    first = client.embed(model="m", input=["alpha", "beta"]).embeddings
    again = client.embed(model="m", input="alpha").embeddings
    assert len(first) == 2 and all(len(v) == server.embed_dim for v in first)
    assert list(again[0]) == list(first[0]) and list(first[0]) != list(first[1])
    assert abs(sum(x * x for x in first[0]) - 1.0) < 1e-9
    assert len(fake_embedding("alpha", 40)) == 40
