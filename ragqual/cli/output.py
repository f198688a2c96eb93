"""Printing tables in the formats every report command shares: table, markdown, json, csv.

Text and Markdown cells follow `ragqual.core.display` (one unit per quantity, `-` for missing);
json and csv carry the raw values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import click
import pandas as pd

from ragqual.core.display import MISSING, fmt_value, is_missing

FORMATS = ("table", "markdown", "json", "csv")


FILE_FORMATS = ("html", "junit", "github")  # formats -o FILE may write


def format_option(default: str = "table", html: bool = False, extra: tuple[str, ...] = ()):  # -> click decorator
    choices = FORMATS + (("html",) if html else ()) + extra
    more = {"junit": "junit: JUnit XML for CI", "github": "github: a pull-request comment in Markdown"}
    said = "".join(f"; {more[e]}" for e in extra if e in more)
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help="Output format (the global --json flag means json; html: one self-contained page, "
                             f"written to -o FILE or printed{said}).")


def output_option():  # -> click decorator
    return click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default=None,
                        help="Write the report to FILE instead of printing it (with --format html, junit or "
                             "github).")


pricing_snapshot_option = click.option(
    "--pricing-snapshot", "pricing_snapshot", metavar="ID|HASH", default=None,
    help="Show costs under this pricing snapshot (its id or a sha256 prefix) instead of each trial's newest.")


def check_output(fmt: str, output: str | None) -> None:
    if output is not None and fmt not in FILE_FORMATS:
        from ragqual.errors import InputError

        raise InputError("-o/--output writes a file: add --format html (or junit, github where offered)")


def emit_page(text: str, output: str | None) -> None:
    """An HTML page to FILE (written whole, or not at all) or to stdout."""
    if output is None:
        click.echo(text, nl=False)
        return
    from pathlib import Path

    from ragqual.reports.page import write_page

    write_page(text, Path(output))
    click.echo(f"wrote {output}", err=True)


def frame_to_text(frame: pd.DataFrame, fmt: str) -> str:
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "json":
        return json.dumps(frame_records(frame), indent=2)
    if fmt == "markdown":
        return markdown_table(frame)
    if frame.empty:
        return "(no rows)"
    return display_frame(frame).to_string(index=False)


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN becomes null, timestamps ISO text, and every finite number at
    its full precision (pandas' JSON writer would round floats to 10 decimals)."""
    records: list[dict[str, Any]] = json.loads(frame.to_json(orient="records", date_format="iso"))
    for record, raw in zip(records, frame.to_dict(orient="records"), strict=True):
        for key, value in raw.items():
            if isinstance(value, float) and math.isfinite(value):
                record[str(key)] = float(value)
    return records


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Every cell as the text a person reads: its column's unit, `-` when missing."""
    return pd.DataFrame({column: [fmt_value(v, str(column)) for v in frame[column].tolist()]
                         for column in frame.columns}, columns=frame.columns)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-style table without the optional `tabulate` dependency."""
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(fmt_value(v, c).replace("|", "\\|") for v, c in zip(row, cols)) + " |")
    return "\n".join(lines)


def emit_frame(frame: pd.DataFrame, fmt: str) -> None:
    click.echo(frame_to_text(frame, fmt).rstrip("\n"))


def header_value(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False) if value else MISSING
    if isinstance(value, float) and not is_missing(value):
        return str(value)  # a setting as it was given (tolerance 0.02, alpha 0.05)
    return fmt_value(value)


def document_text(
    title: str, header: Mapping[str, Any], sections: Sequence[tuple[str, pd.DataFrame]], fmt: str,
    notes: Sequence[str] = (),
) -> str:
    """A titled header plus named tables. csv holds the first table only, so it parses as one."""
    if fmt == "csv":
        return sections[0][1].to_csv(index=False) if sections else ""
    if fmt == "json":
        body: dict[str, Any] = {"header": dict(header)}
        body.update({name: frame_records(frame) for name, frame in sections})
        body["notes"] = list(notes)
        return json.dumps(body, indent=2, default=str)
    if fmt == "markdown":
        parts = [f"## {title}", "", *(f"- **{k}**: {header_value(v)}" for k, v in header.items())]
        for name, frame in sections:
            parts += ["", f"### {name}", "", markdown_table(frame) if not frame.empty else "(none)"]
        parts += ["", *(f"> {n}" for n in notes)] if notes else []
        return "\n".join(parts)
    width = max((len(k) for k in header), default=0)
    parts = [title, *(f"  {k.ljust(width)}  {header_value(v)}" for k, v in header.items())]
    for name, frame in sections:
        parts += ["", f"{name}:", frame_to_text(frame, "table") if not frame.empty else "(none)"]
    parts += ["", *notes] if notes else []
    return "\n".join(parts)


def emit_document(
    title: str, header: Mapping[str, Any], sections: Sequence[tuple[str, pd.DataFrame]], fmt: str,
    notes: Sequence[str] = (),
) -> None:
    click.echo(document_text(title, header, sections, fmt, notes).rstrip("\n"))


def warn_unsealed(counts: Mapping[int, Mapping[str, int]]) -> None:
    """One line on stderr per run whose rows no seal covers (the readers left them out)."""
    from ragqual.store.sealed_rows import unsealed_warning

    for run_id, per_table in counts.items():
        if per_table:
            click.echo(f"ragqual: warning: {unsealed_warning(run_id, per_table)}", err=True)


def output_format(fmt: str, as_json: bool) -> str:
    return "json" if as_json else fmt
