"""The compact layout of a run's rankings (migration 0007): one definition of how a ranking is
written into a `retrieval_rankings` row and read back as one `RetrievalRow` per rank.

`chunk_ids`, `doc_ids` and `scores` are JSON arrays in rank order (rank = position + 1): compact
separators, non-ASCII kept as is (sqlite3 shows ids as they are), scores as Python writes a float
(its shortest repr, so reading back gives the same float bit for bit). NaN or infinity is refused:
it is not JSON, and the view `v_retrieval_hits` could not expand the row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragqual.store.records import RankingRow, RetrievalRow

COLUMNS = ("run_id", "strategy", "query_id", "depth", "chunk_ids", "doc_ids", "scores")

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def encode(run_id: int, ranking: RankingRow) -> tuple[Any, ...]:
    """The row's values in COLUMNS' order."""
    depth = len(ranking.chunk_ids)
    if len(ranking.doc_ids) != depth or len(ranking.scores) != depth:
        raise ValueError(f"ranking {ranking.strategy}/{ranking.query_id}: {depth} chunk ids, "
                         f"{len(ranking.doc_ids)} doc ids and {len(ranking.scores)} scores")
    return (run_id, ranking.strategy, ranking.query_id, depth, _encode(list(ranking.chunk_ids)),
            _encode(list(ranking.doc_ids)), _encode([float(s) for s in ranking.scores]))


def decode(column: str) -> list[Any]:
    """One stored array column (`chunk_ids`, `doc_ids` or `scores`) back as a list, rank order."""
    values: list[Any] = json.loads(column)
    return values


def expand(strategy: str, query_id: str, chunk_ids: str, doc_ids: str, scores: str) -> list[RetrievalRow]:
    """One stored ranking as its hits, rank 1 first."""
    chunks: Sequence[str] = decode(chunk_ids)
    return [RetrievalRow(strategy, query_id, rank, chunk, doc, score)
            for rank, chunk, doc, score in zip(range(1, len(chunks) + 1), chunks, decode(doc_ids),
                                               decode(scores), strict=True)]
