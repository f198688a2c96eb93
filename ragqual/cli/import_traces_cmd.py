"""`ragqual import-traces FILE --out DIR`: production traces -> an `answers:` file and draft goldens."""

from __future__ import annotations

from pathlib import Path

import click

from ragqual.app.otel import import_traces


@click.command("import-traces")
@click.argument("trace_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for answers.jsonl and goldens-draft.jsonl (written together or not at all).")
def import_traces_cmd(trace_file: Path, out: Path) -> None:
    """Turn OTLP/JSON traces of a RAG system into an answers file and draft goldens to review.

    Chat spans (OpenTelemetry GenAI conventions, or OpenInference LLM spans) with their output
    message become rows of DIR/answers.jsonl, replayable with the model `answers:DIR/answers.jsonl`;
    the question and retrieved documents become DIR/goldens-draft.jsonl, each marked "draft": true
    (the goldens loader refuses a draft until it is reviewed). Bad input names the file and the line
    or span and writes nothing (exit 2).
    """
    imported = import_traces(trace_file, out)
    for reason in imported.skipped:
        click.echo(f"skipped {reason}", err=True)
    click.echo(f"read {imported.spans} spans from {trace_file}: wrote {out / 'answers.jsonl'} "
               f"({len(imported.answers)} answers) and {out / 'goldens-draft.jsonl'} ({len(imported.drafts)} draft goldens)")
