"""What every run shares: settings, the history store, the response cache (opened lazily).

The CLI builds one from its global flags; the Python API (`ragqual.Project`) builds one from a
project folder. Messages meant for a person go through `notify` (stderr by default). The caches
of a run share one `cache_notes`: a cache folder that cannot be used is said once, at once, and
damaged entries once per cache with a count when the context closes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragqual.config import Settings


@dataclass
class AppContext:
    """One command's or API caller's shared state: settings, global flags, and what it opened (closed by `close`)."""

    settings: Settings
    db_url_override: str | None
    cache_mode: str
    verbose: int
    as_json: bool
    notify: Callable[[str], None] = field(default=lambda message: print(message, file=sys.stderr), repr=False)
    _open: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, *, db_url: str | None, cache_mode: str, verbose: int, as_json: bool) -> AppContext:
        return cls(Settings.load(), db_url, cache_mode, verbose, as_json)

    @property
    def db_url(self) -> str:
        from ragqual.core.redact import remember_url_secrets

        url = self.settings.db_url(self.db_url_override)
        remember_url_secrets(url)  # its password is masked wherever it could be stored or printed
        return url

    def read_only_db_url(self) -> str:
        """The database URL for a command that only reads it (no project: exit 2 naming the cwd)."""
        if not self.settings.project_found and not self.settings.explicit_db(self.db_url_override):
            self._no_project(False)
        return self.db_url

    def store(self, *, auto_create: bool = True):  # -> RunStore
        """The history store. The project root is found by walking up (config.find_project_root).
        A read-only command (`auto_create=False`) never creates a database: without a project it
        names the working directory and the fix, without a database it says so. A command that
        records runs starts a project in the working directory when there is none, and says so."""
        if "store" not in self._open:
            from ragqual.store.db import require_existing
            from ragqual.store.runstore import RunStore

            if not self.settings.project_found and not self.settings.explicit_db(self.db_url_override):
                self._no_project(auto_create)
            if not auto_create:
                require_existing(self.db_url)
            self._open["store"] = RunStore.open(self.db_url, auto_create=auto_create)
        return self._open["store"]

    def history(self) -> Any:  # -> sqlalchemy.Engine
        """The engine of an existing history, for readers (reports, pages): never creates a database."""
        return self.store(auto_create=False).engine

    def _no_project(self, starting: bool) -> None:
        from pathlib import Path

        from ragqual.config import no_project_message
        from ragqual.errors import InputError

        if not starting:
            raise InputError(no_project_message(Path.cwd()))
        self.notify(f"ragqual: no project above {Path.cwd()}: starting one here ({self.settings.results_dir})")

    def cache_notes(self):  # -> CacheNotes
        """Where every cache of this run says its problems: `ragqual: warning: ...` lines."""
        if "cache_notes" not in self._open:
            from ragqual.adapters.cache import CacheNotes

            self._open["cache_notes"] = CacheNotes(lambda m: self.notify(f"ragqual: warning: {m}"), self.settings.cache_dir())
        return self._open["cache_notes"]

    def response_cache(self):  # -> ResponseCache
        if "cache" not in self._open:
            from ragqual.adapters.cache import ResponseCache

            self._open["cache"] = ResponseCache.at(self.settings.cache_dir(), self.cache_mode, self.cache_notes())
        return self._open["cache"]

    def close(self) -> None:
        cache = self._open.pop("cache", None)
        if cache is not None:
            cache.close()
        notes = self._open.pop("cache_notes", None)
        if notes is not None:
            notes.flush()
        store = self._open.pop("store", None)
        if store is not None:
            store.engine.dispose()
