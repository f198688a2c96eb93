"""The pure rules behind the CI output: JUnit XML text, the staleness rule, the goldens lock
format and its diff, and what counts as a regression on a critical golden."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from ragqual.core.critical import metric_regressed, pass_regressed
from ragqual.core.goldens import parse_goldens
from ragqual.core.junit import JUnitCase, junit_xml, xml_safe
from ragqual.core.lockfile import Drift, Lock, drift, parse_lock, prompts_drifted
from ragqual.core.staleness import Ancestry, StaleAfter, parse_stale_after, staleness_warning
from ragqual.errors import InputError, ValidationFailed

HOSTILE = 'say "hi" ]]> <b>&amp;</b> \x00\x01\x07\x1b\x1f tab\tnewline\n end \ufffe'


# -- JUnit -----------------------------------------------------------------------------------------

def test_junit_text_parses_with_each_outcome_and_hostile_text_survives(tmp_path):
    cases = [JUnitCase("ragqual.g", "ok"), JUnitCase("ragqual.g", HOSTILE, "failure", HOSTILE, HOSTILE, "Regression"),
             JUnitCase("ragqual.g", "err", "error", "trial error", "Traceback: boom", "TrialError"),
             JUnitCase("ragqual.g", "flaky", "skipped", "unstable: passed 1 of 2 repeats")]
    text = junit_xml('suite "x" ]]>', cases, {"verdict": HOSTILE})
    root = ET.fromstring(text.encode("utf-8"))  # well-formed XML 1.0, or this raises
    assert root.tag == "testsuites" and root.get("tests") == "4"
    path = tmp_path / "r.xml"
    path.write_text(text, encoding="utf-8")
    suite = next(iter(JUnitXml.fromfile(str(path))))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (4, 1, 1, 1)
    by_name = {case.name: case for case in suite}
    hostile = by_name[xml_safe(HOSTILE)]
    (failure,) = hostile.result
    assert isinstance(failure, Failure) and failure.type == "Regression"
    assert 'say "hi" ]]> <b>&amp;</b> \\x00\\x01\\x07\\x1b\\x1f tab\tnewline' in failure.message
    assert failure.text.endswith("end \\ufffe")
    assert isinstance(by_name["err"].result[0], Error)
    assert isinstance(by_name["flaky"].result[0], Skipped)
    assert by_name["flaky"].result[0].message == "unstable: passed 1 of 2 repeats"
    assert by_name["ok"].is_passed


def test_an_unknown_outcome_is_refused():
    with pytest.raises(ValueError):
        JUnitCase("c", "n", "flaky")


# -- staleness -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [("30", StaleAfter(commits=30)), ("14d", StaleAfter(days=14.0)),
                                            (" 0 ", StaleAfter(commits=0))])
def test_stale_after_parses_commits_or_days(text, expected):
    assert parse_stale_after(text) == expected


@pytest.mark.parametrize("text", ["", "3w", "-1", "1.5d", "d"])
def test_stale_after_refuses_anything_else(text):
    with pytest.raises(InputError, match="--stale-after"):
        parse_stale_after(text)


def test_staleness_warns_off_the_ancestry_and_past_either_limit():
    sha = "1234567890abcdef"
    current = Ancestry("ok", "f" * 40, True, 3, 2.0)
    assert staleness_warning(sha, current, StaleAfter(commits=3)) is None  # exactly the limit is fine
    assert "3 commits behind HEAD (more than 2 commits)" in staleness_warning(sha, current, StaleAfter(commits=2))
    assert staleness_warning(sha, current, StaleAfter(days=2)) is None
    assert "2.0 days behind HEAD" in staleness_warning(sha, current, StaleAfter(days=1))
    elsewhere = Ancestry("ok", "f" * 40, False, 1, 0.0)
    assert "1234567890ab is not an ancestor of HEAD ffffffffffff" in staleness_warning(sha, elsewhere, StaleAfter(99))
    assert "no git repository here" in staleness_warning(sha, Ancestry("no git repository here"), StaleAfter(9))


# -- the lock --------------------------------------------------------------------------------------

def test_lock_text_is_deterministic_and_round_trips():
    one = Lock({"goldens": "g", "corpus": "c", "glossary": None}, {"c/b.md": "sha256:2", "c/a.md": "sha256:1"},
               {"rag-system": "sha256:p"})
    other = Lock(dict(reversed(list(one.roots.items()))), dict(reversed(list(one.files.items()))), one.prompts)
    assert one.to_text() == other.to_text() and one.to_text().endswith("}\n")
    assert one.to_text().index('"c/a.md"') < one.to_text().index('"c/b.md"')
    assert parse_lock(one.to_text()) == one


def test_drift_names_each_added_removed_and_changed_file_and_prompt():
    lock = Lock({}, {"a": "sha256:1", "b": "sha256:2", "c": "sha256:3"}, {"rag-system": "sha256:p"})
    found = drift(lock, {"a": "sha256:1", "b": "sha256:X", "d": "sha256:4"}, {"rag-system": "sha256:q"})
    assert found == [Drift("b", "changed"), Drift("c", "removed"), Drift("d", "added"),
                     Drift("prompt:rag-system", "changed")]
    assert drift(lock, dict(lock.files)) == []
    assert prompts_drifted(lock, ["q"]) and not prompts_drifted(lock, ["p"]) and not prompts_drifted(lock, [])


@pytest.mark.parametrize("text, match", [("{", r"lock.json:1: not valid JSON"), ('{"format": "x"}', "not a ragqual-lock/1"),
                                         ('{"format": "ragqual-lock/1", "roots": {}, "files": {"a": 1}}', "objects of strings")])
def test_a_bad_lock_file_is_one_clear_line(text, match):
    with pytest.raises(InputError, match=match):
        parse_lock(text, "ragqual.lock.json")


# -- critical goldens ------------------------------------------------------------------------------

def test_a_critical_pass_regresses_only_from_passing_every_repeat_to_failing_one():
    assert pass_regressed(1.0, 0.5) and pass_regressed(1.0, 0.0)
    assert not pass_regressed(0.5, 0.0)  # already failing in a repeat of BASE
    assert not pass_regressed(1.0, 1.0) and not pass_regressed(0.0, 1.0)


def test_a_critical_retrieval_metric_regresses_beyond_the_tolerance_only():
    assert metric_regressed(1.0, 0.5, 0.02) and not metric_regressed(1.0, 0.98, 0.02)
    assert metric_regressed(100.0, 200.0, 0.02, lower_is_better=True)
    assert not metric_regressed(0.5, 1.0, 0.02)


def _golden(extra: str) -> bytes:
    return ('{"id": "q1", "query": "?", "turns": [], "relevantDocIds": ["d"], "mustInclude": ["x"], '
            f'"mustNotInclude": [], "expectRefusal": false, "tags": ["t"]{extra}}}\n').encode()


def test_goldens_may_be_marked_critical_and_a_bad_type_names_file_and_line():
    (marked,) = parse_goldens([("g.jsonl", _golden(', "critical": true'))], {"d"})
    (plain,) = parse_goldens([("g.jsonl", _golden(""))], {"d"})
    assert marked.critical and not plain.critical
    assert marked.to_json_dict()["critical"] is True and "critical" not in plain.to_json_dict()
    with pytest.raises(ValidationFailed) as caught:
        parse_goldens([("g.jsonl", b"\n" + _golden(', "critical": "yes"'))], {"d"})
    (issue,) = caught.value.issues
    assert (issue.file, issue.line) == ("g.jsonl", 2) and 'critical must be true or false, got "yes"' in issue.message
