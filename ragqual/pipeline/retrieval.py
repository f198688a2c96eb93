"""The reference retrieval pipeline under test: dense, BM25 and hybrid, then a rerank stage.

Every stage is deterministic: ties are broken by chunk id, scores come from
Qdrant (dense) and bm25s (lexical), and fusion is reciprocal rank fusion.
"""

from __future__ import annotations

import base64
import logging
import re
import struct
import threading
import time
from pathlib import Path
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from ragqual.core.glossary import Glossary
from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.errors import InputError, LeakDetected
from ragqual.pipeline.chunking import Chunk, ChunkConfig, embed_text_for_query
from ragqual.pipeline.distractors import check_hits_in
from ragqual.pipeline.query import expand_acronyms
from ragqual.vocab import DenseIndex, QueryEmbedder, ResultMemo

STRATEGIES = ("dense", "bm25", "hybrid")
_TERM = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by can do does for from how i if in is it its my of on or should "
    "the to what when where which who why with you your".split()
)


@dataclass(frozen=True)
class RetrievalConfig:
    strategy: str = "hybrid"
    candidate_k: int = 20
    context_k: int = 5
    threshold: float | None = None
    rrf_k: int = 60
    rerank: bool = True
    expand_acronyms: bool = True
    glossary: str | None = None  # the digest of the glossary expanding the query; None: no glossary, no expansion

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {self.strategy!r}: use one of {', '.join(STRATEGIES)}")
        if self.candidate_k < 1 or self.context_k < 1:
            raise InputError("--candidate-k and --context-k must be at least 1")
        if self.rrf_k < 1:
            raise InputError("the RRF k constant must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy, "candidate_k": self.candidate_k, "context_k": self.context_k,
            "threshold": self.threshold, "rrf_k": self.rrf_k, "rerank": self.rerank,
            "expand_acronyms": self.expand_acronyms, "glossary": self.glossary,
        }

    def with_(self, **changes: Any) -> RetrievalConfig:
        return replace(self, **changes)

    def with_glossary(self, glossary: Glossary | None) -> RetrievalConfig:
        """This configuration over a project whose glossary is `glossary` (None: none is named):
        expansion stays on only with a glossary, and the glossary's digest is recorded. A
        configuration that already names another glossary (a run being resumed) is refused."""
        if not self.expand_acronyms:
            return replace(self, glossary=None)
        digest = glossary.digest if glossary is not None else None
        if self.glossary is not None and self.glossary != digest:
            raise InputError(f"the glossary has changed since this configuration was recorded (digest "
                             f"{self.glossary[:12]}, now {digest[:12] if digest else 'none'}): start a new run")
        return replace(self, expand_acronyms=digest is not None, glossary=digest)


class Ranked(NamedTuple):
    """One retrieved chunk. `similarity` is the dense cosine, whatever the strategy.

    A named tuple: a standard collection's run builds ~280,000 of them."""

    chunk_id: str
    doc_id: str
    score: float
    similarity: float
    source: str = ""


class Ranking(NamedTuple):
    """A candidate list as columns, in rank order: a warm run at depth 1000 reads and stores
    columns, and builds `Ranked` rows only for what is looked at one by one."""

    chunk_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    scores: tuple[float, ...]
    similarities: tuple[float, ...]
    sources: tuple[str, ...]

    def rows(self, limit: int | None = None) -> tuple[Ranked, ...]:
        return tuple(map(_ranked, zip(*(column[:limit] for column in self))))


@dataclass(frozen=True)
class Retrieval:
    query: str  # after preprocessing
    ranking: Ranking  # the full reranked candidate list
    context: tuple[Ranked, ...]  # what reaches the prompt: top context_k above the threshold
    latency_ms: float = 0.0
    texts: dict[str, str] = field(default_factory=dict, compare=False)

    @cached_property
    def candidates(self) -> tuple[Ranked, ...]:
        """The full candidate list as rows."""
        return self.ranking.rows()

    def top(self, n: int) -> tuple[Ranked, ...]:
        return self.ranking.rows(n)

    def context_text(self, separator: str = "\n\n") -> str:
        return separator.join(self.texts[r.chunk_id] for r in self.context)


