"""RunStore.append_trials: many trials in one transaction with one seal, on every backend."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import event

from ragqual.errors import InputError
from ragqual.store.records import AssertionRow, ScoreRow, TrialRecord
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify
from tests.store.conftest import raw_connect
from tests.store.helpers import provenance

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def records(store: RunStore, run_id: int, n: int, first_case: int = 0) -> list[TrialRecord]:
    variant = store.intern_variant("mock", "mock", "mock", {"temperature": 0})
    prompt = store.intern_system_prompt("You answer from context.")
    out = []
    for i in range(first_case, first_case + n):
        case_pk = store.record_case("rag", f"case-{i}", f"case-{i}", {"id": f"case-{i}"})
        out.append(TrialRecord(
            run_id=run_id, case_pk=case_pk, variant_id=variant, mode="e2e", repeat_index=0,
            system_prompt_id=prompt, rendered_prompt=[{"role": "user", "content": f"q{i}? é"}],
            context=f"ctx {i}", raw_output={"text": f"answer {i}"}, parsed_output=f"answer {i}",
            error="timed out" if i % 3 == 2 else None, prompt_tokens=10 + i, completion_tokens=3,
            latency_ms=12.5, load_ms=None, cost=None, cache_key=f"{i:064x}", cache_hit=i % 2 == 0,
            assertions=(AssertionRow("a1", 1, "correctness", 1.0, i % 2 == 0, None if i % 2 else "why"),
                        AssertionRow("a2", 2, "format", 0.5, True)),
            scores=(ScoreRow("weighted-assertions", 1, 0.5 + i / 100, i % 2 == 0, {"correctness": 1.0}),),
            metrics={"correctness": float(i % 2), "groundedness": None}, case_id=f"case-{i}",
            raw_output_bytes=100 + i if i % 2 else None, output_truncated=(i % 4 == 1) if i % 2 else None,
        ))
    return out


def content(url: str, run_id: int) -> list[tuple]:
    """A run's trial, assertion, score and metric rows without ids, run ids and batch uuids."""
    con = raw_connect(url)
    try:
        cur = con.cursor()
        cur.execute("SELECT case_pk, variant_id, system_prompt_id, mode, repeat_index, rendered_prompt, context, "
                    "raw_output, parsed_output, error, prompt_tokens, completion_tokens, latency_ms, cache_key, "
                    "cache_hit, created_at, raw_output_bytes, output_truncated FROM trials WHERE run_id = "
                    f"{run_id} ORDER BY id")
        out = [("trial", *r) for r in cur.fetchall()]
        for table, cols in (("assertion_results", "assertion_id, assertion_version, category, weight, passed, "
                                                  "detail, created_at"),
                            ("trial_scores", "scorer_name, scorer_version, score, perfect, per_category, created_at")):
            cur.execute(f"SELECT t.case_pk, {', '.join('x.' + c.strip() for c in cols.split(','))} FROM {table} x "
                        f"JOIN trials t ON t.id = x.trial_id WHERE t.run_id = {run_id} ORDER BY x.id")
            out += [(table, *r) for r in cur.fetchall()]
        cur.execute("SELECT case_id, group_key, metric, value, scorer_version, created_at FROM metric_values "
                    f"WHERE run_id = {run_id} ORDER BY id")
        out += [("metric", *r) for r in cur.fetchall()]
        return out
    finally:
        con.close()


def scalar(url: str, sql: str) -> int:
    con = raw_connect(url)
    try:
        cur = con.cursor()
        cur.execute(sql)
        return int(cur.fetchone()[0])
    finally:
        con.close()


def test_a_batch_stores_exactly_what_one_trial_at_a_time_stores_under_one_seal(store_head_url):
    store = RunStore(RunStore.open(store_head_url).engine, clock=lambda: T0)
    one_run = store.start_run("generation", "rag", provenance())
    for rec in records(store, one_run, 6):
        store.append_trial(rec)
    batch_run = store.start_run("generation", "rag", provenance())
    seals = scalar(store_head_url, "SELECT COUNT(*) FROM seals")
    ids = store.append_trials([replace(r, run_id=batch_run) for r in records(store, batch_run, 6)])
    assert scalar(store_head_url, "SELECT COUNT(*) FROM seals") == seals + 1
    assert ids == sorted(ids) and len(set(ids)) == 6
    assert scalar(store_head_url, f"SELECT MIN(id) FROM trials WHERE run_id = {batch_run}") == ids[0]
    assert content(store_head_url, batch_run) == content(store_head_url, one_run)
    assert len(content(store_head_url, batch_run)) == 6 + 12 + 6 + 12
    store.add_event(batch_run, "finished")
    verdict = verify(store.engine)
    assert verdict.findings == [] and batch_run in verdict.sealed_runs


def test_a_batch_is_all_or_nothing_when_one_slot_is_already_held(store_head_url):
    store = RunStore.open(store_head_url)
    run_id = store.start_run("generation", "rag", provenance())
    recs = records(store, run_id, 4)
    store.append_trial(recs[2])
    before = [scalar(store_head_url, f"SELECT COUNT(*) FROM {t}")
              for t in ("trials", "assertion_results", "trial_scores", "metric_values", "seals")]
    with pytest.raises(InputError, match="already holds one of the 4 trials"):
        store.append_trials(recs)
    after = [scalar(store_head_url, f"SELECT COUNT(*) FROM {t}")
             for t in ("trials", "assertion_results", "trial_scores", "metric_values", "seals")]
    assert after == before


def test_a_batch_names_one_run(store_head_url):
    store = RunStore.open(store_head_url)
    first = store.start_run("generation", "rag", provenance())
    second = store.start_run("generation", "rag", provenance())
    recs = records(store, first, 2)
    with pytest.raises(ValueError, match="one run"):
        store.append_trials([recs[0], replace(recs[1], run_id=second)])
    assert store.append_trials([]) == []


class Statements:
    """Counts the statements a store sends through its driver connections (SQLAlchemy's and the
    raw DB-API cursors sealing uses), one per execute or executemany."""

    def __init__(self, store: RunStore):
        self.count = 0
        store.engine.dispose()  # new connections get the counting cursor
        backend = store.engine.dialect.name
        counter = self

        if backend == "postgresql":
            import psycopg

            class Counting(psycopg.Cursor):
                def execute(self, *a, **k):
                    counter.count += 1
                    return super().execute(*a, **k)

                def executemany(self, *a, **k):
                    counter.count += 1
                    return super().executemany(*a, **k)

            event.listen(store.engine, "connect", lambda conn, _: setattr(conn, "cursor_factory", Counting))
        else:
            import sqlite3

            class CountingSqlite(sqlite3.Cursor):
                def execute(self, *a, **k):
                    counter.count += 1
                    return super().execute(*a, **k)

                def executemany(self, *a, **k):
                    counter.count += 1
                    return super().executemany(*a, **k)

            class Conn(sqlite3.Connection):
                def cursor(self, factory=CountingSqlite):
                    return super().cursor(factory)

            def connect_with(dialect, rec, cargs, cparams):
                cparams["factory"] = Conn  # returns None: SQLAlchemy then connects itself

            event.listen(store.engine, "do_connect", connect_with)


def test_a_batch_costs_the_same_statements_whatever_its_size(store_head_url):
    """The seal reads each table's new rows back once: no statement per row, so a PostgreSQL
    batch is a fixed number of round trips."""
    store = RunStore.open(store_head_url)
    run_id = store.start_run("generation", "rag", provenance())
    small, large, singles = records(store, run_id, 2), records(store, run_id, 40, 2), records(store, run_id, 5, 42)
    counted = Statements(store)
    store.append_trials(records(store, run_id, 1, 47))  # the connection's own set-up is not the batch's
    counted.count = 0
    store.append_trials(small)
    per_small = counted.count
    counted.count = 0
    store.append_trials(large)
    assert counted.count == per_small
    counted.count = 0
    for rec in singles:
        store.append_trial(rec)
    assert counted.count == 5 * per_small  # one trial at a time pays the whole transaction each time
    assert per_small <= 25
    assert scalar(store_head_url, f"SELECT COUNT(*) FROM trials WHERE run_id = {run_id}") == 48


