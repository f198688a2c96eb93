"""Sealing's pure parts, and the promises later migrations rely on."""

from __future__ import annotations

from ragqual.store import sealing
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify
from tests.store.conftest import raw_connect
from tests.store.helpers import add_trial, provenance


def test_ranges_round_trip():
    assert sealing.ranges([7, 1, 2, 3, 9, 10]) == [[1, 3], [7, 7], [9, 10]]
    assert sealing.expand([[1, 3], [7, 7], [9, 10]]) == [1, 2, 3, 7, 9, 10]


def test_a_null_column_is_the_same_row_as_a_missing_column():
    """So a migration adding a nullable column leaves every earlier seal valid."""
    assert sealing.row_digest({"id": 1, "a": 1, "new": None}) == sealing.row_digest({"id": 2, "a": 1})
    assert sealing.row_digest({"a": 1, "new": 0}) != sealing.row_digest({"a": 1})



def test_many_rows_digest_exactly_as_one_row_at_a_time():
    """The batched digests (sealing.row_digests) are the per-row canonical JSON digests, for every
    value type a driver returns: text with escapes and non-ASCII, ints, bools, floats of every
    shape (non-finite ones too), NULL, datetimes and bytes (the general path)."""
    from datetime import UTC, datetime

    names = ["score", "id", "text", "rank", "flag", "at", "blob", "c%d"]
    values = [
        (0.1, 1, "plain", 3, True, None, None, 0),
        (-0.0, 2, 'quote " backslash \\ tab \t nl \n ctl \x01', -7, False, None, None, 1),
        (1e-07, 3, "é ü 漢字 🙂 \u2028", 10**30, None, None, None, 2),
        (float("nan"), 4, "", 0, True, None, None, 3),
        (float("inf"), 5, "%s %d %%", 1, False, None, None, 4),
        (-float("inf"), 6, "x", 1, False, datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), b"\x00\xff", 5),
        (123456789.125, 7, "y", 2, True, datetime(2026, 1, 2, 3, 4, 5), None, None),
        (1.0, 8, "z", None, None, None, None, 6),
        (None, 9, None, None, None, None, None, None),  # every column NULL but the id: {}
        (None, 10, "only text", None, None, None, None, None),
    ]
    batched = sealing.row_digests(names, values)
    assert batched == [(row[1], sealing.row_digest(dict(zip(names, row)))) for row in values]
    assert len({d for _, d in batched}) == len(values)

def test_rows_sharing_null_patterns_digest_as_one_row_at_a_time():
    """Rows of a batch share a few NULL patterns (a trial's texts by hash, no error, no cost): each
    pattern's rows are joined by one template, and every digest is the one-row digest."""
    import random

    rng = random.Random(7)
    names = ["id", "a%", "b", "c", "d", "e"]
    pool = [None, None, 0, 1.5, -0.0, "x", 'q"%s', True, 10**20]
    values = [(n, *(rng.choice(pool) for _ in range(5))) for n in range(1, 400)]
    values += [(400, None, None, None, None, None), (401, None, None, "only", None, None)]
    # columns of one type and NULLs: a metric's value, an assertion's detail, a trial's token count
    values += [(n, rng.choice([None, -0.0, 0.25, 1e-300, 3.0]), rng.choice([None, "é\n", "%"]),
                rng.choice([None, 0, -5, 2**70]), rng.choice([None, float("nan"), 1.0]), rng.choice([None, True]))
               for n in range(402, 700)]
    batched = sealing.row_digests(names, values)
    assert batched == [(row[0], sealing.row_digest(dict(zip(names, row)))) for row in values]


def test_seal_digest_chains_every_input():
    base = sealing.seal_digest("p" * 64, None, 1, "{}")
    assert len({base, sealing.seal_digest("q" * 64, None, 1, "{}"), sealing.seal_digest("p" * 64, "r", 1, "{}"),
                sealing.seal_digest("p" * 64, None, 2, "{}"), sealing.seal_digest("p" * 64, None, 1, "{ }")}) == 5


def test_a_later_nullable_column_keeps_old_seals_valid(store_head_url, monkeypatch):
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run)
    con = raw_connect(store_head_url)
    con.execute("ALTER TABLE trials ADD COLUMN raw_output_chars INTEGER")
    con.commit()
    con.close()
    real = sealing.columns
    monkeypatch.setattr(sealing, "columns", lambda t: real(t) + (["raw_output_chars"] if t == "trials" else []))
    add_trial(store, run, case="case-2")  # a trial written after the migration, column still NULL
    verdict = verify(store.engine)
    store.engine.dispose()
    # the column stands in for a later migration's; no migration here creates it, so the schema
    # check names it, and nothing else is found
    assert [(f.kind, f.table) for f in verdict.findings] == [("schema", "column trials.raw_output_chars")]
    assert verdict.sealed_runs == [run]


def test_every_write_is_sealed_and_chained(store_head_url):
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run)
    store.add_event(run, "finished")
    store.append_scoring(1, [], [])  # nothing appended: no seal
    con = raw_connect(store_head_url)
    seals = con.execute("SELECT id, kind, run_id, prev_digest, digest FROM seals ORDER BY id").fetchall()
    con.close()
    store.engine.dispose()
    assert seals[0][1] == "genesis"
    assert all(later[3] == earlier[4] for earlier, later in zip(seals, seals[1:]))
    assert {s[2] for s in seals[1:]} == {None, run}  # definitions are sealed outside any run


def test_a_migration_backfill_marked_with_a_watermark_is_unsealed_not_inserted(store_head_url):
    """What a later migration that writes history rows itself does (e.g. backfilling a new table)."""
    store = RunStore.open(store_head_url)
    add_trial(store, store.start_run("generation", "rag", provenance()))
    con = raw_connect(store_head_url)
    con.execute("INSERT INTO system_prompts (sha256, text) VALUES ('b' || 'ackfill', 'written by a migration')")
    con.commit()
    con.close()
    assert [f.kind for f in verify(store.engine).findings] == ["inserted"]
    with store.engine.begin() as conn:
        sealing.append_watermark(conn, ["system_prompts"])
    verdict = verify(store.engine)
    store.engine.dispose()
    assert verdict.findings == []
