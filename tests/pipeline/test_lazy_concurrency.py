"""Lazily built shared objects under --max-concurrency: the BM25 index and the RAG subject's retriever.

The interleaving is forced: the first builder is held inside the build (an Event) while a second
thread asks for the same object. Before the fix the second thread got a half-built BM25 object
(`AttributeError: 'BM25' object has no attribute 'scores'`) or built a second retriever.
"""

from __future__ import annotations

import threading
from pathlib import Path

import bm25s
import numpy as np
import pytest

from ragqual.pipeline.chunking import Chunk, ChunkConfig
from ragqual.pipeline.retrieval import RetrievalConfig, Retriever
from ragqual.subjects.rag import RagSubject

TEXTS = ["boil water for one minute", "bleach two drops per litre", "store water in clean containers",
         "filter cloudy water first", "pressure canning needs a gauge"]
HELD = 10.0  # an upper bound on waiting for the other thread, never reached when the code is right


class NoDense:
    def search(self, vector, limit, score_threshold=None):
        return []

    def search_batch(self, vectors, limit):
        return [[] for _ in vectors]


class ZeroEmbedder:
    def embed(self, texts):
        return np.zeros((len(texts), 4), dtype=np.float32)


def retriever(tmp_path: Path) -> Retriever:
    chunks = [Chunk(f"d{i}#0", f"d{i}", 0, t, 0, len(t)) for i, t in enumerate(TEXTS)]
    return Retriever(chunks, np.zeros((len(chunks), 4), dtype=np.float32), NoDense(), ZeroEmbedder(),
                     ChunkConfig(), tmp_path)


def run_in_thread(fn) -> tuple[threading.Thread, list]:
    outcome: list = []

    def body() -> None:
        try:
            outcome.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            outcome.append(("error", exc))

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, outcome


def test_a_second_query_waits_for_the_bm25_index_being_built(tmp_path, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    real_index = bm25s.BM25.index

    def slow_index(self, *args, **kwargs):
        entered.set()
        release.wait(HELD)
        return real_index(self, *args, **kwargs)

    monkeypatch.setattr(bm25s.BM25, "index", slow_index)
    r = retriever(tmp_path)
    config = RetrievalConfig(strategy="bm25", rerank=False)
    first, first_out = run_in_thread(lambda: r.retrieve("boil water", config))
    assert entered.wait(HELD)
    second, second_out = run_in_thread(lambda: r.retrieve("bleach drops", config))
    second.join(1.0)  # with the fix it is waiting for the index; without, it has already failed
    release.set()
    first.join(HELD)
    second.join(HELD)
    assert [kind for kind, _ in first_out + second_out] == ["ok", "ok"], first_out + second_out
    assert first_out[0][1].candidates[0].chunk_id == "d0#0"
    assert second_out[0][1].candidates[0].chunk_id == "d1#0"


def test_the_rag_subject_builds_its_retriever_once_for_concurrent_trials(tmp_path):
    entered, release = threading.Event(), threading.Event()
    built: list[Retriever] = []

    def factory() -> Retriever:
        entered.set()
        release.wait(HELD)
        built.append(retriever(tmp_path))
        return built[-1]

    subject = RagSubject([], [], retriever=factory)
    first, first_out = run_in_thread(subject.retriever)
    assert entered.wait(HELD)
    second, second_out = run_in_thread(subject.retriever)
    second.join(1.0)
    release.set()
    first.join(HELD)
    second.join(HELD)
    assert len(built) == 1
    assert [v for _, v in first_out] == [v for _, v in second_out] == built


@pytest.mark.parametrize("workers", [4])
def test_many_threads_retrieving_at_once_agree_with_one_thread(tmp_path, workers):
    config = RetrievalConfig(strategy="hybrid")
    expected = [retriever(tmp_path).retrieve(t, config).candidates for t in TEXTS]
    shared = retriever(tmp_path)
    barrier = threading.Barrier(workers)
    results: dict[int, list] = {}

    def work(n: int) -> None:
        barrier.wait()
        results[n] = [shared.retrieve(t, config).candidates for t in TEXTS]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HELD)
    assert [results[n] for n in range(workers)] == [expected] * workers
