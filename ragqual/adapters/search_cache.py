"""Search results of earlier runs, reused while everything they depend on is unchanged.

A warm `ragqual retrieval` over an unchanged corpus should not pay for loading qdrant-client
and bm25s and searching again in Python. Each entry is keyed on all of its inputs:

- dense hits: the embedded Qdrant folder's on-disk state (size, modification time and inode of
  `meta.json` and of the collection's SQLite file, plus SQLite's own change counter), the
  collection, the corpus fingerprint, the limit and the exact bytes of the query vector;
- "this index holds the current corpus": the same state and fingerprint, so the ingest check
  (which reads the points back) is skipped too;
- BM25 rankings (see `pipeline.retrieval`): the chunk texts, the bm25s version, the query, k.

Any write to the embedded folder (an ingest, a reset, a point someone added) changes its state
and so misses every dense entry. A Qdrant server exposes no such state: its searches are never
cached. Cached hits still go through the leak guard, which checks each hit's source file.
Entries are JSON bytes in a data-only diskcache (see adapters.cache: nothing is unpickled); a
damaged or planted entry is a miss, counted in the run's CacheNotes (one line at the end). A folder
that cannot be opened or written makes the run go on without this cache, said once.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ragqual.adapters.cache import CACHE_FAULTS, CacheNotes, decode_json, encode_json, open_cache
from ragqual.core.hashing import canonical_json, sha256_hex

if TYPE_CHECKING:
    import diskcache

    from ragqual.vocab import DenseIndex

ENTRY_VERSION = 2  # 1: pickled values; 2: JSON bytes
SQLITE_HEADER = 100
_CHANGE_COUNTER = slice(24, 28)  # SQLite's file change counter, bumped by every committed write
_VARY = "\x00the varying field\x00"  # stands for the varying value in `SearchCache.keyer`'s material


class CachedHit(NamedTuple):
    """A dense hit as the retriever needs it (the leak guard reads `source` and `doc_id`)."""

    chunk_id: str
    doc_id: str
    score: float
    source: str


def _file_state(path: Path) -> list[Any]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return [path.name, None]
    state: list[Any] = [path.name, st.st_size, st.st_mtime_ns, st.st_ino]
    if path.suffix == ".sqlite":
        with path.open("rb") as handle:
            state.append(handle.read(SQLITE_HEADER)[_CHANGE_COUNTER].hex())
        state.append(path.with_name(path.name + "-journal").exists())
    return state


def embedded_state(folder: Path, collection: str) -> str | None:
    """A digest of the embedded Qdrant folder's files that any write to `collection` changes.

    None when the folder holds no Qdrant store yet (nothing to reuse).
    """
    meta = folder / "meta.json"
    if not meta.is_file():
        return None
    storage = folder / "collection" / collection / "storage.sqlite"
    return sha256_hex(canonical_json({"meta": _file_state(meta), "storage": _file_state(storage)}))


def package_version(name: str) -> str:
    """An installed package's version without importing it (its dist-info folder's name),
    falling back to importlib.metadata."""
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.origin:
        site = Path(spec.origin).resolve().parents[1]
        found = sorted(site.glob(f"{name}-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix(f"{name}-").removesuffix(".dist-info")
    from importlib.metadata import version

    return version(name)


class SearchCache:
    """A diskcache folder of search results; `read=False` only writes (a forced fresh run).

    A folder that cannot be opened or written is noted once and then neither read nor written:
    every search runs, to the same results."""

    WHAT = "search-cache"

    def __init__(self, directory: str | Path, *, read: bool = True, notes: CacheNotes | None = None,
                 opened: diskcache.Cache | None = None):
        """`opened`: the folder's cache opened already (adapters.cache_opener), owned from now on."""
        self.directory = Path(directory)
        self.notes = notes or CacheNotes()
        self._owns_notes = notes is None
        self.cache = opened if opened is not None else open_cache(directory, self.notes)
        self.read = read
        self.hits = 0
        self.misses = 0

    def get(self, key: str, valid: Callable[[Any], bool]) -> Any | None:
        if not self.read or self.cache is None:
            return None
        try:
            stored = self.cache.get(key, default=None, retry=True)
            value = None if stored is None else _tuples(decode_json(stored))
        except Exception as exc:  # noqa: BLE001 - a damaged cache costs time, never a run
            self._ignored(key, repr(exc))
            return None
        if value is not None and not valid(value):
            self._ignored(key, "an unexpected shape")
            return None
        return value

    def _ignored(self, key: str, reason: str) -> None:
        self.notes.ignored(self.WHAT, self.directory, key, reason, "searched again")

    def put(self, key: str, value: Any) -> None:
        if self.cache is None:
            return
        try:
            self.cache.set(key, encode_json(value), retry=True)
        except CACHE_FAULTS as exc:
            self.notes.unusable(self.directory, exc)
            self.cache.close()
            self.cache = None

    @staticmethod
    def key(kind: str, **fields: Any) -> str:
        return sha256_hex(canonical_json({"entry": ENTRY_VERSION, "kind": kind, **fields}))

    @staticmethod
    def keyer(kind: str, vary: str, **fields: Any) -> Callable[[str], str]:
        """`key(kind, **fields, **{vary: text})` as a function of the string `text`, the same keys:
        the canonical JSON of a dict is its members' encodings in key order, so the text around
        `vary`'s value is encoded and hashed once, and a key costs the value's encoding and a
        hash of it (a warm run reads back hundreds of rankings, one key each, `Retriever`)."""
        material = canonical_json({"entry": ENTRY_VERSION, "kind": kind, **fields, vary: _VARY})
        head, mark, tail = material.partition(canonical_json(_VARY))
        if mark in tail:  # a field holds the mark's text too: the long way
            return lambda text: SearchCache.key(kind, **fields, **{vary: text})
        start, end = hashlib.sha256(head.encode("utf-8")), tail.encode("utf-8")

        def key(text: str) -> str:
            digest = start.copy()
            digest.update(canonical_json(text).encode("utf-8"))
            digest.update(end)
            return digest.hexdigest()

        return key

    def verified(self, scope: str) -> bool:
        """True when an earlier run found the index current in exactly this state."""
        return self.get(self.key("verified", scope=scope), lambda v: v is True) is True

    def mark_verified(self, scope: str) -> None:
        self.put(self.key("verified", scope=scope), True)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if self._owns_notes:
            self.notes.flush()


