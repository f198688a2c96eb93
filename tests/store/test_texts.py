"""Texts stored once (migration 0012): a trial's long prompt, context and outputs go into `texts`
by sha256, trials name them; old histories keep their inline text and read back the same."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from ragqual.cli.main import main
from ragqual.core.hashing import sha256_hex
from ragqual.store import db, queries, sealing, texts
from ragqual.store.failure_reads import run_failure_trials
from ragqual.store.records import AssertionRow, ScoreRow, TrialRecord
from ragqual.store.runstore import RunStore
from ragqual.store.trial_reads import run_answers, run_trials, trial_detail
from ragqual.store.verify import verify
from tests.store.conftest import raw_connect
from tests.store.helpers import provenance

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHUNKS = ["# Adult CPR\n\nPush hard and fast in the centre of the chest, 100 to 120 a minute.",
          "# Hypothermia\n\nMove the person to a warm, dry place and remove wet clothing."]
CONTEXT = "\n\n".join(CHUNKS)
ANSWER = "Push hard and fast in the centre of the chest, 100 to 120 compressions a minute [1]."


def _record(run_id: int, case_pk: int, variant: int, mode: str, repeat: int) -> TrialRecord:
    context = CONTEXT if mode != "noretrieval" else None
    answer = ANSWER if mode != "noretrieval" else "I don't know."
    return TrialRecord(
        run_id=run_id, case_pk=case_pk, variant_id=variant, mode=mode, repeat_index=repeat, system_prompt_id=None,
        rendered_prompt=[{"role": "system", "content": "Answer from the context only."},
                         {"role": "user", "content": f"<<<CONTEXT\n{context or ''}\nCONTEXT>>>\nHow fast is CPR?"}],
        context=context, raw_output={"message": {"role": "assistant", "content": answer}, "injected": ["cpr#0"]},
        parsed_output=answer, error=None, prompt_tokens=50, completion_tokens=20, latency_ms=3.0, load_ms=None,
        cost=None, cache_key="c" * 64, cache_hit=repeat > 0,
        assertions=(AssertionRow("a1", 1, "correctness", 1.0, True),),
        scores=(ScoreRow("weighted-assertions", 1, 1.0, True, {"correctness": 1.0}),),
        metrics={"correctness": 1.0}, case_id="cpr-rate",
    )


def _write_run(store: RunStore) -> int:
    run = store.start_run("generation", "rag", provenance())
    case_pk = store.record_case("rag", "cpr-rate", "cpr-rate", {"id": "cpr-rate", "input": {"query": "How fast?"}})
    variant = store.intern_variant("mock", "mock", "mock", {"temperature": 0})
    for mode in ("oracle", "e2e", "noretrieval"):
        for repeat in range(3):
            store.append_trial(_record(run, case_pk, variant, mode, repeat))
    store.add_event(run, "finished")
    return run


def _reads(engine, run: int) -> dict:
    """Everything the readers of trial texts give back, without ids and times."""
    stored = [dataclasses.replace(t, trial_id=0) for t in run_trials(engine, run)]
    details = [dataclasses.asdict(trial_detail(engine, t.trial_id)) for t in run_trials(engine, run)]
    for d in details:
        for key in ("trial_id", "run_id", "created_at"):
            d.pop(key)
    failures = [dataclasses.replace(f, trial_id=0) for f in run_failure_trials(engine, run)]
    with engine.connect() as conn:
        view = conn.execute(text("SELECT mode, repeat_index, rendered_prompt, context, raw_output, parsed_output "
                                 "FROM v_trial_texts WHERE run_id = :run ORDER BY trial_id"), {"run": run}).all()
    return {"trials": stored, "details": details, "answers": sorted(map(str, run_answers(engine, run).values())),
            "failures": failures, "view": [tuple(r) for r in view]}


def _exported(engine, run: int):
    """`ragqual export`'s trial rows (v_trials) without ids and times."""
    frame = queries.export_trials(engine, run)
    return frame.drop(columns=[c for c in ("trial_id", "run_id", "run_started_at", "created_at") if c in frame])


