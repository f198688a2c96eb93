"""One unit per quantity and `-` for a missing value, in every table ragqual prints.

Rates and metrics are fractions with three decimals (a pass rate is 0.500, never 50.0 or 0.5000);
a missing value is `-` (never "None", "nan", "" or an en dash). One test per table kind, each with
a missing value in it.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.cli.conftest import ragqual
from tests.store.test_queries import generation_run, retrieval_run

BAD_MISSING = ("None", "nan", "NaN", "–", "n/a", "(unknown)")


def _cells(line: str) -> list[str]:
    """A markdown row's cells, stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _row(text: str, first: str) -> list[str]:
    """The whitespace-split tokens of the first text-table line that starts with `first`."""
    return next(line.split() for line in text.splitlines() if line.split()[:1] == [first])


def _no_bad_missing(text: str) -> None:
    for bad in BAD_MISSING:
        assert bad not in text, f"{bad!r} shown for a missing value"


# -- the rule itself -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [None, float("nan"), pd.NA, pd.NaT, ""])
def test_every_kind_of_missing_value_is_a_dash(value):
    from ragqual.core.display import fmt_value

    assert fmt_value(value) == "-"


def test_each_quantity_has_one_unit():
    from ragqual.core.display import fmt_value

    assert fmt_value(0.83567, "pass_rate") == "0.836"
    assert fmt_value(0.83567, "recall@5") == "0.836"
    assert fmt_value(12.345, "latency_p95_ms") == "12.3"
    assert fmt_value(0.031249, "p_adjusted") == "0.0312"
    assert fmt_value(0.00123, "cost") == "0.0012"
    assert fmt_value(40.0, "questions") == "40" and fmt_value(7, "n") == "7" and fmt_value(True) == "True"


# -- report -------------------------------------------------------------------------------------------

def test_report_shows_pass_rate_as_a_fraction_and_missing_cost_as_a_dash(head_db, store, capsys):
    generation_run(store, [{"case": "q1"}, {"case": "q2", "score": 0.0, "passed": False}])  # no cost recorded
    code, out, err = ragqual(head_db, ["report", "--last"], capsys)
    assert code == 0, err
    header = _row(out, "variant")
    row = dict(zip(header, _row(out, "m1"), strict=True))
    assert "pass_pct" not in header and row["pass_rate"] == "0.500" and row["score"] == "0.500"
    assert row["cost"] == "-" and row["cache_hit_rate"] == "0.000"
    _no_bad_missing(out)


def test_report_frame_holds_fractions(head_db, store):
    from ragqual.app.run_report import build_report

    run = generation_run(store, [{"case": "q1"}, {"case": "q2", "score": 0.0, "passed": False, "cache_hit": True}])
    frame = build_report(store.engine, store.get_run(run)).to_frame()
    assert frame["pass_rate"].tolist() == [0.5] and frame["cache_hit_rate"].tolist() == [0.5]


# -- compare (text and markdown) ----------------------------------------------------------------------

@pytest.fixture
def two_retrieval_runs(store):
    values = {"dense": {f"q{i}": {"mrr": 0.5 + i / 100} for i in range(8)}}
    return retrieval_run(store, values), retrieval_run(store, values)


def test_compare_text_shows_a_dash_where_a_test_has_no_discordant_counts(head_db, two_retrieval_runs, capsys):
    base, new = two_retrieval_runs
    code, out, err = ragqual(head_db, ["compare", str(base), str(new), "--metric", "mrr"], capsys)
    assert code == 0, err
    header = _row(out, "group")
    row = dict(zip(header, _row(out, "dense"), strict=True))
    assert row["b"] == "-" and row["c"] == "-" and row["base_mean"] == "0.535" and row["delta"] == "0.000"
    _no_bad_missing(out)


