"""`ragqual sql "SELECT ..."`: a read-only query over the history, printed as a table.

The connection cannot write (SQLite `mode=ro` with `query_only`, a PostgreSQL read-only
transaction), so a stray UPDATE is refused by the database itself. The views `v_run_status`,
`v_trials` and `v_metric_means` are the easiest place to start.
"""

from __future__ import annotations

import click

from ragqual.cli.context import AppContext
from ragqual.cli.output import emit_frame, format_option, output_format
from ragqual.store.queries import read_only_query


@click.command("sql")
@click.argument("query")
@format_option()
@click.pass_obj
def sql_cmd(app: AppContext, query: str, fmt: str) -> None:
    """Run one read-only SQL statement on the history database and print its rows."""
    frame = read_only_query(app.read_only_db_url(), query)
    if frame is None:
        click.echo("(the statement returned no rows)")
        return
    emit_frame(frame, output_format(fmt, app.as_json))
