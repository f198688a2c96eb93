"""The corpus a run reads: its options, and the context built from them.

    with load_corpus_context(app, CorpusOptions(corpus="corpus")) as corpus:
        ensure_ingested(corpus)
        hits = corpus.index.search(...)

Options win over `[tool.ragqual]`, which wins over the defaults. Nothing is opened until it
is used: documents and goldens are read (and validated) at once, the embedder and Qdrant
only when a command touches `embedder`, `fingerprint` or `index`.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragqual.app.context import AppContext
from ragqual.core.corpus import Document
from ragqual.core.glossary import Glossary
from ragqual.core.goldens import Golden, golden_patterns
from ragqual.errors import InputError
from ragqual.pipeline.chunking import Chunk, ChunkConfig, chunk_corpus

if TYPE_CHECKING:  # the heavy modules load only when a command needs them
    from qdrant_client import QdrantClient

    from ragqual.adapters.embedders import Embedder
    from ragqual.adapters.qdrant_store import EvalIndex
    from ragqual.adapters.search_cache import SearchCache
    from ragqual.pipeline.ingest import IngestReport
    from ragqual.vocab import DenseIndex

API_KEY_ENV = "QDRANT_API_KEY"
ENGINE_ENV = "RAGQUAL_EMBEDDED_ENGINE"
EDGE, LOCAL = "edge", "local"
EDGE_FOLDER = "qdrant-edge"
SEARCH_FOLDER, EMBEDDINGS_FOLDER = "search", "embeddings"  # the corpus's caches, under the cache folder


def embedded_engine(settings: Any) -> str:
    """The embedded engine: RAGQUAL_EMBEDDED_ENGINE (edge | local), else qdrant-edge, except that a
    project whose only embedded store is a qdrant-client local-mode folder keeps using it until
    `ragqual corpus migrate` moves it."""
    raw = os.environ.get(ENGINE_ENV, "").strip().lower()
    if raw in (EDGE, LOCAL):
        return raw
    if raw:
        raise InputError(f"{ENGINE_ENV} must be 'edge' or 'local', got {raw!r}")
    legacy = (settings.qdrant_path() / "meta.json").is_file()
    return LOCAL if legacy and not (settings.results_dir / EDGE_FOLDER).exists() else EDGE


def embedded_path(settings: Any, engine: str) -> Path:
    return settings.results_dir / EDGE_FOLDER if engine == EDGE else settings.qdrant_path()


@dataclass(frozen=True)
class CorpusOptions:
    """The shared corpus options as given (cli.corpus_options); None leaves a setting to the project."""

    corpus: str | None = None
    goldens: str | None = None
    embedder: str | None = None
    qdrant_url: str | None = None
    collection: str | None = None
    chunk_tokens: int | None = None
    overlap_tokens: int | None = None
    chars_per_token: float | None = None
    doc_prefix: str | None = None
    query_prefix: str | None = None
    topic_field: str | None = None  # of TREC topics: which field is the question (title by default)


@dataclass
class CorpusContext:
    """Everything the corpus commands share, with the embedder and Qdrant opened on first use."""

    app: AppContext
    corpus_dir: Path
    goldens_dir: Path
    documents: list[Document]
    goldens: list[Golden]
    chunk_config: ChunkConfig
    embedder_uri: str
    collection: str
    qdrant_url: str | None
    qdrant_path: Path
    engine: str = "local"  # the embedded engine: "edge" (qdrant-edge) or "local" (qdrant-client's local mode)
    layout: str = "ragqual"  # of the goldens: "ragqual", "beir" or "trec" (adapters.collection_files)
    bm25_stem: bool = False  # English stemming in BM25 (set by `ragqual retrieval`)
    distractor_dir: Path | None = None  # where the distractor documents among `documents` come from
    glossary: Glossary | None = None  # the acronym glossary (`glossary` in [tool.ragqual]) when it applies
    _open: dict[str, Any] = field(default_factory=dict)

    def require_expectations(self, tier: str = "the generation tier") -> None:
        """Refuse (exit 2) when the goldens have relevance judgements only (a BEIR or TREC collection)."""
        if self.layout != "ragqual":
            raise InputError(
                f"{tier} needs goldens with answer expectations (mustInclude / mustNotInclude / expectRefusal); "
                f"{self.goldens_dir} holds relevance judgements only ({self.layout} layout): run `ragqual retrieval` on it"
            )

    # -- lazily built --------------------------------------------------------------
    @property
    def raw_embedder(self) -> Embedder:
        """The embedder without the disk cache (enough for its id and size)."""
        if "raw_embedder" not in self._open:
            from ragqual.adapters.embedders import make_embedder

            self._open["raw_embedder"] = make_embedder(self.embedder_uri)
        return self._open["raw_embedder"]

    @property
    def embedder(self) -> Embedder:
        """The embedder behind the on-disk embedding cache (none with `--cache off`)."""
        if "embedder" not in self._open:
            self._open["embedder"] = self._cached(self.raw_embedder)
        return self._open["embedder"]

    def _cached(self, inner: Embedder) -> Embedder:
        if self.app.cache_mode == "off":
            return inner
        from ragqual.adapters.embedders import CachedEmbedder

        folder = self._cache_folder(EMBEDDINGS_FOLDER)
        return CachedEmbedder(inner, folder, self.app.cache_notes(), opened=self._opened_ahead(folder))

    def _cache_folder(self, name: str) -> Path:
        return self.app.settings.cache_dir() / name

    def open_caches_ahead(self) -> None:
        """Start opening the search and embedding caches on a background thread
        (adapters.cache_opener): a run that opens the history next overlaps their disk waits with
        it. `search_cache` and `embedder` take them over; nothing is opened with `--cache off`,
        when they are open already, or for a folder that holds no cache yet."""
        if self.app.cache_mode == "off" or "opener" in self._open:
            return
        from ragqual.adapters.cache_opener import CacheOpener

        names = [name for name, key in ((SEARCH_FOLDER, "search_cache"), (EMBEDDINGS_FOLDER, "embedder"))
                 if key not in self._open]
        self._open["opener"] = CacheOpener([self._cache_folder(name) for name in names])

    def _opened_ahead(self, folder: Path) -> Any:
        opener = self._open.get("opener")
        return None if opener is None else opener.take(folder)

    @property
    def embedder_id(self) -> str:
        return self.raw_embedder.id

    @property
    def fingerprint(self) -> str:
        if "fingerprint" not in self._open:
            from ragqual.core.fingerprint import corpus_fingerprint

            self._open["fingerprint"] = corpus_fingerprint(self.documents, self.chunk_config.as_dict(), self.embedder_id)
        return self._open["fingerprint"]

    @property
    def chunks(self) -> list[Chunk]:
        return chunk_corpus(self.documents, self.chunk_config)

    def sources(self) -> dict[str, str]:
        """doc id -> absolute path of the document's file (what ingest stores as `source`)."""
        from ragqual.pipeline.ingest import source_paths

        return source_paths(self.documents, self.corpus_dir, self.distractor_dir)

    @property
    def location(self) -> str:
        if self.qdrant_url:
            return self.qdrant_url
        from ragqual.adapters.files import display_path

        return f"{display_path(self.qdrant_path)} (embedded)"

    def store_exists(self) -> bool:
        """False when the embedded folder was never created (so reading it would only create it)."""
        if self.qdrant_url:
            return True
        return self.qdrant_path.is_dir() if self.engine == EDGE else (self.qdrant_path / "meta.json").is_file()

    def client(self) -> QdrantClient:
        if "client" not in self._open:
            if self.engine == EDGE and not self.qdrant_url:
                from ragqual.adapters.qdrant_edge_store import open_edge

                self._open["client"] = open_edge(self.qdrant_path)
            else:
                from ragqual.adapters.qdrant_store import open_qdrant

                self._open["client"] = open_qdrant(self.qdrant_path, self.qdrant_url, os.environ.get(API_KEY_ENV))
        return self._open["client"]

    @property
    def index(self) -> EvalIndex:
        """The eval index sized for the embedder (opens the embedder and Qdrant)."""
        if "index" not in self._open:
            from ragqual.adapters.qdrant_store import EvalIndex

            self._open["index"] = EvalIndex(self.client(), self.collection, self.raw_embedder.dim)
        return self._open["index"]

    def search_cache(self) -> SearchCache | None:
        """Search results of earlier runs (adapters.search_cache); none with `--cache off`."""
        if self.app.cache_mode == "off":
            return None
        if "search_cache" not in self._open:
            from ragqual.adapters.search_cache import SearchCache

            folder = self._cache_folder(SEARCH_FOLDER)
            self._open["search_cache"] = SearchCache(folder, read=self.app.cache_mode != "write-only",
                                                     notes=self.app.cache_notes(), opened=self._opened_ahead(folder))
        return self._open["search_cache"]

    def index_scope(self) -> str | None:
        """The embedded store's state with the collection and fingerprint; None for a server
        (whose state cannot be seen from here, so nothing read from it is reused)."""
        if self.qdrant_url:
            return None
        from ragqual.adapters.search_cache import embedded_state, index_scope

        if self.engine == EDGE:
            from ragqual.adapters.edge_state import edge_state

            edge = edge_state(self.qdrant_path, self.collection)
            state = None if edge is None else f"edge:{edge}"
        else:
            state = embedded_state(self.qdrant_path, self.collection)
        return None if state is None else index_scope(state, self.collection, self.fingerprint)

    def dense_index(self) -> DenseIndex:
        """The index the retriever searches: through the search cache when the store's state is
        known, else Qdrant itself."""
        cache = self.search_cache()
        if cache is None or self.index_scope() is None:
            return self.index
        from ragqual.adapters.search_cache import CachedDenseIndex

        return CachedDenseIndex(cache, lambda: self.index_scope() or "", lambda: self.index)

    def maintenance_index(self) -> EvalIndex:
        """An index that can count, read and reset without loading the embedder."""
        from ragqual.adapters.qdrant_store import EvalIndex

        return EvalIndex(self.client(), self.collection, None)

    def close(self) -> None:
        opener = self._open.pop("opener", None)
        if opener is not None:
            opener.close()
        search_cache = self._open.pop("search_cache", None)
        if search_cache is not None:
            search_cache.close()
        embedder = self._open.pop("embedder", None)
        if embedder is not None and hasattr(embedder, "close"):
            embedder.close()
        client = self._open.pop("client", None)
        if client is not None:
            client.close()
        self._open.clear()

    def with_distractors(self, folder: Path) -> CorpusContext:
        """A closed copy of this context whose corpus also holds the documents of `folder` (any
        layout) as distractors; close this one first: only one client may hold the embedded store."""
        from ragqual.adapters.collection_files import read_any
        from ragqual.pipeline.distractors import as_distractors

        extra = as_distractors(read_any(folder, None).documents)
        return dataclasses.replace(self, documents=[*self.documents, *extra], distractor_dir=Path(folder), _open={})

    def __enter__(self) -> CorpusContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_corpus_context(
    app: AppContext, opts: CorpusOptions, *, with_corpus: bool = True, with_goldens: bool = True,
    remember_patterns: bool = False,
) -> CorpusContext:
    """Resolve the settings and read (and validate) the corpus and goldens; exit 2 on bad input.
    Golden patterns an earlier run checked are not compiled again (ragqual.adapters.pattern_memo);
    `remember_patterns` (a run that writes its caches anyway) adds this run's to them."""
    from ragqual.adapters.collection_files import RAGQUAL, read_any

    settings = app.settings
    corpus_dir = settings.path("corpus", opts.corpus)
    goldens_dir = settings.path("goldens", opts.goldens)
    chunk_config = _chunk_config(settings.values, opts)  # checked before any file is read
    documents: list[Document] = []
    goldens: list[Golden] = []
    layout = RAGQUAL
    engine = embedded_engine(settings)
    if with_goldens or with_corpus:
        checked = _vouch_for_checked_patterns(app) if with_goldens else None
        loaded = read_any(corpus_dir, goldens_dir if with_goldens else None, topic_field=opts.topic_field or "title")
        documents, goldens, layout = loaded.documents, loaded.goldens, loaded.goldens_layout
        if checked is not None and remember_patterns:
            from ragqual.adapters import pattern_memo

            pattern_memo.save(settings.cache_dir(), golden_patterns(goldens), checked)
    return CorpusContext(
        glossary=project_glossary(settings, corpus_dir),
        app=app,
        corpus_dir=corpus_dir,
        goldens_dir=goldens_dir,
        documents=documents,
        goldens=goldens,
        chunk_config=chunk_config,
        embedder_uri=_pick(opts.embedder, settings.values, "embedder"),
        collection=_pick(opts.collection, settings.values, "collection"),
        qdrant_url=settings.qdrant_url(opts.qdrant_url),
        qdrant_path=embedded_path(settings, engine),
        engine=engine,
        layout=layout,
    )


