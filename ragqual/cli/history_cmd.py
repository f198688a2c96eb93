"""`ragqual history`: the runs over time."""

from __future__ import annotations

import click

from ragqual.cli.context import AppContext
from ragqual.cli.output import emit_frame
from ragqual.store.queries import runs_frame


@click.command("history")
@click.option("--kind", type=click.Choice(["retrieval", "generation", "subject", "sweep"]), help="Only runs of this kind.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json", "csv"]), default="table", show_default=True)
@click.pass_obj
def history_cmd(app: AppContext, kind: str | None, fmt: str) -> None:
    """List the runs in the history with their git sha, fingerprint and status."""
    frame = runs_frame(app.store().engine, kind)
    if frame.empty and fmt == "table":
        click.echo("no runs in the history yet")
        return
    emit_frame(frame, "json" if app.as_json else fmt)
