"""The goldens lock (`ragqual.lock.json`): the content hash of every corpus file, golden file and
the glossary, and the versions (hashes) of the built-in prompts, written by `ragqual corpus lock`.

The lock's JSON (`LOCK_FORMAT`), keys sorted, two-space indented, one trailing newline, so the same
files always give the same bytes:

    {"format": "ragqual-lock/1",
     "roots": {"corpus": "corpus", "goldens": "goldens", "glossary": "glossary.txt"},
     "files": {"corpus/water.md": "sha256:...", "goldens/water.jsonl": "sha256:..."},
     "prompts": {"rag-system": "sha256:...", "rewrite-system": "sha256:..."}}

Paths are relative to the lock's folder with `/` separators. Reading files and git is the adapters'
work; this module builds, parses and diffs.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragqual.errors import InputError

LOCK_FORMAT = "ragqual-lock/1"
LOCK_FILE = "ragqual.lock.json"
LOCKED, DRIFTED, NO_LOCK = "locked", "drifted", "no lock"


@dataclass(frozen=True)
class Lock:
    """A lock file's content (`LOCK_FORMAT`): its roots, file hashes and prompt versions."""

    roots: dict[str, str | None]
    files: dict[str, str]  # relative path -> "sha256:<hex>"
    prompts: dict[str, str] = field(default_factory=dict)

    def to_text(self) -> str:
        body = {"format": LOCK_FORMAT, "roots": self.roots, "files": self.files, "prompts": self.prompts}
        return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Drift:
    """One difference between a lock and the files (or prompts) now."""

    path: str
    change: str  # "added", "removed", "changed"

    def text(self) -> str:
        return f"{self.change}: {self.path}"


def parse_lock(text: str, name: str = LOCK_FILE) -> Lock:
    """A lock file's text; anything but the format above is an InputError naming the file."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}: not valid JSON ({exc.msg}); rewrite it with `ragqual corpus lock`")
    if not isinstance(data, dict) or data.get("format") != LOCK_FORMAT:
        raise InputError(f"{name}: not a {LOCK_FORMAT} lock file; rewrite it with `ragqual corpus lock`")
    roots, files, prompts = data.get("roots"), data.get("files"), data.get("prompts", {})
    if not (isinstance(roots, dict) and isinstance(files, dict) and isinstance(prompts, dict)
            and _strings(files) and _strings(prompts)):
        raise InputError(f"{name}: `roots`, `files` and `prompts` must be objects of strings; "
                         "rewrite it with `ragqual corpus lock`")
    return Lock(dict(roots), dict(files), dict(prompts))


def _strings(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _diff(locked: Mapping[str, str], current: Mapping[str, str], prefix: str = "") -> list[Drift]:
    out = [Drift(prefix + p, "removed") for p in locked if p not in current]
    out += [Drift(prefix + p, "added") for p in current if p not in locked]
    out += [Drift(prefix + p, "changed") for p in locked if p in current and locked[p] != current[p]]
    return sorted(out, key=lambda d: (d.path, d.change))


def drift(lock: Lock, files: Mapping[str, str], prompts: Mapping[str, str] | None = None) -> list[Drift]:
    """Every locked file (and prompt, when `prompts` is given) that was added, removed or changed."""
    found = _diff(lock.files, files)
    if prompts is not None:
        found += _diff(lock.prompts, prompts, prefix="prompt:")
    return found


def prompts_drifted(lock: Lock, used: Collection[str]) -> bool:
    """A run's prompt hashes (`sha256` hex) not all among the locked prompt versions."""
    locked = {v.removeprefix("sha256:") for v in lock.prompts.values()}
    return bool(set(used) - locked)


def lock_params(status: str, drifted: Collection[Drift] = ()) -> dict[str, Any]:
    """What a run records in its params about the lock."""
    out: dict[str, Any] = {"status": status}
    if drifted:
        out["drifted"] = [d.text() for d in drifted][:20]
    return {"goldens_lock": out}
