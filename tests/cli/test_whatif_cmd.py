"""`ragqual whatif`: counterfactual contexts from a stored generation run, checked against what
the run itself stored (its own setting must give back its own metrics, question by question)."""

import json
import sqlite3

import pytest

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.app.whatif_run import _questions, load, mock_reader
from ragqual.core import textmatch, whatif

from .conftest import invoke, ragqual

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def e2e_run(workdir):
    result = invoke("--json", "generation", "--model", "mock", "--mode", "e2e", "--repeats", "1")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["run_id"]


def _stored(workdir, run_id):
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    rows = db.execute(
        "SELECT c.case_id, mv.metric, mv.value FROM metric_values mv JOIN trials t ON t.id = mv.trial_id "
        "JOIN cases c ON c.id = t.case_pk WHERE mv.run_id = ? AND mv.metric IN "
        "('correctness', 'contextRecall', 'factCoverage', 'readerCeiling')", (run_id,)).fetchall()
    db.close()
    out: dict = {}
    for case_id, metric, value in rows:
        out.setdefault(case_id, {})[metric] = value
    return out


def test_the_runs_own_setting_gives_back_its_stored_metrics_question_by_question(workdir, e2e_run):
    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    try:
        params, corpus, trials = load(app, e2e_run, CorpusOptions())
    finally:
        app.close()
    goldens = {g.id: g for g in corpus.goldens}
    questions = _questions(trials, "mock", goldens)
    own = whatif.Setting(params["retrieval"]["threshold"], params["retrieval"]["context_k"])
    texts = {c.chunk_id: c.text for c in corpus.chunks}
    outcomes = whatif.evaluate(questions, [own], own, texts, textmatch.found, mock_reader(goldens, params["options"]))[own]
    stored = _stored(workdir, e2e_run)
    assert len(questions) == len(stored) == 171
    for question, got in zip(questions, outcomes):
        want = stored[question.case_id]
        assert got.reader == want["correctness"], question.case_id
        assert got.reader_ceiling == want["readerCeiling"], question.case_id
        assert got.context_recall == want.get("contextRecall"), question.case_id
        assert got.fact_coverage == want.get("factCoverage"), question.case_id
    # the echo fails questions that a perfect reader of the same context passes (the near-miss twins)
    assert sum(o.reader_ceiling for o in outcomes) > sum(o.reader or 0 for o in outcomes)


def test_whatif_prints_every_setting_and_names_one_only_when_it_measured_a_gain(workdir, e2e_run):
    result = invoke("--json", "whatif", str(e2e_run), "--threshold", "0.3:0.8:0.1", "--context-k", "1,3,5")
    assert result.exit_code == 0, result.output
    (mock,) = json.loads(result.stdout)
    assert mock["variant"] == "mock" and mock["objective"] == "mock pass" and mock["chosen_on"] == "validation"
    assert len(mock["rows"]) == 6 * 3 + 1  # the grid and the run's own setting
    own = next(r for r in mock["rows"] if r["setting"] == mock["own"])
    if mock["advice"] is not None:
        named = max(mock["rows"], key=lambda r: r["reader"])
        assert named["reader"] > own["reader"]
        assert f"{named['setting']['threshold']:.2f}" in mock["advice"]
    text = invoke("whatif", str(e2e_run), "--threshold", "0.3,0.9").output
    assert "5 *" in text and "on test (" in text and "  - " in text


def test_a_different_corpus_is_refused_and_a_retrieval_run_is_read_from_its_rankings(workdir, e2e_run, capsys):
    db = workdir / "eval-results" / "eval.db"
    code, _, err = ragqual(db, ["whatif", str(e2e_run), "--chunk-tokens", "128"], capsys)
    assert code == 2 and "fingerprint" in err
    retrieval = invoke("--json", "retrieval")
    assert retrieval.exit_code == 0, retrieval.output
    code, out, err = ragqual(db, ["whatif", str(json.loads(retrieval.stdout)["run"]["run_id"])], capsys)
    assert code == 0 and out.startswith("retrieval run ") and "contextRecall" in out, err


def test_a_bundled_retrieval_runs_own_settings_give_back_its_stored_metrics(workdir, capsys):
    db = workdir / "eval-results" / "eval.db"
    retrieval = invoke("--json", "retrieval", "--threshold", "0.55")
    assert retrieval.exit_code == 0, retrieval.output
    run_id = json.loads(retrieval.stdout)["run"]["run_id"]
    code, out, err = ragqual(db, ["--json", "whatif", str(run_id)], capsys)
    assert code == 0, err
    got = json.loads(out)
    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    try:
        from ragqual.app.corpus import load_corpus_context

        split_of = {g.id: g.split for g in load_corpus_context(app, CorpusOptions(), with_corpus=False).goldens}
    finally:
        app.close()
    con = sqlite3.connect(db)
    stored: dict = {}
    for strategy, case_id, metric, value in con.execute(
            "SELECT group_key, case_id, metric, value FROM metric_values WHERE run_id = ?", (run_id,)):
        stored.setdefault((strategy, split_of[case_id], metric), []).append(value)
    con.close()
    mean = lambda key: sum(stored[key]) / len(stored[key])  # noqa: E731
    checked = 0
    for rows, split in ((got["rows"], "validation"), (got["report_rows"], "test")):
        for row in rows:
            if row["setting"] != got["own"][row["strategy"]]:
                continue
            checked += 1
            assert row["recall_at_k"] == mean((row["strategy"], split, "recall@5")), row
            assert row["context_recall"] == mean((row["strategy"], split, "contextRecall")), row
            assert row["refusals_empty"] == 1.0 - mean((row["strategy"], split, "nonEmptyRefusal")), row
    undecided = [u for u in got["unavailable"] if "threshold 0.55, context-k 5:" in u]
    assert checked + 2 * len(undecided) == 6, got["unavailable"]  # each strategy on validation and test, or named
