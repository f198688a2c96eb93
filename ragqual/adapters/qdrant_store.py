"""Qdrant as the vector store, with the eval chunks fenced off inside the user's own collection.

The eval chunks share a collection with the user's documents (so retrieval is measured on
the real index settings) and are told apart by one reserved payload value, `EVAL_TAG`
under the key `collection`. Every write adds only points carrying that value, and every read
filters on it server-side.

The tag alone does not make a point ragqual's: someone else may write it (as a string or inside
a list). ragqual deletes only points it wrote: the point id is the uuid5 of the payload's chunk
id in ragqual's own namespace (no one else's point has it, and `add` never overwrites a point
without the tag), the tag is exactly the string, and the payload carries the id of the ingest
that wrote it (or, from ingests before that mark, exactly their payload keys). Tagged points that
fail this are foreign: reset and ingest refuse (exit 1, naming them) and delete nothing; nothing
here touches any other point. Each point also carries a sha256 of its id and payload
(`OWNER_HASH_KEY`): a point of ragqual's whose payload was edited since is still ragqual's, and
is rebuilt with a warning that names how many were edited.

Embedded mode (`path=`) lets only one process at a time use a storage folder. Opening a
held folder waits for it to be released, polling, then fails with one line that names
the folder and the process holding it: from the holder file ragqual writes next to the
storage while it has the folder open, or from the kernel's lock table.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np
from qdrant_client import QdrantClient
from qdrant_client.http import exceptions as qdrant_errors
from qdrant_client.http import models

from ragqual.core.hashing import canonical_json, sha256_hex
from ragqual.core.redact import redact_argv, remember_secret, remember_url_secrets
from ragqual.errors import ForeignPoints, InputError, ServiceUnavailable

T = TypeVar("T")

EVAL_TAG = "__ragqual_eval__"
TAG_KEY = "collection"
MEMORY = ":memory:"
WAIT_ENV = "RAGQUAL_QDRANT_WAIT"
DEFAULT_WAIT_SECONDS = 30.0
HOLDER_FILE = "ragqual-holder.json"
LOCK_FILE = ".lock"  # the file qdrant-client's local mode locks
SERVER_TIMEOUT_SECONDS = 30
UPSERT_BATCH = 256
SCROLL_PAGE = 512
TIE_MARGIN = 16  # extra candidates fetched so ties at the cut-off are broken by chunk id, not by chance
_POINT_NAMESPACE = uuid.UUID("6f1e3c52-2f0b-4c1e-9a55-7d0c2b7e4a10")
INGEST_KEY = "ragqual_ingest"  # the id of the ingest that wrote the point
OWNER_HASH_KEY = "ragqual_sha256"  # sha256 of the point id and the rest of its payload
_LEGACY_KEYS = frozenset({TAG_KEY, "doc_id", "chunk_id", "index", "text", "source", "fingerprint", "embedder",
                          "total_chunks"})  # what ingests before the owner hash wrote
FOREIGN_NAMED = 10
_ACCEPTED_DISTANCES = (models.Distance.COSINE, models.Distance.DOT)  # same ranking for unit vectors


# --- opening --------------------------------------------------------------------------------


def open_qdrant(
    path: Path | str | None,
    url: str | None,
    api_key: str | None = None,
    *,
    wait_seconds: float | None = None,
    poll_seconds: float = 0.2,
) -> QdrantClient:
    """A client on a server (`url`), an embedded storage folder (`path`), or memory (`path=":memory:"`).

    An embedded folder held by another process is waited for up to `wait_seconds`
    (default: env RAGQUAL_QDRANT_WAIT, else 30 s), then ServiceUnavailable names the holder.
    """
    if url:
        remember_url_secrets(url)  # masked wherever it could be stored or printed (core.redact)
        remember_secret(api_key)
        return _open_server(url, api_key)
    if path is None:
        raise InputError("Qdrant needs a storage folder or a server URL (--qdrant-url / QDRANT_URL)")
    if str(path) == MEMORY:
        return QdrantClient(MEMORY)
    wait = default_wait_seconds() if wait_seconds is None else wait_seconds
    return _open_local(Path(path).resolve(), wait, poll_seconds)


def default_wait_seconds() -> float:
    raw = os.environ.get(WAIT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_WAIT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise InputError(f"{WAIT_ENV} must be a number of seconds (0 or more), got {raw!r}")
    return value


def _open_server(url: str, api_key: str | None) -> QdrantClient:
    client = QdrantClient(url=url, api_key=api_key or None, timeout=SERVER_TIMEOUT_SECONDS, check_compatibility=False)
    with service_errors(url):
        client.get_collections()  # fail here, with one line, rather than mid-run
    return client


def _open_local(folder: Path, wait: float, poll: float) -> QdrantClient:
    deadline = time.monotonic() + wait
    while True:
        holder = lock_holder(folder)
        if holder is None:
            try:
                return _LocalClient(folder)
            except RuntimeError as exc:  # another process took the folder since we looked
                if "already accessed" not in str(exc):
                    raise
                holder = lock_holder(folder) or Holder(None, None)
            except (OSError, ValueError) as exc:  # not a folder, no permission, damaged meta.json
                raise InputError(f"cannot open the embedded Qdrant folder {folder}: {exc}") from exc
        if time.monotonic() >= deadline:
            raise ServiceUnavailable(holder.message(folder, wait))
        time.sleep(poll)


class _LocalClient(QdrantClient):
    """An embedded client that announces itself in a holder file for as long as it holds the folder."""

    def __init__(self, folder: Path):
        super().__init__(path=str(folder))
        self._holder_path: Path | None = folder / HOLDER_FILE
        _write_holder(self._holder_path)

    def close(self, grpc_grace: float | None = None, **kwargs: Any) -> None:
        holder_path = getattr(self, "_holder_path", None)
        if holder_path is not None:
            self._holder_path = None
            _remove_holder(holder_path)  # before the lock goes, so it never names the next holder
        try:
            super().close(grpc_grace=grpc_grace, **kwargs)
        except ImportError:  # closed by the garbage collector at interpreter exit; the OS frees the lock
            if sys.meta_path is not None:
                raise


# --- who holds an embedded folder ---------------------------------------------------------------


@dataclass(frozen=True)
class Holder:
    pid: int | None
    argv: list[str] | None

    def message(self, folder: Path, waited: float) -> str:
        if self.pid is None:
            who = "another process (not identified)"
        elif self.pid == os.getpid():
            who = f"this same process (pid {self.pid}) through another open client"
        else:
            who = f"process {self.pid}" + (f" ({_command_line(self.argv)})" if self.argv else "")
        return (f"the embedded Qdrant folder {folder} is in use by {who}; waited {waited:g} s. "
                f"Let it finish or stop it, raise {WAIT_ENV}, or use a Qdrant server (--qdrant-url)")


def lock_holder(folder: Path) -> Holder | None:
    """None when the folder is free; else who holds it, as far as can be told."""
    lock_path = folder / LOCK_FILE
    if not lock_path.exists() or _try_lock(lock_path):
        return None
    recorded = _read_holder(folder / HOLDER_FILE)
    if recorded is not None and _alive(recorded.pid):
        return recorded
    pid = _pid_from_lock_table(lock_path)
    return Holder(pid, _argv_of(pid) if pid is not None else None)


def _try_lock(lock_path: Path) -> bool:
    """True when the folder's lock could be taken (it is then released at once)."""
    import portalocker  # imported late, as qdrant-client does: it probes writable folders on import

    try:
        with lock_path.open("r+") as handle:
            try:
                portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
            except portalocker.exceptions.LockException:
                return False
            portalocker.unlock(handle)
            return True
    except OSError:  # unreadable lock file: let qdrant-client report it
        return True


