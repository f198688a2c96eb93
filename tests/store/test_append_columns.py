"""A batch appended column by column (ragqual.store.rows): the shortcuts of `RunStore.append_trials`
give the rows, texts and digests the row-by-row way gave."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import IntegrityError

from ragqual.core.hashing import sha256_hex
from ragqual.store import rows, runstore, sealing, texts
from ragqual.store.models import Trial
from ragqual.store.records import AssertionRow, ScoreRow
from ragqual.store.runstore import RunStore, table_of
from ragqual.store.verify import verify
from tests.store.helpers import provenance
from tests.store.test_append_trials import T0, content, records

LONG = "a long text, longer than its hash " * 4


def test_column_digests_are_the_row_digests_of_the_same_rows():
    """The seal digests a batch from the columns it bound (ids as a range): the digests of the
    same rows given row by row, for every value shape a column holds (NULLs, repeats, zones)."""
    rng = random.Random(7)
    zone = timezone(timedelta(hours=2))
    pools = [[1, 2, 3], [None, 1.5, -0.0, float("inf")], ["x", "é%s", None], [True, False, None],
             [datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 2, tzinfo=zone)], [None], ["same"]]
    names = ["id", "a", "b", "c", "d", "e", "f", "g"]
    for size in (1, 2, 9, 40):
        columns = [range(10, 10 + size), *([rng.choice(pool) for _ in range(size)] for pool in pools)]
        table = [tuple(row) for row in zip(*columns, strict=True)]
        assert sealing.column_digests(names, columns) == sealing.row_digests(names, table)
        assert [d for _, d in sealing.column_digests(names, columns)] == [
            sealing.row_digest(dict(zip(names, row, strict=True))) for row in table]
    assert sealing.column_digests(names, [range(0), *([] for _ in pools)]) == []


def test_split_columns_is_split_of_each_trial_with_the_bodies_in_trial_order():
    """Column by column, each trial's columns are those `split` gives it, and the bodies to store
    come in the order trial-by-trial splitting adds them (their `texts` ids follow that order)."""
    short, other = "short", "another long text, longer than its hash " * 3
    values = {"rendered_prompt": [other, LONG, other], "context": [None, other, LONG],
              "raw_output": [LONG, short, None], "parsed_output": [short, LONG + "!", short]}
    digests: dict[str, str] = {}
    columns, bodies = texts.split_columns(values, digests)
    expected_bodies: dict[str, str] = {}
    for n in range(3):
        row, found = texts.split({c: values[c][n] for c in values})
        expected_bodies.update(found)
        assert {c: v[n] for c, v in columns.items() if v[n] is not None} == {
            c: v for c, v in row.items() if v is not None}
    assert list(bodies.items()) == list(expected_bodies.items())
    assert list(bodies) == [sha256_hex(other), sha256_hex(LONG), sha256_hex(LONG + "!")]
    assert digests == {t: sha256_hex(t) for t in (other, LONG, LONG + "!")}


def test_a_repeats_texts_are_hashed_once_across_batches(store_head_url, monkeypatch):
    """The store keeps the digests of the texts it appended: a later batch with equal texts (the
    repeats of a question come in a later batch) does not hash them again, and stores the same."""
    hashed: list[str] = []
    monkeypatch.setattr(texts, "sha256_hex", lambda value: hashed.append(value) or sha256_hex(value))
    store = RunStore(RunStore.open(store_head_url).engine, clock=lambda: T0)
    run_id = store.start_run("generation", "rag", provenance())
    recs = [replace(r, context=LONG, parsed_output="".join(["answer ", LONG])) for r in records(store, run_id, 4)]
    store.append_trials(recs[:2])
    first = len(hashed)
    assert sorted(set(hashed)) == sorted(hashed)  # each text once, within the batch too
    store.append_trials([replace(r, context="".join([LONG]), parsed_output="".join(["answer ", LONG]))
                         for r in recs[2:]])  # equal texts, other objects
    assert hashed[first:] == []
    other = store.start_run("generation", "rag", provenance())
    fresh = RunStore(store.engine, clock=lambda: T0)  # a store of its own hashes everything again
    fresh.append_trials([replace(r, run_id=other) for r in recs])
    assert content(store_head_url, run_id) == content(store_head_url, other)
    store.add_event(run_id, "finished")
    assert verify(store.engine).findings == []


def test_a_column_null_in_every_row_is_left_out_of_the_sqlite_insert(store_head_url, monkeypatch):
    """A nullable column without a default that a batch leaves NULL in every row is not bound
    (SQLite's driver binds None slowly); the rows stored, and their seal, are as before."""
    if not store_head_url.startswith("sqlite"):
        pytest.skip("the SQLite path only")
    statements: list[str] = []
    real = runstore._executemany
    monkeypatch.setattr(runstore, "_executemany", lambda conn, sql, params: statements.append(sql)
                        or real(conn, sql, params))
    store = RunStore(RunStore.open(store_head_url).engine, clock=lambda: T0)
    run_id = store.start_run("generation", "rag", provenance())
    recs = [replace(r, error=None, load_ms=None) for r in records(store, run_id, 4)]
    store.append_trials(recs[:2])
    [trials_insert] = [sql for sql in statements if sql.startswith("INSERT INTO trials")]
    assert "error" not in trials_insert and "load_ms" not in trials_insert and "mode" in trials_insert
    statements.clear()
    store.append_trials([recs[2], replace(recs[3], error="timed out")])
    [trials_insert] = [sql for sql in statements if sql.startswith("INSERT INTO trials")]
    assert "error" in trials_insert and "load_ms" not in trials_insert
    other = store.start_run("generation", "rag", provenance())
    for rec in recs:  # one at a time: the same NULLs, left out or bound
        store.append_trial(replace(rec, run_id=other, error="timed out" if rec is recs[3] else None))
    assert content(store_head_url, run_id) == content(store_head_url, other)
    store.add_event(run_id, "finished")
    assert verify(store.engine).findings == []
    table = table_of(Trial)
    assert runstore._may_leave_out(table.c.error) and not runstore._may_leave_out(table.c.cache_hit)


def test_a_driver_error_of_the_batch_insert_is_raised_as_sqlalchemys():
    """Rows go to SQLite straight through the driver's cursor; its errors come out as SQLAlchemy
    raises them (the run store tells a taken trial slot by IntegrityError)."""
    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        runstore._executemany(conn, "INSERT INTO t (id, v) VALUES (?, ?)", zip(range(1, 4), "abc"))
        with pytest.raises(IntegrityError, match="UNIQUE constraint failed"):
            runstore._executemany(conn, "INSERT INTO t (id, v) VALUES (?, ?)", iter([(4, "d"), (1, "again")]))
        assert conn.exec_driver_sql("SELECT v FROM t ORDER BY id").scalars().all() == ["a", "b", "c", "d"]


def test_a_column_of_one_object_is_processed_once_and_equal_objects_each():
    """A bind processor runs once for a column holding one object (a batch's `created_at`), and
    once per object otherwise: equal datetimes of two zones are one instant but two texts."""
    calls: list[object] = []
    at = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert runstore._processed(lambda v: calls.append(v) or str(v), [at] * 5) == [str(at)] * 5
    assert calls == [at]
    there = at.astimezone(timezone(timedelta(hours=1)))
    assert there == at and str(there) != str(at)
    assert runstore._processed(str, [at, there, at]) == [str(at), str(there), str(at)]


def test_the_row_builders_give_the_rows_trial_by_trial():
    """The column builders hold, row by row, what each trial's rows are: its id and batch beside
    each of its assertion, score and metric rows, details masked, per-category as JSON."""
    now = T0
    groups = [(AssertionRow("a1", 1, "c", 1.0, True, "why"), AssertionRow("a2", 2, "f", 0.5, False)), (),
              (AssertionRow("a3", 1, "c", 2.0, True),)]
    columns = rows.assertion_columns([7, 8, 9], ["b7", "b8", "b9"], groups, now)
    assert list(zip(*columns, strict=True)) == [(7, "b7", "a1", 1, "c", 1.0, True, "why", now),
                                                (7, "b7", "a2", 2, "f", 0.5, False, None, now),
                                                (9, "b9", "a3", 1, "c", 2.0, True, None, now)]
    score = ScoreRow("w", 1, 0.5, False, {"b": 1.0, "a": 0.0})
    columns = rows.score_columns([7, 8], ["b7", "b8"], [(score,), (score, score)], now, lambda v: repr(sorted(v)))
    assert [row[:2] for row in zip(*columns, strict=True)] == [(7, "b7"), (8, "b8"), (8, "b8")]
    assert {row[6] for row in zip(*columns, strict=True)} == {"['a', 'b']"}
    assert rows.repeated("xyz", [2, 0, 3]) == list("xxzzz")
    assert list(itertools.chain(rows.repeated([], []))) == []