def test_compare_markdown_shows_a_dash_for_missing_cells(head_db, two_retrieval_runs, capsys):
    base, new = two_retrieval_runs
    code, out, err = ragqual(head_db, ["compare", str(base), str(new), "--metric", "mrr", "--format", "markdown"],
                             capsys)
    assert code == 0, err
    lines = out.splitlines()
    header = _cells(next(line for line in lines if line.startswith("| group")))
    row = dict(zip(header, _cells(next(line for line in lines if line.startswith("| dense"))), strict=True))
    assert row["b"] == "-" and row["c"] == "-" and row["base_mean"] == "0.535"
    assert "||" not in out.replace("\\|", "")


# -- history ------------------------------------------------------------------------------------------

def test_history_shows_pass_as_a_fraction_and_a_dash_for_a_metric_a_run_lacks(head_db, store, capsys):
    generation_run(store, [{"case": "q1"}, {"case": "q2", "score": 0.0, "passed": False}])  # no correctness rows
    code, out, err = ragqual(head_db, ["history"], capsys)
    assert code == 0, err
    header = _row(out, "run_id")
    tokens = next(line.split() for line in out.splitlines()[1:] if line.split())
    assert tokens[-6:] == ["0.500", "0.500", "-", "-", "-", "-"]  # no tags, nothing before it to change from
    assert header[-6:] == ["score", "pass", "correctness", "contextRecall", "tags", "changed"]
    _no_bad_missing(out)


def test_history_markdown_shows_a_dash_for_a_missing_cell(head_db, store, capsys):
    generation_run(store, [{"case": "q1"}])
    code, out, err = ragqual(head_db, ["history", "--format", "markdown"], capsys)
    assert code == 0, err
    row = _cells(out.splitlines()[2])
    assert row[-6:] == ["1.000", "1.000", "-", "-", "-", "-"]  # score, pass, correctness, contextRecall, tags, changed


# -- generation summary and matrix ---------------------------------------------------------------------

def _line(mode: str = "e2e", refusal: float | None = None):
    from ragqual.store.generation_reads import ModeLine

    return ModeLine("m1", mode, correctness=0.83333, refusal=refusal, pass_rate=0.5, unstable=0, questions=6)


def test_generation_mode_table_shows_fractions_and_a_dash():
    from ragqual.cli.generation_tables import mode_table

    row = _cells(mode_table([_line()]).splitlines()[2])
    assert row[2:5] == ["0.833", "-", "0.500"]


def test_matrix_shows_a_dash_for_a_mode_a_model_did_not_run():
    from ragqual.cli.matrix_cmd import capability_table

    row = _cells(capability_table([_line("e2e", 1.0)], ["oracle", "e2e"]).splitlines()[2])
    assert row == ["m1", "-", "-", "-", "0.833", "1.000", "0.500"]


# -- retrieval summary and sweep ------------------------------------------------------------------------

def test_retrieval_metric_table_shows_fractions_and_a_dash():
    from ragqual.pipeline.report import metric_table

    table = metric_table({"dense": {"recall@1": 0.83333, "recall@5": None, "questions": 6}},
                         columns=("recall@1", "recall@5"), first="strategy")
    assert _cells(table.splitlines()[2]) == ["dense", "0.833", "-", "6"]


def test_sweep_table_shows_fractions_milliseconds_and_a_dash():
    from ragqual.app.sweep_run import SweepOutcome
    from ragqual.cli.sweep_cmd import COLUMNS, render_markdown

    selection = {c: None for c in COLUMNS} | {"recall@5": 0.83333, "contextChars": 1234.56}
    rows = {"dense/c5/k3": {"selection": selection, "reported": selection, "latencyP95Ms": None,
                            "indexVectorBytes": 1536, "chunks": 1, "ingestMs": None, "embeddedTexts": None}}
    verdict = SimpleNamespace(sentence="keep the baseline", best=None)
    outcome = SweepOutcome([1], rows, verdict, "validation", "test", {}, first="dense/c5/k3")
    text = render_markdown(outcome)
    header = _cells(next(line for line in text.splitlines() if line.startswith("| config")))
    row = dict(zip(header, _cells(next(line for line in text.splitlines() if line.startswith("| dense"))),
                   strict=True))
    assert row["recall@5 (validation)"] == "0.833" and row["recall@1 (validation)"] == "-"
    assert row["latency p95 ms"] == "-" and row["contextChars (validation)"] == "1235"
    assert row["index bytes"] == "1536" and row["ingest ms"] == "cached" and row["embedded"] == "-"
    _no_bad_missing(text)


