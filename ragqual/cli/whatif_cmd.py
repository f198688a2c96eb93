"""`ragqual whatif RUN`: other similarity cut-offs, context sizes and strategies, recomputed from the
candidates a generation run's e2e trials stored or the rankings a retrieval run stored (no search,
no model call)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from ragqual.app.context import AppContext
from ragqual.app.history_reads import run_info
from ragqual.app.whatif_run import RetrievalWhatif, VariantWhatif, run_retrieval_whatif, run_whatif
from ragqual.cli.corpus_options import corpus_options
from ragqual.core.display import fmt_rate
from ragqual.core.whatif import RankedRow, Row, no_cut_off, parse_ks, parse_range, parse_strategies
from ragqual.pipeline.retrieval import STRATEGIES

COLUMNS = ("threshold", "context_k", "refusals_empty", "answerable_lost", "contextRecall", "factCoverage",
           "readerCeiling", "mock_pass")


def _cells(row: Row, own: bool) -> list[str]:
    s = row.setting
    mark = " *" if own else ""
    return ["-" if s.threshold is None else f"{s.threshold:.2f}", f"{s.context_k}{mark}", fmt_rate(row.refusals_empty),
            fmt_rate(row.answerable_lost), fmt_rate(row.context_recall), fmt_rate(row.fact_coverage),
            fmt_rate(row.reader_ceiling), fmt_rate(row.reader)]


def _strategy(row: Row, own_strategy: str | None) -> str:
    return row.setting.strategy or own_strategy or "-"


def _render(body: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in body) for i in range(len(body[0]))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in body)


def table(rows: list[Row], own_setting: Any, own_strategy: str | None = None) -> str:
    """The e2e table; a strategy column only when a row cuts another strategy's candidates."""
    with_strategy = any(r.setting.strategy for r in rows)
    head = (["strategy"] if with_strategy else []) + list(COLUMNS)
    body = [head] + [([_strategy(r, own_strategy)] if with_strategy else []) + _cells(r, r.setting == own_setting)
                     for r in rows]
    return _render(body)


RANKED_COLUMNS = ("strategy", "threshold", "context_k", "refusals_empty", "answerable_lost", "recall@k", "contextRecall")


def ranked_table(rows: list[RankedRow], result: RetrievalWhatif) -> str:
    body = [list(RANKED_COLUMNS)]
    for r in rows:
        s, mark = r.setting, " *" if r.setting == result.own.get(r.strategy) else ""
        body.append([r.strategy, "-" if s.threshold is None else f"{s.threshold:.2f}", f"{s.context_k}{mark}",
                     fmt_rate(r.refusals_empty), fmt_rate(r.answerable_lost), fmt_rate(r.recall_at_k),
                     fmt_rate(r.context_recall)])
    return _render(body)


def describe_retrieval(result: RetrievalWhatif) -> str:
    first = result.rows[0].questions if result.rows else 0
    out = [f"retrieval run {result.run_id}: {result.questions} question(s); {first} on {result.chosen_on}, where a "
           "strategy and setting are chosen by contextRecall (* = the run's own setting; recall@k is at the "
           "setting's context-k)"]
    if result.rows:
        out.append(ranked_table(result.rows, result))
    if result.report_rows is not None and result.report_rows:
        out += [f"on test ({result.report_rows[0].questions} question(s)):", ranked_table(result.report_rows, result)]
    out += [f"  - cannot be recomputed: {why}" for why in result.unavailable]
    if result.last_turn:
        out.append(f"  - contextRecall: {result.last_turn} multi-turn question(s) were searched by their last message "
                   "as written, where e2e trials search the model's rewrite of the conversation; a generation run's "
                   "contextRecall can differ on those questions (docs/whatif.md).")
    out.append("  - " + (result.advice or f"no strategy, cut-off or context size tried raises contextRecall on "
                                           f"{result.chosen_on}."))
    return "\n".join(out)


def describe(v: VariantWhatif) -> str:
    out = [f"{v.variant}: {v.questions} question(s); {v.rows[0].questions} on {v.chosen_on}, where the setting is chosen "
           f"by {v.objective} (* = the run's own setting)", table(v.rows, v.own, v.own_strategy)]
    if v.report_rows is not None:
        out += [f"on test ({v.report_rows[0].questions} question(s)):", table(v.report_rows, v.own, v.own_strategy)]
    out += [f"  - cannot be recomputed: {why}" for why in v.unavailable]
    if v.rewritten:
        out.append(f"  - contextRecall: e2e retrieval searched the model's rewrite of {v.rewritten} multi-turn "
                   "question(s), where a retrieval run searches their last message as written; its contextRecall "
                   "can differ on those questions (docs/whatif.md).")
    out.append("  - " + (v.advice or no_cut_off(v.overlap, v.objective, v.chosen_on)))
    return "\n".join(out)


@click.command("whatif")
@click.argument("run_id", type=int)
@corpus_options
@click.option("--threshold", "thresholds", metavar="RANGE",
              help="Dense similarity cut-offs to try: start:stop:step (0.3:0.8:0.05) or a list (0.3,0.5).")
@click.option("--context-k", "context_ks", metavar="LIST", help="Context sizes to try (1,3,5,8).")
@click.option("--strategy", "strategies", metavar="LIST",
              help="Retrieval strategies to compare (dense,bm25,hybrid), from the candidates the run stored.")
@click.pass_obj
def whatif_cmd(app: AppContext, corpus_opts: Any, run_id: int, thresholds: str | None, context_ks: str | None,
               strategies: str | None) -> None:
    """Recompute RUN_ID's contexts at other thresholds, context sizes and strategies from what it stored.

    A generation run's e2e trials store their candidate lists; a retrieval run stores its rankings.
    No search and no model call: the mock's pass rate is recomputed, other readers get the reader
    ceiling. Settings the stored lists cannot decide are named; exit 2 when none can be."""
    cuts = parse_range(thresholds) if thresholds else None
    ks = parse_ks(context_ks) if context_ks else None
    kinds = parse_strategies(strategies, STRATEGIES) if strategies else None
    if run_info(app, run_id).kind == "retrieval":
        ranked = run_retrieval_whatif(app, run_id, corpus_opts, cuts, ks, kinds)
        click.echo(json.dumps(asdict(ranked), indent=2, default=str) if app.as_json else describe_retrieval(ranked))
        return
    results = run_whatif(app, run_id, corpus_opts, cuts, ks, kinds)
    if app.as_json:
        click.echo(json.dumps([asdict(v) for v in results], indent=2, default=str))
        return
    click.echo("\n\n".join(describe(v) for v in results))
