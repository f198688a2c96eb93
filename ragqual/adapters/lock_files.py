"""The goldens lock on disk: hashing the locked files, writing and reading `ragqual.lock.json`,
and the lock state a run records (`ragqual.core.lockfile` holds the format and the diff)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path

from ragqual.core.hashing import sha256_hex
from ragqual.core.lockfile import DRIFTED, LOCK_FILE, LOCKED, NO_LOCK, Drift, Lock, drift, parse_lock, prompts_drifted
from ragqual.errors import InputError


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def _files_under(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def hash_files(base: Path, roots: Mapping[str, str | None]) -> dict[str, str]:
    """Relative path -> `sha256:<hex>` of every file under each root (hidden files left out)."""
    out: dict[str, str] = {}
    for root in roots.values():
        if root is None:
            continue
        for path in _files_under(base / root):
            out[_relative(path, base)] = "sha256:" + sha256_hex(path.read_bytes())
    return dict(sorted(out.items()))


def build_lock(base: Path, roots: Mapping[str, Path | None], prompts: Mapping[str, str]) -> Lock:
    """The lock of the files under `roots` (corpus, goldens, glossary), relative to `base`."""
    relative = {name: None if path is None else _relative(path, base) for name, path in sorted(roots.items())}
    return Lock(relative, hash_files(base, relative), {k: "sha256:" + sha256_hex(v) for k, v in sorted(prompts.items())})


def write_lock(path: Path, lock: Lock) -> None:
    """Written whole (a temporary file renamed over it) or not at all."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(lock.to_text())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_lock(path: Path) -> Lock | None:
    """The lock at `path`, None when there is none; a bad lock file is an InputError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the lock file: {exc}")
    return parse_lock(text, str(path))


def lock_drift(path: Path, prompts: Mapping[str, str] | None = None) -> tuple[Lock | None, list[Drift]]:
    """The lock at `path` and what drifted from it (prompt texts compared when given)."""
    lock = read_lock(path)
    if lock is None:
        return None, []
    current = {k: "sha256:" + sha256_hex(v) for k, v in prompts.items()} if prompts is not None else None
    return lock, drift(lock, hash_files(path.parent, lock.roots), current)


def lock_state(project: Path, prompt_hashes: Collection[str] = ()) -> tuple[str, list[Drift]]:
    """(locked | drifted | no lock, the drifted files) for a run starting in `project` with these
    system-prompt hashes; an unreadable lock counts as drifted (the run still starts)."""
    path = project / LOCK_FILE
    try:
        lock, found = lock_drift(path)
    except InputError:
        return DRIFTED, [Drift(LOCK_FILE, "changed")]
    if lock is None:
        return NO_LOCK, []
    if prompts_drifted(lock, prompt_hashes):
        found.append(Drift("prompt:(system prompt of this run)", "changed"))
    return (DRIFTED if found else LOCKED), found
