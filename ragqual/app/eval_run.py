"""The main job as one call: ingest if needed, the retrieval tier, then the generation tier in all
three modes over the same goldens, and why each model's e2e answers fall short of its oracle ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions, ensure_ingested, load_corpus_context
from ragqual.app.generation_run import (GenerationOptions, GenerationOutcome, Progress, check_servers, pick_goldens,
                                        run_generation)
from ragqual.app.retrieval_run import RetrievalOutcome, build_retriever, retrieval_configs, run_retrieval
from ragqual.app.failures import run_gap_causes_and_trials
from ragqual.app.whatif_run import measured_advice
from ragqual.core.diagnosis import CauseCount
from ragqual.core.runlabel import run_label
from ragqual.subjects.rag import MODES


@dataclass(frozen=True)
class EvalOptions:
    """What `ragqual eval` and `Project.eval()` accept, with the CLI's defaults."""

    models: tuple[str, ...] = ()
    repeats: int = 3
    limit: int | None = None
    tags: tuple[str, ...] = ()
    max_concurrency: int = 1
    ollama_host: str | None = None
    name: str | None = None  # both runs' name and tags (`--name`, `--tag key=value`)
    run_tags: tuple[str, ...] = ()


@dataclass
class EvalOutcome:
    retrieval: RetrievalOutcome
    generation: GenerationOutcome
    causes: dict[str, CauseCount]
    corpus_fingerprint: str
    advice: dict[str, str]


def evaluate(app: AppContext, corpus_opts: CorpusOptions, options: EvalOptions, *,
             on_retrieval: Callable[[RetrievalOutcome], None] | None = None,
             progress: Progress | None = None) -> EvalOutcome:
    """Both tiers as two runs in the history; `on_retrieval` sees the retrieval tier's outcome as soon
    as it is stored, before the (much longer) generation tier starts. Both runs carry the options'
    name and tags."""
    label = run_label(options.name, options.run_tags)
    check_servers(app, options.models, options.ollama_host)  # before the retrieval run is recorded
    with load_corpus_context(app, corpus_opts) as corpus:
        corpus.require_expectations()
        goldens = pick_goldens(corpus, options.tags, (), None, options.limit)
        app.notify(f"corpus: {len(corpus.documents)} documents, {len(goldens)} questions")
        ensure_ingested(corpus)
        retriever = build_retriever(corpus)
        retrieval = run_retrieval(app, corpus, goldens, retrieval_configs([]), retriever=retriever,
                                  label=label)
        if on_retrieval is not None:
            on_retrieval(retrieval)
        sampling = GenerationOptions()
        generation = run_generation(app, corpus, goldens, models=options.models, modes=list(MODES),
                                    repeats=options.repeats, config=sampling.retrieval_config(),
                                    options=sampling.sampling(), max_concurrency=options.max_concurrency,
                                    ollama_host=options.ollama_host, progress=progress, label=label)
        fingerprint = corpus.fingerprint
        causes, trials = run_gap_causes_and_trials(app.store().engine, generation.run_id)
        advice = measured_advice(app, generation.run_id, corpus, causes, trials)
    return EvalOutcome(retrieval, generation, causes, fingerprint, advice)
