"""`ragqual compare`: the statistical gate, the tolerance gate, the fingerprint refusal, unstable
questions and flips, the output formats, and properties of the comparison."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from ragqual.app.comparison import Options, compare, pattern_rng
from ragqual.core.stats import randomization_interval
from ragqual.errors import InputError
from ragqual.store.runstore import RunStore
from ragqual.store.summaries import GroupSummary, Summary, summarise_run
from tests.cli.conftest import ragqual
from tests.store.test_queries import FP, generation_run, retrieval_run




def dense(values: dict[str, dict[str, float]], store, **kw) -> int:
    return retrieval_run(store, {"dense": values}, **kw)


def rows_of(out: str) -> dict[tuple[str, str], dict]:
    return {(r["group"], r["metric"]): r for r in json.loads(out)["metrics"]}


def compare_summaries(base, new, **kw):
    return compare(base, new, Options(**kw))


TOL = ["--gate", "tolerance"]


def test_a_regression_beyond_the_tolerance_exits_1(head_db, store, capsys):
    base = dense({f"q{i}": {"recall@5": 1.0, "mrr": 0.5} for i in range(5)}, store)
    same = {f"q{i}": {"recall@5": 1.0, "mrr": 0.5} for i in range(4)}
    new = dense({**same, "q4": {"recall@5": 0.0, "mrr": 0.5}}, store)
    code, out, err = ragqual(head_db, ["compare", str(base), str(new), *TOL], capsys)
    assert code == 1
    assert "1 metric(s) regressed beyond the tolerance 0.02: dense recall@5 (-0.200)" in err
    line = next(line for line in out.splitlines() if "recall@5" in line)
    assert line.endswith("FAIL")
    assert next(line for line in out.splitlines() if " mrr " in line).endswith("ok")
    code, _, _ = ragqual(head_db, ["compare", str(base), str(new), "--metric", "mrr", *TOL], capsys)
    assert code == 0  # only the named metric is gated
    # The statistical gate: one question of five moving is no evidence of a regression.
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 0 and "INCONCLUSIVE, no regression shown" in out


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
    code, _, _ = ragqual(head_db, ["compare", str(base), str(new), "--tolerance", tolerance, *TOL], capsys)
    assert code == expected


def test_lower_is_better_metrics_regress_upwards(head_db, store, capsys):
    base = dense({"q1": {"nonEmptyRefusal": 0.0, "contextChars": 100.0}}, store)
    worse = dense({"q1": {"nonEmptyRefusal": 1.0, "contextChars": 9000.0}}, store)
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(worse), *TOL], capsys)
    rows = rows_of(out)
    assert code == 1 and rows[("dense", "nonEmptyRefusal")]["regressed"] is True
    assert (rows[("dense", "nonEmptyRefusal")]["wins"], rows[("dense", "nonEmptyRefusal")]["losses"]) == (0, 1)
    assert ("dense", "contextChars") not in rows  # a size, not gated unless named
    code, _, _ = ragqual(head_db, ["compare", str(worse), str(base), *TOL], capsys)
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
    assert (score["n"], score["unstable_excluded"], score["delta"]) == (1, 1, 0.0)
    assert body["unstable"] == [{"group": "m1/e2e", "question": "q2", "golden_id": "slug-q2", "sides": "new"}]
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert "unstable_excluded  m1/e2e: 1" in out  # the table format counts them


def test_a_stable_drop_in_a_generation_run_fails(head_db, store, capsys):
    base = generation_run(store, [{"case": "q1", "repeat": r, "score": 1.0, "passed": True} for r in range(2)])
    new = generation_run(store, [{"case": "q1", "repeat": r, "score": 0.5, "passed": False} for r in range(2)])
    code, _, err = ragqual(head_db, ["compare", str(base), str(new), *TOL], capsys)
    assert code == 1 and "m1/e2e score (-0.500)" in err and "m1/e2e pass (-1.000)" in err


def test_a_baseline_file_compares_like_its_run(head_db, store, tmp_path, capsys):
    base = dense({f"q{i}": {"mrr": 1.0 / (i + 1)} for i in range(6)}, store)
    new = dense({f"q{i}": {"mrr": 1.0 / (i + 2)} for i in range(6)}, store)
    code, _, _ = ragqual(head_db, ["baseline", "promote", str(base), "--dir", str(tmp_path)], capsys)
    assert code == 0
    path = tmp_path / FP[:12] / "retrieval.json"
    code_runs, out_runs, _ = ragqual(head_db, ["--json", "compare", str(base), str(new), "--seed", "3", *TOL], capsys)
    code_file, out_file, _ = ragqual(head_db, ["--json", "compare", str(path), str(new), "--seed", "3", *TOL], capsys)
    assert code_runs == code_file == 1
    assert json.loads(out_runs)["metrics"] == json.loads(out_file)["metrics"]
    assert json.loads(out_file)["header"]["base"]["source"] == str(path)


def test_two_baseline_files_need_no_database(store, head_db, tmp_path, capsys):
    run = dense({"q1": {"mrr": 1.0}}, store)
    ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(tmp_path)], capsys)
    path = tmp_path / FP[:12] / "retrieval.json"
    missing = tmp_path / "never" / "created.db"
    code, out, err = ragqual(missing, ["compare", str(path), str(path)], capsys)
    assert code == 0, err
    assert "EQUIVALENT: every metric's interval lies within +-0.02" in out
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
    assert mrr.p_value == 0.25 and (mrr.wins, mrr.ties, mrr.losses) == (3, 1, 0) and mrr.delta == 0.75
    # Four questions: the test's smallest p-value is 2/16 > 0.05, so no shift can be rejected and the
    # inverted interval is the metric's whole range of differences.
    assert (mrr.ci_low, mrr.ci_high) == (-1.0, 1.0)
    # every difference is 0.5; all 16 patterns reach |sum| = 2 only twice, and no shift is rejected either
    ndcg = rows["ndcg@10"]
    assert (ndcg.ci_low, ndcg.ci_high, ndcg.delta) == (-1.0, 1.0, 0.5) and ndcg.p_value == 2 / 16
    # Holm over the family of two: min(1, 2 * 2/16) for the smaller, max(that, 1 * 0.25) for the other
    assert (ndcg.p_adjusted, mrr.p_adjusted) == (0.25, 0.25)


def test_a_graded_metric_without_spread_reports_no_mde_and_says_so():
    # mrr identical on all 12 questions; ndcg@10 up by exactly 0.25 on each: neither has a paired
    # variance to compute an MDE from. hit@5 (binary) keeps the McNemar floor 6/12.
    base = _summary({f"q{i}": {"mrr": 0.5, "ndcg@10": 0.25, "hit@5": 1.0} for i in range(12)})
    new = _summary({f"q{i}": {"mrr": 0.5, "ndcg@10": 0.5, "hit@5": 1.0} for i in range(12)})
    rows = {r.metric: r for r in compare_summaries(base, new, metrics=("mrr", "ndcg@10", "hit@5")).rows}
    assert (rows["mrr"].mde, rows["mrr"].verdict) == (None, "equivalent")
    assert (rows["ndcg@10"].mde, rows["ndcg@10"].verdict) == (None, "improvement")
    assert rows["hit@5"].mde == 0.5


def test_a_missing_mde_is_shown_as_a_dash_and_null(head_db, store, capsys):
    run = dense({f"q{i}": {"mrr": 0.5, "hit@5": 1.0} for i in range(12)}, store)
    code, out, _ = ragqual(head_db, ["compare", str(run), str(run), "--metric", "mrr", "--metric", "hit@5"], capsys)
    cells = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith("dense ")}
    assert code == 0 and cells["mrr"][11:13] == ["-", "equivalent"] and cells["hit@5"][11] != "-"
    code, out, _ = ragqual(head_db, ["--json", "compare", str(run), str(run), "--metric", "mrr"], capsys)
    assert rows_of(out)[("dense", "mrr")]["mde"] is None


def test_an_inconclusive_metric_over_too_few_questions_says_it_has_no_mde():
    # Two questions, each up by exactly 0.5: the sign-flip p is 2/4 whatever the size, so nothing is
    # decided, and no change over two questions could ever be: there is no detectable size to give.
    base = _summary({"q0": {"mrr": 0.0}, "q1": {"mrr": 0.5}})
    new = _summary({"q0": {"mrr": 0.5}, "q1": {"mrr": 1.0}})
    comparison = compare_summaries(base, new, metrics=("mrr",))
    from ragqual.cli.compare_format import verdict_line

    assert comparison.rows[0].verdict == "inconclusive" and comparison.rows[0].mde is None
    assert "mrr, n=2: no MDE, too few questions or clusters for any change to be significant" in verdict_line(comparison)


def test_a_side_names_a_group_whose_label_holds_colons(tmp_path):
    # A real model's groups are `llamacpp:gemma3-270m/e2e`, `openai:http://host:8080/v1#m/e2e`: a run id
    # is digits, so the group is everything after its first colon; a file's, after the file's path.
    from ragqual.app.comparison import Side, parse_side

    assert parse_side("12:llamacpp:gemma3-270m/e2e") == Side("12", "llamacpp:gemma3-270m/e2e", False)
    assert parse_side("3:openai:http://h:8080/v1#m/e2e") == Side("3", "openai:http://h:8080/v1#m/e2e", False)
    assert parse_side("12:mock/e2e") == Side("12", "mock/e2e", False) and parse_side("12") == Side("12", None, False)
    path = tmp_path / "a:b.json"
    path.write_text("{}")
    assert parse_side(f"{path}:llamacpp:x/e2e") == Side(str(path), "llamacpp:x/e2e", True)
    assert parse_side(str(path)) == Side(str(path), None, True)
    with pytest.raises(InputError):
        parse_side("mock:e2e")


def test_statistics_are_seeded_and_independent_of_the_other_metrics():
    rng = np.random.default_rng(11)
    base = _summary({f"q{i}": {"mrr": float(a), "map@10": float(b)} for i, (a, b) in enumerate(rng.random((40, 2)))})
    new = _summary({f"q{i}": {"mrr": float(a), "map@10": float(b)} for i, (a, b) in enumerate(rng.random((40, 2)))})
    both = {r.metric: r for r in compare_summaries(base, new, seed=9, resamples=500).rows}
    again = {r.metric: r for r in compare_summaries(base, new, seed=9, resamples=500).rows}
    alone = compare_summaries(base, new, metrics=["mrr"], seed=9, resamples=500).rows[0]
    other_seed = {r.metric: r for r in compare_summaries(base, new, seed=10, resamples=500).rows}
    assert both == again
    # Only the Holm-adjusted p-value depends on the family: here one test instead of two.
    assert replace(alone, p_adjusted=0, verdict="") == replace(both["mrr"], p_adjusted=0, verdict="")
    assert other_seed["mrr"].ci_low != both["mrr"].ci_low
    questions = sorted(base.groups["dense"].questions)
    expected = randomization_interval([base.groups["dense"].questions[q]["mrr"] for q in questions],
                                      [new.groups["dense"].questions[q]["mrr"] for q in questions],
                                      pattern_rng(9, "dense", 40), n_permutations=500)
    assert (both["mrr"].delta, both["mrr"].ci_low, both["mrr"].ci_high, both["mrr"].p_value) == pytest.approx(
        tuple(expected))
    assert both["mrr"].ci_low < both["mrr"].delta < both["mrr"].ci_high


def test_metrics_of_one_group_share_their_sign_patterns():
    """Two metrics with the same per-question differences get the same p-value and interval: the
    group's metrics are tested on one set of sign patterns (drawn once, not once per metric)."""
    rng = np.random.default_rng(12)
    pairs = rng.random((40, 2))
    base = _summary({f"q{i}": {"mrr": float(a), "map@10": float(a)} for i, (a, _) in enumerate(pairs)})
    new = _summary({f"q{i}": {"mrr": float(b), "map@10": float(b)} for i, (_, b) in enumerate(pairs)})
    rows = {r.metric: r for r in compare_summaries(base, new, seed=3, resamples=500).rows}
    assert rows["mrr"].test == rows["map@10"].test == "randomization"
    assert (rows["mrr"].p_value, rows["mrr"].ci_low, rows["mrr"].ci_high) == (
        rows["map@10"].p_value, rows["map@10"].ci_low, rows["map@10"].ci_high)


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
    assert {r.metric: r.test for r in comparison.rows} == {"score": "randomization", "pass": "mcnemar-exact",
                                                          "leakage": "mcnemar-exact"}


