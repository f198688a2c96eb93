"""`ragqual run`: run any registered subject through the trial loop and print its summary."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ragqual.app.context import AppContext
from ragqual.app.subject_run import DEFAULT_TRIALS, SubjectRunOptions, run_subject
from ragqual.cli.context import resumable
from ragqual.cli.label_options import name_option, run_tag_option, run_tags_only
from ragqual.cli.summary_tables import print_summary, summary_dict
from ragqual.cli.worker_lines import WORKER_HELP, joined_printer, worker_done
from ragqual.engine import loop
from ragqual.engine.aggregate import RunSummary
from ragqual.errors import RagqualError, RunInterrupted, StorageFault


def _split(value: str | None) -> list[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


class _Progress:
    """A tqdm bar on stderr when it is a terminal; remembers the run id for messages."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.run_id: int | None = None
        self._bar: Any = None

    def __call__(self, event: loop.Progress) -> None:
        self.run_id = event.run_id
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=event.total, desc=f"run {event.run_id}", unit="trial", file=sys.stderr)
        else:
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@click.command("run")
@click.option("--subject", "subject_name", metavar="NAME", help="The subject to run (`sentiment`, ...).")
@click.option("--model", "models", multiple=True, metavar="URI",
              help="A model URI: mock, ollama:<model>. Repeat for several variants. Default: mock.")
@click.option("--trial-count", type=click.IntRange(min=1), default=None,
              help=f"Repeats of every (variant x case x mode). Default: {DEFAULT_TRIALS}.")
@click.option("--axis", "axes", multiple=True, metavar="NAME=V1,V2",
              help="Vary a declared axis of the subject (repeatable): the run is the cross product of the values, "
                   "one variant each; --model gives the model axis's values.")
@click.option("--case-slugs", metavar="A,B", help="Only these cases (comma-separated slugs).")
@click.option("--mode", "modes", multiple=True, help="Only these modes of the subject (repeatable).")
@click.option("--max-concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Trials run at once.")
@click.option("--resume", "resume", type=int, metavar="RUN_ID",
              help="Finish an interrupted run: only its missing trials run.")
@click.option("--worker", is_flag=True, help=WORKER_HELP)
@click.option("--ollama-host", metavar="URL", help="Ollama server (default: OLLAMA_HOST or 127.0.0.1:11434).")
@name_option
@run_tag_option
@click.pass_obj
def run_cmd(app: AppContext, subject_name: str | None, models: tuple[str, ...], trial_count: int | None,
            axes: tuple[str, ...], case_slugs: str | None, modes: tuple[str, ...], max_concurrency: int, resume: int | None,
            worker: bool, ollama_host: str | None, name: str | None, run_tags: tuple[str, ...]) -> None:
    """Run a subject's cases against one or more models and store every trial.

    Prints mean score, pass rate, latency p50/p95, cost and cache hits per variant, and the run id.
    Ctrl-C keeps every finished trial; `--resume RUN_ID` completes the run, keeping its name and tags.
    """
    options = SubjectRunOptions(subject=subject_name, models=models, trial_count=trial_count,
                                case_slugs=tuple(_split(case_slugs)), modes=modes, max_concurrency=max_concurrency,
                                resume=resume, ollama_host=ollama_host, name=name, run_tags=run_tags_only(run_tags),
                                axes=axes, worker=worker)
    progress = _Progress(enabled=sys.stderr.isatty() and not app.as_json)
    try:
        with resumable(app, "run"):
            outcome, summary = run_subject(app, options, joined_printer(app, "run", progress) if worker else progress)
    except RunInterrupted:
        progress.close()
        raise
    except RagqualError as exc:
        progress.close()
        if progress.run_id is not None and not isinstance(exc, StorageFault):  # its own line says what to do
            click.echo(f"run {progress.run_id} stopped; finished trials are kept: "
                       f"`ragqual run --resume {progress.run_id}` completes it", err=True)
        raise
    progress.close()
    _report(app, outcome, summary)
    if worker:
        worker_done(outcome)


def _report(app: AppContext, outcome: loop.RunOutcome, summary: RunSummary) -> None:
    if app.as_json:
        body = {**summary_dict(summary), "status": outcome.status, "trials_run": outcome.trials_run,
                "trials_skipped": outcome.trials_skipped, "model_calls": outcome.model_calls,
                "cache_hits": outcome.cache_hits, "trial_errors": outcome.trial_errors}
        click.echo(json.dumps(body, indent=2))
        return
    print_summary(summary)
    click.echo(f"run {outcome.run_id} {outcome.status}: {outcome.trials_run} trial(s) run"
               f"{f', {outcome.trials_skipped} already held' if outcome.trials_skipped else ''}, "
               f"{outcome.model_calls} model call(s), {outcome.cache_hits} cache hit(s), "
               f"{outcome.trial_errors} error(s)")
