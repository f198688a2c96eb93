"""The answer metrics' short cuts read exactly what the plain readings read.

`is_refusal` stops at the first content clause and `groundedness` reads each distinct text's
figures once; both are held here to the plain per-answer readings they replace (written out
below as they were), on the labelled table, the bundled corpus and mixed clauses.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragqual.core import answer_metrics
from ragqual.core.answer_metrics import clause_kind, clauses, groundedness, is_refusal
from ragqual.core.numbers import Date, Number, read_figures

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "data" / "answer_phrases.jsonl"
ROWS = [json.loads(line)["text"] for line in TABLE.read_text(encoding="utf-8").splitlines() if line.strip()]
CORPUS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "corpus").glob("*.md"))]


def plain_is_refusal(answer: str) -> bool:
    kinds = {clause_kind(c) for c in clauses(answer)}
    return "refusal" in kinds and "content" not in kinds


def plain_groundedness(answer: str, context: str | list[str]) -> float | None:
    joined = context if isinstance(context, str) else "\n".join(context)
    claims = {f for f in read_figures(answer)
              if isinstance(f, Date) or (isinstance(f, Number) and f.magnitude > 10.0)}
    if not claims:
        return None
    return len(claims & set(read_figures(joined))) / len(claims)


def _mixed(seed: int, count: int) -> list[str]:
    """Answers stitched from labelled rows and corpus sentences, in every order: a refusal before
    content, content before a refusal, asides around both, separators of every kind."""
    rng = random.Random(seed)
    pieces = ROWS + [s for text in CORPUS for s in text.split(". ")[:6]]
    joins = [" ", ". ", "; ", "\n", " but ", ", so ", " - ", ": ", ""]
    return [rng.choice(joins).join(rng.sample(pieces, rng.randint(1, 5))) for _ in range(count)]


EDGES = ["", " ", ".", "...", "\n\n", "but", "I don't know", "I don't know. Sorry.", "Sorry. I don't know.",
         "I don't know. Boil it.", "Boil it. I don't know.", "Please consult a doctor.", "I'm not sure.",
         "I'm not sure, but it is 5 years.", "Unknown", "Okay. Unknown.", "- - -", "\u2019"]
ANSWERS = EDGES + ROWS + CORPUS + _mixed(28, 400)


@pytest.mark.parametrize("answer", ANSWERS, ids=range(len(ANSWERS)))
def test_is_refusal_reads_as_every_clause_read(answer):
    is_refusal.cache_clear()
    assert is_refusal(answer) is plain_is_refusal(answer)


def test_is_refusal_stops_at_the_first_content_clause(monkeypatch):
    read = []

    def counting(clause: str) -> str:
        read.append(clause)
        return clause_kind(clause)

    monkeypatch.setattr(answer_metrics, "clause_kind", counting)
    is_refusal.cache_clear()
    answer = "Boil the water for one minute. " + " ".join(["I don't know."] * 50)
    assert not is_refusal(answer)
    assert read == ["Boil the water for one minute"]


FIGURE_TEXTS = ["", "no figures here", "step 2 of 3", "-15 C and 15 C", "2024-05-01", "2024-05-01 and 2024",
                "1,000 mg or 1000 mg", "10-15 minutes", "192.168.0.1", "between 12 and 120, not 11", "\u221215"]


def _pairs() -> list[tuple[str, str | list[str]]]:
    rng = random.Random(7)
    texts = FIGURE_TEXTS + CORPUS + ROWS
    pairs: list[tuple[str, str | list[str]]] = [(a, c) for a in FIGURE_TEXTS for c in FIGURE_TEXTS]
    for _ in range(300):
        answer = " ".join(rng.sample(texts, rng.randint(1, 3)))
        context = rng.sample(texts, rng.randint(0, 3))
        pairs.append((answer, context if rng.random() < 0.5 else "\n".join(context)))
        pairs.append((answer, answer))  # the echo mock: the answer is its context
    return pairs


def test_groundedness_equals_the_plain_reading_over_repeated_texts():
    pairs = _pairs()
    for _ in range(2):  # the second pass reads every text from the memo
        for answer, context in pairs:
            got, want = groundedness(answer, context), plain_groundedness(answer, context)
            assert got == want and type(got) is type(want), (answer[:80], str(context)[:80])
