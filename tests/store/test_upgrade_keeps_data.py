"""A history written at the first migration survives the upgrade to head, row for row, and reads
back through the store and the head's views as it did before."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Boolean, DateTime, Engine, bindparam, text

from ragqual.store import db, queries
from ragqual.store.records import AssertionRow, RetrievalRow, ScoreRow
from ragqual.store.retrieval_reads import retrieval_hits
from ragqual.store.runstore import RunStore
from tests.store.helpers import add_trial

T0 = datetime(2025, 6, 1, 12, 0, 0, 250000, tzinfo=UTC)
TIMESTAMP = DateTime(timezone=True)
BOOLEAN = Boolean()

# Every column of 0001's tables that is not text or a number, with the type to bind and read it as.
TYPED = {
    "runs": {"started_at": TIMESTAMP, "git_dirty": BOOLEAN},
    "run_events": {"at": TIMESTAMP},
    "corpus_snapshots": {"created_at": TIMESTAMP},
    "trials": {"cache_hit": BOOLEAN, "created_at": TIMESTAMP},
    "assertion_results": {"passed": BOOLEAN, "created_at": TIMESTAMP},
    "trial_scores": {"perfect": BOOLEAN, "created_at": TIMESTAMP},
    "metric_values": {"created_at": TIMESTAMP},
}


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def as_utc(value):
    """SQLite hands timestamps back naive (they are stored in UTC), PostgreSQL aware."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


class OldHistory:
    """Writes rows the way a ragqual at revision 0001 did, in plain SQL, and remembers them."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.rows: dict[str, list[dict]] = {}

    def insert(self, table: str, **values) -> int:
        columns = list(values)
        sql = text(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)}) RETURNING id"
        ).bindparams(*[bindparam(c, type_=t) for c, t in TYPED.get(table, {}).items() if c in values])
        with self.engine.begin() as conn:
            row_id = conn.execute(sql, values).scalar_one()
        self.rows.setdefault(table, []).append({"id": row_id, **values})
        return row_id

    def read(self, table: str) -> list[dict]:
        """The table's rows now, for the columns this history wrote, typed as it wrote them."""
        columns = list(self.rows[table][0])
        typed = {c: t for c, t in TYPED.get(table, {}).items() if c in columns}
        sql = text(f"SELECT {', '.join(columns)} FROM {table} ORDER BY id")
        if typed:
            sql = sql.columns(**typed)
        with self.engine.connect() as conn:
            return [{c: as_utc(v) for c, v in row._mapping.items()} for row in conn.execute(sql)]

    def written(self, table: str) -> list[dict]:
        return [{c: as_utc(v) for c, v in row.items()} for row in self.rows[table]]


def _run(old: OldHistory, kind: str, subject: str | None, started: datetime, **over) -> int:
    params = over.pop("params", {"k": 5})
    values = dict(
        kind=kind, subject=subject, started_at=started, argv=json.dumps(["ragqual", kind]),
        params=json.dumps(params), git_sha="0123abcd", git_dirty=True, ragqual_version="0.0.9",
        python_version="3.11.4", corpus_fingerprint="c" * 64, dataset_hash="d" * 64,
        prompt_hashes=json.dumps(["p" * 64]),
        provenance=json.dumps({"git_note": "ok", "params": params, "argv": ["ragqual", kind]}),
    )
    values.update(over)
    return old.insert("runs", **values)


def _trial(old: OldHistory, run: int, case: int, variant: int, prompt: int, mode: str, repeat: int,
           created: datetime, **over) -> int:
    values = dict(
        run_id=run, case_pk=case, variant_id=variant, system_prompt_id=prompt, mode=mode, repeat_index=repeat,
        rendered_prompt=json.dumps([{"role": "user", "content": f"question {repeat}"}]), context="some context",
        raw_output=json.dumps({"text": "Paris"}), parsed_output=json.dumps("Paris"), error=None,
        prompt_tokens=120, completion_tokens=4, latency_ms=812.5, load_ms=30.25, cost=0.0015,
        cache_key="k" * 64, cache_hit=False, created_at=created,
    )
    values.update(over)
    return old.insert("trials", **values)


def _score(old: OldHistory, trial: int, batch: str, version: int, score: float, passed: bool,
           created: datetime) -> None:
    old.insert("assertion_results", trial_id=trial, batch=batch, assertion_id="mentions-capital",
               assertion_version=version, category="correctness", weight=2.0, passed=passed,
               detail=None if passed else "Paris not found", created_at=created)
    old.insert("trial_scores", trial_id=trial, batch=batch, scorer_name="weighted-assertions",
               scorer_version=version, score=score, perfect=score == 1.0,
               per_category=json.dumps({"correctness": score}), created_at=created)


