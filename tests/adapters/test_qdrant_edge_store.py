"""The same isolation tests as for qdrant-client, run on the qdrant-edge engine (EdgeClient), plus its own:
folder locking between processes, state digests for the search cache, and the migration from a local-mode folder."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client.http import models

from ragqual.adapters.qdrant_edge_store import EdgeClient, edge_state, migrate_local_folder, open_edge
from ragqual.adapters.qdrant_store import EVAL_TAG, TAG_KEY, EvalIndex
from ragqual.errors import ServiceUnavailable
from tests.adapters.test_qdrant_store import (  # noqa: F401 - collected here again, with the edge `client` below
    COLLECTION,
    DIM,
    add_user_points,
    chunk,
    test_add_checks_its_inputs,
    test_add_refuses_to_overwrite_a_point_without_the_eval_tag,
    test_add_writes_the_documented_payload_under_deterministic_ids,
    test_all_chunks_pages_through_every_eval_point_in_document_order,
    test_an_index_without_a_size_can_read_and_reset_but_not_write,
    test_ensure_collection_creates_cosine_collection_with_keyword_index_on_the_tag,
    test_existing_collection_of_another_shape_is_refused,
    test_existing_collection_with_another_vector_size_is_refused,
    test_manifest_tells_a_complete_ingest_from_a_broken_one,
    test_reset_and_count_on_a_missing_collection_are_zero,
    test_reset_deletes_only_eval_points,
    test_search_orders_by_score_then_chunk_id_and_cuts_ties_by_id,
    test_search_sees_only_eval_points_even_when_a_user_point_matches_exactly,
    test_search_threshold_and_arguments,
    unit,
    user_ids,
)


@pytest.fixture
def client(tmp_path):
    c = open_edge(tmp_path / "edge", wait_seconds=0)
    yield c
    c.close()


def test_the_edge_client_is_the_one_under_test(client):
    assert isinstance(client, EdgeClient)


def test_points_survive_closing_and_reopening_the_folder(tmp_path):
    first = open_edge(tmp_path / "edge", wait_seconds=0)
    index = EvalIndex(first, COLLECTION, DIM)
    index.ensure_collection()
    add_user_points(first, [unit(1, 2)])
    index.add([chunk("a", 0)], unit(1)[None, :], ["/c/a.md"], fingerprint="fp", embedder_id="e")
    first.close()
    again = open_edge(tmp_path / "edge", wait_seconds=0)
    reopened = EvalIndex(again, COLLECTION, DIM)
    assert (reopened.count(), reopened.count_all(), reopened.manifest().complete) == (1, 2, True)
    assert [h.chunk_id for h in reopened.search(unit(1), limit=3)] == ["a#0"]
    again.close()


HOLD = """
import sys, time
from ragqual.adapters.qdrant_edge_store import open_edge
client = open_edge(sys.argv[1], wait_seconds=0)
print("held", flush=True)
time.sleep(60)
"""


def test_a_folder_held_by_another_process_is_refused_naming_it(tmp_path):
    folder = tmp_path / "edge"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ServiceUnavailable, match=rf"in use by process {holder.pid}"):
            open_edge(folder, wait_seconds=0.3, poll_seconds=0.1)
    finally:
        holder.kill()
        holder.wait()
    open_edge(folder, wait_seconds=5).close()  # free again once the holder is gone


def test_state_changes_with_every_write_and_not_with_reads_or_reopening(tmp_path):
    folder = tmp_path / "edge"
    client = open_edge(folder, wait_seconds=0)
    assert edge_state(folder, COLLECTION) is None
    index = EvalIndex(client, COLLECTION, DIM)
    index.ensure_collection()
    index.add([chunk("a", 0)], unit(1)[None, :], ["/c/a.md"])
    client.close()
    before = edge_state(folder, COLLECTION)
    client = open_edge(folder, wait_seconds=0)
    EvalIndex(client, COLLECTION, DIM).search(unit(1), limit=1)
    EvalIndex(client, COLLECTION, DIM).manifest()
    client.close()
    assert edge_state(folder, COLLECTION) == before
    client = open_edge(folder, wait_seconds=0)
    client.upsert(COLLECTION, points=[models.PointStruct(id=5, vector=unit(0, 1).tolist(), payload={"mine": 1})])
    client.close()
    assert edge_state(folder, COLLECTION) != before


def test_a_local_mode_folder_migrates_with_every_point(tmp_path):
    local = QdrantClient(path=str(tmp_path / "local"))
    add_user_points(local, [unit(1, i) for i in range(1, 4)])
    EvalIndex(local, COLLECTION, DIM).ensure_collection()
    EvalIndex(local, COLLECTION, DIM).add([chunk("a", 0)], unit(1)[None, :], ["/c/a.md"], fingerprint="fp")
    edge = open_edge(tmp_path / "edge", wait_seconds=0)
    try:
        assert migrate_local_folder(local, edge, COLLECTION) == 4
        index = EvalIndex(edge, COLLECTION, DIM)
        assert (index.count(), index.count_all()) == (1, 4)
        assert user_ids(edge) == user_ids(local)
        assert TAG_KEY in edge.get_collection(COLLECTION).payload_schema
        hit = index.search(unit(1), limit=1)[0]
        assert (hit.chunk_id, hit.source) == ("a#0", "/c/a.md")
    finally:
        edge.close()
        local.close()


def test_user_points_with_other_filters_are_translated(client):
    add_user_points(client, [unit(1, 1), unit(1, 2)])
    other = models.Filter(must_not=[models.FieldCondition(key=TAG_KEY, match=models.MatchValue(value=EVAL_TAG))],
                          must=[models.HasIdCondition(has_id=[1])])
    assert client.count(COLLECTION, count_filter=other).count == 1
    vector = np.asarray(unit(1, 1)).tolist()
    assert [p.id for p in client.query_points(COLLECTION, query=vector, query_filter=other, limit=5).points] == [1]
