"""`ragqual merge A.db B.db --into C.db`: the runs of several SQLite histories appended to one.

Every check comes before the first row is written: each source must be a ragqual history that
`verify` finds intact (else exit 2, naming the first finding and the command that shows them
all); a source at an older schema is upgraded in a temporary copy, never in place; a source
given twice, or the target itself given as a source, is refused. Then each source's runs are
copied (ragqual.store.merge), recording the source's head digest in the target.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from ragqual.errors import InputError
from ragqual.store import db
from ragqual.store.merge import (
    MergedRun,
    SourceHistory,
    copy_sqlite,
    describe_source,
    merge_into,
    merged_before,
    plan_merge,
    raw_head,
)
from ragqual.store.runstore import RunStore
from ragqual.store.verify import verify


@dataclass(frozen=True)
class SourceMerge:
    source: SourceHistory
    path: Path
    upgraded_from: str | None  # the source's schema revision when a copy was upgraded for the merge
    runs: list[MergedRun]


@dataclass(frozen=True)
class MergeOutcome:
    target: str
    sources: list[SourceMerge]
    head: str | None  # the target's head digest after the merge


@dataclass
class _Checked:
    path: Path
    engine: Engine
    source: SourceHistory
    upgraded_from: str | None


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def _target_path(into: str) -> Path | None:
    return None if "://" in into else Path(into).resolve()


@contextmanager
def _at_head(path: Path, scratch: Path) -> Iterator[tuple[Engine, str | None]]:
    """An engine on the source at head: the file itself, or an upgraded copy under `scratch`."""
    engine = db.make_engine(_sqlite_url(path), scratch=True)
    try:
        revision = db.current_revision(engine)
        if revision is None:
            raise InputError(f"{path} is not a ragqual history (no schema revision): nothing was written")
        if revision == db.head_revision():
            yield engine, None
            return
        if revision not in _known_revisions():
            raise InputError(f"{path} is at schema {revision}, which this ragqual does not know (made by a newer "
                             "one?): merge with that version; nothing was written")
        copy = scratch / f"{len(list(scratch.iterdir()))}-{path.name}"
        copy_sqlite(str(path), str(copy))
        upgraded = db.make_engine(_sqlite_url(copy), scratch=True)
        try:
            db.upgrade(upgraded)
            yield upgraded, revision
        finally:
            upgraded.dispose()
    finally:
        engine.dispose()


def _known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    return {s.revision for s in ScriptDirectory.from_config(db.alembic_config("sqlite://")).walk_revisions()}


def _check(path: Path, engine: Engine, upgraded_from: str | None, original: Engine) -> _Checked:
    verdict = verify(engine)
    if not verdict.intact:
        first = verdict.findings[0]
        raise InputError(f"{path} fails verify ({len(verdict.findings)} finding(s), first: {first}): "
                         f"`ragqual --db {path} verify` lists them; nothing was written")
    source = describe_source(engine, path.name)
    if upgraded_from is not None:  # the head to keep is the one the source file itself holds
        head, seals = raw_head(original)
        source = SourceHistory(source.name, source.history, head, seals, source.run_heads, source.run_rows)
    return _Checked(path, engine, source, upgraded_from)


def merge_histories(sources: Sequence[Path], into: str) -> MergeOutcome:
    """Check every source, then append their runs to the history `into` (created when missing)."""
    paths = [Path(p).resolve() for p in sources]
    target = _target_path(into)
    for path in paths:
        if not path.is_file():
            raise InputError(f"{path}: no such history file; nothing was written")
        if target is not None and path == target:
            raise InputError(f"{path} is both a source and the target (--into): nothing was written")
    if len(set(paths)) < len(paths):
        raise InputError("a source file is given twice: nothing was written")
    with tempfile.TemporaryDirectory(prefix="ragqual-merge-") as scratch, _sources(paths, Path(scratch)) as checked:
        histories = [c.source.history for c in checked if c.source.history]
        if len(set(histories)) < len(histories):
            raise InputError("two sources are copies of one history (their first runs were sealed alike): merge one "
                             "of them; "
                             "nothing was written")
        store = RunStore.open(_sqlite_url(target) if target is not None else into)
        try:
            before = merged_before(store.engine)
            plans = [plan_merge(c.source, before) for c in checked]  # every refusal before the first write
            done = [SourceMerge(c.source, c.path, c.upgraded_from, merge_into(store, c.engine, c.source, plan))
                    for c, plan in zip(checked, plans, strict=True)]
            return MergeOutcome(into, done, raw_head(store.engine)[0])
        finally:
            store.engine.dispose()


@contextmanager
def _sources(paths: Sequence[Path], scratch: Path) -> Iterator[list[_Checked]]:
    from contextlib import ExitStack

    with ExitStack() as stack:
        checked = []
        for path in paths:
            original = stack.enter_context(_engine(path))
            engine, upgraded_from = stack.enter_context(_at_head(path, scratch))
            checked.append(_check(path, engine, upgraded_from, original))
        yield checked


@contextmanager
def _engine(path: Path) -> Iterator[Engine]:
    engine = db.make_engine(_sqlite_url(path), scratch=True)
    try:
        yield engine
    finally:
        engine.dispose()
