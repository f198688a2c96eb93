"""Printing tables in the formats every report command shares."""

from __future__ import annotations

import json

import click
import pandas as pd


def frame_to_text(frame: pd.DataFrame, fmt: str) -> str:
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(frame.to_json(orient="records", date_format="iso")), indent=2)
    if fmt == "markdown":
        return markdown_table(frame)
    return frame.to_string(index=False)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-style table without the optional `tabulate` dependency."""
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def emit_frame(frame: pd.DataFrame, fmt: str) -> None:
    click.echo(frame_to_text(frame, fmt).rstrip("\n"))
