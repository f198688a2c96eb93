"""`ragqual corpus lock` and `corpus check --locked`: pinning the corpus, the goldens, the glossary
and the built-in prompts to content hashes in `ragqual.lock.json` at the project's root (format:
`ragqual.core.lockfile`; files: `ragqual.adapters.lock_files`)."""

from __future__ import annotations

from pathlib import Path

from ragqual.adapters.lock_files import build_lock, lock_drift, write_lock
from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.core.lockfile import LOCK_FILE, Drift, Lock
from ragqual.errors import InputError
from ragqual.pipeline.prompt import RAG_SYSTEM_PROMPT, REWRITE_SYSTEM_PROMPT


def locked_prompts() -> dict[str, str]:
    """The built-in prompts whose versions (hashes) the lock pins."""
    return {"rag-system": RAG_SYSTEM_PROMPT, "rewrite-system": REWRITE_SYSTEM_PROMPT}


def lock_path(app: AppContext) -> Path:
    return app.settings.root / LOCK_FILE


def write_project_lock(app: AppContext, opts: CorpusOptions) -> tuple[Path, Lock]:
    """Lock the corpus, goldens and glossary the options name (validated first: a lock of goldens
    that do not load would pin a broken set)."""
    from ragqual.app.corpus_ops import check_corpus

    check_corpus(app, opts)
    settings = app.settings
    glossary = settings.path("glossary") if settings.values.get("glossary") else None
    roots = {"corpus": settings.path("corpus", opts.corpus), "goldens": settings.path("goldens", opts.goldens),
             "glossary": glossary if glossary is not None and glossary.is_file() else None}
    path = lock_path(app)
    lock = build_lock(path.parent, roots, locked_prompts())
    write_lock(path, lock)
    return path, lock


def project_drift(app: AppContext) -> tuple[Path, list[Drift]]:
    """What drifted from the project's lock; no lock is an InputError naming the command that writes it."""
    path = lock_path(app)
    lock, found = lock_drift(path, locked_prompts())
    if lock is None:
        raise InputError(f"no lock file {path}: write one with `ragqual corpus lock` and commit it")
    return path, found
