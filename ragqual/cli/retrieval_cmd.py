"""`ragqual retrieval`: the deterministic tier — every golden through dense, BM25 and hybrid retrieval."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from ragqual.adapters.provenance import capture
from ragqual.cli.context import AppContext
from ragqual.cli.corpus_options import (
    CorpusContext,
    corpus_options,
    ensure_ingested,
    index_known_current,
    load_corpus_context,
    preload,
    show_progress,
)
from ragqual.core import trec
from ragqual.core.display import fmt_ms
from ragqual.core.goldens import Golden, goldens_hash, select
from ragqual.errors import InputError
from ragqual.pipeline.batch_embed import embed_in_batches
from ragqual.pipeline.chunking import embed_text_for_chunk
from ragqual.pipeline.report import headline_for, metric_table, quality_markdown, render_json, write_report
from ragqual.pipeline.retrieval import STRATEGIES, RetrievalConfig, Retriever
from ragqual.pipeline.retrieval_tier import HEADLINE, TierResult, quality_section, run_tier, timing_section
from ragqual.store.records import RetrievalRow

SUBJECT = "rag"
STANDARD_CANDIDATE_K = 1000  # trec_eval's depth: MAP and nDCG as published for standard collections


def _default(flag: bool | None, otherwise: bool) -> bool:
    return otherwise if flag is None else flag


@dataclass
class RetrievalOutcome:
    run_id: int
    results: dict[str, TierResult]
    report: dict


def build_retriever(corpus: CorpusContext) -> Retriever:
    """The retriever over the ingested corpus; ingests first when the fingerprint changed.

    When the store must be opened (not known current), qdrant-client and bm25s are imported
    on a background thread while the chunks are embedded: the model runs in native code
    without the GIL, so on a cold run the ~2 s of imports mostly overlap it.
    """
    loading = None if index_known_current(corpus) else preload(["ragqual.pipeline.ingest", "bm25s"])
    chunks = corpus.chunks
    texts = [embed_text_for_chunk(c, corpus.chunk_config) for c in chunks]
    vectors = embed_in_batches(texts, corpus.embedder, progress=show_progress(corpus.app))
    if loading is not None:
        loading.join()
    ensure_ingested(corpus)
    return Retriever(chunks, vectors, corpus.dense_index(), corpus.embedder, corpus.chunk_config, corpus.corpus_dir,
                     memo=corpus.search_cache(), stem=corpus.bm25_stem, distractor_dir=corpus.distractor_dir)


def record_goldens(app: AppContext, goldens: Sequence[Golden]) -> dict[str, int]:
    """Each golden as the RAG subject's case (same id, same definition as the generation tier
    records), so one golden version is one `cases` row for both tiers."""
    from ragqual.subjects.rag import golden_case

    cases = [golden_case(g) for g in goldens]
    return app.store().record_cases(SUBJECT, [(c.id, c.slug, c.definition()) for c in cases])


def run_retrieval(app: AppContext, corpus: CorpusContext, goldens: Sequence[Golden],
                  configs: dict[str, RetrievalConfig], *, kind: str = "retrieval",
                  retriever: Retriever | None = None) -> RetrievalOutcome:
    """Run each named configuration over the goldens and append everything to the history."""
    retriever = retriever or build_retriever(corpus)
    retriever.prefetch([g.query for g in goldens], list(configs.values()))
    results = {name: run_tier(retriever, goldens, cfg) for name, cfg in configs.items()}
    store = app.store()
    provenance = capture(params={"configs": {n: c.as_dict() for n, c in configs.items()},
                                 "chunking": corpus.chunk_config.as_dict(), "embedder": corpus.embedder_id,
                                 "goldens": len(goldens)},
                         corpus_fingerprint=corpus.fingerprint, dataset_hash=goldens_hash(goldens))
    run_id = store.start_run(kind, SUBJECT, provenance)
    record_goldens(app, goldens)
    for name, result in results.items():
        metric_rows = [(None, q.golden.id, name, metric, value, 1) for q in result.queries for metric, value in sorted(q.metrics.items())]
        store.append_metrics(run_id, metric_rows)
        store.append_retrieval_results(run_id, [
            RetrievalRow(name, q.golden.id, rank, r.chunk_id, r.doc_id, r.score)
            for q in result.queries for rank, r in enumerate(q.retrieval.candidates, start=1)
        ])
    store.add_event(run_id, "finished")
    report = {
        "quality": {name: quality_section(r) for name, r in results.items()},
        "timings": {name: timing_section(r) for name, r in results.items()},
        "run": {"run_id": run_id, "git_sha": provenance.git_sha, "git_dirty": provenance.git_dirty,
                "corpus_fingerprint": corpus.fingerprint, "dataset_hash": provenance.dataset_hash,
                "embedder": corpus.embedder_id, "search_cache": _reuse(corpus), **_layout(corpus)},
    }
    return RetrievalOutcome(run_id, results, report)


def _layout(corpus: CorpusContext) -> dict[str, object]:
    """What a standard collection run adds to the report's run section (nothing for the bundled format)."""
    if corpus.layout == "ragqual" and not corpus.bm25_stem:
        return {}
    return {"goldens_layout": corpus.layout, "bm25_stemming": corpus.bm25_stem}


