"""`ragqual rescore`: score a stored run again from its raw outputs, calling no model."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from ragqual.app.context import AppContext
from ragqual.app.rescoring import rescore_stored
from ragqual.cli.summary_tables import print_summary, summary_dict
from ragqual.core.display import fmt_rate
from ragqual.engine.scorers import SCORERS


@click.command("rescore")
@click.argument("run_id", type=int)
@click.option("--scorer", "scorer_name", type=click.Choice(sorted(SCORERS)), default=None,
              help="Score with this scorer (default: every default scorer).")
@click.option("--assertions-from", "assertions_from", type=click.Path(dir_okay=False, path_type=Path),
              help="JSON file: case id -> list of assertion specs (id, version, name, category, weight, check).")
@click.option("--goldens", "goldens_dir", type=click.Path(path_type=Path),
              help="RAG runs: read the goldens (their mustInclude / mustNotInclude) from this folder or "
                   ".jsonl file (default: the project's goldens).")
@click.pass_obj
def rescore_cmd(app: AppContext, run_id: int, scorer_name: str | None, assertions_from: Path | None,
                goldens_dir: Path | None) -> None:
    """Re-score RUN_ID from its stored raw outputs; appends new rows, keeps the old ones.

    No model is called. Every assertion, score and metric is recomputed with the subject's
    current assertions (for a RAG run: the goldens as they are now, or --goldens DIR; for a subject
    not installed here: the assertions stored with each trial), or those of --assertions-from.
    """
    result, note, summary = rescore_stored(app, run_id, scorer_name, goldens_dir=goldens_dir,
                                           assertions_from=assertions_from)
    if note:
        click.echo(note, err=True)
    if app.as_json:
        click.echo(json.dumps({"rescore": asdict(result), "summary": summary_dict(summary)}, indent=2))
        return
    name, version = result.scorers[0]
    click.echo(f"run {run_id}: rescored {result.rescored} of {result.trials} trial(s) with {name} v{version}; "
               f"mean score {fmt_rate(result.mean_before)} -> {fmt_rate(result.mean_after)}, "
               f"{result.changed} trial score(s) changed; new rows appended, old rows kept")
    for line in result.skipped:
        click.echo(f"skipped: {line}", err=True)
    if result.unmatched_overrides:
        click.echo("cases in the assertions file but not in the run: " + ", ".join(result.unmatched_overrides),
                   err=True)
    print_summary(summary)
