"""bulk_insert stores exactly what SQLAlchemy's own executemany stores, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert
from sqlalchemy.orm import Session

from ragqual.store.models import MetricValue, RetrievalResult
from ragqual.store.records import Provenance
from ragqual.store.runstore import RunStore, bulk_insert

WHEN = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def _provenance() -> Provenance:
    return Provenance(git_sha=None, git_dirty=None, git_note="not a git checkout", ragqual_version="0",
                      python_version="3", argv=("ragqual", "test"))


def _raw(store: RunStore, table: str, columns: str, run_id: int) -> list[tuple]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.exec_driver_sql(f"SELECT {columns} FROM {table} WHERE run_id = {run_id} ORDER BY id")]


def test_rows_are_stored_as_sqlalchemy_would_store_them(store_head_url):
    store = RunStore.open(store_head_url)
    runs = [store.start_run("retrieval", "rag", _provenance()) for _ in range(2)]
    metric_rows = [
        {"trial_id": None, "case_id": "q1", "group_key": "dense", "metric": "mrr", "value": 0.5, "scorer_version": 1, "created_at": WHEN},
        {"trial_id": None, "case_id": "q2", "group_key": "dense", "metric": "mrr", "value": None, "scorer_version": 2, "created_at": WHEN},
        {"trial_id": None, "case_id": "q'3", "group_key": "bm25", "metric": "ndcg@10", "value": 1 / 3, "scorer_version": 1, "created_at": WHEN},
    ]
    retrieval_rows = [
        {"strategy": "hybrid", "query_id": "q1", "rank": r, "chunk_id": f"doc-{r}#0", "doc_id": f"doc-{r}", "score": 1 / (60 + r)}
        for r in range(1, 4)
    ]
    with Session(store.engine) as session, session.begin():
        session.execute(insert(MetricValue.__table__), [dict(row, run_id=runs[0]) for row in metric_rows])
        session.execute(insert(RetrievalResult.__table__), [dict(row, run_id=runs[0]) for row in retrieval_rows])
    with Session(store.engine) as session, session.begin():
        bulk_insert(session, MetricValue.__table__, [dict(row, run_id=runs[1]) for row in metric_rows])
        bulk_insert(session, RetrievalResult.__table__, [dict(row, run_id=runs[1]) for row in retrieval_rows])
        bulk_insert(session, RetrievalResult.__table__, [])

    metric_columns = "trial_id, case_id, group_key, metric, value, scorer_version, created_at"
    retrieval_columns = "strategy, query_id, rank, chunk_id, doc_id, score"
    by_sqlalchemy = _raw(store, "metric_values", metric_columns, runs[0])
    assert _raw(store, "metric_values", metric_columns, runs[1]) == by_sqlalchemy
    assert len(by_sqlalchemy) == 3 and by_sqlalchemy[1][4] is None
    assert _raw(store, "retrieval_results", retrieval_columns, runs[1]) == _raw(store, "retrieval_results", retrieval_columns, runs[0])
    store.engine.dispose()