def _write_holder(path: Path) -> None:
    record = {"pid": os.getpid(), "argv": redact_argv(sys.argv), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        temporary.write_text(json.dumps(record), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass  # the holder file is a courtesy to the next process, never a reason to fail


def _remove_holder(path: Path) -> None:
    recorded = _read_holder(path)
    if recorded is not None and recorded.pid == os.getpid():
        try:
            path.unlink()
        except OSError:
            pass


def _read_holder(path: Path) -> Holder | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pid, argv = data["pid"], data.get("argv")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(pid, int) or not (argv is None or isinstance(argv, list)):
        return None
    return Holder(pid, [str(a) for a in argv] if argv else None)


def _alive(pid: int | None) -> bool:
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pid_from_lock_table(lock_path: Path) -> int | None:
    """The pid Linux lists in /proc/locks for a flock on this file; None elsewhere or when absent."""
    try:
        inode = lock_path.stat().st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.replace("->", " ").split()
        # "1: FLOCK ADVISORY WRITE 4242 fe:00:2146417 0 EOF"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
            return int(fields[4]) if fields[4].isdigit() else None
    return None


def _argv_of(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    parts = [p.decode("utf-8", "replace") for p in raw.split(b"\0") if p]
    return parts or None


def _command_line(argv: list[str]) -> str:
    """A holder's command line on one short line (a `python -c` script can span many)."""
    return _shorten(" ".join(_shorten(" ".join(arg.split()), 60) for arg in argv), 240)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextmanager
def service_errors(where: str) -> Iterator[None]:
    """Turn a server's transport and HTTP failures into one ServiceUnavailable line."""
    try:
        yield
    except qdrant_errors.UnexpectedResponse as exc:
        hint = "; check QDRANT_API_KEY" if exc.status_code in (401, 403) else ""
        raise ServiceUnavailable(f"Qdrant at {where} answered HTTP {exc.status_code} {exc.reason_phrase}{hint}") from exc
    except (qdrant_errors.ResponseHandlingException, httpx.TransportError, ConnectionError) as exc:
        reason = getattr(exc, "source", exc)
        raise ServiceUnavailable(
            f"cannot reach Qdrant at {where} ({reason.__class__.__name__}: {reason}); "
            f"start the server or point --qdrant-url / QDRANT_URL at a running one"
        ) from exc


# --- the eval points ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    doc_id: str
    text: str
    score: float
    source: str  # absolute path of the corpus file the chunk was cut from


@dataclass(frozen=True)
class StoredChunk:
    chunk_id: str
    doc_id: str
    index: int
    text: str
    source: str


@dataclass(frozen=True)
class Manifest:
    """What the last ingest wrote, read back from the eval points' payloads."""

    fingerprint: str
    embedder_id: str
    expected_chunks: int  # how many chunks that ingest wrote
    stored_chunks: int  # eval points present now
    matching_chunks: int  # of those, carrying this fingerprint

    @property
    def complete(self) -> bool:
        return self.stored_chunks == self.matching_chunks == self.expected_chunks


def point_id(chunk_id: str) -> str:
    """The eval point id of a chunk: stable across runs, and in a namespace of its own."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


def eval_filter(*extra: models.Condition) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key=TAG_KEY, match=models.MatchValue(value=EVAL_TAG)), *extra])


class EvalIndex:
    """The eval chunks inside `collection`; never reads or writes a point without the eval tag."""

    def __init__(self, client: QdrantClient, collection: str, dim: int | None):
        """`dim=None` gives an index that can count, read and reset, but not create, add or search."""
        if not isinstance(collection, str) or not collection.strip():
            raise InputError("the Qdrant collection name is empty; set it with --collection")
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim < 1):
            raise InputError(f"vector size must be a positive integer, got {dim!r}")
        self.client = client
        self.collection = collection
        self._dim = dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            raise InputError("this eval index was opened without a vector size; it can only count, read and reset")
        return self._dim

    # -- collection --------------------------------------------------------------
    def exists(self) -> bool:
        return self._call(self.client.collection_exists, self.collection)

    def ensure_collection(self) -> None:
        """Create the collection if missing; check an existing one fits; index the tag key."""
        if not self.exists():
            self._call(
                self.client.create_collection,
                self.collection,
                vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE),
            )
        info = self._call(self.client.get_collection, self.collection)
        self._check_vectors(info.config.params.vectors)
        if TAG_KEY not in (info.payload_schema or {}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # local mode: indexes are accepted but unused
                self._call(
                    self.client.create_payload_index,
                    self.collection,
                    TAG_KEY,
                    field_schema=models.PayloadSchemaType.KEYWORD,
                    wait=True,
                )

    def _check_vectors(self, vectors: Any) -> None:
        if not isinstance(vectors, models.VectorParams):
            raise InputError(
                f"Qdrant collection {self.collection!r} uses named vectors; ragqual writes one unnamed vector "
                f"per point: choose another --collection"
            )
        if vectors.size != self.dim:
            raise InputError(
                f"Qdrant collection {self.collection!r} holds {vectors.size}-dimensional vectors but the embedder "
                f"makes {self.dim}-dimensional ones: use the embedder that filled it or another --collection"
            )
        if vectors.distance not in _ACCEPTED_DISTANCES:
            raise InputError(
                f"Qdrant collection {self.collection!r} uses {vectors.distance.value} distance; ragqual needs "
                f"Cosine or Dot: choose another --collection"
            )

    # -- writes ------------------------------------------------------------------
    def add(
        self,
        chunks: Sequence[Any],
        vectors: np.ndarray,
        sources: Sequence[str],
        *,
        fingerprint: str = "",
        embedder_id: str = "",
    ) -> None:
        """Write one eval point per chunk (`sources[i]`: the absolute path of chunk i's file).

        Refuses to overwrite a point that lacks the eval tag, however unlikely an id clash is.
        """
        array = self._check_batch(chunks, vectors, sources)
        ids = [point_id(c.chunk_id) for c in chunks]
        self._refuse_foreign(ids)
        stamp = {"fingerprint": fingerprint, "embedder": embedder_id, "total_chunks": len(chunks),
                 INGEST_KEY: uuid.uuid4().hex}
        for start in range(0, len(ids), UPSERT_BATCH):  # points built per batch: 100k at once took gigabytes
            end = start + UPSERT_BATCH
            points = [
                models.PointStruct(id=pid, vector=row.tolist(), payload=owned_payload(pid, _payload(chunk, source, stamp)))
                for pid, chunk, row, source in zip(ids[start:end], chunks[start:end], array[start:end], sources[start:end])
            ]
            self._call(self.client.upsert, self.collection, points=points, wait=True)

    def _check_batch(self, chunks: Sequence[Any], vectors: np.ndarray, sources: Sequence[str]) -> np.ndarray:
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim != 2 or array.shape != (len(chunks), self.dim):
            raise InputError(f"expected {len(chunks)} vectors of size {self.dim}, got an array of shape {array.shape}")
        if len(sources) != len(chunks):
            raise InputError(f"expected {len(chunks)} sources, one per chunk, got {len(sources)}")
        if not np.isfinite(array).all():
            raise InputError("an embedding contains NaN or infinity")
        if len({c.chunk_id for c in chunks}) != len(chunks):
            raise InputError("chunk ids repeat within one batch")
        return array

    def _refuse_foreign(self, ids: list[str]) -> None:
        for start in range(0, len(ids), UPSERT_BATCH):
            found = self._call(self.client.retrieve, self.collection, ids=ids[start : start + UPSERT_BATCH],
                               with_payload=[TAG_KEY], with_vectors=False)
            foreign = [str(p.id) for p in found if (p.payload or {}).get(TAG_KEY) != EVAL_TAG]
            if foreign:
                raise InputError(
                    f"Qdrant collection {self.collection!r} already holds point(s) {', '.join(foreign[:3])} without "
                    f"the eval tag under the ids ragqual uses; nothing was written"
                )

    def reset(self) -> int:
        """Delete ragqual's own eval points, by id; returns how many there were.

        Refuses (ForeignPoints, nothing deleted) when points ragqual did not write carry the tag.
        """
        if not self.exists():
            return 0
        ours = self.refuse_foreign_points(edited_means="they are deleted with the rest")
        for start in range(0, len(ours), UPSERT_BATCH):
            selector = models.PointIdsList(points=list(ours[start : start + UPSERT_BATCH]))
            self._call(self.client.delete, self.collection, points_selector=selector, wait=True)
        return len(ours)

    def refuse_foreign_points(self, edited_means: str = "they are rebuilt from the corpus") -> list[str]:
        """The ids of ragqual's own tagged points; ForeignPoints when any tagged point is not ours.
        Points of ours edited since ingest are warned about once, saying what the caller does with them."""
        ours: list[str] = []
        foreign: list[str] = []
        edited = 0
        for point in self._scroll(eval_filter()):
            (ours if is_owned(point.id, point.payload) else foreign).append(str(point.id))
            edited += is_owned(point.id, point.payload) and not is_intact(point.id, point.payload)
        if edited and not foreign:
            warnings.warn(f"{edited} of ragqual's eval point(s) in {self.collection!r} were edited after they were "
                          f"ingested; {edited_means}", stacklevel=2)
        if foreign:
            raise ForeignPoints(
                f"Qdrant collection {self.collection!r} holds {len(foreign)} point(s) that carry ragqual's reserved "
                f"tag ({TAG_KEY}: {EVAL_TAG}) but were not written by ragqual: {', '.join(foreign[:FOREIGN_NAMED])}"
                f"{' ...' if len(foreign) > FOREIGN_NAMED else ''}. ragqual deletes only its own points, so nothing "
                f"was changed: remove {EVAL_TAG!r} from those points' {TAG_KEY!r} payload, or give ragqual another "
                f"--collection"
            )
        return ours

    # -- reads -------------------------------------------------------------------
    def count(self) -> int:
        return self._count(eval_filter())

    def count_all(self) -> int:
        """Every point in the collection, the user's included (counted, never read)."""
        if not self.exists():
            return 0
        return self._call(self.client.count, self.collection, exact=True).count

    def _count(self, query_filter: models.Filter) -> int:
        if not self.exists():
            return 0
        return self._call(self.client.count, self.collection, count_filter=query_filter, exact=True).count

    def search(self, vector: Sequence[float] | np.ndarray, limit: int, score_threshold: float | None = None) -> list[Hit]:
        """The `limit` nearest eval chunks, best first; equal scores ordered by chunk id."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape != (self.dim,):
            raise InputError(f"query vector has size {query.size}, the index holds size {self.dim}")
        if not isinstance(limit, int) or limit < 1:
            raise InputError(f"limit must be a positive integer, got {limit!r}")
        if not self.exists():
            raise InputError(f"Qdrant collection {self.collection!r} does not exist; run `ragqual corpus ingest`")
        response = self._call(
            self.client.query_points,
            self.collection,
            query=query.tolist(),
            query_filter=eval_filter(),
            limit=limit + TIE_MARGIN,
            score_threshold=score_threshold,
            with_payload=True,
            with_vectors=False,
        )
        hits = [_hit(point) for point in response.points]
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))[:limit]

    def search_batch(self, vectors: np.ndarray, limit: int) -> list[list[Hit]]:
        """`search` for many query vectors in one request (one round trip, one filter)."""
        queries = np.asarray(vectors, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise InputError(f"query vectors must have shape (n, {self.dim}), got {queries.shape}")
        if not self.exists():
            raise InputError(f"Qdrant collection {self.collection!r} does not exist; run `ragqual corpus ingest`")
        requests = [
            models.QueryRequest(query=q.tolist(), filter=eval_filter(), limit=limit + TIE_MARGIN, with_payload=True)
            for q in queries
        ]
        responses = self._call(self.client.query_batch_points, self.collection, requests=requests)
        return [sorted((_hit(p) for p in r.points), key=lambda h: (-h.score, h.chunk_id))[:limit] for r in responses]

    def all_chunks(self) -> list[StoredChunk]:
        """Every eval chunk, ordered by document and position (e.g. to build a lexical index)."""
        chunks = [_stored(point) for point in self._scroll(eval_filter())]
        return sorted(chunks, key=lambda c: (c.doc_id, c.index, c.chunk_id))

    def manifest(self) -> Manifest | None:
        """The fingerprint and embedder of the last ingest, or None when no eval point exists."""
        if not self.exists():
            return None
        first, _ = self._call(self.client.scroll, self.collection, scroll_filter=eval_filter(), limit=1,
                              with_payload=True, with_vectors=False)
        if not first:
            return None
        payload = first[0].payload or {}
        fingerprint = str(payload.get("fingerprint") or "")
        same = models.FieldCondition(key="fingerprint", match=models.MatchValue(value=fingerprint))
        return Manifest(
            fingerprint=fingerprint,
            embedder_id=str(payload.get("embedder") or ""),
            expected_chunks=_as_int(payload.get("total_chunks")),
            stored_chunks=self.count(),
            matching_chunks=self._count(eval_filter(same)),
        )

    def _scroll(self, query_filter: models.Filter) -> Iterator[models.Record]:
        if not self.exists():
            return
        offset = None
        while True:
            page, offset = self._call(self.client.scroll, self.collection, scroll_filter=query_filter,
                                      limit=SCROLL_PAGE, offset=offset, with_payload=True, with_vectors=False)
            yield from page
            if offset is None:
                return

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with service_errors(self._where()):
            return fn(*args, **kwargs)

    def _where(self) -> str:
        options = getattr(self.client, "init_options", {}) or {}
        return str(options.get("url") or options.get("path") or options.get("location") or "the Qdrant client")


def owner_hash(pid: str, payload: Mapping[str, Any]) -> str:
    """sha256 of a point's id and its payload without the hash itself."""
    rest = {k: v for k, v in payload.items() if k != OWNER_HASH_KEY}
    return sha256_hex(canonical_json({"id": str(pid), "payload": rest}))


def owned_payload(pid: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    return {**payload, OWNER_HASH_KEY: owner_hash(pid, payload)}


def is_owned(pid: Any, payload: Mapping[str, Any] | None) -> bool:
    """True when ragqual wrote this point (see the module docstring); an older ingest's exact
    payload keys under ragqual's own id count as ragqual's too."""
    payload = payload or {}
    chunk_id = payload.get("chunk_id")
    if payload.get(TAG_KEY) != EVAL_TAG or not isinstance(chunk_id, str) or str(pid) != point_id(chunk_id):
        return False
    return isinstance(payload.get(INGEST_KEY), str) or set(payload) == _LEGACY_KEYS


def is_intact(pid: Any, payload: Mapping[str, Any] | None) -> bool:
    """True when the payload is still what ragqual wrote (its owner hash matches)."""
    payload = payload or {}
    return OWNER_HASH_KEY not in payload or payload[OWNER_HASH_KEY] == owner_hash(str(pid), payload)


def _payload(chunk: Any, source: str, stamp: Mapping[str, Any]) -> dict[str, Any]:
    return {
        TAG_KEY: EVAL_TAG,
        "doc_id": chunk.doc_id,
        "chunk_id": chunk.chunk_id,
        "index": chunk.index,
        "text": chunk.text,
        "source": source,
        **stamp,
    }


def _hit(point: models.ScoredPoint) -> Hit:
    payload = point.payload or {}
    return Hit(
        chunk_id=str(payload.get("chunk_id") or point.id),
        doc_id=str(payload.get("doc_id") or ""),
        text=str(payload.get("text") or ""),
        score=float(point.score),
        source=str(payload.get("source") or ""),
    )


def _stored(point: models.Record) -> StoredChunk:
    payload = point.payload or {}
    return StoredChunk(
        chunk_id=str(payload.get("chunk_id") or point.id),
        doc_id=str(payload.get("doc_id") or ""),
        index=_as_int(payload.get("index")),
        text=str(payload.get("text") or ""),
        source=str(payload.get("source") or ""),
    )


def _as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
