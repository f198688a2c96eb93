"""`whatif.evaluate` cuts a question's candidates once per number of candidates a cut-off keeps
(`cut_key`), computes the run's own context once per question and matches each mustInclude
pattern once per context (the reader ceiling reuses the coverage): held to the plain reading on
unsorted lists, ties, NaN similarities and NaN cut-offs, and counted."""

from __future__ import annotations

import math
import random
import re

import pytest

from ragqual.core import diagnosis, whatif
from ragqual.core.whatif import Question, Setting, context_indices, cut_key

TEXTS = {f"{d}#{i}": f"{d} text {i}: boil for one minute" if d == "boil" else f"{d} text {i} about {d}"
         for d in ("boil", "still", "poem", "cold") for i in range(3)}
CHUNKS = sorted(TEXTS)
GRID = [0.3, 0.35, 0.5, 0.55, 0.8]


def matches(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


def _sims(rng: random.Random, n: int) -> tuple[float, ...]:
    """Unsorted (another strategy's rank order), with ties on the cut-offs, now and then inf or NaN."""
    pool = [*GRID, math.inf, -math.inf] if rng.random() < 0.5 else GRID
    out = [rng.choice(pool) if rng.random() < 0.4 else round(rng.uniform(0.1, 0.95), 3) for _ in range(n)]
    if n and rng.random() < 0.15:
        out[rng.randrange(n)] = math.nan
    return tuple(out)


@pytest.mark.parametrize("seed", range(30))
def test_one_key_one_context(seed):
    rng = random.Random(seed)
    sims = _sims(rng, rng.choice([0, 1, 3, 7, 12]))
    if any(s != s for s in sims):
        assert whatif._ascending(sims) is None  # no count decides: cut as it is
        return
    ascending = whatif._ascending(sims)
    by_key: dict = {}
    for t in [None, math.nan, *GRID, *(rng.uniform(0, 1) for _ in range(10)), *sims]:
        for k in (1, 2, 5):
            key = cut_key(ascending, t, k)
            got = context_indices(sims, t, k)
            if key is None:
                assert t != t and got == []
                continue
            assert by_key.setdefault(key, got) == got


def _question(rng: random.Random, i: int) -> Question:
    def cands():
        ids = tuple(rng.sample(CHUNKS, rng.choice([0, 2, 5, 9])))
        return ids, _sims(rng, len(ids))
    ids, sims = cands()
    refusal = rng.random() < 0.3
    return Question(f"q{i}", None, refusal, () if refusal else ("boil",), () if refusal else ("one minute", "boil"),
                    ("poem",), ids, sims, {"bm25": cands()})


@pytest.mark.parametrize("seed", range(10))
def test_evaluate_equals_the_plain_reading_on_unsorted_and_nan_similarities(seed):
    rng = random.Random(seed)
    questions = [_question(rng, i) for i in range(8)]
    cuts = [None, math.nan, *whatif.parse_range("0.3:0.8:0.05")]
    settings = [Setting(t, k, s) for s in (None, "bm25") for t in cuts for k in (1, 3, 5)]
    own = Setting(0.5, 3)
    got = whatif.evaluate(questions, settings, own, TEXTS, matches)
    want = {s: [whatif.outcome(q, s, own, TEXTS, matches) for q in questions] for s in settings}
    assert got == want and list(got) == list(want)


def test_cut_once_per_kept_count_and_own_context_once(monkeypatch):
    """Twelve cut-offs that keep the same two candidates: one cut, not one per setting (the base
    cut every setting, and the run's own context again for every distinct outcome)."""
    q = Question("q", None, False, ("boil",), ("one minute",), (), ("boil#0", "poem#0", "cold#0"), (0.9, 0.85, 0.1))
    settings = [Setting(t, 5) for t in whatif.parse_range("0.3:0.8:0.05")] + [Setting(None, 5), Setting(None, 1)]
    calls = {"ids": 0, "indices": 0}
    ids, indices = whatif.context_ids, whatif.context_indices

    def counted_ids(*a):
        calls["ids"] += 1
        return ids(*a)

    def counted_indices(*a):
        calls["indices"] += 1
        return indices(*a)
    monkeypatch.setattr(whatif, "context_ids", counted_ids)
    monkeypatch.setattr(whatif, "context_indices", counted_indices)
    got = whatif.evaluate([q], settings, Setting(None, 5), TEXTS, matches)
    assert {o.context_recall for outs in got.values() for o in outs} == {1.0}
    # one cut for the twelve cut-offs, one for `None, 5` (three kept), one for `None, 1`, and the own context once
    assert calls["indices"] == 4


def test_each_fact_matched_once_per_context():
    """The reader ceiling reads the fact coverage `evaluate` measured (the base matched every
    mustInclude pattern twice per context: once for the coverage, once for the ceiling)."""
    seen: list[tuple[str, str]] = []

    def counting(pattern: str, text: str) -> bool:
        seen.append((pattern, text))
        return matches(pattern, text)
    q = Question("q", None, False, ("boil",), ("one minute", "boil"), (), ("boil#0", "poem#0"), (0.9, 0.4))
    got = whatif.evaluate([q], [Setting(None, 5), Setting(0.5, 5)], Setting(None, 5), TEXTS, counting)
    assert len(seen) == len(set(seen)) == 4  # two contexts x two patterns
    assert [o.reader_ceiling for outs in got.values() for o in outs] == [1.0, 1.0]


@pytest.mark.parametrize("refusal,context,facts", [(True, "", ("x",)), (True, "text", ()), (False, "boil", ("boil",)),
                                                   (False, "still", ("boil",)), (False, "still", ())])
def test_ceiling_from_a_measured_coverage_is_the_reader_ceiling(refusal, context, facts):
    e = diagnosis.Evidence(refusal, ("boil",), ("boil#0",) if context else (), context, "", facts, ())
    coverage = None if refusal else diagnosis.fact_coverage(e, matches)
    assert diagnosis.ceiling_from(e, coverage) == diagnosis.reader_ceiling(e, matches)


def test_the_first_missing_strategy_is_refused_as_setting_by_setting():
    """Questions that each lack another strategy: the refusal names the first setting's strategy
    and the first question without it, as the setting-by-setting reading did."""
    own = Setting(None, 5)
    a = Question("a", None, False, (), (), (), ("boil#0",), (0.9,), {"bm25": (("boil#0",), (0.9,))})
    b = Question("b", None, False, (), (), (), ("boil#0",), (0.9,), {"hybrid": (("boil#0",), (0.9,))})
    with pytest.raises(whatif.InputError, match="question a: no stored candidates of strategy 'hybrid'"):
        whatif.evaluate([a, b], [own, Setting(None, 5, "hybrid"), Setting(None, 5, "bm25")], own, TEXTS, matches)
