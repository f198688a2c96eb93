"""Read queries, run summaries and baseline files over small histories built through RunStore.

The builders at the top (`put_trial`, `generation_run`, `retrieval_run`) are shared with the
report and compare command tests.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from ragqual.errors import InputError
from ragqual.store.queries import (
    QueryRefused,
    case_tags_by_id,
    metric_frame,
    metric_means,
    read_only_query,
    runs_frame,
    score_means,
    trial_frame,
)
from ragqual.store.records import AssertionRow, ScoreRow, TrialRecord
from ragqual.store.runstore import RunStore
from ragqual.store.summaries import (
    baseline_path,
    from_json_dict,
    load_baseline,
    ordered_metrics,
    summarise_run,
    tier_of,
    to_json_dict,
    write_baseline,
)
from tests.store.helpers import provenance

FP = "a" * 64
SCORER = "weighted-assertions"


# -- builders ------------------------------------------------------------------------------------

def put_trial(
    store: RunStore, run_id: int, case: str, *, variant: str = "m1", mode: str = "e2e", repeat: int = 0,
    score: float = 1.0, passed: bool = True, metrics: Mapping[str, float | None] | None = None,
    latency: float | None = 100.0, tokens: tuple[int, int] = (10, 5), cost: float | None = None,
    cache_hit: bool = False, error: str | None = None, tags: Iterable[str] = (),
) -> int:
    """One scored trial (scorer version 1) with its metric rows."""
    case_pk = store.record_case("rag", case, f"slug-{case}", {"id": case, "query": "?", "tags": list(tags)})
    variant_id = store.intern_variant(variant, "mock", variant, {})
    return store.append_trial(TrialRecord(
        run_id=run_id, case_pk=case_pk, variant_id=variant_id, mode=mode, repeat_index=repeat,
        system_prompt_id=None, rendered_prompt=None, context=None, raw_output="out", parsed_output="out",
        error=error, prompt_tokens=tokens[0], completion_tokens=tokens[1], latency_ms=latency, load_ms=None,
        cost=cost, cache_key=None, cache_hit=cache_hit,
        assertions=(AssertionRow("a1", 1, "correctness", 1.0, passed),),
        scores=(ScoreRow(SCORER, 1, score, passed, {"correctness": score}),),
        metrics=dict(metrics or {}), case_id=case,
    ))


def generation_run(store: RunStore, trials: Iterable[Mapping], *, fingerprint: str | None = FP,
                   finished: bool = True, **prov) -> int:
    """A generation run from trial specs: dicts of `put_trial` keyword arguments plus `case`."""
    run_id = store.start_run("generation", "rag", provenance(corpus_fingerprint=fingerprint, **prov))
    for spec in trials:
        spec = dict(spec)
        put_trial(store, run_id, spec.pop("case"), **spec)
    if finished:
        store.add_event(run_id, "finished")
    return run_id


def retrieval_run(store: RunStore, values: Mapping[str, Mapping[str, Mapping[str, float | None]]], *,
                  fingerprint: str | None = FP, tags: Mapping[str, Iterable[str]] | None = None,
                  finished: bool = True, **prov) -> int:
    """A retrieval run: strategy -> question -> metric -> value, each golden recorded as a case."""
    run_id = store.start_run("retrieval", "rag", provenance(corpus_fingerprint=fingerprint, **prov))
    questions = sorted({q for per_q in values.values() for q in per_q})
    for q in questions:
        store.record_case("rag", q, q, {"id": q, "query": "?", "tags": list((tags or {}).get(q, ()))})
    rows = [(None, q, strategy, metric, value, 1)
            for strategy, per_q in values.items() for q, metrics in per_q.items() for metric, value in metrics.items()]
    store.append_metrics(run_id, rows)
    if finished:
        store.add_event(run_id, "finished")
    return run_id


@pytest.fixture
def store(head_db: Path) -> RunStore:
    opened = RunStore.open(f"sqlite:///{head_db}")
    yield opened
    opened.engine.dispose()


# -- queries -----------------------------------------------------------------------------------------

def test_runs_frame_filters_by_kind_and_keeps_the_newest_within_the_limit(store):
    g1 = generation_run(store, [{"case": "q1"}])
    r1 = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}})
    g2 = generation_run(store, [{"case": "q1"}], finished=False)
    assert runs_frame(store.engine)["run_id"].tolist() == [g1, r1, g2]
    assert runs_frame(store.engine, kind="generation")["run_id"].tolist() == [g1, g2]
    assert runs_frame(store.engine, limit=2)["run_id"].tolist() == [r1, g2]
    frame = runs_frame(store.engine).set_index("run_id")
    assert frame.loc[g1, "status"] == "finished" and frame.loc[g2, "status"] == "incomplete"


def test_trial_frame_takes_the_newest_scorer_version_unless_one_is_asked_for(store):
    run = generation_run(store, [{"case": "q1", "score": 0.25, "passed": False}])
    trial_id = int(trial_frame(store.engine, run)["trial_id"].iloc[0])
    store.append_scoring(trial_id, [AssertionRow("a1", 2, "correctness", 1.0, True)],
                         [ScoreRow(SCORER, 2, 0.75, True, {})])
    newest = trial_frame(store.engine, run).iloc[0]
    assert (newest["score"], newest["perfect"], newest["scorer_version"]) == (0.75, True, 2)
    first = trial_frame(store.engine, run, scorer_version=1).iloc[0]
    assert (first["score"], first["perfect"], first["scorer_version"]) == (0.25, False, 1)
    assert math.isnan(trial_frame(store.engine, run, scorer_name="other").iloc[0]["score"])


def test_metric_frame_keeps_the_newest_version_of_each_metric(store):
    run = retrieval_run(store, {"dense": {"q1": {"mrr": 0.5, "ndcg@10": 0.4}}})
    store.append_metrics(run, [(None, "q1", "dense", "mrr", 1.0, 2)])
    frame = metric_frame(store.engine, run)
    assert sorted(zip(frame["metric"], frame["value"], frame["scorer_version"])) == [
        ("mrr", 1.0, 2), ("ndcg@10", 0.4, 1)]
    old = metric_frame(store.engine, run, scorer_version=1)
    assert sorted(zip(old["metric"], old["value"])) == [("mrr", 0.5), ("ndcg@10", 0.4)]


def test_score_and_metric_means_per_run_and_group(store):
    run = generation_run(store, [
        {"case": "q1", "mode": "e2e", "score": 1.0, "passed": True, "metrics": {"correctness": 1.0}},
        {"case": "q2", "mode": "e2e", "score": 0.5, "passed": False, "metrics": {"correctness": 0.0}},
        {"case": "q1", "mode": "oracle", "score": 1.0, "passed": True, "metrics": {"correctness": None}},
    ])
    scores = score_means(store.engine, [run]).set_index("group_key")
    assert scores.loc["e2e", "score"] == pytest.approx(0.75) and scores.loc["e2e", "pass"] == pytest.approx(0.5)
    assert scores.loc["oracle", "trials"] == 1
    means = metric_means(store.engine, [run], ["correctness"]).set_index("group_key")
    assert means.loc["e2e", "mean"] == pytest.approx(0.5) and means.loc["e2e", "n"] == 2
    assert means.loc["oracle", "n"] == 0  # NULL is not a zero


def test_means_follow_a_rescoring(store):
    run = generation_run(store, [{"case": "q1", "score": 0.0, "passed": False},
                                 {"case": "q2", "score": 0.0, "passed": False}])
    first, _ = trial_frame(store.engine, run)["trial_id"].tolist()
    store.append_scoring(first, [], [ScoreRow(SCORER, 2, 1.0, True, {})])
    store.append_scoring(first, [], [ScoreRow(SCORER, 2, 0.5, False, {})])  # the same version again: newest row wins
    store.append_metrics(run, [(None, "q1", "e2e", "correctness", 1.0, 1), (None, "q1", "e2e", "correctness", 0.5, 2)])
    scores = score_means(store.engine, [run]).iloc[0]
    assert (scores["score"], scores["pass"], scores["trials"]) == (0.25, 0.0, 2)
    means = metric_means(store.engine, [run], ["correctness"]).iloc[0]
    assert (means["mean"], means["n"]) == (0.5, 1)


def test_case_tags_come_from_the_newest_definition(store):
    store.record_case("rag", "q1", "q1", {"id": "q1", "tags": ["old"]})
    store.record_case("rag", "q1", "q1", {"id": "q1", "tags": ["new", "numeric"]})
    store.record_case("rag", "q2", "q2", {"id": "q2"})
    assert case_tags_by_id(store.engine, ["q1", "q2"], "rag") == {"q1": ("new", "numeric"), "q2": ()}


# -- summaries ---------------------------------------------------------------------------------------

def test_generation_summary_means_over_repeats_and_flags_flips(store):
    run = generation_run(store, [
        {"case": "q1", "repeat": 0, "score": 1.0, "passed": True, "metrics": {"leakage": 0.0}},
        {"case": "q1", "repeat": 1, "score": 0.5, "passed": False, "metrics": {"leakage": 1.0}},
        {"case": "q2", "repeat": 0, "score": 0.5, "passed": False, "metrics": {"leakage": None}},
        {"case": "q2", "repeat": 1, "score": 0.5, "passed": False, "metrics": {"leakage": None}},
        {"case": "q1", "mode": "oracle", "score": 1.0, "passed": True},
    ])
    summary = summarise_run(store.engine, store.get_run(run))
    assert sorted(summary.groups) == ["m1/e2e", "m1/oracle"]
    e2e = summary.groups["m1/e2e"]
    assert e2e.questions == {"q1": {"score": 0.75, "pass": 0.5, "leakage": 0.5}, "q2": {"score": 0.5, "pass": 0.0}}
    assert e2e.unstable == ("q1",) and e2e.trials == 4
    assert e2e.means() == {"score": 0.625, "pass": 0.25, "leakage": 0.5}
    assert summary.tier == "generation-m1" and summary.corpus_fingerprint == FP


def test_retrieval_summary_groups_by_strategy(store):
    run = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}, "q2": {"mrr": 0.5, "nonEmptyRefusal": 1.0}},
                                "hybrid": {"q1": {"mrr": 0.25}}})
    summary = summarise_run(store.engine, store.get_run(run))
    assert summary.tier == "retrieval"
    assert summary.groups["dense"].means() == {"mrr": 0.75, "nonEmptyRefusal": 1.0}
    assert summary.groups["hybrid"].questions == {"q1": {"mrr": 0.25}}


def test_baseline_json_round_trips(store, tmp_path):
    run = generation_run(store, [{"case": "q1", "score": 0.5, "passed": False, "metrics": {"correctness": 0.5}}])
    summary = summarise_run(store.engine, store.get_run(run))
    again = from_json_dict(json.loads(json.dumps(to_json_dict(summary))), "x.json")
    assert again.groups == summary.groups
    assert (again.kind, again.tier, again.corpus_fingerprint, again.run_id) == ("generation", "generation-m1", FP, run)


@pytest.mark.parametrize("content, message", [
    ({"format": "other"}, "not a ragqual baseline"),
    ({"format": "ragqual-baseline", "version": 9, "kind": "retrieval", "groups": {}}, "version"),
    ({"format": "ragqual-baseline", "version": 1, "kind": "retrieval",
      "groups": {"d": {"questions": {"q": {"m": "x"}}}}},
     "not a finite number"),
])
def test_a_bad_baseline_file_names_itself(tmp_path, content, message):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InputError, match=message) as err:
        load_baseline(path)
    assert str(path) in str(err.value)


def test_tiers_name_the_variants_for_generation_and_subject_runs():
    assert tier_of("retrieval", "rag", ["x"]) == "retrieval"
    assert tier_of("generation", "rag", ["qwen2.5:3b", "llama3.2:1b"]) == "generation-llama3.2-1b-qwen2.5-3b"
    assert tier_of("subject", "Sentiment", ["mock"]) == "subject-sentiment-mock"


def test_baseline_files_of_two_corpora_never_share_a_path(store, tmp_path):
    one = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}}, fingerprint="1" * 64)
    two = retrieval_run(store, {"dense": {"q1": {"mrr": 0.0}}}, fingerprint="2" * 64)
    p1 = write_baseline(summarise_run(store.engine, store.get_run(one)), tmp_path)
    p2 = write_baseline(summarise_run(store.engine, store.get_run(two)), tmp_path)
    assert p1 == tmp_path / ("1" * 12) / "retrieval.json" and p2 == tmp_path / ("2" * 12) / "retrieval.json"
    assert load_baseline(p1).groups["dense"].questions == {"q1": {"mrr": 1.0}}
    assert load_baseline(p2).groups["dense"].questions == {"q1": {"mrr": 0.0}}
    assert [p.name for p in p1.parent.iterdir()] == ["retrieval.json"]  # no temp file left behind


def test_a_fingerprint_sharing_the_folder_prefix_is_refused(store, tmp_path):
    first = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}}, fingerprint="c" * 12 + "1" * 52)
    clash = retrieval_run(store, {"dense": {"q1": {"mrr": 0.0}}}, fingerprint="c" * 12 + "2" * 52)
    path = write_baseline(summarise_run(store.engine, store.get_run(first)), tmp_path)
    clash_summary = summarise_run(store.engine, store.get_run(clash))
    assert baseline_path(tmp_path, clash_summary) == path
    with pytest.raises(InputError, match="move one of them aside"):
        write_baseline(clash_summary, tmp_path)
    assert load_baseline(path).corpus_fingerprint == "c" * 12 + "1" * 52


def test_metric_order_puts_headlines_first_and_sizes_last():
    assert ordered_metrics(["zeta", "contextChars", "mrr", "contextPrecision@3", "recall@5", "score"]) == [
        "recall@5", "mrr", "score", "contextPrecision@3", "zeta", "contextChars"]


# -- read-only SQL -------------------------------------------------------------------------------------

def test_read_only_query_reads_and_refuses_writes(store, head_db):
    generation_run(store, [{"case": "q1"}])
    frame = read_only_query(f"sqlite:///{head_db}", "SELECT kind, COUNT(*) AS n FROM runs GROUP BY kind")
    assert frame.to_dict("records") == [{"kind": "generation", "n": 1}]
    writes = ("DELETE FROM runs", "CREATE TABLE x (y)", "INSERT INTO system_prompts (sha256, text) VALUES ('a', 'b')")
    for statement in writes:
        with pytest.raises(QueryRefused, match="read-only"):
            read_only_query(f"sqlite:///{head_db}", statement)
    con = sqlite3.connect(head_db)
    assert con.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)
    assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'x'").fetchone() == (0,)
    con.close()


def test_read_only_query_on_a_missing_file_does_not_create_it(tmp_path):
    target = tmp_path / "none.db"
    with pytest.raises(InputError, match="no history database"):
        read_only_query(f"sqlite:///{target}", "SELECT 1")
    assert not target.exists()


# -- the example queries given to people who open the database with sqlite3 ---------------------------

PASS_RATE_PER_MODEL_PER_SHA = """
SELECT git_sha, model, mode, COUNT(*) AS trials, ROUND(100.0 * AVG(perfect), 1) AS pass_pct
FROM v_trials
WHERE run_kind = 'generation'
GROUP BY git_sha, model, mode
ORDER BY MIN(run_started_at), model, mode
"""

METRIC_MEAN_PER_RUN_OVER_TIME = """
SELECT r.run_id, r.started_at, r.git_sha, m.group_key AS strategy, ROUND(m.mean, 4) AS ndcg10, m.n
FROM v_metric_means m
JOIN v_run_status r ON r.run_id = m.run_id
WHERE m.metric = 'ndcg@10' AND r.kind = 'retrieval'
ORDER BY r.started_at, m.group_key
"""

EVERY_SCORE_OF_A_TRIAL = """
SELECT s.created_at, s.scorer_name, s.scorer_version, s.score, s.perfect,
       (SELECT COUNT(*) FROM assertion_results a
         WHERE a.trial_id = s.trial_id AND a.batch = s.batch AND a.passed) AS passed,
       (SELECT COUNT(*) FROM assertion_results a
         WHERE a.trial_id = s.trial_id AND a.batch = s.batch) AS assertions
