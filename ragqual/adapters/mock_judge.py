"""The `mock` judge: a deterministic test judge that needs no server.

It answers a judge request, yes/no or pairwise (a rubric from `core.rubrics`: the judge's system
prompt, the question, context and answer in the user message, then the criterion's question) with a lexical-overlap heuristic
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


def _criterion(system: str, message: str) -> tuple[str, bool]:
    """(criterion, pairwise?) of one of ragqual's own rubrics: a yes/no rubric's question ends the
    user message, a pairwise rubric is the whole system prompt."""
    if system == rubrics.JUDGE_SYSTEM and (name := rubrics.criterion_of(message)) is not None:
        return name, False
    for name in rubrics.CRITERIA:
        if rubrics.pair_rubric(name).text == system:
            return name, True
    raise ModelCallFailed("the mock judge only answers ragqual's own rubrics", reason="rejected")


def _p_first(criterion: str, pairwise: bool, message: str) -> tuple[float, tuple[str, str]]:
    """(probability of the first label, the labels): P(yes), or P(A) = sA / (sA + sB)."""
    if not pairwise:
        question, context, answer = rubrics.split_input(message)
        return lexical_p_yes(criterion, question, context, answer), ("yes", "no")
    question, (ca, aa), (cb, ab) = rubrics.split_pair_input(message)
    a, b = lexical_p_yes(criterion, question, ca, aa), lexical_p_yes(criterion, question, cb, ab)
    return min(0.98, max(0.02, a / (a + b))), ("A", "B")


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
        criterion, pairwise = _criterion(request.system, request.messages[-1].content)
        p, (first, second) = _p_first(criterion, pairwise, request.messages[-1].content)
        word = first if p >= 0.5 else second
        top = [{"token": first, "logprob": math.log(p)}, {"token": second, "logprob": math.log(1 - p)}]
        raw: dict[str, Any] = {
            "model": self.name,
            "choices": [{"message": {"role": "assistant", "content": word},
                         "logprobs": {"content": [{"token": word, "logprob": math.log(p if word == first else 1 - p),
                                                   "top_logprobs": top}]}}],
            "message": {"role": "assistant", "content": word},
        }
        return ChatResponse(text=word, raw=raw, prompt_tokens=None, completion_tokens=1,
                            latency_ms=(time.perf_counter() - started) * 1000.0, cost=0.0)
