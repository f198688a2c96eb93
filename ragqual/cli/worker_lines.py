"""What a `--worker` process says on stderr: which run it joined, how to add more workers, and
what it did (the run's own output follows on stdout as for any run)."""

from __future__ import annotations

from collections.abc import Callable

import click

from ragqual.app.context import AppContext
from ragqual.engine import loop

WORKER_HELP = ("Share the run with other processes or machines on one PostgreSQL history: run only the "
               "slots this process claims, until none is missing (refused on SQLite).")


def joined_printer(app: AppContext, command: str,
                   inner: Callable[[loop.Progress], None] | None) -> Callable[[loop.Progress], None]:
    """`inner`, after one stderr line when the worker starts on its run (the first progress event)."""
    db = f" --db {masked_url(app.db_url_override)}" if app.db_url_override else ""

    def update(p: loop.Progress) -> None:
        if p.done == 0 and p.slot is None and p.total:
            click.echo(f"run {p.run_id}: worker started, {p.total} slot(s) missing; add workers with "
                       f"`ragqual{db} {command} --resume {p.run_id} --worker`", err=True)
        if inner is not None:
            inner(p)

    return update


def masked_url(url: str) -> str:
    """The history URL with its password shown as ***, for a line others may copy."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def worker_done(outcome: loop.RunOutcome) -> None:
    """The worker's closing line: what it ran, or that there was nothing left to claim."""
    if outcome.trials_run == 0:
        click.echo(f"run {outcome.run_id}: nothing left to claim: all its slots are stored "
                   f"(run {outcome.status}); this worker ran none", err=True)
        return
    click.echo(f"run {outcome.run_id}: this worker ran {outcome.trials_run} trial(s); the run is {outcome.status}",
               err=True)
