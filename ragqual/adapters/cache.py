"""The response cache on diskcache: reruns of unchanged trials cost nothing.

Modes (`--cache`):
  auto        read; on a miss call the model and write the answer (default)
  write-only  always call the model and write the fresh answer
  replay      never call a model; a miss is an error naming the key
  off         neither read nor write
A corrupt or unreadable entry is a miss with a warning, never a crash.

Every ragqual cache (responses, search results, embeddings) holds data only: values are written
as bytes (JSON, or float32 arrays) through `DataOnlyDisk`, which refuses to unpickle. A cache
folder restored from an untrusted place (a CI cache from a pull request) therefore cannot run
code: a planted pickle, like any entry written by an older ragqual with pickle, is a miss, then
overwritten.

A cache is never worth a failed run, and its problems are its own, said once through the run's
`CacheNotes`: a folder that cannot be opened or written (read-only, not a folder, a full disk) is
one line naming the folder and the fix, and the run goes on without that cache (same results,
only slower); damaged or planted entries are counted and said as one line per cache at the end.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import diskcache
from diskcache.core import MODE_PICKLE

from ragqual.adapters.llm import ChatResponse
from ragqual.core.redact import redact_known
from ragqual.errors import CacheMiss, InputError

log = logging.getLogger(__name__)
MODES = ("auto", "write-only", "replay", "off")
ENTRY_VERSION = 2  # 1: a pickled dict; 2: JSON bytes
_RESPONSE_FIELDS = {f.name for f in fields(ChatResponse)}


class UnsafeEntry(ValueError):
    """A cache entry that only a pickle load could read: never loaded."""


class DataOnlyDisk(diskcache.Disk):
    """diskcache's Disk that stores and returns bytes, text and numbers only.

    `store` refuses anything that would be pickled; `fetch` refuses an entry stored as a pickle
    (raising UnsafeEntry instead of loading it) and a value file outside the cache folder.
    """

    def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN) -> Any:
        if not read and type(value) not in (bytes, str, int, float):
            raise TypeError(f"ragqual caches hold bytes only, not {type(value).__name__}")
        return super().store(value, read, key=key)

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode == MODE_PICKLE:
            raise UnsafeEntry("the entry is a pickle (planted, or written by an older ragqual); not loaded")
        if filename is not None:
            self._inside(filename)
        return super().fetch(mode, filename, value, read)

    def remove(self, file_path: str) -> None:
        self._inside(file_path)
        super().remove(file_path)

    def _inside(self, filename: str) -> None:
        root = os.path.realpath(self._directory)
        if os.path.commonpath([root, os.path.realpath(os.path.join(root, filename))]) != root:
            raise UnsafeEntry(f"the entry names a file outside the cache folder: {filename!r}")


def open_data_cache(directory: str | Path, **settings: Any) -> diskcache.Cache:
    """A diskcache folder that holds data only (see DataOnlyDisk)."""
    return diskcache.Cache(str(directory), disk=DataOnlyDisk, **settings)


def encode_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def decode_json(value: Any) -> Any:
    """The JSON value of a cache entry's bytes; ValueError when it is anything else."""
    if not isinstance(value, bytes):
        raise ValueError(f"expected JSON bytes, found {type(value).__name__}")
    return json.loads(value.decode("utf-8"))


#: what a cache folder raises when it cannot be opened or written: its own failure, never the history's
CACHE_FAULTS: tuple[type[BaseException], ...] = (OSError, sqlite3.Error, diskcache.Timeout)


@dataclass
class _Ignored:
    """The damaged or inconsistent entries of one cache folder a run skipped, counted (`CacheNotes.ignored`)."""

    count: int
    first: str  # the first entry's key and what was wrong with it
    redo: str  # what the run did instead


class CacheNotes:
    """The problems of one run's caches, each said once through `say`.

    `unusable` is said at once, the first time only: the cache folder (or one under it) cannot be
    opened or written, and the run goes on without caching. `ignored` only counts; `flush` says
    one line per cache folder with the number of entries that were unreadable or inconsistent.
    Without a `say`, the lines are RuntimeWarnings. Safe to share between threads.
    """

    def __init__(self, say: Callable[[str], None] | None = None, root: str | Path | None = None):
        self._say = say or _warn
        self.root = None if root is None else Path(root)
        self._lock = threading.Lock()
        self._unusable_said = False
        self._ignored: dict[tuple[str, str], _Ignored] = {}

    def unusable(self, folder: str | Path, exc: BaseException) -> None:
        with self._lock:
            if self._unusable_said:
                return
            self._unusable_said = True
        self._say(unusable_message(folder, exc, self.root))

    def ignored(self, what: str, folder: str | Path, key: str, reason: str, redo: str) -> None:
        with self._lock:
            found = self._ignored.setdefault((what, str(folder)), _Ignored(0, f"{key[:12]}: {reason}", redo))
            found.count += 1

    def count(self, what: str, folder: str | Path) -> int:
        found = self._ignored.get((what, str(folder)))
        return 0 if found is None else found.count

    def flush(self) -> None:
        with self._lock:
            pending, self._ignored = self._ignored, {}
        for (what, folder), found in pending.items():
            self._say(ignored_message(what, folder, found.count, found.first, found.redo))


