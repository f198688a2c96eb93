"""`ragqual export RUN_ID`: a run's trials and metric rows as files for pandas and spreadsheets.

Two files: `trials.<ext>` (the run's rows of `v_trials`, each trial with its newest score) and
`metric_values.<ext>` (every metric row, every scorer version), sealed rows only: rows no seal
covers are left out, with a warning on stderr. The default is Parquet when pyarrow
is installed (the `parquet` extra), CSV otherwise, so a quick-start install exports too.

`--format otlp-json -o FILE` writes the run as OpenTelemetry traces instead (one OTLP/JSON file:
a `chat` span per trial, a `retrieval` child span per e2e trial, every score as a
`gen_ai.evaluation.result` event; docs/opentelemetry.md). Prompts and answers only with `--with-content`.
"""

from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from ragqual.app.context import AppContext
from ragqual.app.history_reads import export_frames, unsealed_rows
from ragqual.cli.output import warn_unsealed
from ragqual.errors import InputError

PARQUET_HINT = "parquet export needs pyarrow: pip install -e '.[parquet]' in the checkout (or use --format csv)"


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _resolve_format(fmt: str | None) -> str:
    """The asked format, or parquet when pyarrow is there and csv when it is not."""
    if fmt is None:
        return "parquet" if _has_pyarrow() else "csv"
    if fmt == "parquet" and not _has_pyarrow():
        raise InputError(PARQUET_HINT)
    return fmt


def write_frame(frame: pd.DataFrame, path: Path, fmt: str) -> None:
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


@click.command("export")
@click.argument("run_id", type=int)
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv", "otlp-json"]), default=None,
              help="File format (default: parquet when pyarrow is installed, else csv; otlp-json: "
                   "OpenTelemetry GenAI traces in one file, needs -o).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the files (default: <results>/exports/run-<RUN_ID>).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="The trace file to write (--format otlp-json).")
@click.option("--with-content", is_flag=True,
              help="otlp-json: include the system prompt, the messages, the answer and the retrieval query.")
@click.pass_obj
def export_cmd(app: AppContext, run_id: int, fmt: str | None, out: Path | None, output: Path | None,
               with_content: bool) -> None:
    """Write RUN_ID's trials and metric values as parquet or csv files."""
    if fmt == "otlp-json":
        _export_otlp(app, run_id, output, with_content)
        return
    if output is not None or with_content:
        raise InputError("-o/--output and --with-content go with --format otlp-json (use --out FOLDER for parquet/csv)")
    fmt = _resolve_format(fmt)
    frames = export_frames(app, run_id)
    warn_unsealed(unsealed_rows(app, [run_id]))
    folder = out or app.settings.results_dir / "exports" / f"run-{run_id}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in frames.items():
        path = folder / f"{name}.{fmt}"
        write_frame(frame, path, fmt)
        click.echo(f"wrote {path} ({len(frame)} rows)")


def _export_otlp(app: AppContext, run_id: int, output: Path | None, with_content: bool) -> None:
    from ragqual.app.otel import export_otlp

    if output is None:
        raise InputError("--format otlp-json writes one file: give it with -o FILE")
    spans = export_otlp(app, run_id, output, with_content)
    warn_unsealed(unsealed_rows(app, [run_id]))
    click.echo(f"wrote {output} ({spans} spans{', with content' if with_content else ''})")
