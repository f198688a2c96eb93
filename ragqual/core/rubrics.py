"""The judge's rubric prompts, versioned: one yes/no question per criterion.

A rubric is the judge's system prompt. Its text is stored once by sha256 (like a subject's system
prompt) and every verdict names the rubric's version and hash, so verdicts given under different
wording are never mixed. Change a text only together with its version number (the test
tests/core/test_rubrics.py holds each version's hash).

The judge sees the question, the context the answering model was given and the answer, between
fixed markers (`judge_input`), and must reply with the single word yes or no.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragqual.core.hashing import sha256_hex
from ragqual.errors import InputError

CRITERIA = ("faithfulness", "completeness", "relevance")
MARKERS = ("### QUESTION", "### CONTEXT", "### ANSWER")

_TAIL = "Reply with exactly one word: yes or no."

_TEXTS: dict[str, tuple[int, str]] = {
    "faithfulness": (1, (
        "You check answers given by a retrieval-augmented assistant. You get a QUESTION, the CONTEXT the "
        "assistant was given, and its ANSWER. Decide whether every factual claim in the ANSWER is supported "
        "by the CONTEXT. A claim the CONTEXT does not state or directly imply is unsupported, even if it is "
        "true in general. An answer that only declines to answer makes no claim and is faithful. Is the "
        f"ANSWER fully supported by the CONTEXT? {_TAIL}")),
    "completeness": (1, (
        "You check answers given by a retrieval-augmented assistant. You get a QUESTION, the CONTEXT the "
        "assistant was given, and its ANSWER. Decide whether the ANSWER gives everything the QUESTION asks "
        "for that the CONTEXT makes available: every part of a multi-part question, and the specific figure, "
        "step or condition asked about. When the CONTEXT does not hold the answer, a clear statement that it "
        f"is not available is complete. Does the ANSWER fully answer the QUESTION? {_TAIL}")),
    "relevance": (1, (
        "You check answers given by a retrieval-augmented assistant. You get a QUESTION, the CONTEXT the "
        "assistant was given, and its ANSWER. Decide whether the ANSWER addresses the QUESTION that was "
        "asked, rather than a different question, a neighbouring topic, or a description of the documents. "
        f"Is the ANSWER relevant to the QUESTION? {_TAIL}")),
}


@dataclass(frozen=True)
class Rubric:
    criterion: str
    version: int
    text: str

    @property
    def sha256(self) -> str:
        return sha256_hex(self.text)


def rubric(criterion: str) -> Rubric:
    """The current rubric of a criterion; InputError naming the valid ones when unknown."""
    if criterion not in _TEXTS:
        raise InputError(f"unknown judge criterion {criterion!r}: use {', '.join(CRITERIA)}")
    version, text = _TEXTS[criterion]
    return Rubric(criterion, version, text)


def parse_criteria(value: str | None) -> list[str]:
    """`faithfulness,relevance` -> the criteria in that order (all three when empty)."""
    names = [c.strip() for c in (value or "").split(",") if c.strip()]
    for name in names:
        rubric(name)
    return list(dict.fromkeys(names)) or list(CRITERIA)


def judge_input(question: str, context: str, answer: str) -> str:
    """The judge's user message: the three parts between fixed markers."""
    q, c, a = MARKERS
    return f"{q}\n{question.strip()}\n\n{c}\n{context.strip() or '(none)'}\n\n{a}\n{answer.strip()}\n"


def split_input(message: str) -> tuple[str, str, str]:
    """(question, context, answer) back from `judge_input`'s text (the mock judge reads it)."""
    q, c, a = MARKERS
    head, _, rest = message.partition(f"\n\n{c}\n")
    context, _, answer = rest.partition(f"\n\n{a}\n")
    question = head.removeprefix(f"{q}\n")
    context = "" if context == "(none)" else context
    return question.strip(), context.strip(), answer.strip()
