"""Per-run summary rows (migration 0013): appended and sealed with a run's `finished` event, read by
`history` only while current, the same output as reading the rows, recomputed by `verify`."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert, text

from ragqual.cli.main import main
from ragqual.store import db, run_summaries, sealing
from ragqual.store.models import RunSummary
from ragqual.store.records import AssertionRow, ScoreRow
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify
from tests.store.conftest import execute_raw
from tests.store.helpers import add_trial, provenance

METRICS = ["--metric", "score", "--metric", "pass", "--metric", "correctness", "--metric", "recall@5",
           "--metric", "mrr", "--metric", "groundedness"]


def _cli(url, capsys, *args):
    with pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def _url(store: RunStore) -> str:
    return store.engine.url.render_as_string(hide_password=False)


def _generation(store: RunStore, *, modes=("e2e", "oracle"), cases=3, seed=0) -> int:
    """A generation run whose trials pass and fail unevenly, with a metric that is sometimes NULL."""
    run = store.start_run("generation", "rag", provenance())
    for n, mode in enumerate(modes):
        for case in range(cases):
            for repeat in range(2):
                k = seed + n * 7 + case * 3 + repeat
                passed = k % 3 != 0
                trial = add_trial(store, run, case=f"q{case}", repeat=repeat, mode=mode, passed=passed,
                                  score=1.0 if passed else round(0.1 * (k % 7), 3))
                store.append_metrics(run, [(trial, f"q{case}", mode, "groundedness",
                                            None if k % 4 == 0 else 0.1 * (k % 9), 1)])
    return run


def _retrieval(store: RunStore) -> int:
    run = store.start_run("retrieval", "rag", provenance())
    store.append_metrics(run, [(None, f"q{c}", strategy, metric, (c * 7 % 5) / 5 + i * 0.01, 1)
                               for c in range(4) for i, strategy in enumerate(("dense", "sparse"))
                               for metric in ("recall@5", "mrr")])
    return run


def _rescore(store: RunStore, run: int, version: int = 2) -> None:
    """Every trial of the run scored again (all wrong) at `version`, with its metric."""
    with store.engine.connect() as conn:
        trials = conn.execute(text("SELECT id, mode FROM trials WHERE run_id = :r ORDER BY id"), {"r": run}).all()
    for trial, mode in trials:
        store.append_rescoring(run, trial, "q0", mode, (AssertionRow("a1", 1, "correctness", 1.0, False),),
                               (ScoreRow("weighted-assertions", version, 0.25, False, {"correctness": 0.25}),),
                               {"correctness": 0.25}, version)


@pytest.fixture
def history(store_head_url):
    """Runs of every state: finished (generation, retrieval, empty), finished then rescored,
    interrupted then resumed and finished, finished then resumed without finishing, still running."""
    store = RunStore.open(store_head_url)
    runs = {}
    runs["finished"] = _generation(store)
    store.add_event(runs["finished"], "finished")
    runs["retrieval"] = _retrieval(store)
    store.add_event(runs["retrieval"], "finished")
    runs["rescored"] = _generation(store, seed=1)
    store.add_event(runs["rescored"], "finished")
    _rescore(store, runs["rescored"])
    runs["resumed"] = _generation(store, modes=("e2e",), seed=2)
    store.add_event(runs["resumed"], "interrupted")
    store.add_event(runs["resumed"], "resumed")
    add_trial(store, runs["resumed"], case="q9", mode="noretrieval", passed=False, score=0.5)
    store.add_event(runs["resumed"], "finished")
    runs["grown"] = _generation(store, modes=("oracle",), seed=3)
    store.add_event(runs["grown"], "finished")
    add_trial(store, runs["grown"], case="q8", mode="oracle", passed=False, score=0.0)
    runs["empty"] = store.start_run("generation", "rag", provenance())
    store.add_event(runs["empty"], "finished")
    runs["running"] = _generation(store, modes=("e2e",), seed=4)
    yield store, runs
    store.engine.dispose()


def _read_rows_only(monkeypatch) -> None:
    monkeypatch.setattr(run_summaries, "current", lambda conn, run_ids: {})


def test_a_finished_run_appends_one_summary_sealed_with_its_event(history):
    store, runs = history
    run = runs["finished"]
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT id, seal_id, scorer_name, body FROM run_summaries WHERE run_id = :r"),
                            {"r": run}).all()
        (row_id, seal_id, scorer, body), = rows
        event = conn.execute(text("SELECT id FROM run_events WHERE run_id = :r AND event = 'finished'"),
                             {"r": run}).scalar_one()
        seals = conn.execute(text("SELECT id, rows FROM seals WHERE run_id = :r ORDER BY id"), {"r": run}).all()
        assert body == run_summaries.body_of(conn, run, scorer)
    newest_id, newest_rows = seals[-1]
    sealed = json.loads(newest_rows)
    assert sealing.expand(sealed["run_summaries"]["ids"]) == [row_id]
    assert sealing.expand(sealed["run_events"]["ids"]) == [event]  # one seal: the event and its summary
    assert seal_id == seals[-2][0]  # the run's newest seal when it was computed
    assert scorer == "weighted-assertions"
    data = json.loads(body)
    assert [r[0] for r in data["scores"]] == ["e2e", "oracle"] and data["scores"][0][3] == 6
    assert {r[0] for r in data["metrics"]} == {"correctness", "groundedness"}


def test_only_current_summaries_are_read(history):
    """Stale after a rescore or trials appended after the finish; none while running; a resumed run
    that finished again has a current one (its second)."""
    store, runs = history
    with store.engine.connect() as conn:
        held = run_summaries.current(conn, list(runs.values()))
        stale = conn.execute(text("SELECT body FROM run_summaries WHERE run_id = :r"), {"r": runs["rescored"]}).scalar()
        assert stale != run_summaries.body_of(conn, runs["rescored"])  # reading it would show the old scores
    assert sorted(held) == sorted(runs[k] for k in ("finished", "retrieval", "resumed", "empty"))
    assert held[runs["empty"]].scores == () and held[runs["empty"]].metrics == ()


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_history_from_summaries_is_byte_identical_to_history_from_rows(history, monkeypatch, capsys, fmt):
    store, runs = history
    url = _url(store)
    means = run_summaries.history_means(store.engine, sorted(runs.values()), ["correctness"])
    assert set(means.from_summaries) == {runs[k] for k in ("finished", "retrieval", "resumed", "empty")}
    for args in (["history", "--limit", "0"], ["history", "--limit", "3"], ["history", "--limit", "0", *METRICS],
                 ["history", "--kind", "generation", "--limit", "0", "--scorer-version", "1"]):
        code, summarised, err = _cli(url, capsys, *args, "--format", fmt)
        assert code == 0, err
        with monkeypatch.context() as m:
            _read_rows_only(m)
            code, from_rows, err = _cli(url, capsys, *args, "--format", fmt)
        assert code == 0, err
        assert summarised == from_rows, args
    assert "0.25" in _cli(url, capsys, "history", "--limit", "0", "--format", "csv")[1]  # the rescore shows


def test_a_watermark_after_a_summary_makes_it_stale(history):
    store, runs = history
    with store.engine.begin() as conn:
        sealing.append_watermark(conn, ["metric_values"])
    with store.engine.connect() as conn:
        assert run_summaries.current(conn, list(runs.values())) == {}
    store.append_summary(runs["finished"])  # summarised again after the watermark: current again
    with store.engine.connect() as conn:
        assert list(run_summaries.current(conn, list(runs.values()))) == [runs["finished"]]


def test_verify_recomputes_the_summaries_and_passes(history):
    store, runs = history
    verdict = verify(store.engine)
    assert verdict.intact, verdict.findings
    assert verify(store.engine, [runs["finished"]]).intact


def _forge(store: RunStore, run: int) -> int:
    """A summary of `run` with a better score, appended with a seal that continues the chain as
    ragqual's own would (someone with write access and ragqual's code)."""
    with store.engine.connect() as conn:
        body = json.loads(run_summaries.body_of(conn, run))
    body["scores"] = [[mode, 1.0, 1.0, n] for mode, _, _, n in body["scores"]]
    held: dict[str, int] = {}

    def work(session):
        conn = session.connection()
        held["id"] = session.execute(insert(RunSummary).values(
            run_id=run, seal_id=run_summaries.newest_seal(conn, run), scorer_name="weighted-assertions",
            body=json.dumps(body), created_at=store.clock()).returning(RunSummary.id)).scalar_one()

    store._write(work, run)
    return held["id"]


def test_a_forged_summary_with_a_consistent_seal_is_named_by_verify(history, capsys):
    store, runs = history
    run = runs["finished"]
    forged = _forge(store, run)
    code, out, _ = _cli(_url(store), capsys, "history", "--limit", "0", "--format", "json")
    assert [r["score"] for r in json.loads(out) if r["run_id"] == run] == [1.0, 1.0]  # what readers would show
    verdict = verify(store.engine)
    assert [(f.kind, f.table, f.row_id) for f in verdict.findings] == [("summary", "run_summaries", forged)]
    assert f"run {run}'s summary differs from its rows" in verdict.findings[0].detail
    code, out, err = _cli(_url(store), capsys, "verify")
    assert code != 0 and f"run_summaries row {forged}: summary" in out


def test_a_summary_edited_with_the_triggers_dropped_is_named_by_verify(sqlite_url, capsys):
    store = RunStore.open(sqlite_url)
    run = _generation(store)
    store.add_event(run, "finished")
    with store.engine.connect() as conn:
        row_id, body = conn.execute(text("SELECT id, body FROM run_summaries WHERE run_id = :r"), {"r": run}).one()
    store.engine.dispose()
    data = json.loads(body)
    data["metrics"] = [[m, v, g, 0.99, n] for m, v, g, _, n in data["metrics"]]
    execute_raw(sqlite_url, "DROP TRIGGER run_summaries_append_only_update",
                f"UPDATE run_summaries SET body = '{json.dumps(data)}' WHERE id = {row_id}")
    verdict = verify(db.make_engine(sqlite_url))
    assert {(f.kind, f.row_id) for f in verdict.findings if f.table == "run_summaries"} == {
        ("edited", row_id), ("summary", row_id)}
    code, out, _ = _cli(sqlite_url, capsys, "verify", str(run))
    assert code != 0 and f"run {run}'s summary differs from its rows" in out


def test_a_0012_history_upgrades_reads_and_verifies(store_url, monkeypatch, capsys):
    """Runs written at 0012 have no summary and read from their rows after the upgrade; a run
    finished after it has one; both in one `history` call, the same as from rows; verify passes."""
    engine = db.make_engine(store_url)
    db.upgrade(engine, "0012")
    at_0012 = tuple(t for t in sealing.SEALED_TABLES if t != "run_summaries")
    real_high_water = sealing.high_water
    monkeypatch.setattr(sealing, "high_water", lambda session, tables=at_0012: real_high_water(session, tables))
    old_store = RunStore(engine)  # seals the tables a 0012 database has, as ragqual at 0012 did
    old = _generation(old_store)
    old_store.add_event(old, "finished")
    monkeypatch.undo()
    with engine.connect() as conn:
        assert "run_summaries" not in [r[0] for r in conn.execute(text(
            "SELECT table_name FROM seal_spans GROUP BY table_name")).all()]

    db.upgrade(engine)
    store = RunStore(engine)
    new = _generation(store, seed=5)
    store.add_event(new, "finished")
    means = run_summaries.history_means(engine, [old, new], ["correctness"])
    assert means.from_summaries == (new,)
    url = _url(store)
    code, summarised, err = _cli(url, capsys, "history", "--format", "csv")
    assert code == 0, err
    _read_rows_only(monkeypatch)
    assert _cli(url, capsys, "history", "--format", "csv")[1] == summarised
    verdict = verify(engine)
    assert verdict.intact, verdict.findings
    assert set(verdict.sealed_runs) >= {old, new}
    engine.dispose()


def test_the_worker_that_finishes_a_shared_run_appends_its_summary_once(store_head_url):
    store = RunStore.open(store_head_url)
    run = _generation(store, modes=("e2e",), cases=2)  # 4 trials
    assert not store.add_worker_event(run, "finished", None, slots=5)  # a slot is still missing
    assert store.add_worker_event(run, "finished", None, slots=4)
    assert not store.add_worker_event(run, "finished", None, slots=4)  # another worker: already finished
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM run_summaries WHERE run_id = :r"), {"r": run}).scalar() == 1
        assert list(run_summaries.current(conn, [run])) == [run]
    store.engine.dispose()


def test_summaries_compare_equal_to_the_last_bits_a_sum_order_can_change():
    body = json.dumps({"format": 1, "scores": [["e2e", 0.1 + 0.2, 0.5, 3]],
                       "metrics": [["m", 1, "e2e", float("nan"), 0]]})
    again = json.dumps({"format": 1, "scores": [["e2e", 0.3, 0.5, 3]], "metrics": [["m", 1, "e2e", float("nan"), 0]]})
    assert run_summaries.same_body(body, again)
    assert not run_summaries.same_body(body, again.replace("0.5", "0.5000001"))
    assert not run_summaries.same_body(body, again.replace(", 3]", ", 4]"))
    assert not run_summaries.same_body(body, again.replace('"e2e"', '"oracle"', 1))
