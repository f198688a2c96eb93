"""`compare` and `report` for CI: JUnit XML read back by junitparser, the pull-request comment,
--failures-only, critical goldens failing the gate, and the goldens lock."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from junitparser import Error, Failure, JUnitXml, Skipped

from tests.cli.conftest import ragqual
from tests.store.test_queries import generation_run, retrieval_run

HOSTILE_ERROR = 'model said "no" ]]> <x/> & \x01\x1b bye'


def suite_of(path):
    (suite,) = list(JUnitXml.fromfile(str(path)))
    return suite, {(case.classname, case.name): case for case in suite}


def mark_critical(store, *questions):
    """Record a newer definition of each question that marks it critical (later rows win)."""
    for q in questions:
        store.record_case("rag", q, f"slug-{q}", {"id": q, "query": "?", "tags": [], "critical": True})


def trials(passes: dict[str, list[bool]], **kw) -> list[dict]:
    return [{"case": q, "repeat": i, "passed": p, "score": float(p), **kw}
            for q, flags in passes.items() for i, p in enumerate(flags)]


def test_compare_junit_one_case_per_metric_failure_for_regression_skipped_with_mde(head_db, store, capsys, tmp_path):
    many = {f"q{i}": {"recall@5": 1.0, "mrr": 1.0} for i in range(30)}
    worse = {f"q{i}": {"recall@5": 0.0 if i < 20 else 1.0, "mrr": 1.0 if i else 0.5} for i in range(30)}
    base, new = retrieval_run(store, {"dense": many}), retrieval_run(store, {"dense": worse})
    out_file = tmp_path / "compare.xml"
    code, out, err = ragqual(head_db, ["compare", str(base), str(new), "--format", "junit", "-o", str(out_file),
                                       "--metric", "recall@5", "--metric", "mrr"], capsys)
    assert code == 1 and "REGRESSION" in err
    suite, cases = suite_of(out_file)
    assert suite.tests == 2 and suite.failures == 1 and suite.skipped == 1
    (failure,) = cases[("ragqual.compare.dense", "recall@5")].result
    assert isinstance(failure, Failure) and failure.message.startswith("regression: recall@5 got worse")
    assert "base 1 -> new 0.3333" in failure.text and "Holm p=" in failure.text
    (skipped,) = cases[("ragqual.compare.dense", "mrr")].result
    assert isinstance(skipped, Skipped) and "inconclusive (underpowered)" in skipped.message
    assert "can only see changes" in skipped.message and "MDE" in skipped.message


def test_report_junit_failure_error_and_unstable_per_question_and_variant(head_db, store, capsys, tmp_path):
    run = generation_run(store, [
        *trials({"good": [True, True], "bad": [False, False], "flaky": [True, False]}),
        *trials({"good": [True, True]}, variant="m2"),
        {"case": "broke", "passed": False, "score": 0.0, "error": HOSTILE_ERROR},
    ])
    out_file = tmp_path / "run.xml"
    code, _, _ = ragqual(head_db, ["report", str(run), "--format", "junit", "-o", str(out_file)], capsys)
    assert code == 0
    ET.parse(out_file)  # well-formed
    suite, cases = suite_of(out_file)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 1, 1, 1)
    assert cases[(f"ragqual.run{run}.m1/e2e", "slug-good")].is_passed
    assert cases[(f"ragqual.run{run}.m2/e2e", "slug-good")].is_passed
    (failure,) = cases[(f"ragqual.run{run}.m1/e2e", "slug-bad")].result
    assert isinstance(failure, Failure) and failure.message == "failed in all 2 repeat(s): a1"
    assert "cause: -" in failure.text and "failed: a1" in failure.text
    (error,) = cases[(f"ragqual.run{run}.m1/e2e", "slug-broke")].result
    assert isinstance(error, Error) and error.text == 'model said "no" ]]> <x/> & \\x01\\x1b bye'
    (skipped,) = cases[(f"ragqual.run{run}.m1/e2e", "slug-flaky")].result
    assert isinstance(skipped, Skipped) and skipped.message.startswith("unstable: passed 1 of 2 repeats")
    code, out, _ = ragqual(head_db, ["report", str(run), "--format", "junit", "--failures-only"], capsys)
    assert out.count("<testcase ") == 3 and "slug-good" not in out


def test_report_failures_only_lists_only_failing_trials_with_cause(head_db, store, capsys):
    run = generation_run(store, trials({"good": [True], "bad": [False]}))
    code, out, _ = ragqual(head_db, ["report", str(run), "--failures-only", "--format", "json"], capsys)
    body = json.loads(out)
    assert code == 0 and [r["case_id"] for r in body["failures"]] == ["bad"]
    assert {"cause", "failed_checks"} <= set(body["failures"][0])
    strategy = retrieval_run(store, {"dense": {"hit": {"hit@5": 1.0}, "miss": {"hit@5": 0.0}}})
    code, out, _ = ragqual(head_db, ["report", str(strategy), "--failures-only", "--format", "json"], capsys)
    assert [(r["question"], r["cause"]) for r in json.loads(out)["failures"]] == [("miss", "missed document")]


def test_a_critical_golden_fails_the_gate_the_statistics_pass(head_db, store, capsys):
    passing = {f"q{i}": [True, True] for i in range(6)}
    base = generation_run(store, trials(passing))
    new = generation_run(store, trials({**passing, "q3": [True, False]}))
    code, out, err = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 0 and "EQUIVALENT" in out  # the unstable question is left out of the statistics
    mark_critical(store, "q3")
    code, out, err = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 1 and "CRITICAL GOLDEN REGRESSED (slug-q3)" in err
    assert "critical golden 'slug-q3' regressed in m1/e2e: pass 1 -> 0.5: this fails the gate" in out
    code, out, _ = ragqual(head_db, ["--json", "compare", str(base), str(new)], capsys)
    body = json.loads(out)
    assert body["header"]["passed"] is False
    assert body["header"]["critical_regressions"] == [
        {"group": "m1/e2e", "golden_id": "slug-q3", "metric": "pass", "base_value": 1.0, "new_value": 0.5}]
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new), "--format", "junit"], capsys)
    assert code == 1 and 'name="critical golden slug-q3"' in out and 'type="CriticalGoldenRegression"' in out


def test_a_critical_retrieval_question_fails_on_its_own_metric_drop(head_db, store, capsys):
    base = retrieval_run(store, {"dense": {f"q{i}": {"recall@5": 1.0} for i in range(8)}})
    new = retrieval_run(store, {"dense": {f"q{i}": {"recall@5": 0.5 if i == 2 else 1.0} for i in range(8)}})
    assert ragqual(head_db, ["compare", str(base), str(new)], capsys)[0] == 0
    mark_critical(store, "q2")
    code, _, err = ragqual(head_db, ["compare", str(base), str(new)], capsys)
    assert code == 1 and "CRITICAL GOLDEN REGRESSED (slug-q2)" in err


def test_compare_failures_only_shows_regressions_and_flips_with_cause(head_db, store, capsys):
    passing = {f"q{i}": [True] for i in range(20)}
    base = generation_run(store, trials(passing))
    new = generation_run(store, trials({**passing, **{f"q{i}": [False] for i in range(12)}}))
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new), "--failures-only", "--format", "json"], capsys)
    body = json.loads(out)
    assert code == 1
    assert {"pass", "score"} == {r["metric"] for r in body["regressions"]}
    assert sorted(r["question"] for r in body["pass -> fail"]) == sorted(f"slug-q{i}" for i in range(12))
    assert all(r["cause"] == "-" for r in body["pass -> fail"])  # not goldens: no measured cause
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new), "--failures-only"], capsys)
    assert "slug-q19" not in out and "slug-q0" in out


def test_github_comment_verdict_first_table_folded_flips_and_settings(head_db, store, capsys, tmp_path):
    passing = {f"q{i}": [True] for i in range(20)}
    base = generation_run(store, trials(passing), params={"k": 5})
    new = generation_run(store, trials({**passing, "q1": [False]}), params={"k": 8})
    out_file = tmp_path / "comment.md"
    code, out, _ = ragqual(head_db, ["compare", str(base), str(new), "--format", "github", "-o", str(out_file)],
                           capsys)
    text = out_file.read_text(encoding="utf-8")
    assert code == 0 and out == ""
    lines = text.splitlines()
    assert lines[0] == "<!-- ragqual-compare -->" and lines[1].startswith("### ✅ ragqual: run ")
    assert lines[3].startswith("**INCONCLUSIVE")
    assert "- inconclusive: `m1/e2e` pass -0.050, can only see changes >= " in text
    assert text.index("Failures that flipped (1 pass → fail)") < text.index("<details>")
    assert "- `slug-q1` (m1/e2e)" in text and "- `k: 5 -> 8`" in text
    assert "| group | metric |" in text.split("<details>")[1] and text.rstrip().endswith("</details>")
    assert "> [!WARNING]" in text and "Stale baseline: " in text  # the history's runs were not made at HEAD


def test_output_file_needs_a_file_format(head_db, store, capsys, tmp_path):
    run = retrieval_run(store, {"dense": {"q": {"mrr": 1.0}}})
    code, _, err = ragqual(head_db, ["compare", str(run), str(run), "-o", str(tmp_path / "x")], capsys)
    assert code == 2 and "--format html (or junit, github" in err
    code, _, err = ragqual(head_db, ["compare", str(run), str(run), "--format", "github", "--stale-after", "2w"],
                           capsys)
    assert code == 2 and "--stale-after" in err