def _vouch_for_checked_patterns(app: AppContext) -> set[str] | None:
    """The golden patterns earlier runs checked (ragqual.adapters.pattern_memo), vouched for so that
    loading the goldens does not compile them again; None with `--cache off` (nothing read or
    written), none with `--cache write-only` (checked again, then remembered)."""
    if app.cache_mode == "off":
        return None
    from ragqual.adapters import pattern_memo
    from ragqual.core.textmatch import vouch

    checked = pattern_memo.load(app.settings.cache_dir()) if app.cache_mode != "write-only" else set()
    vouch(checked)
    return checked


def project_glossary(settings: Any, corpus_dir: Path) -> Glossary | None:
    """The glossary named by `glossary` in [tool.ragqual], read and validated, when the run reads the
    project's own corpus; None when no glossary is named or `--corpus` points at another folder."""
    named = settings.values.get("glossary")
    if not named or corpus_dir.resolve() != settings.path("corpus").resolve():
        return None
    from ragqual.adapters.files import read_glossary

    return read_glossary(settings.path("glossary"))


def _pick(option: Any, values: dict[str, Any], key: str) -> Any:
    return option if option is not None else values[key]


def _chunk_config(values: dict[str, Any], opts: CorpusOptions) -> ChunkConfig:
    names = ("chunk_tokens", "overlap_tokens", "chars_per_token", "doc_prefix", "query_prefix")
    return ChunkConfig(**{name: _pick(getattr(opts, name), values, name) for name in names})


