"""A run's name and tags: what a person calls a run (`--name`, `--tag key=value`).

They are stored inside the run's parameters, `params["name"]` (text) and `params["tags"]` (an
object of key -> value), so they are sealed with the run and need no column of their own. They
label the run; they are not settings: a comparison of two runs' settings leaves them out
(`LABEL_KEYS`). Pure: no I/O.

A tag key is letters, digits, `_`, `.` and `-`; a value is any text without control characters.
On a command that also selects goldens by tag (`--tag T`), a value holding `=` labels the run and
one without selects goldens (`split_tag_values`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ragqual.errors import InputError

NAME_KEY = "name"
TAGS_KEY = "tags"
LABEL_KEYS = frozenset({NAME_KEY, TAGS_KEY})
TAG_KEY = re.compile(r"[A-Za-z0-9_.-]+")
MAX_TEXT = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class RunLabel:
    """A run's name (None: unnamed) and its tags, sorted by key."""

    name: str | None = None
    tags: tuple[tuple[str, str], ...] = ()

    def as_params(self) -> dict[str, Any]:
        """What is merged into the run's stored parameters (nothing for an unlabelled run)."""
        out: dict[str, Any] = {}
        if self.name is not None:
            out[NAME_KEY] = self.name
        if self.tags:
            out[TAGS_KEY] = dict(self.tags)
        return out

    def tag_dict(self) -> dict[str, str]:
        return dict(self.tags)

    def tag_text(self) -> str:
        """`k=v k2=v2`, or "" without tags."""
        return " ".join(f"{k}={v}" for k, v in self.tags)

    def text(self) -> str:
        """`"chunks-128" [dataset=v2]` to follow a run's id in a title; "" for an unlabelled run."""
        parts = [f'"{self.name}"'] if self.name is not None else []
        if self.tags:
            parts.append(f"[{self.tag_text()}]")
        return " ".join(parts)

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None) -> RunLabel:
        """The label a run was stored with (unlabelled for runs older than labels)."""
        params = params or {}
        name = params.get(NAME_KEY)
        tags = params.get(TAGS_KEY)
        pairs = sorted((str(k), str(v)) for k, v in tags.items()) if isinstance(tags, Mapping) else []
        return cls(str(name) if name is not None else None, tuple(pairs))


def run_label(name: str | None, tags: Iterable[str] | Mapping[str, str] = (), *,
              name_flag: str = "--name", tag_flag: str = "--tag") -> RunLabel:
    """A validated label from `--name TEXT` and `--tag key=value` (repeatable), or from a mapping.
    Bad input is an InputError naming the flag."""
    pairs = [(str(k), str(v)) for k, v in tags.items()] if isinstance(tags, Mapping) else \
        [parse_tag(text, tag_flag) for text in tags]
    seen: dict[str, str] = {}
    for key, value in pairs:
        _check_key(key, f"{key}={value}", tag_flag)
        _check_text(value, f"{tag_flag} {key}={value}")
        if key in seen and seen[key] != value:
            raise InputError(f"{tag_flag} {key} is given twice ({seen[key]!r} and {value!r}): give each key once")
        seen[key] = value
    return RunLabel(_check_name(name, name_flag), tuple(sorted(seen.items())))


def parse_tag(text: str, flag: str = "--tag") -> tuple[str, str]:
    """`key=value` -> (key, value); the key checked here, the value by `run_label`."""
    key, sep, value = text.partition("=")
    if not sep:
        raise InputError(f"{flag} {text!r}: expected key=value (for example {flag} dataset=v2)")
    _check_key(key, text, flag)
    return key, value


def split_tag_values(values: Iterable[str]) -> tuple[list[str], list[str]]:
    """(golden tags, run tags) of a command's `--tag` values: `key=value` labels the run, a bare
    word selects the goldens that carry it."""
    golden: list[str] = []
    run: list[str] = []
    for value in values:
        (run if "=" in value else golden).append(value)
    return golden, run


def _check_key(key: str, text: str, flag: str) -> None:
    if not TAG_KEY.fullmatch(key):
        raise InputError(f"{flag} {text!r}: the key {key!r} must be letters, digits, '_', '.' or '-' "
                         "(key=value)")


def _check_text(value: str, where: str) -> None:
    if not value.strip():
        raise InputError(f"{where}: the value must not be empty (key=value)")
    if _CONTROL.search(value) or len(value) > MAX_TEXT:
        raise InputError(f"{where}: the value must be one line of at most {MAX_TEXT} characters")


def _check_name(name: str | None, flag: str) -> str | None:
    if name is None:
        return None
    if not name.strip():
        raise InputError(f"{flag} must not be empty")
    if _CONTROL.search(name) or len(name) > MAX_TEXT:
        raise InputError(f"{flag} {name[:40]!r}: a name is one line of at most {MAX_TEXT} characters")
    return name.strip()
