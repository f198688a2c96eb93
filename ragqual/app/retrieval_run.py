"""The retrieval tier as a run: build the retriever, run each configuration over the goldens,
append everything to the history, and return what a report needs (no printing)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragqual.adapters.provenance import GitState, capture, git_state_ahead
from ragqual.app.collector import settled_objects_frozen
from ragqual.app.context import AppContext
from ragqual.app.corpus import (
    CorpusContext,
    CorpusOptions,
    ensure_ingested,
    index_known_current,
    load_corpus_context,
    preload,
    show_progress,
)
from ragqual.core.goldens import Golden, goldens_hash, select
from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.core.runlabel import RunLabel, run_label
from ragqual.errors import InputError
from ragqual.pipeline.batch_embed import embed_in_batches
from ragqual.pipeline.chunking import embed_text_for_chunk
from ragqual.pipeline.report import write_report
from ragqual.pipeline.retrieval import STRATEGIES, Ranking, RetrievalConfig, Retriever
from ragqual.pipeline.retrieval_tier import TierResult, quality_section, run_tier, timing_section
from ragqual.store.records import RankingRow

SUBJECT = "rag"
STANDARD_CANDIDATE_K = 1000  # trec_eval's depth: MAP and nDCG as published for standard collections
BUNDLED_CANDIDATE_K = 20


@dataclass(frozen=True)
class RetrievalOptions:
    """What `ragqual retrieval` and `Project.retrieval()` accept; None means "the default for the
    goldens' layout" (a BEIR/TREC collection runs at trec_eval's depth, stemmed, without acronym
    expansion and rerank; acronyms are expanded only with a glossary named in [tool.ragqual])."""

    strategies: tuple[str, ...] = ()
    ablate: bool = False
    threshold: float | None = None
    tags: tuple[str, ...] = ()
    split: str | None = None
    limit: int | None = None
    candidate_k: int | None = None
    context_k: int = 5
    rrf_k: int = 60
    expand: bool | None = None
    rerank: bool | None = None
    stem: bool | None = None
    write_report: bool = False
    export_trec: Path | None = None
    distractors: Path | None = None
    name: str | None = None  # the run's name and tags (`--name`, `--tag key=value`)
    run_tags: tuple[str, ...] = ()


def _default(flag: bool | None, otherwise: bool) -> bool:
    return otherwise if flag is None else flag


@dataclass
class RetrievalOutcome:
    run_id: int
    results: dict[str, TierResult]
    report: dict[str, Any]
    files: list[Path] = field(default_factory=list)  # the report and TREC files written, if asked


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
                     memo=corpus.search_cache(), stem=corpus.bm25_stem, distractor_dir=corpus.distractor_dir,
                     result_scope=result_scope(corpus, vectors), glossary=corpus.glossary)


def result_scope(corpus: CorpusContext, vectors: np.ndarray) -> str | None:
    """What a whole retrieval depends on besides the question, the configuration, BM25's inputs and
    the ranking code: the embedded index's state (None for a server: nothing is remembered), the
    embedder and the chunking (the query vector) and the chunk vectors (the similarities)."""
    index = corpus.index_scope() if corpus.search_cache() is not None else None
    if index is None:
        return None
    chunk_vectors = sha256_hex(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
    return sha256_hex(canonical_json({"index": index, "embedder": corpus.embedder_id,
                                      "chunking": corpus.chunk_config.as_dict(), "vectors": chunk_vectors}))


def record_goldens(app: AppContext, goldens: Sequence[Golden]) -> dict[str, int]:
    """Each golden as the RAG subject's case (same id, same definition as the generation tier
    records), so one golden version is one `cases` row for both tiers."""
    from ragqual.subjects.rag import golden_case

    cases = [golden_case(g) for g in goldens]
    return app.store().record_cases(SUBJECT, [(c.id, c.slug, c.definition()) for c in cases])


def run_retrieval(app: AppContext, corpus: CorpusContext, goldens: Sequence[Golden],
                  configs: dict[str, RetrievalConfig], *, kind: str = "retrieval",
                  retriever: Retriever | None = None, label: RunLabel = RunLabel(),
                  extra_params: Callable[[dict[str, TierResult]], dict[str, Any]] | None = None) -> RetrievalOutcome:
    """Run each named configuration over the goldens and append everything to the history, the
    run's `label` (name, tags) in its params. The history is opened first: a database behind the
    current migration is refused before any search. `extra_params` adds to the run's recorded
    parameters what only the results tell (a sweep's latency and index figures). The corpus's caches
    open on a background thread meanwhile (CorpusContext.open_caches_ahead), and git is asked for the
    provenance on another while the searches run (`git_state_ahead`)."""
    git = git_state_ahead()
    if retriever is None:
        corpus.open_caches_ahead()
    store = app.store()
    configs = {name: config.with_glossary(corpus.glossary) for name, config in configs.items()}
    retriever = retriever or build_retriever(corpus)
    with settled_objects_frozen():
        return _retrieve_and_append(app, store, corpus, goldens, configs, kind, retriever, label, extra_params, git)


def _retrieve_and_append(app: AppContext, store: Any, corpus: CorpusContext, goldens: Sequence[Golden],
                         configs: dict[str, RetrievalConfig], kind: str, retriever: Retriever, label: RunLabel,
                         extra_params: Callable[[dict[str, TierResult]], dict[str, Any]] | None,
                         git: Callable[[], GitState]) -> RetrievalOutcome:
    retriever.prefetch([g.query for g in goldens], list(configs.values()))
    results = {name: run_tier(retriever, goldens, cfg) for name, cfg in configs.items()}
    provenance = capture(params={"configs": {n: c.as_dict() for n, c in configs.items()},
                                 "chunking": corpus.chunk_config.as_dict(), "embedder": corpus.embedder_id,
                                 "goldens": len(goldens), **label.as_params(),
                                 **(extra_params(results) if extra_params else {})},
                         corpus_fingerprint=corpus.fingerprint, dataset_hash=goldens_hash(goldens), git=git)
    run_id = store.start_run(kind, SUBJECT, provenance)
    record_goldens(app, goldens)
    for name, result in results.items():
        metric_rows = [(None, q.golden.id, name, metric, value, 1) for q in result.queries for metric, value in sorted(q.metrics.items())]
        store.append_metrics(run_id, metric_rows)
        store.append_rankings(run_id, [_ranking(name, q.golden.id, q.retrieval.ranking) for q in result.queries])
    store.add_event(run_id, "finished")
    report = {
        "quality": {name: quality_section(r) for name, r in results.items()},
        "timings": {name: timing_section(r) for name, r in results.items()},
        "run": {"run_id": run_id, **label.as_params(), "git_sha": provenance.git_sha, "git_dirty": provenance.git_dirty,
                "corpus_fingerprint": corpus.fingerprint, "dataset_hash": provenance.dataset_hash,
                "embedder": corpus.embedder_id, "search_cache": _reuse(corpus, retriever), **_layout(corpus)},
    }
    return RetrievalOutcome(run_id, results, report)


def _ranking(strategy: str, query_id: str, ranking: Ranking) -> RankingRow:
    """One question's ranked candidates as the history stores them (one row, rank order)."""
    return RankingRow(strategy, query_id, list(ranking.chunk_ids), list(ranking.doc_ids), list(ranking.scores))


def _layout(corpus: CorpusContext) -> dict[str, object]:
    """What a standard collection run adds to the report's run section (nothing for the bundled format)."""
    if corpus.layout == "ragqual" and not corpus.bm25_stem:
        return {}
    return {"goldens_layout": corpus.layout, "bm25_stemming": corpus.bm25_stem}


def _reuse(corpus: CorpusContext, retriever: Retriever) -> dict[str, int] | None:
    """How many whole retrievals and dense searches came from the search cache (their latency
    is a cache read)."""
    cache = corpus.search_cache()
    if cache is None:
        return None
    return {"retrievals_reused": retriever.recalled, "dense_reused": cache.hits, "dense_searched": cache.misses}


ABLATION_FULL = "full"
# The stages in the order the pipeline runs them: the query's acronyms expanded, dense and BM25
# retrieval fused, the fused list reranked. An ablation's tables list them in this order.
ABLATION_ORDER = (ABLATION_FULL, "no-acronym-expansion", "dense-only", "bm25-only", "no-rerank")


def ablation_configs(base: RetrievalConfig) -> dict[str, RetrievalConfig]:
    """The full pipeline and each stage switched off in turn, in the order the pipeline runs them
    (acronym expansion only when it is on)."""
    configs = {ABLATION_FULL: base}
    if base.expand_acronyms:
        configs["no-acronym-expansion"] = base.with_(expand_acronyms=False)
    if base.strategy == "hybrid":
        configs["dense-only"] = base.with_(strategy="dense")
        configs["bm25-only"] = base.with_(strategy="bm25")
    configs["no-rerank"] = base.with_(rerank=False)
    return configs


def write_trec_files(directory: Path, goldens: Sequence[Golden], results: dict[str, TierResult]) -> list[Path]:
    """Goldens as qrels and each strategy's document ranking as a TREC run (score = 1 / rank)."""
    from ragqual.core import trec  # only with --export-trec

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


def with_distractors_side_by_side(app: AppContext, corpus: CorpusContext, goldens: Sequence[Golden],
                                  configs: dict[str, RetrievalConfig], plain: RetrievalOutcome, folder: Path,
                                  label: RunLabel = RunLabel()) -> RetrievalOutcome:
    """Run the same configurations again with `folder`'s documents in the index as distractors (a second
    run in the history, its own ingest); the plain outcome gains a `distractors` section side by side."""
    corpus.close()  # one client at a time may hold the embedded store
    with corpus.with_distractors(folder) as crowded:
        other = run_retrieval(app, crowded, goldens, configs, label=label)
        added = len(crowded.documents) - len(corpus.documents)
    plain.report["distractors"] = {
        "folder": str(folder), "documents": added, "run_id": other.run_id,
        "overall": {name: {"without": plain.report["quality"][name]["overall"], "with": q["overall"]}
                    for name, q in other.report["quality"].items()},
    }
    return plain


def retrieval_tier(app: AppContext, corpus_opts: CorpusOptions, options: RetrievalOptions) -> RetrievalOutcome:
    """The whole `ragqual retrieval` run: goldens selected, configurations built (or the ablation),
    the run appended, optionally repeated with distractors, the report and TREC files written."""
    label = run_label(options.name, options.run_tags)
    with settled_objects_frozen(), load_corpus_context(app, corpus_opts, remember_patterns=True) as corpus:
        standard = corpus.layout != "ragqual"
        corpus.bm25_stem = _default(options.stem, standard)
        if options.expand and corpus.glossary is None:
            raise InputError("--expand needs an acronym glossary: name its file with `glossary = \"...\"` in [tool.ragqual]")
        params: dict[str, Any] = dict(
            threshold=options.threshold,
            candidate_k=options.candidate_k or (STANDARD_CANDIDATE_K if standard else BUNDLED_CANDIDATE_K),
            context_k=options.context_k, rrf_k=options.rrf_k,
            expand_acronyms=_default(options.expand, not standard) and corpus.glossary is not None,
            rerank=_default(options.rerank, not standard))
        goldens = select(corpus.goldens, tags=list(options.tags) or None, split=options.split, limit=options.limit)
        if not goldens:
            raise InputError("no golden question matches the filters")
        configs = retrieval_configs(options.strategies, **params)
        if options.ablate:
            base = next(iter(configs.values())) if options.strategies else RetrievalConfig(strategy="hybrid", **params)
            configs = ablation_configs(base)
        outcome = run_retrieval(app, corpus, goldens, configs, label=label)
        if options.distractors is not None:
            outcome = with_distractors_side_by_side(app, corpus, goldens, configs, outcome, options.distractors, label)
    if options.write_report:
        from ragqual.app.history_reads import history_head  # its gates and summaries pull in pandas

        published = {**outcome.report, "run": {**outcome.report["run"], **history_head(app.history())}}
        outcome.files.extend(write_report(published, app.settings.results_dir / "reports",
                                          f"retrieval-run{outcome.run_id}"))
    if options.export_trec is not None:
        outcome.files.extend(write_trec_files(options.export_trec, goldens, outcome.results))
    return outcome
