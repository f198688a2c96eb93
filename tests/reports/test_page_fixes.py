"""The pages say what the text says: each chart and table checked against what it claims (legend
titles, colour fields, the cause column, the ablation's order and deltas, the mock's by-design cells,
the reader ceiling and the whatif curve of a generation run)."""

from __future__ import annotations

import re

from tests.reports.pages import chart_spec, inline_records, table_rows


def _text(reports, kind: str) -> str:
    return reports.pages[kind].read_text(encoding="utf-8")


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


def _headers(text: str, table_start: int) -> list[str]:
    head = text[table_start: text.index("</thead>", table_start)]
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th\b[^>]*>(.*?)</th>", head)]


def _first_table_rows(text: str, after: str) -> list[list[str]]:
    """The cells of the first table that starts at or after `after` (its text without tags)."""
    start = text.rfind("<table", 0, text.index(after) + len(after))
    start = start if start >= 0 and "</table>" not in text[start: text.index(after)] else text.index("<table", text.index(after))
    body = text[text.index("<tbody>", start): text.index("</tbody>", start)]
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td\b[^>]*>(.*?)</td>", row, re.DOTALL)]
            for row in re.findall(r"<tr\b[^>]*>(.*?)</tr>", body, re.DOTALL)]


# 1. a mock-only run's decomposition

def test_a_mock_only_decomposition_draws_the_mock_bars_without_an_empty_legend(reports):
    spec = chart_spec(_text(reports, "run-generation"), "modes")
    layers = _layers(spec)
    assert all(inline_records(layer) for layer in layers), "a layer with no data draws grey axes and an empty legend"
    assert not any(layer["encoding"].get("color", {}).get("field") == "model" for layer in layers)
    assert {r["mode"] for r in inline_records(spec)} == {"oracle", "e2e", "noretrieval"}
    assert "mock" in spec["title"]


def test_with_another_model_the_mock_is_the_tick_and_the_legend_names_models():
    from ragqual.reports.run import decomposition_chart
    from ragqual.store.generation_reads import ModeLine

    lines = [ModeLine(v, m, c, None, None, 0, 1) for v, m, c in
             (("mock", "e2e", 0.9), ("mock", "oracle", 1.0), ("qwen", "e2e", 0.7), ("qwen", "oracle", 0.8))]
    spec = decomposition_chart(lines).to_dict()
    bars, tick = spec["layer"]
    assert bars["encoding"]["color"]["field"] == "model" and bars["encoding"]["color"]["title"] == "model"
    assert {r["model"] for r in inline_records(bars)} == {"qwen"}
    assert tick["mark"]["type"] == "tick" and {r["model"] for r in inline_records(tick)} == {"mock"}


# 2. the similarity panels say which one --threshold cuts

def test_only_the_dense_panel_is_read_as_the_threshold_scale(reports):
    spec = chart_spec(_text(reports, "run-retrieval"), "similarity")
    titles = [panel["encoding"]["x"]["title"] for panel in spec["vconcat"]]
    assert titles[0].startswith("dense:") and "--threshold cuts" in titles[0]
    others = titles[1:]
    assert others and all("own score scale" in t and "does not apply" in t for t in others)


# 3. the per-tag chart: legend title and width

def test_the_per_tag_legend_names_strategies_and_the_chart_fits_the_page(reports):
    from ragqual.reports.run import CHART_WIDTH

    for kind, chart in (("run-retrieval", "tags"), ("eval", "t0-tags")):
        spec = chart_spec(_text(reports, kind), chart)
        assert spec["encoding"]["color"]["title"] == "strategy", kind
        assert spec["width"] <= CHART_WIDTH


def test_a_chart_of_many_tags_is_no_wider_than_the_page():
    import pandas as pd

    from ragqual.reports.run import CHART_WIDTH, bars

    frame = pd.DataFrame({"tag": [f"tag-{i}" for i in range(40)], "dense": 0.5, "bm25": 0.4, "hybrid": 0.6})
    assert bars(frame, "tag", ["dense", "bm25", "hybrid"], "t", legend="strategy").to_dict()["width"] == CHART_WIDTH


# 5. long tables grow with the page

def test_tables_are_not_boxed_to_a_fixed_height():
    from ragqual.reports.page import _asset

    css = _asset("page.css")
    rule = re.search(r"\.tablewrap\{([^}]*)\}", css)
    assert rule and "max-height" not in rule.group(1)


# 6. the cause column

