"""`ragqual.open_history` reads SQLite and PostgreSQL histories alike."""

from __future__ import annotations

from ragqual.store.runstore import RunStore
from tests.store.test_queries import FP, generation_run, retrieval_run


def test_history_frames_on_each_backend(store_head_url):
    import ragqual

    store = RunStore.open(store_head_url)
    run = generation_run(store, [{"case": "q1", "metrics": {"correctness": 1.0}},
                                 {"case": "q2", "score": 0.0, "passed": False, "metrics": {"correctness": 0.0}}])
    later = retrieval_run(store, {"bm25": {"q1": {"mrr": 0.5}}})
    store.engine.dispose()
    with ragqual.open_history(store_head_url) as history:
        assert history.runs()["run_id"].tolist() == [run, later]
        trials = history.trials(run)
        scores = history.scores(run)
        assertions = history.assertions(run)
        metrics = history.metrics(run)
        assert history.case_history("q1")["run_id"].tolist() == [run, later]
    assert trials["case_id"].tolist() == ["q1", "q2"] and set(trials["corpus_fingerprint"]) == {FP}
    assert scores["score"].tolist() == [1.0, 0.0] and scores["case_id"].tolist() == ["q1", "q2"]
    assert [bool(p) for p in assertions["passed"]] == [True, False]
    assert sorted(metrics["value"].tolist()) == [0.0, 1.0] and set(metrics["run_id"]) == {run}
