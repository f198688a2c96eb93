"""The shared page: template, header, server-rendered tables and Vega-Lite charts.

Tables are plain HTML written here, so a page reads with scripts off; charts are Vega-Lite specs
(built with Altair) drawn by the inline vega-embed bundle. Nothing depends on the clock or on a
random id: the same inputs give the same bytes.
"""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from ragqual.core import display

LONG_VALUE = 240  # header values longer than this open on a click
FILTER_HINT = "filter: type a tag, an id or a word (every word must match)"


def _asset(name: str) -> str:
    return resources.files("ragqual.reports").joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one inline script (from vl-convert-python, no network)."""
    import vl_convert

    # vl_convert's stub marks `snippet` required; at run time it defaults to the global-names snippet.
    return inline_script(vl_convert.javascript_bundle())  # type: ignore[call-arg]


# Inside <script>, the HTML parser reacts to `<!--`, `<script` and `</script` (any case): `<!--`
# then `<script` puts it in a state where the real `</script>` no longer ends the element, and the
# rest of the page is swallowed. Inline JSON holds no `<`, `>` or `&` at all (each is a \u escape,
# as are U+2028/U+2029); inline JavaScript has `<` of those three sequences written as `\x3C`.
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_JSON_UNSAFE = re.compile("[<>&\u2028\u2029]")
_LINE_SEPARATORS = str.maketrans({"\u2028": " ", "\u2029": " "})
_SCRIPT_UNSAFE = re.compile(r"(\\*)<(?=!--|/?script)", re.IGNORECASE)


def inline_json(value: Any) -> str:
    """`value` as JSON that can sit inside a <script> element: no `<`, `>`, `&`, U+2028 or U+2029
    in the text (each is a \\uXXXX escape, so `json.loads`/`JSON.parse` give back the same value)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    return _JSON_UNSAFE.sub(lambda m: _JSON_ESCAPES[m.group()], text)


def chart_text(value: Any) -> Any:
    """`value` with U+2028/U+2029 in its strings written as spaces. Vega-Lite copies some data values
    into Vega expressions (a custom sort order), where a line separator is a syntax error that
    leaves the chart undrawn; the tables keep the text as it was."""
    if isinstance(value, str):
        return value.translate(_LINE_SEPARATORS)
    if isinstance(value, dict):
        return {chart_text(k): chart_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [chart_text(v) for v in value]
    return value


def inline_script(code: str) -> str:
    """JavaScript that can sit inside a <script> element: the `<` of every `<!--`, `<script` and
    `</script` becomes `\\x3C`. Such a sequence is only ever text in a string, template or regular
    expression literal, where `\\x3C` means the same `<` (a `\\<` before it stays one character)."""
    def escaped(match: re.Match[str]) -> str:
        slashes = match.group(1)
        return slashes[: len(slashes) - len(slashes) % 2] + "\\x3C"
    return _SCRIPT_UNSAFE.sub(escaped, code)


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt_value(value: Any, column: str = "") -> str:
    """A cell in its column's unit, `-` when missing (`ragqual.core.display`, as in the text tables)."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return display.fmt_value(value, column)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _header_value(value: Any) -> str:
    text = str(value) if isinstance(value, float) and not display.is_missing(value) else fmt_value(value)
    if len(text) <= LONG_VALUE:
        return esc(text)
    return f"<details><summary>{esc(text[:LONG_VALUE // 2])}&hellip; ({len(text)} characters)</summary>{esc(text)}</details>"


def header_list(header: Mapping[str, Any]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{_header_value(v)}</dd>" for k, v in header.items())
    return f'<dl class="header">{rows}</dl>'


def table(frame: pd.DataFrame, table_id: str | None = None, sortable: bool = True) -> str:
    """A DataFrame as an HTML table (numbers right-aligned, each in its column's unit, `-` when missing)."""
    if frame.empty:
        return '<p class="note">(none)</p>'
    head = "".join(f'<th{" data-sort" if sortable else ""}>{esc(c)}</th>' for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for value, column in zip(row, frame.columns):
            if _is_number(value):
                cells.append(f'<td class="num">{esc(fmt_value(value, str(column)))}</td>')
            else:
                cells.append(f"<td>{esc(fmt_value(value, str(column)))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    ident = f' id="{esc(table_id)}"' if table_id else ""
    sort = " data-sortable" if sortable else ""
    return (f'<div class="tablewrap"><table{ident}{sort}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def filter_box(table_id: str) -> str:
    return (f'<input class="filter" type="search" data-filter="{esc(table_id)}" placeholder="{esc(FILTER_HINT)}" '
            f'aria-label="{esc(FILTER_HINT)}"> <span class="note" id="{esc(table_id)}-count"></span>')


def section(title: str, *parts: str) -> str:
    return f"<section><h2>{esc(title)}</h2>{''.join(parts)}</section>"


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def verdict(text: str) -> str:
    return f'<p class="verdict">{esc(text)}</p>'


def chart(chart_id: str, spec: Any, caption: str = "") -> str:
    """A chart placeholder and its Vega-Lite spec (an Altair chart or a dict)."""
    data = spec.to_dict() if hasattr(spec, "to_dict") else dict(spec)
    data.pop("$schema", None)
    text = inline_json(chart_text(data))
    cap = note(caption) if caption else ""
    return (f'<div class="chart" id="{esc(chart_id)}" data-chart></div>{cap}'
            f'<script type="application/vnd.vegalite+json" data-target="{esc(chart_id)}">{text}</script>')


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows for a chart: NaN becomes None (JSON null), numpy scalars plain Python."""
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def render(title: str, parts: Iterable[str]) -> str:
    return Template(_asset("page.html")).substitute(
        title=esc(title), css=_asset("page.css"), js=inline_script(_asset("page.js")), vega=vega_bundle(),
        body="\n".join(parts))


def write_page(text: str, path: Path) -> None:
    """Write the page whole or not at all (a temp file renamed into place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sections_html(sections: Sequence[tuple[str, pd.DataFrame]]) -> list[str]:
    return [section(name, table(frame)) for name, frame in sections]


def document_page(title: str, header: Mapping[str, Any], sections: Sequence[tuple[str, pd.DataFrame]],
                  notes: Sequence[str] = ()) -> str:
    """A page of tables only: any titled header plus named tables, as the text formats show them."""
    return render(title, [header_list(header), *sections_html(sections), *(note(n) for n in notes)])
