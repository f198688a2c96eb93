"""Migration 0014 drops `ix_metric_values_run_metric`, a strict prefix of
`ix_metric_values_run_metric_version`: every read plans the same with the wider index in its
place, and a 0013 history upgrades in place, reads the same and verifies (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3

from sqlalchemy import inspect

from ragqual.store import db
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify
from tests.store.test_read_plans import statements  # noqa: F401 (fixture)
from tests.store.test_run_summaries import _cli, _generation, _retrieval, _url

DROPPED = "ix_metric_values_run_metric"
WIDER = "ix_metric_values_run_metric_version"
READS = (["report", "1"], ["report", "1", "--failures"], ["report", "2"], ["compare", "1", "3"],
         ["compare", "1", "3", "--all-metrics"], ["compare", "2", "2"], ["history"], ["history", "--limit", "0"],
         ["export", "1", "--format", "csv"], ["verify"])


def _indexes(engine, table: str) -> dict[str, list[str]]:
    return {i["name"]: list(i["column_names"]) for i in inspect(engine).get_indexes(table)}


def _history(url: str) -> None:
    """Two generation runs and a retrieval run, finished (run 1, 2, 3)."""
    store = RunStore(db.make_engine(url))
    for run in (_generation(store), _retrieval(store), _generation(store, seed=5)):
        store.add_event(run, "finished")
    store.engine.dispose()


def _reads(url: str, capsys) -> list[str]:
    """What each read command prints (run times left out)."""
    out = []
    for args in READS[:-1]:
        code, text, err = _cli(url, capsys, *args)
        assert code in (0, 1) and text, err
        out.append(text)
    return out


def test_a_0013_history_upgrades_reads_the_same_and_verifies(store_url, capsys, monkeypatch):
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0013")
    assert _indexes(engine, "metric_values")[DROPPED] == ["run_id", "metric"]
    url = _url(RunStore(engine))
    _history(url)
    with monkeypatch.context() as at_0013:  # read as ragqual at 0013 read it
        at_0013.setattr(db, "HEAD_REVISION", "0013")
        before = _reads(url, capsys)

    db.upgrade(engine)
    indexes = _indexes(engine, "metric_values")
    assert DROPPED not in indexes
    assert indexes[WIDER][:2] == ["run_id", "metric"]  # what served the dropped one's lookups
    after = _reads(url, capsys)
    assert after == before
    verdict = verify(engine)
    assert verdict.intact, verdict.findings
    store = RunStore(engine)
    run = _generation(store, seed=9)  # a run appended after the upgrade seals and verifies too
    store.add_event(run, "finished")
    verdict = verify(engine)
    assert verdict.intact and run in verdict.sealed_runs, verdict.findings
    engine.dispose()


def _plans(path: str, seen) -> list[list[str]]:
    con = sqlite3.connect(path)
    try:
        return [[row[3] for row in con.execute(f"EXPLAIN QUERY PLAN {statement}", parameters or ())]
                for statement, parameters in seen]
    finally:
        con.close()


def test_every_read_plans_the_same_without_the_dropped_index(tmp_path, statements, capsys):  # noqa: F811
    """Each statement the read commands send, planned with the index (as at 0013) and without it
    (head): the same steps, the wider index in its place, no extra sort."""
    path = tmp_path / "h.db"
    url = f"sqlite:///{path}"
    engine = db.make_engine(url)
    db.upgrade(engine)
    engine.dispose()
    _history(url)
    statements.clear()
    for args in READS:
        code, _, err = _cli(url, capsys, *args)
        assert code in (0, 1), err
    seen = list({s: (s, p) for s, p in statements}.values())
    assert len(seen) > 20
    head = _plans(str(path), seen)
    con = sqlite3.connect(path)
    con.execute(f"CREATE INDEX {DROPPED} ON metric_values (run_id, metric)")  # the 0013 layout
    con.commit()
    con.close()
    old = _plans(str(path), seen)
    assert sum(any(DROPPED + " " in step for step in plan) for plan in old) >= 1  # the planner chose it
    assert [[step.replace(DROPPED + " ", WIDER + " ") for step in plan] for plan in old] == head
