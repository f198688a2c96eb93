"""The `mock` judge: a deterministic test judge that needs no server.

It answers a judge request (a rubric from `core.rubrics` as the system prompt, the question,
context and answer in the user message) with a lexical-overlap heuristic
(`core.judging.lexical_p_yes`) and returns it in the OpenAI-compatible shape with token
log-probabilities, so the judge reads it exactly as it reads a real server's reply
(method `logprobs`). It is meant for tests and demonstrations: it measures word overlap, not
meaning, and its agreement with human labels says nothing about a real judge's.
"""

from __future__ import annotations

import math
import time
from typing import Any

from ragqual.core import rubrics
from ragqual.core.judging import lexical_p_yes
from ragqual.errors import ModelCallFailed
from ragqual.vocab import ChatRequest, ChatResponse

MOCK_JUDGE_VERSION = "mock-judge-v1"


def _criterion(system: str) -> str:
    for name in rubrics.CRITERIA:
        if rubrics.rubric(name).text == system:
            return name
    raise ModelCallFailed("the mock judge only answers ragqual's own rubrics", reason="rejected")


class MockJudgeModel:
    provider = "mock"

    def __init__(self) -> None:
        self.name = "mock-judge"

    def digest(self) -> str:
        return MOCK_JUDGE_VERSION

    def warm_up(self) -> None:
        """Nothing to load."""

    def chat(self, request: ChatRequest) -> ChatResponse:
        started = time.perf_counter()
        criterion = _criterion(request.system)
        question, context, answer = rubrics.split_input(request.messages[-1].content)
        p = lexical_p_yes(criterion, question, context, answer)
        word = "yes" if p >= 0.5 else "no"
        top = [{"token": "yes", "logprob": math.log(p)}, {"token": "no", "logprob": math.log(1 - p)}]
        raw: dict[str, Any] = {
            "model": self.name,
            "choices": [{"message": {"role": "assistant", "content": word},
                         "logprobs": {"content": [{"token": word, "logprob": math.log(p if word == "yes" else 1 - p),
                                                   "top_logprobs": top}]}}],
            "message": {"role": "assistant", "content": word},
        }
        return ChatResponse(text=word, raw=raw, prompt_tokens=None, completion_tokens=1,
                            latency_ms=(time.perf_counter() - started) * 1000.0, cost=0.0)
