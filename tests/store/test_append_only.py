import sqlite3

import pytest

from ragqual.store.runstore import RunStore
from tests.store.helpers import add_trial, provenance

TABLES_WITH_ROWS = ["runs", "run_events", "trials", "assertion_results", "trial_scores", "metric_values",
                    "system_prompts", "variant_configs", "cases"]


@pytest.fixture
def filled(head_db):
    path = head_db
    store = RunStore.open(f"sqlite:///{path}")
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run)
    store.append_retrieval_results(run, [])
    store.engine.dispose()
    return path


@pytest.mark.parametrize("table", TABLES_WITH_ROWS)
def test_raw_sqlite_update_is_refused(filled, table):
    con = sqlite3.connect(filled)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute(f"UPDATE {table} SET id = id + 1000")
    con.close()


@pytest.mark.parametrize("table", TABLES_WITH_ROWS)
def test_raw_sqlite_delete_is_refused(filled, table):
    con = sqlite3.connect(filled)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute(f"DELETE FROM {table}")
    con.close()
    con = sqlite3.connect(filled)
    assert con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] >= 1
    con.close()


def test_run_end_is_an_appended_event(filled):
    store = RunStore.open(f"sqlite:///{filled}")
    run_id = store.last_run_id()
    assert store.get_run(run_id).status == "started"
    store.add_event(run_id, "finished")
    info = store.get_run(run_id)
    assert info.status == "finished" and info.ended_at is not None
    con = sqlite3.connect(filled)
    events = [r[0] for r in con.execute("SELECT event FROM run_events WHERE run_id=? ORDER BY id", (run_id,))]
    assert events == ["started", "finished"]
    status = con.execute("SELECT status FROM v_run_status WHERE run_id=?", (run_id,)).fetchone()[0]
    assert status == "finished"


def test_trial_view_has_score_and_provenance(filled):
    con = sqlite3.connect(filled)
    row = con.execute("SELECT git_sha, corpus_fingerprint, score, perfect, case_id, variant FROM v_trials").fetchone()
    assert row == ("abc123", "f" * 64, 1.0, 1, "case-1", "mock")


def test_rescoring_appends_and_view_shows_newest(filled):
    from ragqual.store.records import AssertionRow, ScoreRow

    store = RunStore.open(f"sqlite:///{filled}")
    trial_id = sqlite3.connect(filled).execute("SELECT id FROM trials").fetchone()[0]
    store.append_scoring(trial_id, [AssertionRow("a1", 2, "correctness", 1.0, False)],
                         [ScoreRow("weighted-assertions", 2, 0.0, False, {"correctness": 0.0})])
    con = sqlite3.connect(filled)
    assert con.execute("SELECT COUNT(*) FROM trial_scores").fetchone()[0] == 2
    assert con.execute("SELECT scorer_version, score FROM v_trials").fetchone() == (2, 0.0)


def test_interned_definitions_are_deduplicated(head_db):
    store = RunStore.open(f"sqlite:///{head_db}")
    a = store.intern_system_prompt("same text")
    b = store.intern_system_prompt("same text")
    c = store.intern_system_prompt("other text")
    assert a == b != c
    v1 = store.intern_variant("m", "ollama", "m", {"temperature": 0})
    assert store.intern_variant("m", "ollama", "m", {"temperature": 0}) == v1
    assert store.intern_variant("m", "ollama", "m", {"temperature": 0.7}) != v1
