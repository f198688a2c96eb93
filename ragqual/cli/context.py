"""What every command shares: settings, the history store, the response cache (opened lazily)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragqual.config import Settings


@dataclass
class AppContext:
    settings: Settings
    db_url_override: str | None
    cache_mode: str
    verbose: int
    as_json: bool
    _open: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, *, db_url: str | None, cache_mode: str, verbose: int, as_json: bool) -> AppContext:
        return cls(Settings.load(), db_url, cache_mode, verbose, as_json)

    @property
    def db_url(self) -> str:
        return self.settings.db_url(self.db_url_override)

    def store(self, *, auto_create: bool = True):  # -> RunStore
        if "store" not in self._open:
            from ragqual.store.runstore import RunStore

            self._open["store"] = RunStore.open(self.db_url, auto_create=auto_create)
        return self._open["store"]

    def response_cache(self):  # -> ResponseCache
        if "cache" not in self._open:
            from ragqual.adapters.cache import ResponseCache

            self._open["cache"] = ResponseCache.at(self.settings.cache_dir(), self.cache_mode)
        return self._open["cache"]

    def close(self) -> None:
        cache = self._open.pop("cache", None)
        if cache is not None:
            cache.close()
        store = self._open.pop("store", None)
        if store is not None:
            store.engine.dispose()
