"""What a page inlines inside <script>: JSON with no `<`, `>` or `&` (and no U+2028/U+2029) that
reads back as the same value, and JavaScript with no `<!--`, `<script` or `</script` whose string,
template and regular-expression literals still mean what they meant (checked in chromium)."""

from __future__ import annotations

import html
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragqual.reports import page
from tests.reports.browser import inspect, load
from tests.reports.hostile import PAYLOADS

HTML_SIGNIFICANT = re.compile("[<>&\u2028\u2029]")
SCRIPT_STATE = re.compile(r"<!--|</?script", re.IGNORECASE)
# Text made mostly of the characters that matter, so the sequences turn up often.
TRICKY = st.text(alphabet=st.sampled_from(list("<>&!-/\\\"'`$ {}scriptSCRIPTu0c3\u2028\u2029é")) | st.characters(),
                 max_size=40)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TRICKY
    | st.sampled_from(PAYLOADS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4), max_leaves=20)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded CI machine
@given(JSONISH)
def test_inline_json_has_no_html_significant_character_and_reads_back_the_same(value):
    text = page.inline_json(value)
    assert not HTML_SIGNIFICANT.search(text)
    assert json.loads(text) == value


@pytest.mark.parametrize("payload", PAYLOADS)
def test_inline_json_of_each_payload(payload):
    text = page.inline_json({"tag": payload, payload: [payload]})
    assert not HTML_SIGNIFICANT.search(text)
    assert json.loads(text) == {"tag": payload, payload: [payload]}


def test_a_chart_script_holds_only_escaped_json():
    spec = {"data": {"values": [{"tag": p} for p in PAYLOADS]}, "mark": "bar", "encoding": {"x": {"field": "tag"}}}
    text = page.chart("c", spec)
    body = re.search(r'data-target="c">(.*)</script>$', text, re.DOTALL)
    assert body and not HTML_SIGNIFICANT.search(body.group(1))
    assert [r["tag"] for r in json.loads(body.group(1))["data"]["values"]] == [page.chart_text(p) for p in PAYLOADS]


def test_chart_text_writes_line_separators_as_spaces_and_nothing_else():
    assert page.chart_text({"a\u2028b": ["c\u2029d", 1, None, "<!--"]}) == {"a b": ["c d", 1, None, "<!--"]}


# Code made of pieces of the sequences (and backslashes), so they form in every arrangement.
PIECES = st.lists(st.sampled_from(["<!--", "<script", "</script", "<SCRIPT", "</ScRiPt", "<", "!", "-", "--", "/",
                                   "\\", "s", "script", "x", '"']), max_size=12).map("".join)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PIECES | TRICKY)
def test_inline_script_leaves_no_sequence_that_changes_the_parser_state(code):
    assert not SCRIPT_STATE.search(page.inline_script(code))


def test_inline_script_changes_only_those_sequences():
    assert page.inline_script('a < b && c <!- d </scrip') == 'a < b && c <!- d </scrip'
    assert page.inline_script('"<!--"') == '"\\x3C!--"'
    assert page.inline_script('"\\<script>"') == '"\\x3Cscript>"'  # `\<` was one character, it stays one
    assert page.inline_script('"\\\\</SCRIPT>"') == '"\\\\\\x3C/SCRIPT>"'  # an escaped backslash stays


def test_the_chart_library_is_inlined_without_such_a_sequence():
    import vl_convert

    bundle = page.vega_bundle()
    assert not SCRIPT_STATE.search(bundle)
    assert len(bundle) == len(vl_convert.javascript_bundle())  # today's bundle holds none to escape


# Literals holding every sequence, written into the page by the script itself; the paragraph after
# the script shows the parser came out of it.
LITERALS_JS = r"""
var got = ["<!--<script>", '</script><script>', `<!--${1}<SCRIPT>`, /<!--x/.test("<!--x"),
           /<script>/u.test("<script>"), /[<]script/.test("<script"), "\<!--", "\\<script>"];
document.getElementById("out").textContent = JSON.stringify(got);
"""
LITERALS = ["<!--<script>", "</script><script>", "<!--1<SCRIPT>", True, True, True, "<!--", "\\<script>"]


def test_escaped_literals_keep_their_values_in_chromium(tmp_path):
    target = tmp_path / "literals.html"
    target.write_text(f'<!DOCTYPE html><html><body><pre id="out"></pre><script>{page.inline_script(LITERALS_JS)}'
                      '</script><p id="after">after</p></body></html>', encoding="utf-8")
    loaded = load(target)
    found = re.search(r'<pre id="out">(.*?)</pre>', loaded.dom, re.DOTALL)
    assert found and json.loads(html.unescape(found.group(1))) == LITERALS
    assert '<p id="after">after</p>' in loaded.dom and loaded.console == []


def test_a_bundle_holding_such_literals_still_draws_charts(tmp_path, monkeypatch):
    import vl_convert

    real = vl_convert.javascript_bundle()
    extra = ';document.documentElement.setAttribute("data-probe", "<!--<script></script>" + `<SCRIPT>`);\n'
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda *a, **k: real + extra)
    page.vega_bundle.cache_clear()
    try:
        spec = {"data": {"values": [{"tag": p, "v": i} for i, p in enumerate(PAYLOADS)]}, "mark": "bar",
                "encoding": {"x": {"field": "tag", "type": "nominal", "sort": list(PAYLOADS)},
                             "y": {"field": "v", "type": "quantitative"}}}
        text = page.render("probe", [page.chart("c", spec), page.section("last", page.note("the end"))])
    finally:
        page.vega_bundle.cache_clear()
    target = tmp_path / "bundle.html"
    page.write_page(text, target)
    loaded = load(target)
    assert 'data-probe="&lt;!--&lt;script&gt;&lt;/script&gt;&lt;SCRIPT&gt;"' in loaded.dom
    assert re.search(r'id="c"[^>]*data-drawn="1"', loaded.dom) and "<h2>last</h2>" in loaded.dom
    assert loaded.console == []


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if re.search("<!--|</?script|\u2028", p, re.IGNORECASE)])
def test_one_payload_alone_in_a_chart_leaves_the_page_whole(payload, tmp_path):
    """Each payload that acts on the parser or on Vega, on its own (on a page of several, a later
    `-->` can end what an earlier `<!--<script>` began)."""
    spec = {"data": {"values": [{"tag": payload, "v": 1}, {"tag": "plain", "v": 2}]}, "mark": "bar",
            "encoding": {"x": {"field": "tag", "type": "nominal", "sort": [payload, "plain"]},
                         "y": {"field": "v", "type": "quantitative"}}}
    target = tmp_path / "one.html"
    page.write_page(page.render("one payload", [page.chart("c", spec), page.section("last", page.note("end"))]),
                    target)
    seen = inspect(target, ("h2", "section", "script", "img", "svg"), tmp_path)
    assert not seen.pwned and seen.counts["img"] == 0
    assert seen.headings == ["last"] and seen.counts["script"] == 3
    assert [c["id"] for c in seen.charts] == ["c"] and seen.charts[0]["drawn"] and seen.charts[0]["marks"] > 0
    assert seen.console == []
