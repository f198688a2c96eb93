"""RunStore.append_metrics and append_rescoring: metric rows sealed from the rows as bound (no
read-back on SQLite), stored and sealed exactly as a read-back seal stores and seals them."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import inspect

from ragqual.store import runstore as runstore_module
from ragqual.store.records import AssertionRow, ScoreRow
from ragqual.store.runstore import METRIC_COLUMNS, RunStore, bulk_insert_tuples, table_of
from ragqual.store.models import MetricValue
from ragqual.store.verify import verify
from tests.store.conftest import head_database, raw_connect
from tests.store.helpers import add_trial, provenance

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def other_head_url(backend, request, tmp_path: Path) -> Iterator[str]:
    """A second fresh database at head on the same backend (the reference history)."""
    yield from head_database(backend, request, tmp_path / "reference.db")


def _read_back_metrics(self, session, run_id, rows, now):
    """The metric insert as ragqual wrote it before: one executemany, ids assigned by the database,
    the seal reading the rows back."""
    payload = [(run_id, t, c, g, m, v, ver, now) for t, c, g, m, v, ver in rows]
    bulk_insert_tuples(session, table_of(MetricValue), METRIC_COLUMNS, payload)


def _deterministic(monkeypatch) -> None:
    """A clock that ticks and batch uuids that count, the same in both histories."""
    counter = iter(range(1, 10_000))
    monkeypatch.setattr(runstore_module, "uuid", SimpleNamespace(uuid4=lambda: uuid.UUID(int=next(counter))))


def _write_history(url: str, monkeypatch) -> None:
    _deterministic(monkeypatch)
    ticks = iter(range(10_000))
    store = RunStore(RunStore.open(url).engine, clock=lambda: T0 + timedelta(microseconds=7 * next(ticks)))
    run = store.start_run("retrieval", "rag", provenance())
    store.record_cases("rag", [(f"q{i}", f"q{i}", {"id": f"q{i}"}) for i in range(5)])
    for strategy in ("dense", "bm25", "hybrid"):
        store.append_metrics(run, [(None, f"q{i}", strategy, metric, value, 1)
                                   for i in range(5)
                                   for metric, value in (("mrr", 1 / (i + 1)), ("hit@5", float(i % 2)),
                                                         ("ndcg@10", None), ("count", i), ("recall@5", 0.0))])
    # values SQLite does not return as bound: the seal reads these rows back
    store.append_metrics(run, [(None, "q0", "odd", "nan", math.nan, 1), (None, "q0", "odd", "neg", -0.0, 1)])
    store.add_event(run, "finished")
    generation = store.start_run("generation", "rag", provenance())
    trial = add_trial(store, generation, case="q1")
    store.append_rescoring(generation, trial, "q1", "e2e", (AssertionRow("a1", 2, "correctness", 1.0, False, "why"),),
                           (ScoreRow("weighted-assertions", 2, 0.25, False, {"correctness": 0.25}),),
                           {"correctness": 0.0, "groundedness": None, "tokens": 3}, 2)
    store.add_event(generation, "finished")
    store.engine.dispose()


def _every_table(url: str) -> dict[str, list[str]]:
    from sqlalchemy import create_engine

    engine = create_engine(url)
    names = sorted(set(inspect(engine).get_table_names()) - {"alembic_version"})
    engine.dispose()
    con = raw_connect(url)
    try:
        cur = con.cursor()
        out = {}
        for name in names:
            cur.execute(f"SELECT * FROM {name} ORDER BY 1")
            out[name] = [repr(tuple(r)) for r in cur.fetchall()]  # repr: NaN equals itself
        return out
    finally:
        con.close()


def test_metrics_are_stored_and_sealed_as_a_read_back_seal_stores_them(store_head_url, other_head_url, monkeypatch,
                                                                      read_back_tables):
    """Every table of a history written with the metric rows kept for the seal equals, row for
    row and seal for seal, the same history written with the rows read back; on SQLite the seal
    reads back only the rows SQLite changes (NaN, -0.0) and the re-scoring's own rows."""
    with monkeypatch.context() as m:
        m.setattr(RunStore, "_insert_metrics", _read_back_metrics)
        _write_history(other_head_url, m)
    read = read_back_tables
    read.clear()  # what the reference history read back
    _write_history(store_head_url, monkeypatch)

    if store_head_url.startswith("sqlite"):
        # three kept batches, one read back (NaN, -0.0); the re-scoring reads its assertion and
        # score rows back (written by `_insert_scoring`), not its metric rows
        assert read.count("metric_values") == 1
    reference, written = _every_table(other_head_url), _every_table(store_head_url)
    assert "metric_values" in written and "seals" in written
    assert len(written["metric_values"]) == 3 * 25 + 2 + 1 + 3
    for name in reference:
        assert written[name] == reference[name], name
    verdict = verify(RunStore.open(store_head_url).engine)
    assert verdict.findings == []


def test_metrics_in_one_transaction_twice_still_seal_every_row(store_head_url, read_back_tables):
    """A second metric insert in one transaction (ids after the first batch's) is read back, and
    the seal covers both inserts."""
    read = read_back_tables
    store = RunStore.open(store_head_url)
    run = store.start_run("retrieval", "rag", provenance())

    def work(session):
        now = store.clock()
        store._insert_metrics(session, run, [(None, "q1", "dense", "mrr", 0.5, 1)], now)
        store._insert_metrics(session, run, [(None, "q2", "dense", "mrr", 0.25, 1)], now)

    read.clear()
    store._write(work, run)
    if store_head_url.startswith("sqlite"):
        assert read == ["metric_values"]
    store.add_event(run, "finished")
    verdict = verify(store.engine)
    assert verdict.findings == [] and run in verdict.sealed_runs
