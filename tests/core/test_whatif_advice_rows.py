"""`whatif.advice_rows` evaluates only what the advice reads (every setting on the selection split;
the run's own and the best setting on the held-out split; nothing of other questions), and the
advice it gives equals the advice of every row (`rows_for` over `evaluate`), on random candidate
lists, cut-offs, sizes, strategies and splits."""

from __future__ import annotations

import random

import pytest

from ragqual.core import whatif
from ragqual.core.whatif import Question, Setting
from tests.core.test_whatif_shared_contexts import TEXTS, _question, _settings, matches

OWNS = [Setting(None, 5), Setting(0.5, 3), Setting(0.3, 1)]


def _reader(asked: list[tuple[str, tuple[str, ...]]]):
    def reader(q: Question, passages):
        asked.append((q.case_id, tuple(passages)))
        return float(any("one minute" in p for p in passages)) if passages else None
    return reader


def full_advice(questions, settings, own, reader, split):
    """What `ragqual whatif` computes: every question under every setting, then the advice."""
    outcomes = whatif.evaluate(questions, settings, own, TEXTS, matches, reader)
    rows = whatif.rows_for(questions, outcomes, split)
    held = whatif.rows_for(questions, outcomes, "test") if split else None
    return rows, held, whatif.advice(rows, own, "mock pass", split or "all questions", held)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("with_reader", [True, False])
def test_the_advice_of_the_rows_it_reads_equals_the_advice_of_every_row(seed, with_reader):
    rng = random.Random(seed)
    questions = [_question(rng, i) for i in range(rng.choice([0, 1, 5, 30, 60]))]
    settings = _settings(rng)
    own = rng.choice(OWNS)
    settings = settings if own in settings else [own, *settings]
    split = "validation" if any(q.split == "validation" for q in questions) else None
    asked: list[tuple[str, tuple[str, ...]]] = []
    reader = _reader(asked) if with_reader else None

    rows, held = whatif.advice_rows(questions, settings, own, TEXTS, matches, reader, split, "test")
    want_rows, want_held, want = full_advice(questions, settings, own, reader, split)
    assert rows == want_rows
    assert whatif.advice(rows, own, "mock pass", split or "all questions", held) == want
    if split is None:
        assert held is None
        return
    top = whatif.best(rows, own)
    assert held is not None
    assert [r.setting for r in held] == list(dict.fromkeys([own, *([top.setting] if top else [])]))
    every = {r.setting: r for r in want_held or []}
    assert held == [every[r.setting] for r in held]


def test_held_out_questions_are_read_under_two_settings_and_the_others_not_at_all():
    rng = random.Random(7)
    questions = [_question(rng, i) for i in range(60)]
    settings, own = _settings(rng), Setting(None, 5)
    settings = [own, *settings]
    asked: list[tuple[str, tuple[str, ...]]] = []
    rows, held = whatif.advice_rows(questions, settings, own, TEXTS, matches, _reader(asked), "validation", "test")
    top = whatif.best(rows, own)
    assert top is not None
    split = {q.case_id: q.split for q in questions}
    by_id = {q.case_id: q for q in questions}
    for case_id, passages in asked:
        assert split[case_id] in ("validation", "test")
        if split[case_id] == "test":
            q = by_id[case_id]
            assert passages in {tuple(TEXTS[i] for i in whatif.context_ids(q, s)) for s in (own, top.setting)}
    assert any(s is None for s in split.values())
    read_everything: list[tuple[str, tuple[str, ...]]] = []
    whatif.evaluate(questions, settings, own, TEXTS, matches, _reader(read_everything))
    assert len(asked) < len(read_everything)


def test_the_random_inputs_reach_an_advice_with_held_out_numbers():
    """The equality above is not vacuous: some inputs name a setting other than the run's own."""
    named = 0
    for seed in range(40):
        rng = random.Random(seed)
        questions = [_question(rng, i) for i in range(rng.choice([0, 1, 5, 30, 60]))]
        settings, own = _settings(rng), rng.choice(OWNS)
        settings = settings if own in settings else [own, *settings]
        split = "validation" if any(q.split == "validation" for q in questions) else None
        _, _, advice = full_advice(questions, settings, own, _reader([]), split)
        named += bool(advice and "on test)" in advice)
    assert named >= 5
