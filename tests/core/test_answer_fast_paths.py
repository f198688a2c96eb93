"""The answer metrics' short cuts read exactly what the plain readings read.

`is_refusal` stops at the first content clause, `groundedness` reads each distinct text's
figures once as plain values, and the phrase patterns skip texts without their literals; all are
held here to the plain per-answer readings they replace (written out
below as they were), on the labelled table, the bundled corpus and mixed clauses.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import regex

from ragqual.core import answer_metrics, answer_patterns, numbers, textmatch
from ragqual.core.answer_metrics import clause_kind, clauses, groundedness, is_refusal
from ragqual.core.numbers import Date, Figure, Number, figure_values, read_figures

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


# The bundled phrase patterns skip a text that lacks the literals every match needs
# (`core.prefilter`) and compile a pattern only when a text has them: held here to the plain
# searches they replace, on the answers above, case-mangled copies and the labelled table.

def _plain(patterns: tuple[str, ...]) -> list[regex.Pattern[str]]:
    return [regex.compile(p, regex.IGNORECASE) for p in patterns]


PLAIN = {kind: _plain(patterns) for kind, patterns in (
    ("refusal", answer_patterns.REFUSAL_PATTERNS), ("hedge", answer_patterns.HEDGE_PATTERNS),
    ("aside", answer_patterns.ASIDE_PATTERNS), ("leak", answer_patterns.LEAKAGE_PATTERNS))}
PLAIN_THINK = regex.compile(answer_patterns.THINK_TAG_PATTERN, regex.IGNORECASE)


def plain_clause_kind(clause: str) -> str:
    for kind in ("refusal", "hedge", "aside"):
        if any(p.search(clause) for p in PLAIN[kind]):
            return kind
    return "content"


def _apostrophes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def _shouted(text: str) -> str:
    """Upper case, with the letters `regex` also matches to i and s case-insensitively."""
    return text.upper().replace("I", "\u0130", 3).replace("S", "\u017f", 3)


PHRASE_TEXTS = ANSWERS + [_shouted(a) for a in ANSWERS[:300]] + [
    "Based on the provided context, boil it.", "<THINK>hmm</think> 5 minutes", "[/think] done",
    "\u25c1think\u25b7 no", "<|channel|>analysis", "I'M NOT \u017dURE", "I \u0130S NOT SURE",
    "I'm not \u017fure, but it is 5 years.", "the KNOWLEDGE BA\u017fE says 3", "Context #2 says so"]


def test_the_phrase_readers_equal_the_plain_searches():
    for text in PHRASE_TEXTS:
        for reader in (answer_metrics.is_hedge, answer_metrics.leaks_retrieval, answer_metrics.has_think_tags):
            reader.cache_clear()
        folded = _apostrophes(text)
        assert answer_metrics.is_hedge(text) is any(p.search(folded) for p in PLAIN["hedge"]), text[:80]
        assert answer_metrics.leaks_retrieval(text) is any(p.search(folded) for p in PLAIN["leak"]), text[:80]
        assert answer_metrics.has_think_tags(text) is (PLAIN_THINK.search(text) is not None), text[:80]
        for clause in clauses(text):
            assert clause_kind(clause) == plain_clause_kind(clause), clause[:80]


def test_a_text_without_their_literals_compiles_no_phrase_pattern(monkeypatch):
    """An answer that narrates no retrieval and hedges nowhere is searched by no leakage or hedge
    pattern: none is even compiled (the plain reading compiles and searches all 26)."""
    compiled = []
    real = regex.compile

    def counting(pattern, flags=0, *args, **kwargs):
        compiled.append(pattern)
        return real(pattern, flags, *args, **kwargs)

    answer_metrics._patterns.cache_clear()
    textmatch.compiled.cache_clear()
    monkeypatch.setattr(regex, "compile", counting)
    page = ("Boil the water for one minute (three at altitude). Let it cool before you drink it; "
            "keep it in a clean, covered container and use it within 24 hours.") * 20
    assert not answer_metrics.leaks_retrieval.__wrapped__(page)
    assert not answer_metrics.is_hedge.__wrapped__(page)
    assert compiled == []
    assert answer_metrics.leaks_retrieval.__wrapped__(page + " Based on the provided context, yes.")
    assert 0 < len(compiled) < len(answer_patterns.LEAKAGE_PATTERNS)


def test_groundedness_reads_figure_values_without_figure_objects(monkeypatch):
    """`groundedness` counts plain values (`numbers.figure_values`), never building a `Number`
    or a `Date` per figure; the answer is the one of the figures themselves."""
    def no_figures(text):
        raise AssertionError("groundedness built figure objects")

    monkeypatch.setattr(answer_metrics, "read_figures", no_figures, raising=False)
    answer_metrics._figures.cache_clear()
    answer_metrics._claims.cache_clear()
    for answer, context in _pairs()[:200]:
        assert groundedness(answer, context) == plain_groundedness(answer, context)


def finditer_figures(text: str) -> list[Figure]:
    """The reading of `read_figures` before `figure_values`, one match object per figure."""
    found: list[Figure] = []
    for m in numbers.compiled_as_written(numbers._FIGURE).finditer(text):
        if m.group("date"):
            found.append(Date(m.group("date")))
        elif m.group("int"):
            sign = "-" if m.group("sign") else ""
            found.append(Number(float(sign + m.group("int").replace(",", "") + (m.group("frac") or ""))))
    return found


def test_figure_values_read_what_the_match_objects_read():
    assert list(numbers.compiled_as_written(numbers._FIGURE).groupindex) == ["date", "dotted", "sign", "int", "frac"]
    for text in FIGURE_TEXTS + CORPUS + ROWS + [a for a, _ in _pairs()]:
        want = finditer_figures(text)
        assert read_figures(text) == want
        assert figure_values(text) == [f.iso if isinstance(f, Date) else f.value for f in want]
