"""`ragqual export RUN_ID`: a run's trials and metric rows as files for pandas and spreadsheets.

Two files: `trials.<ext>` (the run's rows of `v_trials`, each trial with its newest score) and
`metric_values.<ext>` (every metric row, every scorer version). Parquet needs pyarrow, the
`parquet` extra.
"""

from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from ragqual.cli.context import AppContext
from ragqual.errors import InputError
from ragqual.store.queries import export_metrics, export_trials

PARQUET_HINT = "parquet export needs pyarrow: pip install 'ragqual[parquet]' (or use --format csv)"


def _require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise InputError(PARQUET_HINT) from None


def write_frame(frame: pd.DataFrame, path: Path, fmt: str) -> None:
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


@click.command("export")
@click.argument("run_id", type=int)
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the files (default: <results>/exports/run-<RUN_ID>).")
@click.pass_obj
def export_cmd(app: AppContext, run_id: int, fmt: str, out: Path | None) -> None:
    """Write RUN_ID's trials and metric values as parquet or csv files."""
    if fmt == "parquet":
        _require_pyarrow()
    store = app.store(auto_create=False)
    store.get_run(run_id)  # an unknown id names `ragqual history`
    folder = out or app.settings.results_dir / "exports" / f"run-{run_id}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in (("trials", export_trials(store.engine, run_id)),
                        ("metric_values", export_metrics(store.engine, run_id))):
        path = folder / f"{name}.{fmt}"
        write_frame(frame, path, fmt)
        click.echo(f"wrote {path} ({len(frame)} rows)")
