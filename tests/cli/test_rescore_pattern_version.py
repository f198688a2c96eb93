"""A run stored under the previous answer patterns, then `ragqual rescore`: new rows of the new
versions are appended and every old row stays as it was."""

from __future__ import annotations

import json
import sqlite3

import pytest
import regex

from ragqual.core import answer_metrics
from ragqual.core.answer_patterns import PATTERNS_VERSION
from ragqual.subjects import rag
from tests.cli.conftest import one_document_project, ragqual

ANSWER = "There is no information suggesting it is unsafe; boil for 1 minute."
# Version 1's reading of that answer: a refusal, wherever "there is no information" stood.
V1_NO_INFORMATION = (r"\b(?:there is|there's|I found|I see|contains?) no (?:relevant |specific )?"
                     r"(?:information|details|mention)\b")


def _v1_is_refusal(answer: str) -> bool:
    return regex.search(V1_NO_INFORMATION, answer, regex.IGNORECASE) is not None


@pytest.fixture
def project(tmp_path, monkeypatch):
    """One document and one answerable golden; the mock model answers with the document's text."""
    return one_document_project(tmp_path, monkeypatch, ANSWER)


def _rows(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


METRICS = "SELECT id, trial_id, metric, value, scorer_version FROM metric_values WHERE trial_id IS NOT NULL ORDER BY id"
VERDICTS = ("SELECT a.id, a.assertion_version, a.passed FROM assertion_results a "
            "JOIN assertion_defs d ON d.assertion_id = a.assertion_id AND d.version = a.assertion_version "
            "WHERE d.category = 'refusal' ORDER BY a.id")
SCORES = "SELECT id, trial_id, scorer_name, scorer_version, score, perfect FROM trial_scores ORDER BY id"


def test_rescore_after_a_pattern_version_bump_appends_new_versions_and_keeps_the_old_rows(project, capsys):
    db = project / "eval-results" / "eval.db"
    with pytest.MonkeyPatch.context() as old:  # the history as the previous patterns wrote it
        old.setattr(rag, "CHECKS_VERSION", 1)
        old.setattr(rag.RagSubject, "metrics_version", 1)
        old.setattr(answer_metrics, "is_refusal", _v1_is_refusal)
        code, out, err = ragqual(db, ["generation", "--model", "mock", "--mode", "oracle", "--repeats", "1"], capsys)
    assert code == 0, err
    metrics_before, verdicts_before, scores_before = _rows(db, METRICS), _rows(db, VERDICTS), _rows(db, SCORES)
    refusal_rows = {(v, s) for _, _, m, v, s in metrics_before if m == "refusalCorrectness"}
    assert refusal_rows == {(0.0, 1)}
    assert [(v, p) for _, v, p in verdicts_before] == [(1, 0)]  # version 1 read the answer as a refusal

    code, out, err = ragqual(db, ["rescore", "1"], capsys)
    assert code == 0, err
    assert "rescored 1 of 1 trial(s)" in out and "1 trial score(s) changed" in out

    metrics_after, verdicts_after, scores_after = _rows(db, METRICS), _rows(db, VERDICTS), _rows(db, SCORES)
    assert metrics_after[:len(metrics_before)] == metrics_before  # every old row as it was
    assert verdicts_after[:len(verdicts_before)] == verdicts_before
    assert scores_after[:len(scores_before)] == scores_before
    new_metrics = {m: (v, s) for _, _, m, v, s in metrics_after[len(metrics_before):]}
    assert new_metrics["refusalCorrectness"] == (1.0, rag.RAG_METRICS_VERSION) and rag.RAG_METRICS_VERSION == 2
    assert {s for _, s in new_metrics.values()} == {rag.RAG_METRICS_VERSION}
    assert [(v, p) for _, v, p in verdicts_after[len(verdicts_before):]] == [(PATTERNS_VERSION, 1)]
    assert [row[4:] for row in scores_after] == [(0.5, 0), (1.0, 1)]  # correctness passed, the refusal now too

    # Reports read the new version; --scorer-version pins the metrics as they stood before it.
    code, out, err = ragqual(db, ["--json", "report", "1"], capsys)
    assert code == 0, err
    code, pinned, err = ragqual(db, ["--json", "report", "1", "--scorer-version", "1"], capsys)
    assert code == 0, err
    assert _refusal_mean(out) == 1.0 and _refusal_mean(pinned) == 0.0


def _refusal_mean(report_json: str) -> float:
    """The run's refusalCorrectness mean, wherever the JSON report puts it."""
    found: list[float] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "refusalCorrectness" and isinstance(value, int | float):
                    found.append(float(value))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(report_json))
    assert found, report_json[:2000]
    return found[0]
