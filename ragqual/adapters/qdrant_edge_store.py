"""qdrant-edge (the Qdrant engine in-process) behind the part of QdrantClient's API that EvalIndex uses.

qdrant-client's local mode scores every point in Python: a filtered top-100 query takes seconds
at 50k points. qdrant-edge runs the real engine in-process (benchmarks/bench_scale.py: a few ms
at 100k points). `EdgeClient` answers the calls `ragqual.adapters.qdrant_store.EvalIndex` makes
(collection_exists, create_collection, get_collection, create_payload_index, upsert, set_payload,
retrieve, delete, count, query_points, query_batch_points, scroll) with qdrant-client's own model objects,
so the one EvalIndex — reserved tag, scoped writes, filtered reads, refusing to overwrite a
foreign point, and whatever ownership rule it applies before deleting — runs unchanged on
both engines. Searches are exact (no HNSW), as in local mode, so rankings are reproducible.

Layout: one shard folder per collection, `<folder>/<collection>/` (qdrant-edge's
edge_config.json, segments/, wal/). The folder is held by one process at a time: a `.lock`
file is flocked and a holder file names the process, the same protocol as the local-mode
folder (`qdrant_store.lock_holder` reads both), so a second process waits and then names the
holder.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from qdrant_client.http import models

from ragqual.adapters import qdrant_store as qs
from ragqual.errors import InputError, ServiceUnavailable

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

from ragqual.adapters.edge_state import CONFIG_FILE, edge_state  # noqa: F401 - re-exported
_DISTANCES = {models.Distance.COSINE: "Cosine", models.Distance.DOT: "Dot", models.Distance.EUCLID: "Euclid",
              models.Distance.MANHATTAN: "Manhattan"}


def _edge() -> Any:
    import qdrant_edge

    return qdrant_edge


# --- opening ---------------------------------------------------------------------------------------


def open_edge(folder: Path | str, *, wait_seconds: float | None = None, poll_seconds: float = 0.2) -> EdgeClient:
    """The embedded qdrant-edge store in `folder` (created when missing), waiting for another holder."""
    root = Path(folder).resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the embedded Qdrant folder {root}: {exc.strerror or exc}") from exc
    wait = qs.default_wait_seconds() if wait_seconds is None else wait_seconds
    deadline = time.monotonic() + wait
    while True:
        handle = _lock(root / qs.LOCK_FILE)
        if handle is not None:
            return EdgeClient(root, handle)
        if time.monotonic() >= deadline:
            holder = qs.lock_holder(root) or qs.Holder(None, None)
            raise ServiceUnavailable(holder.message(root, wait))
        time.sleep(poll_seconds)


def _lock(path: Path) -> Any | None:
    """An open, exclusively flocked handle on `path`, or None when another process holds it."""
    import portalocker

    handle = path.open("a+")
    try:
        portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
    except portalocker.exceptions.LockException:
        handle.close()
        return None
    return handle


# --- translation -----------------------------------------------------------------------------------


def _point_id(value: Any) -> Any:
    """qdrant-client's form of an id: UUIDs as strings, integers as they are."""
    return str(value) if isinstance(value, uuid.UUID) else value


def edge_filter(value: models.Filter | None) -> Any:
    """A qdrant-client Filter as a qdrant-edge Filter (the conditions EvalIndex and users use)."""
    if value is None:
        return None
    qe = _edge()
    return qe.Filter(must=_conditions(value.must), should=_conditions(value.should), must_not=_conditions(value.must_not))


def _conditions(items: Any) -> list[Any] | None:
    if items is None:
        return None
    if not isinstance(items, list):
        items = [items]
    return [_condition(c) for c in items]


def _condition(condition: Any) -> Any:
    qe = _edge()
    if isinstance(condition, models.Filter):
        return edge_filter(condition)
    if isinstance(condition, models.HasIdCondition):
        return qe.HasIdCondition(set(condition.has_id))
    if isinstance(condition, models.FieldCondition) and condition.match is not None:
        match = condition.match
        if isinstance(match, models.MatchValue):
            return qe.FieldCondition(key=condition.key, match=qe.MatchValue(match.value))
        if isinstance(match, models.MatchAny):
            return qe.FieldCondition(key=condition.key, match=qe.MatchAny(list(match.any)))
        if isinstance(match, models.MatchExcept):
            return qe.FieldCondition(key=condition.key, match=qe.MatchExcept(list(match.except_)))
    raise InputError(f"the embedded qdrant-edge store does not translate the condition {condition!r}")


