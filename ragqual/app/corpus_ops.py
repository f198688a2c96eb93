"""What `ragqual corpus check|status|ingest|reset|search|migrate` do, without their printing:
validate the corpus and goldens, read and manage the eval points in Qdrant."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragqual.app.context import AppContext
from ragqual.app.corpus import (
    EDGE,
    CorpusContext,
    CorpusOptions,
    embedded_path,
    load_corpus_context,
    record_snapshot,
    show_progress,
)
from ragqual.core.goldens import missing_split_warning
from ragqual.errors import InputError
from ragqual.pipeline.chunking import ChunkConfig

if TYPE_CHECKING:
    from ragqual.adapters.qdrant_store import Hit, Manifest
    from ragqual.pipeline.ingest import IngestReport

NO_SPLIT = "(none)"
ADVICE = {
    "not ingested": "nothing ingested yet: run `ragqual corpus ingest`",
    "incomplete": "the last ingest did not finish: run `ragqual corpus ingest`",
    "stale": "the corpus or its settings changed since the last ingest: run `ragqual corpus ingest`",
    "up to date": "up to date",
}


def sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class CorpusCheck:
    corpus_dir: Path
    goldens_dir: Path
    documents: int
    chunks: int
    questions: int
    tags: dict[str, int]
    splits: dict[str, int]
    chunk_config: ChunkConfig
    warning: str | None
    glossary: str | None = None  # the acronym glossary file that applies, when one does
    acronyms: int = 0


def check_corpus(app: AppContext, opts: CorpusOptions) -> CorpusCheck:
    """Read and validate the corpus and goldens (exit 2 naming file and line); nothing is written."""
    corpus = load_corpus_context(app, opts)
    goldens = corpus.goldens
    return CorpusCheck(
        corpus.corpus_dir, corpus.goldens_dir, len(corpus.documents), len(corpus.chunks), len(goldens),
        sorted_counts(Counter(tag for golden in goldens for tag in golden.tags)),
        sorted_counts(Counter(golden.split or NO_SPLIT for golden in goldens)),
        corpus.chunk_config, missing_split_warning(goldens),
        corpus.glossary.source if corpus.glossary else None, len(corpus.glossary.entries) if corpus.glossary else 0)


@dataclass
class CorpusStatus:
    corpus_dir: Path
    documents: int
    embedder_id: str
    collection: str
    location: str
    fingerprint: str
    manifest: Manifest | None
    chunks_per_document: dict[str, int]
    state: str


def ingest_state(manifest: Manifest | None, current: str) -> str:
    from ragqual.pipeline.ingest import is_current

    if manifest is None:
        return "not ingested"
    if is_current(manifest, current):
        return "up to date"
    if not manifest.complete:
        return "incomplete"
    return "stale"


def _ingested(corpus: CorpusContext) -> tuple[Manifest | None, dict[str, int]]:
    if not corpus.store_exists():
        return None, {}
    index = corpus.maintenance_index()
    manifest = index.manifest()
    per_doc = Counter(chunk.doc_id for chunk in index.all_chunks()) if manifest else Counter()
    return manifest, dict(sorted(per_doc.items()))


def corpus_status(app: AppContext, opts: CorpusOptions) -> CorpusStatus:
    """The current fingerprint beside what the store holds (never creating an embedded store)."""
    with load_corpus_context(app, opts, with_goldens=False) as corpus:
        current = corpus.fingerprint
        manifest, per_doc = _ingested(corpus)
        return CorpusStatus(corpus.corpus_dir, len(corpus.documents), corpus.embedder_id, corpus.collection,
                            corpus.location, current, manifest, per_doc, ingest_state(manifest, current))


@dataclass
class IngestOutcome:
    report: IngestReport
    collection: str
    location: str
    snapshot_id: int


def ingest_corpus(app: AppContext, opts: CorpusOptions) -> IngestOutcome:
    """Rebuild the eval points from the corpus (only points carrying the eval tag are touched) and
    record the ingested corpus in the history."""
    from ragqual.pipeline.ingest import ingest

    with load_corpus_context(app, opts, with_goldens=False) as corpus:
        report = ingest(corpus.documents, corpus.chunk_config, corpus.embedder, corpus.index, corpus.corpus_dir,
                        progress=show_progress(app))
        return IngestOutcome(report, corpus.collection, corpus.location, record_snapshot(corpus, report))


@dataclass
class ResetOutcome:
    collection: str
    location: str
    removed: int = 0
    remaining: int = 0


def reset_eval_points(app: AppContext, opts: CorpusOptions) -> ResetOutcome:
    """Delete the eval points, and nothing else; count what stays."""
    with load_corpus_context(app, opts, with_corpus=False, with_goldens=False) as corpus:
        outcome = ResetOutcome(corpus.collection, corpus.location)
        if corpus.store_exists():
            index = corpus.maintenance_index()
            outcome.removed = index.reset()
            outcome.remaining = index.count_all()
        return outcome


@dataclass
class SearchOutcome:
    query: str
    hits: list[Hit] = field(default_factory=list)


def search_corpus(app: AppContext, opts: CorpusOptions, query: str, limit: int) -> SearchOutcome:
    """Dense search of the eval points behind the leak guard (exit 1 when a hit is not from the corpus)."""
    from ragqual.pipeline.chunking import embed_text_for_query
    from ragqual.pipeline.leak_guard import check_hits

    with load_corpus_context(app, opts, with_goldens=False) as corpus:
        manifest = corpus.maintenance_index().manifest() if corpus.store_exists() else None
        state = ingest_state(manifest, corpus.fingerprint)
        if state == "not ingested":
            raise InputError(f"nothing ingested into collection {corpus.collection!r} yet: run `ragqual corpus ingest`")
        if state != "up to date":
            app.notify(f"warning: {ADVICE[state]}")
        vector = corpus.embedder.embed([embed_text_for_query(query, corpus.chunk_config)])[0]
        hits = corpus.index.search(vector, limit)
        check_hits(hits, corpus.corpus_dir)
        return SearchOutcome(query, list(hits))


@dataclass
class MigrateOutcome:
    collection: str
    source: Path
    target: Path
    points: int


def migrate_to_edge(app: AppContext, opts: CorpusOptions) -> MigrateOutcome:
    """Copy the collection from a qdrant-client local-mode folder into the qdrant-edge store; the
    old folder is left as it was.

    The copy is built in a staging folder beside the store and moved into place only once complete,
    so a copy stopped part-way (disk full, Ctrl-C) leaves no qdrant-edge collection behind: the
    project keeps using its local-mode store and `migrate` can simply be run again."""
    from ragqual.adapters.qdrant_store import open_qdrant

    settings = app.settings
    collection: str = opts.collection or settings.values["collection"]
    source, target = settings.qdrant_path(), embedded_path(settings, EDGE)
    if not (source / "meta.json").is_file():
        raise InputError(f"no qdrant-client local-mode folder at {source}: nothing to migrate")
    if (target / collection).exists():
        raise InputError(f"{target / collection} already exists: nothing was copied (remove it to migrate again)")
    staging = target.parent / f".{target.name}.migrating"
    local = open_qdrant(source, None)
    try:
        if not local.collection_exists(collection):
            raise InputError(f"collection {collection!r} is not in {source}; name it with --collection")
        copied = _copy_through(staging, local, collection)
    finally:
        local.close()
    target.mkdir(parents=True, exist_ok=True)
    os.replace(staging / collection, target / collection)
    shutil.rmtree(staging, ignore_errors=True)
    return MigrateOutcome(collection, source, target, copied)


def _copy_through(staging: Path, local: Any, collection: str) -> int:
    """Copy `collection` into a fresh qdrant-edge store at `staging`; on any failure remove it."""
    from ragqual.adapters.qdrant_edge_store import migrate_local_folder, open_edge

    shutil.rmtree(staging, ignore_errors=True)  # what an earlier stopped copy left
    try:
        edge = open_edge(staging)
        try:
            return migrate_local_folder(local, edge, collection)
        finally:
            edge.close()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
