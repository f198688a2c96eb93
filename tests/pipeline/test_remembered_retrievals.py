"""Whole retrievals remembered in the search cache: a warm run reads each ranking back instead of
searching, only while everything the ranking depends on is unchanged, and the leak guard still
checks every remembered hit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragqual.adapters.search_cache import CachedHit, SearchCache
from ragqual.errors import LeakDetected
from ragqual.pipeline import retrieval
from ragqual.pipeline.chunking import Chunk, ChunkConfig
from ragqual.pipeline.retrieval import RetrievalConfig, Retriever

TEXTS = ["boil water for one minute", "bleach two drops per litre", "store water in clean containers",
         "filter cloudy water first", "pressure canning needs a gauge", "water tanks need a lid"]
QUERIES = ["how long to boil water", "bleach per litre of water", "what needs a gauge"]


class CountingIndex:
    """A dense index double: dot products over fixed vectors, hits sourced from the corpus files."""

    def __init__(self, vectors: np.ndarray, corpus: Path):
        self.vectors, self.corpus, self.searches = vectors, corpus, 0

    def search_batch(self, queries, limit):
        self.searches += len(queries)
        return [self._hits(q, limit) for q in queries]

    def search(self, vector, limit, score_threshold=None):
        self.searches += 1
        return self._hits(np.asarray(vector), limit)

    def _hits(self, query, limit):
        scored = sorted(((round(float(v @ query), 6), i) for i, v in enumerate(self.vectors)), key=lambda t: (-t[0], t[1]))
        return [CachedHit(f"d{i}#0", f"d{i}", s, str(self.corpus / f"d{i}.md")) for s, i in scored[:limit]]


class HashEmbedder:
    """Deterministic vectors from the words of a text (enough for a ranking to exist)."""

    def embed(self, texts):
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word)) % 16] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i, text in enumerate(TEXTS):
        (folder / f"d{i}.md").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def memo(tmp_path: Path):
    cache = SearchCache(tmp_path / "search")
    yield cache
    cache.close()


def build(corpus: Path, memo, scope: str | None = "state-1", texts=TEXTS) -> tuple[Retriever, CountingIndex]:
    chunks = [Chunk(f"d{i}#0", f"d{i}", 0, t, 0, len(t)) for i, t in enumerate(texts)]
    embedder = HashEmbedder()
    vectors = embedder.embed(list(texts))
    index = CountingIndex(vectors, corpus)
    return Retriever(chunks, vectors, index, embedder, ChunkConfig(), corpus, memo=memo, result_scope=scope), index


def remembered_once(corpus: Path, memo) -> str:
    """Retrieve the first question once (so it is remembered) and return its entry's key."""
    first, _ = build(corpus, memo)
    first.retrieve(QUERIES[0], CONFIGS[0])
    return first._result_key(QUERIES[0], CONFIGS[0])


CONFIGS = [RetrievalConfig(strategy=s, candidate_k=4, context_k=2, rerank=False) for s in ("dense", "bm25", "hybrid")]


def run(retriever: Retriever) -> list:
    retriever.prefetch(QUERIES, CONFIGS)
    return [retriever.retrieve(q, c) for c in CONFIGS for q in QUERIES]


def same(a, b) -> bool:
    return [(r.query, r.candidates, r.context) for r in a] == [(r.query, r.candidates, r.context) for r in b]


def test_a_second_run_reads_every_retrieval_back_and_searches_nothing(corpus, memo, monkeypatch):
    first, index = build(corpus, memo)
    cold = run(first)
    assert index.searches > 0 and first.recalled == 0
    second, index2 = build(corpus, memo)
    monkeypatch.setattr(Retriever, "_bm25_search", lambda *a: pytest.fail("BM25 searched on a warm run"))
    warm = run(second)
    assert index2.searches == 0 and second.recalled == len(QUERIES) * len(CONFIGS)
    assert same(cold, warm)
    assert [r.context_text() for r in warm] == [r.context_text() for r in cold]


def test_another_scope_query_or_configuration_is_searched_again(corpus, memo):
    run(build(corpus, memo)[0])
    other_state, index = build(corpus, memo, scope="state-2")
    run(other_state)
    assert other_state.recalled == 0 and index.searches > 0
    again, _ = build(corpus, memo)
    again.retrieve("a question never asked", CONFIGS[0])
    again.retrieve(QUERIES[0], CONFIGS[0].with_(context_k=3))
    assert again.recalled == 0


