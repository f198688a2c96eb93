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
code: a planted pickle, like any entry written by an older ragqual with pickle, is a miss with a
warning, then overwritten.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import asdict, fields
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


def open_cache(directory: str | Path) -> diskcache.Cache | None:
    """Open (or create) a cache directory; an unusable one is a warning and no cache."""
    try:
        return open_data_cache(directory, size_limit=2**34)
    except Exception as exc:  # noqa: BLE001 - a broken cache must never stop a run
        warnings.warn(f"response cache at {directory} is unusable ({exc}); running without it", stacklevel=2)
        return None


class ResponseCache:
    def __init__(self, cache: diskcache.Cache | None, mode: str = "auto"):
        if mode not in MODES:
            raise InputError(f"unknown cache mode {mode!r}: use one of {', '.join(MODES)}")
        self.cache = cache
        self.mode = mode
        self.hits = 0
        self.misses = 0
        self.calls = 0
        self._count_lock = threading.Lock()  # counters are bumped from the trial loop's workers

    @classmethod
    def at(cls, directory: str | Path, mode: str = "auto") -> ResponseCache:
        return cls(None if mode == "off" else open_cache(directory), mode)

    def _read(self, key: str) -> ChatResponse | None:
        if self.cache is None:
            return None
        try:
            entry = self.cache.get(key, default=None)
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"cache entry {key[:12]} unreadable ({exc}); treating as a miss", stacklevel=3)
            return None
        if entry is None:
            return None
        try:
            return _response_from(decode_json(entry))
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"cache entry {key[:12]} is corrupt ({exc}); treating as a miss", stacklevel=3)
            return None

    def _write(self, key: str, response: ChatResponse) -> None:
        if self.cache is None:
            return
        try:
            # the values of known credentials never reach the cache folder either (core.redact)
            body = redact_known(asdict(response))
            self.cache.set(key, encode_json({"v": ENTRY_VERSION, "response": body}))
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"could not write cache entry {key[:12]} ({exc})", stacklevel=3)

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

    def stats(self) -> dict[str, Any]:
        return {"mode": self.mode, "hits": self.hits, "misses": self.misses, "calls": self.calls}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def _response_from(entry: Any) -> ChatResponse:
    """A ChatResponse from a decoded entry, checking its shape (a damaged entry is a ValueError)."""
    if not isinstance(entry, dict) or entry.get("v") != ENTRY_VERSION:
        raise ValueError("unknown entry version")
    response = entry.get("response")
    if not isinstance(response, dict) or set(response) != _RESPONSE_FIELDS:
        raise ValueError("the entry is not a stored answer")
    if not isinstance(response["text"], str) or not isinstance(response["raw"], dict):
        raise ValueError("the stored answer has no text or raw reply")
    return ChatResponse(**response)
