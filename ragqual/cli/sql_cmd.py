"""`ragqual sql "SELECT ..."`: a read-only query over the history, printed as a table.

The statement cannot write, attach another file or create one, nor call functions that expose
pointers, load code or read files; it runs for `--timeout` seconds at most (default 30; Ctrl-C
stops it within a second), prints at most `--limit` rows (default 1000; 0 = all, streamed with
constant memory), and its rows may hold `--max-bytes` bytes at most (default 64 MiB; 0 = no
bound): past it the command stops with exit 2 and one line. See `ragqual.store.sql_console`. The views
`v_run_status`, `v_trials` and `v_metric_means` are the easiest place to start; `v_trial_texts`
shows each trial's prompt, context and outputs (stored once by hash since migration 0012).
"""

from __future__ import annotations

import csv
import itertools
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import click
import pandas as pd

from ragqual.app.context import AppContext
from ragqual.app.history_reads import sql_query
from ragqual.cli.output import display_frame, emit_frame, format_option, frame_records, frame_to_text, markdown_table, output_format
from ragqual.store.sql_console import BATCH, DEFAULT_LIMIT, DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT


@click.command("sql")
@click.argument("query")
@click.option("--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT, show_default=True,
              help="Stop the statement after this many seconds (0 = no limit).")
@click.option("--limit", type=click.IntRange(min=0), default=DEFAULT_LIMIT, show_default=True,
              help="Print at most this many rows (0 = all, streamed).")
@click.option("--max-bytes", type=click.IntRange(min=0), default=DEFAULT_MAX_BYTES, show_default=True,
              help="Stop (exit 2) when the rows hold more than this many bytes (0 = no bound).")
@format_option()
@click.pass_obj
def sql_cmd(app: AppContext, query: str, timeout: float, limit: int, max_bytes: int, fmt: str) -> None:
    """Run one read-only SQL statement on the history database and print its rows."""
    fmt = output_format(fmt, app.as_json)
    with sql_query(app, query, timeout=timeout, limit=limit, max_bytes=max_bytes) as stream:
        if stream.columns is None:
            click.echo("(the statement returned no rows)")
            return
        columns = unique_columns(stream.columns)
        if limit:
            emit_frame(pd.DataFrame(list(stream), columns=columns), fmt)
        else:
            _stream(columns, iter(stream), fmt)
        if stream.more:
            click.echo(f"(only the first {limit} rows are shown: --limit N for more, --limit 0 for all)", err=True)


def unique_columns(names: Sequence[str]) -> list[str]:
    """Result column names made distinct, so a JSON row keeps every value: the second `a` is
    `a:2`, the third `a:3` (SQL allows `SELECT 1 AS a, 2 AS a`; a record cannot hold two `a`)."""
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        label, n = name, 1
        while label in seen:
            n += 1
            label = f"{name}:{n}"
        seen.add(label)
        out.append(label)
    return out


def _stream(columns: Sequence[str], rows: Iterator[tuple[Any, ...]], fmt: str) -> None:
    """Print rows as they come, one batch at a time: memory stays constant."""
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return
    first = True
    if fmt == "json":
        click.echo("[", nl=False)
    for batch in iter(lambda: list(itertools.islice(rows, BATCH)), []):
        frame = pd.DataFrame(batch, columns=list(columns))
        if fmt == "json":
            for record in frame_records(frame):
                click.echo(("" if first else ",") + "\n  " + json.dumps(record), nl=False)
                first = False
        elif fmt == "markdown":
            lines = markdown_table(frame).splitlines()
            click.echo("\n".join(lines if first else lines[2:]))
        else:
            text = frame_to_text(frame, "table") if first else display_frame(frame).to_string(index=False, header=False)
            click.echo(text)
        first = False
    if fmt == "json":
        click.echo("\n]" if not first else "]")
    elif first:
        click.echo(frame_to_text(pd.DataFrame(columns=list(columns)), fmt).rstrip("\n"))
