"""`ragqual whatif RUN`: other similarity cut-offs and context sizes, recomputed from the candidates
a generation run's e2e trials stored (no search, no model call)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from ragqual.app.context import AppContext
from ragqual.app.whatif_run import VariantWhatif, run_whatif
from ragqual.cli.corpus_options import corpus_options
from ragqual.core.display import fmt_rate
from ragqual.core.whatif import Row, no_cut_off, parse_ks, parse_range

COLUMNS = ("threshold", "context_k", "refusals_empty", "answerable_lost", "contextRecall", "factCoverage",
           "readerCeiling", "mock_pass")


def _cells(row: Row, own: bool) -> list[str]:
    s = row.setting
    mark = " *" if own else ""
    return ["-" if s.threshold is None else f"{s.threshold:.2f}", f"{s.context_k}{mark}", fmt_rate(row.refusals_empty),
            fmt_rate(row.answerable_lost), fmt_rate(row.context_recall), fmt_rate(row.fact_coverage),
            fmt_rate(row.reader_ceiling), fmt_rate(row.reader)]


def table(rows: list[Row], own_setting: Any) -> str:
    body = [list(COLUMNS)] + [_cells(r, r.setting == own_setting) for r in rows]
    widths = [max(len(line[i]) for line in body) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in body)


def describe(v: VariantWhatif) -> str:
    out = [f"{v.variant}: {v.questions} question(s); {v.rows[0].questions} on {v.chosen_on}, where the setting is chosen "
           f"by {v.objective} (* = the run's own setting)", table(v.rows, v.own)]
    if v.report_rows is not None:
        out += [f"on test ({v.report_rows[0].questions} question(s)):", table(v.report_rows, v.own)]
    out.append("  - " + (v.advice or no_cut_off(v.overlap, v.objective, v.chosen_on)))
    return "\n".join(out)


@click.command("whatif")
@click.argument("run_id", type=int)
@corpus_options
@click.option("--threshold", "thresholds", metavar="RANGE",
              help="Dense similarity cut-offs to try: start:stop:step (0.3:0.8:0.05) or a list (0.3,0.5).")
@click.option("--context-k", "context_ks", metavar="LIST", help="Context sizes to try (1,3,5,8).")
@click.pass_obj
def whatif_cmd(app: AppContext, corpus_opts: Any, run_id: int, thresholds: str | None, context_ks: str | None) -> None:
    """Recompute RUN_ID's e2e contexts at other thresholds and context sizes from its stored candidates."""
    results = run_whatif(app, run_id, corpus_opts, parse_range(thresholds) if thresholds else None,
                         parse_ks(context_ks) if context_ks else None)
    if app.as_json:
        click.echo(json.dumps([asdict(v) for v in results], indent=2, default=str))
        return
    click.echo("\n\n".join(describe(v) for v in results))
