"""`ragqual history --case GOLDEN_ID`: one question across every run."""

import json

from tests.cli.conftest import ragqual
from tests.store.test_queries import generation_run, retrieval_run


def test_one_question_across_trial_and_retrieval_runs(head_db, store, capsys):
    g1 = generation_run(store, [{"case": "q1", "repeat": r, "score": 1.0, "passed": True} for r in range(2)]
                        + [{"case": "q2", "score": 0.0, "passed": False}], git_sha="a" * 40)
    g2 = generation_run(store, [{"case": "q1", "repeat": 0, "score": 1.0, "passed": True},
                                {"case": "q1", "repeat": 1, "score": 0.25, "passed": False}], git_sha="b" * 40)
    r1 = retrieval_run(store, {"dense": {"slug-q1": {"mrr": 0.5, "hit@5": 1.0, "rprec": 0.0}},
                               "bm25": {"slug-q1": {"mrr": 1.0, "hit@5": 1.0}}}, git_sha="c" * 40)
    code, out, err = ragqual(head_db, ["history", "--case", "slug-q1", "--format", "json"], capsys)
    assert code == 0, err
    rows = json.loads(out)
    got = [(r["run_id"], r["group"], r["git_sha"][:1], r["trials"], r["pass"], r["score"], r["unstable"], r["mrr"])
           for r in rows]
    assert got == [
        (g1, "m1/e2e", "a", 2, 1.0, 1.0, False, None),
        (g2, "m1/e2e", "b", 2, 0.5, 0.625, True, None),
        (r1, "bm25", "c", None, None, None, None, 1.0),
        (r1, "dense", "c", None, None, None, None, 0.5),
    ]
    assert "rprec" not in rows[0]  # only the asked (or headline) metrics
    code, out, _ = ragqual(head_db, ["history", "--case", "slug-q1", "--metric", "rprec"], capsys)
    assert code == 0 and "rprec" in out.splitlines()[0] and "mrr" not in out.splitlines()[0]


def test_an_unknown_question_is_one_line_and_exit_2(head_db, store, capsys):
    generation_run(store, [{"case": "q1"}])
    code, out, err = ragqual(head_db, ["history", "--case", "nope"], capsys)
    assert code == 2 and out == "" and "no run in the history holds question 'nope'" in err
