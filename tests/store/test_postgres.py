"""The same history on PostgreSQL: one store round trip on every backend, and the guards
only PostgreSQL has (plpgsql triggers, TRUNCATE)."""

from __future__ import annotations

import json

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from ragqual.errors import InputError
from ragqual.store.models import HISTORY_TABLES
from ragqual.store.records import AssertionRow, RankingRow, RetrievalRow, ScoreRow
from ragqual.store.retrieval_reads import retrieval_hits
from ragqual.store.runstore import RunStore
from tests.store.conftest import dbapi_error, raw_connect
from tests.store.helpers import add_review_rows, add_trial, append_old_layout_hits, provenance

T0 = datetime(2026, 3, 14, 9, 26, 53, 589000, tzinfo=UTC)


class StepClock:
    """Each reading is one second after the previous one, starting at T0."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> datetime:
        self.ticks += 1
        return T0 + timedelta(seconds=self.ticks - 1)


def as_utc(value: datetime | str) -> datetime:
    """Timestamps come back aware from PostgreSQL, naive (UTC) from SQLite, text from SQLite views."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@pytest.fixture
def history(store_url):
    """An empty database on each backend, brought to head by the store itself."""
    clock = StepClock()
    store = RunStore.open(store_url, clock=clock)
    yield store, clock
    store.engine.dispose()


def test_run_round_trip(history):
    store, _ = history
    prov = provenance(prompt_hashes=("p" * 64,), params={"k": 5, "strategy": "hybrid"})
    run = store.start_run("generation", "rag", prov)  # tick 1
    store.add_event(run, "resumed", "after an interrupt")
    store.add_event(run, "finished")
    info = store.get_run(run)
    assert (info.id, info.kind, info.subject, info.status) == (run, "generation", "rag", "finished")
    assert as_utc(info.started_at) == T0
    assert as_utc(info.ended_at) == T0 + timedelta(seconds=2)  # the third reading: started, resumed, finished
    assert info.argv == ["ragqual", "test"]
    assert info.params == {"k": 5, "strategy": "hybrid"}
    assert info.provenance == prov.as_dict()
    assert (info.git_sha, info.git_dirty) == ("abc123", False)
    assert (info.corpus_fingerprint, info.dataset_hash) == ("f" * 64, "d" * 64)
    assert store.last_run_id() == run == store.last_run_id("generation")
    with store.engine.connect() as conn:
        events = conn.execute(text("SELECT event, detail FROM run_events WHERE run_id = :r ORDER BY id"),
                              {"r": run}).all()
    assert [tuple(e) for e in events[:2]] == [("started", None), ("resumed", "after an interrupt")]
    assert events[2][0] == "finished"
    with store.engine.connect() as conn:  # the end event records the run's seal head before it
        heads = conn.execute(text("SELECT digest FROM seals WHERE run_id = :r ORDER BY id"), {"r": run}).scalars().all()
    assert json.loads(events[2][1]) == {"seal_head": heads[-2]}


def test_trials_scores_and_slots(history):
    store, _ = history
    run = store.start_run("generation", "rag", provenance())
    first = add_trial(store, run, case="case-1", repeat=0)
    second = add_trial(store, run, case="case-1", repeat=1, passed=False, score=0.25)
    third = add_trial(store, run, case="case-2", mode="closed-book")
    assert len({first, second, third}) == 3
    case1 = store.record_case("rag", "case-1", "case-1", {"id": "case-1", "query": "q?"})
    case2 = store.record_case("rag", "case-2", "case-2", {"id": "case-2", "query": "q?"})
    variant = store.intern_variant("mock", "mock", "mock", {"temperature": 0})
    assert store.finished_slots(run) == {(case1, variant, "e2e", 0), (case1, variant, "e2e", 1),
                                         (case2, variant, "closed-book", 0)}
    with pytest.raises(InputError, match="already holds the trial"):  # the unique slot, as one clear line
        add_trial(store, run, case="case-1", repeat=1)

    batch = store.append_scoring(first, [AssertionRow("a1", 2, "correctness", 1.0, False, "missing")],
                                 [ScoreRow("weighted-assertions", 2, 0.5, False, {"correctness": 0.5})])
    with store.engine.connect() as conn:
        rescored = conn.execute(text(
            "SELECT a.assertion_version, a.passed, a.detail, s.scorer_version, s.score, s.per_category "
            "FROM assertion_results a JOIN trial_scores s ON s.batch = a.batch WHERE a.batch = :b"),
            {"b": batch}).all()
        view = conn.execute(text(
            "SELECT trial_id, case_id, mode, repeat_index, scorer_version, score, perfect "
            "FROM v_trials WHERE run_id = :r ORDER BY trial_id"), {"r": run}).all()
        means = conn.execute(text(
            "SELECT group_key, metric, mean, n FROM v_metric_means WHERE run_id = :r ORDER BY group_key"),
            {"r": run}).all()
        scores = conn.execute(text("SELECT COUNT(*) FROM trial_scores")).scalar_one()
    assert [(r[0], bool(r[1]), r[2], r[3], r[4], r[5]) for r in rescored] == [
        (2, False, "missing", 2, 0.5, '{"correctness":0.5}')]
    assert scores == 4
    assert [(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6])) for r in view] == [
        (first, "case-1", "e2e", 0, 2, 0.5, False),
        (second, "case-1", "e2e", 1, 1, 0.25, False),
        (third, "case-2", "closed-book", 0, 1, 1.0, True),
    ]
    assert [tuple(r) for r in means] == [("closed-book", "correctness", 1.0, 1), ("e2e", "correctness", 0.5, 2)]


