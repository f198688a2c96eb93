"""`newest_metric_rows`: the rows kept per key, whether or not any key has a rival."""

from __future__ import annotations

import random

from ragqual.store.queries import newest_metric_rows


def _by_the_rule(rows):
    """The rule written out plainly: per key the highest version, the later row on a tie."""
    chosen = {}
    for index, (trial_id, case_id, group_key, metric, _, version) in enumerate(rows):
        key = (trial_id, metric) if trial_id is not None else (None, case_id, group_key, metric)
        if key not in chosen or version >= rows[chosen[key]][5]:
            chosen[key] = index
    return [row for index, row in enumerate(rows) if index in set(chosen.values())]


def _rows(rng: random.Random, rescored: bool, retrieval: bool) -> list[tuple]:
    rows = []
    for trial in range(1, 40):
        for metric in ("correctness", "groundedness", "leakage"):
            trial_id = None if retrieval and rng.random() < 0.5 else trial
            rows.append((trial_id, f"q{trial % 7}", "dense", metric, rng.random(), 1))
    if rescored:
        for _ in range(15):
            trial_id, case_id, group_key, metric, _, _ = rng.choice(rows)
            rows.append((trial_id, case_id, group_key, metric, rng.random(), rng.choice((1, 2))))
    return rows


def test_rows_of_a_run_never_rescored_come_back_as_they_are():
    rows = _rows(random.Random(1), rescored=False, retrieval=False)
    assert newest_metric_rows(rows) == rows == _by_the_rule(rows)


def test_rescored_and_trial_less_rows_follow_the_rule():
    for seed in range(30):
        rng = random.Random(seed)
        for rescored, retrieval in ((True, False), (False, True), (True, True)):
            rows = _rows(rng, rescored, retrieval)
            got = newest_metric_rows(rows)
            assert got == _by_the_rule(rows)
            assert len(got) < len(rows)


def test_one_trial_less_row_among_trial_rows_still_goes_through_the_rule():
    rows = [(1, "q1", "", "m", 0.5, 1), (None, "q1", "dense", "m", 0.2, 1), (None, "q1", "dense", "m", 0.3, 1)]
    assert newest_metric_rows(rows) == [rows[0], rows[2]]