def fill(old: OldHistory) -> dict[str, int]:
    """Two runs: a finished generation run with a re-scored trial, and a retrieval run still going."""
    gen = _run(old, "generation", "rag", at(0))
    ret = _run(old, "retrieval", None, at(100), git_sha=None, git_dirty=None, dataset_hash=None,
               params={"strategies": ["dense", "bm25"]})
    old.insert("run_events", run_id=gen, event="started", at=at(0), detail=None)
    old.insert("run_events", run_id=ret, event="started", at=at(100), detail=None)
    old.insert("run_events", run_id=gen, event="finished", at=at(60), detail="3 trials")
    prompt = old.insert("system_prompts", sha256="s" * 64, text="Answer from the context only.")
    variant = old.insert("variant_configs", sha256="v" * 64, name="small", provider="ollama",
                         model="qwen2.5:0.5b", config=json.dumps({"temperature": 0}))
    case1 = old.insert("cases", subject="rag", case_id="capital-fr", slug="capital-of-france",
                       sha256="1" * 64, definition=json.dumps({"query": "Capital of France?"}))
    case2 = old.insert("cases", subject="rag", case_id="capital-de", slug="capital-of-germany",
                       sha256="2" * 64, definition=json.dumps({"query": "Capital of Germany?"}))
    old.insert("assertion_defs", assertion_id="mentions-capital", version=1, sha256="a" * 64,
               category="correctness", weight=2.0, name="mentions the capital",
               definition=json.dumps({"kind": "contains", "value": "Paris"}))
    old.insert("corpus_snapshots", fingerprint="c" * 64, documents=json.dumps([{"doc_id": "france.md"}]),
               chunk_config=json.dumps({"size": 400}), embedder_id="minilm-int8", created_at=at(-10))
    t1 = _trial(old, gen, case1, variant, prompt, "e2e", 0, at(10))
    t2 = _trial(old, gen, case1, variant, prompt, "e2e", 1, at(20), raw_output=None, parsed_output=None,
                error="model timed out", completion_tokens=None, cost=None, cache_key=None, cache_hit=True)
    t3 = _trial(old, gen, case2, variant, prompt, "closed-book", 0, at(30), load_ms=None)
    _score(old, t1, "b1", 1, 1.0, True, at(10))
    _score(old, t2, "b2", 1, 0.0, False, at(20))
    _score(old, t3, "b3", 1, 0.5, False, at(30))
    _score(old, t1, "b4", 2, 0.75, False, at(50))  # a later re-scoring of the first trial
    for trial, case, group, value in ((t1, "capital-fr", "e2e", 1.0), (t2, "capital-fr", "e2e", 0.0),
                                      (t3, "capital-de", "closed-book", 0.5)):
        old.insert("metric_values", run_id=gen, trial_id=trial, case_id=case, group_key=group,
                   metric="correctness", value=value, scorer_version=1, created_at=at(40))
    old.insert("metric_values", run_id=ret, trial_id=None, case_id="q1", group_key="dense", metric="ndcg@10",
               value=0.6131, scorer_version=1, created_at=at(110))
    old.insert("metric_values", run_id=ret, trial_id=None, case_id="q2", group_key="dense", metric="ndcg@10",
               value=None, scorer_version=1, created_at=at(110))
    ranked = (("france.md#2", "france.md", 0.83), ("germany.md#0", "germany.md", 0.41))
    for rank, (chunk, doc, score) in enumerate(ranked, 1):
        old.insert("retrieval_results", run_id=ret, strategy="dense", query_id="q1", rank=rank,
                   chunk_id=chunk, doc_id=doc, score=score)
    return {"gen": gen, "ret": ret, "t1": t1, "t2": t2, "t3": t3, "case1": case1, "case2": case2,
            "variant": variant}


@pytest.fixture
def upgraded(store_url):
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0001")
    old = OldHistory(engine)
    ids = fill(old)
    before = {table: old.read(table) for table in old.rows}
    db.upgrade(engine, "head")
    yield old, ids, before
    engine.dispose()


def test_every_row_is_intact_after_the_upgrade(upgraded):
    old, _, before = upgraded
    assert db.current_revision(old.engine) == db.head_revision()
    assert len(old.rows) == 12  # every history table of 0001 holds rows
    for table in old.rows:
        assert old.read(table) == old.written(table) == before[table], table


