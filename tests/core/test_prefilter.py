"""The literal pre-filter (`core.prefilter`) never rules out a text its pattern matches.

Soundness is held three ways: `fold` against every code point `regex` matches to a literal
character case-insensitively; the needs of every bundled phrase pattern against the texts it
matches (labelled rows, the bundled corpus, their clauses, case-mangled copies); and the syntax
reading against thousands of random patterns over a tiny alphabet, each searched in random texts.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest
import regex

from ragqual.core import answer_patterns as ap
from ragqual.core.answer_metrics import clauses
from ragqual.core.prefilter import admits, fold, need

ROOT = Path(__file__).resolve().parents[2]
ROWS = [json.loads(line)["text"] for line in (ROOT / "tests" / "data" / "answer_phrases.jsonl")
        .read_text(encoding="utf-8").splitlines() if line.strip()]
CORPUS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "corpus").glob("*.md"))]
BUNDLED = [*ap.REFUSAL_PATTERNS, *ap.HEDGE_PATTERNS, *ap.ASIDE_PATTERNS, *ap.LEAKAGE_PATTERNS,
           ap.THINK_TAG_PATTERN]
EVERY_CODE_POINT = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def _literal_chars() -> set[str]:
    chars = set(string.printable)
    for pattern in BUNDLED:
        chars |= {c for group in need(pattern) for literal in group for c in literal}
    return chars


def test_fold_brings_every_case_insensitive_match_of_a_literal_character_to_it():
    """What `admits` relies on: wherever `regex` matches a literal character p case-insensitively,
    the folded text holds p in lower case at that place (one character for one)."""
    for p in sorted(_literal_chars()):
        for c in regex.findall(regex.escape(p), EVERY_CODE_POINT, regex.IGNORECASE):
            assert fold(c) == p.lower(), (p, hex(ord(c)))


def test_every_bundled_phrase_pattern_has_needs():
    """Else the pre-filter would do nothing for it (a syntax the reading gave up on)."""
    assert all(need(p) for p in BUNDLED)
    assert all(literal == fold(literal) for p in BUNDLED for group in need(p) for literal in group)


_STRAYS = {"i": ["I", "\u0130", "\u0131"], "s": ["S", "\u017f"], "k": ["K", "\u212a"]}


def _mangled(text: str, rng: random.Random) -> str:
    out = []
    for c in text:
        low = c.lower()
        if low in _STRAYS and rng.random() < 0.3:
            out.append(rng.choice(_STRAYS[low]))
        else:
            out.append(c.upper() if rng.random() < 0.3 else c)
    return "".join(out)


def _texts() -> list[str]:
    rng = random.Random(28)
    base = ROWS + CORPUS + [c for text in ROWS + CORPUS[:3] for c in clauses(text)]
    base += [s for text in CORPUS for s in text.split(". ")]
    return base + [_mangled(t, rng) for t in base] + [t.replace("\u2019", "'") for t in ROWS]


TEXTS = _texts()


@pytest.mark.parametrize("pattern", BUNDLED, ids=range(len(BUNDLED)))
def test_a_bundled_pattern_matches_only_texts_its_needs_admit(pattern):
    compiled, needs = regex.compile(pattern, regex.IGNORECASE), need(pattern)
    for text in TEXTS:
        if compiled.search(text) is not None:
            assert admits(needs, fold(text)), text[:200]


def test_the_needs_rule_out_most_of_the_corpus():
    """The pre-filter pays: most corpus sentences are never searched by a leakage pattern."""
    sentences = [s for text in CORPUS for s in text.split(". ")]
    ruled_out = sum(not admits(need(p), fold(s)) for p in ap.LEAKAGE_PATTERNS for s in sentences)
    assert ruled_out > 0.9 * len(sentences) * len(ap.LEAKAGE_PATTERNS)


@pytest.mark.parametrize("pattern, needs", [
    ("ab", (("ab",),)),
    ("a(?:x)*b", (("a",), ("b",))),  # never "ab": x may stand between
    ("a(?:x)?b", (("ab", "axb"),)),
    ("colou?r", (("color", "colour"), ("colo",))),  # and what both share, one search
    ("a|b", (("a", "b"),)),
    (r"a|\w", ()),  # one branch needs nothing
    (r"(?i)abc", ()),  # inline flags are not read
    (r"(a)\1", ()),  # nor back-references
    ("[^]a]x", (("x",),)),  # a negated set with a literal ]
    ("a[sz]b", (("asb", "azb"),)),
    ("a[a-c]b", (("a",), ("b",))),  # a range is any character
    ("x{0,2}y", (("y",),)),
    ("x{2,3}y", (("x",), ("y",))),
    ("(?<!a)b(?=c)", (("b",),)),  # look-arounds consume nothing
    ("I don't", (("i don't",),)),
    (r"\u25c1think", (("\u25c1think",),)),
    ("\u00dfx", (("x",),)),  # ß matches other characters case-insensitively: no literal
])
def test_need_reads_the_syntax(pattern, needs):
    assert set(need(pattern)) == set(needs)  # the order of the groups is the cheaper-first choice


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    def atom() -> str:
        roll = rng.random()
        if roll < 0.45 or depth > 2:
            return rng.choice(["a", "b", "A", "ab", "ba", "c"])
        if roll < 0.55:
            return rng.choice(["[ab]", "[^a]", r"\w", ".", "[a-b]", r"\s"])
        if roll < 0.65:
            return rng.choice([r"\b", "^", "$", "(?=a)", "(?!b)", "(?<=a)", "(?<!b)"])
        return "(?:" + _random_pattern(rng, depth + 1) + ")"

    def piece() -> str:
        return atom() + rng.choice(["", "", "", "?", "*", "+", "{0,2}", "{1,2}", "{2}", "??", "*+", "++"])

    branches = ["".join(piece() for _ in range(rng.randint(0, 4))) for _ in range(rng.choice([1, 1, 2, 3]))]
    return "|".join(branches)


def test_random_patterns_match_only_texts_their_needs_admit():
    rng = random.Random(2026)
    texts = ["".join(rng.choice("aabbAB c") for _ in range(rng.randint(0, 9))) for _ in range(60)]
    checked = 0
    for _ in range(1500):
        pattern = _random_pattern(rng)
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE)
        except regex.error:
            continue
        needs = need(pattern)
        for text in texts:
            if compiled.search(text) is not None:
                assert admits(needs, fold(text)), (pattern, needs, text)
                checked += 1
    assert checked > 10000
