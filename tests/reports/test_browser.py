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
EXPECTED_CHARTS = {"eval": 5, "run-retrieval": 3, "run-generation": 2, "compare": 2, "history": 3, "matrix": 1}


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
