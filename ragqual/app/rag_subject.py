"""The RAG subject over a project's corpus: what `ragqual generation` runs, and the `rag` subject
of `ragqual run --subject rag` (registered in subjects.registry by this module's path)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusContext, CorpusOptions, load_corpus_context
from ragqual.app.retrieval_run import build_retriever
from ragqual.core.goldens import Golden, goldens_hash
from ragqual.pipeline.retrieval import RetrievalConfig
from ragqual.subjects.rag import RagSubject


def rag_subject(corpus: CorpusContext, goldens: Sequence[Golden], config: RetrievalConfig | None = None,
                options: dict[str, Any] | None = None) -> RagSubject:
    """The subject over `goldens`; its retriever is built (ingesting if needed) on first use."""
    return RagSubject(goldens, corpus.documents, retriever=lambda: build_retriever(corpus),
                      retrieval_config=(config or RetrievalConfig()).with_glossary(corpus.glossary),
                      options=options, known_ids=[g.id for g in corpus.goldens],
                      provenance={"corpus_fingerprint": corpus.fingerprint, "dataset_hash": goldens_hash(goldens)})


def default_rag_subject(app: AppContext | None = None) -> RagSubject:
    """The RAG subject over the corpus and goldens of the current project (for `ragqual run --subject rag`).

    It uses the running application's context (settings, `--cache` mode) when given, so the search
    and embedding caches obey `--cache off`; retrieval for e2e is built on first use, ingesting
    when the corpus fingerprint changed.
    """
    if app is None:
        app = AppContext.create(db_url=None, cache_mode="auto", verbose=0, as_json=False)
    corpus = load_corpus_context(app, CorpusOptions())
    return rag_subject(corpus, corpus.goldens)