# -- run summary --------------------------------------------------------------------------------------

def test_run_summary_shows_pass_rate_as_a_fraction_and_missing_latency_as_a_dash():
    from ragqual.cli.summary_tables import summary_frame
    from ragqual.core.scoring import VariantAggregate
    from ragqual.engine.aggregate import RunSummary, VariantSummary

    aggregate = VariantAggregate(trials=4, mean_score=0.83333, pass_rate=0.75, total_cost=None,
                                 latency_p50_ms=None, latency_p95_ms=12.345)
    summary = RunSummary(1, "weighted-assertions", None, (VariantSummary("mock", aggregate, 0, 0),), (), 0)
    row = summary_frame(summary).iloc[0].to_dict()
    assert "pass_pct" not in row and row["pass_rate"] == "0.750" and row["mean_score"] == "0.833"
    assert row["p50_ms"] == "-" and row["p95_ms"] == "12.3" and row["cost"] == "-"


# -- audit --------------------------------------------------------------------------------------------

def test_audit_shows_metrics_as_fractions_and_a_dash_for_unknowns():
    from ragqual.cli.audit_cmd import _headline_lines, _run_lines

    run = {"id": 1, "kind": "generation", "subject": "rag", "started_at": "2026-01-01", "status": "finished",
           "git_sha": "abc", "git_dirty": None, "corpus_fingerprint": None, "dataset_hash": None,
           "provenance": {}, "argv": ["ragqual"], "params": {}}
    text = "\n".join(_run_lines({"run": run, "run_events": []}))
    assert "dirty: -" in text and "ragqual -  python -" in text
    trial = {"parsed_output": None, "raw_output": "an answer", "created_at": "2026-01-01", "slug": "q1",
             "variant_name": "mock", "mode": "e2e", "repeat_index": 0, "error": None,
             "case_definition": {"input": {"query": "a question"}, "assertions": []}}
    scoring = {"scores": [], "assertions": [], "created_at": "2026-01-01", "batch": "b" * 8}
    metrics = _headline_lines(1, {"trial": trial, "run": run, "assertion_defs": [], "scorings": [scoring],
                                  "metrics": [{"metric": "recall@5", "value": 0.83333},
                                              {"metric": "mrr", "value": None}]})
    assert metrics[-1] == "metrics  recall@5=0.833  mrr=-"


# -- corpus status ------------------------------------------------------------------------------------

def test_corpus_status_shows_a_dash_for_an_unknown_ingested_fingerprint(tmp_path):
    from ragqual.adapters.qdrant_store import Manifest
    from ragqual.app.corpus_ops import CorpusStatus
    from ragqual.cli.corpus_cmd import _status_lines

    manifest = Manifest(fingerprint="", embedder_id="", expected_chunks=3, stored_chunks=3, matching_chunks=0)
    status = CorpusStatus(tmp_path, 2, "minilm", "c", "embedded", "f" * 64, manifest, {"a": 3}, "stale")
    text = "\n".join(_status_lines(SimpleNamespace(verbose=0), status))
    assert "ingested     -: 3 chunks of 1 documents by -" in text
    _no_bad_missing(text)


# -- HTML tables --------------------------------------------------------------------------------------

def test_html_table_shows_fractions_and_a_dash():
    from ragqual.reports.page import table

    html = table(pd.DataFrame({"variant": ["m1"], "pass_rate": [0.83333], "cost": [math.nan],
                               "latency_p50_ms": [12.345]}))
    assert '<td class="num">0.833</td>' in html and '<td class="num">-</td>' in html
    assert '<td class="num">12.3</td>' in html