def _reuse(corpus: CorpusContext) -> dict[str, int] | None:
    """How many dense searches came from the search cache (their latency is a cache read)."""
    cache = corpus.search_cache()
    return None if cache is None else {"dense_reused": cache.hits, "dense_searched": cache.misses}


def ablation_configs(base: RetrievalConfig) -> dict[str, RetrievalConfig]:
    """The full pipeline and each stage switched off in turn."""
    configs = {"full": base, "no-acronym-expansion": base.with_(expand_acronyms=False), "no-rerank": base.with_(rerank=False)}
    if base.strategy == "hybrid":
        configs["dense-only"] = base.with_(strategy="dense")
        configs["bm25-only"] = base.with_(strategy="bm25")
    return configs


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
    return round(value - base, 4)


def write_trec_files(directory: Path, goldens: Sequence[Golden], results: dict[str, TierResult]) -> list[Path]:
    """Goldens as qrels and each strategy's document ranking as a TREC run (score = 1 / rank)."""
    directory.mkdir(parents=True, exist_ok=True)
    qrels = {g.id: dict(g.grades) for g in goldens if not g.expect_refusal}
    paths = [directory / "qrels.txt"]
    paths[0].write_text(trec.format_qrels(qrels), encoding="utf-8")
    for name, result in results.items():
        run = {q.golden.id: {doc: 1.0 / rank for rank, doc in enumerate(q.ranked_docs, start=1)}
               for q in result.queries if not q.golden.expect_refusal and q.ranked_docs}
        path = directory / f"run.{name}.txt"
        path.write_text(trec.format_run(run, f"ragqual-{name}"), encoding="utf-8")
        paths.append(path)
    return paths


def retrieval_configs(strategies: Sequence[str], **params) -> dict[str, RetrievalConfig]:
    chosen = list(dict.fromkeys(strategies)) or list(STRATEGIES)
    return {s: RetrievalConfig(strategy=s, **params) for s in chosen}


