"""Deterministic generation metrics: plain functions of the answer text, no judge model.

- `correctness`: every mustInclude pattern matches and no mustNotInclude pattern does.
- `refusal_correct`: declines an out-of-corpus question, and neither declines nor hedges on an
  answerable one.
- `leaks_retrieval`: the answer narrates its retrieval ("according to the context").
- `groundedness`: share of the answer's figures (numbers of magnitude above 10, dates) that also
  appear in the context, read with the numbers grammar of `core.numbers`.
- `has_think_tags`: reasoning markup reached the answer.

Every phrase and tag pattern lives in `core.answer_patterns` (with its version); this module only
applies them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ragqual.core import textmatch
from ragqual.core.answer_patterns import (
    ASIDE_PATTERNS,
    CLAUSE_BREAK,
    CLAUSE_LEAD,
    HEDGE_PATTERNS,
    LEAKAGE_PATTERNS,
    REFUSAL_PATTERNS,
    THINK_TAG_PATTERN,
)
from ragqual.core.prefilter import Needs, admits, fold, need

if TYPE_CHECKING:
    import regex

    from ragqual.core.numbers import FigureValue


@dataclass(frozen=True)
class _Phrase:
    """One bundled pattern with the literals every match of it contains (`core.prefilter`): a
    text without them is not searched, and the pattern is compiled only when a text has them."""

    source: str
    needs: Needs


def _found(phrases: Iterable[_Phrase], text: str, folded: str, seen: dict[str, bool] | None = None) -> bool:
    """One of `phrases` matches `text` (`pattern.search`); `folded` is `prefilter.fold(text)`,
    `seen` the literal tests made on it (`prefilter.admits`). One loop, no call per phrase but
    the pre-filter's: a clause is read against ~40 phrases, and most fail the pre-filter."""
    for phrase in phrases:
        if admits(phrase.needs, folded, seen) and textmatch.compiled(phrase.source).search(text) is not None:
            return True
    return False


def _phrases(patterns: Iterable[str]) -> tuple[_Phrase, ...]:
    return tuple(_Phrase(p, need(p)) for p in patterns)


# Read on first use, not at import, and each pattern compiled on the first text that has its
# literals: `regex` parses ~60 patterns in Python (~2 ms each), which a command that imports this
# module only to describe cases (the retrieval tier) never needs, and which most runs' answers
# never need either. That command does not even import `regex` (~0.01 s): `textmatch.compiled`
# does, when it first compiles.
_PATTERN_SETS = {"refusal": REFUSAL_PATTERNS, "hedge": HEDGE_PATTERNS, "aside": ASIDE_PATTERNS,
                 "leak": LEAKAGE_PATTERNS, "think": (THINK_TAG_PATTERN,)}


@functools.cache
def _patterns(kind: str) -> tuple[_Phrase, ...]:
    return _phrases(_PATTERN_SETS[kind])


_EDGES = " \t\"'\u201c\u201d()[]*_,"


