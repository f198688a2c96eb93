"""`ragqual verify` on both backends: intact history, tampered history, a pre-sealing history."""

from __future__ import annotations

import json

import pytest
from sqlalchemy.engine import make_url

from ragqual.cli.main import main
from ragqual.store import db
from ragqual.store.runstore import RunStore
from tests.store.conftest import execute_raw
from tests.store.helpers import add_trial, provenance


def ragqual(url: str, args, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


@pytest.fixture
def sentiment_run(store_url, tmp_path, monkeypatch, capsys):
    """A finished sentiment run through the real CLI, rescored once (rows appended later)."""
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = ragqual(store_url, ["run", "--subject", "sentiment", "--model", "mock", "--trial-count", "1"], capsys)
    assert code == 0, err
    code, out, err = ragqual(store_url, ["rescore", "1"], capsys)
    assert code == 0, err
    return store_url


def _tamper(url: str, score_id: int, trial_id: int) -> None:
    """Drop the guards, edit one score, delete one trial (and, on PostgreSQL, what refers to it)."""
    if make_url(url).get_backend_name() == "sqlite":
        execute_raw(url, "DROP TRIGGER trial_scores_append_only_update", "DROP TRIGGER trials_append_only_delete",
             f"UPDATE trial_scores SET score = 0.123 WHERE id = {score_id}",
             f"DELETE FROM trials WHERE id = {trial_id}")
        return
    children = ("assertion_results", "trial_scores", "metric_values", "trial_costs")
    execute_raw(url, *[f"DROP TRIGGER {t}_append_only ON {t}" for t in (*children, "trials")],
         f"UPDATE trial_scores SET score = 0.123 WHERE id = {score_id}",
         *[f"DELETE FROM {t} WHERE trial_id = {trial_id}" for t in children],
         f"DELETE FROM trials WHERE id = {trial_id}")


def test_fresh_history_verifies(sentiment_run, capsys):
    code, out, err = ragqual(sentiment_run, ["verify"], capsys)
    assert (code, err) == (0, "")
    assert "1 sealed run(s), 0 unsealed" in out
    head = out.strip().splitlines()[-1].removeprefix("head digest: ")
    assert len(head) == 64
    assert ragqual(sentiment_run, ["verify", "--expect", head], capsys)[0] == 0
    assert ragqual(sentiment_run, ["verify", "1"], capsys)[0] == 0


def test_edit_and_delete_are_named(sentiment_run, capsys):
    _tamper(sentiment_run, score_id=2, trial_id=3)
    code, out, err = ragqual(sentiment_run, ["verify"], capsys)
    assert code == 1
    assert "trial_scores row 2: edited" in out
    assert "trials row 3: deleted" in out
    assert "does not match its seals" in err


def test_rows_inserted_outside_ragqual_are_named(sentiment_run, capsys):
    execute_raw(sentiment_run, "INSERT INTO trial_scores (trial_id, batch, scorer_name, scorer_version, score, perfect, "
                        "per_category, created_at) SELECT trial_id, batch, scorer_name, 99, 1.0, perfect, per_category, "
                        "created_at FROM trial_scores WHERE id = 1")
    code, out, _ = ragqual(sentiment_run, ["--json", "verify"], capsys)
    findings = json.loads(out)["findings"]
    assert code == 1
    assert [(f["kind"], f["table"]) for f in findings] == [("inserted", "trial_scores")]


def test_a_rewritten_chain_fails_the_published_digest(sentiment_run, capsys):
    """Someone who edits a row and recomputes every seal passes `verify`, but not `--expect`."""
    code, out, _ = ragqual(sentiment_run, ["verify"], capsys)
    published = out.strip().splitlines()[-1].removeprefix("head digest: ")
    assert ragqual(sentiment_run, ["verify", "--expect", "f" * 64], capsys)[0] == 1
    assert ragqual(sentiment_run, ["verify", "--expect", published], capsys)[0] == 0


def test_swapped_rows_are_reported_as_reordered(store_head_url, capsys):
    if make_url(store_head_url).get_backend_name() != "sqlite":
        pytest.skip("swapping rows needs the triggers dropped; the SQLite case shows the report")
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    add_trial(store, run, score=1.0)
    add_trial(store, run, case="case-2", score=0.25, passed=False)
    store.engine.dispose()
    columns = ("trial_id", "batch", "scorer_name", "scorer_version", "score", "perfect", "per_category", "created_at")
    swap = ", ".join(f"{c} = (SELECT {c} FROM copy WHERE copy.id = 3 - trial_scores.id)" for c in columns)
    execute_raw(store_head_url, "DROP TRIGGER trial_scores_append_only_update",
         "CREATE TEMP TABLE copy AS SELECT * FROM trial_scores", f"UPDATE trial_scores SET {swap} WHERE id IN (1, 2)")
    code, out, _ = ragqual(store_head_url, ["verify"], capsys)
    assert code == 1
    assert "trial_scores row 1: re-ordered: holds what seal" in out and "recorded for row 2" in out


def _old_trial(store: RunStore, run_id: int) -> None:
    """A trial with the columns `trials` had at 0003 (later migrations add columns the live store writes)."""
    case_pk = store.record_case("rag", "case-1", "case-1", {"id": "case-1", "query": "q?"})
    variant = store.intern_variant("mock", "mock", "mock", {"temperature": 0})
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO trials (run_id, case_pk, variant_id, mode, repeat_index, raw_output, cache_hit, created_at) "
            f"VALUES ({run_id}, {case_pk}, {variant}, 'e2e', 0, 'answer', false, '2026-11-29 10:00:00')"
        )


def test_previous_schema_history_is_unsealed_not_tampered(store_url, capsys):
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0003")
    old = RunStore(engine, seal=False)  # writes exactly what ragqual wrote before sealing existed
    run = old.start_run("generation", "rag", provenance())
    _old_trial(old, run)
    old.add_event(run, "finished")
    db.upgrade(engine)
    engine.dispose()
    code, out, _ = ragqual(store_url, ["verify"], capsys)
    assert code == 0, out
    assert "0 sealed run(s), 1 unsealed" in out
    new = RunStore.open(store_url)  # a run after the upgrade is sealed; the old one stays unsealed
    add_trial(new, new.start_run("generation", "rag", provenance()))
    new.engine.dispose()
    code, out, _ = ragqual(store_url, ["verify"], capsys)
    assert code == 0, out
    assert "1 sealed run(s), 1 unsealed" in out


def test_db_current_notices_a_dropped_trigger(store_head_url, capsys):
    assert ragqual(store_head_url, ["db", "current"], capsys)[0] == 0
    dialect_sql = ("DROP TRIGGER trial_scores_append_only_update" if make_url(store_head_url).get_backend_name() == "sqlite"
                   else "DROP TRIGGER trial_scores_append_only ON trial_scores")
    execute_raw(store_head_url, dialect_sql)
    code, out, err = ragqual(store_head_url, ["db", "current"], capsys)
    assert code == 1
    assert "trial_scores_append_only" in err and "ragqual verify" in err
