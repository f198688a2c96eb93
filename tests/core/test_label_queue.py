"""The review queue's decisions without a terminal: order, sample, resume, keys -> label rows."""

from __future__ import annotations

import pytest

from ragqual.core.label_queue import (CRITERIA, VERDICT_KEYS, LabelDraft, LabelSession, fully_labelled, plan_queue,
                                      sample_trials)
from ragqual.errors import InputError


def test_each_criterion_has_one_key_per_verdict():
    assert VERDICT_KEYS["1"] == ("faithfulness", "yes") and VERDICT_KEYS["2"] == ("faithfulness", "no")
    assert VERDICT_KEYS["6"] == ("completeness", "unsure") and VERDICT_KEYS["7"] == ("relevance", "yes")
    assert sorted(set(VERDICT_KEYS.values())) == sorted({(c, v) for c in CRITERIA for v in ("yes", "no", "unsure")})


def test_a_sample_is_reproducible_for_a_seed_and_differs_between_seeds():
    ids = list(range(100, 200))
    first = sample_trials(ids, 10, seed=3)
    assert first == sample_trials(reversed(ids), 10, seed=3)  # the order ids arrive in does not matter
    assert len(set(first)) == 10 and set(first) <= set(ids)
    assert sample_trials(ids, 10, seed=4) != first
    assert sample_trials(ids, 500, seed=3) != sorted(ids) and sorted(sample_trials(ids, 500, seed=3)) == ids
    with pytest.raises(InputError, match="at least 1"):
        sample_trials(ids, 0, seed=1)


def test_a_sample_is_uniform_over_the_trials():
    counts = dict.fromkeys(range(20), 0)
    for seed in range(4000):
        for t in sample_trials(range(20), 5, seed):
            counts[t] += 1
    expected = 4000 * 5 / 20  # 1000 each
    assert all(abs(n - expected) < 120 for n in counts.values()), counts


def test_the_queue_leaves_out_done_trials_and_keeps_walking_the_same_sample():
    ids = list(range(1, 31))
    whole = plan_queue(ids, sample_size=8, seed=11)
    resumed = plan_queue(ids, sample_size=8, seed=11, done=whole[:3])
    assert resumed == whole[3:]
    assert plan_queue(ids, failing={5, 2, 99}) == [2, 5]
    assert plan_queue([3, 1, 2], done={2}) == [1, 3]
    assert set(plan_queue(ids, failing={1, 2, 3, 4}, sample_size=2, seed=0)) <= {1, 2, 3, 4}


def test_fully_labelled_needs_every_criterion():
    assert fully_labelled({1: dict.fromkeys(CRITERIA, "yes"), 2: {"faithfulness": "no"}}) == {1}


def test_keys_append_rows_correct_and_move_on_when_a_trial_is_complete():
    s = LabelSession([10, 20])
    assert s.press("1") == [LabelDraft(10, "faithfulness", "yes")]
    assert s.press("1") == []  # the same verdict again appends nothing
    assert s.press("2") == [LabelDraft(10, "faithfulness", "no")]  # a correction is a newer row
    assert s.press("x") == [] and s.current == 10
    s.press("4")
    assert s.current == 10
    assert s.press("9") == [LabelDraft(10, "relevance", "unsure")]
    assert s.current == 20  # the third criterion completed the trial
    s.press("b")
    assert s.current == 10 and s.given(10) == {"faithfulness": "no", "completeness": "yes", "relevance": "unsure"}
    s.press("7")
    assert s.current == 10  # a correction on a complete trial stays on it
    s.press("s")
    s.press("s")
    assert s.finished and s.current is None and s.press("1") == []
    assert s.labelled == 5


def test_a_note_goes_on_the_trial_verdicts_now_and_later():
    s = LabelSession([10], verdicts={10: {"relevance": "yes"}})
    assert s.note("  cites the wrong page ") == [LabelDraft(10, "relevance", "yes", "cites the wrong page")]
    assert s.note("cites the wrong page") == []
    assert s.press("3") == [LabelDraft(10, "faithfulness", "unsure", "cites the wrong page")]