@click.command("retrieval")
@corpus_options
@click.option("--strategy", "strategies", multiple=True, type=click.Choice(STRATEGIES), help="Strategy to run (repeatable) [default: all three].")
@click.option("--ablate", is_flag=True, help="Run each pipeline stage on/off side by side with deltas.")
@click.option("--threshold", type=float, default=None, help="Dense similarity cut-off for what reaches the context.")
@click.option("--tag", "tags", multiple=True, help="Only goldens with this tag (repeatable).")
@click.option("--split", type=click.Choice(["validation", "test"]), default=None, help="Only goldens of this split.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N goldens.")
@click.option("--candidate-k", type=click.IntRange(min=1), default=None, help="Candidates each retriever returns [default: 20; 1000 on a BEIR/TREC collection].")
@click.option("--context-k", type=click.IntRange(min=1), default=5, show_default=True, help="Chunks that reach the context.")
@click.option("--rrf-k", type=click.IntRange(min=1), default=60, show_default=True, help="Reciprocal rank fusion constant.")
@click.option("--expand/--no-expand", default=None, help="Acronym expansion [default: on; off on a BEIR/TREC collection].")
@click.option("--rerank/--no-rerank", default=None, help="The lexical rerank stage [default: on; off on a BEIR/TREC collection].")
@click.option("--stem/--no-stem", default=None, help="English stemming for BM25 [default: off; on on a BEIR/TREC collection].")
@click.option("--verbose", "show_misses", is_flag=True, help="List every miss and what was retrieved instead.")
@click.option("--report", "write", is_flag=True, help="Write JSON + Markdown under eval-results/reports/.")
@click.option("--export-trec", type=click.Path(path_type=Path, file_okay=False), default=None, help="Write qrels and TREC runs to DIR.")
@click.option("--distractors", type=click.Path(path_type=Path, file_okay=False, exists=True), default=None,
              help="Also run with the documents of PATH (any corpus layout) in the index, never relevant; prints both side by side.")
@click.pass_obj
def retrieval_cmd(app: AppContext, corpus_opts, strategies, ablate, threshold, tags, split, limit, candidate_k,
                  context_k, rrf_k, expand, rerank, stem, show_misses, write, export_trec, distractors) -> None:
    """Run the retrieval tier: no chat model, deterministic, seconds."""
    with load_corpus_context(app, corpus_opts) as corpus:
        standard = corpus.layout != "ragqual"
        corpus.bm25_stem = _default(stem, standard)
        params = dict(threshold=threshold, candidate_k=candidate_k or (STANDARD_CANDIDATE_K if standard else 20),
                      context_k=context_k, rrf_k=rrf_k, expand_acronyms=_default(expand, not standard),
                      rerank=_default(rerank, not standard))
        goldens = select(corpus.goldens, tags=tags or None, split=split, limit=limit)
        if not goldens:
            raise InputError("no golden question matches the filters")
        configs = retrieval_configs(strategies, **params)
        if ablate:
            base = next(iter(configs.values())) if strategies else RetrievalConfig(strategy="hybrid", **params)
            configs = ablation_configs(base)
        outcome = run_retrieval(app, corpus, goldens, configs)
        if distractors is not None:
            outcome = with_distractors_side_by_side(app, corpus, goldens, configs, outcome, distractors)
        _print(app, outcome, ablate, show_misses)
        if write:
            paths = write_report(outcome.report, app.settings.results_dir / "reports", f"retrieval-run{outcome.run_id}")
            click.echo(f"report: {paths[0]} and {paths[1]}", err=True)
        if export_trec is not None:
            for path in write_trec_files(export_trec, goldens, outcome.results):
                click.echo(f"wrote {path}", err=True)


def with_distractors_side_by_side(app: AppContext, corpus: CorpusContext, goldens: Sequence[Golden],
                                  configs: dict[str, RetrievalConfig], plain: RetrievalOutcome, folder: Path) -> RetrievalOutcome:
    """Run the same configurations again with `folder`'s documents in the index as distractors (a second
    run in the history, its own ingest); the plain outcome gains a `distractors` section side by side."""
    corpus.close()  # one client at a time may hold the embedded store
    with corpus.with_distractors(folder) as crowded:
        other = run_retrieval(app, crowded, goldens, configs)
        added = len(crowded.documents) - len(corpus.documents)
    plain.report["distractors"] = {
        "folder": str(folder), "documents": added, "run_id": other.run_id,
        "overall": {name: {"without": plain.report["quality"][name]["overall"], "with": q["overall"]}
                    for name, q in other.report["quality"].items()},
    }
    return plain


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
    reused = f" ({reuse['dense_reused']} dense searches reused from the search cache)" if reuse and reuse["dense_reused"] else ""
    click.echo(f"\nrun {outcome.run_id} appended to the history; query latency: {timings}{reused}")
