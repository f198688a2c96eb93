"""What differs between two runs' settings: their stored parameters flattened to dotted keys and
compared key by key. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MISSING = "(absent)"


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"retrieval": {"context_k": 5}}` -> `{"retrieval.context_k": 5}`; lists stay whole."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def differences(base: Mapping[str, Any], new: Mapping[str, Any], ignore: frozenset[str] = frozenset()) -> list[tuple[str, Any, Any]]:
    """(key, base value, new value) for every key whose value differs, sorted by key; a key only
    one side has shows `(absent)` on the other."""
    a, b = flatten(base), flatten(new)
    keys = sorted((set(a) | set(b)) - ignore)
    return [(k, a.get(k, MISSING), b.get(k, MISSING)) for k in keys if a.get(k, MISSING) != b.get(k, MISSING)]


def describe(diff: list[tuple[str, Any, Any]], limit: int = 80) -> list[str]:
    """One `key: base -> new` line each, long values shortened."""
    def short(value: Any) -> str:
        text = str(value)
        return text if len(text) <= limit else text[: limit - 3] + "..."

    return [f"{key}: {short(old)} -> {short(new)}" for key, old, new in diff]
