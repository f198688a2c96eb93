"""EvalIndex and open_qdrant against qdrant-client's real embedded mode (memory and on-disk)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client.http import models

from ragqual.adapters.qdrant_store import (
    EVAL_TAG,
    INGEST_KEY,
    OWNER_HASH_KEY,
    HOLDER_FILE,
    TAG_KEY,
    EvalIndex,
    Hit,
    is_intact,
    is_owned,
    owned_payload,
    owner_hash,
    default_wait_seconds,
    open_qdrant,
    point_id,
)
from ragqual.errors import ForeignPoints, InputError, ServiceUnavailable
from ragqual.pipeline.chunking import Chunk

DIM = 8
COLLECTION = "kb"


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


def chunk(doc_id: str, index: int, text: str = "") -> Chunk:
    body = text or f"text of {doc_id} part {index}"
    return Chunk(f"{doc_id}#{index}", doc_id, index, body, 0, len(body))


@pytest.fixture
def client():
    c = QdrantClient(":memory:")
    yield c
    c.close()


def add_user_points(client: QdrantClient, vectors: list[np.ndarray]) -> None:
    """Points as some other application would write them, including a `collection` key of its own."""
    if not client.collection_exists(COLLECTION):
        client.create_collection(COLLECTION, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    client.upsert(COLLECTION, points=[
        models.PointStruct(id=i + 1, vector=v.tolist(), payload={TAG_KEY: "handbook", "doc_id": "water-boiling", "n": i})
        for i, v in enumerate(vectors)
    ])


def user_ids(client: QdrantClient) -> set[str]:
    points, _ = client.scroll(COLLECTION, limit=10_000, with_payload=True)
    return {str(p.id) for p in points if (p.payload or {}).get(TAG_KEY) != EVAL_TAG}


def test_ensure_collection_creates_cosine_collection_with_keyword_index_on_the_tag(client, monkeypatch):
    calls = []
    real = client.create_payload_index

    def recording(*args, **kwargs):  # local mode accepts the index but does not report it back
        calls.append((args, kwargs.get("field_schema")))
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "create_payload_index", recording)
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    info = client.get_collection(COLLECTION)
    assert info.config.params.vectors.size == DIM
    assert info.config.params.vectors.distance == models.Distance.COSINE
    assert calls == [((COLLECTION, TAG_KEY), models.PayloadSchemaType.KEYWORD)]
    index.ensure_collection()  # a second call on an existing collection is fine


def test_existing_collection_with_another_vector_size_is_refused(client):
    client.create_collection(COLLECTION, vectors_config=models.VectorParams(size=DIM * 2, distance=models.Distance.COSINE))
    with pytest.raises(InputError, match=r"holds 16-dimensional vectors .* makes 8-dimensional"):
        EvalIndex(client, COLLECTION, DIM).ensure_collection()


@pytest.mark.parametrize("config, message", [
    ({"dense": models.VectorParams(size=DIM, distance=models.Distance.COSINE)}, "named vectors"),
    (models.VectorParams(size=DIM, distance=models.Distance.EUCLID), "Euclid distance"),
])
def test_existing_collection_of_another_shape_is_refused(client, config, message):
    client.create_collection(COLLECTION, vectors_config=config)
    with pytest.raises(InputError, match=message):
        EvalIndex(client, COLLECTION, DIM).ensure_collection()


def test_reset_deletes_only_eval_points(client):
    add_user_points(client, [unit(1, i) for i in range(1, 6)])
    before = user_ids(client)
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    chunks = [chunk("a", 0), chunk("a", 1), chunk("b", 0)]
    index.add(chunks, np.stack([unit(0, 1), unit(0, 0, 1), unit(0, 0, 0, 1)]), ["/c/a.md", "/c/a.md", "/c/b.md"])
    assert index.count() == 3
    assert index.count_all() == 8

    assert index.reset() == 3

    assert index.count() == 0
    assert user_ids(client) == before
    assert index.count_all() == 5


def test_reset_and_count_on_a_missing_collection_are_zero(client):
    index = EvalIndex(client, "nothing-here", None)
    assert index.reset() == 0
    assert index.count() == 0
    assert index.manifest() is None
    assert not client.collection_exists("nothing-here")


def test_add_writes_the_documented_payload_under_deterministic_ids(client):
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    index.add([chunk("a", 2, "hello")], unit(1)[None, :], ["/c/a.md"], fingerprint="f" * 64, embedder_id="fake:1")
    (record,) = client.retrieve(COLLECTION, ids=[point_id("a#2")], with_payload=True)
    ingest_id = record.payload[INGEST_KEY]
    written = {
        TAG_KEY: EVAL_TAG, "doc_id": "a", "chunk_id": "a#2", "index": 2, "text": "hello", "source": "/c/a.md",
        "fingerprint": "f" * 64, "embedder": "fake:1", "total_chunks": 1, INGEST_KEY: ingest_id,
    }
    assert len(ingest_id) == 32
    assert record.payload == {**written, OWNER_HASH_KEY: owner_hash(point_id("a#2"), written)}
    assert is_owned(record.id, record.payload)
    assert point_id("a#2") == point_id("a#2") != point_id("a#3")


def test_add_refuses_to_overwrite_a_point_without_the_eval_tag(client):
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    client.upsert(COLLECTION, points=[models.PointStruct(id=point_id("a#0"), vector=unit(1).tolist(), payload={"mine": 1})])
    with pytest.raises(InputError, match="without the eval tag"):
        index.add([chunk("a", 0), chunk("b", 0)], np.stack([unit(0, 1), unit(0, 0, 1)]), ["/c/a.md", "/c/b.md"])
    (kept,) = client.retrieve(COLLECTION, ids=[point_id("a#0")], with_payload=True)
    assert kept.payload == {"mine": 1}
    assert index.count() == 0


@pytest.mark.parametrize("vectors, sources, message", [
    (np.ones((2, DIM + 1), dtype=np.float32), ["/a", "/b"], "shape"),
    (np.ones((2, DIM), dtype=np.float32), ["/a"], "sources"),
    (np.full((2, DIM), np.nan, dtype=np.float32), ["/a", "/b"], "NaN"),
])
def test_add_checks_its_inputs(client, vectors, sources, message):
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    with pytest.raises(InputError, match=message):
        index.add([chunk("a", 0), chunk("a", 1)], vectors, sources)


def test_search_sees_only_eval_points_even_when_a_user_point_matches_exactly(client):
    query = unit(1, 1)
    add_user_points(client, [query, unit(1, 1, 0.01)])
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    index.add([chunk("a", 0), chunk("b", 0)], np.stack([unit(1, 0.5), unit(0, 0, 1)]), ["/c/a.md", "/c/b.md"])
    hits = index.search(query, limit=5)
    assert [h.chunk_id for h in hits] == ["a#0", "b#0"]
    assert hits[0] == Hit("a#0", "a", "text of a part 0", pytest.approx(float(unit(1, 0.5) @ query), abs=1e-5), "/c/a.md")


def test_search_orders_by_score_then_chunk_id_and_cuts_ties_by_id(client):
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    same = unit(1, 1)
    # written in reverse id order, all tied with each other, plus one better and one worse
    tied = [chunk("t", i) for i in (9, 7, 5, 3, 1)]
    chunks = [*tied, chunk("best", 0), chunk("worst", 0)]
    vectors = np.stack([same] * len(tied) + [unit(1, 1.1), unit(1, 0)])
    index.add(chunks, vectors, ["/c/x.md"] * len(chunks))
    query = unit(1, 1.1)

    hits = index.search(query, limit=4)

    assert [h.chunk_id for h in hits] == ["best#0", "t#1", "t#3", "t#5"]
    assert index.search(query, limit=4) == hits


def test_search_threshold_and_arguments(client):
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    index.add([chunk("a", 0), chunk("b", 0)], np.stack([unit(1), unit(0, 1)]), ["/c/a.md", "/c/b.md"])
    assert [h.chunk_id for h in index.search(unit(1), limit=5, score_threshold=0.5)] == ["a#0"]
    with pytest.raises(InputError, match="size"):
        index.search(np.ones(DIM + 1), limit=1)
    with pytest.raises(InputError, match="limit"):
        index.search(unit(1), limit=0)
    with pytest.raises(InputError, match="ragqual corpus ingest"):
        EvalIndex(client, "missing", DIM).search(unit(1), limit=1)


def test_all_chunks_pages_through_every_eval_point_in_document_order(client, monkeypatch):
    import ragqual.adapters.qdrant_store as store

    monkeypatch.setattr(store, "SCROLL_PAGE", 3)
    add_user_points(client, [unit(1, i) for i in range(1, 4)])
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    chunks = [chunk(doc, i) for doc in ("b", "a") for i in (3, 0, 2, 1)]
    rng = np.random.default_rng(3)
    index.add(chunks, rng.normal(size=(len(chunks), DIM)).astype(np.float32), ["/c/x.md"] * len(chunks))
    stored = index.all_chunks()
    assert [c.chunk_id for c in stored] == ["a#0", "a#1", "a#2", "a#3", "b#0", "b#1", "b#2", "b#3"]
    assert stored[0].text == "text of a part 0" and stored[0].index == 0


def test_manifest_tells_a_complete_ingest_from_a_broken_one(client):
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    assert index.manifest() is None
    chunks = [chunk("a", 0), chunk("a", 1), chunk("b", 0)]
    index.add(chunks, np.stack([unit(1), unit(0, 1), unit(0, 0, 1)]), ["/c/a.md"] * 3, fingerprint="fp1", embedder_id="e1")
    manifest = index.manifest()
    assert (manifest.fingerprint, manifest.embedder_id, manifest.expected_chunks, manifest.stored_chunks) == ("fp1", "e1", 3, 3)
    assert manifest.complete

    client.delete(COLLECTION, points_selector=models.PointIdsList(points=[point_id("a#1")]))
    assert not index.manifest().complete


def test_an_index_without_a_size_can_read_and_reset_but_not_write(client):
    index = EvalIndex(client, COLLECTION, None)
    with pytest.raises(InputError, match="vector size"):
        index.ensure_collection()


# --- on disk, and between processes ----------------------------------------------------------------


def test_embedded_folder_keeps_the_points_and_the_holder_file_only_while_open(tmp_path):
    folder = tmp_path / "qdrant"
    first = open_qdrant(folder, None)
    assert (folder / HOLDER_FILE).is_file()
    index = EvalIndex(first, COLLECTION, DIM)
    index.ensure_collection()
    index.add([chunk("a", 0)], unit(1)[None, :], ["/c/a.md"], fingerprint="fp", embedder_id="e")
    first.close()
    assert not (folder / HOLDER_FILE).exists()

    second = open_qdrant(folder, None, wait_seconds=0)
    try:
        assert EvalIndex(second, COLLECTION, DIM).manifest().fingerprint == "fp"
    finally:
        second.close()


def test_a_second_client_in_the_same_process_is_named_as_such(tmp_path):
    folder = tmp_path / "qdrant"
    holder = open_qdrant(folder, None)
    try:
        with pytest.raises(ServiceUnavailable, match=f"{folder}.*this same process \\(pid {os.getpid()}\\)"):
            open_qdrant(folder, None, wait_seconds=0.3, poll_seconds=0.05)
    finally:
        holder.close()


HOLD_WITH_RAGQUAL = """
import sys
from ragqual.adapters.qdrant_store import open_qdrant
client = open_qdrant(sys.argv[1], None, wait_seconds=0)
print("ready", flush=True)
sys.stdin.read()
client.close()
"""

HOLD_WITH_QDRANT_CLIENT = """
import sys
from qdrant_client import QdrantClient
client = QdrantClient(path=sys.argv[1])
print("ready", flush=True)
sys.stdin.read()
client.close()
"""


def start_holder(script: str, folder: Path, marker: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(folder), marker],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert process.stdout.readline().strip() == "ready"
    return process


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.stdin.close()
        process.wait(timeout=60)


def test_a_folder_held_by_another_ragqual_process_is_waited_for_then_refused_naming_it(tmp_path):
    folder = tmp_path / "qdrant"
    holder = start_holder(HOLD_WITH_RAGQUAL, folder, "holder-marker-1")
    try:
        with pytest.raises(ServiceUnavailable) as caught:
            open_qdrant(folder, None, wait_seconds=0.5, poll_seconds=0.1)
        message = str(caught.value)
        assert str(folder) in message
        assert f"process {holder.pid}" in message
        assert "holder-marker-1" in message  # its command line, from the holder file
        assert "\n" not in message

        threading.Timer(0.5, holder.stdin.close).start()  # released while we wait
        client = open_qdrant(folder, None, wait_seconds=120, poll_seconds=0.1)
        client.close()
        assert holder.wait(timeout=60) == 0
    finally:
        stop(holder)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="the kernel lock table is Linux-only")
def test_a_folder_held_by_a_plain_qdrant_client_names_the_process_from_the_lock_table(tmp_path):
    folder = tmp_path / "qdrant"
    holder = start_holder(HOLD_WITH_QDRANT_CLIENT, folder, "holder-marker-2")
    try:
        assert not (folder / HOLDER_FILE).exists()
        with pytest.raises(ServiceUnavailable, match=f"in use by process {holder.pid} .*holder-marker-2"):
            open_qdrant(folder, None, wait_seconds=0.2, poll_seconds=0.1)
    finally:
        stop(holder)


def test_a_stale_holder_file_from_a_dead_process_is_ignored(tmp_path):
    folder = tmp_path / "qdrant"
    folder.mkdir()
    (folder / HOLDER_FILE).write_text('{"pid": 999999999, "argv": ["ghost"]}')
    client = open_qdrant(folder, None, wait_seconds=0)
    try:
        assert f'"pid": {os.getpid()}' in (folder / HOLDER_FILE).read_text()
    finally:
        client.close()


def test_an_unreachable_server_is_one_service_error(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ServiceUnavailable, match=f"cannot reach Qdrant at http://127.0.0.1:{port}"):
        open_qdrant(None, f"http://127.0.0.1:{port}")


def test_an_unusable_folder_is_one_input_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(InputError, match="cannot open the embedded Qdrant folder"):
        open_qdrant(tmp_path / "file", None, wait_seconds=0)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "meta.json").write_text("{not json")
    with pytest.raises(InputError, match=f"cannot open the embedded Qdrant folder {damaged}"):
        open_qdrant(damaged, None, wait_seconds=0)


def test_memory_and_missing_location(tmp_path):
    client = open_qdrant(":memory:", None)
    client.close()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="storage folder or a server URL"):
        open_qdrant(None, None)


@pytest.mark.parametrize("raw, expected", [(None, 30.0), ("2.5", 2.5), ("0", 0.0)])
def test_wait_seconds_from_the_environment(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv("RAGQUAL_QDRANT_WAIT", raising=False)
    else:
        monkeypatch.setenv("RAGQUAL_QDRANT_WAIT", raw)
    assert default_wait_seconds() == expected


@pytest.mark.parametrize("raw", ["soon", "-1", "nan"])
def test_bad_wait_seconds_are_an_input_error(monkeypatch, raw):
    monkeypatch.setenv("RAGQUAL_QDRANT_WAIT", raw)
    with pytest.raises(InputError, match="RAGQUAL_QDRANT_WAIT"):
        default_wait_seconds()


def test_only_points_ragqual_wrote_are_its_own():
    pid = point_id("a#0")
    written = owned_payload(pid, {TAG_KEY: EVAL_TAG, "chunk_id": "a#0", "doc_id": "a", INGEST_KEY: "f" * 32})
    assert is_owned(pid, written) and is_intact(pid, written)
    edited = {**written, "source": "/elsewhere"}
    assert is_owned(pid, edited) and not is_intact(pid, edited)  # still ragqual's: rebuilt, with a warning
    assert not is_owned(7, written)  # someone else's id
    assert not is_owned(pid, {**written, TAG_KEY: ["x", EVAL_TAG]})  # the tag inside a list
    assert not is_owned(pid, {TAG_KEY: EVAL_TAG, "chunk_id": "a#0"})  # neither an ingest id nor the old keys
    assert not is_owned(point_id("b#0"), written)  # an id that is not the chunk's


def test_reset_refuses_foreign_tagged_points_and_deletes_nothing(client):
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    index.add([chunk("a", 0)], unit(1)[None, :], ["/c/a.md"])
    client.upsert(COLLECTION, points=[
        models.PointStruct(id=11, vector=unit(1).tolist(), payload={TAG_KEY: EVAL_TAG, "mine": 1}),
        models.PointStruct(id=12, vector=unit(1).tolist(), payload={TAG_KEY: ["kb", EVAL_TAG]}),
    ])
    with pytest.raises(ForeignPoints, match=r"holds 2 point\(s\) .* 11, 12\. ragqual deletes only its own"):
        index.reset()
    assert client.count(COLLECTION).count == 3
