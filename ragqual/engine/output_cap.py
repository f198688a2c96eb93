"""A bound on the raw output a trial stores: a 10 MB answer must not become 10 MB of history.

The stored raw output is the subject's `raw` as JSON. When it is larger than the cap
(RAGQUAL_MAX_OUTPUT_BYTES, default 256 KiB of UTF-8 JSON), every string in it, and the parsed
output when it is text, is cut to the longest common length that brings the JSON under the cap.
The answer text and its copies inside `raw` are cut alike, so the trial is scored on exactly
the text that is kept and a later `rescore` (which parses `raw`) sees the same text. The trial
row records the original size in bytes and a truncated flag.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Any

from ragqual.engine.subject import SubjectResult
from ragqual.errors import InputError

CAP_ENV = "RAGQUAL_MAX_OUTPUT_BYTES"
DEFAULT_CAP = 256 * 1024
MIN_CAP = 1024


@dataclass(frozen=True)
class Capped:
    result: SubjectResult
    original_bytes: int
    truncated: bool


def output_cap(value: int | None = None) -> int:
    """The cap in bytes: `value`, else RAGQUAL_MAX_OUTPUT_BYTES, else 256 KiB (at least 1 KiB)."""
    raw = str(value) if value is not None else (os.environ.get(CAP_ENV, "").strip() or str(DEFAULT_CAP))
    if not raw.isdigit() or int(raw) < MIN_CAP:
        raise InputError(f"{CAP_ENV} must be a whole number of bytes, at least {MIN_CAP}, got {raw!r}")
    return int(raw)


def json_size(value: Any, encoded: str | None = None) -> int:
    """Bytes of `value` as the store writes it (JSON with sorted keys, UTF-8; a string as it is);
    `encoded`: that JSON when the caller has it already."""
    if isinstance(value, str):
        return len(value.encode())
    return len((encoded if encoded is not None else json.dumps(value, ensure_ascii=False, sort_keys=True)).encode())


def cut_strings(value: Any, length: int) -> Any:
    """`value` with every string longer than `length` characters cut to `length`."""
    if isinstance(value, str):
        return value[:length]
    if isinstance(value, dict):
        return {k: cut_strings(v, length) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [cut_strings(v, length) for v in value]
    return value


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def fitting_length(raw: Any, cap: int) -> int:
    """The longest string length at which `raw`'s JSON fits in `cap` bytes (binary search)."""
    low, high = 0, _longest_string(raw)
    while low < high:
        mid = (low + high + 1) // 2
        if json_size(cut_strings(raw, mid)) <= cap:
            low = mid
        else:
            high = mid - 1
    return low


def cap_result(result: SubjectResult, cap: int, size: int | None = None) -> Capped:
    """The result as it will be stored and scored, its raw output's original size, and whether it
    was cut (`size`: `json_size(result.raw)` when the caller has measured it)."""
    size = json_size(result.raw) if size is None else size
    if size <= cap:
        return Capped(result, size, False)
    length = fitting_length(result.raw, cap)
    output = result.output[:length] if isinstance(result.output, str) else result.output
    return Capped(replace(result, raw=cut_strings(result.raw, length), output=output), size, True)
