"""`ragqual merge A.db B.db --into C.db`: append the runs of several SQLite histories to one."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ragqual.app.merge_run import MergeOutcome, merge_histories
from ragqual.cli.worker_lines import masked_url


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids)) if len(ids) <= 8 else f"{ids[0]}-{ids[-1]}"


@click.command("merge")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--into", "into", required=True, metavar="C.db",
              help="The history to append to (a file path or database URL; created when missing).")
@click.pass_obj
def merge_cmd(app: object, sources: tuple[Path, ...], into: str) -> None:
    """Append the runs of SOURCES (SQLite histories) to the history named by --into.

    Definitions (cases, variants, prompts) are stored once; every run is copied with its events,
    trials, scores, metrics, labels and costs under new ids and sealed in the target's chain. Each
    copied run gets a `merged` event recording the source's head digest, so every source stays
    verifiable (`ragqual --db A.db verify --expect HEAD`). A source that fails verify is refused
    (exit 2, nothing written); one at an older schema is upgraded in a temporary copy. Merging a
    source again copies only runs not merged yet.
    """
    outcome = merge_histories(sources, into)
    if getattr(app, "as_json", False):
        click.echo(json.dumps(_as_dict(outcome), indent=2))
        return
    for s in outcome.sources:
        copied = [r.run_id for r in s.runs if r.copied]
        kept = [r.run_id for r in s.runs if not r.copied]
        upgraded = f", read from a copy upgraded from schema {s.upgraded_from}" if s.upgraded_from else ""
        line = f"{s.path.name}: {len(copied)} run(s) copied" + (f" as run(s) {_ids(copied)}" if copied else "")
        if kept:
            line += f"; {len(kept)} merged before (run(s) {_ids(kept)}), skipped"
        click.echo(f"{line}; source head {s.source.head or 'none'} ({s.source.seals} seals){upgraded}")
    click.echo(f"{masked_url(into)}: head digest {outcome.head or 'none'}")


def _as_dict(outcome: MergeOutcome) -> dict[str, object]:
    return {"into": masked_url(outcome.target), "head": outcome.head, "sources": [
        {"file": str(s.path), "head": s.source.head, "seals": s.source.seals, "history": s.source.history,
         "upgraded_from": s.upgraded_from,
         "runs": [{"source_run": r.source_run, "run_id": r.run_id, "copied": r.copied} for r in s.runs]}
        for s in outcome.sources]}
