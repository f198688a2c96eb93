"""Cache folders opened ahead on a background thread (adapters.cache_opener) and taken over by the
corpus context: the same caches, opened once, nothing created or said that the foreground would
not have created or said, nothing left open."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from ragqual.adapters import cache_opener
from ragqual.adapters.cache import CacheNotes, open_data_cache
from ragqual.adapters.cache_opener import CacheOpener
from ragqual.adapters.search_cache import SearchCache
from ragqual.app.context import AppContext
from ragqual.app.corpus import EMBEDDINGS_FOLDER, SEARCH_FOLDER, CorpusContext
from ragqual.config import Settings
from ragqual.pipeline.chunking import ChunkConfig


def _existing_cache(folder: Path, **entries: bytes) -> Path:
    cache = open_data_cache(folder)
    for key, value in entries.items():
        cache.set(key, value)
    cache.close()
    return folder


@pytest.fixture
def opened_on(monkeypatch) -> list[tuple[Path, str]]:
    """Every folder the opener opens, with the name of the thread that opened it."""
    seen: list[tuple[Path, str]] = []

    def recording(folder, **settings):
        seen.append((Path(folder), threading.current_thread().name))
        return open_data_cache(folder, **settings)

    monkeypatch.setattr(cache_opener, "open_data_cache", recording)
    return seen


def test_an_existing_cache_is_opened_on_the_thread_and_handed_over_once(tmp_path, opened_on):
    folder = _existing_cache(tmp_path / "search", k=b"v")
    missing = tmp_path / "never"
    opener = CacheOpener([folder, missing])
    cache = opener.take(folder)
    assert cache is not None and cache.get("k") == b"v"  # read from this thread: its own connection
    assert opened_on == [(folder, "ragqual-cache-open")]
    assert opener.take(folder) is None  # handed over once
    assert opener.take(missing) is None and not missing.exists()  # a folder without a cache is not created
    cache.close()
    opener.close()


def test_a_failure_in_the_background_is_silent_and_left_to_the_foreground(tmp_path, monkeypatch):
    folder = _existing_cache(tmp_path / "search")

    def failing(folder, **settings):
        raise OSError("disk on fire")

    monkeypatch.setattr(cache_opener, "open_data_cache", failing)
    opener = CacheOpener([folder])
    assert opener.take(folder) is None
    said: list[str] = []
    search = SearchCache(folder, notes=CacheNotes(said.append), opened=opener.take(folder))
    assert search.cache is not None and said == []  # opened again by its owner, as without the opener
    search.close()


def test_what_nobody_took_is_closed_with_no_log_left(tmp_path, opened_on):
    folder = _existing_cache(tmp_path / "search")
    opener = CacheOpener([folder])
    opener.close()
    assert opened_on == [(folder, "ragqual-cache-open")]
    assert sorted(p.name for p in folder.iterdir()) == ["cache.db"]


class _Ones:
    id, dim = "ones", 3

    def embed(self, texts):
        return np.ones((len(texts), 3), dtype=np.float32)


def _corpus(root: Path, cache_mode: str = "auto") -> CorpusContext:
    app = AppContext(Settings(root, {"results": "eval-results"}), None, cache_mode, 0, False, notify=lambda m: None)
    corpus = CorpusContext(app, root / "corpus", root / "goldens", [], [], ChunkConfig(), "minilm", "kb", None,
                           root / "eval-results" / "qdrant-edge", engine="edge")
    corpus._open["raw_embedder"] = _Ones()
    return corpus


def test_the_corpus_takes_over_both_caches_opened_ahead_and_closes_them(tmp_path, monkeypatch, opened_on):
    monkeypatch.delenv("RAGQUAL_CACHE_DIR", raising=False)
    cache_dir = tmp_path / "eval-results" / "cache"
    search_folder = _existing_cache(cache_dir / SEARCH_FOLDER)
    embeddings_folder = _existing_cache(cache_dir / EMBEDDINGS_FOLDER)
    corpus = _corpus(tmp_path)
    corpus.open_caches_ahead()
    corpus.open_caches_ahead()  # once is enough
    search, embedder = corpus.search_cache(), corpus.embedder
    assert sorted(opened_on) == sorted([(search_folder, "ragqual-cache-open"), (embeddings_folder, "ragqual-cache-open")])
    assert search is not None and search.cache is not None
    search.put("k", [1, 2])
    assert search.get("k", lambda v: True) == [1, 2]
    assert embedder.embed(["a"]).tolist() == [[1.0, 1.0, 1.0]]
    corpus.close()
    for folder in (search_folder, embeddings_folder):
        assert sorted(p.name for p in folder.iterdir()) == ["cache.db"]  # every connection closed
    again = _corpus(tmp_path)
    assert again.search_cache().get("k", lambda v: True) == [1, 2]
    assert again.embedder.embed(["a"]).tolist() == [[1.0, 1.0, 1.0]] and again.embedder.hits == 1
    again.close()


def test_nothing_is_opened_ahead_with_the_cache_off_or_without_caches(tmp_path, monkeypatch, opened_on):
    monkeypatch.delenv("RAGQUAL_CACHE_DIR", raising=False)
    _corpus(tmp_path).open_caches_ahead()
    _existing_cache(tmp_path / "eval-results" / "cache" / SEARCH_FOLDER)
    off = _corpus(tmp_path, cache_mode="off")
    off.open_caches_ahead()
    off.close()
    assert opened_on == []
    assert not (tmp_path / "eval-results" / "cache" / EMBEDDINGS_FOLDER).exists()
