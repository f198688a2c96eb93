import pytest

from ragqual.adapters.llm import ChatMessage, ChatModel, ChatRequest
from ragqual.adapters.mock_model import MockChatModel
from ragqual.adapters.model_registry import make_model, split_uri
from ragqual.adapters.ollama_chat import OllamaChatModel
from ragqual.errors import InputError

REQUEST = ChatRequest(system="Be brief.", messages=(ChatMessage("user", "one two three"),))


def shout(request):
    return request.messages[-1].content.upper()


def whisper(request):
    return request.messages[-1].content.lower()


def test_mock_is_deterministic_with_word_count_telemetry():
    model = make_model("mock", mock_reply=shout)
    assert isinstance(model, ChatModel) and isinstance(model, MockChatModel)
    first, second = model.chat(REQUEST), model.chat(REQUEST)
    assert first.text == second.text == "ONE TWO THREE"
    assert first.raw["message"] == {"role": "assistant", "content": "ONE TWO THREE"}
    assert (first.prompt_tokens, first.completion_tokens, first.cost) == (5, 3, 0.0)
    assert first.latency_ms is not None and first.latency_ms >= 0


def test_mock_digest_names_the_version_and_changes_with_the_reply_function():
    shouting, whispering = MockChatModel(shout), MockChatModel(whisper)
    assert shouting.digest().startswith("mock-v1:")
    assert shouting.digest() == MockChatModel(shout).digest()
    assert shouting.digest() != whispering.digest()


def test_ollama_uri_builds_the_ollama_backend_without_calling_it():
    model = make_model("ollama:qwen2.5:0.5b", ollama_host="http://127.0.0.1:9")
    assert isinstance(model, OllamaChatModel)
    assert (model.provider, model.name, model.host) == ("ollama", "qwen2.5:0.5b", "http://127.0.0.1:9")


@pytest.mark.parametrize("uri, message", [
    ("gpt4", "valid models are mock, ollama:<model>"),
    ("ollama:", "needs a model name"),
    ("mock:x", "takes no name"),
])
def test_bad_uris_are_input_errors(uri, message):
    with pytest.raises(InputError, match=message):
        make_model(uri, mock_reply=shout)


def test_mock_without_a_reply_function_says_what_to_do():
    with pytest.raises(InputError, match="no mock model"):
        make_model("mock")


def test_split_uri_keeps_tags():
    assert split_uri("ollama:llama3.2:1b") == ("ollama", "llama3.2:1b")
