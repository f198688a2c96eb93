"""Cache folders opened on a background thread while the run does other work.

Opening a diskcache folder rewrites its settings and then checkpoints its write-ahead log (diskcache
closes and reopens its connection at the end of `Cache.__init__`): two or four fsyncs, ~15-20 ms of
waiting on the disk and ~3 ms of CPU per folder. A warm `ragqual retrieval` opens two (the search
cache and the embedding cache); opened on a thread while the main thread opens the history (CPU:
SQLAlchemy and the models), the waits overlap it instead of adding to the run.

Only folders that already hold a cache are opened here, and a failure here is silent: the folder
is then opened again in the foreground by its usual owner (`SearchCache`, `CachedEmbedder`), which
notes the problem at the point of the run where it always did. So opening ahead creates nothing,
says nothing and changes nothing a run reads or writes; it only moves the waiting.

diskcache keeps one SQLite connection per thread: the opener thread closes its own once the folder
is open (nothing is written after the checkpoint, so closing it waits for nothing), and the thread
that takes the cache opens its own on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragqual.adapters.cache import open_data_cache

DATABASE = "cache.db"  # diskcache's file in a cache folder (diskcache.core.DBNAME)


class CacheOpener:
    """Opens `folders` (those that hold a cache already) on a daemon thread; `take` hands one over."""

    def __init__(self, folders: Sequence[Path]):
        self._wanted = [Path(f) for f in folders if (Path(f) / DATABASE).is_file()]
        self._opened: dict[Path, Any] = {}
        self._thread: threading.Thread | None = None
        if self._wanted:
            self._thread = threading.Thread(target=self._open_all, name="ragqual-cache-open", daemon=True)
            self._thread.start()

    def _open_all(self) -> None:
        for folder in self._wanted:
            try:
                cache = open_data_cache(folder)
                cache.close()  # this thread's connection; the taker's opens on first use
            except Exception:  # noqa: BLE001 - opened again in the foreground, which says what is wrong
                continue
            self._opened[folder] = cache

    def _wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def take(self, folder: Path) -> Any | None:
        """The opened `diskcache.Cache` of `folder` (the caller owns it from now on), or None: not
        asked for, not a cache yet, failed to open, or taken already."""
        self._wait()
        return self._opened.pop(Path(folder), None)

    def close(self) -> None:
        """Wait for the thread and close what nobody took."""
        self._wait()
        for cache in self._opened.values():
            cache.close()
        self._opened.clear()
