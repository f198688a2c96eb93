"""`ragqual verify` checks the schema against what the migrations at head create, on both backends.

Each test tampers with the schema alone (no row touched) through a raw DB-API connection and
expects exit 1 with each object named, never a traceback.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy.engine import make_url

from ragqual.store import db, schema_check
from ragqual.store.runstore import RunStore
from tests.store.conftest import execute_raw, raw_connect
from tests.store.helpers import add_trial, provenance
from tests.store.test_upgrade_keeps_data import OldHistory, fill
from tests.store.test_verify import ragqual


def _sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _fetch(url: str, query: str) -> list[tuple]:
    con = raw_connect(url)
    try:
        return list(con.execute(query).fetchall())
    finally:
        con.close()


@pytest.fixture
def history(store_head_url) -> str:
    """Two scored trials of one run (scores 1.0 and 0.25), sealed."""
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run, score=1.0)
    add_trial(store, run, case="case-2", score=0.25, passed=False)
    store.add_event(run, "finished")
    store.engine.dispose()
    return store_head_url


def _findings(url: str, capsys) -> tuple[int, list[tuple[str, str, str]], str]:
    code, out, err = ragqual(url, ["--json", "verify"], capsys)
    assert "Traceback" not in out + err
    body = json.loads(out)
    return code, [(f["kind"], f["table"], f["detail"]) for f in body["findings"]], err


def _named(findings: list[tuple[str, str, str]], kind: str = "schema") -> set[str]:
    return {table for k, table, _ in findings if k == kind}


def test_an_untouched_history_passes_the_schema_check(history, capsys):
    code, findings, _ = _findings(history, capsys)
    assert (code, findings) == (0, [])


def test_a_redefined_view_is_named(history, capsys):
    """The forgery of the issue: v_trials shows every score as 1.0, no row touched."""
    if _sqlite(history):
        [(sql,)] = _fetch(history, "SELECT sql FROM sqlite_master WHERE name = 'v_trials'")
    else:
        [(body,)] = _fetch(history, "SELECT pg_get_viewdef('v_trials'::regclass)")
        sql = f"CREATE VIEW v_trials AS {body.rstrip().rstrip(';')}"
    assert "s.score," in sql
    execute_raw(history, "DROP VIEW v_trials", sql.replace("s.score,", "1.0 AS score,"))
    assert sorted(v for (v,) in _fetch(history, "SELECT score FROM v_trials")) == [1.0, 1.0]  # the forgery works
    code, findings, err = _findings(history, capsys)
    assert code == 1
    assert findings == [("schema", "view v_trials", "different from what the migrations at head create")]
    assert "does not match" in err


def test_a_dropped_trigger_is_named(history, capsys):
    trigger = "trial_scores_append_only_update" if _sqlite(history) else "trial_scores_append_only"
    execute_raw(history, f"DROP TRIGGER {trigger}" + ("" if _sqlite(history) else " ON trial_scores"))
    code, findings, _ = _findings(history, capsys)
    assert code == 1
    assert findings == [("schema", f"trigger {trigger}", "missing: the migrations at head create it")]


def test_a_disabled_trigger_is_named(history, capsys):
    if _sqlite(history):
        pytest.skip("SQLite cannot disable a trigger, only drop it")
    execute_raw(history, "ALTER TABLE trial_scores DISABLE TRIGGER trial_scores_append_only")
    code, findings, _ = _findings(history, capsys)
    assert code == 1
    assert _named(findings) == {"trigger trial_scores_append_only"}


def test_a_dropped_table_is_named_and_its_rows_skipped(history, capsys):
    """The table, and each index, trigger (and on PostgreSQL the view CASCADE took) that went with it."""
    indexes = {"ix_trial_scores_trial_id", "ix_trial_scores_trial_scorer", "ix_trial_scores_trial_version"}
    if _sqlite(history):
        execute_raw(history, "DROP TABLE trial_scores")
        triggers = {"trial_scores_append_only_update", "trial_scores_append_only_delete", "trial_scores_no_replace"}
        others = set()
    else:
        execute_raw(history, "DROP TABLE trial_scores CASCADE")
        triggers = {"trial_scores_append_only", "trial_scores_no_truncate"}
        indexes.add("trial_scores_pkey")
        others = {"sequence trial_scores_id_seq", "view v_trials"}
    code, findings, _ = _findings(history, capsys)
    assert code == 1
    assert _named(findings) == {"table trial_scores", *(f"index {i}" for i in indexes),
                                *(f"trigger {t}" for t in triggers), *others}
    assert {(k, t) for k, t, _ in findings if k != "schema"} == {("unchecked", "trial_scores")}


def test_a_dropped_column_is_named_and_its_table_skipped(history, capsys):
    if _sqlite(history):
        triggers = [n for (n,) in _fetch(history, "SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                                  "AND tbl_name = 'trial_scores'")]
        execute_raw(history, *[f"DROP TRIGGER {t}" for t in triggers], "ALTER TABLE trial_scores DROP COLUMN per_category")
    else:
        triggers = []
        execute_raw(history, "ALTER TABLE trial_scores DROP COLUMN per_category")
    code, findings, _ = _findings(history, capsys)
    assert code == 1
    assert _named(findings) == {"column trial_scores.per_category", *(f"trigger {t}" for t in triggers)}
    assert ("unchecked", "trial_scores") in {(k, t) for k, t, _ in findings}


def test_an_extra_index_and_table_are_named(history, capsys):
    execute_raw(history, "CREATE INDEX ix_forged ON trials (error)", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    code, findings, _ = _findings(history, capsys)
    assert code == 1
    primary_key = set() if _sqlite(history) else {"index notes_pkey"}  # SQLite's own index has no SQL
    assert _named(findings) == {"index ix_forged", "table notes", *primary_key}
    assert ("schema", "index ix_forged", "extra: no migration creates it") in findings


def test_the_text_report_names_each_object(history, capsys):
    execute_raw(history, "CREATE INDEX ix_forged ON trials (error)")
    code, out, err = ragqual(history, ["verify"], capsys)
    assert code == 1
    assert "index ix_forged: schema: extra: no migration creates it" in out
    assert "Traceback" not in out + err


def test_a_history_upgraded_from_the_first_revision_matches_a_fresh_one(store_url, capsys):
    """Old rows written at 0001, then every migration one at a time: the schema equals head's."""
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0001")
    fill(OldHistory(engine))
    while db.current_revision(engine) != db.script_head_revision():
        db.upgrade(engine, "+1")
    differences, _ = schema_check.check_schema(engine)
    engine.dispose()
    assert differences == []
    code, findings, _ = _findings(store_url, capsys)
    assert [f for f in findings if f[0] in ("schema", "unchecked")] == []


def test_a_dropped_seals_table_leaves_nothing_checkable_but_no_traceback(history, capsys):
    execute_raw(history, "DROP TABLE seals" + ("" if _sqlite(history) else " CASCADE"))
    code, findings, _ = _findings(history, capsys)
    assert code == 1
    assert "table seals" in _named(findings)
    assert ("unchecked", "seals") in {(k, t) for k, t, _ in findings}


def test_a_neutralised_guard_function_is_named(history, capsys):
    """PostgreSQL: the triggers stay, the function they call lets every change through."""
    if _sqlite(history):
        pytest.skip("SQLite triggers carry their own body; the trigger tests cover it")
    execute_raw(history, "CREATE OR REPLACE FUNCTION ragqual_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
                  "BEGIN IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $$",
         "UPDATE trial_scores SET score = score WHERE id = 1")  # the guard no longer refuses
    code, findings, _ = _findings(history, capsys)
    assert code == 1
    assert _named(findings) == {"function ragqual_refuse_change()"}