def test_the_run_page_gives_each_failing_question_its_cause(reports):
    text = _text(reports, "run-generation")
    assert _headers(text, text.index('id="questions"'))[-2] == "cause"
    rows = table_rows(text, "questions")
    no_context = [r for r in rows if "noretrieval" in r and "no-context" in r]
    assert no_context, "the mock's noretrieval failures are no-context"
    cells = _first_table_rows(text, 'id="questions"')
    passed_all = [c for c in cells if c[4].split("/")[0] == c[4].split("/")[1]]
    assert passed_all and all(c[6] == "-" for c in passed_all)  # a question every repeat passed has no cause


# 7. the ablation

def test_the_ablation_lists_stages_in_pipeline_order_with_deltas_against_full(reports):
    from ragqual.app.retrieval_run import ABLATION_ORDER

    text = _text(reports, "ablation")
    start = text.index("<table", text.index("ablation: stages in pipeline order"))
    headers = _headers(text, start)
    rows = _first_table_rows(text, "ablation: stages in pipeline order")
    stages = [r[0] for r in rows]
    assert stages == [s for s in ABLATION_ORDER if s in stages] and stages[0] == "full" and len(stages) == 5
    assert "Δ recall@5" in headers and headers.index("Δ recall@5") == headers.index("recall@5") + 1
    col, delta = headers.index("recall@5"), headers.index("Δ recall@5")
    full = float(rows[0][col])
    assert rows[0][delta] == "-"
    for row in rows[1:]:
        assert float(row[delta]) == round(float(row[col]) - full, 3) or abs(float(row[delta]) - (float(row[col]) - full)) < 0.0011
        assert row[delta][0] in "+-"
    spec = chart_spec(text, "strategies")
    assert spec["encoding"]["x"]["sort"] == stages


# 8. the matrix

def test_the_mock_noretrieval_cells_are_neutral_with_a_note(reports):
    from ragqual.reports.matrix import NEUTRAL

    text = _text(reports, "matrix")
    spec = chart_spec(text, "matrix-heatmap")
    cells = spec["spec"]["layer"][0]
    assert cells["encoding"]["color"]["condition"]["value"] == NEUTRAL
    assert cells["encoding"]["color"]["condition"]["test"] == "datum.expected"
    records = inline_records(spec)
    expected = {(r["mode"], r["metric"]) for r in records if r["expected"]}
    assert expected == {("noretrieval", m) for m in ("correctness", "refusal", "pass")}
    assert "declines every question by design" in text


# 9. the reader ceiling and the whatif curve

def test_a_generation_run_page_shows_the_reader_ceiling_beside_the_echo(reports):
    import sqlite3

    text = _text(reports, "run-generation")
    rows = _first_table_rows(text, "the echo line and the reader ceiling")
    e2e = [r for r in rows if r[1] == "e2e"]
    assert e2e and e2e[0][0] == "mock"
    db = sqlite3.connect(reports.root / "eval-results" / "eval.db")
    stored = db.execute(
        "SELECT AVG(m.value) FROM metric_values m JOIN trials t ON t.id = m.trial_id "
        "WHERE m.metric = 'readerCeiling' AND m.run_id = ? AND t.mode = 'e2e'", (reports.generation_run,)).fetchone()[0]
    db.close()
    assert float(e2e[0][4]) == round(stored, 3)


def test_a_generation_run_page_draws_the_whatif_curve_over_thresholds(reports):
    from ragqual.app.whatif_run import ADVICE_THRESHOLDS

    for kind, chart in (("run-generation", "whatif-0"), ("eval", "t1-whatif-0")):
        spec = chart_spec(_text(reports, kind), chart)
        records = inline_records(spec["layer"][0])
        measures = {r["measure"] for r in records}  # refusals declined: when the split holds a refusal question
        assert {"mock pass", "answerable lost"} <= measures <= {"mock pass", "refusals declined", "answerable lost"}
        assert sorted({r["threshold"] for r in records}) == sorted(ADVICE_THRESHOLDS)
        assert spec["layer"][0]["encoding"]["x"]["field"] == "threshold"


def test_no_whatif_curve_says_why():
    from ragqual.app.whatif_run import PageWhatif
    from ragqual.reports.run import whatif_section

    html = "".join(whatif_section(PageWhatif([], "trial 7 stored no candidate list")))
    assert "No whatif curve: trial 7 stored no candidate list." in html and "data-chart" not in html
