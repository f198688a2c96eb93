"""`decomposition_trials` reads what the decomposition reads of a run's trials and nothing else:
the e2e trials as the full reading has them (without the newest score), the oracle trials'
outcome without their texts, no noretrieval trial; the causes and the advice read from it equal
those read from the full reading."""

from __future__ import annotations

import dataclasses

from ragqual.app.failures import gap_causes, run_gap_causes_and_trials
from ragqual.store.failure_reads import decomposition_trials, run_failure_trials
from ragqual.store.runstore import RunStore
from tests.store.helpers import add_trial, provenance


def _run(store: RunStore) -> int:
    run = store.start_run("generation", "rag", provenance())
    for n in range(4):
        for mode in ("oracle", "e2e", "noretrieval"):
            for repeat in range(2):
                add_trial(store, run, case=f"q{n}", repeat=repeat, mode=mode,
                          passed=(n + repeat + (mode == "e2e")) % 3 != 0)
    return run


def test_the_decomposition_reads_e2e_in_full_and_the_oracle_outcome_alone(store_head_url):
    store = RunStore.open(store_head_url)
    run = _run(store)
    full = run_failure_trials(store.engine, run, with_checks=False)
    got = decomposition_trials(store.engine, run)
    assert [t.mode for t in got] == [t.mode for t in full if t.mode != "noretrieval"]
    want = [dataclasses.replace(t, perfect=None) if t.mode == "e2e" else
            dataclasses.replace(t, perfect=None, raw_output=None, answer="", context="")
            for t in full if t.mode != "noretrieval"]
    assert got == want
    assert any(t.context for t in got if t.mode == "e2e") and any(t.perfect is not None for t in full)
    causes, trials = run_gap_causes_and_trials(store.engine, run)
    assert trials == got
    assert causes == gap_causes(full) and any(c.total for c in causes.values())
    store.engine.dispose()
