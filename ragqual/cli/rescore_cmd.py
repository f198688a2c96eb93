"""`ragqual rescore`: score a stored run again from its raw outputs, calling no model."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from ragqual.cli.context import AppContext
from ragqual.cli.run_cmd import print_summary, summary_dict
from ragqual.engine.aggregate import summarise_run
from ragqual.engine.rescore import StoredSubject, load_assertion_overrides, predicate_registry, rescore
from ragqual.engine.scorers import SCORERS, get_scorer
from ragqual.engine.subject import Subject
from ragqual.subjects import registry


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _subject(name: str) -> Subject:
    """The installed subject, else one rebuilt from the run's stored case definitions."""
    if registry.is_known(name):
        return registry.get_subject(name)
    registry.load_check_kinds()
    click.echo(f"subject {name!r} is not in the registry here: each trial is rescored against its "
               "stored case definition", err=True)
    return StoredSubject(name)


@click.command("rescore")
@click.argument("run_id", type=int)
@click.option("--scorer", "scorer_name", type=click.Choice(sorted(SCORERS)), default=None,
              help="Score with this scorer (default: every default scorer).")
@click.option("--assertions-from", "assertions_from", type=click.Path(dir_okay=False, path_type=Path),
              help="JSON file: case id -> list of assertion specs (id, version, name, category, weight, check).")
@click.pass_obj
def rescore_cmd(app: AppContext, run_id: int, scorer_name: str | None, assertions_from: Path | None) -> None:
    """Re-score RUN_ID from its stored raw outputs; appends new rows, keeps the old ones.

    No model is called. Without --assertions-from the subject's current assertions are used (for a
    subject not in the registry, such as the RAG subject, the assertions stored with each trial).
    """
    store = app.store()
    info = store.get_run(run_id)
    subject = _subject(info.subject or "")
    overrides = None
    if assertions_from is not None:
        overrides = load_assertion_overrides(assertions_from, predicate_registry(subject.cases()))
    scorers = [get_scorer(scorer_name)] if scorer_name else None
    result = rescore(store, run_id, subject, assertions_override=overrides, scorers=scorers)
    summary = summarise_run(store.engine, run_id, result.scorers[0][0])
    if app.as_json:
        click.echo(json.dumps({"rescore": asdict(result), "summary": summary_dict(summary)}, indent=2))
        return
    name, version = result.scorers[0]
    click.echo(f"run {run_id}: rescored {result.rescored} of {result.trials} trial(s) with {name} v{version}; "
               f"mean score {_mean(result.mean_before)} -> {_mean(result.mean_after)}, "
               f"{result.changed} trial score(s) changed; new rows appended, old rows kept")
    for line in result.skipped:
        click.echo(f"skipped: {line}", err=True)
    if result.unmatched_overrides:
        click.echo("cases in the assertions file but not in the run: " + ", ".join(result.unmatched_overrides),
                   err=True)
    print_summary(summary)
