"""The response-cache key: one definition, used by every backend.

Everything that can change an answer is in it: provider, model name, the model
digest where the backend reports one, system prompt, every message, every
sampling option, the output format or schema, and the repeat index, so that
repeats are distinct samples and a replay never counts as a new sample. Credentials in the
model's URL enter only as a hash (ragqual.core.redact), so the key changes with them while the
material hashed holds no secret.
"""

from __future__ import annotations

from typing import Any

from ragqual.core.hashing import hash_value
from ragqual.core.redact import mask_userinfo, secret_digest

CACHE_KEY_VERSION = 1


def response_cache_key(
    *,
    provider: str,
    model: str,
    digest: str | None,
    request_material: dict[str, Any],
    repeat_index: int,
) -> str:
    material = {
        "v": CACHE_KEY_VERSION,
        "provider": provider,
        "model": mask_userinfo(model),  # not the registry: a key never depends on what was read before
        "digest": digest,
        "request": request_material,
        "repeat": repeat_index,
    }
    credentials = secret_digest(model)
    if credentials is not None:  # a model URL with userinfo: its hash, never the secret itself
        material["credentials"] = credentials
    return hash_value(material)