def test_strategy_groups_gate_on_headline_metrics_unless_asked(head_db, store, capsys):
    base = dense({"q1": {"mrr": 1.0, "rprec": 1.0}}, store)
    new = dense({"q1": {"mrr": 1.0, "rprec": 0.0}}, store)
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    assert code == 0 and set(rows_of(out)) == {("dense", "mrr")}
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new), "--all-metrics", *TOL], capsys)
    assert code == 1 and rows_of(out)[("dense", "rprec")]["regressed"] is True
    code, _, _ = ragqual(head_db, ["compare", str(base), str(new), "--metric", "rprec", *TOL], capsys)
    assert code == 1


# -- the statistical gate ---------------------------------------------------------------------------------

def _hits(n_questions: int, dropped: range, metric: str = "hit@5") -> dict[str, dict[str, float]]:
    return {f"q{i:02d}": {metric: 0.0 if i in dropped else 1.0} for i in range(n_questions)}


def test_a_clear_paired_regression_is_a_regression_and_exits_1(head_db, store, capsys):
    base = dense(_hits(40, range(0)), store)
    new = dense(_hits(40, range(10)), store)  # 10 of 40 questions lose their hit, none gains
    code, out, err = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    row = rows_of(out)[("dense", "hit@5")]
    assert code == 1 and "REGRESSION: 1 metric(s) got worse" in err
    assert (row["test"], row["b"], row["c"], row["verdict"]) == ("mcnemar-exact", 10, 0, "regression")
    assert row["p_value"] == 2 / 2**10 and row["p_adjusted"] == row["p_value"]  # a family of one
    # The exact interval: every discordant question moved down, so the estimate is its lower end.
    assert row["ci_low"] == row["delta"] == -0.25 < row["ci_high"] < 0
    assert set(row) >= {"metric", "group", "n", "base_mean", "new_mean", "delta", "ci_low", "ci_high", "test",
                        "p_value", "p_adjusted", "mde", "verdict", "b", "c"}
    code, out, _ = ragqual(head_db, ["--json", "compare", str(new), str(base)], capsys)
    assert code == 0 and rows_of(out)[("dense", "hit@5")]["verdict"] == "improvement"


