"""Distractors: another collection's documents added to the index as eval points that are never relevant.

Their ids carry DISTRACTOR_PREFIX, so they can never collide with a corpus document or be named by a
golden, and the leak guard checks each retrieved chunk against the folder it claims to come from: a
distractor chunk must resolve to a document of the distractor folder, any other chunk to one of the
corpus folder, exactly as without distractors.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from ragqual.core.corpus import Document
from ragqual.pipeline.leak_guard import SourcedHit, check_hits

DISTRACTOR_PREFIX = "distractor:"


class _Hit(NamedTuple):
    chunk_id: str
    doc_id: str
    source: str


def as_distractors(documents: Iterable[Document]) -> list[Document]:
    """The documents with their ids prefixed (a distractor is never a corpus document)."""
    return [dataclasses.replace(d, doc_id=DISTRACTOR_PREFIX + d.doc_id) for d in documents]


def is_distractor(doc_id: str) -> bool:
    return doc_id.startswith(DISTRACTOR_PREFIX)


def root_of(doc_id: str, corpus_dir: str | os.PathLike[str],
            distractor_dir: str | os.PathLike[str] | None) -> tuple[Path, str]:
    """The folder a document's file lies in, and its id as that folder knows it."""
    if distractor_dir is not None and is_distractor(doc_id):
        return Path(distractor_dir), doc_id.removeprefix(DISTRACTOR_PREFIX)
    return Path(corpus_dir), doc_id


def check_hits_in(hits: Sequence[SourcedHit], corpus_dir: str | os.PathLike[str],
                  distractor_dir: str | os.PathLike[str] | None) -> None:
    """The leak guard over corpus and distractor hits, each against its own folder."""
    if distractor_dir is None:
        check_hits(hits, corpus_dir)
        return
    check_hits([h for h in hits if not is_distractor(h.doc_id)], corpus_dir)
    check_hits([_Hit(h.chunk_id, h.doc_id.removeprefix(DISTRACTOR_PREFIX), h.source) for h in hits if is_distractor(h.doc_id)],
               distractor_dir)
