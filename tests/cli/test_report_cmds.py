"""`report`, `history`, `sql`, `export`, `baseline promote` and `adopt` on histories built through RunStore."""

from __future__ import annotations

import io
import json
import sqlite3

import pandas as pd
import pytest

from ragqual.cli.main import main
from ragqual.store.records import AssertionRow, ScoreRow
from ragqual.store.runstore import RunStore
from tests.cli.conftest import ragqual
from tests.store.test_queries import FP, SCORER, generation_run, retrieval_run




@pytest.fixture
def generation(store):
    """m1 in e2e: q1 passes 2 of 3 repeats (unstable), q2 fails both; m1 in oracle: q1 passes."""
    return generation_run(store, [
        {"case": "q1", "repeat": 0, "score": 1.0, "passed": True, "latency": 100.0, "cost": 0.5, "cache_hit": True,
         "metrics": {"correctness": 1.0, "groundedness": None}, "tags": ["numeric"]},
        {"case": "q1", "repeat": 1, "score": 0.5, "passed": False, "latency": 200.0, "cost": 0.5,
         "metrics": {"correctness": 0.0, "groundedness": 0.5}, "tags": ["numeric"]},
        {"case": "q1", "repeat": 2, "score": 1.0, "passed": True, "latency": 300.0,
         "metrics": {"correctness": 1.0, "groundedness": 1.0}, "tags": ["numeric"]},
        {"case": "q2", "repeat": 0, "score": 0.0, "passed": False, "latency": 400.0, "tokens": (20, 7),
         "metrics": {"correctness": 0.0}, "tags": ["multi-hop", "numeric"]},
        {"case": "q2", "repeat": 1, "score": 0.5, "passed": False, "latency": None, "error": "timeout",
         "metrics": {"correctness": 0.0}, "tags": ["multi-hop", "numeric"]},
        {"case": "q1", "mode": "oracle", "score": 1.0, "passed": True, "tags": ["numeric"],
         "metrics": {"correctness": 1.0}},
    ])


E2E = {  # hand-computed from the fixture above
    "trials": 5, "score": 0.6, "score_var": 0.14, "pass_rate": 0.4, "correctness": 0.4, "groundedness": 0.75,
    "unstable": 1, "errors": 1, "latency_p50_ms": 250.0, "latency_p95_ms": 385.0, "tokens_in": 60,
    "tokens_out": 27, "cost": 1.0, "cache_hit_rate": 0.2,
}


def _groups(out: str) -> dict:
    body = json.loads(out)
    return {(g["variant"], g["mode"]): g for g in body["groups"]}, body


# -- report --------------------------------------------------------------------------------------------

def test_report_json_has_the_hand_computed_figures(head_db, generation, capsys):
    code, out, err = ragqual(head_db, ["report", str(generation), "--format", "json"], capsys)
    assert code == 0, err
    groups, body = _groups(out)
    row = groups[("m1", "e2e")]
    for key, expected in E2E.items():
        assert row[key] == pytest.approx(expected), key
    assert groups[("m1", "oracle")]["pass_rate"] == 1.0 and groups[("m1", "oracle")]["unstable"] == 0
    assert body["unstable questions"] == [
        {"variant": "m1", "mode": "e2e", "case_id": "q1", "slug": "slug-q1", "passed": 2, "repeats": 3}]
    header = body["header"]
    assert (header["run_id"], header["kind"], header["status"], header["corpus_fingerprint"], header["git_sha"]) == (
        generation, "generation", "finished", FP, "abc123")
    assert header["params"] == {"k": 5} and header["git_dirty"] is False


def test_report_csv_parses_back_to_the_same_numbers(head_db, generation, capsys):
    code, out, _ = ragqual(head_db, ["report", str(generation), "--format", "csv"], capsys)
    assert code == 0
    frame = pd.read_csv(io.StringIO(out)).set_index(["variant", "mode"])
    assert frame.loc[("m1", "e2e"), "score"] == pytest.approx(E2E["score"])
    assert frame.loc[("m1", "e2e"), "pass_rate"] == pytest.approx(E2E["pass_rate"])
    assert frame.loc[("m1", "oracle"), "trials"] == 1


