"""The response-cache key: one definition, used by every backend.

Everything that can change an answer is in it: provider, model name, the model
digest where the backend reports one, system prompt, every message, every
sampling option, the output format or schema, and the repeat index, so that
repeats are distinct samples and a replay never counts as a new sample. Credentials in the
model's URL enter only as a hash (ragqual.core.redact), so the key changes with them while the
material hashed holds no secret.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

from ragqual.core.hashing import canonical_json, hash_value
from ragqual.core.redact import mask_userinfo, secret_digest

CACHE_KEY_VERSION = 1


_SLOT = "\x00request\x00"
_SLOT_JSON = canonical_json(_SLOT)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""`canonical_json`'s encoder, built once (json.dumps builds one per call, a few microseconds)."""


def request_json(request_material: dict[str, Any]) -> str:
    """The request's part of the key material as the key encodes it (for `request_json=`)."""
    return _CANONICAL.encode(request_material)


def response_cache_key(
    *,
    provider: str,
    model: str,
    digest: str | None,
    request_material: dict[str, Any] | None = None,
    repeat_index: int,
    request_json: str | bytes | None = None,
) -> str:
    """sha256 of the canonical JSON of the key material. The request is given as `request_material`
    or already encoded (`request_json`, from the function of that name, as text or its UTF-8
    bytes): the key is the same."""
    if (request_material is None) == (request_json is None):
        raise TypeError("response_cache_key needs request_material or request_json, not both")
    if request_json is None:
        return hash_value(_material(provider, model, digest, request_material, repeat_index))
    head, tail = key_frame(provider, model, digest, repeat_index)
    hashed = hashlib.sha256(head)
    hashed.update(request_json.encode("utf-8") if isinstance(request_json, str) else request_json)
    hashed.update(tail)
    return hashed.hexdigest()


def _material(provider: str, model: str, digest: str | None, request: Any, repeat_index: int) -> dict[str, Any]:
    material = {
        "v": CACHE_KEY_VERSION,
        "provider": provider,
        "model": mask_userinfo(model),  # not the registry: a key never depends on what was read before
        "digest": digest,
        "request": request,
        "repeat": repeat_index,
    }
    credentials = secret_digest(model)
    if credentials is not None:  # a model URL with userinfo: its hash, never the secret itself
        material["credentials"] = credentials
    return material


@lru_cache(maxsize=1024, typed=True)  # typed: a repeat of True (JSON true) is not a repeat of 1
def key_frame(provider: str, model: str, digest: str | None, repeat_index: int) -> tuple[bytes, bytes]:
    """The UTF-8 bytes of the key material before and after the request's JSON. The same for every
    request of one model and repeat, so it is encoded once, not once per trial (a pure function
    of its arguments: the memo cannot change a key)."""
    # "request" sorts last but for "v", a number: the slot's last occurrence is the request's place
    head, _, tail = _CANONICAL.encode(_material(provider, model, digest, _SLOT, repeat_index)).rpartition(_SLOT_JSON)
    return head.encode("utf-8"), tail.encode("utf-8")
