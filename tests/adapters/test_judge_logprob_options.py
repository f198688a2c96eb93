"""The judge's request for token probabilities reaches each backend in its own words."""

from ragqual.adapters.llamacpp_model import sampling_arguments
from ragqual.adapters.openai_model import request_body
from ragqual.vocab import ChatMessage, ChatRequest

OPTIONS = {"temperature": 0, "seed": 42, "logprobs": True, "top_logprobs": 10, "num_predict": 4}


def test_openai_body_asks_for_logprobs_and_top_alternatives():
    body, ignored = request_body("judge", ChatRequest("rubric", (ChatMessage("user", "q"),), options=OPTIONS))
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 10, 4) and ignored == []


def test_llamacpp_chat_and_completion_shapes():
    chat, ignored = sampling_arguments(OPTIONS, transcript_mode=False)
    assert (chat["logprobs"], chat["top_logprobs"]) == (True, 10) and ignored == []
    completion, _ = sampling_arguments(OPTIONS, transcript_mode=True)
    assert completion["logprobs"] == 10 and "top_logprobs" not in completion
    plain, _ = sampling_arguments({"temperature": 0}, transcript_mode=False)
    assert "logprobs" not in plain
