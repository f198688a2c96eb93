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


@labels_group.command("plan")
@click.argument("run_id", type=int)
@click.option("--width", type=click.FloatRange(min=0, min_open=True), required=True,
              help="The full width of the 95 % PPI++ interval wanted (e.g. 0.05).")
@click.option("--judge", "judge", default=None, metavar="URI",
              help="Plan with this judge's verdicts (default: the newest judge run's).")
@click.pass_obj
def plan_cmd(app: AppContext, run_id: int, width: float, judge: str | None) -> None:
    """Say how many more labels RUN_ID needs for a PPI++ interval of the given width, per criterion.

    A power analysis at the spread of the labels so far and their covariance with the judge's
    scores: a judge that agrees with people needs fewer labels. The labels must be a uniform random
    sample of the judged trials (`ragqual label RUN --sample N --seed S`).
    """
    import json

    from ragqual.app.judge_audit import plan_labels

    plans = plan_labels(app, run_id, width, judge)
    if app.as_json:
        click.echo(json.dumps([p.__dict__ for p in plans], indent=2))
        return
    click.echo(f"labels for a PPI++ interval {width:g} wide on run {run_id}:")
    click.echo("| criterion | judged trials | labelled | labels needed | more to label |")
    click.echo("|---|---|---|---|---|")
    for p in plans:
        needed = "-" if p.needed is None else str(p.needed)
        more = "-" if p.more is None else str(p.more)
        click.echo(f"| {p.criterion} | {p.judged} | {p.labelled} | {needed} | {more} |")
    for p in plans:
        if p.note:
            click.echo(f"{p.criterion}: {p.note}")


@labels_group.command("agree")
@click.argument("run_id", type=int)
@click.pass_obj
def agree_cmd(app: AppContext, run_id: int) -> None:
    """Measure how far RUN_ID's labellers agree with each other, criterion by criterion.

    For every pair of labellers who labelled some of the same trials: Cohen's kappa with both
    yes rates, the confusion matrix (the first labeller's verdicts as rows), the share of equal
    verdicts and the trials they disagree on; trials either marked unsure are left out and
    counted. Two people's kappa is the most a judge's kappa against one of them can be read as.
    """
    from ragqual.app.labelling import labeller_agreement
    from ragqual.core.display import fmt_rate

    pairs = labeller_agreement(app, run_id)
    if app.as_json:
        click.echo(json.dumps([{"criterion": c, **p.as_dict()} for c, p in pairs], indent=2))
        return

    click.echo(f"labeller agreement on run {run_id}:")
    click.echo("| criterion | labellers | n | kappa | first yes | second yes | agree | tn fp fn tp | unsure |")
    click.echo("|---|---|---|---|---|---|---|---|---|")
    for criterion, p in pairs:
        a = p.agreement
        (tn, fp), (fn, tp) = a.confusion
        click.echo(f"| {criterion} | {p.first} / {p.second} | {a.n} | {fmt_rate(a.kappa)} | {fmt_rate(a.human_rate)} | "
                   f"{fmt_rate(a.judge_rate)} | {fmt_rate(a.accuracy)} | {tn} {fp} {fn} {tp} | {len(p.unsure)} |")
    for criterion, p in pairs:
        if p.disagreements:
            click.echo(f"{criterion}: {p.first} and {p.second} disagree on trial(s) "
                       + ", ".join(map(str, p.disagreements)))
        if p.agreement.kappa_reason:
            click.echo(f"{criterion}: kappa undefined: {p.agreement.kappa_reason}")
