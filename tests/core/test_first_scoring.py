"""The short cuts of the first scoring of an answer read exactly what the long way reads.

- `numbers.figure_values` reads the figures of a text with Unicode-free digits from its
  `figure_stretches` (the runs of digits with the characters around them), not from the whole text;
- the whole-answer phrase readers (hedges, leakage) share one folded copy of the answer and test
  each literal of their pre-filters once (`prefilter.admits` with `seen`).

Each is held to the long way on the bundled corpus, the labelled answers, random texts over an
alphabet built to hit every edge of the numbers grammar, and counted where it saves work.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
import regex

from ragqual.core import answer_metrics, numbers, prefilter
from ragqual.core.answer_patterns import HEDGE_PATTERNS, LEAKAGE_PATTERNS
from ragqual.core.numbers import FigureValue, figure_stretches, figure_values

ROOT = Path(__file__).resolve().parents[2]
CORPUS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "corpus").glob("*.md"))]
ROWS = [json.loads(line)["text"] for line in (ROOT / "tests" / "data" / "answer_phrases.jsonl")
        .read_text(encoding="utf-8").splitlines() if line.strip()]

# Digits (ASCII and not), every character a figure is made of or a look-behind reads, letters
# with and without case, spaces of several kinds, and characters that are numbers but no digits.
ALPHABET = list("0123456789,.-\u2212\u2013\u2014+ aZ_(\n\t=:;<'\"") + [
    "\u00e9", "\u00b0", "\u00bd", "\u00b2", "\u0663", "\uff13", "\u2028", "\x1c", "\u00a0", "\u00ab", "\u2264"]


FIGURE = numbers.compiled_as_written(numbers._FIGURE)


def whole_text_values(text: str) -> list[FigureValue]:
    """`figure_values` the long way: `_FIGURE` over the whole text."""
    found: list[FigureValue] = []
    for date, _dotted, sign, whole, frac in FIGURE.findall(text):
        if date:
            found.append(date)
        elif whole:
            found.append(float(("-" if sign else "") + whole.replace(",", "") + frac))
    return found


def _random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 16))) for _ in range(count)]


EDGES = ["", "5", "-5", " -5", "x-5", "a5", ".5", "5.", "5,", "1,000", "1,0000", "3 .5", "3,.5", "5 -3", "5-3",
         "--15", "(\u221215)", "\u221215", "2024-05-01", "2024-05-012", "1.2.3", "192.168.0.1 and 7",
         "\u0663 and 12", "12 \uff13", "\u00e912", "\u00b212", "A15 H2O 120mg", "10\u201315", "10 to 15"]


@pytest.mark.parametrize("seed", range(8))
def test_figure_values_equal_the_whole_text_reading(seed):
    for text in EDGES + CORPUS + ROWS + _random_texts(seed, 4000):
        assert figure_values(text) == whole_text_values(text), repr(text)


def test_the_stretches_hold_every_match_of_the_whole_text():
    """Where the fast reading applies (no digit outside 0-9), `_FIGURE` finds in the stretches,
    one after the other, the very groups it finds in the text."""
    applied = 0
    for text in EDGES + CORPUS + ROWS + _random_texts(99, 20000):
        if numbers._digits_ascii(text):
            applied += 1
            pieces = [m for stretch in figure_stretches(text) for m in FIGURE.findall(stretch)]
            assert pieces == FIGURE.findall(text), repr(text)
    assert applied > 10000


def test_latin_1_holds_no_decimal_digit_but_0_9():
    """What `_digits_ascii` takes on trust for a text within Latin-1."""
    assert [c for c in map(chr, range(0x100)) if regex.match(r"\d", c)] == list("0123456789")


def test_a_digit_outside_0_9_takes_the_whole_text():
    for text in ("\u0663\u0660 and 30", "12 \uff13", "\u09e7\u09e8", "1\U0001d7d8"):  # Arabic-Indic, fullwidth, Bengali, math
        assert not numbers._digits_ascii(text)
        assert figure_values(text) == whole_text_values(text)
    assert numbers._digits_ascii("12 \u00b2 \u00bd \u2163 \u00e9")  # numbers, but no decimal digits


class _Recording:
    """`_FIGURE`, compiled, that records every text it searches."""

    def __init__(self, seen: list[str]):
        self.seen, self.real = seen, FIGURE

    def findall(self, text: str) -> list[tuple[str, ...]]:
        self.seen.append(text)
        return self.real.findall(text)


def test_a_page_is_searched_only_around_its_figures_and_each_stretch_once(monkeypatch):
    page = max(CORPUS, key=len)
    want = figure_values(page)
    searched: list[str] = []
    recording, compiled = _Recording(searched), numbers.compiled_as_written
    monkeypatch.setattr(numbers, "compiled_as_written", lambda source: recording if source == numbers._FIGURE else compiled(source))
    numbers._stretch_values.cache_clear()
    assert figure_values(page) == want
    assert sorted(searched) == sorted(set(figure_stretches(page)))
    assert sum(map(len, searched)) < len(page) / 4
    again = "Another page, the same figures.\n" + page.replace("\n", " ")
    assert set(figure_stretches(again)) <= set(figure_stretches(page))
    searched.clear()
    assert figure_values(again) == whole_text_values(again)
    assert searched == []  # every stretch of it was read before


class _CountingStr(str):
    """A folded text that counts the substring tests made on it."""

    tests: Counter[str] = Counter()

    def __contains__(self, literal: object) -> bool:
        _CountingStr.tests[str(literal)] += 1
        return super().__contains__(literal)  # type: ignore[operator]


def test_admits_with_seen_equals_admits_and_keeps_the_tests():
    needs = [prefilter.need(p) for p in (*HEDGE_PATTERNS, *LEAKAGE_PATTERNS)]
    for text in CORPUS + ROWS + ["Based on the provided context, boil it."]:
        folded = prefilter.fold(text)
        seen: dict[str, bool] = {}
        for n in needs:
            assert prefilter.admits(n, folded, seen) is prefilter.admits(n, folded)
        assert all(found is (literal in folded) for literal, found in seen.items())


def test_the_whole_answer_readers_test_each_literal_once(monkeypatch):
    """The hedge and leakage readers of one answer fold it once and test each literal of their
    pre-filters once, however many of their patterns need it."""
    folds = []

    def counting_fold(text: str) -> str:
        folds.append(text)
        return _CountingStr(prefilter.fold(text))

    monkeypatch.setattr(answer_metrics, "fold", counting_fold)
    _CountingStr.tests.clear()
    answer = max(CORPUS, key=len) + " The documents say so."
    for reader in (answer_metrics.is_hedge, answer_metrics.leaks_retrieval):
        reader.cache_clear()
    answer_metrics._whole.cache_clear()
    assert not answer_metrics.is_hedge(answer)
    assert answer_metrics.leaks_retrieval(answer)
    assert len(folds) == 1
    assert _CountingStr.tests and max(_CountingStr.tests.values()) == 1
    assert "document" in _CountingStr.tests  # needed by several leakage patterns