def _stored_in(engine, run: int) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(text("SELECT stored_in FROM v_trial_texts WHERE run_id = :run"), {"run": run}).scalars())


def _count(engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one())


# -- pure ------------------------------------------------------------------------------------------

def test_a_long_text_goes_by_hash_and_a_short_one_stays_inline():
    long = "x" * (texts.INLINE_MAX + 1)
    columns, bodies = texts.split({"context": long, "parsed_output": "short", "raw_output": None,
                                   "rendered_prompt": "y" * texts.INLINE_MAX})
    assert columns == {"context_sha256": sha256_hex(long), "parsed_output": "short", "raw_output": None,
                       "rendered_prompt": "y" * texts.INLINE_MAX}
    assert bodies == {sha256_hex(long): long}


# -- the store ---------------------------------------------------------------------------------------

def test_the_same_text_in_many_trials_is_stored_once(store_head_url):
    store = RunStore.open(store_head_url)
    run = _write_run(store)
    again = _write_run(store)  # a second run: every text already stored
    engine = store.engine
    # distinct long texts: 2 prompts (with and without context), the context, 2 raw outputs, the answer
    assert _count(engine, "texts") == 6
    assert _count(engine, "trials") == 18
    with engine.connect() as conn:
        inline = conn.execute(text("SELECT COUNT(*) FROM trials WHERE context IS NOT NULL OR raw_output IS NOT NULL "
                                   "OR rendered_prompt IS NOT NULL")).scalar_one()
    assert inline == 0
    assert _stored_in(engine, run) == _stored_in(engine, again) == {"texts"}
    detail = trial_detail(engine, run_trials(engine, run)[3].trial_id)
    assert (detail.mode, detail.context, detail.parsed_output) == ("e2e", CONTEXT, ANSWER)
    assert detail.raw_output == {"message": {"role": "assistant", "content": ANSWER}, "injected": ["cpr#0"]}
    assert _reads(engine, run) == _reads(engine, again)
    assert verify(engine).intact


def test_an_0011_history_upgrades_verifies_and_reads_the_same_as_a_new_run(store_url, monkeypatch):
    """A run written by ragqual at 0011 (texts inline) reads back the same after the upgrade, and
    the same trials written at head (texts by hash) read back identically; verify passes."""
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0011")
    at_0011 = tuple(t for t in sealing.SEALED_TABLES if t not in ("texts", "run_summaries"))
    real_high_water = sealing.high_water
    monkeypatch.setattr(sealing, "high_water", lambda session, tables=at_0011: real_high_water(session, tables))
    real_columns = sealing.columns
    new_columns = {texts.hash_column(c) for c in texts.TEXT_COLUMNS}
    monkeypatch.setattr(sealing, "columns", lambda table: [c for c in real_columns(table)
                                                            if table != "trials" or c not in new_columns])
    old = _write_run(RunStore(engine))  # seals the tables a 0011 database has, as ragqual at 0011 did
    monkeypatch.undo()
    with engine.connect() as conn:
        before = conn.execute(text("SELECT * FROM trials ORDER BY id")).all()
    with engine.connect() as conn:
        old_view = conn.execute(text("SELECT run_id, COUNT(*) FROM v_trials GROUP BY run_id")).all()

    db.upgrade(engine)
    with engine.connect() as conn:
        after = conn.execute(text(f"SELECT {', '.join(before[0]._fields)} FROM trials ORDER BY id")).all()
        assert conn.execute(text("SELECT run_id, COUNT(*) FROM v_trials GROUP BY run_id")).all() == old_view
    assert after == before  # every old row as it was, its text inline
    new = _write_run(RunStore(engine))
    assert _stored_in(engine, old) == {"inline"} and _stored_in(engine, new) == {"texts"}
    assert _reads(engine, old) == _reads(engine, new)
    assert _reads(engine, old)["details"][3]["context"] == CONTEXT
    assert _exported(engine, old).equals(_exported(engine, new))
    verdict = verify(engine)
    assert verdict.intact, verdict.findings
    assert set(verdict.sealed_runs) >= {old, new}