def test_report_markdown_and_table_show_the_header_and_groups(head_db, generation, capsys):
    code, out, _ = ragqual(head_db, ["report", str(generation), "--format", "markdown"], capsys)
    assert code == 0
    table = [line for line in out.splitlines() if line.startswith("| m1 | e2e | 5 |")]
    assert len(table) == 1 and "| 0.600 |" in table[0] and "| 0.400 |" in table[0]
    assert f"- **corpus_fingerprint**: {FP}" in out and "### unstable questions" in out
    code, out, _ = ragqual(head_db, ["report", str(generation)], capsys)
    assert code == 0 and f"Run {generation} (generation, rag)" in out and "unstable questions:" in out
    assert "slug-q1" in out


def test_report_by_tag_splits_trials_by_their_case_tags(head_db, generation, capsys):
    code, out, _ = ragqual(head_db, ["report", str(generation), "--by", "tag", "--format", "json"], capsys)
    assert code == 0
    groups = {g["tag"]: g for g in json.loads(out)["groups"]}
    assert groups["multi-hop"]["trials"] == 2 and groups["multi-hop"]["score"] == pytest.approx(0.25)
    assert groups["numeric"]["trials"] == 6 and groups["numeric"]["unstable"] == 1


def test_report_last_and_global_json_flag(head_db, store, generation, capsys):
    later = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}})
    with pytest.raises(SystemExit) as caught:
        main(["--db", str(head_db), "--json", "report", "--last"])
    out, _ = capsys.readouterr()
    assert caught.value.code == 0 and json.loads(out)["header"]["run_id"] == later


def test_report_needs_a_run(head_db, generation, capsys):
    code, _, err = ragqual(head_db, ["report"], capsys)
    assert code == 2 and "--last" in err
    code, _, err = ragqual(head_db, ["report", "999"], capsys)
    assert code == 2 and "no run with id 999" in err


def test_report_uses_the_newest_scorer_version_by_default(head_db, store, capsys):
    run = generation_run(store, [{"case": "q1", "score": 0.25, "passed": False}])
    trial_id = sqlite3.connect(head_db).execute("SELECT id FROM trials WHERE run_id = ?", (run,)).fetchone()[0]
    store.append_scoring(trial_id, [AssertionRow("a1", 2, "correctness", 1.0, True)],
                         [ScoreRow(SCORER, 2, 0.75, True, {})])
    code, out, _ = ragqual(head_db, ["report", str(run), "--format", "json"], capsys)
    groups, _ = _groups(out)
    assert code == 0 and groups[("m1", "e2e")]["score"] == 0.75 and groups[("m1", "e2e")]["pass_rate"] == 1.0
    code, out, _ = ragqual(head_db, ["report", str(run), "--format", "json", "--scorer-version", "1"], capsys)
    groups, body = _groups(out)
    assert groups[("m1", "e2e")]["score"] == 0.25 and "v1" in body["header"]["scorer"]


