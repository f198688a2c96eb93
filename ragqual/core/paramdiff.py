"""What differs between two runs' settings: their stored parameters flattened to dotted keys and
compared key by key. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragqual.core.runlabel import LABEL_KEYS

MISSING = "(absent)"
# Provenance that differs between any two runs, and the run's label (name, tags): not settings.
NOT_SETTINGS = frozenset({"run_id", "started_at", "ended_at", "status", "argv"})
FINGERPRINT_KEY = "corpus_fingerprint"


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


def run_settings(params: Mapping[str, Any] | None, corpus_fingerprint: str | None) -> dict[str, Any]:
    """A run's settings as two runs are compared: its stored parameters without its label (name,
    tags), and the corpus fingerprint it ran on (shortened to the 12 characters people read)."""
    kept = {k: v for k, v in (params or {}).items() if k not in LABEL_KEYS}
    return {**kept, FINGERPRINT_KEY: (corpus_fingerprint or "-")[:12]}


def setting_changes(base_params: Mapping[str, Any] | None, base_fingerprint: str | None,
                    new_params: Mapping[str, Any] | None, new_fingerprint: str | None) -> list[tuple[str, Any, Any]]:
    """`differences` of two runs' `run_settings`: what `compare`, `report` and `history` show."""
    return differences(run_settings(base_params, base_fingerprint), run_settings(new_params, new_fingerprint),
                       NOT_SETTINGS)


def summary(diff: list[tuple[str, Any, Any]], width: int = 60, value_limit: int = 16) -> str:
    """One short line of a diff for a table cell: `key old->new`, comma-separated, the corpus
    fingerprint last, cut to about `width` characters with `(+N more)`; "" when nothing differs."""
    def short(value: Any) -> str:
        text = str(value)
        return text if len(text) <= value_limit else text[: value_limit - 3] + "..."

    ordered = sorted(diff, key=lambda d: d[0] == FINGERPRINT_KEY)
    items = [f"{key} {short(old)}->{short(new)}" for key, old, new in ordered]
    shown: list[str] = []
    for i, item in enumerate(items):
        rest = len(items) - i - 1
        tail = f" (+{rest} more)" if rest else ""
        if shown and len(", ".join([*shown, item]) + tail) > width:
            return ", ".join(shown) + f" (+{len(items) - len(shown)} more)"
        shown.append(item)
    return ", ".join(shown)