def test_retrieval_rows_and_definitions(history):
    store, _ = history
    run = store.start_run("retrieval", None, provenance())
    rows = [RetrievalRow("dense", "q1", 1, "doc-a#0", "doc-a", 0.91),
            RetrievalRow("dense", "q1", 2, "doc-b#3", "doc-b", 0.42)]
    store.append_rankings(run, [RankingRow("dense", "q1", ["doc-a#0", "doc-b#3"], ["doc-a", "doc-b"], [0.91, 0.42])])
    store.append_metrics(run, [(None, "q1", "dense", "ndcg@10", 0.75, 1), (None, "q1", "dense", "mrr", None, 1)])
    snapshot = store.record_corpus_snapshot("c" * 64, [{"doc_id": "doc-a"}], {"size": 200}, "minilm")
    assert store.record_corpus_snapshot("c" * 64, [{"doc_id": "doc-a"}], {"size": 200}, "minilm") == snapshot
    assertion = store.record_assertion_def("a1", 1, "correctness", 2.0, "names the year", {"kind": "regex"})
    assert store.record_assertion_def("a1", 1, "correctness", 2.0, "names the year", {"kind": "regex"}) == assertion
    with store.engine.connect() as conn:
        stored = conn.execute(text(
            "SELECT strategy, query_id, rank, chunk_id, doc_id, score FROM v_retrieval_hits "
            "WHERE run_id = :r ORDER BY rank"), {"r": run}).all()
        means = conn.execute(text("SELECT metric, mean, n FROM v_metric_means WHERE run_id = :r ORDER BY metric"),
                             {"r": run}).all()
    assert [RetrievalRow(*r) for r in stored] == rows == retrieval_hits(store.engine, run)
    assert [tuple(r) for r in means] == [("mrr", None, 0), ("ndcg@10", 0.75, 1)]
    assert store.get_run(run).subject is None


@pytest.mark.postgres
def test_every_history_table_has_the_plpgsql_guards(pg_head_url):
    con = raw_connect(pg_head_url)
    rows = con.execute(
        "SELECT c.relname, t.tgname, p.proname FROM pg_trigger t "
        "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid "
        "WHERE NOT t.tgisinternal").fetchall()
    con.close()
    expected = {(table, f"{table}_{suffix}", "ragqual_refuse_change")
                for table in HISTORY_TABLES for suffix in ("append_only", "no_truncate")}
    expected |= {("alembic_version", f"alembic_version_{name}", "ragqual_guard_alembic_version")
                 for name in ("guard", "no_truncate")}
    assert set(rows) == expected


@pytest.mark.postgres
def test_truncate_is_refused_on_every_history_table(pg_head_url):
    store = RunStore.open(pg_head_url)
    run = store.start_run("generation", "rag", provenance())
    add_review_rows(store, run, add_trial(store, run))
    append_old_layout_hits(store.engine, run, [RetrievalRow("dense", "q1", 1, "doc-a#0", "doc-a", 0.9)])
    store.append_rankings(run, [RankingRow("dense", "q1", ["doc-a#0"], ["doc-a"], [0.9])])
    store.record_assertion_def("a1", 1, "correctness", 1.0, "mentions the answer", {"kind": "contains"})
    store.record_corpus_snapshot("f" * 64, [], {"size": 200}, "minilm")
    store.record_case_alias("rag", "0b7c1a4e-0000-4000-8000-000000000001", "q1", "renamed")
    store.engine.dispose()

    con = raw_connect(pg_head_url)
    counts = {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in HISTORY_TABLES}
    assert all(n >= 1 for n in counts.values()), counts
    outcomes = {}
    for table in HISTORY_TABLES:
        # CASCADE, or PostgreSQL refuses referenced tables before any trigger runs.
        try:
            con.execute(f"TRUNCATE {table} CASCADE")
            outcomes[table] = "accepted"
        except dbapi_error(pg_head_url) as exc:
            outcomes[table] = str(exc).splitlines()[0]
        con.rollback()
    assert outcomes == {t: f"{t} is append-only history: TRUNCATE refused" for t in HISTORY_TABLES}
    assert {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in HISTORY_TABLES} == counts
    con.close()


@pytest.mark.postgres
def test_timestamps_keep_their_zone_on_postgres(pg_head_url):
    store = RunStore.open(pg_head_url, clock=StepClock())
    run = store.start_run("generation", "rag", provenance())
    started = store.get_run(run).started_at
    store.engine.dispose()
    assert started.tzinfo is not None and started == T0
