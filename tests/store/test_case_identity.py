"""One golden, one case id: the generation tier's old uuid5 ids are mapped to the golden ids by
migration 0005 (an alias table, no row rewritten), and the views join both tiers on that id."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import text

from ragqual.store import db, queries
from ragqual.store.runstore import RunStore
from tests.store.conftest import dbapi_error, raw_connect

RAG_NS = uuid.UUID("b3f0e0c4-5d1a-4f8e-9a0b-6c2d7e8f9a10")
GOLDEN = "water-boil-altitude-01"
OLD_ID = str(uuid.uuid5(RAG_NS, GOLDEN))
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _insert(conn, table: str, **values) -> int:
    columns = ", ".join(values)
    marks = ", ".join(f":{c}" for c in values)
    return conn.execute(text(f"INSERT INTO {table} ({columns}) VALUES ({marks}) RETURNING id"), values).scalar_one()


def _old_history(url: str) -> dict[str, int]:
    """Rows as ragqual wrote them at 0003: retrieval metrics under the golden id, generation
    cases under uuid5(golden id), and a case of another subject whose id merely differs from its slug."""
    engine = db.make_engine(url)
    db.upgrade(engine, "0003")
    run = dict(started_at=T0, argv="[]", params="{}", ragqual_version="0", python_version="3",
               prompt_hashes="[]", provenance="{}")
    with engine.begin() as conn:
        ret = _insert(conn, "runs", kind="retrieval", subject="rag", **run)
        gen = _insert(conn, "runs", kind="generation", subject="rag", **run)
        _insert(conn, "metric_values", run_id=ret, case_id=GOLDEN, group_key="hybrid", metric="recall@5",
                value=1.0, scorer_version=1, created_at=T0)
        case_pk = _insert(conn, "cases", subject="rag", case_id=OLD_ID, slug=GOLDEN, sha256="a" * 64,
                          definition="{}")
        _insert(conn, "cases", subject="other", case_id="k-1", slug="kept-as-is", sha256="b" * 64, definition="{}")
        variant = _insert(conn, "variant_configs", sha256="c" * 64, name="mock", provider="mock", model="mock",
                          config="{}")
        trial = _insert(conn, "trials", run_id=gen, case_pk=case_pk, variant_id=variant, mode="e2e",
                        repeat_index=0, cache_hit=False, created_at=T0)
        _insert(conn, "metric_values", run_id=gen, trial_id=trial, case_id=OLD_ID, group_key="e2e",
                metric="correctness", value=1.0, scorer_version=1, created_at=T0)
    db.upgrade(engine)
    engine.dispose()
    return {"ret": ret, "gen": gen, "trial": trial}


def test_upgrade_maps_the_old_generation_ids_to_the_golden_ids(store_url):
    ids = _old_history(store_url)
    engine = db.make_engine(store_url)
    with engine.connect() as conn:
        aliases = conn.execute(text("SELECT subject, alias, case_id FROM case_aliases")).all()
        stored = conn.execute(text("SELECT case_id FROM cases WHERE subject = 'rag'")).scalars().all()
        trials = conn.execute(text("SELECT trial_id, case_id, stored_case_id FROM v_trials")).all()
        story = conn.execute(text(
            "SELECT run_kind, case_id, metric, value FROM v_case_metrics ORDER BY metric_row_id")).all()
        distinct = conn.execute(text("SELECT COUNT(DISTINCT case_id) FROM v_case_metrics")).scalar_one()
    assert [tuple(a) for a in aliases] == [("rag", OLD_ID, GOLDEN)]  # the other subject's case is no alias
    assert stored == [OLD_ID]  # the old row is not rewritten
    assert [tuple(t) for t in trials] == [(ids["trial"], GOLDEN, OLD_ID)]
    assert [tuple(r) for r in story] == [("retrieval", GOLDEN, "recall@5", 1.0),
                                         ("generation", GOLDEN, "correctness", 1.0)]
    assert distinct == 1
    # the readers behind report / compare see one id too
    assert {r[2] for r in queries.trial_rows(engine, ids["gen"])} == {GOLDEN}
    assert {r[1] for r in queries.metric_rows(engine, ids["gen"])} == {GOLDEN}
    engine.dispose()


def test_case_aliases_is_append_only(store_url):
    _old_history(store_url)
    for statement in ("UPDATE case_aliases SET case_id = 'x'", "DELETE FROM case_aliases"):
        con = raw_connect(store_url)
        try:
            con.execute(statement)
            con.commit()
            outcome = "accepted"
        except dbapi_error(store_url) as exc:
            outcome = "refused" if "append-only" in str(exc) else str(exc)
        finally:
            con.close()
        assert outcome == "refused", statement


def test_the_golden_story_query_of_the_readme(store_url):
    """The documented query: one golden's retrieval metrics beside its generation trials."""
    ids = _old_history(store_url)
    store = RunStore.open(store_url)
    with store.engine.connect() as conn:
        rows = conn.execute(text(STORY_SQL), {"golden": GOLDEN}).all()
    assert [tuple(r) for r in rows] == [(GOLDEN, ids["ret"], "hybrid", 1.0, ids["gen"], "mock", "e2e", 0)]
    store.engine.dispose()


STORY_SQL = """
SELECT m.case_id, m.run_id AS retrieval_run, m.group_key AS strategy, m.value AS recall_at_5,
       t.run_id AS generation_run, t.variant, t.mode, t.repeat_index
FROM v_case_metrics m
JOIN v_trials t ON t.case_id = m.case_id
WHERE m.case_id = :golden AND m.run_kind = 'retrieval' AND m.metric = 'recall@5'
ORDER BY m.run_id, t.run_id, t.trial_id
"""
