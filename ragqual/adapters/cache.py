"""The response cache on diskcache: reruns of unchanged trials cost nothing.

Modes (`--cache`):
  auto        read; on a miss call the model and write the answer (default)
  write-only  always call the model and write the fresh answer
  replay      never call a model; a miss is an error naming the key
  off         neither read nor write
A corrupt or unreadable entry is a miss with a warning, never a crash.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import diskcache

from ragqual.adapters.llm import ChatResponse
from ragqual.errors import CacheMiss, InputError

log = logging.getLogger(__name__)
MODES = ("auto", "write-only", "replay", "off")
ENTRY_VERSION = 1


def open_cache(directory: str | Path) -> diskcache.Cache | None:
    """Open (or create) a cache directory; an unusable one is a warning and no cache."""
    try:
        return diskcache.Cache(str(directory), size_limit=2**34)
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
            if entry.get("v") != ENTRY_VERSION:
                raise ValueError("unknown entry version")
            return ChatResponse(**entry["response"])
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"cache entry {key[:12]} is corrupt ({exc}); treating as a miss", stacklevel=3)
            return None

    def _write(self, key: str, response: ChatResponse) -> None:
        if self.cache is None:
            return
        try:
            self.cache.set(key, {"v": ENTRY_VERSION, "response": asdict(response)})
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"could not write cache entry {key[:12]} ({exc})", stacklevel=3)

    def get_or_call(self, key: str, call: Callable[[], ChatResponse]) -> tuple[ChatResponse, bool]:
        """Return (response, hit). In replay mode a miss raises CacheMiss and calls nothing."""
        if self.mode in ("auto", "replay"):
            found = self._read(key)
            if found is not None:
                self.hits += 1
                return found, True
            if self.mode == "replay":
                raise CacheMiss(
                    f"replay mode: no cached answer for key {key}; rerun with --cache auto to call the model"
                )
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