def test_edited_ranking_code_is_searched_again(corpus, memo, monkeypatch):
    run(build(corpus, memo)[0])
    monkeypatch.setattr(retrieval, "ranking_code", lambda: "another version of the ranking code")
    edited, index = build(corpus, memo)
    run(edited)
    assert edited.recalled == 0 and index.searches > 0


def test_without_a_scope_nothing_is_remembered(corpus, memo):
    run(build(corpus, memo, scope=None)[0])
    again, index = build(corpus, memo, scope=None)
    run(again)
    assert again.recalled == 0 and index.searches > 0


def test_another_corpus_under_the_same_index_scope_is_searched_again(corpus, memo):
    run(build(corpus, memo)[0])
    fewer, index = build(corpus, memo, texts=TEXTS[:3])  # BM25's inputs are part of the key
    fewer.retrieve(QUERIES[2], CONFIGS[1])
    assert fewer.recalled == 0


def test_a_remembered_chunk_the_corpus_does_not_hold_is_searched_again(corpus, memo):
    key = remembered_once(corpus, memo)
    planted = memo.get(key, lambda v: True)
    planted["ids"] = "\x00".join(["not-in-this-corpus#0", *planted["ids"].split("\x00")[1:]])
    memo.put(key, planted)
    second, index = build(corpus, memo)
    got = second.retrieve(QUERIES[0], CONFIGS[0])
    assert second.recalled == 0 and index.searches == 1
    assert "not-in-this-corpus#0" not in {r.chunk_id for r in got.candidates}


def test_the_same_corpus_in_another_folder_is_searched_again_and_the_leak_guard_sees_it(corpus, memo, tmp_path):
    # The index's points still name files in the old folder: a remembered ranking must not hide that.
    first, _ = build(corpus, memo)
    first.retrieve(QUERIES[0], CONFIGS[0])
    moved = tmp_path / "moved"
    moved.mkdir()
    for path in corpus.iterdir():
        (moved / path.name).write_bytes(path.read_bytes())
    chunks = [Chunk(f"d{i}#0", f"d{i}", 0, t, 0, len(t)) for i, t in enumerate(TEXTS)]
    embedder = HashEmbedder()
    vectors = embedder.embed(TEXTS)
    elsewhere = Retriever(chunks, vectors, CountingIndex(vectors, corpus), embedder, ChunkConfig(), moved,
                          memo=memo, result_scope="state-1")
    with pytest.raises(LeakDetected, match="not a document in"):
        elsewhere.retrieve(QUERIES[0], CONFIGS[0])
    assert elsewhere.recalled == 0


def test_a_damaged_entry_is_a_counted_miss(corpus, memo):
    key = remembered_once(corpus, memo)
    memo.put(key, {"query": QUERIES[0], "ids": ["d0#0"], "scores": [], "similarities": [], "sources": []})
    second, index = build(corpus, memo)
    got = second.retrieve(QUERIES[0], CONFIGS[0])
    assert second.recalled == 0 and index.searches == 1 and len(got.candidates) == 4
    assert memo.notes.count("search-cache", memo.directory) == 1
    with pytest.warns(RuntimeWarning, match="1 search-cache entry .* unexpected shape"):
        memo.close()


@pytest.mark.parametrize("damage", [
    {"depth": 5},                    # more candidates claimed than stored
    {"scores": "not base64!"},
    {"similarities": "AAAA"},        # three bytes, not eight per candidate
    {"ids": "d0#0"},                 # fewer ids than the depth
])
def test_a_packed_entry_that_does_not_add_up_is_searched_again(corpus, memo, damage):
    key = remembered_once(corpus, memo)
    memo.put(key, {**memo.get(key, lambda v: True), **damage})
    second, index = build(corpus, memo)
    assert len(second.retrieve(QUERIES[0], CONFIGS[0]).candidates) == 4
    assert second.recalled == 0 and index.searches == 1


def test_packing_keeps_every_field_exactly():
    ranking = retrieval.Ranking(("a#0", "b#1"), ("a", "b"), (0.1 + 0.2, -2.5e-300), (1 / 3, 0.0), ("/c/a.md", ""))
    ids, sources, scores, similarities = retrieval._unpack(retrieval._pack("q", ranking))
    assert (tuple(ids), ranking.doc_ids, tuple(scores), tuple(similarities), tuple(sources)) == ranking
    empty = retrieval.Ranking((), (), (), (), ())
    assert retrieval._unpack(retrieval._pack("q", empty)) == ((), (), (), ())
    assert retrieval._pack("q", retrieval.Ranking(("a\x00b#0",), ("a",), (1.0,), (1.0,), ("",))) is None


