"""Every metric name the retrieval and generation tiers store, report or compare is registered.

The bundled corpus and goldens go through the CLI (retrieval with two strategies, generation with
the mock model); a metric a producer adds without registering it in `ragqual.core.metric_names`
(direction, tier, display order) fails here with its name.
"""

import json
import sqlite3

import pytest

from ragqual.core.metric_names import is_registered
from tests.cli.conftest import invoke

pytestmark = pytest.mark.slow


def _json(*args: str) -> dict:
    result = invoke("--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def runs(workdir):
    retrieval = _json("retrieval", "--strategy", "dense", "--strategy", "bm25")
    generation = _json("generation", "--model", "mock", "--mode", "e2e", "--mode", "noretrieval", "--repeats", "1")
    return {"retrieval": retrieval, "generation": generation}


def _unregistered(names) -> list[str]:
    return sorted({n for n in names if not is_registered(n)})


def test_the_retrieval_command_reports_registered_metrics_only(runs):
    quality = runs["retrieval"]["quality"]
    names = {m for q in quality.values() for row in [q["overall"], *q["byTag"].values()] for m in row}
    names |= {m for q in quality.values() for question in q["perQuestion"] for m in question["metrics"]}
    assert {"recall@5", "mrr", "contextChars", "nonEmptyRefusal"} <= names
    assert _unregistered(names - {"questions"}) == []


def test_every_stored_metric_name_is_registered(runs, workdir):
    db = sqlite3.connect(workdir / "eval-results" / "eval.db")
    names = {row[0] for row in db.execute("SELECT DISTINCT metric FROM metric_values")}
    assert {"recall@5", "contextPrecision@5", "correctness", "thinkTagLeak"} <= names
    assert _unregistered(names) == []


def test_the_retrieval_report_shows_registered_metrics_only(runs):
    report = _json("report", str(runs["retrieval"]["run"]["run_id"]))
    names = {m for row in report["metrics"] for m in row} - {"strategy", "questions"}
    assert "ndcg@10" in names and _unregistered(names) == []


@pytest.mark.parametrize("tier, expected", [("retrieval", "hit@5"), ("generation", "pass")])
def test_compare_judges_registered_metrics_only(runs, tier, expected):
    run_id = str(runs[tier]["run"]["run_id"] if tier == "retrieval" else runs[tier]["run_id"])
    compared = _json("compare", run_id, run_id, "--all-metrics", "--resamples", "50")
    names = {row["metric"] for row in compared["metrics"]}
    assert expected in names and _unregistered(names) == []
