"""The corpus fingerprint: one hash naming everything that shapes what retrieval can find.

Two measurements are comparable only when they ran over the same corpus bytes, cut into
chunks the same way and embedded by the same model with the same prefixes. All of that
enters the fingerprint, so baselines and result folders are keyed by it and a comparison
across different fingerprints can be refused instead of reporting a made-up regression.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragqual.core.corpus import Document
from ragqual.core.hashing import hash_value
from ragqual.errors import InputError

FINGERPRINT_VERSION = 1


def corpus_fingerprint(documents: Iterable[Document], chunk_config: Mapping[str, Any], embedder_id: str) -> str:
    """sha256 hex over every document's id and byte hash, the chunking config and the embedder identity."""
    if not embedder_id.strip():
        raise InputError("the embedder identity is empty; it must name the model (e.g. 'ollama:nomic-embed-text')")
    return hash_value({
        "version": FINGERPRINT_VERSION,
        "documents": sorted([d.doc_id, d.sha256] for d in documents),
        "chunking": dict(chunk_config),
        "embedder": embedder_id,
    })

