"""Canonical JSON and sha256: the one way ragqual turns a value into a stable key."""

from __future__ import annotations

import hashlib
import json
from typing import Any


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant white space, identical across processes. One
    encoder serves every call (what `json.dumps` with these options would build each time)."""
    return _CANONICAL.encode(value)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def hash_value(value: Any) -> str:
    """sha256 of the canonical JSON of `value`."""
    return sha256_hex(canonical_json(value))