def test_a_changed_glossary_is_searched_again_and_expands_the_question(corpus, memo):
    """The glossary's digest is part of the configuration and so of the remembered ranking's key:
    an edited glossary file never reads back a ranking searched with the old expansions."""
    from ragqual.core.glossary import parse_glossary

    old = parse_glossary("UV = ultraviolet\n", "g.txt")
    new = parse_glossary("UV = ultraviolet light\n", "g.txt")
    question = "does UV clean water"

    def retrieve(glossary):
        chunks = [Chunk(f"d{i}#0", f"d{i}", 0, t, 0, len(t)) for i, t in enumerate(TEXTS)]
        embedder = HashEmbedder()
        vectors = embedder.embed(list(TEXTS))
        index = CountingIndex(vectors, corpus)
        retriever = Retriever(chunks, vectors, index, embedder, ChunkConfig(), corpus, memo=memo,
                              result_scope="state-1", glossary=glossary)
        return retriever.retrieve(question, CONFIGS[0].with_glossary(glossary)), index, retriever

    first, index, _ = retrieve(old)
    assert first.query == "does UV clean water (UV: ultraviolet)" and index.searches == 1
    again, index, warm = retrieve(old)
    assert index.searches == 0 and warm.recalled == 1 and again.query == first.query
    edited, index, _ = retrieve(new)
    assert index.searches == 1 and edited.query == "does UV clean water (UV: ultraviolet light)"
    plain, index, _ = retrieve(None)
    assert plain.query == question and index.searches == 1


def test_a_configuration_recorded_with_another_glossary_is_refused():
    from ragqual.core.glossary import parse_glossary
    from ragqual.errors import InputError

    recorded = RetrievalConfig().with_glossary(parse_glossary("UV = ultraviolet\n", "g.txt"))
    assert recorded.as_dict()["glossary"] == parse_glossary("UV = ultraviolet\n", "x.txt").digest
    with pytest.raises(InputError, match="the glossary has changed"):
        recorded.with_glossary(parse_glossary("UV = ultra violet\n", "g.txt"))
    assert RetrievalConfig().with_glossary(None).as_dict()["expand_acronyms"] is False


def test_a_remembered_rankings_key_is_the_search_caches_key_with_one_keyer_per_configuration(corpus, memo, monkeypatch):
    made = []
    real = SearchCache.keyer
    monkeypatch.setattr(SearchCache, "keyer", staticmethod(lambda *a, **k: made.append(k["config"]) or real(*a, **k)))
    retriever, _ = build(corpus, memo)
    questions = [*QUERIES, "naïve \"quoted\" question", ""]
    for _ in range(2):
        for config in CONFIGS:
            for question in questions:
                assert retriever._result_key(question, config) == memo.key(
                    "ranking", scope=retriever._result_scope, config=config.as_dict(), query=question)
    assert made == [c.as_dict() for c in CONFIGS]


def test_a_ranking_alone_is_the_retrievals_ranking_and_builds_no_context(corpus, memo, monkeypatch):
    cold = run(build(corpus, memo)[0])
    warm, index = build(corpus, memo)
    monkeypatch.setattr(Retriever, "_retrieval", lambda *a: pytest.fail("a context was built for a ranking"))
    rankings = [warm.ranking(q, c) for c in CONFIGS for q in QUERIES]
    assert index.searches == 0 and warm.recalled == len(rankings)
    assert rankings == [r.ranking for r in cold]
    searched, _ = build(corpus, memo, scope=None)  # nothing remembered: searched
    assert [searched.ranking(q, c) for c in CONFIGS for q in QUERIES] == rankings


def test_remembered_numbers_read_back_bit_for_bit():
    import struct

    numbers = (0.1 + 0.2, -0.0, 5e-324, -1.7976931348623157e308, float("inf"), float("-inf"), float("nan"), 1 / 3)
    back = retrieval._unpack_floats(retrieval._pack_floats(numbers), len(numbers))
    assert struct.pack(f"<{len(numbers)}d", *back) == struct.pack(f"<{len(numbers)}d", *numbers)
    assert all(type(x) is float for x in back)
    with pytest.raises(ValueError):
        retrieval._unpack_floats(retrieval._pack_floats(numbers), len(numbers) + 1)
