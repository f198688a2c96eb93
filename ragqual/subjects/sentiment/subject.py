"""The example subject: label a sentence positive, negative or neutral.

It is the smallest complete subject, the one to copy. With `--model mock` it answers with a
keyword baseline (count positive words, count negative words, compare), which knows nothing of
negation or sarcasm and so gets several cases wrong, as a baseline should. With
`--model ollama:<model>` the model is asked for a one-word label.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ragqual.vocab import ChatRequest
from ragqual.core.answer_patterns import THINK_BLOCK_PATTERN
from ragqual.engine.axes import Axis
from ragqual.engine.cases import Case, discover_cases
from ragqual.engine.subject import Subject, SubjectResult, Variant, reply_text
from ragqual.subjects.sentiment import cases as case_package

SYSTEM_PROMPT = (
    "You classify the sentiment of one sentence. Reply with exactly one lower-case word: "
    "positive, negative or neutral. No punctuation and no explanation."
)
SYSTEM_PROMPT_V2 = (
    "Decide whether the writer of one sentence is pleased, displeased or neither. Watch for negation "
    "(\"not bad\") and sarcasm. Reply with exactly one lower-case word: positive, negative or neutral."
)
DEFAULT_OPTIONS = {"temperature": 0, "seed": 42, "num_predict": 8}

AXES = (
    Axis("model", "str", "mock", "model", help="model URI: mock, ollama:<model>, openai:<url>#<model>"),
    Axis("temperature", "float", 0, "call", low=0, high=2, help="sampling temperature"),
    Axis("seed", "int", 42, "call", low=0, help="sampling seed"),
    Axis("num_predict", "int", 8, "call", choices=(8, 32, 256), help="maximum reply tokens"),
    Axis("prompt", "str", "v1", "prompt", choices=("v1", "v2"), help="system prompt version"),
)

POSITIVE_WORDS = frozenset({
    "love", "loved", "great", "excellent", "friendly", "fantastic", "happy", "happily", "better",
    "best", "recommend", "wonderful", "good", "enjoyed", "delicious",
})
NEGATIVE_WORDS = frozenset({
    "hate", "broken", "worst", "terrible", "slower", "crashes", "bad", "awful", "never",
    "disappointed", "rude", "waste", "late",
})
_LABEL = re.compile(r"\b(positive|negative|neutral)\b", re.IGNORECASE)
_THINK = re.compile(THINK_BLOCK_PATTERN, re.IGNORECASE | re.DOTALL)


def keyword_label(sentence: str) -> str:
    """The baseline: more positive words -> positive, more negative -> negative, else neutral."""
    words = re.findall(r"[a-z']+", sentence.lower())
    balance = sum(w in POSITIVE_WORDS for w in words) - sum(w in NEGATIVE_WORDS for w in words)
    return "positive" if balance > 0 else "negative" if balance < 0 else "neutral"


def read_label(text: str) -> str | None:
    """The first label word in a reply, reasoning tags removed; None when there is none."""
    found = _LABEL.search(_THINK.sub(" ", text))
    return found.group(1).lower() if found else None


class SentimentSubject(Subject):
    name = "sentiment"
    system_prompt = SYSTEM_PROMPT
    axes = AXES
    prompt_versions = {"v1": SYSTEM_PROMPT, "v2": SYSTEM_PROMPT_V2}

    @functools.cache  # noqa: B019 - one subject object per run; the cases never change under it
    def cases(self) -> list[Case]:
        return discover_cases(case_package)

    def provider_options(self, variant: Variant) -> dict[str, Any]:
        return {**DEFAULT_OPTIONS, **variant.options}

    def parse(self, raw: Any) -> dict[str, Any]:
        text = reply_text(raw)
        return {"label": read_label(text), "text": text}

    def mock_reply(self, request: ChatRequest) -> str:
        return keyword_label(request.messages[-1].content)

    def extra_metrics(self, case: Case, mode: str, output: Any, result: SubjectResult) -> dict[str, float | None]:
        return {"label_correct": float(output["label"] == case.meta.get("expected"))}