def test_assertion_definitions_are_recorded_in_one_transaction_once_each(store_head_url):
    store = RunStore.open(store_head_url)
    one = store.record_assertion_def("a1", 1, "correctness", 1.0, "says 42", {"kind": "regex", "pattern": "42"})
    seals = scalar(store_head_url, "SELECT COUNT(*) FROM seals")
    defs = [("a1", 1, "correctness", 1.0, "says 42", {"kind": "regex", "pattern": "42"}),
            ("a2", 1, "format", 0.5, "short", {"kind": "max_chars", "n": 80}),
            ("a2", 2, "format", 0.5, "shorter", {"kind": "max_chars", "n": 40})]
    ids = store.record_assertion_defs(defs)
    assert scalar(store_head_url, "SELECT COUNT(*) FROM seals") == seals + 1
    assert len(ids) == 3 and len(set(ids.values())) == 3 and one in ids.values()
    assert store.record_assertion_defs(defs) == ids  # found again: nothing appended, no seal
    assert scalar(store_head_url, "SELECT COUNT(*) FROM seals") == seals + 1
    assert scalar(store_head_url, "SELECT COUNT(*) FROM assertion_defs") == 3
    assert store.record_assertion_defs([]) == {}


def test_returned_as_bound_only_when_sqlite_returns_the_value_as_bound():
    """`returned_as_bound` says yes only for columns SQLite hands back unchanged: checked against
    SQLite itself for every affinity and the awkward values (NaN, -0.0, numbers as text, ints in
    REAL columns, bools)."""
    import sqlite3

    from ragqual.store.sealing import returned_as_bound, sqlite_affinity

    declared = {"i": "INTEGER", "t": "VARCHAR(36)", "r": "FLOAT", "n": "DATETIME", "b": "BOOLEAN", "x": "TEXT"}
    samples = [[1, 2, None], [2**62, -3], ["a", None, "é"], ["12", "x"], ["2026-03-01 12:00:00.000001"], [1.5, None],
               [float("nan"), 1.0], [-0.0, 2.0], [float("inf")], [1, 2.5], [True, False], [3.0], [None], [b"\x00"],
               ["1e3"], [" 7 "]]
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE v (" + ", ".join(f"{c} {t}" for c, t in declared.items()) + ")")
    said_yes = 0
    for column, kind in declared.items():
        affinity = sqlite_affinity(kind)
        for values in samples:
            con.execute("DELETE FROM v")
            con.executemany(f"INSERT INTO v ({column}) VALUES (?)", [(v,) for v in values])
            back = [row[0] for row in con.execute(f"SELECT {column} FROM v ORDER BY rowid")]
            same = [(type(a), repr(a)) for a in values] == [(type(b), repr(b)) for b in back]
            if returned_as_bound(affinity, values):
                said_yes += 1
                assert same, (kind, values, back)
    assert said_yes >= 12  # the ordinary columns are taken as bound


def test_a_batch_is_sealed_from_its_bound_rows_and_verifies(store_head_url, read_back_tables):
    """On SQLite a batch's seal digests the rows as bound, reading none of them back; rows SQLite
    would change (a NaN metric is stored as NULL, -0.0 as 0.0) are read back. Either way `verify`
    recomputes the same digests from the stored rows."""
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    recs = records(store, run, 6)
    read = read_back_tables
    read.clear()  # what setting the run up read back
    store.append_trials(recs[:3])
    if store_head_url.startswith("sqlite"):
        assert read == []
    awkward = [replace(r, metrics={"correctness": float("nan"), "leakage": -0.0}) for r in recs[3:]]
    read.clear()
    store.append_trials(awkward)
    if store_head_url.startswith("sqlite"):
        assert read == ["metric_values"]
    store.add_event(run, "finished")
    verdict = verify(store.engine)
    assert verdict.findings == [] and run in verdict.sealed_runs


def _texts(url: str, run_id: int) -> list[tuple]:
    """Each trial's rendered prompt and raw output as stored (inline or by hash: `v_trial_texts`)."""
    con = raw_connect(url)
    try:
        cur = con.cursor()
        cur.execute(f"SELECT x.rendered_prompt, x.raw_output FROM v_trial_texts x JOIN trials t ON t.id = x.trial_id "
                    f"WHERE t.run_id = {run_id} ORDER BY t.id")
        return cur.fetchall()
    finally:
        con.close()


