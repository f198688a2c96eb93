"""The caches hold data only: a pickle planted in any of them never runs and is a miss, counted in one warning.

The pickle is planted the way an attacker would: with diskcache's default (pickling) Disk, into
the folder ragqual reads, under the exact key ragqual will look up. Its __reduce__ would create a
file; the file must not appear.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import diskcache
import numpy as np
import pytest

from ragqual.adapters.cache import ResponseCache
from ragqual.adapters.embedders import CachedEmbedder
from ragqual.adapters.llm import ChatResponse
from ragqual.adapters.search_cache import SearchCache


class Planted:
    """Unpickling this creates `path`: the proof that a load ran code."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def plant(folder: Path, key: str, marker: Path) -> None:
    with diskcache.Cache(str(folder)) as attacker:  # the default Disk pickles
        attacker.set(key, Planted(marker))
    assert not marker.exists()


ANSWER = ChatResponse(text="fresh", raw={"message": {"content": "fresh"}})


def test_a_planted_pickle_in_the_response_cache_is_a_miss_and_never_runs(tmp_path):
    marker, key = tmp_path / "pwned", "k" * 64
    plant(tmp_path / "responses", key, marker)
    cache = ResponseCache.at(tmp_path / "responses")
    response, hit = cache.get_or_call(key, lambda: ANSWER)
    assert (response.text, hit) == ("fresh", False)
    assert not marker.exists()
    again, hit = cache.get_or_call(key, lambda: pytest.fail("the fresh answer was not stored"))
    assert (again, hit) == (ANSWER, True)
    with pytest.warns(RuntimeWarning, match="1 response-cache entry .* ignored .*pickle"):
        cache.close()


def test_a_planted_pickle_in_the_search_cache_is_a_miss_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    key = SearchCache.key("bm25", scope="s", query="q", k=5)
    plant(tmp_path / "search", key, marker)
    cache = SearchCache(tmp_path / "search")
    assert cache.get(key, lambda v: True) is None
    assert not marker.exists()
    cache.put(key, [("a#0", 1.5)])
    assert cache.get(key, lambda v: True) == [("a#0", 1.5)]
    with pytest.warns(RuntimeWarning, match="1 search-cache entry .* unreadable .*pickle"):
        cache.close()


class Fixed:
    id, dim = "fixed", 3

    def embed(self, texts):
        return np.ones((len(texts), 3), dtype=np.float32)


def test_a_planted_pickle_in_the_embedding_cache_is_a_miss_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    embedder = CachedEmbedder(Fixed(), tmp_path / "emb")
    key = embedder.key("hello")
    embedder.close()
    plant(tmp_path / "emb", key, marker)
    with pytest.warns(RuntimeWarning, match="1 embedding-cache entry .* unreadable .*pickle"):
        with CachedEmbedder(Fixed(), tmp_path / "emb") as embedder:
            vectors = embedder.embed(["hello"])
    assert vectors.tolist() == [[1.0, 1.0, 1.0]]
    assert not marker.exists()


def test_an_entry_written_with_pickle_by_an_older_version_is_a_miss_not_an_error(tmp_path):
    key = "a" * 64
    with diskcache.Cache(str(tmp_path / "old")) as old:
        old.set(key, {"v": 1, "response": {"text": "old", "raw": {}, "prompt_tokens": None,
                                            "completion_tokens": None, "latency_ms": None, "load_ms": None,
                                            "cost": None}})
    cache = ResponseCache.at(tmp_path / "old")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        response, hit = cache.get_or_call(key, lambda: ANSWER)
        cache.close()
    assert (response.text, hit) == ("fresh", False)
    assert [str(w.message).split(" (")[0] for w in seen] == [
        f"1 response-cache entry in {tmp_path / 'old'} was unreadable or inconsistent and was ignored"]


def test_the_response_cache_writes_json_bytes(tmp_path):
    cache = ResponseCache.at(tmp_path / "c")
    cache.get_or_call("b" * 64, lambda: ANSWER)
    cache.close()
    with diskcache.Cache(str(tmp_path / "c")) as plain:
        stored = plain.get("b" * 64)
    assert isinstance(stored, bytes) and stored.startswith(b'{"response":')
