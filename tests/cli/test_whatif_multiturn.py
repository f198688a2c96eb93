"""Why `contextRecall` differs between a generation run's and a retrieval run's `whatif` on the same
corpus and goldens: the e2e tier searches the model's rewrite of a multi-turn conversation, the
retrieval tier the golden's last message as written. Every other question gets the same candidates
in both tiers, so the two figures differ on multi-turn questions only; `whatif` says so beside them."""

import json
import sqlite3

import pytest

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions, load_corpus_context
from ragqual.store.failure_reads import FailureTrial, run_failure_trials
from ragqual.store.retrieval_reads import retrieval_hits

from .conftest import invoke

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(workdir):
    retrieval = invoke("--json", "retrieval")
    assert retrieval.exit_code == 0, retrieval.output
    generation = invoke("--json", "generation", "--model", "mock", "--mode", "e2e", "--repeats", "1")
    assert generation.exit_code == 0, generation.output
    return json.loads(retrieval.stdout)["run"]["run_id"], json.loads(generation.stdout)["run_id"]


def _read(run_ids):
    retrieval_id, generation_id = run_ids
    app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    try:
        goldens = {g.id: g for g in load_corpus_context(app, CorpusOptions(), with_corpus=False).goldens}
        engine = app.store(auto_create=False).engine
        trials = [t for t in run_failure_trials(engine, generation_id) if t.mode == "e2e"]
        hits = retrieval_hits(engine, retrieval_id)
    finally:
        app.close()
    return goldens, trials, hits


def _context_recall(workdir, run_id):
    """{(group_key, case_id): contextRecall} as the run stored it."""
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    rows = db.execute("SELECT group_key, case_id, value FROM metric_values WHERE run_id = ? AND metric = 'contextRecall'",
                      (run_id,)).fetchall()
    db.close()
    return {(g, c): v for g, c, v in rows}


def test_the_tiers_context_recall_differs_only_on_multi_turn_questions_whose_query_the_model_rewrote(workdir, runs):
    goldens, trials, hits = _read(runs)
    ranking: dict = {}
    for h in sorted(hits, key=lambda h: h.rank):
        ranking.setdefault((h.strategy, h.query_id), []).append(h.chunk_id)
    multi_turn = {g.id for g in goldens.values() if g.turns}
    assert multi_turn
    for t in trials:
        stored = t.raw_output["candidates"]
        lists = {"hybrid": stored["ids"], **{s: c["ids"] for s, c in stored["byStrategy"].items()}}
        if t.case_id in multi_turn:
            assert t.raw_output["retrievalQuery"] != goldens[t.case_id].query, t.case_id
        else:  # the same query, the same candidates in every strategy: nothing else differs between the tiers
            assert t.raw_output["retrievalQuery"] == goldens[t.case_id].query, t.case_id
            assert all(ids == ranking[(s, t.case_id)] for s, ids in lists.items()), t.case_id
    e2e = {c: v for (_, c), v in _context_recall(workdir, runs[1]).items() if v is not None}  # answerable questions
    tier = {c: v for (g, c), v in _context_recall(workdir, runs[0]).items() if g == "hybrid"}  # the e2e run's strategy
    assert e2e.keys() == tier.keys()
    differ = {c for c in e2e if e2e[c] != tier[c]}
    assert differ and differ <= multi_turn, differ


def test_whatif_says_which_query_its_context_recall_was_measured_on(workdir, runs):
    goldens, trials, _ = _read(runs)
    count = sum(1 for g in goldens.values() if g.turns)
    retrieval_id, generation_id = (str(r) for r in runs)
    gen = invoke("whatif", generation_id, "--threshold", "0.35")
    assert gen.exit_code == 0, gen.output
    assert f"contextRecall: e2e retrieval searched the model's rewrite of {count} multi-turn question(s)" in gen.output
    ret = invoke("whatif", retrieval_id, "--threshold", "0.35")
    assert ret.exit_code == 0, ret.output
    assert f"contextRecall: {count} multi-turn question(s) were searched by their last message as written" in ret.output
    (mock,) = json.loads(invoke("--json", "whatif", generation_id).stdout)
    assert mock["rewritten"] == count
    assert json.loads(invoke("--json", "whatif", retrieval_id).stdout)["last_turn"] == count


def _trial(case_id, query, variant="mock", repeat=0):
    return FailureTrial(1, variant, "e2e", repeat, case_id, case_id, {}, {"retrievalQuery": query}, "", "", None,
                        None, None, ())


def test_a_question_counts_as_rewritten_once_and_only_when_it_searched_another_text():
    from ragqual.app.whatif_run import rewritten_questions

    class G:
        def __init__(self, query):
            self.query = query

    goldens = {"a": G("How long?"), "b": G("Boil water how long?"), "c": G("x")}
    trials = [_trial("a", "Boiling water. How long?"), _trial("a", "Boiling water. How long?", repeat=1),
              _trial("b", "Boil water how long?"), _trial("c", "y", variant="other"), _trial("z", "q")]
    assert rewritten_questions(trials, "mock", goldens) == 1  # type: ignore[arg-type]
    assert rewritten_questions(trials, "other", goldens) == 1  # type: ignore[arg-type]
    assert rewritten_questions([_trial("b", "Boil water how long?")], "mock", goldens) == 0  # type: ignore[arg-type]
