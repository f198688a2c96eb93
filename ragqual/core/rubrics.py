"""The judge's rubric prompts, versioned: one yes/no question per criterion.

A rubric is the judge's system prompt, shared by every criterion (`JUDGE_SYSTEM`), and the
criterion's own question. Its text (the system prompt, a blank line, the question) is stored once
by sha256 (like a subject's system prompt) and every verdict names the rubric's version and hash,
so verdicts given under different wording are never mixed. Change a text only together with its
version number (tests/core/test_judging.py holds each version's hash).

The judge sees the question, the context the answering model was given and the answer, between
fixed markers, and only then the criterion's question (`judge_input`), and must reply with the
single word yes or no. The order matters for speed: the three criteria of one trial share
everything up to the last section, so a backend that keeps its evaluated prompt (llama.cpp's KV
cache) evaluates the long part once per trial, not once per criterion.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragqual.core.hashing import sha256_hex
from ragqual.errors import InputError

CRITERIA = ("faithfulness", "completeness", "relevance")
MARKERS = ("### QUESTION", "### CONTEXT", "### ANSWER")
TASK_MARKER = "### TASK"

_TAIL = "Reply with exactly one word: yes or no."

JUDGE_SYSTEM = (
    "You check answers given by a retrieval-augmented assistant. You get a QUESTION, the CONTEXT the "
    "assistant was given and its ANSWER, then a TASK: one yes/no question about the ANSWER. " + _TAIL)

_TEXTS: dict[str, tuple[int, str]] = {
    "faithfulness": (2, (
        "Is every factual claim in the ANSWER supported by the CONTEXT? A claim the CONTEXT does not state "
        "or directly imply is unsupported, even if it is true in general; text copied from the CONTEXT is "
        "supported. An answer that only declines to answer makes no claim and is faithful. Is the ANSWER "
        f"fully supported by the CONTEXT? {_TAIL}")),
    "completeness": (2, (
        "Does the ANSWER give everything the QUESTION asks for that the CONTEXT makes available: every part "
        "of a multi-part question, and the specific figure, step or condition asked about? When the CONTEXT "
        "does not hold the answer, a clear statement that it is not available is complete. Does the ANSWER "
        f"fully answer the QUESTION? {_TAIL}")),
    "relevance": (2, (
        "Does the ANSWER address the QUESTION that was asked, rather than a different question, a "
        f"neighbouring topic, or a description of the documents? Is the ANSWER relevant to the QUESTION? {_TAIL}")),
}


@dataclass(frozen=True)
class Rubric:
    """`system` is the judge's system prompt; `question` the criterion's question, asked after the
    trial (empty for a pairwise rubric, whose system prompt holds everything)."""

    criterion: str
    version: int
    system: str
    question: str = ""

    @property
    def text(self) -> str:
        """The whole rubric as stored and hashed."""
        return f"{self.system}\n\n{self.question}" if self.question else self.system

    @property
    def sha256(self) -> str:
        return sha256_hex(self.text)


def rubric(criterion: str) -> Rubric:
    """The current rubric of a criterion; InputError naming the valid ones when unknown."""
    if criterion not in _TEXTS:
        raise InputError(f"unknown judge criterion {criterion!r}: use {', '.join(CRITERIA)}")
    version, question = _TEXTS[criterion]
    return Rubric(criterion, version, JUDGE_SYSTEM, question)


def parse_criteria(value: str | None) -> list[str]:
    """`faithfulness,relevance` -> the criteria in that order (all three when empty)."""
    names = [c.strip() for c in (value or "").split(",") if c.strip()]
    for name in names:
        rubric(name)
    return list(dict.fromkeys(names)) or list(CRITERIA)


def judge_input(question: str, context: str, answer: str, task: str = "") -> str:
    """The judge's user message: the three parts between fixed markers, then the TASK (the
    criterion's question) last, so that the messages of one trial differ only at their end."""
    q, c, a = MARKERS
    shared = f"{q}\n{question.strip()}\n\n{c}\n{context.strip() or '(none)'}\n\n{a}\n{answer.strip()}\n"
    return f"{shared}\n{TASK_MARKER}\n{task.strip()}\n" if task.strip() else shared


def split_input(message: str) -> tuple[str, str, str]:
    """(question, context, answer) back from `judge_input`'s text (the mock judge reads it)."""
    return split_task(message)[0]


def split_task(message: str) -> tuple[tuple[str, str, str], str]:
    """((question, context, answer), the TASK's text or '') back from `judge_input`'s text."""
    q, c, a = MARKERS
    head, _, rest = message.partition(f"\n\n{c}\n")
    context, _, answer = rest.partition(f"\n\n{a}\n")
    answer, marker, task = answer.rpartition(f"\n\n{TASK_MARKER}\n")
    if not marker:
        answer, task = task, ""
    question = head.removeprefix(f"{q}\n")
    context = "" if context == "(none)" else context
    return (question.strip(), context.strip(), answer.strip()), task.strip()


def criterion_of(message: str) -> str | None:
    """The criterion whose question ends a yes/no judge message, None when none does."""
    task = split_task(message)[1]
    return next((name for name in CRITERIA if rubric(name).question == task), None)


PAIR_MARKERS = ("### QUESTION", "### CONTEXT A", "### ANSWER A", "### CONTEXT B", "### ANSWER B")
_PAIR_INTRO = ("You compare two answers given by retrieval-augmented assistants to the same QUESTION; each "
               "answer comes after the CONTEXT its assistant was given. ")
_PAIR_TAIL = "Reply with exactly one letter: A or B."
_PAIR_TEXTS: dict[str, tuple[int, str]] = {
    "faithfulness": (1, _PAIR_INTRO + "Which answer is better supported by its own CONTEXT, making fewer claims "
                        f"its CONTEXT does not state? {_PAIR_TAIL}"),
    "completeness": (1, _PAIR_INTRO + "Which answer more fully gives what the QUESTION asks for? " + _PAIR_TAIL),
    "relevance": (1, _PAIR_INTRO + "Which answer addresses the QUESTION more directly? " + _PAIR_TAIL),
}


def pair_rubric(criterion: str) -> Rubric:
    """The pairwise rubric of a criterion (its version counts apart from the yes/no rubric's)."""
    rubric(criterion)
    version, text = _PAIR_TEXTS[criterion]
    return Rubric(criterion, version, text)  # no separate question: the system prompt is the rubric


def pair_input(question: str, first: tuple[str, str], second: tuple[str, str]) -> str:
    """The pairwise judge's user message: the question, then (context, answer) of A and of B."""
    q, ca, aa, cb, ab = PAIR_MARKERS
    return (f"{q}\n{question.strip()}\n\n{ca}\n{first[0].strip() or '(none)'}\n\n{aa}\n{first[1].strip()}\n\n"
            f"{cb}\n{second[0].strip() or '(none)'}\n\n{ab}\n{second[1].strip()}\n")


def split_pair_input(message: str) -> tuple[str, tuple[str, str], tuple[str, str]]:
    """(question, (context A, answer A), (context B, answer B)) back from `pair_input`'s text."""
    q, ca, aa, cb, ab = PAIR_MARKERS
    parts: list[str] = []
    rest = message
    for marker in (ca, aa, cb, ab):
        head, _, rest = rest.partition(f"\n\n{marker}\n")
        parts.append(head)
    parts.append(rest)
    question = parts[0].removeprefix(f"{q}\n").strip()
    clean = ["" if p.strip() == "(none)" else p.strip() for p in parts[1:]]
    return question, (clean[0], clean[1]), (clean[2], clean[3])
