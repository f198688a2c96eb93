"""`ragqual labels`: human labels as files, for teams that label elsewhere (import, export)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ragqual.app.context import AppContext
from ragqual.app.labelling import export_labels, import_labels
from ragqual.core.label_files import FORMATS


@click.group("labels")
def labels_group() -> None:
    """Import and export human labels (CSV or JSONL) of a run's trials."""


@labels_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run", "run_id", type=int, required=True, help="The run whose trials the file labels.")
@click.option("--labeller", "labeller", metavar="NAME", default=None,
              help="Labeller of the lines that name none (default: $USER).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="File format (default: csv for a .csv file, else jsonl).")
@click.pass_obj
def import_cmd(app: AppContext, file: Path, run_id: int, labeller: str | None, fmt: str | None) -> None:
    """Append the labels of FILE (CSV with a header, or JSONL) to run --run: all or nothing.

    Each line names a trial (trial_id, or case_id with mode, repeat and model), a criterion, a
    verdict and optionally a note, labeller and labelled_at. A bad line is refused naming the file
    and line, and nothing is written.
    """
    result = import_labels(app, file, run_id, labeller, fmt)
    if app.as_json:
        click.echo(json.dumps({"run_id": run_id, "rows": result.rows, "trials": result.trials,
                               "source": result.source, "ids": result.ids}, indent=2))
        return
    click.echo(f"run {run_id}: {result.rows} label row(s) on {result.trials} trial(s) appended from {file} "
               f"(source {result.source})")


@labels_group.command("export")
@click.argument("run_id", type=int)
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: standard output).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="csv or jsonl (default: from the -o file's name, else csv).")
@click.option("--all", "every_row", is_flag=True, help="Every label row, corrections included (default: the "
              "current label per trial, criterion and labeller).")
@click.pass_obj
def export_cmd(app: AppContext, run_id: int, output: Path | None, fmt: str | None, every_row: bool) -> None:
    """Write RUN_ID's labels as CSV or JSONL, in the format `labels import` reads."""
    chosen = fmt or ("jsonl" if output is not None and output.suffix.lower() in (".jsonl", ".json") else "csv")
    text, count = export_labels(app, run_id, chosen, every_row)
    if output is None:
        click.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    click.echo(f"run {run_id}: {count} label(s) written to {output}", err=True)
