"""What the report tests check in a page's text: resources it would fetch, its charts and table rows."""

from __future__ import annotations

import json
import re

# Anything a browser would fetch: an attribute holding a URL, a CSS url()/@import, a fetch/XHR/import.
RESOURCE = re.compile(
    r"""(?:\b(?:src|href|srcset|action|poster|data|xlink:href)\s*=\s*["']?\s*(?:https?:)?//)"""
    r"""|(?:url\(\s*["']?\s*(?:https?:)?//)|(?:@import\s+(?:url\()?\s*["']?\s*(?:https?:)?//)"""
    r"""|(?:\b(?:fetch|import|importScripts)\(\s*["'](?:https?:)?//)|(?:\.open\(\s*["'][A-Z]+["']\s*,\s*["']https?://)""",
    re.IGNORECASE)


def resource_references(text: str) -> list[str]:
    return [text[max(0, m.start() - 40): m.end() + 60] for m in RESOURCE.finditer(text)]


def table_rows(dom: str, table_id: str) -> list[str]:
    start = dom.index(f'id="{table_id}"')
    body = dom[start: dom.index("</table>", start)]
    return re.findall(r"<tr\b[^>]*>", body.split("<tbody>", 1)[1])


def chart_ids(dom: str) -> list[str]:
    return re.findall(r'<div\b[^>]*\bid="([^"]+)"[^>]*\bdata-chart\b', dom)


def marks_in(dom: str, chart_id: str) -> int:
    """Data marks Vega drew as SVG inside the chart's div (each bar, point, tick, cell is one)."""
    start = dom.index(f'id="{chart_id}"')
    end = dom.find('data-chart', dom.index("data-chart", start) + 1)
    part = dom[start: end if end > 0 else len(dom)]
    return len(re.findall(r'role="graphics-symbol"', part))


def chart_spec(text: str, chart_id: str) -> dict:
    """The Vega-Lite spec a page holds for one chart (its inline JSON script)."""
    found = re.search(rf'<script type="application/vnd.vegalite\+json" data-target="{re.escape(chart_id)}">(.*?)</script>',
                      text, re.DOTALL)
    assert found, f"no chart {chart_id}"
    return json.loads(found.group(1))


def inline_records(spec: object) -> list[dict]:
    """Every record of inline data anywhere in a spec (`data.values` of each view, `datasets`)."""
    if isinstance(spec, dict):
        found = [r for key, value in spec.items() if key in ("values", "datasets") for r in _rows(value)]
        return found + [r for key, value in spec.items() if key not in ("values", "datasets")
                        for r in inline_records(value)]
    if isinstance(spec, list):
        return [r for item in spec for r in inline_records(item)]
    return []


def _rows(value: object) -> list[dict]:
    if isinstance(value, dict):  # datasets: name -> records
        return [r for rows in value.values() for r in _rows(rows)]
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []
