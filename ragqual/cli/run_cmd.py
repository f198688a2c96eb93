"""`ragqual run`: run any registered subject through the trial loop and print its summary."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
import pandas as pd

from ragqual.app.resume import refuse_conflicts, subject_resume_flags
from ragqual.cli.context import AppContext, resumable
from ragqual.cli.output import emit_frame
from ragqual.core.display import fmt_ms, fmt_rate, fmt_value
from ragqual.engine import loop
from ragqual.engine.aggregate import RunSummary, summarise_run
from ragqual.engine.cases import select_by_slugs
from ragqual.engine.services import services_for
from ragqual.errors import InputError, RagqualError, RunInterrupted, StorageFault
from ragqual.subjects.registry import get_subject

DEFAULT_TRIALS = 3


def _split(value: str | None) -> list[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


def summary_frame(summary: RunSummary) -> pd.DataFrame:
    """One row per variant, each cell in its quantity's unit (`ragqual.core.display`)."""
    rows = []
    for v in summary.variants:
        a = v.aggregate
        rows.append({
            "variant": v.variant, "trials": a.trials, "mean_score": fmt_rate(a.mean_score),
            "pass_rate": fmt_rate(a.pass_rate), "p50_ms": fmt_ms(a.latency_p50_ms),
            "p95_ms": fmt_ms(a.latency_p95_ms), "cost": fmt_value(a.total_cost, "cost"),
            "cache_hits": v.cache_hits, "errors": v.errors,
        })
    return pd.DataFrame(rows)


def summary_dict(summary: RunSummary) -> dict[str, Any]:
    return {
        "run_id": summary.run_id,
        "scorer": {"name": summary.scorer_name, "version": summary.scorer_version},
        "variants": [
            {"variant": v.variant, "trials": v.aggregate.trials, "mean_score": v.aggregate.mean_score,
             "pass_rate": v.aggregate.pass_rate, "latency_p50_ms": v.aggregate.latency_p50_ms,
             "latency_p95_ms": v.aggregate.latency_p95_ms, "cost": v.aggregate.total_cost,
             "cache_hits": v.cache_hits, "errors": v.errors}
            for v in summary.variants
        ],
        "unstable": [{"variant": c.variant, "slug": c.slug, "mode": c.mode} for c in summary.unstable],
    }


def print_summary(summary: RunSummary) -> None:
    if summary.variants:
        emit_frame(summary_frame(summary), "table")
    if summary.unstable:
        click.echo("unstable (pass/fail flips across repeats): " + ", ".join(
            f"{c.slug}{'/' + c.mode if c.mode else ''} [{c.variant}]" for c in summary.unstable))


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


def _plan(app: AppContext, subject_name: str | None, models: tuple[str, ...], trial_count: int | None,
          case_slugs: str | None, modes: tuple[str, ...], resume: int | None):
    if resume is None:
        if not subject_name:
            raise InputError("--subject is required (or --resume RUN_ID): `ragqual run --help`")
        subject = get_subject(subject_name, app=app)
        cases = select_by_slugs(subject.cases(), _split(case_slugs))
        variants = subject.default_variants(list(models) or ["mock"])
        return subject, loop.RunPlan(variants, cases, list(modes or subject.modes), trial_count or DEFAULT_TRIALS)
    info = app.store().get_run(resume)
    if subject_name and subject_name != info.subject:
        raise InputError(f"run {resume} is a run of subject {info.subject!r}, not {subject_name!r}")
    subject = get_subject(info.subject or "", app=app)
    given = {flag: value for flag, value in (("--model", list(models)), ("--trial-count", trial_count),
                                              ("--case-slugs", _split(case_slugs)), ("--mode", list(modes)))
             if value}
    refuse_conflicts(resume, subject_resume_flags(info.params), given)
    return subject, loop.plan_from_run(app.store(), resume, subject)


@click.command("run")
@click.option("--subject", "subject_name", metavar="NAME", help="The subject to run (`sentiment`, ...).")
@click.option("--model", "models", multiple=True, metavar="URI",
              help="A model URI: mock, ollama:<model>. Repeat for several variants. Default: mock.")
@click.option("--trial-count", type=click.IntRange(min=1), default=None,
              help=f"Repeats of every (variant x case x mode). Default: {DEFAULT_TRIALS}.")
@click.option("--case-slugs", metavar="A,B", help="Only these cases (comma-separated slugs).")
@click.option("--mode", "modes", multiple=True, help="Only these modes of the subject (repeatable).")
@click.option("--max-concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Trials run at once.")
@click.option("--resume", "resume", type=int, metavar="RUN_ID",
              help="Finish an interrupted run: only its missing trials run.")
@click.option("--ollama-host", metavar="URL", help="Ollama server (default: OLLAMA_HOST or 127.0.0.1:11434).")
@click.pass_obj
def run_cmd(app: AppContext, subject_name: str | None, models: tuple[str, ...], trial_count: int | None,
            case_slugs: str | None, modes: tuple[str, ...], max_concurrency: int, resume: int | None,
            ollama_host: str | None) -> None:
    """Run a subject's cases against one or more models and store every trial.

    Prints mean score, pass rate, latency p50/p95, cost and cache hits per variant, and the run id.
    Ctrl-C keeps every finished trial; `--resume RUN_ID` completes the run.
    """
    subject, plan = _plan(app, subject_name, models, trial_count, case_slugs, modes, resume)
    store = app.store()
    progress = _Progress(enabled=sys.stderr.isatty() and not app.as_json)
    try:
        with resumable(app, "run"):
            outcome = loop.run(
                subject, plan.variants, plan.cases, store=store,
                services=services_for(subject, app.response_cache(), ollama_host=ollama_host),
                modes=plan.modes, repeats=plan.repeats, max_concurrency=max_concurrency,
                resume_run_id=resume, progress=progress,
                params={"ollama_host": ollama_host} if ollama_host else None,
            )
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
    _report(app, outcome, summarise_run(store.engine, outcome.run_id))


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
