"""The phrase and tag patterns held to a labelled table (tests/data/answer_phrases.jsonl).

Each row is one answer labelled four ways: is it a refusal (it declines and answers nothing), a
hedge, retrieval narration (leakage), does it show reasoning tags. Every row asserts every label,
so a pattern that starts to fire on an ordinary answer fails here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import regex

from ragqual.core import answer_patterns, numbers
from ragqual.core.answer_metrics import (
    clause_kind,
    clauses,
    has_think_tags,
    is_hedge,
    is_refusal,
    leaks_retrieval,
    refusal_correct,
)

TABLE = Path(__file__).resolve().parents[1] / "data" / "answer_phrases.jsonl"
ROWS = [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines() if line.strip()]
READERS = {"refusal": is_refusal, "hedge": is_hedge, "leak": leaks_retrieval, "think": has_think_tags}


@pytest.mark.parametrize("row", ROWS, ids=[r["text"][:60] for r in ROWS])
def test_every_answer_reads_as_labelled(row):
    got = {label: reader(row["text"]) for label, reader in READERS.items()}
    assert got == {label: row[label] for label in READERS}, row.get("why", "")


def test_the_table_is_large_and_balanced():
    assert len(ROWS) >= 80
    for label in ("refusal", "leak"):
        positive = sum(r[label] for r in ROWS)
        assert positive >= 30 and len(ROWS) - positive >= 30, label
    assert sum(r["hedge"] for r in ROWS) >= 15 and sum(r["think"] for r in ROWS) >= 15
    assert len({r["text"] for r in ROWS}) == len(ROWS)


def _unexercised(patterns, label, flags=regex.IGNORECASE):
    """Patterns that no positive row triggers: each pattern in a list should earn its place."""
    texts = [r["text"].replace("\u2019", "'") for r in ROWS if r[label]]
    pieces = [c for t in texts for c in clauses(t)] + texts
    return [p for p in patterns if not any(regex.search(p, t, flags) for t in pieces)]


@pytest.mark.parametrize("patterns, label", [
    (answer_patterns.REFUSAL_PATTERNS, "refusal"),
    (answer_patterns.HEDGE_PATTERNS, "hedge"),
    (answer_patterns.LEAKAGE_PATTERNS, "leak"),
    (answer_patterns.ASIDE_PATTERNS, "refusal"),
], ids=["refusal", "hedge", "leakage", "aside"])
def test_every_pattern_is_exercised_by_some_labelled_row(patterns, label):
    assert _unexercised(patterns, label) == []


# --- the sentences, named ------------------------------------------------------------


def test_no_information_suggesting_harm_followed_by_advice_is_a_correct_answer():
    answer = "There is no information suggesting it is unsafe; boil for 1 minute."
    assert refusal_correct(answer, expect_refusal=False)
    assert not refusal_correct(answer, expect_refusal=True)


def test_no_information_about_the_question_is_a_refusal():
    answer = "There is no information about that in the provided context."
    assert refusal_correct(answer, expect_refusal=True)
    assert not refusal_correct(answer, expect_refusal=False)


@pytest.mark.parametrize("answer", ["Sorry, I can't help with that", "I dont know", "It cannot be determined."])
def test_the_missed_refusals_decline(answer):
    assert refusal_correct(answer, expect_refusal=True)


def test_a_decline_followed_by_an_answer_is_not_a_refusal():
    assert clause_kind("I don't know the exact altitude rule") == "refusal"
    answer = "I don't know the exact altitude rule, but boil for 1 minute at sea level."
    assert not is_refusal(answer) and refusal_correct(answer, expect_refusal=False)
    assert not refusal_correct(answer, expect_refusal=True)  # a guess after declining is not a refusal


def test_a_decline_with_an_apology_and_a_referral_is_still_a_refusal():
    assert [clause_kind(c) for c in clauses("I'm sorry, but I don't know. Please consult a doctor.")] == [
        "aside", "refusal", "aside"]


def test_a_hedged_guess_fails_both_ways():
    guess = "I'm not sure, but the warranty is probably 5 years."
    assert not refusal_correct(guess, expect_refusal=True)
    assert not refusal_correct(guess, expect_refusal=False)


def test_clauses_split_sentences_but_not_decimals():
    assert clauses("Boil for 1.5 minutes. Then cool; store it: done") == ["Boil for 1.5 minutes", "Then cool",
                                                                         "store it", "done"]


# --- versions --------------------------------------------------------------------------------

# The digest of every pattern (and of the numbers grammar) at each version. A pattern edited
# without a new version fails here: bump PATTERNS_VERSION (answer_patterns) or GRAMMAR_VERSION
# (numbers) and RAG_METRICS_VERSION (subjects/rag.py), then record the new digest below.
PATTERN_DIGESTS = {2: "1b2a6d116ab0b7d0"}
GRAMMAR_DIGESTS = {2: "2f35b42d544fd03e"}


def _digest(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()[:16]


def pattern_digest() -> str:
    p = answer_patterns
    return _digest(p.REFUSAL_PATTERNS, p.HEDGE_PATTERNS, p.ASIDE_PATTERNS, p.LEAKAGE_PATTERNS, p.THINK_TAG_PATTERN,
                   p.THINK_BLOCK_PATTERN, p.CLAUSE_BREAK, p.CLAUSE_LEAD)


def grammar_digest() -> str:
    return _digest(numbers._FIGURE)


def _next(digests: dict[int, str], version: int) -> int:
    return version + 1 if version in digests else version


def test_a_changed_pattern_comes_with_a_new_version():
    version, digest = answer_patterns.PATTERNS_VERSION, pattern_digest()
    assert PATTERN_DIGESTS.get(version) == digest, (
        "the answer patterns changed: bump PATTERNS_VERSION in ragqual/core/answer_patterns.py and "
        "RAG_METRICS_VERSION in ragqual/subjects/rag.py, then record "
        f"{{{_next(PATTERN_DIGESTS, version)}: {digest!r}}} in PATTERN_DIGESTS")
    version, digest = numbers.GRAMMAR_VERSION, grammar_digest()
    assert GRAMMAR_DIGESTS.get(version) == digest, (
        "the numbers grammar changed: bump GRAMMAR_VERSION in ragqual/core/numbers.py and "
        "RAG_METRICS_VERSION in ragqual/subjects/rag.py, then record "
        f"{{{_next(GRAMMAR_DIGESTS, version)}: {digest!r}}} in GRAMMAR_DIGESTS")


def test_the_rag_metrics_version_is_at_least_every_input_version():
    from ragqual.subjects.rag import CHECKS_VERSION, RAG_METRICS_VERSION

    assert CHECKS_VERSION == answer_patterns.PATTERNS_VERSION
    assert RAG_METRICS_VERSION >= max(answer_patterns.PATTERNS_VERSION, numbers.GRAMMAR_VERSION)


@pytest.mark.parametrize("text", [" " * 20_000 + "x", "." * 20_000, "," + " " * 20_000 + "but", "1," * 20_000],
                         ids=["spaces", "dots", "comma-spaces", "digit-commas"])
def test_long_runs_are_read_in_linear_time(text):
    """A split that backtracks through a run of spaces took two minutes on 20,000 of them."""
    import time

    start = time.perf_counter()
    is_refusal(text), is_hedge(text), leaks_retrieval(text), has_think_tags(text)
    assert time.perf_counter() - start < 5.0