def test_retrieval_report_per_strategy_and_tag(head_db, store, capsys):
    run = retrieval_run(
        store,
        {"dense": {"q1": {"recall@5": 1.0, "mrr": 0.5}, "q2": {"recall@5": 0.0, "mrr": 0.25},
                   "q3": {"nonEmptyRefusal": 1.0}},
         "hybrid": {"q1": {"recall@5": 1.0, "mrr": 1.0}, "q2": {"recall@5": 1.0, "mrr": 0.5},
                    "q3": {"nonEmptyRefusal": 0.0}}},
        tags={"q1": ["numeric"], "q2": ["numeric", "acronym"], "q3": ["out-of-corpus"]},
    )
    code, out, _ = ragqual(head_db, ["report", str(run), "--format", "json"], capsys)
    rows = {r["strategy"]: r for r in json.loads(out)["metrics"]}
    assert code == 0 and rows["dense"]["questions"] == 3
    assert (rows["dense"]["recall@5"], rows["dense"]["mrr"], rows["dense"]["nonEmptyRefusal"]) == (0.5, 0.375, 1.0)
    assert rows["hybrid"]["mrr"] == 0.75
    code, out, _ = ragqual(head_db, ["report", str(run), "--by", "tag", "--format", "csv"], capsys)
    frame = pd.read_csv(io.StringIO(out)).set_index(["strategy", "tag"])
    assert frame.loc[("dense", "acronym"), "mrr"] == 0.25 and frame.loc[("dense", "acronym"), "questions"] == 1
    assert frame.loc[("hybrid", "numeric"), "mrr"] == 0.75
    assert frame.loc[("dense", "out-of-corpus"), "nonEmptyRefusal"] == 1.0


# -- history ------------------------------------------------------------------------------------------

def test_history_lists_runs_with_headline_metrics_and_filters(head_db, store, generation, capsys):
    ret = retrieval_run(store, {"dense": {"q1": {"recall@5": 1.0, "ndcg@10": 0.5, "mrr": 0.5, "map@10": 0.1}}},
                        git_sha="beef")
    code, out, _ = ragqual(head_db, ["history", "--format", "csv"], capsys)
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0 and frame["run_id"].tolist() == [generation, generation, ret]
    e2e = frame[(frame["run_id"] == generation) & (frame["group"] == "e2e")].iloc[0]
    assert (e2e["score"], e2e["pass"], e2e["correctness"]) == pytest.approx((0.6, 0.4, 0.4))
    dense = frame[frame["run_id"] == ret].iloc[0]
    assert (dense["group"], dense["recall@5"], dense["ndcg@10"], dense["git_sha"]) == ("dense", 1.0, 0.5, "beef")
    assert "map@10" not in frame.columns

    code, out, _ = ragqual(head_db, ["history", "--kind", "retrieval", "--metric", "map@10", "--format", "json"],
                           capsys)
    rows = json.loads(out)
    assert code == 0 and [r["run_id"] for r in rows] == [ret] and rows[0]["map@10"] == 0.1
    assert set(rows[0]) >= {"corpus_fingerprint", "status", "started_at"} and "recall@5" not in rows[0]


def test_history_limit_keeps_the_newest_runs(head_db, store, capsys):
    runs = [retrieval_run(store, {"dense": {"q1": {"mrr": float(i)}}}) for i in range(3)]
    code, out, _ = ragqual(head_db, ["history", "--limit", "2", "--format", "csv"], capsys)
    assert code == 0 and pd.read_csv(io.StringIO(out))["run_id"].tolist() == runs[1:]


def test_history_of_an_empty_database(head_db, capsys):
    code, out, _ = ragqual(head_db, ["history"], capsys)
    assert code == 0 and "no runs" in out


# -- sql --------------------------------------------------------------------------------------------------

def test_sql_prints_rows_and_refuses_writes(head_db, generation, capsys):
    code, out, _ = ragqual(head_db, ["sql", "SELECT mode, COUNT(*) AS n FROM v_trials GROUP BY mode ORDER BY mode",
                                     "--format", "csv"], capsys)
    assert code == 0 and pd.read_csv(io.StringIO(out)).to_dict("records") == [
        {"mode": "e2e", "n": 5}, {"mode": "oracle", "n": 1}]
    code, out, err = ragqual(head_db, ["sql", "DROP VIEW v_trials"], capsys)
    assert code == 2 and "read-only" in err
    code, out, _ = ragqual(head_db, ["sql", "SELECT COUNT(*) FROM sqlite_master WHERE name = 'v_trials'",
                                     "--format", "json"], capsys)
    assert json.loads(out) == [{"COUNT(*)": 1}]


