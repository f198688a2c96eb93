"""The leak guard: stop a run when retrieval returns a chunk that is not from the corpus.

The eval filter keeps the user's own points out of every eval search, but anything else
that writes the reserved tag (an old ingest from another folder, a careless script)
would slip through it and be scored as if it were corpus text. Each retrieved chunk's
stored `source` must therefore resolve, as a real path and not by its name, to a
document directly inside the corpus folder, and to the very document the chunk claims.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Protocol

from ragqual.adapters.files import display_path, resolve_source_in_corpus
from ragqual.errors import LeakDetected

MAX_NAMED = 5


class SourcedHit(Protocol):
    @property
    def chunk_id(self) -> str: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def source(self) -> str: ...


def leak_reason(hit: SourcedHit, corpus_dir: str | os.PathLike[str]) -> str | None:
    """Why the hit is not corpus text, or None when it is."""
    if not hit.source:
        return "has no source path"
    doc_id = resolve_source_in_corpus(hit.source, corpus_dir)
    if doc_id is None:
        return f"comes from {hit.source}, which is not a document in {display_path(corpus_dir)}"
    if doc_id != hit.doc_id:
        return f"claims document {hit.doc_id!r} but comes from {hit.source} (document {doc_id!r})"
    return None


def check_hits(hits: Iterable[SourcedHit], corpus_dir: str | os.PathLike[str]) -> None:
    """Raise LeakDetected naming every retrieved chunk that does not come from the corpus."""
    leaks = [(hit, reason) for hit in hits if (reason := leak_reason(hit, corpus_dir)) is not None]
    if not leaks:
        return
    named = "; ".join(f"chunk {hit.chunk_id!r} {reason}" for hit, reason in leaks[:MAX_NAMED])
    more = f" (and {len(leaks) - MAX_NAMED} more)" if len(leaks) > MAX_NAMED else ""
    raise LeakDetected(
        f"leak guard: retrieved {named}{more}. Points carrying the eval tag that ragqual did not ingest "
        f"from this corpus are in the collection: run `ragqual corpus ingest` to rebuild the eval points"
    )