def test_a_drop_the_data_cannot_tell_from_noise_is_inconclusive_with_its_mde(head_db, store, capsys):
    base = dense({**_hits(40, range(0)), "q00": {"hit@5": 0.0}, "q01": {"hit@5": 0.0}}, store)
    new = dense(_hits(40, range(2, 7)), store)  # 5 lost, 2 gained: McNemar p = 0.45
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    row = rows_of(out)[("dense", "hit@5")]
    assert code == 0 and row["verdict"] == "inconclusive" and (row["b"], row["c"]) == (5, 2)
    assert row["p_value"] == pytest.approx(0.453125)
    assert row["mde"] > abs(row["delta"])
    assert json.loads(out)["header"]["verdict"].startswith("INCONCLUSIVE")
    # the tolerance gate still fails it: 3 questions of 40 is 0.075 > 0.02
    code, _, _ = ragqual(head_db, ["compare", str(base), str(new), *TOL], capsys)
    assert code == 1


def test_holm_adjusts_over_every_gated_metric_and_group(head_db, store, capsys):
    # Two groups, each losing hit@5 on 6 of 40 questions (p = 2/64 = 0.031 each): alone each is a
    # regression; as a family of two Holm doubles the smaller p to 0.0625 and neither is.
    base = retrieval_run(store, {"dense": _hits(40, range(0)), "bm25": _hits(40, range(0))})
    new = retrieval_run(store, {"dense": _hits(40, range(6)), "bm25": _hits(40, range(6))})
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    rows = rows_of(out)
    assert code == 0
    assert [(r["p_value"], r["p_adjusted"], r["verdict"]) for r in rows.values()] == [
        (0.03125, 0.0625, "inconclusive")] * 2
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new), "--alpha", "0.1"], capsys)
    assert code == 1 and {r["verdict"] for r in rows_of(out).values()} == {"regression"}