def _drop_update_guard(url: str) -> str:
    if make_url(url).get_backend_name() == "sqlite":
        return "DROP TRIGGER texts_append_only_update"
    return "DROP TRIGGER texts_append_only ON texts"


def _ragqual(url: str, args, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def test_a_text_edited_outside_ragqual_is_named_by_verify(store_head_url, capsys):
    store = RunStore.open(store_head_url)
    run = _write_run(store)
    store.engine.dispose()
    assert _ragqual(store_head_url, ["verify"], capsys)[0] == 0
    digest = sha256_hex(CONTEXT)
    con = raw_connect(store_head_url)
    row_id = con.execute(f"SELECT id FROM texts WHERE sha256 = '{digest}'").fetchone()[0]
    con.execute(_drop_update_guard(store_head_url))
    con.execute(f"UPDATE texts SET body = REPLACE(body, '100 to 120', '60 to 80') WHERE id = {row_id}")
    con.commit()
    con.close()
    engine = db.make_engine(store_head_url)
    assert "60 to 80" in trial_detail(engine, run_trials(engine, run)[0].trial_id).context  # what a reader would see
    engine.dispose()
    code, out, err = _ragqual(store_head_url, ["verify"], capsys)
    assert code == 1
    assert f"texts row {row_id}: edited" in out
    assert "does not match its seals" in err


def test_a_text_row_is_append_only(store_head_url):
    store = RunStore.open(store_head_url)
    _write_run(store)
    store.engine.dispose()
    for statement in ("UPDATE texts SET body = 'x'", "DELETE FROM texts",
                      "INSERT INTO texts (sha256, body) SELECT sha256, 'forged' FROM texts LIMIT 1"):
        con = raw_connect(store_head_url)
        try:
            with pytest.raises(Exception) as refused:
                con.execute(statement)
                con.commit()
            assert "append-only" in str(refused.value) or "unique" in str(refused.value).lower()
        finally:
            con.close()


def _report(url: str, run: int, fmt: str, capsys) -> str:
    code, out, _ = _ragqual(url, ["report", str(run), "--format", fmt], capsys)
    assert code == 0
    return re.sub(r"[0-9a-f]{64}", "<digest>", out)  # seal heads differ: the rows they seal do


def test_a_run_stored_inline_and_upgraded_reports_like_the_same_run_stored_by_hash(tmp_path, monkeypatch, capsys):
    """`ragqual report` (json, markdown and the html page with every question's context and answers)
    of a run written at 0011 and upgraded equals that of the same run written at head, digests aside."""
    old_url, new_url = f"sqlite:///{tmp_path / 'old.db'}", f"sqlite:///{tmp_path / 'new.db'}"
    old_engine = db.make_engine(old_url)
    db.upgrade(old_engine, "0011")
    at_0011 = tuple(t for t in sealing.SEALED_TABLES if t not in ("texts", "run_summaries"))
    real_high_water, real_columns = sealing.high_water, sealing.columns
    new_columns = {texts.hash_column(c) for c in texts.TEXT_COLUMNS}
    monkeypatch.setattr(sealing, "high_water", lambda session, tables=at_0011: real_high_water(session, tables))
    monkeypatch.setattr(sealing, "columns", lambda table: [c for c in real_columns(table)
                                                            if table != "trials" or c not in new_columns])
    old = _write_run(RunStore(old_engine, clock=lambda: T0))
    monkeypatch.undo()
    db.upgrade(old_engine)
    old_engine.dispose()
    new = _write_run(RunStore.open(new_url, clock=lambda: T0))
    assert _stored_in(db.make_engine(old_url), old) == {"inline"}
    assert _stored_in(db.make_engine(new_url), new) == {"texts"}
    for fmt in ("json", "markdown", "html"):
        assert _report(old_url, old, fmt, capsys) == _report(new_url, new, fmt, capsys), fmt
    assert CONTEXT.split("\n")[0] in _report(new_url, new, "html", capsys)
