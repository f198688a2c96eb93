"""Prices in the history, on both backends: a run's snapshot and cost rows, re-pricing appends and
never rewrites, the guards and seals cover the new rows, a pinned snapshot is read as asked."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from ragqual.core.pricing import price_list_from_text
from ragqual.engine.pricing import price_run
from ragqual.store.cost_reads import cost_history, resolve_snapshot, run_snapshots, trial_costs
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify
from tests.store.conftest import dbapi_error, execute_raw, raw_connect
from tests.store.helpers import add_trial, provenance

OLD = 'currency = "USD"\ndate = 2026-11-01\n[[model]]\nmatch = "mock*"\ninput = 1.0\noutput = 2.0\n'
NEW = 'currency = "EUR"\ndate = 2026-12-01\n[[model]]\nmatch = "mock:mock"\ninput = 3.0\noutput = 10.0\n'
NONE = 'currency = "USD"\ndate = 2026-12-01\n[[model]]\nmatch = "openai:*"\ninput = 3.0\noutput = 10.0\n'
# add_trial: 10 prompt tokens, 3 completion tokens, model URI "mock:mock" (its config has no uri)
OLD_COST = (10 * 1.0 + 3 * 2.0) / 1e6
NEW_COST = (10 * 3.0 + 3 * 10.0) / 1e6


@pytest.fixture
def priced(store_head_url):
    """A run of two trials priced with OLD; yields (url, run id, trial ids, snapshot id)."""
    store = RunStore.open(store_head_url)
    run = store.start_run("subject", "rag", provenance())
    trials = [add_trial(store, run), add_trial(store, run, case="case-2", passed=False, score=0.0)]
    first = price_run(store, run, price_list_from_text(OLD, "old.toml"))
    store.add_event(run, "finished")
    store.engine.dispose()
    return store_head_url, run, trials, first.snapshot_id


def _rows(url: str, table: str) -> list[tuple]:
    con = raw_connect(url)
    try:
        return [tuple(r) for r in con.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()]
    finally:
        con.close()


def test_a_run_records_its_snapshot_and_one_cost_row_per_trial(priced):
    url, run, trials, snap = priced
    store = RunStore.open(url)
    assert run_snapshots(store.engine, run) == [(snap, run_snapshots(store.engine, run)[0][1], 2)]
    costs = trial_costs(store.engine, run)
    assert {t: (c.cost, c.currency, c.snapshot_id) for t, c in costs.items()} == {
        trials[0]: (pytest.approx(OLD_COST), "USD", snap), trials[1]: (pytest.approx(OLD_COST), "USD", snap)}


def test_reprice_appends_under_a_new_snapshot_and_never_rewrites(priced):
    url, run, trials, old = priced
    before = {t: _rows(url, t) for t in ("trial_costs", "pricing_snapshots", "trials")}
    store = RunStore.open(url)
    result = price_run(store, run, price_list_from_text(NEW, "new.toml"))
    assert (result.appended, result.priced) == (2, 2) and result.snapshot_id != old
    after = {t: _rows(url, t) for t in before}
    for table, rows in before.items():
        assert after[table][:len(rows)] == rows  # every earlier row exactly as it was
    assert len(after["trial_costs"]) == 4 and len(after["pricing_snapshots"]) == 2
    newest = trial_costs(store.engine, run)
    assert [(c.cost, c.currency) for c in newest.values()] == [(pytest.approx(NEW_COST), "EUR")] * 2
    pinned = trial_costs(store.engine, run, old)
    assert [(c.cost, c.currency) for c in pinned.values()] == [(pytest.approx(OLD_COST), "USD")] * 2
    assert [(h.snapshot_id, h.currency) for h in cost_history(store.engine, trials[0])] == [
        (old, "USD"), (result.snapshot_id, "EUR")]
    assert verify(store.engine).intact


def test_the_same_list_twice_appends_nothing_and_an_older_list_again_becomes_newest(priced):
    url, run, trials, old = priced
    store = RunStore.open(url)
    assert price_run(store, run, price_list_from_text(OLD, "again.toml")).appended == 0
    price_run(store, run, price_list_from_text(NEW, "new.toml"))
    back = price_run(store, run, price_list_from_text(OLD, "old.toml"))
    assert (back.snapshot_id, back.appended) == (old, 2)  # one snapshot row per distinct list
    assert {c.currency for c in trial_costs(store.engine, run).values()} == {"USD"}
    assert len(_rows(url, "trial_costs")) == 6


def test_an_unpriced_model_has_no_cost_never_zero(priced):
    url, run, trials, _ = priced
    store = RunStore.open(url)
    result = price_run(store, run, price_list_from_text(NONE, "none.toml"))
    assert (result.appended, result.priced) == (2, 0)
    assert {(c.cost, c.currency) for c in trial_costs(store.engine, run).values()} == {(None, None)}


def test_a_snapshot_is_found_by_id_or_hash_prefix(priced):
    url, run, _, snap = priced
    engine = RunStore.open(url).engine
    sha = run_snapshots(engine, run)[0][1]
    assert resolve_snapshot(engine, str(snap)) == snap
    assert resolve_snapshot(engine, sha[:8]) == snap
    with pytest.raises(Exception, match="no pricing snapshot"):
        resolve_snapshot(engine, "ffffffffff")


def test_raw_update_and_delete_of_prices_are_refused(priced):
    url, *_ = priced
    error = dbapi_error(url)
    for statement in ("UPDATE trial_costs SET cost = 0", "DELETE FROM trial_costs",
                      "UPDATE pricing_snapshots SET body = '{}'", "DELETE FROM pricing_snapshots"):
        with pytest.raises(error, match="append-only|refused"):
            execute_raw(url, statement)
    assert len(_rows(url, "trial_costs")) == 2


def test_verify_names_a_tampered_cost_row(priced):
    url, run, trials, _ = priced
    if make_url(url).get_backend_name() == "sqlite":
        execute_raw(url, "DROP TRIGGER trial_costs_append_only_update", "UPDATE trial_costs SET cost = 0.0 WHERE id = 1")
    else:
        execute_raw(url, "DROP TRIGGER trial_costs_append_only ON trial_costs",
                    "UPDATE trial_costs SET cost = 0.0 WHERE id = 1")
    verdict = verify(RunStore.open(url).engine)
    rows = [(f.kind, f.table, f.row_id) for f in verdict.findings if f.kind != "schema"]  # the dropped trigger
    assert rows == [("edited", "trial_costs", 1)]


def test_a_cost_row_inserted_outside_ragqual_is_not_read(priced):
    url, run, trials, snap = priced
    execute_raw(url, "INSERT INTO trial_costs (trial_id, snapshot_id, cost, currency, created_at) "
                     f"VALUES ({trials[0]}, {snap}, 99.0, 'USD', '2026-12-02 00:00:00')")
    engine = RunStore.open(url).engine
    assert trial_costs(engine, run)[trials[0]].cost == pytest.approx(OLD_COST)
    assert [(f.kind, f.table) for f in verify(engine).findings] == [("inserted", "trial_costs")]


def test_run_reprice_and_pinned_report_through_the_cli(store_url, tmp_path, monkeypatch, capsys):
    """The commands on this backend: a run priced by the project's pricing.toml, a reprice, the
    report reading the newest and the pinned snapshot, and verify after the reprice."""
    from ragqual.cli.main import main

    def ragqual(*args: str) -> str:
        with pytest.raises(SystemExit) as caught:
            main(["--db", store_url, *args])
        out, err = capsys.readouterr()
        assert caught.value.code == 0, err
        return out

    def cost_cells(out: str) -> list[str]:
        return out[out.index("cost per variant"):].splitlines()[2].split()

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGQUAL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "pricing.toml").write_text(OLD.replace('"mock*"', '"mock"'), encoding="utf-8")
    (tmp_path / "new.toml").write_text(NEW.replace('"mock:mock"', '"mock"'), encoding="utf-8")
    ragqual("run", "--subject", "sentiment", "--model", "mock", "--trial-count", "1")
    assert cost_cells(ragqual("report", "1"))[-1] == "USD"
    assert "priced 15 of 15 trial(s) under snapshot 2" in ragqual("reprice", "1", "--pricing", "new.toml")
    assert cost_cells(ragqual("report", "1"))[-1] == "EUR"
    assert cost_cells(ragqual("report", "1", "--pricing-snapshot", "1"))[-1] == "USD"
    assert "0 unsealed" in ragqual("verify")