FROM trial_scores s
WHERE s.trial_id = :trial
ORDER BY s.id
"""


def _sqlite_rows(path: Path, sql: str, **params) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def test_example_query_pass_rate_per_model_per_git_sha(store, head_db):
    generation_run(store, [{"case": "q1", "variant": "small", "passed": True},
                           {"case": "q2", "variant": "small", "passed": False, "score": 0.0},
                           {"case": "q1", "variant": "large", "passed": True}], git_sha="aaa")
    generation_run(store, [{"case": "q1", "variant": "small", "passed": True},
                           {"case": "q2", "variant": "small", "passed": True}], git_sha="bbb")
    assert _sqlite_rows(head_db, PASS_RATE_PER_MODEL_PER_SHA) == [
        ("aaa", "large", "e2e", 1, 100.0), ("aaa", "small", "e2e", 2, 50.0), ("bbb", "small", "e2e", 2, 100.0)]


def test_example_query_metric_mean_per_run_over_time(store, head_db):
    r1 = retrieval_run(store, {"dense": {"q1": {"ndcg@10": 1.0}, "q2": {"ndcg@10": 0.5}}}, git_sha="aaa")
    generation_run(store, [{"case": "q1", "metrics": {"ndcg@10": 0.0}}])  # another kind: left out
    r2 = retrieval_run(store, {"dense": {"q1": {"ndcg@10": 0.25}}, "hybrid": {"q1": {"ndcg@10": 1.0}}}, git_sha="bbb")
    rows = _sqlite_rows(head_db, METRIC_MEAN_PER_RUN_OVER_TIME)
    assert [(r[0], r[2], r[3], r[4], r[5]) for r in rows] == [
        (r1, "aaa", "dense", 0.75, 2), (r2, "bbb", "dense", 0.25, 1), (r2, "bbb", "hybrid", 1.0, 1)]


def test_example_query_every_score_an_old_trial_has_had(store, head_db):
    run = generation_run(store, [{"case": "q1", "score": 0.0, "passed": False}])
    trial = int(trial_frame(store.engine, run)["trial_id"].iloc[0])
    store.append_scoring(trial, [AssertionRow("a1", 2, "correctness", 1.0, True),
                                 AssertionRow("a2", 1, "style", 0.0, False)], [ScoreRow(SCORER, 2, 1.0, True, {})])
    rows = _sqlite_rows(head_db, EVERY_SCORE_OF_A_TRIAL, trial=trial)
    assert [r[1:] for r in rows] == [(SCORER, 1, 0.0, 0, 0, 1), (SCORER, 2, 1.0, 1, 1, 2)]