def unusable_message(folder: str | Path, exc: BaseException, root: Path | None = None) -> str:
    """One line: which cache folder failed and why, that the run goes on without it, and the fix."""
    where = Path(folder)
    named = root if root is not None and where.is_relative_to(root) else where
    at = "" if named == where else f" at {where}"
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return (f"cache folder {named} cannot be used ({reason}{at}): the run goes on without it "
            f"(the same results, only slower); make {named} writable, set RAGQUAL_CACHE_DIR to a "
            "writable folder, or pass --cache off")


def ignored_message(what: str, folder: str | Path, count: int, first: str, redo: str) -> str:
    entries, were = ("entry", "was") if count == 1 else ("entries", "were")
    return (f"{count} {what} {entries} in {folder} {were} unreadable or inconsistent and {were} ignored "
            f"({redo}; the first, {first})")


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def open_cache(directory: str | Path, notes: CacheNotes | None = None, **settings: Any) -> diskcache.Cache | None:
    """Open (or create) a data-only cache folder; one that cannot be opened is noted and None."""
    try:
        return open_data_cache(directory, **settings)
    except CACHE_FAULTS as exc:
        (notes or CacheNotes()).unusable(directory, exc)
        return None


class ResponseCache:
    WHAT = "response-cache"

    def __init__(self, cache: diskcache.Cache | None, mode: str = "auto", notes: CacheNotes | None = None):
        if mode not in MODES:
            raise InputError(f"unknown cache mode {mode!r}: use one of {', '.join(MODES)}")
        self.cache = cache
        self.mode = mode
        self.notes = notes or CacheNotes()
        self._owns_notes = notes is None
        self.hits = 0
        self.misses = 0
        self.calls = 0
        self._count_lock = threading.Lock()  # counters are bumped from the trial loop's workers

    @classmethod
    def at(cls, directory: str | Path, mode: str = "auto", notes: CacheNotes | None = None) -> ResponseCache:
        made = cls(None, mode, notes)
        if mode != "off":
            made.cache = open_cache(directory, made.notes, size_limit=2**34)
        return made

    def _read(self, key: str) -> ChatResponse | None:
        cache = self.cache
        if cache is None:
            return None
        try:
            entry = cache.get(key, default=None)
            return None if entry is None else _response_from(decode_json(entry))
        except Exception as exc:  # noqa: BLE001 - a damaged entry is a miss, never a crash
            self.notes.ignored(self.WHAT, cache.directory, key, str(exc), "the model was asked again")
            return None

    def _write(self, key: str, response: ChatResponse) -> None:
        cache = self.cache
        if cache is None:
            return
        try:
            # the values of known credentials never reach the cache folder either (core.redact)
            cache.set(key, encode_json({"v": ENTRY_VERSION, "response": redact_known(asdict(response))}))
        except CACHE_FAULTS as exc:
            self.notes.unusable(cache.directory, exc)
            self.cache = None  # the run goes on without the cache, trying no further writes
            cache.close()

    def get_or_call(self, key: str, call: Callable[[], ChatResponse]) -> tuple[ChatResponse, bool]:
        """Return (response, hit). In replay mode a miss raises CacheMiss and calls nothing."""
        if self.mode in ("auto", "replay"):
            found = self._read(key)
            if found is not None:
                with self._count_lock:
                    self.hits += 1
                return found, True
            if self.mode == "replay":
                raise CacheMiss(
                    f"replay mode: no cached answer for key {key}; rerun with --cache auto to call the model"
                )
        with self._count_lock:
            self.misses += 1
            self.calls += 1
        response = call()
        if self.mode in ("auto", "write-only"):
            self._write(key, response)
        return response, False

    def holds(self, key: str) -> bool:
        """Whether an answer is stored under `key` (read only: no counter moves, nothing is called)."""
        if self.cache is None or self.mode in ("off", "write-only"):
            return False
        try:
            return key in self.cache
        except Exception:  # noqa: BLE001 - an unreadable cache holds nothing usable
            return False

    def stats(self) -> dict[str, Any]:
        return {"mode": self.mode, "hits": self.hits, "misses": self.misses, "calls": self.calls}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if self._owns_notes:
            self.notes.flush()


def _response_from(entry: Any) -> ChatResponse:
    """A ChatResponse from a decoded entry, checking its shape (a damaged entry is a ValueError)."""
    if not isinstance(entry, dict) or entry.get("v") != ENTRY_VERSION:
        raise ValueError("unknown entry version")
    response = entry.get("response")
    if not isinstance(response, dict) or response.keys() != _RESPONSE_FIELDS:
        raise ValueError("the entry is not a stored answer")
    if not isinstance(response["text"], str) or not isinstance(response["raw"], dict):
        raise ValueError("the stored answer has no text or raw reply")
    return ChatResponse(**response)
