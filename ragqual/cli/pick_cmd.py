"""`ragqual pick`: choose cases, variants and axis values in a terminal UI, then run them."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout

import click

from ragqual.app.context import AppContext
from ragqual.engine.aggregate import RunSummary
from ragqual.errors import InputError


def summary_text(summary: RunSummary) -> str:
    """The summary table `ragqual run` prints, as text."""
    from ragqual.cli.summary_tables import print_summary

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        print_summary(summary)
    return buffer.getvalue()


def no_terminal_text(subject: str | None, axes: str | None = None) -> str:
    name = subject or "NAME"
    listed = f" ({subject}'s axes: {axes})" if axes else ""
    return (f"ragqual pick needs a terminal (stdin and stdout are not one here, as in CI or a pipe). "
            f"Run the same from the CLI: `ragqual run --subject {name} --axis AXIS=V1,V2 --case-slugs A,B "
            f"--trial-count N`{listed}; an unknown axis is refused with the list of the subject's axes.")


def _axes_text(app: AppContext, subject: str | None) -> str | None:
    if not subject:
        return None
    from ragqual.subjects.registry import get_subject

    return "; ".join(f"{a.name}: {a.allowed()}" for a in get_subject(subject, app=app).axes) or None


@click.command("pick")
@click.option("--subject", "subject_name", metavar="NAME", help="Start on this subject (skip the subject list).")
@click.pass_obj
def pick_cmd(app: AppContext, subject_name: str | None) -> None:
    """Choose cases, variants and axis values in a terminal UI, see the trials and cache hits, then run.

    Built from each subject's declared axes; it prints the equivalent `ragqual run` command, so a
    picked run can be repeated in CI. Not on a terminal, it says so and exits 2."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError(no_terminal_text(subject_name, _axes_text(app, subject_name)))
    from ragqual.app.pick_run import PickBackend
    from ragqual.cli.pick_tui import PickerApp

    picker = PickerApp(PickBackend(app), subject_name, summary_text)
    outcome = picker.run()
    if picker.plan.subject:
        click.echo(picker.command())
    if outcome is not None:
        click.echo(f"run {outcome.run_id} {outcome.status}: {outcome.trials_run} trial(s)")
