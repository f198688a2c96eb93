"""`assertion_defs` (read once per run for every assertion of its cases) reads plain columns:
the same rows in the same order, with no ORM object built per stored definition."""

from __future__ import annotations

from sqlalchemy import event

from ragqual.store.models import AssertionDef
from ragqual.store.runstore import RunStore
from ragqual.store.trial_reads import AssertionDefRow, assertion_defs


def test_assertion_definitions_read_as_rows_without_orm_objects(store_head_url):
    store = RunStore.open(store_head_url)
    defs = [("a2", 1, "format", 0.5, "short", {"kind": "max_chars", "n": 80}),
            ("a1", 1, "correctness", 1.0, "says 42", {"kind": "regex", "pattern": "42 é"}),
            ("a2", 2, "format", 0.25, "shorter", {"kind": "max_chars", "n": 40}),
            ("a3", 1, "format", 2.0, "other", {"kind": "max_chars", "n": 1})]
    store.record_assertion_defs(defs)
    loaded: list[object] = []

    def on_load(target: object, context: object) -> None:
        loaded.append(target)

    event.listen(AssertionDef, "load", on_load)
    try:
        rows = assertion_defs(store.engine, ["a1", "a2"])
    finally:
        event.remove(AssertionDef, "load", on_load)
    assert loaded == []
    assert [(r.assertion_id, r.version, r.category, r.weight, r.name, r.definition) for r in rows] == \
        [(d[0], d[1], d[2], d[3], d[4], d[5]) for d in defs[:3]]
    assert all(isinstance(r, AssertionDefRow) and len(r.sha256) == 64 for r in rows)
    assert assertion_defs(store.engine, []) == []
