"""`whatif.evaluate` computes one outcome per distinct (question, context) and shares it between
the settings that hand a question that context: held to the plain reading (every setting, every
question, `whatif.outcome` each time) on random candidate lists, cut-offs, sizes and strategies."""

from __future__ import annotations

import random
import re

import pytest

from ragqual.core import whatif
from ragqual.core.whatif import Question, Setting

DOCS = ["boil", "still", "poem", "long", "cold", "fire"]
TEXTS = {f"{d}#{i}": f"{d} text {i}: boil for one minute" if d == "boil" else f"{d} text {i} about {d}"
         for d in DOCS for i in range(3)}
CHUNKS = sorted(TEXTS)


def matches(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


def _candidates(rng: random.Random) -> tuple[tuple[str, ...], tuple[float, ...]]:
    n = rng.choice([0, 1, 2, 5, 8, 12])
    ids = tuple(rng.sample(CHUNKS, n))
    grid = [0.3, 0.35, 0.5, 0.55, 0.8]  # similarities on the cut-offs themselves, and ties
    sims = sorted((rng.choice(grid) if rng.random() < 0.3 else round(rng.uniform(0.1, 0.95), 4)
                   for _ in ids), reverse=True)
    return ids, tuple(sims)


def _question(rng: random.Random, i: int) -> Question:
    refusal = rng.random() < 0.3
    ids, sims = _candidates(rng)
    return Question(
        case_id=f"q{i}", split=rng.choice([None, "validation", "test"]), expect_refusal=refusal,
        relevant_docs=() if refusal else tuple(rng.sample(DOCS, rng.randint(1, 2))),
        must_include=() if refusal else tuple(rng.sample([r"one minute", r"boil", r"still", r"\bfire\b"], 2)),
        must_not_include=tuple(rng.sample([r"poem", r"cold"], rng.randint(0, 1))),
        candidate_ids=ids, similarities=sims,
        by_strategy={name: _candidates(rng) for name in ("bm25", "hybrid")},
    )


def _settings(rng: random.Random) -> list[Setting]:
    cuts = [None, *whatif.parse_range("0.3:0.8:0.05")]
    kinds = [None, "bm25", "hybrid"]
    return [Setting(t, k, s) for s in kinds for t in cuts for k in rng.sample([1, 2, 3, 5, 8], 2)]


def plain(questions, settings, own, reader):
    return {s: [whatif.outcome(q, s, own, TEXTS, matches, reader) for q in questions] for s in settings}


@pytest.mark.parametrize("seed", range(12))
def test_shared_outcomes_equal_the_plain_reading(seed):
    rng = random.Random(seed)
    questions = [_question(rng, i) for i in range(rng.choice([1, 5, 30]))]
    settings = _settings(rng)
    own = rng.choice([Setting(None, 5), Setting(0.5, 3), Setting(0.3, 1)])
    asked: list[tuple[str, tuple[str, ...]]] = []

    def reader(q: Question, passages):
        asked.append((q.case_id, tuple(passages)))
        return float(any("one minute" in p for p in passages)) if passages else None

    got = whatif.evaluate(questions, settings, own, TEXTS, matches, reader)
    once = list(asked)
    want = plain(questions, settings, own, reader)
    assert got == want
    assert list(got) == list(want)  # same settings, same order
    assert len(once) == len(set(once))  # each distinct context read once
    for split in (None, "validation", "test"):
        assert whatif.rows_for(questions, got, split) == whatif.rows_for(questions, want, split)


def test_no_questions_and_no_candidates():
    own = Setting(None, 5)
    assert whatif.evaluate([], [own, Setting(0.5, 5)], own, TEXTS, matches) == {own: [], Setting(0.5, 5): []}
    empty = Question("e", None, True, (), (), (), (), ())
    got = whatif.evaluate([empty], [own, Setting(0.9, 1)], own, TEXTS, matches)
    assert got == plain([empty], [own, Setting(0.9, 1)], own, None)
    assert got[own][0].empty


def test_a_strategy_a_question_did_not_store_is_still_refused():
    own = Setting(None, 5)
    bare = Question("b", None, False, ("boil",), ("boil",), (), ("boil#0",), (0.9,))
    with pytest.raises(whatif.InputError, match="question b: no stored candidates of strategy 'bm25'"):
        whatif.evaluate([bare], [own, Setting(None, 5, "bm25")], own, TEXTS, matches)