def _with_payload(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else bool(value)


def _scored(point: Any) -> models.ScoredPoint:
    """A hit in qdrant-client's form, built without pydantic's validation (the values are already
    of the declared types; validating cost ~40 µs a hit, seconds for a run of 93 top-1000 queries)."""
    return models.ScoredPoint.model_construct(id=_point_id(point.id), version=0, score=float(point.score),
                                              payload=dict(point.payload or {}))


def _record(point: Any) -> models.Record:
    vector = getattr(point, "vector", None)
    if isinstance(vector, dict) and set(vector) == {""}:
        vector = vector[""]
    return models.Record(id=_point_id(point.id), payload=dict(point.payload or {}), vector=vector)


# --- the client ------------------------------------------------------------------------------------


class EdgeClient:
    """The calls EvalIndex makes, on qdrant-edge shards (one per collection) in one held folder."""

    def __init__(self, root: Path, lock_handle: Any):
        self.root = root
        self.init_options = {"path": str(root)}
        self._lock_handle = lock_handle
        self._shards: dict[str, Any] = {}
        qs._write_holder(root / qs.HOLDER_FILE)

    # -- collections --------------------------------------------------------------------
    def _folder(self, name: str) -> Path:
        if not name or "/" in name or name.startswith("."):
            raise InputError(f"invalid collection name {name!r} for the embedded store")
        return self.root / name

    def collection_exists(self, name: str) -> bool:
        return (self._folder(name) / CONFIG_FILE).is_file()

    def _shard(self, name: str) -> Any:
        if name not in self._shards:
            if not self.collection_exists(name):
                raise InputError(f"Qdrant collection {name!r} does not exist; run `ragqual corpus ingest`")
            self._shards[name] = _edge().EdgeShard.load(str(self._folder(name)))
        return self._shards[name]

    def create_collection(self, name: str, vectors_config: models.VectorParams | dict[str, models.VectorParams],
                          **_: Any) -> bool:
        qe = _edge()

        def params(v: models.VectorParams) -> Any:
            return qe.EdgeVectorParams(size=v.size, distance=getattr(qe.Distance, _DISTANCES[v.distance]))

        vectors = {k: params(v) for k, v in vectors_config.items()} if isinstance(vectors_config, dict) else params(vectors_config)
        qe.EdgeShard.create(str(self._folder(name)), qe.EdgeConfig(vectors=vectors)).close()
        self._shards[name] = qe.EdgeShard.load(str(self._folder(name)))  # a first load rewrites the config: do it now
        return True

    def get_collection(self, name: str) -> Any:
        import json

        config = json.loads((self._folder(name) / CONFIG_FILE).read_text(encoding="utf-8"))
        vectors = config.get("vectors") or {}
        if set(vectors) == {""}:
            params: Any = models.VectorParams(size=vectors[""]["size"], distance=models.Distance(vectors[""]["distance"]))
        else:  # named vectors: EvalIndex refuses them
            params = {k: models.VectorParams(size=v["size"], distance=models.Distance(v["distance"])) for k, v in vectors.items()}
        schema = dict(self._shard(name).info().payload_schema)
        return SimpleNamespace(config=SimpleNamespace(params=SimpleNamespace(vectors=params)), payload_schema=schema)

    def create_payload_index(self, name: str, field_name: str, field_schema: Any = None, **_: Any) -> None:
        qe = _edge()
        self._shard(name).update(qe.UpdateOperation.create_field_index(field_name, qe.PayloadSchemaType.Keyword))

    # -- writes --------------------------------------------------------------------------
    def upsert(self, name: str, points: Sequence[models.PointStruct], **_: Any) -> None:
        qe = _edge()
        edge_points = [qe.Point(p.id, list(p.vector), dict(p.payload or {})) for p in points]
        shard = self._shard(name)
        shard.update(qe.UpdateOperation.upsert_points(edge_points))
        shard.flush()

    def delete(self, name: str, points_selector: Any, **_: Any) -> None:
        qe = _edge()
        shard = self._shard(name)
        if isinstance(points_selector, models.FilterSelector):
            shard.update(qe.UpdateOperation.delete_points_by_filter(edge_filter(points_selector.filter)))
        elif isinstance(points_selector, models.PointIdsList):
            shard.update(qe.UpdateOperation.delete_points(list(points_selector.points)))
        elif isinstance(points_selector, list):
            shard.update(qe.UpdateOperation.delete_points(list(points_selector)))
        else:
            raise InputError(f"the embedded qdrant-edge store does not translate the selector {points_selector!r}")
        shard.flush()

    def set_payload(self, name: str, payload: dict[str, Any], points: Sequence[Any], **_: Any) -> None:
        qe = _edge()
        shard = self._shard(name)
        shard.update(qe.UpdateOperation.set_payload(list(points), dict(payload)))
        shard.flush()

    # -- reads ---------------------------------------------------------------------------
    def retrieve(self, name: str, ids: Sequence[Any], with_payload: Any = True, with_vectors: bool = False,
                 **_: Any) -> list[models.Record]:
        found = self._shard(name).retrieve(list(ids), with_payload=_with_payload(with_payload), with_vector=bool(with_vectors))
        return [_record(p) for p in found]

    def count(self, name: str, count_filter: models.Filter | None = None, exact: bool = True, **_: Any) -> models.CountResult:
        qe = _edge()
        return models.CountResult(count=self._shard(name).count(qe.CountRequest(exact=True, filter=edge_filter(count_filter))))

    def _request(self, query: Sequence[float], query_filter: models.Filter | None, limit: int,
                 score_threshold: float | None = None, with_payload: Any = True) -> Any:
        qe = _edge()
        return qe.QueryRequest(limit=limit, query=qe.Query.Nearest([float(x) for x in query]), filter=edge_filter(query_filter),
                               score_threshold=score_threshold, with_payload=_with_payload(with_payload),
                               with_vector=False, params=qe.SearchParams(exact=True))

    def query_points(self, name: str, query: Sequence[float], query_filter: models.Filter | None = None, limit: int = 10,
                     score_threshold: float | None = None, with_payload: Any = True, **_: Any) -> models.QueryResponse:
        found = self._shard(name).query(self._request(query, query_filter, limit, score_threshold, with_payload))
        return models.QueryResponse(points=[_scored(p) for p in found])

    def query_batch_points(self, name: str, requests: Iterable[models.QueryRequest], **_: Any) -> list[models.QueryResponse]:
        qe = _edge()
        batch = [self._request(_dense_query(r.query), r.filter, r.limit if r.limit is not None else 10, r.score_threshold,
                               r.with_payload if r.with_payload is not None else True)
                 for r in requests]
        results = self._shard(name).query_batch(qe.QueryBatchRequest(batch))
        return [models.QueryResponse(points=[_scored(p) for p in found]) for found in results]

    def scroll(self, name: str, scroll_filter: models.Filter | None = None, limit: int = 10, offset: Any = None,
               with_payload: Any = True, with_vectors: bool = False, **_: Any) -> tuple[list[models.Record], Any]:
        qe = _edge()
        request = qe.ScrollRequest(offset=offset, limit=limit, filter=edge_filter(scroll_filter),
                                   with_payload=_with_payload(with_payload), with_vector=bool(with_vectors))
        page, next_offset = self._shard(name).scroll(request)
        return [_record(p) for p in page], _point_id(next_offset) if next_offset is not None else None

    # -- lifetime ------------------------------------------------------------------------
    def close(self, **_: Any) -> None:
        shards, self._shards = self._shards, {}
        for shard in shards.values():
            shard.close()
        handle, self._lock_handle = self._lock_handle, None
        if handle is not None:
            qs._remove_holder(self.root / qs.HOLDER_FILE)
            handle.close()  # releases the flock


def _dense_query(query: Any) -> Sequence[float]:
    """The one query kind ragqual sends: a dense vector (a list of floats)."""
    if not isinstance(query, list) or not all(isinstance(x, int | float) for x in query):
        raise TypeError(f"only dense vector queries are supported here, got {type(query).__name__}")
    return query


def _stored_vector(record: models.Record) -> Any:
    """A scrolled record's vector (scrolled with_vectors=True, so always present)."""
    if record.vector is None:
        raise InputError(f"point {record.id} came back without its vector; nothing migrated past it")
    return record.vector


def migrate_local_folder(local: QdrantClient, edge: EdgeClient, collection: str, *, page: int = 512) -> int:
    """Copy every point of `collection` (vectors and payloads, the user's included) from a
    qdrant-client local-mode store into the qdrant-edge store; returns how many were copied."""
    info = local.get_collection(collection)
    vectors = info.config.params.vectors
    if vectors is None:
        raise InputError(f"collection {collection!r} declares no vectors; nothing to migrate")
    edge.create_collection(collection, vectors_config=vectors)
    for field_name in sorted({qs.TAG_KEY, *(info.payload_schema or {})}):  # local mode does not report its indexes
        edge.create_payload_index(collection, field_name)
    copied, offset = 0, None
    while True:
        records, offset = local.scroll(collection, limit=page, offset=offset, with_payload=True, with_vectors=True)
        edge.upsert(collection, [models.PointStruct(id=r.id, vector=_stored_vector(r), payload=r.payload)
                                for r in records])
        copied += len(records)
        if offset is None:
            return copied

