"""Hostile strings where free text reaches the HTML pages (golden ids, tags and questions; model
names), a project holding them, and what a loaded page must still be: whole, with nothing run and
nothing injected.

A payload that ran would set `window.__pwned` and `data-pwned` on the root element."""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

PWN = "window.__pwned=1;document.documentElement.setAttribute('data-pwned','1')"
PAYLOADS = (
    "<!--<script>",
    "<!--<script></script>-->",
    f"</script><script>{PWN}</script>",
    "</script><script>alert(1)</script>",
    "<script>",
    "</SCRIPT ><ScRiPt>",
    "<!--",
    "-->",
    "]]>",
    "<![CDATA[",
    f"<img src=x onerror=\"{PWN}\">",
    "<img src=x onerror=alert(1)>",
    f"<svg onload=\"{PWN}\">",
    "&lt;&amp;&#60;",
    "line\u2028separator\u2029paragraph",
    "'\"`${x}\\u003c\\",
    "</style></title></textarea><b>bold</b>",
)
# Two model names (free text after `#` in openai:<url>#<model>), each a page-breaking payload.
MODEL_NAMES = ("<!--<script>", f"</script><img src=x onerror=\"{PWN}\">")
MARKER = PAYLOADS[0]  # the payload every page that shows free text must hold


def hostile_goldens(real: list[str]) -> str:
    """JSONL: the `real` lines, then one question per payload with it in the id, a tag and the query."""
    lines = list(real)
    for i, payload in enumerate(PAYLOADS):
        lines.append(json.dumps({
            "id": f"hostile-{i}-{payload}", "query": f"What compression rate {payload} should I use for CPR on an adult?",
            "turns": [], "relevantDocIds": ["cpr-adult"], "mustInclude": ["100"], "mustNotInclude": [],
            "expectRefusal": False, "tags": [payload, "first-aid"], "split": "test"}))
    return "\n".join(lines) + "\n"


# Elements a page is built of: the loaded page has as many as its file (none swallowed, none added).
STRUCTURE = ("main", "h1", "h2", "section", "dl", "dt", "table", "tr", "td", "input", "details", "b", "p", "script")
# Elements no page has (CSS selectors): one in the loaded page was injected by a payload. The page's
# own script adds a pager (two buttons) under a long table; those are the page's, not a payload's.
FOREIGN = ("img", "iframe", "object", "embed", "textarea", "frame", "button:not([data-prev]):not([data-next])",
           "link", "video", "audio")


class Structure(HTMLParser):
    """Element counts, chart ids and headings of a page, parsed as its author meant it: Python's
    parser ends a <script> at the first `</script`, whatever came before."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.counts: Counter[str] = Counter()
        self.charts: list[str] = []
        self.headings: list[str] = []
        self.text: list[str] = []  # text nodes outside <script> and <style>
        self.scripts: list[str] = []  # the text of each <script> and <style>
        self._in_h2 = self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.counts[tag] += 1
        found = dict(attrs)
        if tag == "div" and "data-chart" in found and found.get("id"):
            self.charts.append(str(found["id"]))
        if tag == "h2":
            self._in_h2 = True
            self.headings.append("")
        self._in_script = tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._in_h2 = False
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)
        if self._in_h2:
            self.headings[-1] += data


def counted(structure: Structure, tags: tuple[str, ...]) -> dict[str, int]:
    return {tag: structure.counts[tag] for tag in tags}


def page_strings(text: str) -> list[str]:
    """Every text node of a page, and every string in its inline chart specs (decoded)."""
    parsed = Structure(text)
    out = list(parsed.text)
    for chunk in parsed.scripts:
        if chunk.lstrip().startswith("{"):
            try:
                out.extend(_strings(json.loads(chunk)))
            except ValueError:
                pass
    return out


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def write_project(root: Path, repo: Path, real_questions: int = 4) -> None:
    """A project folder: the bundled corpus, a few real questions and the hostile ones."""
    import shutil

    shutil.copytree(repo / "corpus", root / "corpus")
    (root / "goldens").mkdir()
    real = (repo / "goldens" / "first-aid.jsonl").read_text(encoding="utf-8").splitlines()[:real_questions]
    (root / "goldens" / "hostile.jsonl").write_text(hostile_goldens(real), encoding="utf-8")
    (root / "eval-results").mkdir()


def hostile_case():  # -> ragqual.engine.cases.Case
    """A sentiment case with the payloads in its id, slug, tags and input."""
    from ragqual.engine.cases import Case
    from ragqual.subjects.sentiment.checks import label_is

    return Case(id=f"hostile-case-{MARKER}", slug=f"hostile-{PAYLOADS[2]}", input=" ".join(PAYLOADS),
                source="MANUAL", difficulty="easy", tags=PAYLOADS, meta={"expected": "positive"},
                assertions=(label_is("5f0c8a4e-2b1d-4e7a-9c3f-6d8e1a2b3c4d", "positive"),))
