"""Embed many texts in batches behind a progress bar (rate and time left), so that a large corpus
shows how it is going and an interrupted run loses at most one batch: each batch goes through the
caller's embedder — with the on-disk cache (adapters.embedders.CachedEmbedder) every finished
batch is stored, and the next run embeds only what is missing."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Protocol

import numpy as np

BATCH = 256
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"


class TextEmbedder(Protocol):
    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_in_batches(texts: Sequence[str], embedder: TextEmbedder, *, progress: bool, batch_size: int = BATCH,
                     desc: str = "embedding") -> np.ndarray:
    """One vector per text, in order; a tqdm bar on stderr when `progress`."""
    from tqdm import tqdm

    parts: list[np.ndarray] = []
    with tqdm(total=len(texts), desc=desc, unit="chunk", disable=not progress, file=sys.stderr, leave=False,
              bar_format=BAR_FORMAT, smoothing=0.1) as bar:
        for start in range(0, len(texts), batch_size):
            batch = list(texts[start : start + batch_size])
            parts.append(np.asarray(embedder.embed(batch), dtype=np.float32))
            bar.update(len(batch))
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
