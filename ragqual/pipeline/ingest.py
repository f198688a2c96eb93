"""Ingest the corpus into the eval points: chunk, embed (with a progress bar), replace.

An ingest is always a full rebuild. Points that carry the eval tag but were not written by
ragqual stop it before any work (exit 1, naming them; see adapters.qdrant_store): ragqual
never deletes a point it did not create. Every chunk is embedded before anything is deleted,
so a failing embedder leaves the previous eval points in place; then the old eval points
go and the new ones are written, each stamped with the corpus fingerprint and the total
chunk count, which is how `manifest()` later tells a finished ingest from a broken one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragqual.adapters.embedders import Embedder
from ragqual.adapters.files import display_path, resolve_source_in_corpus, shared_file_source
from ragqual.adapters.qdrant_store import EvalIndex, Manifest
from ragqual.core.corpus import Document
from ragqual.core.fingerprint import corpus_fingerprint
from ragqual.errors import InputError
from ragqual.pipeline.batch_embed import embed_in_batches
from ragqual.pipeline.chunking import Chunk, ChunkConfig, chunk_corpus, embed_text_for_chunk

# Texts per call to the embedder. MiniLM groups a call's texts by length, and a text's vector may
# differ in its last bits with its batch (tests/adapters/test_embedders.py), so this stays as it
# was: a re-ingest gives the vectors earlier ingests gave.
EMBED_BATCH = 64


@dataclass(frozen=True)
class IngestReport:
    fingerprint: str
    embedder_id: str
    collection: str
    chunks_per_document: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # the whole ingest
    embed_seconds: float = 0.0  # embedding only

    @property
    def documents(self) -> int:
        return len(self.chunks_per_document)

    @property
    def total_chunks(self) -> int:
        return sum(self.chunks_per_document.values())

    @property
    def chunks_per_second(self) -> float:
        return self.total_chunks / self.embed_seconds if self.embed_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "embedder": self.embedder_id,
            "collection": self.collection,
            "documents": self.documents,
            "chunks": self.total_chunks,
            "chunks_per_document": dict(self.chunks_per_document),
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "chunks_per_second": round(self.chunks_per_second, 1),
        }


def fingerprint_of(documents: Sequence[Document], chunk_config: ChunkConfig, embedder_id: str) -> str:
    """The one corpus fingerprint (see ragqual.core.fingerprint) for a chunking configuration."""
    return corpus_fingerprint(documents, chunk_config.as_dict(), embedder_id)


def source_paths(documents: Sequence[Document], corpus_dir: str | os.PathLike[str],
                 distractor_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """doc id -> absolute path of its file; every one must pass the leak guard's own test.

    Distractor documents (pipeline.distractors) lie in `distractor_dir` instead."""
    from ragqual.pipeline.distractors import root_of

    root = Path(corpus_dir).resolve()
    paths, wrong = {}, []
    for d in documents:
        folder, plain_id = root_of(d.doc_id, root, distractor_dir)
        folder = folder.resolve()
        paths[d.doc_id] = shared_file_source(folder / d.container, plain_id) if d.container else str(folder / d.filename)
        if resolve_source_in_corpus(paths[d.doc_id], folder) != plain_id:
            wrong.append(d.doc_id)
    if wrong:
        raise InputError(
            f"document(s) {', '.join(sorted(wrong)[:5])} are not files directly inside {display_path(root)}; "
            f"read the corpus from that folder before ingesting it"
        )
    return paths


def embed_chunks(
    chunks: Sequence[Chunk], chunk_config: ChunkConfig, embedder: Embedder, *, progress: bool, batch_size: int = EMBED_BATCH,
) -> np.ndarray:
    """One unit vector per chunk, embedded in batches with the document prefix (pipeline.batch_embed:
    a progress bar with rate and time left; a corpus the retrieval tier just embedded is one cache read)."""
    texts = [embed_text_for_chunk(c, chunk_config) for c in chunks]
    return embed_in_batches(texts, embedder, progress=progress, batch_size=batch_size)


def ingest(
    documents: Sequence[Document],
    chunk_config: ChunkConfig,
    embedder: Embedder,
    index: EvalIndex,
    corpus_dir: str | os.PathLike[str],
    progress: bool = True,
    *,
    clock: Callable[[], float] = time.perf_counter,
    distractor_dir: str | os.PathLike[str] | None = None,
) -> IngestReport:
    """Replace the eval points with the corpus's chunks; the user's points are never touched."""
    started = clock()
    docs = list(documents)
    if not docs:
        raise InputError("the corpus has no documents to ingest")
    sources = source_paths(docs, corpus_dir, distractor_dir)
    fingerprint = fingerprint_of(docs, chunk_config, embedder.id)
    chunks = chunk_corpus(docs, chunk_config)
    index.ensure_collection()  # a wrong vector size fails before any embedding time is spent
    index.refuse_foreign_points()  # so do points someone else tagged: they are never deleted
    embed_started = clock()
    vectors = embed_chunks(chunks, chunk_config, embedder, progress=progress)
    embed_seconds = clock() - embed_started
    index.reset()
    index.add(chunks, vectors, [sources[c.doc_id] for c in chunks], fingerprint=fingerprint, embedder_id=embedder.id)
    per_doc = {d.doc_id: 0 for d in docs}
    for chunk in chunks:
        per_doc[chunk.doc_id] += 1
    return IngestReport(fingerprint, embedder.id, index.collection, per_doc, clock() - started, embed_seconds)


def is_current(manifest: Manifest | None, fingerprint: str) -> bool:
    """True when the eval points are a finished ingest of exactly this corpus and configuration."""
    return manifest is not None and manifest.fingerprint == fingerprint and manifest.complete


def ingest_if_changed(
    documents: Sequence[Document],
    chunk_config: ChunkConfig,
    embedder: Embedder,
    index: EvalIndex,
    corpus_dir: str | os.PathLike[str],
    progress: bool = True,
    distractor_dir: str | os.PathLike[str] | None = None,
) -> IngestReport | None:
    """Ingest unless the eval points already match the fingerprint; None when nothing was done."""
    if is_current(index.manifest(), fingerprint_of(list(documents), chunk_config, embedder.id)):
        return None
    return ingest(documents, chunk_config, embedder, index, corpus_dir, progress, distractor_dir=distractor_dir)
