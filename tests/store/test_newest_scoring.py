"""A rescoring's rows replace the older ones in every reader (report, history, compare, matrix),
on SQLite and PostgreSQL; `--scorer-version` pins an older version; no row is ever changed."""

import json

import pytest

from ragqual.cli.main import main
from ragqual.store import queries
from ragqual.store.generation_reads import mode_lines
from ragqual.store.records import AssertionRow, ScoreRow
from ragqual.store.runstore import RunStore
from tests.store.helpers import add_trial, provenance


def _cli(url, capsys, *args):
    with pytest.raises(SystemExit) as caught:
        main(["--db", url, *args])
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def _rescore(store, run_id, trial_id, correct: float, version: int) -> None:
    score = ScoreRow("weighted-assertions", version, correct, correct == 1.0, {"correctness": correct})
    store.append_rescoring(run_id, trial_id, "q1", "e2e", (AssertionRow("a1", 1, "correctness", 1.0, correct == 1.0),),
                           (score,), {"correctness": correct}, version)


@pytest.fixture
def rescored(store_head_url):
    """Two trials of one run, correct when first scored (v1); rescored at v1 (now wrong), then a v2 scoring."""
    store = RunStore.open(store_head_url)
    run = store.start_run("generation", "rag", provenance())
    t1 = add_trial(store, run, case="q1", repeat=0)
    t2 = add_trial(store, run, case="q1", repeat=1)
    store.add_event(run, "finished")
    first = queries.metric_rows(store.engine, run)
    for trial in (t1, t2):
        _rescore(store, run, trial, 0.0, 1)
    yield store, run, (t1, t2), first
    store.engine.dispose()


def test_a_same_version_rescoring_replaces_the_metrics_everywhere(rescored, capsys):
    store, run, trials, first = rescored
    assert [r[4] for r in first] == [1.0, 1.0]
    assert [(r[0], r[4]) for r in queries.metric_rows(store.engine, run)] == [(trials[0], 0.0), (trials[1], 0.0)]
    means = queries.metric_means(store.engine, [run], ["correctness"])
    assert means[["mean", "n"]].values.tolist() == [[0.0, 2]]
    (line,) = mode_lines(store.engine, run)
    assert (line.correctness, line.pass_rate) == (0.0, 0.0)
    url = store.engine.url.render_as_string(hide_password=False)
    code, out, _ = _cli(url, capsys, "report", str(run), "--format", "json")
    assert code == 0 and json.loads(out)["groups"][0]["correctness"] == 0.0
    code, out, _ = _cli(url, capsys, "history", "--format", "json")
    assert code == 0 and json.loads(out)[0]["correctness"] == 0.0
    code, out, _ = _cli(url, capsys, "--json", "matrix", "--run", str(run))
    assert code == 0 and json.loads(out)["lines"][0]["correctness"] == 0.0
    with store.engine.connect() as conn:  # the first rows are still there, untouched
        rows = conn.exec_driver_sql("SELECT value FROM metric_values WHERE run_id = %s ORDER BY id" % run).scalars().all()
    assert rows == [1.0, 1.0, 0.0, 0.0]


def test_a_newer_version_wins_and_the_old_one_can_be_pinned(rescored, capsys):
    store, run, trials, _ = rescored
    for trial in trials:
        _rescore(store, run, trial, 1.0, 2)
    assert [r[4] for r in queries.metric_rows(store.engine, run)] == [1.0, 1.0]
    assert [r[4] for r in queries.metric_rows(store.engine, run, scorer_version=1)] == [0.0, 0.0]
    assert queries.metric_means(store.engine, [run], ["correctness"], 1)["mean"].tolist() == [0.0]
    assert queries.score_means(store.engine, [run], scorer_version=1)["score"].tolist() == [0.0]
    assert queries.score_means(store.engine, [run])["score"].tolist() == [1.0]
    assert mode_lines(store.engine, run, scorer_version=1)[0].correctness == 0.0
    url = store.engine.url.render_as_string(hide_password=False)
    code, out, _ = _cli(url, capsys, "history", "--format", "json", "--scorer-version", "1")
    assert code == 0 and json.loads(out)[0]["correctness"] == 0.0 and json.loads(out)[0]["score"] == 0.0
    code, out, _ = _cli(url, capsys, "--json", "matrix", "--run", str(run), "--scorer-version", "1")
    assert code == 0 and json.loads(out)["lines"][0]["correctness"] == 0.0
    code, out, _ = _cli(url, capsys, "compare", str(run), str(run), "--scorer-version", "1", "--format", "json")
    assert code == 0
