"""Slot claims between worker processes (ragqual.store.claims) and the events workers write."""

from __future__ import annotations

import json

import pytest

from ragqual.errors import InputError
from ragqual.store import db
from ragqual.store.claims import SlotClaims, require_shared, slot_lock_key
from ragqual.store.runstore import RunStore
from tests.store.helpers import add_trial, provenance


def test_slot_keys_are_signed_int4_and_differ_per_slot():
    keys = {slot_lock_key((c, v, m, r)) for c in range(1, 30) for v in (1, 2) for m in ("e2e", "oracle") for r in (0, 1)}
    assert len(keys) == 29 * 2 * 2 * 2
    assert all(-(2 ** 31) <= k < 2 ** 31 for k in keys)
    assert slot_lock_key((3, 1, "e2e", 0)) == slot_lock_key((3, 1, "e2e", 0))


def test_sqlite_has_no_shared_claims(tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path / 'h.db'}")
    with pytest.raises(InputError, match="through PostgreSQL advisory locks.*ragqual merge"):
        require_shared(engine, "ragqual run")
    with pytest.raises(InputError):
        SlotClaims(engine, 1)


def _slot(store: RunStore, case: str = "case-1", mode: str = "e2e", repeat: int = 0) -> tuple[int, int, str, int]:
    case_pk = store.record_case("rag", case, case, {"id": case, "query": "q?"})
    variant = store.intern_variant("mock", "mock", "mock", {"temperature": 0})
    return (case_pk, variant, mode, repeat)


@pytest.mark.postgres
def test_a_claim_is_one_workers_until_released_and_a_stored_slot_is_nobodys(pg_head_url):
    store = RunStore.open(pg_head_url)
    run_id = store.start_run("generation", "rag", provenance())
    key, other = _slot(store), _slot(store, repeat=1)
    a, b = SlotClaims(store.engine, run_id), SlotClaims(store.engine, run_id)
    try:
        assert a.claim(key) and not b.claim(key)
        a.release(key)
        assert b.claim(key)  # released without a trial: free again
        b.release(key)
        assert a.claim(key)
        add_trial(store, run_id)  # the slot's trial, committed while the claim is held
        a.release(key)
        assert not b.claim(key) and not a.claim(key)  # stored: nobody runs it again
        assert b.claim(other)
        b.close()  # a worker that ends (or dies) drops what it held
        assert a.claim(other)
        assert a.claimed == 3
    finally:
        a.close()
        b.close()
        store.engine.dispose()


@pytest.mark.postgres
def test_only_one_worker_at_a_time_may_end_the_run(pg_head_url):
    store = RunStore.open(pg_head_url)
    run_id = store.start_run("generation", "rag", provenance())
    a, b = SlotClaims(store.engine, run_id), SlotClaims(store.engine, run_id)
    try:
        with a.finishing() as first:
            with b.finishing() as second:
                assert first and not second
        with b.finishing() as later:
            assert later
    finally:
        a.close()
        b.close()
        store.engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_worker_events_end_a_run_once_and_never_after_its_end(store_head_url):
    store = RunStore.open(store_head_url)
    run_id = store.start_run("generation", "rag", provenance())
    add_trial(store, run_id, repeat=0)
    assert not store.add_worker_event(run_id, "finished", "{}", 2)  # a slot is missing
    assert store.add_worker_event(run_id, "resumed", json.dumps({"worker": True}), 2)
    add_trial(store, run_id, repeat=1)
    assert not store.add_worker_event(run_id, "resumed", "{}", 2)  # a late worker: the run is complete
    assert not store.add_worker_event(run_id, "interrupted", "{}", 2)
    assert store.add_worker_event(run_id, "finished", "{}", 2)
    assert not store.add_worker_event(run_id, "finished", "{}", 2)  # once
    assert store.last_event(run_id) == "finished"
    events = store.get_run(run_id)
    assert events.status == "finished"
    store.engine.dispose()
