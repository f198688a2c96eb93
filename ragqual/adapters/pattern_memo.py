"""The golden patterns earlier runs checked, remembered in the project's cache folder.

Loading goldens checks every mustInclude / mustNotInclude pattern by compiling it with `regex`
(ragqual.core.goldens): ~0.05 s for the bundled goldens' ~200 patterns, in every run that loads
them, though they rarely change. After goldens load without a problem, their patterns are
written to `golden-patterns.json` in the cache folder, with the `regex` version and the version
of the pattern check (`PATTERN_CHECKS`); the next run vouches for them
(ragqual.core.textmatch.vouch) and compiles each one only when it first searches with it. A
pattern not in the file (new or edited) is checked as before, so a bad one is still named by
file and line. The file is a cache like the others (ragqual.adapters.cache): anything wrong with
it (missing, unreadable, another version, not this shape) means no pattern is taken as checked,
and a failed write is skipped.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection
from pathlib import Path

from ragqual.adapters.search_cache import package_version
from ragqual.core.goldens import PATTERN_CHECKS

FILE_NAME = "golden-patterns.json"
MAX_PATTERNS = 50_000  # past this the file starts again from the current goldens' patterns


def _stamp() -> dict[str, object]:
    """The `regex` version is its installed distribution's (`package_version`), read without
    importing `regex`: a run whose patterns are all remembered compiles none, and importing it only
    to read `regex.__version__` (the same text) was ~0.01 s of such a run."""
    return {"regex": package_version("regex"), "checks": PATTERN_CHECKS}


def load(cache_dir: Path) -> set[str]:
    """The patterns remembered as checked under this `regex` version and these checks (none when
    the file is missing, unreadable or from another version)."""
    try:
        body = json.loads((cache_dir / FILE_NAME).read_bytes())
    except (OSError, ValueError):
        return set()
    if not isinstance(body, dict) or {k: body.get(k) for k in _stamp()} != _stamp():
        return set()
    patterns = body.get("patterns")
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        return set()
    return set(patterns)


def save(cache_dir: Path, patterns: Collection[str], known: Collection[str]) -> None:
    """Remember `patterns` (all checked) beside `known` (what `load` gave); nothing is written when
    they are all known already. Written whole to a temporary file, then renamed over the old one."""
    if all(p in known for p in patterns):
        return
    merged = set(known) | set(patterns)
    if len(merged) > MAX_PATTERNS:
        merged = set(patterns)
    body = json.dumps({**_stamp(), "patterns": sorted(merged)}, ensure_ascii=False).encode("utf-8")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".golden-patterns-", dir=cache_dir)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(body)
            os.replace(temporary, cache_dir / FILE_NAME)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass  # a cache that cannot be written costs the check next time, nothing else