BM25_STOPWORDS = "en"


BM25_STEMMER = "english"  # Snowball (PyStemmer), used when a Retriever is built with stem=True


def bm25_scope(chunks: Sequence[Chunk], bm25s_version: str, stem: bool = False) -> str:
    """Everything a BM25 ranking depends on besides the query and k."""
    scope: dict[str, Any] = {
        "bm25s": bm25s_version, "stopwords": BM25_STOPWORDS, "chunks": [[c.chunk_id, c.text] for c in chunks],
    }
    if stem:
        scope["stemmer"] = BM25_STEMMER
    return sha256_hex(canonical_json(scope))


def bm25_tokenize(texts: list[str], stem: bool = False) -> Any:
    """bm25s tokens with English stopwords removed, and Snowball English stems when `stem`."""
    import bm25s

    stemmer = None
    if stem:
        import Stemmer

        stemmer = Stemmer.Stemmer(BM25_STEMMER)
    return bm25s.tokenize(texts, stopwords=BM25_STOPWORDS, stemmer=stemmer, show_progress=False)


def _valid_ranking(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], float) for p in value
    )


RANKING_MODULES = ("retrieval.py", "query.py", "chunking.py")
"""The modules whose code decides a ranking: a remembered ranking is keyed on their source (the
glossary's entries enter the key through the configuration's `glossary` digest)."""


def ranking_code() -> str:
    """A digest of the ranking code, so an edited pipeline never reads an older run's rankings."""
    here = Path(__file__).resolve().parent
    return sha256_hex(canonical_json([[name, (here / name).read_text(encoding="utf-8")] for name in RANKING_MODULES]))


_SEPARATOR = "\x00"  # between ids (and sources) of a remembered ranking: no id or path holds it
_PACKED = {"query": str, "depth": int, "ids": str, "sources": str, "scores": str, "similarities": str}


def _pack_floats(values: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


def _unpack_floats(text: str, depth: int) -> tuple[float, ...]:
    """The numbers `_pack_floats` wrote (struct: no array is built for a few dozen numbers)."""
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) != 8 * depth:
        raise ValueError(f"{len(raw)} bytes for {depth} numbers")
    return struct.unpack(f"<{depth}d", raw)


def _pack(query: str, ranking: Ranking) -> dict[str, Any] | None:
    """A ranking as one small JSON object: ids and sources joined, numbers as float64 bytes
    (exact), which reads back about ten times faster than lists of a thousand JSON values."""
    if any(_SEPARATOR in text for text in (*ranking.chunk_ids, *ranking.sources)):
        return None  # not representable: searched again next time
    return {"query": query, "depth": len(ranking.chunk_ids), "ids": _SEPARATOR.join(ranking.chunk_ids),
            "sources": _SEPARATOR.join(ranking.sources), "scores": _pack_floats(ranking.scores),
            "similarities": _pack_floats(ranking.similarities)}


