"""Human labels in the history on both backends: appended, read newest-first, append-only, sealed,
and covered by `ragqual verify` (tampering through the raw driver is named)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import make_url

from ragqual.errors import InputError
from ragqual.store.labels import LabelRow, append_labels, current_labels, label_history, labeller_progress
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify
from tests.store.conftest import dbapi_error, execute_raw, raw_connect
from tests.store.helpers import add_trial, provenance

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def labelled(store_head_url):
    """A finished run of two trials, then labels appended afterwards (as `ragqual label` does)."""
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    t1, t2 = add_trial(store, run, case="c1"), add_trial(store, run, case="c2", passed=False, score=0.0)
    store.add_event(run, "finished")
    ids = append_labels(store, [
        LabelRow(run, t1, "faithfulness", "yes", "ann", T0, "tui"),
        LabelRow(run, t1, "relevance", "yes", "ann", T0, "tui", sample_seed=7, sample_size=2),
        LabelRow(run, t2, "faithfulness", "no", "ann", T0, "tui", note="invents a dose"),
        LabelRow(run, t1, "faithfulness", "no", "bob", T0, "import:abc"),
    ])
    ids += append_labels(store, [LabelRow(run, t1, "faithfulness", "unsure", "ann", T0 + timedelta(minutes=1), "tui")])
    yield store, run, (t1, t2), ids
    store.engine.dispose()


def test_current_labels_take_the_newest_row_per_trial_criterion_and_labeller(labelled):
    store, run, (t1, t2), ids = labelled
    current = {(r.trial_id, r.criterion, r.labeller): (r.verdict, r.id) for r in current_labels(store.engine, run)}
    assert current == {(t1, "faithfulness", "ann"): ("unsure", ids[4]), (t1, "faithfulness", "bob"): ("no", ids[3]),
                       (t1, "relevance", "ann"): ("yes", ids[1]), (t2, "faithfulness", "ann"): ("no", ids[2])}
    assert [r.verdict for r in current_labels(store.engine, run, "relevance")] == ["yes"]
    assert len(label_history(store.engine, run)) == 5  # the corrected row is kept
    verdicts, notes = labeller_progress(store.engine, run, "ann")
    assert verdicts == {t1: {"faithfulness": "unsure", "relevance": "yes"}, t2: {"faithfulness": "no"}}
    assert notes == {t2: "invents a dose"}
    row = next(r for r in current_labels(store.engine, run) if r.criterion == "relevance")
    assert (row.sample_seed, row.sample_size, row.labelled_at, row.source) == (7, 2, T0, "tui")


def test_a_bad_row_writes_nothing(labelled):
    store, run, (t1, _), _ = labelled
    other = store.start_run("generation", "rag", provenance())
    foreign = add_trial(store, other, case="c9")
    before = len(label_history(store.engine, run))
    with pytest.raises(InputError, match=f"trial {foreign} is not a trial of run {run}"):
        append_labels(store, [LabelRow(run, t1, "relevance", "no", "ann", T0, "tui"),
                              LabelRow(run, foreign, "relevance", "no", "ann", T0, "tui")])
    with pytest.raises(InputError, match="unknown verdict 'maybe'"):
        append_labels(store, [LabelRow(run, t1, "relevance", "maybe", "ann", T0, "tui")])
    with pytest.raises(InputError, match="unknown criterion"):
        append_labels(store, [LabelRow(run, t1, "helpfulness", "yes", "ann", T0, "tui")])
    assert len(label_history(store.engine, run)) == before


def test_labels_are_sealed_with_their_run_and_verify_clean(labelled):
    store, run, _, _ = labelled
    verdict = verify(store.engine)
    assert verdict.intact, [str(f) for f in verdict.findings]
    assert verify(store.engine, [run]).intact


@pytest.mark.parametrize("statement", ["UPDATE labels SET verdict = 'yes'", "DELETE FROM labels"])
def test_raw_update_and_delete_are_refused(labelled, statement):
    store, run, _, ids = labelled
    with pytest.raises(dbapi_error(_url(store)), match="labels is append-only history"):
        execute_raw(_url(store), statement)
    assert len(label_history(store.engine, run)) == len(ids)


def _url(store: RunStore) -> str:
    return store.engine.url.render_as_string(hide_password=False)


def test_sqlite_refuses_an_insert_over_an_existing_label(labelled):
    store, run, (t1, _), ids = labelled
    if store.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL has no REPLACE; its upserts fire the UPDATE trigger")
    with pytest.raises(dbapi_error(_url(store)), match="an INSERT over an existing row"):
        execute_raw(_url(store), f"INSERT OR REPLACE INTO labels (id, run_id, trial_id, criterion, verdict, labeller, "
                                 f"labelled_at, source) VALUES ({ids[0]}, {run}, {t1}, 'relevance', 'no', 'eve', "
                                 "'2026-12-01 00:00:00', 'tui')")


def test_postgres_refuses_truncate_and_upsert(labelled):
    store, run, (t1, _), ids = labelled
    if store.engine.dialect.name != "postgresql":
        pytest.skip("TRUNCATE and ON CONFLICT are PostgreSQL's")
    for statement in ("TRUNCATE labels CASCADE",
                      f"INSERT INTO labels (id, run_id, trial_id, criterion, verdict, labeller, labelled_at, source) "
                      f"VALUES ({ids[0]}, {run}, {t1}, 'relevance', 'no', 'eve', now(), 'tui') "
                      "ON CONFLICT (id) DO UPDATE SET verdict = 'no'"):
        with pytest.raises(dbapi_error(_url(store)), match="labels is append-only history"):
            execute_raw(_url(store), statement)
    assert len(label_history(store.engine, run)) == len(ids)


def test_a_forged_label_is_never_read_and_verify_names_it(labelled):
    store, run, (t1, _), _ = labelled
    now = "'2026-12-02 00:00:00'" if store.engine.dialect.name == "sqlite" else "now()"
    execute_raw(_url(store), f"INSERT INTO labels (run_id, trial_id, criterion, verdict, labeller, labelled_at, source) "
                             f"VALUES ({run}, {t1}, 'faithfulness', 'yes', 'ann', {now}, 'tui')")
    current = {(r.trial_id, r.criterion, r.labeller): r.verdict for r in current_labels(store.engine, run)}
    assert current[(t1, "faithfulness", "ann")] == "unsure"
    assert [(f.kind, f.table) for f in verify(store.engine).findings] == [("inserted", "labels")]
    assert [(f.kind, f.table) for f in verify(store.engine, [run]).findings] == [("inserted", "labels")]
    con = raw_connect(_url(store))
    try:
        rows = con.execute("SELECT verdict FROM v_labels WHERE is_current = 1 AND labeller = 'ann' "
                           f"AND trial_id = {t1} AND criterion = 'faithfulness'").fetchall()
    finally:
        con.close()
    assert rows == [("unsure",)]


def test_an_edited_label_is_named_by_verify(labelled):
    store, _, _, ids = labelled
    if make_url(_url(store)).get_backend_name() == "sqlite":
        execute_raw(_url(store), "DROP TRIGGER labels_append_only_update",
                    f"UPDATE labels SET verdict = 'yes' WHERE id = {ids[2]}")
    else:
        execute_raw(_url(store), "ALTER TABLE labels DISABLE TRIGGER labels_append_only",
                    f"UPDATE labels SET verdict = 'yes' WHERE id = {ids[2]}")
    found = [(f.kind, f.table, f.row_id) for f in verify(store.engine).findings if f.kind != "schema"]
    assert found == [("edited", "labels", ids[2])]
