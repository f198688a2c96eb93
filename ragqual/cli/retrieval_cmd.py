"""`ragqual retrieval`: the deterministic tier — every golden through dense, BM25 and hybrid retrieval."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ragqual.app.collector import freeze_at_exit
from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.app.retrieval_run import RetrievalOptions, RetrievalOutcome, retrieval_tier
from ragqual.cli.corpus_options import corpus_options
from ragqual.cli.label_options import GOLDEN_OR_RUN_TAG_HELP, golden_and_run_tags, name_option
from ragqual.cli.main import end_with_the_command
from ragqual.cli import run_modules  # noqa: F401  (what every run opens, loaded with the command)
from ragqual.core.display import fmt_ms
from ragqual.core.metric_names import RETRIEVAL_HEADLINE as HEADLINE
from ragqual.pipeline.report import headline_for, metric_table, quality_markdown, render_json
from ragqual.pipeline.retrieval import STRATEGIES
from ragqual.pipeline.retrieval_tier import TierResult, quality_section


def ablation_table(results: dict[str, TierResult]) -> str:
    overall = {name: quality_section(r)["overall"] for name, r in results.items()}
    full = overall["full"]
    rows = {}
    for name, values in overall.items():
        rows[name] = {k: values.get(k) for k in HEADLINE}
        if name != "full":
            rows[f"  Δ {name}"] = {k: _delta(values.get(k), full.get(k)) for k in HEADLINE}
    return metric_table(rows, first="stage")


def _delta(value: float | None, base: float | None) -> float | None:
    if value is None or base is None:
        return None
    return value - base  # rounded once, by the table


@click.command("retrieval")
@corpus_options
@click.option("--strategy", "strategies", multiple=True, type=click.Choice(STRATEGIES), help="Strategy to run (repeatable) [default: all three].")
@click.option("--ablate", is_flag=True, help="Run each pipeline stage on/off side by side with deltas.")
@click.option("--threshold", type=float, default=None, help="Dense similarity cut-off for what reaches the context.")
@click.option("--tag", "tags", multiple=True, help=GOLDEN_OR_RUN_TAG_HELP)
@name_option
@click.option("--split", metavar="NAME", default=None, help="Only goldens of this split: validation, test, or a BEIR collection's qrels split (dev, train...).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N goldens.")
@click.option("--candidate-k", type=click.IntRange(min=1), default=None, help="Candidates each retriever returns [default: 20; 1000 on a BEIR/TREC collection].")
@click.option("--context-k", type=click.IntRange(min=1), default=5, show_default=True, help="Chunks that reach the context.")
@click.option("--rrf-k", type=click.IntRange(min=1), default=60, show_default=True, help="Reciprocal rank fusion constant.")
@click.option("--expand/--no-expand", default=None, help="Acronym expansion with the glossary named in [tool.ragqual] "
                   "[default: on when one is named; off on a BEIR/TREC collection].")
@click.option("--rerank/--no-rerank", default=None, help="The lexical rerank stage [default: on; off on a BEIR/TREC collection].")
@click.option("--stem/--no-stem", default=None, help="English stemming for BM25 [default: off; on on a BEIR/TREC collection].")
@click.option("--verbose", "show_misses", is_flag=True, help="List every miss and what was retrieved instead.")
@click.option("--report", "write", is_flag=True, help="Write JSON + Markdown under eval-results/reports/.")
@click.option("--export-trec", type=click.Path(path_type=Path, file_okay=False), default=None, help="Write qrels and TREC runs to DIR.")
@click.option("--distractors", type=click.Path(path_type=Path, file_okay=False, exists=True), default=None,
              help="Also run with the documents of PATH (any corpus layout) in the index, never relevant; prints both side by side.")
@click.pass_obj
def retrieval_cmd(app: AppContext, corpus_opts: CorpusOptions, strategies, ablate, threshold, tags, name, split,
                  limit, candidate_k, context_k, rrf_k, expand, rerank, stem, show_misses, write, export_trec,
                  distractors) -> None:
    """Run the retrieval tier: no chat model, deterministic, seconds."""
    golden_tags, run_tags = golden_and_run_tags(tags)
    options = RetrievalOptions(strategies=tuple(strategies), ablate=ablate, threshold=threshold, tags=golden_tags,
                               split=split, limit=limit, candidate_k=candidate_k, context_k=context_k, rrf_k=rrf_k,
                               expand=expand, rerank=rerank, stem=stem, write_report=write, export_trec=export_trec,
                               distractors=distractors, name=name, run_tags=run_tags)
    freeze_at_exit()  # the process ends with the command
    end_with_the_command()
    outcome = retrieval_tier(app, corpus_opts, options)
    _print(app, outcome, ablate, show_misses)
    if write:
        click.echo(f"report: {outcome.files[0]} and {outcome.files[1]}", err=True)
    for path in outcome.files[2 if write else 0:]:
        click.echo(f"wrote {path}", err=True)


def distractor_table(section: dict) -> str:
    """Each strategy's headline metrics without and with the distractors, and the change."""
    rows: dict[str, dict] = {}
    for name, pair in section["overall"].items():
        columns = headline_for([pair["without"]])
        rows[f"{name} without"] = {k: pair["without"].get(k) for k in [*columns, "questions"]}
        rows[f"{name} with"] = {k: pair["with"].get(k) for k in [*columns, "questions"]}
        rows[f"  Δ {name}"] = {k: _delta(pair["with"].get(k), pair["without"].get(k)) for k in columns}
    return metric_table(rows, columns, first="strategy")


def _print(app: AppContext, outcome: RetrievalOutcome, ablate: bool, show_misses: bool) -> None:
    if app.as_json:
        sys.stdout.write(render_json(outcome.report))
        return
    if ablate:
        click.echo(ablation_table(outcome.results))
    else:
        click.echo(quality_markdown(outcome.report["quality"]).strip())
    if "distractors" in outcome.report:
        section = outcome.report["distractors"]
        click.echo(f"\n### With {section['documents']} distractor documents from {section['folder']} (run {section['run_id']})\n")
        click.echo(distractor_table(section))
    if show_misses:
        for name, quality in outcome.report["quality"].items():
            for miss in quality["misses"]:
                click.echo(f"[{name}] miss {miss['id']}: expected {', '.join(miss['expected'])}; got {', '.join(miss['retrieved'])}")
    timings = ", ".join(f"{n} p50 {fmt_ms(t.get('latencyP50Ms'))} ms / p95 {fmt_ms(t.get('latencyP95Ms'))} ms"
                        for n, t in outcome.report["timings"].items())
    reuse = outcome.report["run"]["search_cache"]
    reused = "; ".join(f"{reuse[key]} {what}" for key, what in (("retrievals_reused", "retrievals"), ("dense_reused", "dense searches"))
                       if reuse and reuse.get(key))
    reused = f" ({reused} reused from the search cache)" if reused else ""
    click.echo(f"\nrun {outcome.run_id} appended to the history; query latency: {timings}{reused}")
