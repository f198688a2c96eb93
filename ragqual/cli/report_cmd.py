"""`ragqual report`: one run's summary (built by `ragqual.app.run_report`), or its failing trials."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import click
import pandas as pd
from sqlalchemy import Engine

from ragqual.app.failures import failure_rows
from ragqual.app.judge_report import judge_sections
from ragqual.app.run_report import build_report
from ragqual.app.context import AppContext
from ragqual.app.history_reads import history_head, run_info, unsealed_rows
from ragqual.cli.output import (check_output, emit_document, emit_page, format_option, output_format, output_option,
                                warn_unsealed)
from ragqual.core.scoring import SCORER_NAME
from ragqual.store.records import RunInfo
from ragqual.store.summaries import run_header


# -- failures ---------------------------------------------------------------------------------------

def failures_document(engine: Engine, info: RunInfo) -> tuple[str, dict[str, Any], list[tuple[str, pd.DataFrame]]]:
    rows = failure_rows(engine, info.id)
    frame = pd.DataFrame([asdict(r) for r in rows],
                         columns=["variant", "mode", "case_id", "repeat", "cause", "failed_checks", "doc_recall",
                                  "fact_coverage", "answer"])
    header = {**run_header(info), **history_head(engine), "failing_trials": len(rows),
              "causes": {str(k): int(v) for k, v in frame["cause"].value_counts().items()}}
    header.pop("params", None)
    return f"Failures of run {info.id}", header, [("failures", frame)]


def _verdict_words(engine: Engine, info: RunInfo) -> str | None:
    """A generation run's mode decomposition in words (as `ragqual eval` prints it)."""
    if info.kind != "generation":
        return None
    from ragqual.app.failures import run_gap_causes
    from ragqual.cli.generation_tables import decomposition_text
    from ragqual.store.generation_reads import mode_lines

    return decomposition_text(mode_lines(engine, info.id), run_gap_causes(engine, info.id))


# -- the command -------------------------------------------------------------------------------------

@click.command("report")
@click.argument("run_id", type=int, required=False)
@click.option("--last", is_flag=True, help="Report the newest run.")
@click.option("--by", "by", multiple=True, type=click.Choice(["tag", "variant", "mode", "strategy"]),
              help="Group by this (repeatable; default variant and mode, or strategy for retrieval runs, "
                   "which --by tag splits further).")
@format_option(html=True)
@output_option()
@click.option("--scorer", "scorer_name", default=SCORER_NAME, show_default=True, help="Which scorer's scores to show.")
@click.option("--scorer-version", type=int, help="Show this scorer version (default: each trial's newest).")
@click.option("--failures", is_flag=True,
              help="List every failing trial: which assertion failed and why, and the measured cause "
                   "(missed document, fact not in the injected chunks, out-of-corpus answered, near-miss, model).")
@click.pass_obj
def report_cmd(app: AppContext, run_id: int | None, last: bool, by: tuple[str, ...], fmt: str, output: str | None,
               scorer_name: str, scorer_version: int | None, failures: bool) -> None:
    """Summarise one run from the history: metrics per group, pass rate, unstable questions, cost."""
    check_output(fmt, output)
    info = run_info(app, run_id, last)
    warn_unsealed(unsealed_rows(app, [info.id]))
    if failures:
        document = failures_document(app.history(), info)
        if fmt == "html":
            from ragqual.reports.page import document_page

            emit_page(document_page(*document), output)
            return
        emit_document(*document, output_format(fmt, app.as_json))
        return
    report = build_report(app.history(), info, by, scorer_name, scorer_version)
    report = replace(report, sections=[*report.sections, *judge_sections(app.history(), info.id)])
    if fmt == "html":
        from ragqual.app.whatif_run import page_whatif
        from ragqual.reports.run import run_page

        engine = app.history()
        whatif = page_whatif(app, info.id) if info.kind == "generation" else None
        emit_page(run_page(engine, info, report.title, report.header, report.sections, report.notes,
                           _verdict_words(engine, info), whatif), output)
        return
    emit_document(report.title, report.header, report.sections, output_format(fmt, app.as_json), report.notes)
