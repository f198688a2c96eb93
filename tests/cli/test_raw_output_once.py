"""A trial's raw output holds the model's answer once (`backend.message.content`); rows written
in the older layout (the answer also as a top-level `message.content`) stay as they are and read
identically, and the response cache serves old and new runs alike."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ragqual.core import replies
from ragqual.store.db import make_engine
from ragqual.store.failure_reads import run_failure_trials
from ragqual.store.trial_reads import run_answers, trial_detail
from tests.cli.conftest import one_document_project, ragqual

ANSWER = "Boil the spring water for 1 minute before drinking it; filter it first when it is cloudy."


@pytest.fixture
def project(tmp_path, monkeypatch):
    """One document and one answerable golden; the mock model answers with the document's text."""
    return one_document_project(tmp_path, monkeypatch, ANSWER)


def _old_layout(answer, backend):
    """What the RAG subject wrote before the answer was stored once."""
    return {"message": {"role": "assistant", "content": answer}, "backend": backend}


def _trials(db, run_id):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT v.raw_output, v.parsed_output, t.cache_hit FROM v_trial_texts v "
                           "JOIN trials t ON t.id = v.trial_id WHERE v.run_id = ? ORDER BY v.trial_id",
                           (run_id,)).fetchall()
    finally:
        con.close()


def _generation(db, capsys):
    code, out, err = ragqual(db, ["generation", "--model", "mock", "--mode", "oracle", "--repeats", "2"], capsys)
    assert code == 0, err


def test_new_raw_outputs_hold_the_answer_once_and_old_ones_read_identically(project, capsys, monkeypatch):
    db = project / "eval-results" / "eval.db"
    with pytest.MonkeyPatch.context() as old:  # run 1: the history as the previous layout wrote it
        old.setattr("ragqual.subjects.rag.without_copy", _old_layout)
        _generation(db, capsys)
    _generation(db, capsys)  # run 2: the current layout, answered from the cache run 1 filled

    old_rows, new_rows = _trials(db, 1), _trials(db, 2)
    assert len(old_rows) == len(new_rows) == 2
    for (old_raw, old_parsed, _), (new_raw, new_parsed, hit) in zip(old_rows, new_rows):
        old_json, new_json = json.loads(old_raw), json.loads(new_raw)
        answer = new_parsed  # a text output is stored as it is
        assert ANSWER in answer and new_parsed == old_parsed
        assert old_raw.count(ANSWER) == 2 and new_raw.count(ANSWER) == 1  # the answer once
        assert "message" not in new_json and new_json["backend"]["message"]["content"] == answer
        assert {k: v for k, v in old_json.items() if k != "message"} == new_json  # nothing else changed
        assert hit == 1  # the cache entry run 1 wrote served run 2
    assert all(hit == 0 for *_, hit in old_rows[:1])

    engine = make_engine(f"sqlite:///{db}")
    try:  # every reader of the answer reads both layouts the same
        old_failures, new_failures = run_failure_trials(engine, 1), run_failure_trials(engine, 2)
        assert [t.answer for t in old_failures] == [t.answer for t in new_failures]
        assert all(ANSWER in t.answer for t in new_failures)
        assert list(run_answers(engine, 1).values()) == list(run_answers(engine, 2).values())
        assert replies.answer_in(trial_detail(engine, 1).raw_output) == replies.answer_in(
            trial_detail(engine, 3).raw_output)
    finally:
        engine.dispose()

    # rescore parses each stored raw output again: both layouts give the same scores
    for run in ("1", "2"):
        code, out, err = ragqual(db, ["rescore", run], capsys)
        assert code == 0, err
    con = sqlite3.connect(db)
    try:
        scores = con.execute("SELECT t.run_id, s.score, s.perfect FROM trial_scores s JOIN trials t "
                             "ON t.id = s.trial_id ORDER BY s.id").fetchall()
    finally:
        con.close()
    by_run = {r: [(s, p) for run, s, p in scores if run == r] for r in (1, 2)}
    assert by_run[1] == by_run[2] and len(by_run[1]) >= 2
    code, out, err = ragqual(db, ["verify"], capsys)
    assert code == 0, err + out
