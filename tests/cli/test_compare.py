"""`ragqual compare`: the tolerance gate, the fingerprint refusal, unstable questions, statistics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragqual.cli.compare_cmd import compare_summaries, metric_rng
from ragqual.cli.main import main
from ragqual.core.stats import paired_bootstrap_ci
from ragqual.store.runstore import RunStore
from ragqual.store.summaries import GroupSummary, Summary, summarise_run
from tests.cli.conftest import ragqual
from tests.store.test_queries import FP, generation_run, retrieval_run




def dense(values: dict[str, dict[str, float]], store, **kw) -> int:
    return retrieval_run(store, {"dense": values}, **kw)


def rows_of(out: str) -> dict[tuple[str, str], dict]:
    return {(r["group"], r["metric"]): r for r in json.loads(out)["metrics"]}


def test_a_regression_beyond_the_tolerance_exits_1(head_db, store, capsys):
    base = dense({f"q{i}": {"recall@5": 1.0, "mrr": 0.5} for i in range(5)}, store)
    same = {f"q{i}": {"recall@5": 1.0, "mrr": 0.5} for i in range(4)}
    new = dense({**same, "q4": {"recall@5": 0.0, "mrr": 0.5}}, store)
    code, out, err = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 1
    assert "1 metric(s) regressed beyond the tolerance 0.02: dense recall@5 (-0.2000)" in err
    line = next(line for line in out.splitlines() if "recall@5" in line)
    assert "REGRESSED" in line
    assert "ok" in next(line for line in out.splitlines() if " mrr " in line)
    code, _, _ = ragqual(head_db, ["compare", str(base), str(new), "--metric", "mrr"], capsys)
    assert code == 0  # only the named metric is gated


def test_different_fingerprints_are_refused_naming_re_baseline(head_db, store, capsys):
    base = dense({"q1": {"mrr": 1.0}}, store, fingerprint="1" * 64)
    new = dense({"q1": {"mrr": 1.0}}, store, fingerprint="2" * 64)
    code, out, err = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 2 and out == ""
    assert "fingerprints differ" in err and "Re-baseline" in err and "1" * 64 in err and "2" * 64 in err


@pytest.mark.parametrize("tolerance, new_value, expected", [
    ("0.25", 0.75, 0),   # a drop of exactly the tolerance passes (both exact in binary)
    ("0.25", 0.74, 1),
    ("0.02", 0.48, 0),   # 0.5 - 0.48 is 0.020000000000000018 in floats: the slack absorbs it
    ("0.02", 0.47, 1),
    ("0", 0.5, 0),       # tolerance 0: equal passes
])
def test_tolerance_edges(head_db, store, capsys, tolerance, new_value, expected):
    base_value = 1.0 if tolerance == "0.25" else 0.5
    base = dense({"q1": {"mrr": base_value}}, store)
    new = dense({"q1": {"mrr": new_value}}, store)
    code, _, _ = ragqual(head_db, ["compare", str(base), str(new), "--tolerance", tolerance], capsys)
    assert code == expected


def test_lower_is_better_metrics_regress_upwards(head_db, store, capsys):
    base = dense({"q1": {"nonEmptyRefusal": 0.0, "contextChars": 100.0}}, store)
    worse = dense({"q1": {"nonEmptyRefusal": 1.0, "contextChars": 9000.0}}, store)
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(worse)], capsys)
    rows = rows_of(out)
    assert code == 1 and rows[("dense", "nonEmptyRefusal")]["status"] == "REGRESSED"
    assert (rows[("dense", "nonEmptyRefusal")]["wins"], rows[("dense", "nonEmptyRefusal")]["losses"]) == (0, 1)
    assert ("dense", "contextChars") not in rows  # a size, not gated unless named
    code, _, _ = ragqual(head_db, ["compare", str(worse), str(base)], capsys)
    assert code == 0


def test_unstable_questions_are_excluded_and_counted(head_db, store, capsys):
    stable = [{"case": "q1", "repeat": r, "score": 1.0, "passed": True} for r in range(2)]
    base = generation_run(store, stable + [{"case": "q2", "repeat": r, "score": 1.0, "passed": True} for r in range(2)])
    new = generation_run(store, stable + [{"case": "q2", "repeat": 0, "score": 1.0, "passed": True},
                                          {"case": "q2", "repeat": 1, "score": 0.0, "passed": False}])
    code, out, err = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    assert code == 0, err
    body = json.loads(out)
    assert body["header"]["unstable_excluded"] == {"m1/e2e": ["q2"]} and body["header"]["passed"] is True
    score = rows_of(out)[("m1/e2e", "score")]
    assert (score["n"], score["unstable_excluded"], score["diff"]) == (1, 1, 0.0)
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert "unstable_excluded  m1/e2e: 1" in out  # the table format counts them


def test_a_stable_drop_in_a_generation_run_fails(head_db, store, capsys):
    base = generation_run(store, [{"case": "q1", "repeat": r, "score": 1.0, "passed": True} for r in range(2)])
    new = generation_run(store, [{"case": "q1", "repeat": r, "score": 0.5, "passed": False} for r in range(2)])
    code, _, err = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 1 and "m1/e2e score (-0.5000)" in err and "m1/e2e pass (-1.0000)" in err


def test_a_baseline_file_compares_like_its_run(head_db, store, tmp_path, capsys):
    base = dense({f"q{i}": {"mrr": 1.0 / (i + 1)} for i in range(6)}, store)
    new = dense({f"q{i}": {"mrr": 1.0 / (i + 2)} for i in range(6)}, store)
    code, _, _ = ragqual(head_db, ["baseline", "promote", str(base), "--dir", str(tmp_path)], capsys)
    assert code == 0
    path = tmp_path / FP[:12] / "retrieval.json"
    code_runs, out_runs, _ = ragqual(head_db, ["--json", "compare", str(base), str(new), "--seed", "3"], capsys)
    code_file, out_file, _ = ragqual(head_db, ["--json", "compare", str(path), str(new), "--seed", "3"], capsys)
    assert code_runs == code_file == 1
    assert json.loads(out_runs)["metrics"] == json.loads(out_file)["metrics"]
    assert json.loads(out_file)["header"]["base"]["source"] == str(path)


def test_two_baseline_files_need_no_database(store, head_db, tmp_path, capsys):
    run = dense({"q1": {"mrr": 1.0}}, store)
    ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(tmp_path)], capsys)
    path = tmp_path / FP[:12] / "retrieval.json"
    missing = tmp_path / "never" / "created.db"
    code, out, err = ragqual(missing, ["compare", str(path), str(path)], capsys)
    assert code == 0, err and "OK: no metric regressed" in out
    assert not missing.parent.exists()


def test_neither_run_nor_file_is_an_input_error(head_db, capsys):
    code, _, err = ragqual(head_db, ["compare", "nope.json", "1"], capsys)
    assert code == 2 and "neither a run id nor an existing baseline file" in err


# -- the statistics ---------------------------------------------------------------------------------------

def _summary(values: dict[str, dict[str, float]]) -> Summary:
    return Summary("x", "retrieval", "retrieval", FP, {}, {"dense": GroupSummary("dense", values)})


def test_statistics_against_a_hand_computed_case():
    base = _summary({f"q{i}": {"mrr": 0.0, "ndcg@10": 0.5} for i in range(4)})
    new = _summary({"q0": {"mrr": 1.0, "ndcg@10": 1.0}, "q1": {"mrr": 1.0, "ndcg@10": 1.0},
                    "q2": {"mrr": 1.0, "ndcg@10": 1.0}, "q3": {"mrr": 0.0, "ndcg@10": 1.0}})
    rows = {r.metric: r for r in compare_summaries(base, new, seed=5).rows}
    mrr = rows["mrr"]
    # differences 1, 1, 1, 0: 16 sign patterns, |sum| >= 3 only when the three ones share a sign (x2 for
    # the zero's sign): p = 4 / 16. Three wins, one tie.
    assert mrr.p_value == 0.25 and (mrr.wins, mrr.ties, mrr.losses) == (3, 1, 0) and mrr.diff == 0.75
    assert mrr.ci_low >= 0.0 and mrr.ci_high == 1.0
    # every difference is 0.5, so every resample's mean is 0.5; all 16 patterns reach |sum| = 2 only twice
    ndcg = rows["ndcg@10"]
    assert (ndcg.ci_low, ndcg.ci_high, ndcg.diff) == (0.5, 0.5, 0.5) and ndcg.p_value == 2 / 16


def test_statistics_are_seeded_and_independent_of_the_other_metrics():
    rng = np.random.default_rng(11)
    base = _summary({f"q{i}": {"mrr": float(a), "map@10": float(b)} for i, (a, b) in enumerate(rng.random((40, 2)))})
    new = _summary({f"q{i}": {"mrr": float(a), "map@10": float(b)} for i, (a, b) in enumerate(rng.random((40, 2)))})
    both = {r.metric: r for r in compare_summaries(base, new, seed=9, resamples=500).rows}
    again = {r.metric: r for r in compare_summaries(base, new, seed=9, resamples=500).rows}
    alone = compare_summaries(base, new, metrics=["mrr"], seed=9, resamples=500).rows[0]
    other_seed = {r.metric: r for r in compare_summaries(base, new, seed=10, resamples=500).rows}
    assert both == again and alone == both["mrr"]
    assert other_seed["mrr"].ci_low != both["mrr"].ci_low
    questions = sorted(base.groups["dense"].questions)
    expected = paired_bootstrap_ci([base.groups["dense"].questions[q]["mrr"] for q in questions],
                                   [new.groups["dense"].questions[q]["mrr"] for q in questions],
                                   metric_rng(9, "dense", "mrr"), n_resamples=500)
    assert (both["mrr"].diff, both["mrr"].ci_low, both["mrr"].ci_high) == pytest.approx(tuple(expected))
    assert both["mrr"].ci_low < both["mrr"].diff < both["mrr"].ci_high


def test_seeded_cli_output_is_reproducible(head_db, store, capsys):
    rng = np.random.default_rng(2)
    base = dense({f"q{i}": {"mrr": float(v)} for i, v in enumerate(rng.random(30))}, store)
    new = dense({f"q{i}": {"mrr": float(v)} for i, v in enumerate(rng.random(30))}, store)
    first = ragqual(head_db, ["compare", str(base), str(new), "--seed", "4", "--tolerance", "1"], capsys)
    second = ragqual(head_db, ["compare", str(base), str(new), "--seed", "4", "--tolerance", "1"], capsys)
    assert first == second and first[0] == 0 and "p_value" in first[1]


def test_groups_only_on_one_side_are_noted(head_db, store, capsys):
    base = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}, "sparse": {"q1": {"mrr": 1.0}}})
    new = retrieval_run(store, {"dense": {"q1": {"mrr": 1.0}}, "hybrid": {"q1": {"mrr": 1.0}}})
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 0
    assert "group 'sparse' is only in BASE" in out and "group 'hybrid' is only in NEW" in out


def test_summaries_of_one_run_compare_clean(store):
    run = generation_run(store, [{"case": "q1", "score": 0.5, "passed": False, "metrics": {"leakage": 1.0}}])
    summary = summarise_run(store.engine, store.get_run(run))
    comparison = compare_summaries(summary, summary)
    assert comparison.regressions == [] and {r.metric for r in comparison.rows} == {"score", "pass", "leakage"}
    assert all(r.p_value == 1.0 and r.ties == 1 for r in comparison.rows)


def test_strategy_groups_gate_on_headline_metrics_unless_asked(head_db, store, capsys):
    base = dense({"q1": {"mrr": 1.0, "rprec": 1.0}}, store)
    new = dense({"q1": {"mrr": 1.0, "rprec": 0.0}}, store)
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    assert code == 0 and set(rows_of(out)) == {("dense", "mrr")}
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new), "--all-metrics"], capsys)
    assert code == 1 and rows_of(out)[("dense", "rprec")]["status"] == "REGRESSED"
    code, _, _ = ragqual(head_db, ["compare", str(base), str(new), "--metric", "rprec"], capsys)
    assert code == 1
