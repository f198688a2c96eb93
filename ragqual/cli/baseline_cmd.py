"""`ragqual baseline promote RUN_ID`: file a run's summary as the baseline for its corpus.

The file lands at `<dir>/<corpus fingerprint[:12]>/<tier>.json` (see `ragqual.store.summaries`
for the tier), so a baseline for one corpus can never overwrite another corpus's. It holds the
means, every question's values, the unstable questions, the provenance and the full fingerprint;
`ragqual compare <file> <run>` reads it back without a database or any service.
"""

from __future__ import annotations

from pathlib import Path

import click

from ragqual.app.context import AppContext
from ragqual.app.history_reads import promote_run
from ragqual.core.scoring import SCORER_NAME


@click.group("baseline")
def baseline_group() -> None:
    """Promote runs to the committed baselines that `ragqual compare` gates against."""


@baseline_group.command("promote")
@click.argument("run_id", type=int)
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              help="Baselines folder (default: <results>/baselines, i.e. eval-results/baselines).")
@click.option("--tier", help="File name to use instead of the one derived from the run (kind, variants).")
@click.option("--scorer", "scorer_name", default=SCORER_NAME, show_default=True,
              help="Scorer behind `score` and `pass`.")
@click.option("--scorer-version", type=int, help="Scorer version (default: each trial's newest).")
@click.option("--allow-incomplete", "--allow-unfinished", "allow_incomplete", is_flag=True,
              help="Promote a run whose last event is not `finished` (the baseline then says so).")
@click.pass_obj
def promote_cmd(app: AppContext, run_id: int, directory: Path | None, tier: str | None, scorer_name: str,
                scorer_version: int | None, allow_incomplete: bool) -> None:
    """Write RUN_ID's summary to <dir>/<fingerprint[:12]>/<tier>.json (atomically)."""
    promoted = promote_run(app, run_id, directory, tier, scorer_name, scorer_version, allow_incomplete)
    path, summary, info = promoted.path, promoted.summary, promoted.info
    questions = len({q for g in summary.groups.values() for q in g.questions})
    flag = f" [{summary.header['incomplete']}]" if summary.header.get("incomplete") else ""
    click.echo(f"wrote {path} (run {run_id}{flag}, corpus {info.corpus_fingerprint or 'none'}, "
               f"{len(summary.groups)} group(s), {questions} question(s))")