# -- export -----------------------------------------------------------------------------------------------

def test_export_csv_writes_trials_and_metric_values(head_db, generation, tmp_path, capsys):
    args = ["export", str(generation), "--format", "csv", "--out", str(tmp_path / "x")]
    code, out, _ = ragqual(head_db, args, capsys)
    assert code == 0 and "trials.csv (6 rows)" in out
    trials = pd.read_csv(tmp_path / "x" / "trials.csv")
    metrics = pd.read_csv(tmp_path / "x" / "metric_values.csv")
    assert len(trials) == 6 and set(trials["run_id"]) == {generation}
    assert sorted(trials["score"].tolist()) == [0.0, 0.5, 0.5, 1.0, 1.0, 1.0]
    assert len(metrics) == 9 and metrics["value"].isna().sum() == 1


def test_export_parquet_reads_back(head_db, generation, tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)
    code, out, _ = ragqual(head_db, ["export", str(generation)], capsys)
    assert code == 0
    folder = tmp_path / "eval-results" / "exports" / f"run-{generation}"
    assert len(pd.read_parquet(folder / "trials.parquet")) == 6
    assert set(pd.read_parquet(folder / "metric_values.parquet")["metric"]) == {"correctness", "groundedness"}


# -- baseline promote -------------------------------------------------------------------------------

def test_promote_writes_under_the_fingerprint_folder(head_db, store, tmp_path, capsys):
    run = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}, "q2": {"mrr": 0.5}}}, fingerprint="b" * 64)
    code, out, err = ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(tmp_path)], capsys)
    path = tmp_path / ("b" * 12) / "retrieval.json"
    assert code == 0, err and str(path) in out
    data = json.loads(path.read_text())
    assert data["corpus_fingerprint"] == "b" * 64 and data["run_id"] == run and data["tier"] == "retrieval"
    assert data["groups"]["dense"]["means"] == {"mrr": 0.75}
    assert data["groups"]["dense"]["questions"] == {"q1": {"mrr": 1.0}, "q2": {"mrr": 0.5}}
    assert data["header"]["git_sha"] == "abc123" and data["header"]["provenance"]["python_version"] == "3.11.7"


def test_promote_default_folder_and_generation_tier(head_db, store, generation, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = ragqual(head_db, ["baseline", "promote", str(generation)], capsys)
    assert code == 0, err
    assert (tmp_path / "eval-results" / "baselines" / FP[:12] / "generation-m1.json").is_file()


def test_promote_refuses_an_unfinished_run(head_db, store, tmp_path, capsys):
    run = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}}, finished=False)
    folder = tmp_path / "baselines"
    code, _, err = ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(folder)], capsys)
    assert code == 2 and "not finished" in err and not folder.exists()
    code, _, _ = ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(folder), "--allow-unfinished"], capsys)
    assert code == 0


# -- adopt ----------------------------------------------------------------------------------------------

STRATEGIES = {  # recall@5 saturated at the baseline; hybrid improves ndcg@10, sparse trades mrr for it
    "dense": {"recall@5": 1.0, "ndcg@10": 0.90, "mrr": 0.90, "map@10": 0.90},
    "hybrid": {"recall@5": 1.0, "ndcg@10": 0.95, "mrr": 0.92, "map@10": 0.93},
    "sparse": {"recall@5": 1.0, "ndcg@10": 0.97, "mrr": 0.80, "map@10": 0.90},
}


def test_adopt_prints_the_verdict_and_each_reason(head_db, store, capsys):
    run = retrieval_run(store, {s: {"q1": m} for s, m in STRATEGIES.items()})
    code, out, err = ragqual(head_db, ["adopt", f"{run}:dense", str(run)], capsys)
    assert code == 0, err
    assert "Saturated at the baseline (no headroom): recall@5." in out and "Deciding metric: ndcg@10." in out
    assert f"{run}:hybrid clears the adoption rule" in out and "never changes a default" in out
    assert f"{run}:sparse: regresses mrr by 0.1000" in out


