"""`ragqual report`: one run's summary (built by `ragqual.app.run_report`), or its failing trials."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click
import pandas as pd
from sqlalchemy import Engine

from ragqual.app.ci_checks import run_junit_cases
from ragqual.app.judge_report import judge_sections
from ragqual.app.context import AppContext
from ragqual.app.history_reads import run_info, unsealed_rows
from ragqual.app.pricing import snapshot_ref
from ragqual.app.run_report import build_report
from ragqual.cli.ci_format import failures_document
from ragqual.cli.output import (check_output, emit_document, emit_page, format_option, output_format, output_option,
                                pricing_snapshot_option, warn_unsealed)
from ragqual.core.junit import junit_xml
from ragqual.core.scoring import SCORER_NAME
from ragqual.store.records import RunInfo


# -- failures ---------------------------------------------------------------------------------------

def _verdict_words(engine: Engine, info: RunInfo) -> str | None:
    """A generation run's mode decomposition in words (as `ragqual eval` prints it)."""
    if info.kind != "generation":
        return None
    from ragqual.app.failures import run_gap_causes
    from ragqual.cli.generation_tables import decomposition_text
    from ragqual.store.generation_reads import mode_lines

    return decomposition_text(mode_lines(engine, info.id), run_gap_causes(engine, info.id))


def retrieval_failures_document(app: AppContext, info: RunInfo) -> tuple[str, dict[str, Any],
                                                                        list[tuple[str, pd.DataFrame]]]:
    """A retrieval run's failures: each question x strategy that hit nothing in the top 5."""
    failed = [c for c in run_junit_cases(app.history(), info) if c.outcome != "passed"]
    frame = pd.DataFrame([{"strategy": c.classname.rsplit(".", 1)[-1], "question": c.name, "why": c.message,
                           "cause": "missed document"} for c in failed],
                         columns=["strategy", "question", "why", "cause"])
    return f"Failures of run {info.id}", {"run_id": info.id, "failing": len(failed)}, [("failures", frame)]


def emit_junit(app: AppContext, info: RunInfo, output: str | None, failures_only: bool) -> None:
    """One JUnit test case per question x variant/mode (or strategy); with --failures-only only the
    ones that did not pass."""
    cases = run_junit_cases(app.history(), info)
    if failures_only:
        cases = [c for c in cases if c.outcome != "passed"]
    text = junit_xml(f"ragqual run {info.id} ({info.kind})", cases,
                     {"run_id": str(info.id), "git_sha": info.git_sha or "-"})
    if output is None:
        click.echo(text, nl=False)
    else:
        emit_page(text, output)


GROUPS = ("tag", "variant", "mode", "strategy")


def _group_by(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if value not in GROUPS and not (value.startswith("axis:") and value[5:].isidentifier()):
            raise click.BadParameter(f"{value!r} is not one of {', '.join(GROUPS)} or axis:NAME")
    return values


# -- the command -------------------------------------------------------------------------------------

@click.command("report")
@click.argument("run_id", type=int, required=False)
@click.option("--last", is_flag=True, help="Report the newest run.")
@click.option("--by", "by", multiple=True, callback=lambda ctx, param, value: _group_by(value),
              metavar="tag|variant|mode|strategy|axis:NAME",
              help="Group by this (repeatable; default variant and mode, or strategy for retrieval runs, "
                   "which --by tag splits further). axis:NAME groups by a declared axis of a run made with --axis.")
@format_option(html=True, extra=("junit",))
@output_option()
@click.option("--scorer", "scorer_name", default=SCORER_NAME, show_default=True, help="Which scorer's scores to show.")
@click.option("--scorer-version", type=int, help="Show this scorer version (default: each trial's newest).")
@click.option("--failures", is_flag=True,
              help="List every failing trial: which assertion failed and why, and the measured cause "
                   "(missed document, fact not in the injected chunks, out-of-corpus answered, near-miss, model).")
@click.option("--failures-only", is_flag=True,
              help="Show only what failed, with its cause (for CI logs): the failing trials as --failures lists "
                   "them; for a retrieval run the questions that hit nothing in the top 5.")
@pricing_snapshot_option
@click.pass_obj
def report_cmd(app: AppContext, run_id: int | None, last: bool, by: tuple[str, ...], fmt: str, output: str | None,
               scorer_name: str, scorer_version: int | None, failures: bool, failures_only: bool,
               pricing_snapshot: str | None) -> None:
    """Summarise one run from the history: metrics per group, pass rate, unstable questions, cost."""
    check_output(fmt, output)
    info = run_info(app, run_id, last)
    warn_unsealed(unsealed_rows(app, [info.id]))
    fmt = output_format(fmt, app.as_json)
    if fmt == "junit":
        emit_junit(app, info, output, failures_only)
        return
    if failures_only and info.kind == "retrieval":
        emit_document(*retrieval_failures_document(app, info), fmt)
        return
    if failures or failures_only:
        document = failures_document(app.history(), info)
        if fmt == "html":
            from ragqual.reports.page import document_page

            emit_page(document_page(*document), output)
            return
        emit_document(*document, output_format(fmt, app.as_json))
        return
    report = build_report(app.history(), info, by, scorer_name, scorer_version,
                          snapshot_ref(app.history(), pricing_snapshot))
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