def test_the_store_reads_old_runs(upgraded):
    old, ids, _ = upgraded
    store = RunStore(old.engine)
    gen = store.get_run(ids["gen"])
    assert (gen.kind, gen.subject, gen.status) == ("generation", "rag", "finished")
    assert (as_utc(gen.started_at), as_utc(gen.ended_at)) == (at(0), at(60))
    assert (gen.argv, gen.params, gen.git_sha, gen.git_dirty) == (["ragqual", "generation"], {"k": 5}, "0123abcd", True)
    assert gen.provenance == {"git_note": "ok", "params": {"k": 5}, "argv": ["ragqual", "generation"]}
    ret = store.get_run(ids["ret"])
    assert (ret.kind, ret.subject, ret.status, ret.ended_at) == ("retrieval", None, "started", None)
    assert (ret.git_sha, ret.git_dirty, ret.dataset_hash) == (None, None, None)
    assert store.last_run_id() == ids["ret"] and store.last_run_id("generation") == ids["gen"]
    assert store.finished_slots(ids["gen"]) == {
        (ids["case1"], ids["variant"], "e2e", 0), (ids["case1"], ids["variant"], "e2e", 1),
        (ids["case2"], ids["variant"], "closed-book", 0)}


def test_the_head_views_show_old_rows(upgraded):
    old, ids, _ = upgraded
    with old.engine.connect() as conn:
        statuses = conn.execute(text("SELECT run_id, kind, status FROM v_run_status ORDER BY run_id")).all()
        trials = conn.execute(text(
            "SELECT trial_id, case_id, variant, mode, repeat_index, error, scorer_version, score, git_sha "
            "FROM v_trials ORDER BY trial_id")).all()
        means = conn.execute(text("SELECT run_id, group_key, metric, mean, n FROM v_metric_means "
                                  "ORDER BY run_id, group_key")).all()
    assert [tuple(r) for r in statuses] == [
        (ids["gen"], "generation", "finished"), (ids["ret"], "retrieval", "started")]
    assert [tuple(r) for r in trials] == [
        (ids["t1"], "capital-fr", "small", "e2e", 0, None, 2, 0.75, "0123abcd"),  # the newest scoring wins
        (ids["t2"], "capital-fr", "small", "e2e", 1, "model timed out", 1, 0.0, "0123abcd"),
        (ids["t3"], "capital-de", "small", "closed-book", 0, None, 1, 0.5, "0123abcd"),
    ]
    assert [tuple(r) for r in means] == [
        (ids["gen"], "closed-book", "correctness", 0.5, 1), (ids["gen"], "e2e", "correctness", 0.5, 2),
        (ids["ret"], "dense", "ndcg@10", 0.6131, 1)]
    report = queries.runs_frame(old.engine)
    assert list(report["run_id"]) == [ids["gen"], ids["ret"]]
    assert list(report["status"]) == ["finished", "incomplete"]


def test_old_ranked_rows_read_back_through_the_reader_and_the_view(upgraded):
    """0001's one-row-per-rank `retrieval_results` stay readable after 0007 stores rankings compactly."""
    old, ids, _ = upgraded
    expected = [RetrievalRow(r["strategy"], r["query_id"], r["rank"], r["chunk_id"], r["doc_id"], r["score"])
                for r in old.written("retrieval_results")]
    assert len(expected) == 2 and retrieval_hits(old.engine, ids["ret"]) == expected
    with old.engine.connect() as conn:
        view = conn.execute(text("SELECT strategy, query_id, rank, chunk_id, doc_id, score FROM v_retrieval_hits "
                                 "WHERE run_id = :r ORDER BY strategy, query_id, rank"), {"r": ids["ret"]}).all()
    assert [RetrievalRow(*r) for r in view] == expected


def test_the_store_appends_after_the_upgrade(upgraded):
    old, ids, _ = upgraded
    store = RunStore(old.engine)
    store.append_scoring(ids["t2"], [AssertionRow("mentions-capital", 2, "correctness", 2.0, True)],
                         [ScoreRow("weighted-assertions", 2, 1.0, True, {"correctness": 1.0})])
    new_trial = add_trial(store, ids["gen"], case="capital-it", repeat=0)
    store.add_event(ids["ret"], "finished")
    assert new_trial > ids["t3"]
    assert store.get_run(ids["ret"]).status == "finished"
    with old.engine.connect() as conn:
        rows = conn.execute(text("SELECT trial_id, scorer_version, score FROM v_trials ORDER BY trial_id")).all()
    assert [tuple(r) for r in rows] == [(ids["t1"], 2, 0.75), (ids["t2"], 2, 1.0), (ids["t3"], 1, 0.5),
                                        (new_trial, 1, 1.0)]
    for table in ("runs", "trials", "trial_scores", "cases"):
        assert old.read(table)[: len(old.rows[table])] == old.written(table), table