def test_flips_by_tag_and_the_markdown_comment(head_db, store, capsys):
    tags = {f"q{i:02d}": (["water"] if i % 2 else ["food"]) for i in range(40)}
    base = retrieval_run(store, {"dense": _hits(40, range(0))}, tags=tags)
    new = retrieval_run(store, {"dense": _hits(40, range(3))}, tags=tags)
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    flips = json.loads(out)["flips"]
    assert [(f["golden_id"], f["direction"], f["tags"]) for f in flips] == [
        ("q00", "pass->fail", ["food"]), ("q01", "pass->fail", ["water"]), ("q02", "pass->fail", ["food"])]
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new), "--format", "markdown"], capsys)
    lines = out.splitlines()
    assert lines[0].startswith("### ragqual compare:") and lines[2].startswith("**INCONCLUSIVE")
    assert "| dense | hit@5 | 40 |" in out
    assert "| dense | pass->fail | q01 | water |" in out
    assert "| dense | food | 2 | 0 |" in out and "| dense | water | 1 | 0 |" in out


def test_the_per_tag_table_uses_benjamini_hochberg_and_decides_nothing(head_db, store, capsys):
    tags = {f"q{i:02d}": (["water"] if i < 20 else ["food"]) for i in range(40)}
    base = retrieval_run(store, {"dense": _hits(40, range(0))}, tags=tags)
    new = retrieval_run(store, {"dense": _hits(40, range(8))}, tags=tags)  # every loss is a water question
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new), "--by-tag"], capsys)
    body = json.loads(out)
    by_tag = {r["tag"]: r for r in body["tags"]}
    assert by_tag["water"]["b"] == 8 and by_tag["food"]["b"] == 0
    # BH over the two rows: water's 2/256 is the smallest of 2 -> times 2/1; food's 1.0 stays 1.0
    assert by_tag["water"]["p_adjusted"] == pytest.approx(2 * 2 / 256) and by_tag["food"]["p_adjusted"] == 1.0
    assert not any(r["regressed"] for r in body["tags"])
    assert code == 1  # the gate itself: 8 of 40 lost overall


