"""Every SQL verb that can rewrite a row is refused on every history table, on both backends.

SQLite's REPLACE (and INSERT OR REPLACE) deletes the conflicting row without firing DELETE
triggers unless `recursive_triggers` is on; UPSERT and PostgreSQL's ON CONFLICT DO UPDATE / MERGE
go through other paths again. Each statement below is tried on every table of a filled history;
the database must refuse it and leave every row exactly as it was.
"""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from ragqual.store.models import HISTORY_TABLES
from ragqual.store.records import RankingRow, RetrievalRow
from ragqual.store.runstore import RunStore
from tests.store.conftest import dbapi_error, raw_connect
from tests.store.helpers import add_review_rows, add_trial, append_old_layout_hits, provenance

FIRST = "(SELECT MIN(id) FROM {table})"
SQLITE_VERBS = {
    "REPLACE": "REPLACE INTO {table} SELECT * FROM {table} WHERE id = " + FIRST,
    "INSERT OR REPLACE": "INSERT OR REPLACE INTO {table} SELECT * FROM {table} WHERE id = " + FIRST,
    "UPSERT": "INSERT INTO {table} SELECT * FROM {table} WHERE id = " + FIRST
              + " ON CONFLICT(id) DO UPDATE SET id = excluded.id",
    "UPDATE": "UPDATE {table} SET id = id",
    "DELETE": "DELETE FROM {table} WHERE id = " + FIRST,
}
POSTGRES_VERBS = {
    "UPSERT": "INSERT INTO {table} SELECT * FROM {table} WHERE id = " + FIRST
              + " ON CONFLICT (id) DO UPDATE SET id = excluded.id",
    "UPDATE": "UPDATE {table} SET id = id",
    "DELETE": "DELETE FROM {table} WHERE id = " + FIRST,
    "TRUNCATE": "TRUNCATE {table} CASCADE",
    "MERGE": "MERGE INTO {table} AS d USING (SELECT MIN(id) AS id FROM {table}) AS s ON d.id = s.id "
             "WHEN MATCHED THEN DELETE",
}
ALEMBIC_VERBS = {
    "REPLACE": "REPLACE INTO alembic_version SELECT * FROM alembic_version",
    "INSERT": "INSERT INTO alembic_version VALUES ('0001')",
    "UPDATE backwards": "UPDATE alembic_version SET version_num = '0001'",
    "DELETE": "DELETE FROM alembic_version",
}


@pytest.fixture
def filled(store_head_url):
    """A history with rows in every history table (a finished run, a trial, its scores...)."""
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run)
    second = add_trial(store, run, case="case-2", score=0.5, passed=False)
    append_old_layout_hits(store.engine, run, [RetrievalRow("dense", "q1", 1, "doc-a#0", "doc-a", 0.9)])
    store.append_rankings(run, [RankingRow("dense", "q1", ["doc-a#0", "doc-b#1"], ["doc-a", "doc-b"], [0.9, 0.5])])
    store.record_assertion_def("a1", 1, "correctness", 1.0, "mentions the answer", {"kind": "contains"})
    store.record_corpus_snapshot("f" * 64, [{"doc_id": "doc-a", "sha256": "a" * 64}], {"size": 200}, "minilm")
    store.record_case_alias("rag", "0c5e1f0a-old-id", "case-1", "an older id of case-1")
    store.add_event(run, "finished")
    add_review_rows(store, run, second)
    store.engine.dispose()
    return store_head_url


def _dump(url: str, table: str) -> list[tuple]:
    con = raw_connect(url)
    try:
        return [tuple(r) for r in con.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()]
    finally:
        con.close()


def _attempt(url: str, statement: str) -> str:
    con = raw_connect(url)
    try:
        con.execute(statement)
        con.commit()
        return "accepted"
    except dbapi_error(url) as exc:
        return "refused" if "append-only" in str(exc) else f"failed otherwise: {exc}"
    finally:
        con.close()


def _verbs(url: str) -> dict[str, str]:
    return SQLITE_VERBS if make_url(url).get_backend_name() == "sqlite" else POSTGRES_VERBS


def test_every_verb_is_refused_on_every_history_table(filled):
    before = {t: _dump(filled, t) for t in HISTORY_TABLES}
    assert all(before.values()), "every history table must hold rows for this test to mean anything"
    outcomes = {(t, verb): _attempt(filled, sql.format(table=t))
                for t in HISTORY_TABLES for verb, sql in _verbs(filled).items()}
    assert {k: v for k, v in outcomes.items() if v != "refused"} == {}
    assert {t: _dump(filled, t) for t in HISTORY_TABLES} == before


def test_alembic_version_is_guarded(filled):
    before = _dump(filled, "alembic_version")
    outcomes = {verb: _attempt(filled, sql) for verb, sql in ALEMBIC_VERBS.items()
                if not (verb == "REPLACE" and make_url(filled).get_backend_name() != "sqlite")}
    assert outcomes == dict.fromkeys(outcomes, "refused")
    assert _dump(filled, "alembic_version") == before


def test_replace_cannot_forge_a_score_an_event_or_provenance(filled):
    """The reproduction of the issue: REPLACE rewrote a score, a run's status and its argv."""
    if make_url(filled).get_backend_name() != "sqlite":
        pytest.skip("REPLACE is SQLite syntax; PostgreSQL's equivalents are in the test above")
    forgeries = [
        "REPLACE INTO trial_scores SELECT id, trial_id, batch, scorer_name, scorer_version, 0.123, perfect, "
        "per_category, created_at FROM trial_scores WHERE id = 2",
        "REPLACE INTO run_events SELECT id, run_id, 'failed', at, detail FROM run_events WHERE event = 'finished'",
        "REPLACE INTO runs SELECT id, kind, subject, started_at, '[\"forged\"]', params, 'f0f0f0', git_dirty, "
        "ragqual_version, python_version, corpus_fingerprint, dataset_hash, prompt_hashes, provenance FROM runs",
    ]
    tables = ("trial_scores", "run_events", "runs")
    before = {t: _dump(filled, t) for t in tables}
    assert [_attempt(filled, sql) for sql in forgeries] == ["refused"] * 3
    assert {t: _dump(filled, t) for t in tables} == before
