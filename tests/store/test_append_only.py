import pytest

from ragqual.store.models import HISTORY_TABLES
from ragqual.store.records import RankingRow, RetrievalRow
from ragqual.store.runstore import RunStore
from tests.store.conftest import dbapi_error, raw_connect
from tests.store.helpers import add_review_rows, add_trial, append_old_layout_hits, provenance

TABLES_WITH_ROWS = ["runs", "run_events", "trials", "assertion_results", "trial_scores", "metric_values",
                    "system_prompts", "variant_configs", "cases", "retrieval_results", "retrieval_rankings",
                    "judgements", "judge_audits", "labels", "pricing_snapshots", "trial_costs", "texts",
                    "run_summaries"]


@pytest.fixture
def filled(store_head_url):
    """A history with at least one row in every history table; yields its URL."""
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    trial = add_trial(store, run)
    add_review_rows(store, run, trial)
    append_old_layout_hits(store.engine, run, [RetrievalRow("dense", "q1", 1, "doc-a#0", "doc-a", 0.9)])
    store.append_rankings(run, [])
    store.append_rankings(run, [RankingRow("dense", "q1", ["doc-a#0"], ["doc-a"], [0.9])])
    store.record_assertion_def("a1", 1, "correctness", 1.0, "mentions the answer", {"kind": "contains"})
    store.record_corpus_snapshot("f" * 64, [{"doc_id": "doc-a", "sha256": "a" * 64}], {"size": 200}, "minilm")
    store.record_case_alias("rag", "0b7c1a4e-0000-4000-8000-000000000001", "q1", "renamed")
    store.engine.dispose()
    return store_head_url


def _count(url: str, table: str) -> int:
    con = raw_connect(url)
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def test_every_history_table_has_rows(filled):
    assert set(TABLES_WITH_ROWS) <= set(HISTORY_TABLES)
    assert {table: _count(filled, table) >= 1 for table in HISTORY_TABLES} == dict.fromkeys(HISTORY_TABLES, True)


def _attempt(url: str, statement: str) -> str:
    """Run one raw statement outside the store; say whether the database refused it and why."""
    con = raw_connect(url)
    try:
        con.execute(statement)
        con.commit()
        return "accepted"
    except dbapi_error(url) as exc:
        return "refused" if "append-only" in str(exc) else f"failed otherwise: {exc}"
    finally:
        con.close()


def _counts(url: str) -> dict[str, int]:
    return {table: _count(url, table) for table in HISTORY_TABLES}


def _refusals(url: str, statement: str) -> dict[str, str]:
    before = _counts(url)
    outcomes = {table: _attempt(url, statement.format(table=table)) for table in HISTORY_TABLES}
    assert _counts(url) == before
    return outcomes


def test_raw_update_is_refused(filled):
    assert _refusals(filled, "UPDATE {table} SET id = id + 1000") == dict.fromkeys(HISTORY_TABLES, "refused")
    assert {t: _count(filled, f"{t} WHERE id > 1000") for t in HISTORY_TABLES} == dict.fromkeys(HISTORY_TABLES, 0)


def test_raw_delete_is_refused(filled):
    assert _refusals(filled, "DELETE FROM {table}") == dict.fromkeys(HISTORY_TABLES, "refused")
    assert all(n >= 1 for n in _counts(filled).values())


def test_run_end_is_an_appended_event(filled):
    store = RunStore.open(filled)
    run_id = store.last_run_id()
    assert store.get_run(run_id).status == "started"
    store.add_event(run_id, "finished")
    info = store.get_run(run_id)
    assert info.status == "finished" and info.ended_at is not None
    store.engine.dispose()
    con = raw_connect(filled)
    events = [r[0] for r in con.execute(f"SELECT event FROM run_events WHERE run_id={run_id} ORDER BY id")]
    assert events == ["started", "finished"]
    status = con.execute(f"SELECT status FROM v_run_status WHERE run_id={run_id}").fetchone()[0]
    assert status == "finished"
    con.close()


def test_trial_view_has_score_and_provenance(filled):
    con = raw_connect(filled)
    row = con.execute("SELECT git_sha, corpus_fingerprint, score, perfect, case_id, variant FROM v_trials").fetchone()
    con.close()
    assert tuple(row) == ("abc123", "f" * 64, 1.0, 1, "case-1", "mock")


def test_rescoring_appends_and_view_shows_newest(filled):
    from ragqual.store.records import AssertionRow, ScoreRow

    store = RunStore.open(filled)
    con = raw_connect(filled)
    trial_id = con.execute("SELECT id FROM trials").fetchone()[0]
    con.close()
    store.append_scoring(trial_id, [AssertionRow("a1", 2, "correctness", 1.0, False)],
                         [ScoreRow("weighted-assertions", 2, 0.0, False, {"correctness": 0.0})])
    store.engine.dispose()
    con = raw_connect(filled)
    assert con.execute("SELECT COUNT(*) FROM trial_scores").fetchone()[0] == 2
    assert tuple(con.execute("SELECT scorer_version, score FROM v_trials").fetchone()) == (2, 0.0)
    con.close()


def test_interned_definitions_are_deduplicated(store_head_url):
    store = RunStore.open(store_head_url)
    a = store.intern_system_prompt("same text")
    b = store.intern_system_prompt("same text")
    c = store.intern_system_prompt("other text")
    assert a == b != c
    v1 = store.intern_variant("m", "ollama", "m", {"temperature": 0})
    assert store.intern_variant("m", "ollama", "m", {"temperature": 0}) == v1
    assert store.intern_variant("m", "ollama", "m", {"temperature": 0.7}) != v1
    store.engine.dispose()


def test_a_second_trial_for_the_same_slot_is_one_clear_error(head_db):
    from ragqual.errors import InputError
    from ragqual.store.runstore import RunStore
    from tests.store.helpers import add_review_rows, add_trial, append_old_layout_hits, provenance

    store = RunStore.open(f"sqlite:///{head_db}")
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run, case="c1", repeat=0)
    with pytest.raises(InputError, match="already holds the trial"):
        add_trial(store, run, case="c1", repeat=0)
