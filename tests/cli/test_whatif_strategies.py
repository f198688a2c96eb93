"""`ragqual whatif` on retrieval runs and across strategies, on a small corpus of our own making
(near-miss twins, out-of-corpus questions whose similarities overlap answerable ones, a long
document that crowds the context): a retrieval run's own settings give back its stored metrics,
and a strategy counterfactual on an e2e run gives what a real run with that strategy stores."""

import json
import re
import sqlite3

import pytest

from tests.support.projects import own_project

import ragqual.subjects.rag as rag
from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.app.whatif_run import whatif_from

from .conftest import invoke, ragqual
from .test_own_corpus_advice import DOCS, GOLDENS

pytestmark = pytest.mark.slow

CHUNKING = ("--chunk-tokens", "40", "--overlap-tokens", "0")
SPLITS = {"alder-flow": "validation", "birch-flow": "test", "cedar-size": "validation", "dune-rate": "test",
          "well-seals": "validation", "oak-flow": "validation", "pine-tank": "test", "elm-filter": "validation"}


@pytest.fixture(scope="module")
def project(tmp_path_factory, shared_cache):
    goldens = [{"split": SPLITS[g["id"]], **g} for g in GOLDENS]
    with own_project(tmp_path_factory.mktemp("strategies"), DOCS, goldens, shared_cache) as root:
        yield root


DB = "eval-results/eval.db"


def _db(root):
    return sqlite3.connect(root / "eval-results" / "eval.db")


def _run(*args):
    result = invoke(*args, *CHUNKING)
    assert result.exit_code == 0, result.output
    db = sqlite3.connect("eval-results/eval.db")
    (run_id,) = db.execute("SELECT MAX(id) FROM runs").fetchone()
    db.close()
    return run_id


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


@pytest.mark.parametrize("threshold", [None, "0.45"])
def test_whatif_at_a_retrieval_runs_own_settings_gives_back_its_stored_metrics(project, threshold):
    run_id = _run("retrieval", *(("--threshold", threshold) if threshold else ()))
    result = invoke("--json", "whatif", str(run_id), *CHUNKING)
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["unavailable"] == []
    db = _db(project)
    stored: dict = {}
    for strategy, case_id, metric, value in db.execute(
            "SELECT group_key, case_id, metric, value FROM metric_values WHERE run_id = ?", (run_id,)):
        stored.setdefault(strategy, {}).setdefault(metric, {})[case_id] = value
    db.close()
    assert sorted(got["kinds"]) == ["bm25", "dense", "hybrid"]
    own_rows = [r for r in got["rows"] + got["report_rows"] if r["setting"] == got["own"][r["strategy"]]]
    assert len(own_rows) == 6  # each strategy on validation and on test
    for row in own_rows:
        metrics = stored[row["strategy"]]
        split = "validation" if row in got["rows"] else "test"
        ids = [i for i, s in SPLITS.items() if s == split]
        assert row["recall_at_k"] == _mean(metrics["recall@5"].get(i) for i in ids), row
        assert row["context_recall"] == _mean(metrics["contextRecall"].get(i) for i in ids), row
        assert row["refusals_empty"] == _mean(
            None if i not in metrics["nonEmptyRefusal"] else 1.0 - metrics["nonEmptyRefusal"][i] for i in ids), row


def test_whatif_on_a_retrieval_run_compares_strategies_and_thresholds(project, capsys):
    run_id = _run("retrieval", "--strategy", "bm25", "--strategy", "dense")
    result = invoke("whatif", str(run_id), *CHUNKING, "--strategy", "bm25,dense,hybrid", "--threshold", "0.3,0.5",
                    "--context-k", "3,5")
    assert result.exit_code == 0, result.output
    assert "cannot be recomputed: strategy hybrid: this run did not rank it" in result.output
    assert "contextRecall" in result.output and "bm25" in result.output
    code, out, err = ragqual(DB, ["whatif", str(run_id), *CHUNKING, "--strategy", "hybrid"], capsys)
    assert code == 2 and out == "" and "no strategy asked for can be recomputed" in err


def _e2e_metrics(root, run_id):
    db = _db(root)
    out: dict = {}
    for case_id, metric, value in db.execute(
            "SELECT c.case_id, mv.metric, mv.value FROM metric_values mv JOIN trials t ON t.id = mv.trial_id "
            "JOIN cases c ON c.id = t.case_pk WHERE mv.run_id = ? AND t.mode = 'e2e'", (run_id,)):
        out.setdefault(metric, {})[case_id] = value
    db.close()
    return out


@pytest.mark.parametrize("threshold", [None, "0.45"])
def test_a_strategy_counterfactual_equals_a_real_run_with_that_strategy(project, threshold):
    cut = ("--threshold", threshold) if threshold else ()
    base = _run("generation", "--model", "mock", "--mode", "e2e", "--repeats", "1", "--strategy", "hybrid", *cut)
    result = invoke("--json", "whatif", str(base), *CHUNKING, "--strategy", "dense,bm25,hybrid")
    assert result.exit_code == 0, result.output
    (mock,) = json.loads(result.stdout)
    assert mock["unavailable"] == []
    for strategy in ("dense", "bm25"):
        real = _e2e_metrics(project, _run("generation", "--model", "mock", "--mode", "e2e", "--repeats", "1",
                                          "--strategy", strategy, *cut))
        for rows, split in ((mock["rows"], "validation"), (mock["report_rows"], "test")):
            (row,) = [r for r in rows if r["setting"]["strategy"] == strategy]
            ids = [i for i, s in SPLITS.items() if s == split]
            assert row["reader"] == _mean(real["correctness"].get(i) for i in ids), (strategy, split)
            assert row["reader_ceiling"] == _mean(real["readerCeiling"].get(i) for i in ids), (strategy, split)
            assert row["context_recall"] == _mean(real["contextRecall"].get(i) for i in ids), (strategy, split)


