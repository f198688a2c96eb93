"""A RAG raw output in either layout, the answer twice (before) or once (`backend.message.content`),
reads the same through every store reader, on SQLite and PostgreSQL; both verify."""

from __future__ import annotations

import dataclasses
import json

from sqlalchemy import text

from ragqual.core.replies import answer_in
from ragqual.engine.subject import reply_text
from ragqual.store.failure_reads import run_failure_trials
from ragqual.store.runstore import RunStore
from ragqual.store.trial_reads import run_trials, trial_detail
from ragqual.store.verify import verify
from tests.store.helpers import add_trial, provenance

ANSWERS = ["Boil the water for one full minute, then let it cool covered. " * 3,
           "Filter cloudy water through a cloth before you boil it. " * 3]


def _raw(answer: str, old: bool) -> dict:
    backend = {"model": "mock", "message": {"role": "assistant", "content": answer}, "done": True}
    raw = {"backend": backend, "retrievalQuery": "q?", "rewrite": None, "injected": ["doc#0"]}
    return {"message": {"role": "assistant", "content": answer}, **raw} if old else raw


def _run(store: RunStore, old: bool) -> int:
    run = store.start_run("generation", "rag", provenance())
    real = store.append_trial
    for n, answer in enumerate(ANSWERS):
        def with_raw(record, answer=answer):
            return real(dataclasses.replace(record, raw_output=_raw(answer, old), parsed_output=answer))
        store.append_trial = with_raw  # type: ignore[method-assign]
        try:
            add_trial(store, run, case=f"q{n}", passed=n == 0)
        finally:
            store.append_trial = real  # type: ignore[method-assign]
    return run


def test_both_layouts_read_the_same_answers_and_verify(store_head_url):
    store = RunStore.open(store_head_url)
    old, new = _run(store, old=True), _run(store, old=False)
    engine = store.engine
    with engine.connect() as conn:
        raws = {run: [json.loads(r[0]) for r in conn.execute(text(
            "SELECT raw_output FROM v_trial_texts WHERE run_id = :r ORDER BY trial_id"), {"r": run})]
            for run in (old, new)}
    assert [json.dumps(r).count(ANSWERS[0][:40]) for r in raws[old][:1] + raws[new][:1]] == [2 * 3, 3]
    assert [{k: v for k, v in r.items() if k != "message"} for r in raws[old]] == raws[new]

    read = {}
    for run in (old, new):
        trials = run_trials(engine, run)
        read[run] = ([reply_text(t.raw_output) for t in trials],
                     [answer_in(trial_detail(engine, t.trial_id).raw_output) for t in trials],
                     [(t.answer, t.perfect) for t in run_failure_trials(engine, run)])
    assert read[old] == read[new]
    assert read[new][0] == ANSWERS
    verdict = verify(engine)
    assert verdict.intact and {old, new} <= set(verdict.sealed_runs), verdict.findings
    engine.dispose()
