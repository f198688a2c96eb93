"""`run_failure_trials` parses each distinct stored text once and, for the decomposition, reads no
assertion outcomes: the trials it returns are those of a plain reading, each parsed on its own."""

from __future__ import annotations

import dataclasses

from sqlalchemy import text

from ragqual.store.failure_reads import _answer, _case_input, _json, run_failure_trials
from ragqual.store.runstore import RunStore
from tests.store.helpers import add_trial, provenance

ANSWERS = ["Boil the water for one minute.", "Filter it first, then boil.", "Boil the water for one minute."]


def _run(store: RunStore) -> int:
    run = store.start_run("generation", "rag", provenance())
    real = store.append_trial
    for n, answer in enumerate(ANSWERS * 2):  # repeats: equal raw outputs and definitions
        raw = {"message": {"role": "assistant", "content": answer}, "injected": [f"d{n % 2}#0"]}

        def with_raw(record, raw=raw, answer=answer):
            return real(dataclasses.replace(record, raw_output=raw, parsed_output=answer))
        store.append_trial = with_raw  # type: ignore[method-assign]
        try:
            add_trial(store, run, case=f"q{n % 2}", repeat=n // 2, passed=n % 3 != 1)
        finally:
            store.append_trial = real  # type: ignore[method-assign]
    return run


def test_the_trials_read_once_are_the_plainly_parsed_trials(store_head_url):
    store = RunStore.open(store_head_url)
    run = _run(store)
    got = run_failure_trials(store.engine, run)
    with store.engine.connect() as conn:
        stored = conn.execute(text("SELECT v.raw_output, v.parsed_output, c.definition FROM v_trial_texts v "
                                   "JOIN trials t ON t.id = v.trial_id JOIN cases c ON c.id = t.case_pk "
                                   "WHERE v.run_id = :r ORDER BY v.trial_id"), {"r": run}).all()
    plain = [(_json(raw), _answer(_json(parsed), _json(raw)), _case_input(definition))
             for raw, parsed, definition in stored]
    assert [(t.raw_output, t.answer, t.case_input) for t in got] == plain
    assert [t.answer for t in got] == ANSWERS * 2
    assert all(t.checks for t in got)

    bare = run_failure_trials(store.engine, run, with_checks=False)
    assert bare == [dataclasses.replace(t, checks=()) for t in got]
    store.engine.dispose()


def test_each_stored_text_is_read_once_not_once_per_trial_naming_it(store_head_url):
    """The trials statement carries the hashes of the texts stored by hash, not their bodies; the
    texts statement returns each body the run's trials name once, and the reading resolves them
    as the plain reading does (the test above)."""
    from ragqual.store.failure_reads import DECOMPOSITION_QUERY, TRIALS_QUERY

    store = RunStore.open(store_head_url)
    run = _run(store)
    with store.engine.connect() as conn:
        named = conn.execute(text("SELECT raw_output_sha256, parsed_output_sha256, context_sha256 FROM trials "
                                  "WHERE run_id = :r"), {"r": run}).all()
        stored = {body for (body,) in conn.execute(text("SELECT body FROM texts"))}
        assert stored and any(h for r in named for h in r)
        for query in (TRIALS_QUERY, DECOMPOSITION_QUERY):
            rows = conn.execute(text(query.trials), {"run": run, "scorer": "weighted-assertions"}).all()
            assert len(rows) == len(ANSWERS) * 2
            assert not any(v in stored for r in rows for v in r if isinstance(v, str))
            bodies = conn.execute(text(query.texts), {"run": run}).all()
            assert sorted(h for h, _ in bodies) == sorted({h for r in named for h in r if h})
    store.engine.dispose()
