"""Embed many texts in batches behind a progress bar (rate and time left), so that a large corpus
shows how it is going and an interrupted run loses at most one batch: each batch goes through the
caller's embedder — with the on-disk cache (adapters.embedders.CachedEmbedder) every finished
batch is stored, and the next run embeds only what is missing."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

BATCH = 256
MATRIX_MIN = 1024  # texts; below this, reading them one by one is cheap
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"


class TextEmbedder(Protocol):
    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class MatrixCache(Protocol):
    """An embedder that can also keep a whole list of texts' vectors as one entry
    (adapters.embedders.CachedEmbedder)."""

    def read_matrix(self, texts: Sequence[str]) -> np.ndarray | None: ...

    def store_matrix(self, texts: Sequence[str], vectors: np.ndarray) -> None: ...


def embed_in_batches(texts: Sequence[str], embedder: TextEmbedder, *, progress: bool, batch_size: int = BATCH,
                     desc: str = "embedding") -> np.ndarray:
    """One vector per text, in order; a tqdm bar on stderr when `progress`.

    With an embedder that keeps matrices (MatrixCache) and at least MATRIX_MIN texts, the whole
    result is also kept as one entry: a warm run over a large corpus reads one entry instead of
    one per text (11,000 reads took about a second)."""
    matrices = embedder if isinstance(embedder, MatrixCache) and len(texts) >= MATRIX_MIN else None
    if matrices is not None:
        found = matrices.read_matrix(texts)
        if found is not None:
            return found
    parts: list[np.ndarray] = []
    if not progress:  # no bar: tqdm is not even imported (a warm run reads every vector from the cache)
        for start in range(0, len(texts), batch_size):
            parts.append(np.asarray(embedder.embed(list(texts[start : start + batch_size])), dtype=np.float32))
    else:
        from tqdm import tqdm

        with tqdm(total=len(texts), desc=desc, unit="chunk", file=sys.stderr, leave=False,
                  bar_format=BAR_FORMAT, smoothing=0.1) as bar:
            for start in range(0, len(texts), batch_size):
                batch = list(texts[start : start + batch_size])
                parts.append(np.asarray(embedder.embed(batch), dtype=np.float32))
                bar.update(len(batch))
    out = np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
    if matrices is not None:
        matrices.store_matrix(texts, out)
    return out
