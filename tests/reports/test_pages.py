"""The HTML reports as files: self-contained, deterministic, tables readable without scripts."""

from __future__ import annotations

import re

import pytest

from tests.cli.conftest import invoke
from tests.reports.conftest import QUESTIONS
from tests.reports.pages import chart_spec, inline_records, resource_references, table_rows

KINDS = ("eval", "run-retrieval", "run-generation", "compare", "history", "matrix")


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_references_no_http_resource(reports, kind):
    text = reports.pages[kind].read_text(encoding="utf-8")
    assert resource_references(text) == []
    assert "<script src" not in text and "<link " not in text
    assert text.count("vegaEmbed(") >= 1  # the chart library is inline, not fetched


def test_resource_check_catches_every_way_a_page_could_fetch():
    for bad in ('<script src="https://cdn.example/x.js"></script>', "<link href='http://x/y.css'>",
                "<style>b{background:url(https://x/y.png)}</style>", "<style>@import 'https://x/y.css';</style>",
                '<img src=//x/y.png>', 'fetch("https://x/data.json")'):
        assert resource_references(bad), bad


def test_the_same_history_gives_the_same_bytes(reports, tmp_path):
    for args in (["report", str(reports.generation_run)], ["compare", f"{reports.retrieval_run}:dense",
                                                           f"{reports.retrieval_run}:hybrid"], ["history"]):
        first, second = tmp_path / "a.html", tmp_path / "b.html"
        for out in (first, second):
            assert invoke(*args, "--format", "html", "-o", str(out)).exit_code == 0
        assert first.read_bytes() == second.read_bytes(), args


def test_eval_writes_the_page_beside_the_markdown(reports):
    page = reports.pages["eval"]
    assert page.name == f"eval-run{reports.generation_run}.html"
    assert page.with_suffix(".md").is_file()
    assert page.stat().st_size <= 5 * 1024 * 1024


def test_the_question_table_is_server_rendered_with_every_slot(reports):
    text = reports.pages["run-generation"].read_text(encoding="utf-8")
    rows = table_rows(text, "questions")
    assert len(rows) == QUESTIONS * 3  # one row per question and mode (the mock model), repeats inside
    assert '<p class="verdict">mock:' in text  # the mode decomposition in words, as eval prints it
    detail = text[text.index('id="questions"'):]
    assert "<b>question</b>" in detail and "<b>context</b>" in detail and "<b>answer</b>" in detail
    assert re.search(r"(PASS|FAIL) correctness \(assertion [0-9a-f]{8} v\d+, weight", detail)


def test_the_compare_page_names_the_verdict_and_every_metric_row(reports):
    text = reports.pages["compare"].read_text(encoding="utf-8")
    assert re.search(r'<p class="verdict">(INCONCLUSIVE|EQUIVALENT|IMPROVEMENT|REGRESSION|NOTHING)', text)
    rows = {r.get("row") for r in inline_records(chart_spec(text, "forest"))}
    for metric in ("recall@5", "mrr", "ndcg@10"):
        assert f"dense->hybrid | {metric}" in rows


def test_the_history_page_colours_by_corpus_fingerprint(reports):
    text = reports.pages["history"].read_text(encoding="utf-8")
    assert '"field":"fingerprint"' in text and "corpus fingerprint" in text


def test_output_file_needs_the_html_format(reports, tmp_path, capsys):
    from ragqual.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(["report", str(reports.retrieval_run), "-o", str(tmp_path / "x.html")])
    assert caught.value.code == 2 and "--format html" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_html_without_output_file_prints_the_page(reports):
    result = invoke("history", "--format", "html")
    assert result.exit_code == 0 and result.stdout.startswith("<!DOCTYPE html>")


def test_hits_are_classed_by_the_golden():
    from ragqual.reports.run import hit_kind

    golden = {"relevantDocIds": ["cpr-adult"], "expectRefusal": False}
    assert hit_kind("cpr-adult", golden) == "relevant"
    assert hit_kind("hypothermia", golden) == "non-relevant"
    assert hit_kind("cpr-adult", {"relevantDocIds": [], "expectRefusal": True}) == "refusal question"


def stored_hits(database, run: int) -> dict[tuple[str, str], list[float]]:
    """(strategy, kind) -> the scores of the run's stored hits, read with sqlite3 and the goldens."""
    import json
    import sqlite3

    from ragqual.reports.run import hit_kind

    db = sqlite3.connect(database)
    goldens = {}
    for case_id, definition in db.execute("SELECT case_id, definition FROM cases ORDER BY id"):
        data = json.loads(definition)
        goldens[case_id] = data["input"] if isinstance(data.get("input"), dict) else data
    hits: dict[tuple[str, str], list[float]] = {}
    for strategy, query_id, doc_id, score in db.execute(
            "SELECT strategy, query_id, doc_id, score FROM v_retrieval_hits WHERE run_id = ?", (run,)):
        hits.setdefault((strategy, hit_kind(doc_id, goldens[query_id])), []).append(score)
    db.close()
    return hits


def test_the_retrieval_page_counts_every_stored_hit_in_its_bins(reports):
    """The histograms' bins are counted before the page: their counts sum to the stored hits of each
    strategy and kind, and each strategy's bins span its own scores' range."""
    from ragqual.core.histogram import DEFAULT_BINS
    from ragqual.reports.run import HIT_KINDS

    stored = stored_hits(reports.root / "eval-results" / "eval.db", reports.retrieval_run)
    assert sum(map(len, stored.values())) > 0
    bars = inline_records(chart_spec(reports.pages["run-retrieval"].read_text(encoding="utf-8"), "similarity"))
    counted: dict[tuple[str, str], int] = {}
    for bar in bars:
        assert bar["start"] < bar["end"] and bar["hits"] > 0
        counted[(bar["strategy"], bar["kind"])] = counted.get((bar["strategy"], bar["kind"]), 0) + bar["hits"]
    assert counted == {key: len(scores) for key, scores in stored.items()}
    strategies = {strategy for strategy, _ in stored}
    assert len(bars) <= len(strategies) * len(HIT_KINDS) * DEFAULT_BINS
    for strategy in strategies:
        scores = [s for (name, _), values in stored.items() if name == strategy for s in values]
        mine = [b for b in bars if b["strategy"] == strategy]
        assert min(b["start"] for b in mine) == pytest.approx(min(scores), rel=1e-9)
        assert max(b["end"] for b in mine) == pytest.approx(max(scores), rel=1e-9)


def test_the_history_interval_is_z_sd_over_root_n_of_the_question_means():
    from ragqual.core.stats import question_mean_halfwidth

    assert question_mean_halfwidth([0.0, 1.0]) == pytest.approx(1.959964 * 0.707107 / 1.414214, rel=1e-5)
    assert question_mean_halfwidth([1.0, 1.0, 1.0]) == 0.0
    assert question_mean_halfwidth([0.5]) is None


def test_the_history_page_draws_an_interval_around_each_mean(reports):
    text = reports.pages["history"].read_text(encoding="utf-8")
    points = re.findall(r'"fingerprint":"[0-9a-f]{12}","group":"[^"]+","high":([-\d.e]+|null),"low":([-\d.e]+|null),'
                        r'"run":"[^"]+","value":([-\d.e]+)', text)
    assert points and any(h != "null" for h, _, _ in points)
    for high, low, value in points:
        if high != "null":
            assert float(low) <= float(value) <= float(high)
