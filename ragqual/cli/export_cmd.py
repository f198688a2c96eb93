"""`ragqual export RUN_ID`: a run's trials and metric rows as files for pandas and spreadsheets.

Two files: `trials.<ext>` (the run's rows of `v_trials`, each trial with its newest score) and
`metric_values.<ext>` (every metric row, every scorer version), sealed rows only: rows no seal
covers are left out, with a warning on stderr. The default is Parquet when pyarrow
is installed (the `parquet` extra), CSV otherwise, so a quick-start install exports too.
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
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default=None,
              help="File format (default: parquet when pyarrow is installed, else csv).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the files (default: <results>/exports/run-<RUN_ID>).")
@click.pass_obj
def export_cmd(app: AppContext, run_id: int, fmt: str | None, out: Path | None) -> None:
    """Write RUN_ID's trials and metric values as parquet or csv files."""
    fmt = _resolve_format(fmt)
    frames = export_frames(app, run_id)
    warn_unsealed(unsealed_rows(app, [run_id]))
    folder = out or app.settings.results_dir / "exports" / f"run-{run_id}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in frames.items():
        path = folder / f"{name}.{fmt}"
        write_frame(frame, path, fmt)
        click.echo(f"wrote {path} ({len(frame)} rows)")
