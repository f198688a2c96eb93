"""Ingest, reset and search never touch the user's points; the leak guard stops foreign eval points.

Runs against qdrant-client's embedded mode on disk, with a small deterministic
bag-of-words embedder so the file stays fast; the real embedder is exercised by the
CLI tests and the benchmark.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from qdrant_client.http import models

from ragqual.adapters.files import read_corpus_dir
from ragqual.adapters.qdrant_store import EVAL_TAG, TAG_KEY, EvalIndex, Hit, open_qdrant, point_id
from ragqual.core.fingerprint import corpus_fingerprint
from ragqual.errors import InputError, LeakDetected
from ragqual.pipeline.chunking import ChunkConfig, chunk_document, embed_text_for_query
from ragqual.pipeline.ingest import ingest, ingest_if_changed, source_paths
from ragqual.pipeline.leak_guard import check_hits

DIM = 32
COLLECTION = "team_kb"
USER_POINTS = 1000


class HashEmbedder:
    """Bag of hashed words, L2-normalised: similar texts get similar vectors, with no model."""

    id = "test-hash-bow:32"
    dim = DIM

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[row, hashlib.sha256(word.encode()).digest()[0] % DIM] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class BrokenEmbedder(HashEmbedder):
    def embed(self, texts):
        raise RuntimeError("model server went away")


DOCUMENTS = {
    "water-boiling": "# Boiling water\n\nBring water to a rolling boil for one minute to make it safe to drink. "
                     "Above 2,000 metres boil for three minutes. Let it cool in a covered pot.\n\n" * 6,
    "bleach": "# Bleach dosing\n\nUse plain unscented household bleach. Add two drops per litre of clear water "
              "and wait thirty minutes before drinking.\n",
    "radio": "# Radio\n\nChannel 16 on marine VHF is for distress calls. Keep messages short and clear.\n",
    "canning": "# Canning\n\nLow-acid vegetables need a pressure canner, never a water bath.\n",
}
CONFIG = ChunkConfig(chunk_tokens=40, overlap_tokens=8, doc_prefix="passage: ", query_prefix="query: ")


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for doc_id, text in DOCUMENTS.items():
        (folder / f"{doc_id}.md").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def documents(corpus_dir):
    return read_corpus_dir(corpus_dir)


@pytest.fixture
def client(tmp_path):
    c = open_qdrant(tmp_path / "qdrant", None)
    yield c
    c.close()


@pytest.fixture
def memory_client():
    c = open_qdrant(":memory:", None)
    yield c
    c.close()


def fill_user_collection(client, n: int = USER_POINTS) -> None:
    """`n` points of someone's knowledge base, baited with what a sloppy filter would catch."""
    rng = np.random.default_rng(20240611)
    client.create_collection(COLLECTION, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    points = []
    for i in range(n):
        doc = list(DOCUMENTS)[i % len(DOCUMENTS)]  # same ids and file names as the corpus
        payload = {
            TAG_KEY: ["handbook", "faq", "__ragqual_eval", "ragqual_eval"][i % 4],
            "doc_id": doc,
            "source": f"/srv/kb/{doc}.md",
            "text": f"user paragraph {i}",
            "nested": {"rank": i, "tags": ["a", "b"][: i % 3]},
        }
        points.append(models.PointStruct(id=i + 1, vector=vectors[i].tolist(), payload=payload))
    for start in range(0, n, 250):
        client.upsert(COLLECTION, points=points[start : start + 250])


def snapshot(client) -> dict[str, tuple[dict, np.ndarray]]:
    """Every non-eval point: id -> (payload, vector)."""
    out = {}
    offset = None
    while True:
        page, offset = client.scroll(COLLECTION, limit=300, offset=offset, with_payload=True, with_vectors=True)
        for p in page:
            if (p.payload or {}).get(TAG_KEY) != EVAL_TAG:
                out[str(p.id)] = (p.payload, np.asarray(p.vector, dtype=np.float32))
        if offset is None:
            return out


def assert_same_points(after, before) -> None:
    """Same ids and payloads exactly; same vector directions up to float32 rounding.

    qdrant-client's local mode stores a cosine vector as given but serves it unit-normalised
    after an upsert, raw again after reopening the folder, and re-normalises its in-memory
    copy in place on every search (a Qdrant server stores the unit vector once). So vectors
    are compared as directions; 1e-6 is ten times float32 rounding and far below any real
    change of a vector.
    """
    assert after.keys() == before.keys()
    for point_id, (payload, vector) in before.items():
        assert after[point_id][0] == payload, point_id
        np.testing.assert_allclose(direction(after[point_id][1]), direction(vector), rtol=0, atol=1e-6, err_msg=point_id)


def direction(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def expected_chunk_counts(documents) -> dict[str, int]:
    return {d.doc_id: len(chunk_document(d, CONFIG)) for d in documents}


def queries_for(documents) -> list[str]:
    return ["how long to boil water at altitude", "drops of bleach per litre", "distress channel", "pressure canner"]


def test_user_points_are_unchanged_by_ingest_search_and_reset(memory_client, documents, corpus_dir):
    client = memory_client
    fill_user_collection(client)
    before = snapshot(client)
    assert len(before) == USER_POINTS
    embedder = HashEmbedder()
    index = EvalIndex(client, COLLECTION, DIM)

    report = ingest(documents, CONFIG, embedder, index, corpus_dir, progress=False)
    counts = expected_chunk_counts(documents)
    assert report.chunks_per_document == counts
    assert counts["water-boiling"] > 1  # the long document really splits
    assert index.count() == sum(counts.values())
    assert report.fingerprint == corpus_fingerprint(documents, CONFIG.as_dict(), embedder.id)

    eval_ids = {c.chunk_id for c in index.all_chunks()}
    for query in queries_for(documents):
        vector = embedder.embed([embed_text_for_query(query, CONFIG)])[0]
        # the query's exact twin among the user's points must not be found
        bait = models.PointStruct(id=USER_POINTS + 1, vector=vector.tolist(), payload={"bait": query})
        client.upsert(COLLECTION, points=[bait])
        before[str(bait.id)] = (bait.payload, vector)
        hits = index.search(vector, limit=50)
        assert hits and {h.chunk_id for h in hits} <= eval_ids
        assert len(hits) == len(eval_ids)  # everything the filter lets through is ours, and nothing more
        check_hits(hits, corpus_dir)

    ingest(documents, CONFIG, embedder, index, corpus_dir, progress=False)  # a rebuild does not duplicate
    assert index.count() == sum(counts.values())
    assert_same_points(snapshot(client), before)

    assert index.reset() == sum(counts.values())
    assert index.count() == 0
    assert_same_points(snapshot(client), before)


def test_user_points_on_disk_survive_ingest_reopen_and_reset(tmp_path, documents, corpus_dir):
    folder = tmp_path / "stored"
    client = open_qdrant(folder, None)
    fill_user_collection(client, 60)
    before = snapshot(client)
    ingest(documents, CONFIG, HashEmbedder(), EvalIndex(client, COLLECTION, DIM), corpus_dir, progress=False)
    client.close()

    client = open_qdrant(folder, None)
    try:
        index = EvalIndex(client, COLLECTION, DIM)
        assert index.count() == sum(expected_chunk_counts(documents).values())
        assert index.reset() > 0
        assert_same_points(snapshot(client), before)
    finally:
        client.close()


def test_the_top_search_result_is_the_right_document(client, documents, corpus_dir):
    embedder = HashEmbedder()
    index = EvalIndex(client, COLLECTION, DIM)
    ingest(documents, CONFIG, embedder, index, corpus_dir, progress=False)
    vector = embedder.embed([embed_text_for_query("pressure canner for low-acid vegetables", CONFIG)])[0]
    assert index.search(vector, limit=1)[0].doc_id == "canning"


def test_stored_sources_are_the_absolute_paths_of_the_corpus_files(client, documents, corpus_dir):
    index = EvalIndex(client, COLLECTION, DIM)
    ingest(documents, CONFIG, HashEmbedder(), index, corpus_dir, progress=False)
    for stored in index.all_chunks():
        assert stored.source == str(corpus_dir.resolve() / f"{stored.doc_id}.md")
        assert stored.text in DOCUMENTS[stored.doc_id]


def plant(client, chunk_id: str, doc_id: str, source: str, vector: np.ndarray) -> None:
    payload = {TAG_KEY: EVAL_TAG, "doc_id": doc_id, "chunk_id": chunk_id, "index": 0, "text": "planted", "source": source}
    client.upsert(COLLECTION, points=[models.PointStruct(id=point_id(chunk_id), vector=vector.tolist(), payload=payload)])


def test_a_planted_eval_point_from_outside_the_corpus_trips_the_leak_guard(client, documents, corpus_dir, tmp_path):
    embedder = HashEmbedder()
    index = EvalIndex(client, COLLECTION, DIM)
    ingest(documents, CONFIG, embedder, index, corpus_dir, progress=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "faq.md").write_text("# FAQ\n\nBoil water.\n", encoding="utf-8")
    vector = embedder.embed([embed_text_for_query("boil water", CONFIG)])[0]
    plant(client, "faq#0", "faq", str(elsewhere / "faq.md"), vector)

    hits = index.search(vector, limit=5)

    assert hits[0].chunk_id == "faq#0"  # the filter alone lets it through
    with pytest.raises(LeakDetected, match=r"chunk 'faq#0' comes from .*elsewhere/faq\.md") as caught:
        check_hits(hits, corpus_dir)
    assert caught.value.exit_code == 1
    check_hits(hits[1:], corpus_dir)  # the genuine hits pass


@pytest.mark.parametrize("make_source, doc_id, reason", [
    (lambda corpus, tmp: "", "faq", "has no source"),
    (lambda corpus, tmp: str(corpus / "faq.md"), "faq", "not a document"),  # no such file
    (lambda corpus, tmp: str(corpus / "sub" / "bleach.md"), "bleach", "not a document"),  # below, not in
    (lambda corpus, tmp: str(corpus / ".." / "outside" / "bleach.md"), "bleach", "not a document"),
    (lambda corpus, tmp: str(corpus / "link.md"), "link", "not a document"),  # symlink leaving the corpus
    (lambda corpus, tmp: str(corpus / "radio.md"), "bleach", "claims document 'bleach'"),
])
def test_the_leak_guard_judges_resolved_paths_not_names(corpus_dir, tmp_path, make_source, doc_id, reason):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bleach.md").write_text("x", encoding="utf-8")
    (corpus_dir / "sub").mkdir()
    (corpus_dir / "sub" / "bleach.md").write_text("x", encoding="utf-8")
    (corpus_dir / "link.md").symlink_to(outside / "bleach.md")
    hit = Hit(f"{doc_id}#0", doc_id, "text", 0.9, make_source(corpus_dir, tmp_path))
    with pytest.raises(LeakDetected, match=reason):
        check_hits([hit], corpus_dir)


def test_the_leak_guard_accepts_corpus_files_reached_by_another_spelling(corpus_dir):
    spelled = corpus_dir / ".." / corpus_dir.name / "radio.md"
    check_hits([Hit("radio#0", "radio", "t", 0.5, str(spelled))], corpus_dir)


def test_a_failing_embedder_leaves_the_previous_ingest_in_place(client, documents, corpus_dir):
    index = EvalIndex(client, COLLECTION, DIM)
    first = ingest(documents, CONFIG, HashEmbedder(), index, corpus_dir, progress=False)
    with pytest.raises(RuntimeError, match="went away"):
        ingest(documents, ChunkConfig(chunk_tokens=30, overlap_tokens=4), BrokenEmbedder(), index, corpus_dir, progress=False)
    assert index.count() == first.total_chunks
    assert index.manifest().fingerprint == first.fingerprint


def test_ingest_if_changed_skips_a_current_index_and_rebuilds_a_changed_one(client, documents, corpus_dir):
    embedder = HashEmbedder()
    index = EvalIndex(client, COLLECTION, DIM)
    assert ingest_if_changed(documents, CONFIG, embedder, index, corpus_dir, progress=False) is not None
    calls = embedder.calls
    assert ingest_if_changed(documents, CONFIG, embedder, index, corpus_dir, progress=False) is None
    assert embedder.calls == calls  # nothing embedded

    smaller = ChunkConfig(chunk_tokens=25, overlap_tokens=5)
    report = ingest_if_changed(documents, smaller, embedder, index, corpus_dir, progress=False)
    assert report is not None and report.total_chunks == index.count() > sum(expected_chunk_counts(documents).values())
    assert index.manifest().fingerprint == report.fingerprint != corpus_fingerprint(documents, CONFIG.as_dict(), embedder.id)

    client.delete(COLLECTION, points_selector=models.PointIdsList(points=[point_id("bleach#0")]))
    assert ingest_if_changed(documents, smaller, embedder, index, corpus_dir, progress=False) is not None  # incomplete


def test_ingest_refuses_documents_that_are_not_in_the_corpus_folder(client, documents, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(InputError, match="not files directly inside"):
        ingest(documents, CONFIG, HashEmbedder(), EvalIndex(client, COLLECTION, DIM), other, progress=False)
    assert not client.collection_exists(COLLECTION)


def test_source_paths_are_absolute(documents, corpus_dir, monkeypatch):
    monkeypatch.chdir(corpus_dir.parent)
    paths = source_paths(documents, Path("corpus"))
    assert paths["radio"] == str(corpus_dir.resolve() / "radio.md")


def test_a_collection_of_another_size_fails_before_any_embedding(client, documents, corpus_dir):
    client.create_collection(COLLECTION, vectors_config=models.VectorParams(size=DIM * 2, distance=models.Distance.COSINE))
    embedder = HashEmbedder()
    with pytest.raises(InputError, match="64-dimensional"):
        ingest(documents, CONFIG, embedder, EvalIndex(client, COLLECTION, DIM), corpus_dir, progress=False)
    assert embedder.calls == 0


def test_the_report_counts_chunks_per_document(client, documents, corpus_dir):
    report = ingest(documents, CONFIG, HashEmbedder(), EvalIndex(client, COLLECTION, DIM), corpus_dir, progress=False)
    stored = Counter(c.doc_id for c in EvalIndex(client, COLLECTION, DIM).all_chunks())
    assert dict(stored) == report.chunks_per_document
    assert report.to_dict()["chunks"] == sum(stored.values())
    assert report.documents == len(DOCUMENTS)
