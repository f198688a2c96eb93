"""`ragqual matrix`: the capability table — models down, metrics per mode across, with the mock line."""

from __future__ import annotations

import json
from typing import Any

import click
import pandas as pd

from ragqual.app.context import AppContext
from ragqual.app.history_reads import history_head
from ragqual.app.pricing import cost_frame, cost_records, snapshot_ref, variant_cost_rows
from ragqual.app.generation_run import GenerationOptions, generation_tier, run_variant_axes, stored_mode_lines
from ragqual.cli.axis_options import axis_option
from ragqual.cli.context import resumable
from ragqual.cli.corpus_options import corpus_options
from ragqual.cli.label_options import name_option, refuse_label, run_tag_option, run_tags_only
from ragqual.cli.output import check_output, emit_frame, emit_page, output_option, pricing_snapshot_option
from ragqual.cli.progress import fmt3, progress_printer
from ragqual.core.display import MISSING
from ragqual.engine import axes as axes_mod
from ragqual.errors import InputError
from ragqual.store.generation_reads import ModeLine
from ragqual.subjects.rag import MODES


def capability_table(lines: list[ModeLine], modes: list[str],
                     variant_axes: dict[str, dict[str, Any]] | None = None) -> str:
    """Rows = models (and, for a run over axes, one column per axis that varies); for each mode:
    correctness, refusal correctness and pass rate."""
    by: dict[str, dict[str, ModeLine]] = {}
    for ln in lines:
        by.setdefault(ln.variant, {})[ln.mode] = ln
    variant_axes = variant_axes or {}
    columns = [n for n in axes_mod.varied(variant_axes) if n != "model"]
    head = ["model", *columns] + [f"{m} {k}" for m in modes for k in ("correct", "refusal", "pass")]
    rows = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for model, per_mode in by.items():
        values = variant_axes.get(model)
        cells = [str(values.get("model", model)) if values else model]
        cells += [axes_mod.show_value(values.get(n)) if values else MISSING for n in columns]
        for mode in modes:
            cell = per_mode.get(mode)
            cells += [MISSING] * 3 if cell is None else [fmt3(cell.correctness), fmt3(cell.refusal), fmt3(cell.pass_rate)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def markdown_frame(table: str) -> pd.DataFrame:
    """The capability table's rows as a frame (the same cells the text shows)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()]
    return pd.DataFrame(rows[2:], columns=rows[0])


@click.command("matrix")
@corpus_options
@click.option("--models", metavar="A,B,C", help="Comma-separated model URIs (mock is always added).")
@click.option("--run", "run_id", type=int, metavar="RUN_ID",
              help="Show the table of a stored generation run instead of running the models.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N goldens.")
@click.option("--all-modes", is_flag=True, help="All three modes (default: e2e only).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--ollama-host", default=None, metavar="URL")
@click.option("--num-predict", type=int, default=None, help="Maximum answer tokens.")
@click.option("--scorer-version", type=int, help="Pin the scorer version (default: each trial's newest scoring).")
@click.option("--allow-incomplete", is_flag=True, help="With --run: show a run whose last event is not `finished`.")
@click.option("--format", "fmt", type=click.Choice(["table", "html"]), default="table", show_default=True,
              help="html: one self-contained page with the heatmap, written to -o FILE or printed.")
@output_option()
@name_option
@run_tag_option
@pricing_snapshot_option
@axis_option
@click.pass_obj
def matrix_cmd(app: AppContext, corpus_opts, models, run_id, limit, all_modes, repeats, ollama_host, num_predict,
               scorer_version, allow_incomplete, fmt, output, name, run_tags, pricing_snapshot, axes) -> None:
    """Capability table of several models: the artefact to look up when someone reports a bad answer."""
    check_output(fmt, output)
    if (models is None and not axes) == (run_id is None):
        raise InputError("give --models A,B,C (or --axis NAME=V1,V2) to run the models, or --run RUN_ID to show a "
                         "stored run")
    run_tags = run_tags_only(run_tags)
    flag = None
    if run_id is not None:
        refuse_label(name, run_tags, "--run shows a stored run and records none")
        if axes:
            raise InputError("--axis runs the models; --run shows a stored run: give one of them")
        lines, flag = stored_mode_lines(app, run_id, scorer_version, allow_incomplete)
        modes = [m for m in MODES if any(ln.mode == m for ln in lines)]
    else:
        uris = tuple(m.strip() for m in (models or "").split(",") if m.strip())
        modes = list(MODES) if all_modes else ["e2e"]
        options = GenerationOptions(models=uris, modes=tuple(modes), repeats=repeats, limit=limit,
                                    ollama_host=ollama_host, num_predict=num_predict, name=name, run_tags=run_tags,
                                    axes=tuple(axes))
        with resumable(app, "generation"):
            result = generation_tier(app, corpus_opts, options, progress_printer(app, "generation"))
        run_id = result.run_id
        lines = stored_mode_lines(app, run_id, scorer_version, True)[0] if scorer_version else result.lines
    costs = cost_frame(variant_cost_rows(app.history(), run_id, scorer_version=scorer_version,
                                         snapshot=snapshot_ref(app.history(), pricing_snapshot)))
    variant_axes = run_variant_axes(app, run_id)
    if app.as_json:
        click.echo(json.dumps({"run_id": run_id, "incomplete": flag, "lines": [ln.__dict__ for ln in lines],
                               "axes": variant_axes, "costs": cost_records(costs)}, indent=2))
        return
    if fmt == "html":
        from ragqual.reports.matrix import matrix_page

        emit_page(matrix_page(lines, modes, run_id, markdown_frame(capability_table(lines, modes, variant_axes)), flag,
                              history_head(app.history()), costs), output)
        return
    table = capability_table(lines, modes, variant_axes)
    if flag:
        table = "\n".join(f"{row} {flag}" if row.startswith("| ") and not row.startswith("| model") else row
                          for row in table.splitlines())
    click.echo(table)
    click.echo("\ncost per variant (all modes; per passing answer; - = unpriced):")
    emit_frame(costs, "table")
    click.echo(f"\nrun {run_id}; a user's model scoring near its row is at its ceiling, well below it is worth "
               "investigating (their config or our code)")
