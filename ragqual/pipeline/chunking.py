"""Cut documents into overlapping chunks by an estimated-token budget.

Tokens are estimated from characters (`chars_per_token`), as the production pipeline
does, so a chunk holds about `chunk_tokens * chars_per_token` characters and the next
one starts `overlap_tokens * chars_per_token` characters before the previous ended.
Within the budget a cut prefers, in order, a paragraph break, a sentence end and white
space, as late as possible but not before half the budget; only a run with none of
those is cut mid-word. Chunks carry their character offsets into `Document.text`
(`text == doc.text[start:end]`), never start or end with white space, and are never empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ragqual.core.corpus import Document
from ragqual.errors import InputError

_PARAGRAPH = re.compile(r"\n[ \t]*\n")  # cut before the blank line
_SENTENCE = re.compile(r"[.!?][\"')\]]*(?=\s)")  # cut after the punctuation
_SPACE = re.compile(r"\s")  # cut before the space


@dataclass(frozen=True)
class ChunkConfig:
    chunk_tokens: int = 256
    overlap_tokens: int = 32
    chars_per_token: float = 4.0
    doc_prefix: str = ""
    query_prefix: str = ""

    def __post_init__(self) -> None:
        _check_int("chunk_tokens", self.chunk_tokens, minimum=1)
        _check_int("overlap_tokens", self.overlap_tokens, minimum=0)
        if not isinstance(self.chars_per_token, (int, float)) or isinstance(self.chars_per_token, bool) \
                or not math.isfinite(self.chars_per_token) or self.chars_per_token <= 0:
            raise InputError(f"chars_per_token must be a positive number, got {self.chars_per_token!r}")
        # 4 and 4.0 are the same setting and must give the same fingerprint.
        object.__setattr__(self, "chars_per_token", float(self.chars_per_token))
        if not isinstance(self.doc_prefix, str) or not isinstance(self.query_prefix, str):
            raise InputError("doc_prefix and query_prefix must be strings")
        if self.overlap_tokens >= self.chunk_tokens:
            raise InputError(
                f"overlap_tokens ({self.overlap_tokens}) must be smaller than chunk_tokens ({self.chunk_tokens})"
            )
        if self.budget_chars < 1 or self.overlap_chars >= self.budget_chars:
            raise InputError(
                f"a chunk of {self.budget_chars} characters with {self.overlap_chars} characters of overlap "
                "cannot advance: raise chunk_tokens or chars_per_token"
            )

    @property
    def budget_chars(self) -> int:
        return math.floor(self.chunk_tokens * self.chars_per_token)

    @property
    def overlap_chars(self) -> int:
        return math.floor(self.overlap_tokens * self.chars_per_token)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_int(name: str, value: Any, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InputError(f"{name} must be an integer of at least {minimum}, got {value!r}")


@dataclass(frozen=True)
class Chunk:
    chunk_id: str  # "<doc_id>#<index>"
    doc_id: str
    index: int
    text: str
    start: int  # character offsets into Document.text
    end: int


def chunk_id_for(doc_id: str, index: int) -> str:
    return f"{doc_id}#{index}"


def chunk_document(doc: Document, config: ChunkConfig) -> list[Chunk]:
    """The document's chunks in order; a document within the budget is a single chunk."""
    spans = list(_spans(doc.text, config.budget_chars, config.overlap_chars))
    if not spans:
        raise InputError(f"document {doc.doc_id!r} has no text to chunk")
    return [
        Chunk(chunk_id_for(doc.doc_id, i), doc.doc_id, i, doc.text[start:end], start, end)
        for i, (start, end) in enumerate(spans)
    ]


def chunk_corpus(documents: Iterable[Document], config: ChunkConfig) -> list[Chunk]:
    return [chunk for doc in documents for chunk in chunk_document(doc, config)]


def embed_text_for_chunk(chunk: Chunk, config: ChunkConfig) -> str:
    return config.doc_prefix + chunk.text


def embed_text_for_query(query: str, config: ChunkConfig) -> str:
    return config.query_prefix + query


def _spans(text: str, budget: int, overlap: int) -> Iterable[tuple[int, int]]:
    """(start, end) of each chunk, trimmed of surrounding white space."""
    start, last_end = _skip_space(text, 0), 0
    while start < len(text):
        end = _cut(text, start, budget, overlap)
        trimmed = _trim_end(text, start, end)
        if trimmed > last_end:  # a chunk that adds no text beyond the previous one is dropped
            yield start, trimmed
            last_end = trimmed
        if _skip_space(text, end) >= len(text):
            return
        start = _skip_space(text, _next_start(text, start, end, overlap))


def _cut(text: str, start: int, budget: int, overlap: int) -> int:
    """Where the chunk starting at `start` ends: the best boundary in (earliest, start + budget]."""
    limit = start + budget
    if limit >= len(text):
        return len(text)
    # Never before half the budget, and always past the overlap so the next chunk advances.
    earliest = max(start + budget // 2, start + overlap + 1)
    for pattern, use_end in ((_PARAGRAPH, False), (_SENTENCE, True), (_SPACE, False)):
        cut = _last_boundary(pattern, use_end, text, earliest, limit)
        if cut is not None:
            return cut
    return limit


def _last_boundary(pattern: re.Pattern[str], use_end: bool, text: str, earliest: int, limit: int) -> int | None:
    best = None
    # A sentence match may begin a few characters before `earliest` and still end after it.
    for match in pattern.finditer(text, max(0, earliest - 8), min(len(text), limit + 2)):
        cut = match.end() if use_end else match.start()
        if cut > limit:
            break
        if cut >= earliest:
            best = cut
    return best


def _next_start(text: str, start: int, end: int, overlap: int) -> int:
    """Back up `overlap` characters from `end`, then forward to the next word start if one is before `end`."""
    back = max(end - overlap, start + 1)
    if back == end or text[back - 1].isspace():
        return back
    space = _SPACE.search(text, back, end)
    return space.start() if space else back


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end