def show_progress(app: AppContext) -> bool:
    """A progress bar on an interactive terminal, never in JSON mode or when piped."""
    return not app.as_json and sys.stderr.isatty()


def record_snapshot(corpus: CorpusContext, report: IngestReport) -> int:
    """The ingested corpus as a row of the history store (once per fingerprint)."""
    documents = [
        {"doc_id": d.doc_id, "sha256": d.sha256, "chars": len(d.text), "chunks": report.chunks_per_document.get(d.doc_id, 0)}
        for d in corpus.documents
    ]
    return corpus.app.store().record_corpus_snapshot(
        report.fingerprint, documents, corpus.chunk_config.as_dict(), report.embedder_id,
    )


def index_known_current(corpus: CorpusContext) -> bool:
    """True when the embedded store is byte for byte as an earlier run found it: current."""
    cache = corpus.search_cache()
    scope = corpus.index_scope() if cache is not None else None
    return cache is not None and scope is not None and cache.verified(scope)


def preload(modules: Sequence[str]) -> threading.Thread:
    """Import `modules` on a background thread while the caller does work that releases the GIL
    (the embedding model runs in native code). A failure is left for the real import to raise."""

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - reported by the import that needs the module
                return

    thread = threading.Thread(target=load, name="ragqual-preload", daemon=True)
    thread.start()
    return thread


def ensure_ingested(corpus: CorpusContext, *, progress: bool | None = None) -> IngestReport | None:
    """Ingest when the eval points do not match the current fingerprint; returns the report, or None.

    An embedded store whose files are exactly as they were when an earlier run found it
    current is not opened at all (see adapters.search_cache).
    """
    if index_known_current(corpus):
        return None
    from ragqual.pipeline.ingest import ingest_if_changed

    cache = corpus.search_cache()
    bar = show_progress(corpus.app) if progress is None else progress
    report = ingest_if_changed(corpus.documents, corpus.chunk_config, corpus.embedder, corpus.index, corpus.corpus_dir, bar,
                               distractor_dir=corpus.distractor_dir)
    if cache is not None and (scope := corpus.index_scope()) is not None:
        cache.mark_verified(scope)
    if report is not None:
        record_snapshot(corpus, report)
        corpus.app.notify(f"ingested {report.total_chunks} chunks of {report.documents} documents into "
                          f"{corpus.collection!r} (fingerprint {report.fingerprint[:12]})")
    return report
