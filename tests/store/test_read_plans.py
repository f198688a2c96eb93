"""A read of one run must not scan a whole history table: every statement `report` and `compare`
run is checked with SQLite's EXPLAIN QUERY PLAN, and none may walk every row of a per-trial
table (`SCAN trial_scores ...`), which on a history of a million trials is a million rows read
for a report of a few thousand."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import Engine, event

from ragqual.store import db, run_summaries
from tests.store.test_sealed_reads import ragqual, two_runs  # noqa: F401 (fixture)

PER_TRIAL_TABLES = ("trials", "trial_scores", "assertion_results", "metric_values", "trial_costs", "labels",
                    "judgements")


@pytest.fixture
def statements(monkeypatch) -> list[tuple[str, object]]:
    """Every statement the commands send to SQLite, with its parameters."""
    seen: list[tuple[str, object]] = []
    made = db.make_engine

    def recording(url: str, **kwargs) -> Engine:
        engine = made(url, **kwargs)

        @event.listens_for(engine, "before_cursor_execute")
        def _record(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
            if not executemany and statement.lstrip().upper().startswith(("SELECT", "WITH")):
                seen.append((statement, parameters))
        return engine

    monkeypatch.setattr(db, "make_engine", recording)
    return seen


def full_scans(path: str, seen: list[tuple[str, object]]) -> list[str]:
    con = sqlite3.connect(path)
    try:
        out = []
        for statement, parameters in seen:
            for row in con.execute(f"EXPLAIN QUERY PLAN {statement}", parameters or ()):
                words = row[3].split()
                if words[:1] == ["SCAN"] and words[1] in PER_TRIAL_TABLES:
                    out.append(f"{row[3]}  <-  {' '.join(statement.split())[:300]}")
        return out
    finally:
        con.close()


@pytest.mark.parametrize("args", [["report", "2"], ["report", "2", "--by", "tag"], ["compare", "1", "2"], ["history"],
                                  ["history", "--scorer-version", "1"], ["history", "rows"]])
def test_reading_one_run_scans_no_history_table(two_runs, statements, capsys, args, monkeypatch):
    """`history` reads finished runs from their summaries; `history rows` reads them from their rows
    (as for runs without a current summary)."""
    if args == ["history", "rows"]:
        monkeypatch.setattr(run_summaries, "current", lambda conn, run_ids: {})
        args = ["history"]
    if not two_runs.startswith("sqlite"):
        pytest.skip("EXPLAIN QUERY PLAN is SQLite's")
    statements.clear()
    code, _, err = ragqual(two_runs, args, capsys)
    assert code in (0, 1), err
    assert statements, "no statement was recorded"
    assert full_scans(two_runs.removeprefix("sqlite:///"), statements) == []
