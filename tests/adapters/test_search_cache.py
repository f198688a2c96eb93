"""The search cache: entries keyed on everything a result depends on, invalidated by any write."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client.http import models

from ragqual.adapters.search_cache import CachedDenseIndex, CachedHit, SearchCache, embedded_state, index_scope, package_version


class CountingIndex:
    """A dense index double that answers by dot product over fixed points and counts calls."""

    def __init__(self, points: dict[str, np.ndarray]):
        self.points = points
        self.batches = 0

    def search_batch(self, vectors, limit):
        self.batches += 1
        out = []
        for v in vectors:
            scored = sorted(((float(p @ v), cid) for cid, p in self.points.items()), key=lambda t: (-t[0], t[1]))
            out.append([CachedHit(cid, cid.split("#")[0], s, f"/corpus/{cid.split('#')[0]}.md") for s, cid in scored[:limit]])
        return out

    def search(self, vector, limit, score_threshold=None):
        return self.search_batch(np.asarray(vector).reshape(1, -1), limit)[0]


@pytest.fixture
def points() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {f"doc{i}#0": v / np.linalg.norm(v) for i, v in enumerate(rng.normal(size=(6, 8)).astype(np.float32))}


@pytest.fixture
def cache(tmp_path: Path):
    opened = SearchCache(tmp_path / "search")
    yield opened
    opened.close()


def test_a_second_search_is_served_from_the_cache(cache, points):
    inner = CountingIndex(points)
    queries = np.stack(list(points.values())[:3])
    first = CachedDenseIndex(cache, lambda: "scope-a", lambda: inner).search_batch(queries, 4)
    again = CachedDenseIndex(cache, lambda: "scope-a", lambda: inner).search_batch(queries, 4)
    assert inner.batches == 1
    assert again == first and [h.chunk_id for h in first[0]][0] == "doc0#0"
    assert (cache.hits, cache.misses) == (3, 3)


def test_scope_limit_and_vector_bytes_are_part_of_the_key(cache, points):
    inner = CountingIndex(points)
    query = np.stack([points["doc1#0"]])
    CachedDenseIndex(cache, lambda: "scope-a", lambda: inner).search_batch(query, 4)
    CachedDenseIndex(cache, lambda: "scope-b", lambda: inner).search_batch(query, 4)  # another index state
    CachedDenseIndex(cache, lambda: "scope-a", lambda: inner).search_batch(query, 5)  # another limit
    nudged = query.copy()
    nudged[0, 0] = np.nextafter(nudged[0, 0], np.float32(2))  # one ulp
    CachedDenseIndex(cache, lambda: "scope-a", lambda: inner).search_batch(nudged, 4)
    assert inner.batches == 4


def test_results_found_while_the_index_changed_are_not_kept(cache, points):
    inner = CountingIndex(points)
    states = iter(["before", "after", "after", "after"])
    query = np.stack([points["doc2#0"]])
    changing = CachedDenseIndex(cache, lambda: next(states), lambda: inner)
    assert changing.search_batch(query, 3)[0][0].chunk_id == "doc2#0"
    CachedDenseIndex(cache, lambda: "before", lambda: inner).search_batch(query, 3)
    assert inner.batches == 2  # the first result was returned but not stored under "before"


def test_a_damaged_entry_is_a_counted_miss(cache, points):
    inner = CountingIndex(points)
    query = np.stack([points["doc3#0"]])
    index = CachedDenseIndex(cache, lambda: "scope", lambda: inner)
    index.search_batch(query, 2)
    cache.put(index._key(query[0], 2), "not a hit list")
    assert index.search_batch(query, 2)[0][0].chunk_id == "doc3#0"
    assert inner.batches == 2
    assert cache.notes.count("search-cache", cache.directory) == 1
    with pytest.warns(RuntimeWarning, match="1 search-cache entry in .* was unreadable or inconsistent .*unexpected shape"):
        cache.close()  # a cache opened alone says its count as a warning when it closes


def test_write_only_reads_nothing_but_writes(tmp_path, points):
    inner = CountingIndex(points)
    query = np.stack([points["doc4#0"]])
    writer = SearchCache(tmp_path / "search", read=False)
    CachedDenseIndex(writer, lambda: "s", lambda: inner).search_batch(query, 2)
    CachedDenseIndex(writer, lambda: "s", lambda: inner).search_batch(query, 2)
    writer.close()
    reader = SearchCache(tmp_path / "search")
    CachedDenseIndex(reader, lambda: "s", lambda: inner).search_batch(query, 2)
    reader.close()
    assert inner.batches == 2


def test_verified_marks_are_per_scope(cache):
    scope = index_scope("state-1", "kb", "fp")
    assert not cache.verified(scope)
    cache.mark_verified(scope)
    assert cache.verified(scope)
    assert not cache.verified(index_scope("state-2", "kb", "fp"))
    assert not cache.verified(index_scope("state-1", "kb", "other-fp"))


def test_embedded_state_changes_with_every_write_and_only_then(tmp_path):
    folder = tmp_path / "qdrant"
    assert embedded_state(folder, "kb") is None  # no store yet
    client = QdrantClient(path=str(folder))
    client.create_collection("kb", vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE))
    client.upsert("kb", points=[models.PointStruct(id=1, vector=[1, 0, 0, 0], payload={"a": 1})])
    client.close()
    before = embedded_state(folder, "kb")
    client = QdrantClient(path=str(folder))  # opening, reading and closing write nothing
    client.query_points("kb", query=[1, 0, 0, 0], limit=1)
    client.close()
    assert embedded_state(folder, "kb") == before
    client = QdrantClient(path=str(folder))
    client.upsert("kb", points=[models.PointStruct(id=1, vector=[0, 1, 0, 0], payload={"a": 1})])  # same size, new vector
    client.close()
    after = embedded_state(folder, "kb")
    assert after is not None and after != before
    assert embedded_state(folder, "other") != after  # the collection is part of the state


def test_package_version_matches_importlib_metadata():
    from importlib.metadata import version

    assert package_version("bm25s") == version("bm25s")
    assert package_version("numpy") == version("numpy")


KEYED_TEXTS = ["how long to boil water", "", "quotes \" and \\ back\\slash", "naïve café ☕ 東京", "a\x00b\n\t\u2028",
               "\x00the varying field\x00"]


@pytest.mark.parametrize("fields", [
    {"scope": "a" * 64, "config": {"strategy": "hybrid", "candidate_k": 20, "threshold": None, "rerank": True,
                                   "glossary": None, "rrf_k": 60}},
    {"scope": "s", "config": {"threshold": 0.35, "glossary": "é\"\\"}, "zeta": [1, 2.5, None]},
    {"scope": "holds the mark", "config": {"glossary": "\x00the varying field\x00"}},  # the long way
    {"scope": "before the mark", "aaa": "x\"\x00the varying field\x00"},  # an escaped quote then the mark's text
    {"scope": "\x00the varying field\x00"},  # after the varying field: the long way too
])
def test_a_keyer_gives_the_key_of_every_text(fields):
    keyer = SearchCache.keyer("ranking", "query", **fields)
    for text in KEYED_TEXTS:
        assert keyer(text) == SearchCache.key("ranking", **fields, query=text), repr(text)
    assert len({keyer(t) for t in KEYED_TEXTS}) == len(KEYED_TEXTS)


def test_a_keyer_encodes_only_the_varying_text(monkeypatch):
    """The material around the query is encoded when the keyer is made, never again per key."""
    from ragqual.adapters import search_cache

    encoded: list[type] = []
    real = search_cache.canonical_json
    monkeypatch.setattr(search_cache, "canonical_json", lambda value: encoded.append(type(value)) or real(value))
    keyer = SearchCache.keyer("ranking", "query", scope="s", config={"strategy": "bm25"})
    made = len(encoded)
    keys = [keyer(text) for text in KEYED_TEXTS]
    assert encoded[made:] == [str] * len(KEYED_TEXTS)
    monkeypatch.undo()
    assert keys == [SearchCache.key("ranking", scope="s", config={"strategy": "bm25"}, query=t) for t in KEYED_TEXTS]
