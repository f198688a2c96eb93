"""The decomposition's advice on a small corpus of our own making: two near-miss twins, out-of-corpus
questions whose similarities overlap answerable ones, and a long document that crowds the context.
The advice never names a setting that lowers the measured objective, the reader ceiling passes the
twin questions the echo fails, and `whatif` at the run's own setting gives back its stored metrics."""

import json
import re
import shutil
import sqlite3

import pytest

from tests.support.projects import own_project as write_project

from .conftest import invoke

pytestmark = pytest.mark.slow

DOCS = {
    "pump-alder": "# Alder pump\n\nThe Alder hand pump lifts 40 litres per minute from a shallow well.\n",
    "pump-birch": "# Birch pump\n\nThe Birch hand pump lifts 65 litres per minute from a shallow well.\n",
    "tank-cedar": "# Cedar tank\n\nThe Cedar rain tank holds 1200 litres and needs cleaning every 6 months.\n",
    "filter-dune": "# Dune filter\n\nThe Dune ceramic filter treats 8 litres per hour and its candle lasts 900 litres.\n",
    "well-manual": "# Well manual\n\n" + "\n\n".join(
        f"## Part {i}\n\nHand pumps and shallow wells need care: check the seals, the valves, the handle and the "
        f"rod of the well pump every season, and keep part {i} of the log up to date." for i in range(1, 15)),
}
GOLDENS = [
    {"id": "alder-flow", "query": "How many litres per minute does the Alder hand pump lift?",
     "relevantDocIds": ["pump-alder"], "mustInclude": [r"\b40 litres"], "mustNotInclude": [r"\b65 litres"]},
    {"id": "birch-flow", "query": "How many litres per minute does the Birch hand pump lift?",
     "relevantDocIds": ["pump-birch"], "mustInclude": [r"\b65 litres"], "mustNotInclude": [r"\b40 litres"]},
    {"id": "cedar-size", "query": "How much water does the Cedar rain tank hold?",
     "relevantDocIds": ["tank-cedar"], "mustInclude": [r"1200 litres"], "mustNotInclude": []},
    {"id": "dune-rate", "query": "How fast does the Dune ceramic filter treat water?",
     "relevantDocIds": ["filter-dune"], "mustInclude": [r"8 litres per hour"], "mustNotInclude": []},
    {"id": "well-seals", "query": "How often should the seals of a well pump be checked?",
     "relevantDocIds": ["well-manual"], "mustInclude": [r"every season"], "mustNotInclude": []},
    {"id": "oak-flow", "query": "How many litres per minute does the Oak hand pump lift?", "expectRefusal": True},
    {"id": "pine-tank", "query": "How much water does the Pine rain tank hold?", "expectRefusal": True},
    {"id": "elm-filter", "query": "How fast does the Elm sand filter treat water?", "expectRefusal": True},
]


@pytest.fixture(scope="module")
def own_project(tmp_path_factory, shared_cache):
    goldens = [{"tags": ["out-of-corpus"] if g.get("expectRefusal") else ["own"], **g} for g in GOLDENS]
    with write_project(tmp_path_factory.mktemp("own"), DOCS, goldens, shared_cache) as root:
        yield root


@pytest.fixture(scope="module")
def run(own_project):
    result = invoke("generation", "--model", "mock", "--all-modes", "--repeats", "1", "--chunk-tokens", "40",
                    "--overlap-tokens", "0")
    assert result.exit_code == 0, result.output
    db = sqlite3.connect(own_project / "eval-results" / "eval.db")
    run_id = db.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    metrics = {}
    for case_id, metric, value in db.execute(
            "SELECT c.case_id, mv.metric, mv.value FROM metric_values mv JOIN trials t ON t.id = mv.trial_id "
            "JOIN cases c ON c.id = t.case_pk WHERE mv.run_id = ? AND t.mode = 'e2e'", (run_id,)):
        metrics.setdefault(case_id, {})[metric] = value
    db.close()
    return run_id, result.output, metrics


def test_the_reader_ceiling_passes_the_twin_questions_the_echo_fails(run):
    _, _, metrics = run
    twins = [metrics[c] for c in ("alder-flow", "birch-flow")]
    assert any(m["correctness"] == 0.0 and m["readerCeiling"] == 1.0 for m in twins), twins


def test_whatif_at_the_runs_own_setting_gives_back_the_stored_metrics(run):
    run_id, _, metrics = run
    result = invoke("--json", "whatif", str(run_id), "--chunk-tokens", "40", "--overlap-tokens", "0")
    assert result.exit_code == 0, result.output
    (mock,) = json.loads(result.stdout)
    (own,) = mock["rows"]
    stored = list(metrics.values())
    mean = lambda name: sum(m[name] for m in stored if m.get(name) is not None) / sum(  # noqa: E731
        1 for m in stored if m.get(name) is not None)
    assert own["reader"] == mean("correctness")
    assert own["reader_ceiling"] == mean("readerCeiling")
    assert own["context_recall"] == mean("contextRecall")
    assert own["fact_coverage"] == mean("factCoverage")


def test_the_advice_never_names_a_setting_that_lowers_the_objective(run):
    run_id, output, _ = run
    result = invoke("--json", "whatif", str(run_id), "--chunk-tokens", "40", "--overlap-tokens", "0",
                    "--threshold", "0.2:0.9:0.05", "--context-k", "1,2,3,5,8")
    assert result.exit_code == 0, result.output
    (mock,) = json.loads(result.stdout)
    own = next(r for r in mock["rows"] if r["setting"] == mock["own"])
    named = re.search(r"threshold (\S+), context-k (\d+) would raise", mock["advice"] or "")
    if named:
        threshold, k = float(named.group(1).rstrip(",")), int(named.group(2))
        row = next(r for r in mock["rows"] if r["setting"] == {"threshold": threshold, "context_k": k,
                                                                  "strategy": None})
        assert row["reader"] > own["reader"]
    else:
        assert all(r["reader"] <= own["reader"] for r in mock["rows"])
    # what the generation command itself said is the same measurement over the threshold grid
    said = re.search(r"measured on this run: threshold (\S+), context-k (\d+) would raise mock pass from (\S+) to (\S+) ",
                     output)
    if said:
        assert float(said.group(4)) > float(said.group(3))
    assert "--threshold) would let it decline" not in output  # the old unmeasured sentence is gone