def test_cluster_doc_tests_questions_sharing_a_document_together(head_db, store, capsys):
    base = retrieval_run(store, {"dense": _hits(12, range(0))})
    new = retrieval_run(store, {"dense": _hits(12, range(6))})
    for i in range(12):  # q00..q05 all cite doc-a; the others one document each
        doc = "doc-a" if i < 6 else f"doc-{i}"
        store.record_case("rag", f"q{i:02d}", f"q{i:02d}", {"id": f"q{i:02d}", "relevantDocIds": [doc], "tags": []})
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    plain = rows_of(out)[("dense", "hit@5")]
    code_c, out_c, _ = ragqual(head_db, ["--json", "compare", str(base), str(new), "--cluster", "doc"], capsys)
    clustered = rows_of(out_c)[("dense", "hit@5")]
    assert (plain["test"], plain["p_value"], code) == ("mcnemar-exact", 2 / 64, 1)
    # 7 clusters: the six lost questions are one of them, so one sign of 7 flips: p = 2 * 2**6 / 2**7 = 1
    assert (clustered["test"], clustered["clusters"]) == ("cluster-randomization", 7)
    assert clustered["p_value"] == 1.0 and clustered["verdict"] == "inconclusive" and code_c == 0
    assert clustered["mde"] > plain["mde"]


