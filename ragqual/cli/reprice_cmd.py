"""`ragqual reprice`: price a stored run's trials again under another price list; appends, keeps."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from ragqual.app.context import AppContext
from ragqual.app.pricing import cost_frame, reprice, variant_cost_rows
from ragqual.cli.output import emit_frame


@click.command("reprice")
@click.argument("run_id", type=int)
@click.option("--pricing", "pricing_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The price list to price the run with (TOML, the format of pricing.toml).")
@click.pass_obj
def reprice_cmd(app: AppContext, run_id: int, pricing_file: Path) -> None:
    """Price RUN_ID's trials under the price list in FILE; appends cost rows, keeps the old ones.

    The list is stored once as a pricing snapshot (by hash); each trial gets a cost row under
    it (none when its newest row is already under it). Reports then read the newest rows;
    `--pricing-snapshot ID|HASH` shows an earlier pricing, and `ragqual audit TRIAL_ID` every one.
    """
    source, result = reprice(app, run_id, pricing_file)
    costs = variant_cost_rows(app.history(), run_id)
    if app.as_json:
        click.echo(json.dumps({"reprice": asdict(result), "source": source.where,
                               "variants": cost_frame(costs).to_dict(orient="records")}, indent=2, default=str))
        return
    where = f"snapshot {result.snapshot_id} ({result.snapshot_sha256[:12]}) from {source.where}"
    if result.appended == 0:
        click.echo(f"run {run_id}: every trial's newest cost is already under {where}: nothing appended")
    else:
        click.echo(f"run {run_id}: priced {result.appended} of {result.trials} trial(s) under {where}; "
                   f"{result.priced} with a price, {result.appended - result.priced} unpriced; "
                   "new rows appended, old rows kept")
    emit_frame(cost_frame(costs), "table")