@pytest.fixture(scope="module")
def old_run(project):
    """An e2e run stored as before strategy counterfactuals: each trial keeps its own candidates only."""
    original = rag.RagSubject._passages

    def without_other_strategies(self, golden, mode, query, config):
        passages, ids, candidates = original(self, golden, mode, query, config)
        if candidates is not None:
            candidates.pop("byStrategy")
        return passages, ids, candidates

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rag.RagSubject, "_passages", without_other_strategies)
        return _run("generation", "--model", "mock", "--mode", "e2e", "--repeats", "1")


def test_an_old_run_says_which_settings_cannot_be_recomputed(project, old_run, capsys):
    code, out, err = ragqual(DB, ["whatif", str(old_run), *CHUNKING, "--strategy", "dense,bm25"], capsys)
    assert code == 2 and out == "", err
    assert "no setting asked for can be recomputed from the stored candidates: strategies dense, bm25: its e2e trials" in err
    mixed = invoke("whatif", str(old_run), *CHUNKING, "--strategy", "dense,hybrid", "--context-k", "3,5")
    assert mixed.exit_code == 0, mixed.output
    assert "cannot be recomputed: strategy dense: its e2e trials stored only the run's own" in mixed.output
    assert "Traceback" not in mixed.output


def test_without_strategy_lists_the_threshold_counterfactual_still_works(project, old_run):
    from ragqual.app.whatif_run import load

    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    try:
        params, corpus, trials = load(app, old_run, CorpusOptions(chunk_tokens=40, overlap_tokens=0))
    finally:
        app.close()
    (mock,) = whatif_from(params, corpus, trials, [0.3, 0.5], [3], ["hybrid"])
    assert mock.unavailable == [] and len(mock.rows) == 3


@pytest.mark.parametrize("kind", ["new", "old"])
def test_the_advice_alone_equals_the_advice_of_every_row(project, old_run, kind):
    """`advice_from` (what the decomposition prints, evaluating fewer outcomes) gives each
    variant's advice, overlap and unavailable settings as `whatif_from` does, on runs with and
    without other strategies' candidates and at other cut-off grids."""
    from ragqual.app.whatif_run import ADVICE_THRESHOLDS, advice_from, load

    run_id = old_run if kind == "old" else _run("generation", "--model", "mock", "--mode", "e2e", "--repeats", "2",
                                                "--context-k", "3")
    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    try:
        params, corpus, trials = load(app, run_id, CorpusOptions(chunk_tokens=40, overlap_tokens=0))
    finally:
        app.close()
    named = 0
    for cuts, ks in (([None, *ADVICE_THRESHOLDS], None), ([0.2, 0.45, 0.6], [1, 3, 5]), ([0.5], [8])):
        every = whatif_from(params, corpus, trials, cuts, ks, ["dense", "bm25", "hybrid"])
        alone = advice_from(params, corpus, trials, cuts, ks, ["dense", "bm25", "hybrid"])
        assert [(a.variant, a.objective, a.chosen_on, a.advice, a.overlap, a.unavailable) for a in alone] == [
            (v.variant, v.objective, v.chosen_on, v.advice, v.overlap, v.unavailable) for v in every]
        named += sum(1 for v in every if v.advice)
    assert kind == "old" or named  # some grid names a setting (with its held-out numbers)


@pytest.mark.parametrize("strategy", ["bm25", "dense"])
def test_the_decomposition_names_a_strategy_only_with_numbers_that_show_it_helps(project, strategy):
    result = invoke("generation", "--model", "mock", "--all-modes", "--repeats", "1", "--strategy", strategy, *CHUNKING)
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "measured on this run:" in line]
    assert said, result.output  # the run has causes a measured setting could answer
    db = _db(project)
    (run_id,) = db.execute("SELECT MAX(id) FROM runs").fetchone()
    db.close()
    whatif = invoke("--json", "whatif", str(run_id), *CHUNKING, "--strategy", "dense,bm25,hybrid",
                    "--threshold", "0.3:0.8:0.05")
    assert whatif.exit_code == 0, whatif.output
    (mock,) = json.loads(whatif.stdout)
    own = next(r for r in mock["rows"] if r["setting"] == mock["own"])
    named = re.search(r"threshold (\S+), context-k (\d+)(?:, strategy (\w+))? would raise mock pass from (\S+) to (\S+) "
                      r"on validation", said[0])
    if named:
        threshold = None if named.group(1).rstrip(",") == "-" else float(named.group(1).rstrip(","))
        row = next(r for r in mock["rows"] if r["setting"] == {
            "threshold": threshold, "context_k": int(named.group(2)), "strategy": named.group(3)})
        assert row["reader"] > own["reader"] and float(named.group(5)) == pytest.approx(row["reader"], abs=5e-4)
        assert float(named.group(4)) == pytest.approx(own["reader"], abs=5e-4)
    else:
        assert "no cut-off, context size or strategy tried raises mock pass" in said[0]
        assert all(r["reader"] <= own["reader"] for r in mock["rows"])