def test_cluster_doc_between_two_files_is_refused(head_db, store, tmp_path, capsys):
    run = dense({"q1": {"mrr": 1.0}}, store)
    ragqual(head_db, ["baseline", "promote", str(run), "--dir", str(tmp_path)], capsys)
    path = str(tmp_path / FP[:12] / "retrieval.json")
    code, _, err = ragqual(head_db, ["compare", path, path, "--cluster", "doc"], capsys)
    assert code == 2 and "--cluster doc needs each question's relevant documents" in err


# -- properties ------------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

value = st.sampled_from([0.0, 0.25, 0.5, 1.0])
question_values = st.fixed_dictionaries({"hit@5": st.sampled_from([0.0, 1.0]), "mrr": value})
questions = st.lists(question_values, min_size=1, max_size=25)


def _as_summary(rows: list[dict[str, float]]) -> Summary:
    return _summary({f"q{i}": r for i, r in enumerate(rows)})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(questions, st.sampled_from([0.0, 0.02, 0.1]))
def test_a_run_compared_with_itself_is_never_a_regression(rows, tolerance):
    summary = _as_summary(rows)
    comparison = compare(summary, summary, Options(tolerance=tolerance, resamples=200))
    assert {r.verdict for r in comparison.rows} <= {"equivalent", "inconclusive"}
    assert comparison.regressions == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(question_values, question_values), min_size=1, max_size=25), st.integers(0, 5))
def test_swapping_base_and_new_mirrors_the_verdict(pairs, seed):
    base = _as_summary([a for a, _ in pairs])
    new = _as_summary([b for _, b in pairs])
    forward = {r.metric: r for r in compare(base, new, Options(seed=seed, resamples=300)).rows}
    backward = {r.metric: r for r in compare(new, base, Options(seed=seed, resamples=300)).rows}
    mirror = {"regression": "improvement", "improvement": "regression", "equivalent": "equivalent",
              "inconclusive": "inconclusive"}
    for metric, row in forward.items():
        other = backward[metric]
        assert other.verdict == mirror[row.verdict]
        assert other.delta == pytest.approx(-row.delta) and other.p_value == pytest.approx(row.p_value)
        assert (other.ci_low, other.ci_high) == pytest.approx((-row.ci_high, -row.ci_low), abs=1e-12)


def test_two_named_groups_are_compared_with_each_other(head_db, store, capsys):
    run = retrieval_run(store, {"dense": _hits(40, range(0)), "bm25": _hits(40, range(12))})
    code, out, err = ragqual(head_db, ["--json", "compare", f"{run}:dense", f"{run}:bm25"], capsys)
    assert code == 1, err
    assert set(rows_of(out)) == {("dense->bm25", "hit@5")}
    assert json.loads(out)["header"]["base"]["source"] == f"run {run}:dense"
    code, out, _ = ragqual(head_db, ["--json", "compare", str(run), f"{run}:dense"], capsys)
    assert code == 0 and set(rows_of(out)) == {("dense", "hit@5")}  # one named side: matched by name
    code, _, err = ragqual(head_db, ["compare", f"{run}:nope", str(run)], capsys)
    assert code == 2 and "has no group 'nope' (it has: bm25, dense)" in err


@pytest.mark.parametrize("seed", range(12))
def test_every_interval_excludes_zero_exactly_when_its_p_value_is_below_alpha(seed):
    rng = np.random.default_rng(seed)
    n = 40
    base_values = {f"q{i}": {"mrr": float(v), "hit@1": float(h)}
                   for i, (v, h) in enumerate(zip(rng.random(n), rng.random(n) < 0.5))}
    new_values = {q: {"mrr": float(np.clip(m["mrr"] + rng.normal(-0.03, 0.12), 0, 1)),
                      "hit@1": float(m["hit@1"] if rng.random() < 0.75 else 1 - m["hit@1"])}
                  for q, m in base_values.items()}
    rows = compare_summaries(_summary(base_values), _summary(new_values), metrics=["mrr", "hit@1"], seed=seed,
                             resamples=999).rows
    for row in rows:
        assert (row.ci_low > 0 or row.ci_high < 0) == (row.p_value < 0.05), row
