"""A small dotted-path language for reaching into JSON outputs: `a.b[0].c`, optionally `$.a`."""

from __future__ import annotations

import functools
import re
from typing import Any

from ragqual.errors import InputError

_STEP = r"\.?([^.\[\]]+)|\[(\d+)\]"


class PathNotFound(LookupError):
    """The output has nothing at the path (a missing key, an index out of range, a scalar)."""


@functools.lru_cache(maxsize=1024)
def parse_path(path: str) -> tuple[str | int, ...]:
    """Split a path into keys (str) and list indexes (int); a malformed path is an InputError."""
    text = path[1:] if path.startswith("$") else path
    step = re.compile(_STEP)  # here, not at import (re caches it): most runs read no JSON path
    steps: list[str | int] = []
    pos = 0
    while pos < len(text):
        match = step.match(text, pos)
        if match is None or (match.group(1) is not None and pos > 0 and text[pos] != "."):
            raise InputError(f"malformed path {path!r} at character {pos + (len(path) - len(text)) + 1}")
        key, index = match.groups()
        steps.append(int(index) if index is not None else key)
        pos = match.end()
    if not steps:
        raise InputError(f"empty path {path!r}")
    return tuple(steps)


def resolve_path(document: Any, path: str) -> Any:
    """The value at `path` inside `document`; raises PathNotFound naming the first missing step."""
    value = document
    walked = "$"
    for step in parse_path(path):
        if isinstance(step, int):
            if not isinstance(value, list | tuple) or step >= len(value):
                raise PathNotFound(f"path {path!r}: nothing at {walked}[{step}]")
            value = value[step]
            walked += f"[{step}]"
        else:
            if not isinstance(value, dict) or step not in value:
                raise PathNotFound(f"path {path!r}: no key {step!r} at {walked}")
            value = value[step]
            walked += f".{step}"
    return value
