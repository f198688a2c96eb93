"""Every kind of HTML report loaded offline in headless Debian chromium: no console message, every
chart drawn with its data marks, the per-question filter hides rows, a screenshot of each kind.

Skipped when chromium is absent, unless RAGQUAL_REQUIRE_BROWSER=1 (as .ci/run sets), which makes
a missing browser a failure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.reports.browser import chromium, load, screenshot
from tests.reports.pages import chart_ids, marks_in, table_rows
from tests.reports.test_pages import KINDS

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "eval-results" / "reports" / "screenshots"  # CI keeps this folder as an artefact
EXPECTED_CHARTS = {"eval": 6, "run-retrieval": 3, "run-generation": 3, "ablation": 3, "failures": 0, "compare": 2,
                   "history": 3, "matrix": 1}


@pytest.fixture(scope="module", autouse=True)
def _browser():
    chromium()


@pytest.mark.parametrize("kind", KINDS)
def test_every_chart_is_drawn_and_nothing_is_logged(reports, kind):
    loaded = load(reports.pages[kind])
    assert loaded.console == []
    charts = chart_ids(loaded.dom)
    assert len(charts) >= EXPECTED_CHARTS[kind]
    for chart in charts:
        assert re.search(rf'id="{re.escape(chart)}"[^>]*data-drawn="1"', loaded.dom), chart
        assert marks_in(loaded.dom, chart) > 0, f"{chart}: no data marks drawn"
    screenshot(reports.pages[kind], SCREENSHOTS / f"{kind}.png")


def test_typing_a_tag_hides_the_other_questions(reports):
    page = reports.pages["run-generation"]
    everything = table_rows(load(page).dom, "questions")
    filtered = load(page, "#filter=acronym").dom
    rows = table_rows(filtered, "questions")
    shown = [r for r in rows if "hidden" not in r]
    assert len(rows) == len(everything) and 0 < len(shown) < len(rows)
    assert all("acronym" in r for r in shown)
    assert re.search(rf'id="questions-count">{len(shown)} shown<', filtered)


def _svg_width(dom: str, chart_id: str) -> float:
    start = dom.index(f'id="{chart_id}"')
    return float(re.search(r'<svg\b[^>]*\bwidth="([\d.]+)"', dom[start:]).group(1))


def test_the_per_tag_chart_is_drawn_inside_the_page(reports):
    from ragqual.reports.run import CHART_WIDTH

    dom = load(reports.pages["eval"]).dom
    assert _svg_width(dom, "t0-tags") <= CHART_WIDTH + 160  # plot plus axis; the legend sits on top


def test_the_mock_noretrieval_cells_are_drawn_grey(reports):
    from ragqual.reports.matrix import NEUTRAL

    dom = load(reports.pages["matrix"]).dom
    assert dom.count(f'fill="{NEUTRAL}"') == 3  # correctness, refusal and pass of mock / noretrieval


def test_a_long_table_grows_and_pages_by_fifty_rows(tmp_path):
    import pandas as pd

    from ragqual.reports.page import document_page, write_page

    frame = pd.DataFrame({"case_id": [f"q{i:03d}" for i in range(120)], "cause": ["near-miss", "model"] * 60})
    path = tmp_path / "long.html"
    write_page(document_page("long", {}, [("failures", frame)]), path)
    dom = load(path).dom
    rows = re.findall(r"<tr\b[^>]*>", dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0])
    assert len(rows) == 120 and sum("paged-out" in r for r in rows) == 70
    assert re.search(r'class="pager"[^>]*>.*?rows 1-50 of 120', dom, re.DOTALL)