def _is_packed(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() == _PACKED.keys() and all(
        type(value[name]) is kind for name, kind in _PACKED.items())


def _unpack(value: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[float, ...], tuple[float, ...]] | None:
    """(ids, sources, scores, similarities) of a packed ranking, or None when it does not add up."""
    depth = value["depth"]
    try:
        scores, similarities = _unpack_floats(value["scores"], depth), _unpack_floats(value["similarities"], depth)
    except ValueError:  # binascii.Error is a ValueError
        return None
    ids = tuple(value["ids"].split(_SEPARATOR)) if depth else ()
    sources = tuple(value["sources"].split(_SEPARATOR)) if depth else ()
    if len(ids) != depth or len(sources) != depth:
        return None
    return ids, sources, scores, similarities


_ranked = partial(tuple.__new__, Ranked)  # a Ranked from one 5-tuple, without a Python-level __new__


def terms(text: str) -> list[str]:
    return [t for t in _TERM.findall(text.lower()) if t not in _STOP]


def _order(items: dict[str, float]) -> list[tuple[str, float]]:
    """Highest score first, ties by id: sorted by id, then stably by score (the same order as the
    key (-score, id), without a Python call per item)."""
    return sorted(sorted(items.items()), key=_SCORE, reverse=True)


_SCORE = itemgetter(1)


def rrf(rankings: Sequence[Sequence[str]], k: int) -> dict[str, float]:
    """Reciprocal rank fusion: sum over rankings of 1 / (k + rank), rank from 1."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (k + rank)
    return fused


def lexical_rerank(query_terms: Sequence[str], ranked: Sequence[str], texts: dict[str, str],
                   chunk_terms: dict[str, frozenset[str]] | None = None) -> list[str]:
    """Rescore candidates by query-term coverage, keeping the incoming order as the tie-breaker.

    score = 0.5 * (1 / (1 + position)) + 0.5 * (share of distinct query terms in the chunk).
    `chunk_terms` may hold each chunk's terms, computed once.
    """
    wanted = set(query_terms)
    scored: dict[str, float] = {}
    for position, chunk_id in enumerate(ranked):
        have = chunk_terms[chunk_id] if chunk_terms is not None else set(terms(texts[chunk_id]))
        coverage = len(wanted & have) / len(wanted) if wanted else 0.0
        scored[chunk_id] = 0.5 / (1 + position) + 0.5 * coverage
    return [cid for cid, _ in _order(scored)]


class Retriever:
    """Dense (Qdrant), BM25 (bm25s) and hybrid retrieval over one ingested corpus.

    With a `memo`, BM25 rankings are read from and written to it, keyed on `bm25_scope`;
    the bm25s index is then built only when a query misses. With a `result_scope` too (everything
    the index, the embedder and the chunks contribute, see `app.retrieval_run.build_retriever`),
    whole retrievals are remembered, keyed on that scope, the ranking code, the configuration and
    the question: a warm run then reads each ranking back and searches nothing (`_recall`).

    Safe to share between the trial loop's worker threads: `retrieve` and `prefetch` hold one
    lock, so the lazily built BM25 index, the memos and the dense index (qdrant-client's local
    mode is not documented as thread-safe) are only ever used by one thread at a time, and the
    BM25 index is published only once it is fully built.
    """

    def __init__(self, chunks: Sequence[Chunk], vectors: np.ndarray, index: DenseIndex,
                 embedder: QueryEmbedder, chunk_config: ChunkConfig, corpus_dir: Path,
                 memo: ResultMemo | None = None, stem: bool = False, distractor_dir: Path | None = None,
                 result_scope: str | None = None, glossary: Glossary | None = None):
        self.corpus_dir = corpus_dir
        self.glossary = glossary
        self._expansions = glossary.as_mapping() if glossary is not None else None
        self.distractor_dir = distractor_dir
        self.stem = stem
        self.chunks = {c.chunk_id: c for c in chunks}
        self.order = [c.chunk_id for c in chunks]
        self.texts = {c.chunk_id: c.text for c in chunks}
        self._doc_of = {c.chunk_id: c.doc_id for c in chunks}
        self._chunk_terms: dict[str, frozenset[str]] | None = None  # built on the first rerank
        self._verified: set[tuple[str, str]] = set()
        self.vectors = {cid: vectors[i] for i, cid in enumerate(self.order)}
        self.index = index
        self.embedder = embedder
        self.chunk_config = chunk_config
        self.sources: dict[str, str] = {}
        self._batch_share_ms = 0.0
        self._qvecs: dict[str, np.ndarray] = {}
        self._dense_memo: dict[tuple[str, int], dict[str, float]] = {}
        self._bm25_memo: dict[tuple[str, int], dict[str, float]] = {}
        self._sim_memo: dict[str, dict[str, float]] = {}
        self.memo = memo
        self._remembered: dict[tuple[str, RetrievalConfig], Retrieval] = {}
        self._keyers: dict[RetrievalConfig, Callable[[str], str]] = {}  # a remembered ranking's key, per configuration
        self.recalled = 0  # retrievals read back from the memo instead of searched
        self._lock = threading.RLock()
        self._bm25_index: Any = None
        self._bm25_scope: str | None = None
        if memo is not None:
            from ragqual.adapters.search_cache import package_version

            self._bm25_scope = bm25_scope(chunks, package_version("bm25s"), stem)
        self._result_scope = None if memo is None or result_scope is None else sha256_hex(canonical_json(
            {"scope": result_scope, "bm25": self._bm25_scope, "code": ranking_code(),
             "folders": [str(Path(corpus_dir).resolve()), distractor_dir and str(Path(distractor_dir).resolve())]}))

    @property
    def chunk_terms(self) -> dict[str, frozenset[str]]:
        """Each chunk's terms for the rerank stage, computed on first use (a standard collection
        runs without the rerank, and its 11,000 chunks would cost a second here)."""
        with self._lock:
            if self._chunk_terms is None:
                self._chunk_terms = {cid: frozenset(terms(text)) for cid, text in self.texts.items()}
            return self._chunk_terms

    @property
    def bm25(self) -> Any:
        """The bm25s index of the chunks, built on first use and published only when complete."""
        with self._lock:
            if self._bm25_index is None:
                import bm25s

                logging.getLogger("bm25s").setLevel(max(logging.WARNING, logging.getLogger().level))  # bm25s logs each index build at DEBUG
                index = bm25s.BM25()
                index.index(self._tokenize([self.texts[cid] for cid in self.order]), show_progress=False)
                self._bm25_index = index
            return self._bm25_index

    def _tokenize(self, texts: list[str]) -> Any:
        return bm25_tokenize(texts, self.stem)

    def _query_text(self, raw_query: str, config: RetrievalConfig) -> str:
        """The question as searched: expanded with the glossary when the configuration names it."""
        if not config.expand_acronyms or config.glossary is None:
            return raw_query
        if self.glossary is None or self._expansions is None or config.glossary != self.glossary.digest:
            raise InputError(f"the configuration expands acronyms with glossary {config.glossary[:12]}, "
                             "which is not this retriever's: build it with `RetrievalConfig.with_glossary`")
        return expand_acronyms(raw_query, self._expansions)

    def prefetch(self, raw_queries: Sequence[str], configs: Sequence[RetrievalConfig]) -> None:
        """Read back what earlier runs remembered, then embed and dense-search the rest of a
        run's queries in batches; `retrieve` then reads the memos.

        Each searched query's reported latency includes an equal share of this batched work.
        """
        with self._lock:
            self._prefetch(raw_queries, configs)

    def _prefetch(self, raw_queries: Sequence[str], configs: Sequence[RetrievalConfig]) -> None:
        pending = []
        for raw_query, config in ((q, c) for q in dict.fromkeys(raw_queries) for c in dict.fromkeys(configs)):
            remembered = self._recall(raw_query, config)
            if remembered is None:
                pending.append((raw_query, config))
            else:
                self._remembered[(raw_query, config)] = remembered
        if not pending:
            return
        started = time.perf_counter()
        texts = list(dict.fromkeys(self._query_text(q, c) for q, c in pending))
        configs = list(dict.fromkeys(c for _, c in pending))
        todo = [t for t in texts if t not in self._qvecs]
        if todo:
            vectors = self.embedder.embed([embed_text_for_query(t, self.chunk_config) for t in todo])
            self._qvecs.update(zip(todo, vectors, strict=True))
        for k in sorted({c.candidate_k for c in configs if c.strategy != "bm25"}):
            missing = [t for t in texts if (t, k) not in self._dense_memo]
            if missing:
                for text, hits in zip(missing, self.index.search_batch(np.stack([self._qvecs[t] for t in missing]), k), strict=True):
                    self._dense_memo[(text, k)] = self._accept(hits)
        self._batch_share_ms = (time.perf_counter() - started) * 1000 / len(pending)

    def _qvec(self, text: str) -> np.ndarray:
        if text not in self._qvecs:
            self._qvecs[text] = self.embedder.embed([embed_text_for_query(text, self.chunk_config)])[0]
        return self._qvecs[text]

    def _dense(self, text: str, k: int) -> dict[str, float]:
        if (text, k) not in self._dense_memo:
            self._dense_memo[(text, k)] = self._accept(self.index.search(self._qvec(text), limit=k))
        return self._dense_memo[(text, k)]

    def _accept(self, hits: Sequence[Any]) -> dict[str, float]:
        fresh = [h for h in hits if (h.chunk_id, h.source) not in self._verified]
        check_hits_in(fresh, self.corpus_dir, self.distractor_dir)  # a chunk from outside the corpus stops the run
        self._verified.update((h.chunk_id, h.source) for h in fresh)
        for hit in hits:
            self.sources[hit.chunk_id] = hit.source
            if hit.chunk_id not in self.chunks:
                raise LeakDetected(f"leak guard: retrieved chunk {hit.chunk_id!r} is not a chunk of the current corpus: run `ragqual corpus ingest`")
        return {h.chunk_id: float(h.score) for h in hits}

    def _bm25(self, query: str, k: int) -> dict[str, float]:
        k = min(k, len(self.order))
        if (query, k) not in self._bm25_memo:
            self._bm25_memo[(query, k)] = self._bm25_search(query, k)
        return self._bm25_memo[(query, k)]

    def _bm25_search(self, query: str, k: int) -> dict[str, float]:
        key = None
        if self.memo is not None:
            key = self.memo.key("bm25", scope=self._bm25_scope, query=query, k=k)
            cached = self.memo.get(key, _valid_ranking)
            if cached is not None:
                return dict(cached)
        docs, scores = self.bm25.retrieve(self._tokenize([query]), k=k, show_progress=False, n_threads=1)
        out = {self.order[int(i)]: float(s) for i, s in zip(docs[0], scores[0], strict=True) if s > 0}
        if self.memo is not None and key is not None:
            self.memo.put(key, list(out.items()))
        return out

    def similarity(self, qvec: np.ndarray, chunk_id: str) -> float:
        return float(np.dot(qvec, self.vectors[chunk_id]))

    def _similarities(self, text: str, chunk_ids: Sequence[str]) -> list[float]:
        """The rounded dense cosines of a query text and chunks, each pair computed once
        (one np.dot per pair, as `similarity`: a matrix product may round differently)."""
        memo = self._sim_memo.setdefault(text, {})
        missing = [cid for cid in chunk_ids if cid not in memo]
        if missing:
            qvec, vectors, dot = self._qvec(text), self.vectors, np.dot
            memo.update((cid, round(float(dot(qvec, vectors[cid])), 6)) for cid in missing)
        return [memo[cid] for cid in chunk_ids]

    def retrieve(self, raw_query: str, config: RetrievalConfig) -> Retrieval:
        with self._lock:
            return self._retrieve(raw_query, config)

    def ranking(self, raw_query: str, config: RetrievalConfig) -> Ranking:
        """`retrieve(raw_query, config).ranking`, without building the context: what an e2e trial
        keeps of the strategies it does not run (`RagSubject._other_strategies`)."""
        with self._lock:
            remembered = self._remembered.pop((raw_query, config), None)
            return remembered.ranking if remembered is not None else self._rank(raw_query, config)[1]

    def _retrieve(self, raw_query: str, config: RetrievalConfig) -> Retrieval:
        remembered = self._remembered.pop((raw_query, config), None)
        if remembered is not None:
            return remembered
        query, ranking, elapsed = self._rank(raw_query, config)
        return self._retrieval(query, ranking, config, elapsed)

    def _rank(self, raw_query: str, config: RetrievalConfig) -> tuple[str, Ranking, float]:
        """(the query as searched, its ranking, milliseconds it took): read back when an earlier
        run remembered it (`_recalled`), else searched and remembered."""
        recalled = self._recalled(raw_query, config)
        if recalled is not None:
            return recalled
        started = time.perf_counter()
        query = self._query_text(raw_query, config)
        if config.strategy == "dense":
            scored = self._dense(query, config.candidate_k)
        elif config.strategy == "bm25":
            scored = self._bm25(query, config.candidate_k)
        else:
            dense = [c for c, _ in _order(self._dense(query, config.candidate_k))]
            lexical = [c for c, _ in _order(self._bm25(query, config.candidate_k))]
            scored = rrf([dense, lexical], config.rrf_k)
        ranked = [cid for cid, _ in _order(scored)][: config.candidate_k]
        if config.rerank:
            ranked = lexical_rerank(terms(raw_query), ranked, self.texts, self.chunk_terms)
        doc_of, sources = self._doc_of, self.sources
        ranking = Ranking(tuple(ranked), tuple(doc_of[cid] for cid in ranked),
                          tuple(round(scored[cid], 6) for cid in ranked), tuple(self._similarities(query, ranked)),
                          tuple(sources.get(cid, "") for cid in ranked))
        self._remember(raw_query, config, query, ranking)
        return query, ranking, (time.perf_counter() - started) * 1000 + self._batch_share_ms

    def _retrieval(self, query: str, ranking: Ranking, config: RetrievalConfig, elapsed_ms: float) -> Retrieval:
        """The context is the top `context_k` candidates whose similarity reaches the threshold."""
        if config.threshold is None:
            context = ranking.rows(config.context_k)
        else:
            from ragqual.core.whatif import context_indices  # the rule's one home; imported only when a threshold cuts

            keep = context_indices(ranking.similarities, config.threshold, config.context_k)
            context = tuple(_ranked(tuple(column[i] for column in ranking)) for i in keep)
        return Retrieval(query, ranking, context, elapsed_ms, self.texts)

    def _result_key(self, raw_query: str, config: RetrievalConfig) -> str | None:
        """`memo.key("ranking", scope=..., config=config.as_dict(), query=raw_query)`, through a
        keyer made once per configuration (`SearchCache.keyer`: the same key, cheaper)."""
        if self.memo is None or self._result_scope is None:
            return None
        keyer = self._keyers.get(config)
        if keyer is None:
            keyer = self._keyers[config] = self.memo.keyer("ranking", "query", scope=self._result_scope,
                                                           config=config.as_dict())
        return keyer(raw_query)

    def _remember(self, raw_query: str, config: RetrievalConfig, query: str, ranking: Ranking) -> None:
        key = self._result_key(raw_query, config)
        if key is None or self.memo is None:
            return
        packed = _pack(query, ranking)
        if packed is not None:
            self.memo.put(key, packed)

    def _recall(self, raw_query: str, config: RetrievalConfig) -> Retrieval | None:
        """The retrieval an earlier run remembered for exactly these inputs (`_recalled`)."""
        recalled = self._recalled(raw_query, config)
        return None if recalled is None else self._retrieval(*recalled[:2], config, recalled[2])

    def _recalled(self, raw_query: str, config: RetrievalConfig) -> tuple[str, Ranking, float] | None:
        """(query, ranking, milliseconds) an earlier run remembered for exactly these inputs; its
        latency is the time the read took.

        Not leak-guarded hit by hit again: it was made from dense hits that passed the guard, in
        an index in exactly the state the key names, with the corpus in the same folder. What is
        checked is that it names only chunks of the current corpus (else it is searched again),
        so the context it yields is corpus text whatever the cache folder holds."""
        key = self._result_key(raw_query, config)
        if key is None or self.memo is None:
            return None
        started = time.perf_counter()
        value = self.memo.get(key, _is_packed)
        unpacked = None if value is None else _unpack(value)
        if value is None or unpacked is None:
            return None
        ids, sources, scores, similarities = unpacked
        try:
            docs = tuple(map(self._doc_of.__getitem__, ids))
        except KeyError:
            return None  # not a ranking of this corpus: search again
        self.recalled += 1
        return value["query"], Ranking(ids, docs, scores, similarities, sources), (time.perf_counter() - started) * 1000
