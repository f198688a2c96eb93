"""`ragqual eval`: the main job — ingest if needed, the retrieval tier, the generation tier in all modes, a report."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from ragqual.app.failures import run_gap_causes
from ragqual.cli.context import AppContext, resumable
from ragqual.cli.corpus_options import corpus_options, ensure_ingested, load_corpus_context
from ragqual.cli.generation_cmd import (
    decomposition_text,
    mode_table,
    pick_goldens,
    run_generation,
    sampling_options,
)
from ragqual.cli.retrieval_cmd import build_retriever, retrieval_configs, run_retrieval
from ragqual.pipeline.report import quality_markdown
from ragqual.pipeline.retrieval import RetrievalConfig
from ragqual.subjects.rag import MODES


def write_eval_page(app: AppContext, retrieval_run: int, generation_run: int, verdict: str, out_dir: Path) -> Path:
    """eval-runN.html beside the markdown: both tiers' runs as one self-contained page."""
    from ragqual.app.run_report import build_report
    from ragqual.reports.page import write_page
    from ragqual.reports.run import eval_page

    store = app.store()
    tiers = []
    for label, run_id in (("retrieval tier", retrieval_run), ("generation tier", generation_run)):
        info = store.get_run(run_id)
        report = build_report(store.engine, info)
        tiers.append((label, info, report.header, report.sections))
    path = out_dir / f"eval-run{generation_run}.html"
    write_page(eval_page(store.engine, tiers, verdict), path)
    return path


@click.command("eval")
@corpus_options
@click.option("--model", "models", multiple=True, metavar="URI", help="Model(s) for the generation tier [default: mock].")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N goldens.")
@click.option("--tag", "tags", multiple=True, help="Only goldens with this tag (repeatable).")
@click.option("--max-concurrency", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--ollama-host", default=None, metavar="URL")
@click.pass_obj
def eval_cmd(app: AppContext, corpus_opts, models, repeats, limit, tags, max_concurrency, ollama_host) -> None:
    """The whole evaluation in one command, on embedded defaults (no server, no network)."""
    started = time.perf_counter()
    with load_corpus_context(app, corpus_opts) as corpus:
        corpus.require_expectations()
        goldens = pick_goldens(corpus, tags, (), None, limit)
        click.echo(f"corpus: {len(corpus.documents)} documents, {len(goldens)} questions", err=True)
        ensure_ingested(corpus)
        retriever = build_retriever(corpus)
        retrieval = run_retrieval(app, corpus, goldens, retrieval_configs([]), retriever=retriever)
        click.echo(f"retrieval tier: run {retrieval.run_id}", err=True)
        config = RetrievalConfig()
        with resumable(app, "generation"):
            generation = run_generation(app, corpus, goldens, models=models, modes=list(MODES), repeats=repeats,
                                        config=config, options=sampling_options(0.0, 42, None, None),
                                        max_concurrency=max_concurrency, ollama_host=ollama_host)
        causes = run_gap_causes(app.store().engine, generation.run_id)
        decomposition = decomposition_text(generation.lines, causes)
        elapsed = time.perf_counter() - started
        report = "\n".join([
            "# ragqual evaluation", "",
            f"retrieval run {retrieval.run_id}, generation run {generation.run_id}, corpus fingerprint {corpus.fingerprint[:12]}",
            "", quality_markdown(retrieval.report["quality"]).strip(), "", "## Generation", "", mode_table(generation.lines),
            "", decomposition, "",
        ])
        out_dir = app.settings.results_dir / "reports"
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"eval-run{generation.run_id}.md"
        path.write_text(report, encoding="utf-8")
        html_path = write_eval_page(app, retrieval.run_id, generation.run_id, decomposition, out_dir)
        if app.as_json:
            click.echo(json.dumps({"retrieval_run": retrieval.run_id, "generation_run": generation.run_id,
                                   "report": str(path), "html": str(html_path), "seconds": round(elapsed, 1)}))
            return
        overall = {name: q["overall"] for name, q in retrieval.report["quality"].items()}
        click.echo("retrieval (document level):")
        for name, values in overall.items():
            click.echo(f"  {name:<7} recall@5 {values.get('recall@5')}  mrr {values.get('mrr')}  ndcg@10 {values.get('ndcg@10')}  "
                       f"nonEmptyRefusal {values.get('nonEmptyRefusal')}")
        click.echo("\ngeneration:\n" + mode_table(generation.lines) + "\n\n" + decomposition)
        click.echo(f"\nreport: {path}  (page: {html_path})  ({elapsed:.1f} s; `ragqual report --last` and `ragqual history` read it back)")