def test_the_raw_output_text_the_loop_encoded_is_written_as_given_unless_masking_changes_the_value(store_head_url):
    """`raw_output_json` is the text the store writes for the raw output (built here to differ from
    what encoding the value would give, to show it is used); a credential found in the value is
    masked, the value encoded again, and the given text not used."""
    import json

    from ragqual.core.redact import forget_secrets, remember_secret

    store = RunStore(RunStore.open(store_head_url).engine, clock=lambda: T0)
    run_id = store.start_run("generation", "rag", provenance())
    recs = records(store, run_id, 3)
    given = [replace(r, raw_output=({"text": "sk-test-SECRET-0123456789"} if i == 2 else r.raw_output),
                     raw_output_json=f'{{"given": {i}}}') for i, r in enumerate(recs)]
    given[1] = replace(given[1], raw_output="a text raw output, stored as it is", raw_output_json='"quoted"')
    store.append_trials(given[:2])
    remember_secret("sk-test-SECRET-0123456789")
    try:
        store.append_trials(given[2:])
    finally:
        forget_secrets()
    raws = [raw for _, raw in _texts(store_head_url, run_id)]
    assert raws[:2] == ['{"given": 0}', "a text raw output, stored as it is"]
    assert json.loads(raws[2]) == {"text": "***"}
    # without a given text, the value is encoded as before
    other = store.start_run("generation", "rag", provenance())
    store.append_trials([replace(r, run_id=other) for r in recs])
    assert [raw for _, raw in _texts(store_head_url, other)] == [
        json.dumps(r.raw_output, ensure_ascii=False, sort_keys=True) for r in recs]


def test_a_rendered_prompt_object_is_encoded_once_and_stored_as_each_copy_would_be(store_head_url, monkeypatch):
    """The repeats of a question share one rendered prompt object (the RAG subject hands them the
    same): the store encodes it once, across batches, and stores the text an equal copy gets."""
    from ragqual.store import runstore

    store = RunStore(RunStore.open(store_head_url).engine, clock=lambda: T0)
    run_id = store.start_run("generation", "rag", provenance())
    shared = [{"role": "user", "content": "the shared question? é " * 5}]
    recs = [replace(r, rendered_prompt=shared, repeat_index=0) for r in records(store, run_id, 3)]
    encoded: list[object] = []
    real = runstore._JSON

    class Counting:
        def encode(self, value):
            encoded.append(value)
            return real.encode(value)

    monkeypatch.setattr(runstore, "_JSON", Counting())
    store.append_trials(recs[:2])
    store.append_trials(recs[2:])
    assert sum(value is shared for value in encoded) == 1
    copies = store.start_run("generation", "rag", provenance())
    store.append_trials([replace(r, run_id=copies, rendered_prompt=[dict(m) for m in shared]) for r in recs])
    assert sum(value is not shared and value == shared for value in encoded) == 3  # equal copies: each encoded
    assert [p for p, _ in _texts(store_head_url, run_id)] == [p for p, _ in _texts(store_head_url, copies)]


def test_a_score_row_shared_by_repeats_has_its_per_category_scores_encoded_once(store_head_url, monkeypatch):
    """Repeats scored once share their score rows (`engine.loop.ScoreMemo`): their per-category
    JSON is made once, across batches, and is the text an equal copy gets."""
    from ragqual.store import runstore

    encoded: list[object] = []
    real = runstore.canonical_json
    monkeypatch.setattr(runstore, "canonical_json", lambda value: encoded.append(value) or real(value))
    store = RunStore(RunStore.open(store_head_url).engine, clock=lambda: T0)
    run_id = store.start_run("generation", "rag", provenance())
    shared = (ScoreRow("weighted-assertions", 1, 0.5, False, {"correctness": 0.0, "refusal": 1.0}),)
    recs = [replace(r, scores=shared) for r in records(store, run_id, 3)]
    store.append_trials(recs[:2])
    store.append_trials(recs[2:])
    assert sum(value is shared[0].per_category for value in encoded) == 1
    copies = store.start_run("generation", "rag", provenance())
    store.append_trials([replace(r, run_id=copies, scores=(replace(shared[0], per_category=dict(shared[0].per_category)),))
                         for r in recs])
    stored = {run: [row for row in content(store_head_url, run) if row[0] == "trial_scores"] for run in (run_id, copies)}
    assert stored[run_id] == stored[copies] and stored[run_id][0][6] == '{"correctness":0.0,"refusal":1.0}'
