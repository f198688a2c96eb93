"""`ragqual db`: migrate and inspect the history database's schema."""

from __future__ import annotations

import click
from alembic.script import ScriptDirectory

from ragqual.app.context import AppContext
from ragqual.app.history_reads import schema_state, upgrade_schema
from ragqual.errors import GateFailed
from ragqual.store import db


@click.group("db")
def db_group() -> None:
    """Create, upgrade and inspect the history database schema."""


@db_group.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.pass_obj
def upgrade_cmd(app: AppContext, revision: str) -> None:
    """Upgrade the database to the newest schema (creates it when missing)."""
    before, after = upgrade_schema(app, revision)
    click.echo(f"{app.settings.db_url(app.db_url_override)}: {before or 'empty'} -> {after}")


@db_group.command("summarise")
@click.pass_obj
def summarise_cmd(app: AppContext) -> None:
    """Append a summary row for every finished run without a current one, so `history` reads it
    from its summary: runs finished before schema 0013, or rescored or repriced since."""
    from ragqual.app.history_reads import summarise_finished_runs

    done, current = summarise_finished_runs(app)
    shown = ", ".join(map(str, done[:20])) + (" ..." if len(done) > 20 else "")
    click.echo(f"summarised {len(done)} finished run(s){': ' + shown if done else ''}; "
               f"{current} already had a current summary")


@db_group.command("current")
@click.pass_obj
def current_cmd(app: AppContext) -> None:
    """Print the database's schema revision and the one this ragqual needs (never creates one)."""
    state_of = schema_state(app)
    if state_of.absent is not None:
        click.echo(f"current: none ({state_of.absent})\nhead: {state_of.head}")
        return
    current, head, missing = state_of.current, state_of.head, state_of.missing_guards
    state = "up to date" if current == head else "run `ragqual db upgrade`"
    click.echo(f"current: {current or 'none'}\nhead: {head}\n{state}")
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise GateFailed(f"{len(missing)} append-only trigger(s) are missing ({shown}): the history may have "
                         "been edited; `ragqual verify` names what changed")


@db_group.command("history")
def history_cmd() -> None:
    """List the schema migrations, oldest first."""
    script = ScriptDirectory.from_config(db.alembic_config("sqlite://"))
    for rev in reversed(list(script.walk_revisions())):
        first_line = (rev.doc or "").strip().splitlines()[0] if rev.doc else ""
        click.echo(f"{rev.revision}  (from {rev.down_revision or 'empty'})  {first_line}")