def test_adopt_from_a_baseline_file_and_exit_zero_when_nothing_clears(head_db, store, tmp_path, capsys):
    base = retrieval_run(store, {"hybrid": {"q1": STRATEGIES["hybrid"]}})
    cand = retrieval_run(store, {"dense": {"q1": STRATEGIES["dense"]}})
    ragqual(head_db, ["baseline", "promote", str(base), "--dir", str(tmp_path)], capsys)
    path = tmp_path / FP[:12] / "retrieval.json"
    code, out, _ = ragqual(head_db, ["--json", "adopt", str(path), f"{cand}:dense"], capsys)
    body = json.loads(out)
    assert code == 0 and body["header"]["best"] == "none" and "No candidate clears" in body["header"]["verdict"]
    assert body["candidates"][1]["cleared"] is False


def _strategy_runs(store, hybrid_ndcg):
    dense = {f"q{i}": {"recall@5": 1.0, "ndcg@10": 0.8, "mrr": 0.8, "map@10": 0.8} for i in range(len(hybrid_ndcg))}
    hybrid = {q: {**m, "ndcg@10": v} for (q, m), v in zip(dense.items(), hybrid_ndcg)}
    return retrieval_run(store, {"dense": dense, "hybrid": hybrid})


def test_adopt_says_when_the_rule_clears_on_point_estimates_but_the_paired_test_is_inconclusive(
        head_db, store, capsys):
    # hybrid's mean ndcg@10 is 0.032 above dense's, from a few questions up and a few down: the rule
    # (point estimates) clears it; the sign-flip test over the 20 questions cannot tell it from noise.
    ups_and_downs = [1.0, 1.0, 1.0, 0.6, 0.76, 1.0, 0.88] + [0.8] * 13  # differences sum to 0.64
    run = _strategy_runs(store, ups_and_downs)
    code, out, err = ragqual(head_db, ["adopt", f"{run}:dense", f"{run}:hybrid"], capsys)
    assert code == 0, err
    assert f"{run}:hybrid clears the adoption rule" in out
    assert f"{run}:hybrid clears the rule on point estimates only: the paired test of ndcg@10 is inconclusive" in out
    assert "paired randomization test over 20 questions: ndcg@10 +0.032" in out and "MDE" in out
    code, out, _ = ragqual(head_db, ["--json", "adopt", f"{run}:dense", f"{run}:hybrid"], capsys)
    row = json.loads(out)["candidates"][1]
    assert row["cleared"] is True and row["test_verdict"] == "inconclusive" and row["p_value"] > 0.05
    assert row["ci_low"] < 0 < row["ci_high"] and row["delta"] == pytest.approx(0.032)


def test_adopt_says_the_paired_test_agrees_when_it_does(head_db, store, capsys):
    run = _strategy_runs(store, [0.85 + 0.001 * i for i in range(20)])
    code, out, err = ragqual(head_db, ["--json", "adopt", f"{run}:dense", f"{run}:hybrid"], capsys)
    body = json.loads(out)
    assert code == 0 and "The paired test agrees" in body["header"]["verdict"]
    assert "point estimates only" not in body["header"]["verdict"]
    row = body["candidates"][1]
    assert row["test_verdict"] == "improvement" and row["ci_low"] > 0 and row["p_value"] < 0.05


def test_adopt_needs_a_named_baseline_strategy(head_db, store, capsys):
    run = retrieval_run(store, {s: {"q1": m} for s, m in STRATEGIES.items()})
    code, _, err = ragqual(head_db, ["adopt", str(run), str(run)], capsys)
    assert code == 2 and f"{run}:dense" in err


@pytest.mark.parametrize("command", ["report", "history", "compare", "baseline", "adopt", "sql", "export"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as caught:
        main([command, "--help"])
    out, _ = capsys.readouterr()
    assert caught.value.code == 0 and f"Usage: ragqual {command}" in out