def _fold(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


@dataclass(frozen=True)
class _Whole:
    """An answer as the whole-answer phrase readers search it: apostrophes folded (`_fold`), its
    `prefilter.fold`, and the literal tests made on that so far (shared by the hedge and leakage
    readers, whose patterns have literals in common)."""

    plain: str
    folded: str
    seen: dict[str, bool]


@lru_cache(maxsize=16)  # the readers of one answer run one after the other
def _whole(answer: str) -> _Whole:
    plain = _fold(answer)
    return _Whole(plain, fold(plain), {})


def _any_match(patterns: Iterable[_Phrase], text: str) -> bool:
    """A pattern matches `text` with its typographic apostrophes folded (`_fold`)."""
    whole = _whole(text)
    return _found(patterns, whole.plain, whole.folded, whole.seen)


def clauses(answer: str) -> list[str]:
    """The answer cut at `CLAUSE_BREAK`, each clause without its opening conjunction and quotes."""
    return list(iter_clauses(answer))


def iter_clauses(answer: str) -> Iterator[str]:
    """`clauses`, one at a time: a reader that stops at the first clause it needs cuts no further."""
    lead, has_word = textmatch.compiled(CLAUSE_LEAD), textmatch.compiled_as_written(r"[\p{L}\p{N}]")
    for piece in textmatch.compiled(CLAUSE_BREAK).splititer(_fold(answer)):
        clause = lead.sub("", piece.strip(_EDGES)).strip(_EDGES)
        if has_word.search(clause) is not None:
            yield clause


def clause_kind(clause: str) -> str:
    """"refusal", "hedge", "aside" or "content" (module `answer_patterns`)."""
    folded = fold(clause)
    for kind in ("refusal", "hedge", "aside"):
        if _found(_patterns(kind), clause, folded):
            return kind
    return "content"


def correctness(
    answer: str,
    must_include: Sequence[str],
    must_not_include: Sequence[str],
    timeout: float = textmatch.DEFAULT_TIMEOUT,
) -> bool:
    """All mustInclude patterns match and none of mustNotInclude does.

    Patterns are case-insensitive regular expressions, each bounded by `timeout` seconds; a
    pattern that runs out of time raises `textmatch.RegexTimeout` for the caller to record.
    """
    if not all(textmatch.search(p, answer, timeout) for p in must_include):
        return False
    return not any(textmatch.search(p, answer, timeout) for p in must_not_include)


_MEMO = 8192  # answers repeat across repeats, modes and what-if replays: each distinct one is read once


@lru_cache(maxsize=_MEMO)
def is_refusal(answer: str) -> bool:
    """The answer declines and gives nothing else: a clause says it does not know, that the
    information is not there, or only that it is not sure, and no clause answers ("I don't know;
    boil it for 1 minute" answers)."""
    declines = False
    for clause in iter_clauses(answer):  # the first content clause settles it: no need to read on
        kind = clause_kind(clause)
        if kind == "content":
            return False
        declines = declines or kind == "refusal"
    return declines


@lru_cache(maxsize=_MEMO)
def is_hedge(answer: str) -> bool:
    """The answer qualifies itself with uncertainty ("I'm not sure, but ...")."""
    return _any_match(_patterns("hedge"), answer)


def refusal_correct(answer: str, expect_refusal: bool) -> bool:
    """Declines when the question is out of corpus; neither declines nor hedges otherwise.

    A hedged guess on an out-of-corpus question is not a refusal, so it fails too.
    """
    if expect_refusal:
        return is_refusal(answer)
    return not (is_refusal(answer) or is_hedge(answer))


@lru_cache(maxsize=_MEMO)
def leaks_retrieval(answer: str) -> bool:
    """The answer narrates retrieval ("based on the provided context", "Context 1")."""
    return _any_match(_patterns("leak"), answer)


@lru_cache(maxsize=_MEMO)
def has_think_tags(answer: str) -> bool:
    """Reasoning markup (<think>, </reasoning>, <|thinking|>, [THINK] ...) reached the answer."""
    return _found(_patterns("think"), answer, fold(answer))  # the answer as written, apostrophes unfolded


GROUNDEDNESS_MIN_EXCLUSIVE = 10.0


def extract_numbers(text: str) -> set[float]:
    """Every number written with digits in `text`, normalised to its signed value (`core.numbers`)."""
    from ragqual.core.numbers import read_numbers  # here: a command that reads no answer never needs the grammar

    return read_numbers(text)


def _is_claim(value: FigureValue) -> bool:
    """A date (its ISO text), or a number of magnitude above 10 (`figure_values`)."""
    return isinstance(value, str) or abs(value) > GROUNDEDNESS_MIN_EXCLUSIVE


def groundedness(answer: str, context: str | Sequence[str]) -> float | None:
    """Share of the answer's distinct figures (numbers of magnitude above 10, dates) that the
    context also holds.

    It only sees figures written with digits: an answer that invents a procedure, a name or a
    number spelled out in words still scores 1.0, so it detects numeric fabrication and does not
    prove faithfulness. Numbers of magnitude 10 and below are skipped because "step 2" or "3 layers"
    appear in any prose; -15 counts. Figures are read by the numbers grammar of `core.numbers`
    ("1,000" = 1000, "2.50" = 2.5, "-15" is not 15, "10-15" is 10 and 15, "2024-05-01" is one date).
    Returns None when the answer has no such figure.
    """
    joined = context if isinstance(context, str) else "\n".join(context)
    claims = _claims(answer)
    if not claims:
        return None
    return len(claims & _figures(joined)) / len(claims)


@lru_cache(maxsize=_MEMO)
def _figures(text: str) -> frozenset[FigureValue]:
    """The distinct figures of `text` as values (`core.numbers.figure_values`), read once per
    distinct text (contexts repeat across repeats, modes and what-if settings). The grammar is
    imported here, not with this module: the retrieval tier imports it (through the RAG subject)
    and reads no answer."""
    from ragqual.core.numbers import figure_values

    return frozenset(figure_values(text))


@lru_cache(maxsize=_MEMO)
def _claims(answer: str) -> frozenset[FigureValue]:
    return frozenset(v for v in _figures(answer) if _is_claim(v))
