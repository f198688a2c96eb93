"""The on-disk state of a qdrant-edge shard, read without loading qdrant-edge or qdrant-client
(the search cache keys warm runs on it; see ragqual.adapters.search_cache)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CONFIG_FILE = "edge_config.json"


def edge_state(folder: Path, collection: str) -> str | None:
    """A digest of a collection's shard that every write changes; None when the shard does not exist.

    Built from file contents, not modification times: qdrant-edge rewrites its memory-mapped
    files (same bytes, new mtime) whenever a shard is loaded or closed. Every update goes through
    the write-ahead log (wal/) and bumps the segments' versions (segment.json), so hashing those and
    the configuration files catches any write, ragqual's or anyone else's.
    """
    shard = Path(folder) / collection
    if not (shard / CONFIG_FILE).is_file():
        return None
    files = shard_files(shard)
    seen = tuple((str(p), *_identity(p)) for p in files)
    if _LAST.get(shard) is not None and _LAST[shard][0] == seen:
        return _LAST[shard][1]  # not one file touched since this process hashed them
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(shard).as_posix().encode() + b"\0")
        _hash_data(path, digest)
    _LAST[shard] = (seen, digest.hexdigest())
    return _LAST[shard][1]


def shard_files(shard: Path) -> list[Path]:
    """The files the state hashes, in path order: every `.json` file, and every file under a folder
    named `wal` (or named `wal` itself), symbolic links to files included, linked folders not
    entered. The same list as `Path.rglob("*")` filtered by `suffix` and `parts` gives, at a
    fraction of the cost: the state is read several times per run."""
    found = []
    for directory, _, names in os.walk(shard):
        in_wal = "wal" in Path(directory).relative_to(shard).parts
        for name in names:
            if in_wal or name == "wal" or (name.endswith(".json") and name != ".json"):  # Path.suffix == ".json"
                path = os.path.join(directory, name)
                if os.path.isfile(path):
                    found.append(Path(path))
    return sorted(found)


_LAST: dict[Path, tuple[tuple[tuple[object, ...], ...], str]] = {}
"""Per shard, the files' identities and digest this process last computed: a run asks for the
state several times (the ingest check, the search cache, the remembered retrievals) and the log
alone is tens of megabytes."""


def _identity(path: Path) -> tuple[int, int, int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _hash_data(path: Path, digest: "hashlib._Hash") -> None:
    """Feed the file's bytes to `digest`, skipping the holes of a sparse file (qdrant-edge
    preallocates 32 MB log segments that are mostly holes), each extent with its offset."""
    with path.open("rb") as handle:
        fd, size, offset = handle.fileno(), path.stat().st_size, 0
        while offset < size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
                end = os.lseek(fd, start, os.SEEK_HOLE)
            except (OSError, AttributeError):  # no data after offset, or no sparse-file support
                start, end = (offset, size) if not hasattr(os, "SEEK_DATA") else (size, size)
            if start >= size:
                return
            handle.seek(start)
            digest.update(str(start).encode() + b":")
            remaining = end - start
            while remaining > 0:
                block = handle.read(min(remaining, 1 << 20))
                if not block:
                    return
                digest.update(block)
                remaining -= len(block)
            offset = end
