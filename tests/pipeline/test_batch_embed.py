"""Batched embedding: order kept, and an interrupted run resumes from the embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

from ragqual.adapters.embedders import CachedEmbedder
from ragqual.pipeline.batch_embed import embed_in_batches


class CountingEmbedder:
    """A deterministic stand-in model that records what it was asked and can fail on its n-th call."""

    id = "counting:1"
    dim = 4

    def __init__(self, fail_on_call: int | None = None):
        self.calls: list[list[str]] = []
        self.fail_on_call = fail_on_call

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise KeyboardInterrupt  # Ctrl-C in the middle of a cold ingest
        rows = [[len(t), sum(map(ord, t)) % 97, 1.0, 0.0] for t in texts]
        return np.asarray(rows, dtype=np.float32)


TEXTS = [f"chunk number {i}" for i in range(10)]


def test_vectors_come_back_in_order_whatever_the_batch_size():
    whole = CountingEmbedder().embed(TEXTS)
    batched = embed_in_batches(TEXTS, CountingEmbedder(), progress=False, batch_size=3)
    assert np.array_equal(whole, batched)
    assert embed_in_batches([], CountingEmbedder(), progress=False).shape == (0, 4)


def test_an_interrupted_run_resumes_with_only_the_missing_texts(tmp_path):
    first = CountingEmbedder(fail_on_call=3)
    with pytest.raises(KeyboardInterrupt):
        embed_in_batches(TEXTS, CachedEmbedder(first, tmp_path / "cache"), progress=False, batch_size=4)
    assert len(first.calls) == 3  # two batches of 4 finished before the interruption

    second = CountingEmbedder()
    cached = CachedEmbedder(second, tmp_path / "cache")
    vectors = embed_in_batches(TEXTS, cached, progress=False, batch_size=4)
    assert [t for call in second.calls for t in call] == TEXTS[8:]
    assert (cached.hits, cached.misses) == (8, 2)
    assert np.array_equal(vectors, CountingEmbedder().embed(TEXTS))


def test_a_large_list_is_kept_as_one_entry_and_read_back_whole(tmp_path, monkeypatch):
    import ragqual.pipeline.batch_embed as batch_embed

    monkeypatch.setattr(batch_embed, "MATRIX_MIN", 5)
    first = CachedEmbedder(CountingEmbedder(), tmp_path / "cache")
    expected = embed_in_batches(TEXTS, first, progress=False, batch_size=4)
    first.close()

    cached = CachedEmbedder(CountingEmbedder(), tmp_path / "cache")
    reads = []
    real_get = cached.cache.get
    monkeypatch.setattr(cached.cache, "get", lambda key, *a, **k: reads.append(key) or real_get(key, *a, **k))
    vectors = embed_in_batches(TEXTS, cached, progress=False, batch_size=4)
    assert len(reads) == 1 and cached.inner.calls == []  # one read, no model call
    assert np.array_equal(vectors, expected) and vectors.dtype == np.float32
    assert (cached.hits, cached.misses) == (10, 0)
    vectors[0, 0] = 99.0  # the caller owns the array

    reordered = embed_in_batches(list(reversed(TEXTS)), cached, progress=False, batch_size=4)  # another list: per text
    assert np.array_equal(reordered, expected[::-1]) and cached.inner.calls == []


def test_a_damaged_whole_entry_is_a_counted_miss(tmp_path, monkeypatch):
    import ragqual.pipeline.batch_embed as batch_embed
    from ragqual.adapters.cache import CacheNotes

    monkeypatch.setattr(batch_embed, "MATRIX_MIN", 5)
    said: list[str] = []
    cached = CachedEmbedder(CountingEmbedder(), tmp_path / "cache", CacheNotes(said.append))
    expected = embed_in_batches(TEXTS, cached, progress=False)
    cached.cache.set(cached._matrix_key(TEXTS), b"\x00" * 12)
    vectors = embed_in_batches(TEXTS, cached, progress=False)
    assert np.array_equal(vectors, expected)  # from the per-text entries
    assert cached.notes.count("embedding-cache", tmp_path / "cache") == 1
    assert np.array_equal(embed_in_batches(TEXTS, cached, progress=False), expected)
    assert cached.notes.count("embedding-cache", tmp_path / "cache") == 1  # the entry was rewritten
    cached.notes.flush()
    assert len(said) == 1 and f"12 bytes for {len(TEXTS)} vectors" in said[0]