def _tuples(value: Any) -> Any:
    """JSON gives lists: the pairs and rows inside a top-level list become tuples again."""
    if isinstance(value, list):
        return [tuple(v) if isinstance(v, list) else v for v in value]
    return value


def index_scope(state: str, collection: str, fingerprint: str) -> str:
    """What a dense result depends on besides the query: the stored points and the corpus."""
    return sha256_hex(canonical_json({"state": state, "collection": collection, "fingerprint": fingerprint}))


def _valid_hits(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(h, tuple) and len(h) == 4 and isinstance(h[0], str) and isinstance(h[2], float) for h in value
    )


class CachedDenseIndex:
    """A dense index that answers from the cache and opens the real one only on a miss."""

    def __init__(self, cache: SearchCache, scope: Callable[[], str], open_index: Callable[[], DenseIndex]):
        """`scope()` is read now and again after each real search: results found while the
        index changed under us are returned but not stored."""
        self.cache = cache
        self._scope_now = scope
        self.scope = scope()
        self._open_index = open_index

    def _key(self, vector: np.ndarray, limit: int) -> str:
        raw = np.ascontiguousarray(vector, dtype="<f4").tobytes()
        return self.cache.key("dense", scope=self.scope, limit=limit, vector=sha256_hex(raw))

    def search_batch(self, vectors: np.ndarray, limit: int) -> list[list[CachedHit]]:
        keys = [self._key(v, limit) for v in vectors]
        found: dict[int, list[CachedHit]] = {}
        for i, key in enumerate(keys):
            value = self.cache.get(key, _valid_hits)
            if value is not None:
                found[i] = list(map(CachedHit._make, value))
        self.cache.hits += len(found)
        missing = [i for i in range(len(keys)) if i not in found]
        self.cache.misses += len(missing)
        if missing:
            fresh = self._open_index().search_batch(np.stack([vectors[i] for i in missing]), limit)
            keep = self._scope_now() == self.scope
            for i, hits in zip(missing, fresh, strict=True):
                found[i] = self._store(keys[i], hits, keep)
        return [found[i] for i in range(len(keys))]

    def search(self, vector: np.ndarray, limit: int, score_threshold: float | None = None) -> list[Any]:
        if score_threshold is not None:  # not a shape the retriever caches
            return self._open_index().search(vector, limit, score_threshold)
        return self.search_batch(np.asarray(vector, dtype=np.float32).reshape(1, -1), limit)[0]

    def _store(self, key: str, hits: Sequence[Any], keep: bool) -> list[CachedHit]:
        kept = [CachedHit(str(h.chunk_id), str(h.doc_id), float(h.score), str(h.source)) for h in hits]
        if keep:
            self.cache.put(key, [(h.chunk_id, h.doc_id, h.score, h.source) for h in kept])
        return kept
