"""The span rule of ragqual.store.sealed_rows, without a database: which ids each seal covers."""

from __future__ import annotations

import json

from ragqual.store.sealed_rows import chain_spans, covered, seal_spans, unsealed_warning


def rows(**tables: list[list[int]]) -> str:
    return json.dumps({t: {"ids": ids, "digests": ""} for t, ids in tables.items()})


def watermark(**marks: int) -> str:
    return json.dumps({"watermark": marks})


def test_a_rows_seal_covers_exactly_its_ranges():
    assert seal_spans("rows", rows(trials=[[4, 6], [9, 9]], runs=[[2, 2]]), {}) == [
        ("runs", 2, 2), ("trials", 4, 6), ("trials", 9, 9)]


def test_a_watermark_covers_only_what_earlier_spans_do_not_reach():
    assert seal_spans("genesis", watermark(trials=10, runs=0), {}) == [("trials", 1, 10)]
    assert seal_spans("watermark", watermark(trials=10, cases=3), {"trials": 12}) == [("cases", 1, 3)]
    assert seal_spans("watermark", watermark(trials=20), {"trials": 12}) == [("trials", 13, 20)]


def test_the_chain_never_overlaps_and_skips_an_unreadable_seal():
    seals = [(1, "genesis", watermark(trials=5)), (2, "rows", rows(trials=[[6, 8]])), (3, "rows", "{not json"),
             (4, "rows", rows(trials=[[11, 11]])), (5, "watermark", watermark(trials=15, case_aliases=2))]
    spans = chain_spans(seals)
    assert spans == [(1, "trials", 1, 5), (2, "trials", 6, 8), (4, "trials", 11, 11),
                     (5, "case_aliases", 1, 2), (5, "trials", 12, 15)]
    trials = sorted((first, last) for _, t, first, last in spans if t == "trials")
    assert all(a[1] < b[0] for a, b in zip(trials, trials[1:]))  # the lookup's one-span assumption


def test_the_sql_test_names_the_table_and_the_row():
    sql = covered("trial_scores", "s2.id")
    assert "z.table_name = 'trial_scores'" in sql and sql.endswith(">= s2.id") and "COALESCE" in sql


def test_the_warning_names_the_run_the_count_and_the_command():
    line = unsealed_warning(3, {"metric_values": 2, "trial_scores": 30})
    assert line == ("run 3 has 32 row(s) no seal covers (2 in metric_values, 30 in trial_scores); they were left "
                    "out: run `ragqual verify 3`")
