"""The reference RAG prompt: system rules, the context block, the multi-turn query rewrite.

Also the extractive mock reader for this prompt: it answers by echoing the
injected context and declines when there is none, so its score is the best a
perfect reader could do with what retrieval delivered (the extractive ceiling).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from ragqual.vocab import ChatMessage, ChatRequest
from ragqual.core.goldens import Golden

RAG_SYSTEM_PROMPT = """You answer questions for someone relying on an off-grid knowledge base.
Rules:
1. Answer only from the numbered passages in the user's message. Ignore passages that are tangential, poetic or only share words with the question.
2. Give the specific facts asked for (numbers with their units) in one to three sentences.
3. If the passages do not answer the question, say plainly that you don't know and stop. Do not guess.
4. Never narrate retrieval: do not write "according to the context", "the passages", "the knowledge base" or "the documents"; just answer.
5. Do not show your reasoning."""

RAG_SYSTEM_PROMPT_V2 = """Answer the question from the numbered passages in the user's message and from nothing else.
State the specific facts asked for, numbers with their units, in at most two sentences.
When the passages do not contain the answer, reply only: I don't know.
Do not mention the passages, the context or your reasoning."""

RAG_SYSTEM_PROMPTS = {"v1": RAG_SYSTEM_PROMPT, "v2": RAG_SYSTEM_PROMPT_V2}
"""The system prompt versions the RAG subject's `prompt` axis chooses from."""

REWRITE_SYSTEM_PROMPT = """Rewrite the user's last message as one standalone search question.
Replace pronouns with what they refer to in the conversation. Reply with the question only."""

CONTEXT_OPEN = "<<<CONTEXT"
CONTEXT_CLOSE = "CONTEXT>>>"
QUESTION_LABEL = "Question:"
MOCK_DECLINE = "I don't know. I couldn't find an answer to that."


def context_block(passages: Sequence[str]) -> str:
    numbered = [f"[{i}] {text.strip()}" for i, text in enumerate(passages, start=1)]
    return "\n".join([CONTEXT_OPEN, "\n\n".join(numbered), CONTEXT_CLOSE])


def answer_request(golden: Golden, passages: Sequence[str], options: dict, system: str = RAG_SYSTEM_PROMPT) -> ChatRequest:
    """Prior turns as they were, then the last user message carrying the context block."""
    history = tuple(ChatMessage(t.role, t.content) for t in golden.turns)
    last = ChatMessage("user", f"{context_block(passages)}\n\n{QUESTION_LABEL} {golden.query}")
    return ChatRequest(system=system, messages=(*history, last), options=dict(options))


def rewrite_request(golden: Golden, options: dict) -> ChatRequest:
    lines = [f"{t.role}: {t.content}" for t in golden.turns] + [f"user: {golden.query}"]
    return ChatRequest(system=REWRITE_SYSTEM_PROMPT,
                       messages=(ChatMessage("user", "Conversation:\n" + "\n".join(lines)),),
                       options=dict(options))


def injected_context(request: ChatRequest) -> str | None:
    """The passages inside the last message's context block, or None if it has no block."""
    if not request.messages:
        return None
    text = request.messages[-1].content
    start = text.find(CONTEXT_OPEN)
    end = text.find(CONTEXT_CLOSE, start + 1)
    if start < 0 or end < 0:
        return None
    return text[start + len(CONTEXT_OPEN): end].strip()


def mock_reply(request: ChatRequest) -> str:
    """Deterministic stand-in reader: echo the context, decline without it, and 'rewrite' by joining turns."""
    if request.system == REWRITE_SYSTEM_PROMPT:
        lines = request.messages[-1].content.splitlines()[1:]
        users = [line.split(": ", 1)[1] for line in lines if line.startswith("user: ")]
        return " ".join(users[-2:])
    context = injected_context(request)
    if not context:
        return MOCK_DECLINE
    return _echo(context.splitlines())


def _echo(lines: Iterable[str]) -> str:
    """The echo mock's answer from its context's lines: each non-blank line, a `[n] ` label cut."""
    return " ".join(line.split("] ", 1)[-1] if line.startswith("[") else line for line in lines if line.strip())


def mock_answer(passages: Sequence[str]) -> str:
    """`mock_reply(answer_request(golden, passages, options))` for any golden and options, without
    building the request: the echo reads only the context block, which the block's own close ends
    before the question. When every passage is non-blank and none holds `CONTEXT_CLOSE` (which
    would end the block early), the reply is each numbered passage's echo joined by a space, and
    a passage's echo is remembered (`_echoed`): contexts share their chunks. Any other context goes
    the long way, through `mock_reply` itself."""
    texts = [p.strip() for p in passages]
    if texts and all(texts) and not any(CONTEXT_CLOSE in t for t in texts):
        return " ".join(map(_echoed, texts))
    return mock_reply(ChatRequest(system=RAG_SYSTEM_PROMPT, messages=(ChatMessage("user", context_block(passages)),),
                                  options={}))


@functools.lru_cache(maxsize=4096)
def _echoed(text: str) -> str:
    """One stripped, non-blank passage's share of the echo: the lines of its numbered block entry."""
    return _echo(context_block([text]).splitlines()[1:-1])
