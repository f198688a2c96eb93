"""The batched row digests as ragqual 58a616b computed them, frozen: tests/store/test_row_digests.py
checks that today's `sealing.row_digests` gives the same digests to the last byte. Do not edit."""

from __future__ import annotations

import hashlib
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring
from typing import Any

from datetime import UTC, datetime

from ragqual.core.hashing import canonical_json, sha256_hex

ROW_DIGEST_CHARS = 16


def _norm(value: Any) -> Any:
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, bytes):
        return value.hex()
    return value


def row_digest(values: Mapping[str, Any]) -> str:
    """The digest of one row's content: every non-NULL column but `id`."""
    body = {k: _norm(v) for k, v in values.items() if k != "id" and v is not None}
    return sha256_hex(canonical_json(body))[:ROW_DIGEST_CHARS]


def _json_float(value: float) -> str:
    if not math.isfinite(value):
        return encode_basestring(repr(value))  # _norm: a non-finite float is stored as its repr
    return float.__repr__(value)


_ENCODE: dict[type, Callable[[Any], str | None]] = {
    str: encode_basestring,
    int: int.__repr__,
    float: _json_float,
    bool: lambda v: "true" if v else "false",
    type(None): lambda v: None,  # NULL: the column is left out of the row's JSON
}


_PLAIN: dict[type, Callable[[Any], str]] = {str: encode_basestring, int: int.__repr__, float: float.__repr__}
NONES = itertools.repeat(None)


def _encode_column(values: Sequence[Any], slow: set[int]) -> list[str | None]:
    """Each value as canonical JSON text (None for NULL); positions it cannot write join `slow`."""
    kinds = set(map(type, values))
    if kinds == {str}:
        return list(map(encode_basestring, values))
    if kinds == {int}:
        return list(map(int.__repr__, values))
    if kinds == {float} and all(map(math.isfinite, values)):
        return list(map(float.__repr__, values))
    if len(kinds) == 2 and type(None) in kinds:  # one type and NULLs (a metric without a value)
        (kind,) = kinds - {type(None)}
        plain = _PLAIN.get(kind)
        if plain is not None and (kind is not float or all(math.isfinite(v) for v in values if v is not None)):
            return [None if v is None else plain(v) for v in values]
    out: list[str | None] = []
    for n, value in enumerate(values):
        encode = _ENCODE.get(type(value))
        if encode is None:
            slow.add(n)
            out.append("")
        else:
            out.append(encode(value))
    return out


def row_digests(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[tuple[int, str]]:
    """(id, digest) of each row, `names` naming the rows' columns (one of them `id`);
    each digest equal to `row_digest(dict(zip(names, row)))`."""
    if not rows:
        return []
    at = names.index("id")
    order = sorted((i for i in range(len(names)) if i != at), key=lambda i: names[i])
    template = "{" + ",".join(encode_basestring(names[i]).replace("%", "%%") + ":%s" for i in order) + "}"
    columns = list(zip(*rows, strict=True))
    slow: set[int] = set()
    encoded = [_encode_column(columns[i], slow) for i in order]
    keys = [encode_basestring(names[i]) for i in order]
    rows_encoded = list(zip(*encoded))
    if any(None in column for column in encoded):
        texts = _with_nulls(keys, template, rows_encoded)
    else:
        texts = [template % values for values in rows_encoded]
    sha, width = hashlib.sha256, ROW_DIGEST_CHARS
    digests = [sha(text.encode("utf-8")).hexdigest()[:width] for text in texts]
    for n in slow:
        digests[n] = row_digest(dict(zip(names, rows[n], strict=True)))
    return list(zip(columns[at], digests, strict=True))


def _with_nulls(keys: Sequence[str], template: str, rows: Sequence[tuple[str | None, ...]]) -> list[str]:
    """Each row's canonical JSON when some rows hold NULLs: the rows of a batch share a few NULL
    patterns (a trial's texts go by hash, its error and cost are NULL), so each pattern gets its
    own %-template once and its rows are joined by it (the same text `_without_nulls` joins)."""
    templates: dict[tuple[bool, ...], tuple[str, Callable[[tuple[str | None, ...]], Any] | None]] = {}
    out = []
    for values in rows:
        if None not in values:
            out.append(template % values)
            continue
        pattern = tuple(map(operator.is_, values, NONES))
        found = templates.get(pattern)
        if found is None:
            kept = [n for n, null in enumerate(pattern) if not null]
            form = "{" + ",".join(keys[n].replace("%", "%%") + ":%s" for n in kept) + "}"
            getter: Callable[[tuple[str | None, ...]], Any] | None = (
                operator.itemgetter(*kept) if len(kept) > 1 else None)
            found = templates[pattern] = (form, getter)
        form, pick = found
        if pick is not None:
            out.append(form % pick(values))
        else:
            out.append(_without_nulls(keys, values))
    return out


def _without_nulls(keys: Sequence[str], values: Sequence[str | None]) -> str:
    """One row's canonical JSON with its NULL columns left out (as `row_digest` leaves them out)."""
    return "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, values, strict=True) if v is not None) + "}"
