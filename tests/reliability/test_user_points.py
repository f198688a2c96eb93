"""A user's own points in the shared collection are never changed or deleted, through the real CLI.

1,000 points of someone's knowledge base live in the collection ragqual uses (the embedded store
of the project, the real MiniLM embedder). Their ids, vectors (float32 bytes) and payloads
(canonical JSON bytes) are compared byte for byte after each of ingest -> retrieval -> reset ->
ingest. When some of them carry ragqual's reserved tag, as a string or inside a list, every one
of those commands refuses with exit 1, names the points, and deletes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest
from qdrant_client.http import models

from ragqual.adapters.qdrant_edge_store import open_edge
from ragqual.adapters.qdrant_store import EVAL_TAG, TAG_KEY, is_owned, open_qdrant
from ragqual.core.hashing import canonical_json
from tests.reliability.conftest import assert_no_traceback

COLLECTION = "ragqual_kb"  # the default --collection
DIM = 384  # MiniLM
USER_POINTS = 1000
TAGGED = {7: EVAL_TAG, 42: ["faq", EVAL_TAG]}  # i % 100 -> the reserved tag someone else wrote


ENGINES = {  # the embedded engine ragqual finds in the project: its folder and how to open it
    "qdrant-edge": ("qdrant-edge", lambda folder: open_edge(folder)),
    "qdrant-client local mode": ("qdrant", lambda folder: open_qdrant(folder, None)),
}


@pytest.fixture(params=sorted(ENGINES))
def engine(request):
    return request.param


def open_store(project, engine):
    folder, opener = ENGINES[engine]
    return opener(project.root / "eval-results" / folder)


def fill(project, engine, *, with_reserved_tag: bool) -> None:
    rng = np.random.default_rng(15)
    client = open_store(project, engine)
    try:
        client.create_collection(COLLECTION, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.DOT))
        points = []
        for i in range(USER_POINTS):
            payload = {TAG_KEY: ["handbook", "faq", "__ragqual_eval", "ragqual_eval"][i % 4],
                       "doc_id": "water-boiling", "text": f"user paragraph {i} — é", "score": i / 7,
                       "nested": {"rank": i, "tags": ["a", "b"][: i % 3]}}
            if with_reserved_tag and i % 100 in TAGGED:
                payload[TAG_KEY] = TAGGED[i % 100]
            vector = rng.normal(size=DIM).astype(np.float32)
            points.append(models.PointStruct(id=i + 1, vector=vector.tolist(), payload=payload))
        for start in range(0, USER_POINTS, 250):
            client.upsert(COLLECTION, points=points[start:start + 250])
    finally:
        client.close()


def user_points(project, engine) -> dict[str, tuple[bytes, bytes]]:
    """Every point ragqual did not write: id -> (payload as canonical JSON bytes, vector as float32 bytes)."""
    client = open_store(project, engine)
    out: dict[str, tuple[bytes, bytes]] = {}
    try:
        offset = None
        while True:
            page, offset = client.scroll(COLLECTION, limit=500, offset=offset, with_payload=True, with_vectors=True)
            for p in page:
                if not is_owned(p.id, p.payload):
                    out[str(p.id)] = (canonical_json(p.payload).encode(),
                                      np.asarray(p.vector, dtype="<f4").tobytes())
            if offset is None:
                return out
    finally:
        client.close()


def test_ingest_retrieval_reset_ingest_leave_every_user_point_byte_for_byte(project, engine):
    fill(project, engine, with_reserved_tag=False)
    before = user_points(project, engine)
    assert len(before) == USER_POINTS
    for command in (["corpus", "ingest"], ["retrieval"], ["corpus", "reset"], ["corpus", "ingest"]):
        result = project.run(*command)
        assert result.returncode == 0, (command, result.stderr)
        assert user_points(project, engine) == before, command


def test_points_someone_else_tagged_are_refused_never_deleted(project, engine):
    fill(project, engine, with_reserved_tag=True)
    before = user_points(project, engine)
    assert len(before) == USER_POINTS
    tagged = sorted((i + 1 for i in range(USER_POINTS) if i % 100 in TAGGED))
    for command in (["corpus", "ingest"], ["retrieval"], ["corpus", "reset"]):
        result = project.run(*command)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert_no_traceback(result.stderr)
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"ragqual: error: Qdrant collection {COLLECTION!r} holds {len(tagged)} point(s) "
                               f"that carry ragqual's reserved tag"), last
        assert ", ".join(str(i) for i in tagged[:10]) in last and "nothing was changed" in last
        assert "another --collection" in last
        assert user_points(project, engine) == before, command
