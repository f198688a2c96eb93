"""The hash split: deterministic, seeded, about half each, and never over a golden's own split."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ragqual.core.splits import TEST, VALIDATION, assign_hash_splits, hash_split
from ragqual.errors import InputError


@dataclass(frozen=True)
class Q:
    id: str
    split: str | None = None


IDS = [f"question-{i:03d}" for i in range(400)]


def test_the_same_seed_gives_the_same_split_in_any_order():
    first = {i: hash_split(i, 7) for i in IDS}
    again = {i: hash_split(i, 7) for i in reversed(IDS)}
    assert first == again
    assert set(first.values()) == {VALIDATION, TEST}


def test_another_seed_moves_questions():
    moved = sum(hash_split(i, 1) != hash_split(i, 2) for i in IDS)
    assert 120 < moved < 280  # independent coins: about half move


def test_about_half_go_to_each_side():
    validation = sum(hash_split(i, 0) == VALIDATION for i in IDS)
    assert 160 < validation < 240


def test_the_split_of_a_seed_is_pinned_across_versions():
    """A README's stated seed must mean the same split next year: these were computed once."""
    assert "".join(hash_split(f"q{i}", 0)[0] for i in range(12)) == "tvvvttttttvv"
    assert "".join(hash_split(f"q{i}", 1)[0] for i in range(12)) == "vvttvvtvtvvt"


def test_adding_a_question_moves_no_other():
    before = {q.id: q.split for q in assign_hash_splits([Q(i) for i in IDS[:50]], 3)}
    after = {q.id: q.split for q in assign_hash_splits([Q(i) for i in IDS[:60]], 3)}
    assert all(after[i] == s for i, s in before.items())


def test_goldens_with_their_own_split_keep_it():
    own = [Q("a", TEST), Q("b", TEST)]
    assert assign_hash_splits(own, 0) == own


def test_a_set_split_only_in_part_is_refused():
    with pytest.raises(InputError, match="1 of 2 questions carry a `split`"):
        assign_hash_splits([Q("a", TEST), Q("b")], 0)
