"""`ragqual label RUN`: label a run's trials by hand in the terminal (a Textual review queue)."""

from __future__ import annotations

import sys

import click

from ragqual.app.context import AppContext
from ragqual.app.labelling import open_queue
from ragqual.core.label_queue import CRITERIA
from ragqual.errors import InputError

NOT_A_TERMINAL = ("ragqual label needs a terminal (stdin and stdout are not one). To label elsewhere, write a "
                  "CSV or JSONL file and load it with `ragqual labels import FILE --run {run}` "
                  "(`ragqual labels export {run}` writes the format).")


def on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@click.command("label")
@click.argument("run_id", type=int)
@click.option("--sample", "sample", type=click.IntRange(min=1), default=None, metavar="N",
              help="Label a uniform random sample of N answered trials (what valid intervals need).")
@click.option("--seed", "seed", type=int, default=0, show_default=True,
              help="Seed of the sample: the same seed draws the same trials in the same order.")
@click.option("--failures", is_flag=True, help="Walk only the trials that did not pass (or failed to run).")
@click.option("--labeller", "labeller", metavar="NAME", default=None, help="Who labels (default: $USER).")
@click.pass_obj
def label_cmd(app: AppContext, run_id: int, sample: int | None, seed: int, failures: bool,
              labeller: str | None) -> None:
    """Label RUN_ID's trials by hand: faithfulness, completeness and relevance, yes / no / unsure.

    For each trial the queue shows the question, the context with the golden's relevant documents
    marked, the answer and the deterministic verdicts. Keys 1-3 give faithfulness yes / no /
    unsure, 4-6 completeness, 7-9 relevance; n adds a note, s skips, b goes back, q quits. Each key
    appends a label row at once; a second verdict for the same criterion is a newer row (a
    correction). A second session resumes: trials you labelled on every criterion are left out.
    """
    if not on_terminal():
        raise InputError(NOT_A_TERMINAL.format(run=run_id))
    queue = open_queue(app, run_id, labeller, sample=sample, seed=seed, failures=failures)
    from ragqual.cli.label_tui import LabelApp

    LabelApp(queue).run()
    s = queue.session
    finished = sum(1 for t in s.order if all(c in s.given(t) for c in CRITERIA))
    click.echo(f"run {run_id}: {len(queue.saved)} label row(s) appended by {queue.labeller}; {finished} of "
               f"{len(s.order)} trial(s) in this queue labelled on every criterion")
