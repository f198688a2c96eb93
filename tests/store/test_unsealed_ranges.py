"""`unsealed_counts` finds the rows no seal covers from the uncovered id ranges of `seal_spans`
instead of testing every row of the runs; it must count exactly what the row-by-row rule
(`covered` on each row, `unsealed_sql`) counts, forged and overlapping spans included."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, text

from ragqual.store import db, sealed_rows
from ragqual.store.sealed_rows import uncovered_ranges, unsealed_counts
from tests.store.conftest import execute_raw
from tests.store.test_sealed_reads import _sql, forge, two_runs  # noqa: F401 (fixture)


def test_the_ranges_between_and_after_the_spans():
    # (first, last, next first) of spans followed by a gap, then (lowest first id, None, None)
    assert uncovered_ranges([(1, 10, None), (1, None, None)]) == [(11, None)]
    assert uncovered_ranges([(1, 10, 15), (15, 20, None), (1, None, None)]) == [(11, 14), (21, None)]
    assert uncovered_ranges([(5, 9, None), (5, None, None)]) == [(1, 4), (10, None)]
    assert uncovered_ranges([(None, None, None)]) == [(1, None)]
    # a span whose last id lies below its first covers nothing: the gap starts at its first id
    assert uncovered_ranges([(1, 4, 8), (8, 3, 12), (12, 20, None), (1, None, None)]) == [
        (5, 7), (8, 11), (21, None)]


def row_by_row(url: str, runs: list[int]) -> dict[int, dict[str, int]]:
    engine = db.make_engine(url)
    out: dict[int, dict[str, int]] = {}
    try:
        with engine.connect() as conn:
            query = text(sealed_rows.unsealed_sql()).bindparams(bindparam("runs", expanding=True))
            for table, run_id, n in conn.execute(query, {"runs": runs}):
                out.setdefault(int(run_id), {})[str(table)] = int(n)
    finally:
        engine.dispose()
    return {run: dict(sorted(counts.items())) for run, counts in sorted(out.items())}


def counts(url: str, runs: list[int]) -> dict[int, dict[str, int]]:
    engine = db.make_engine(url)
    try:
        return unsealed_counts(engine, runs)
    finally:
        engine.dispose()


def test_no_uncovered_rows_in_sealed_runs(two_runs):
    assert counts(two_runs, [1, 2]) == row_by_row(two_runs, [1, 2]) == {}


def test_rows_past_the_newest_seal_are_counted_per_run(two_runs):
    forge(two_runs, 2)
    assert counts(two_runs, [1, 2]) == row_by_row(two_runs, [1, 2]) == {
        2: {"metric_values": 30, "trial_scores": 30}}
    assert counts(two_runs, [1]) == {}


@pytest.mark.parametrize("fallback", [False, True])
def test_forged_spans_count_as_the_rule_says(two_runs, monkeypatch, fallback):
    """Spans appended by hand among rows no seal covers: one covers five of them, a reversed one
    (last id below its first) covers nothing."""
    if fallback:
        monkeypatch.setattr(sealed_rows, "MAX_GAPS", 0)
    forge(two_runs, 1)
    (first,), = _sql(two_runs, "SELECT MIN(s.id) FROM trial_scores s WHERE s.batch = 'forged'")
    (seal,), = _sql(two_runs, "SELECT MAX(id) FROM seals")
    execute_raw(two_runs, *(
        f"INSERT INTO seal_spans (seal_id, table_name, first_id, last_id) VALUES ({seal}, 'trial_scores', {a}, {b})"
        for a, b in ((first + 5, first + 9), (first + 20, first + 15))))
    expected = row_by_row(two_runs, [1, 2])
    assert expected == {1: {"metric_values": 30, "trial_scores": 25}}
    assert counts(two_runs, [1, 2]) == expected
