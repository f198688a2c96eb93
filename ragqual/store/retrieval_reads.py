"""Read-only: the ranked hits a retrieval run stored, as `RetrievalRow`s (`retrieval_hits`), or
as each ranking's doc ids and scores (`retrieval_scores`, what a chart of scores needs: no chunk
ids and no object per hit, about five times faster on a standard collection's ~280,000 hits).

Runs written since migration 0007 hold one `retrieval_rankings` row per (strategy, question);
older runs one `retrieval_results` row per rank. Both read back the same way, sealed rows only
(ragqual.store.sealed_rows).
"""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from ragqual.store.models import RetrievalRanking, RetrievalResult
from ragqual.store.rankings import decode, expand
from ragqual.store.records import RankedScores, RetrievalRow
from ragqual.store.sealed_rows import is_covered


def retrieval_hits(engine: Engine, run_id: int) -> list[RetrievalRow]:
    """Every stored hit of the run, by strategy, question and rank (the database orders strategies
    and questions, as it did when every hit was a row)."""
    old = (select(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank, RetrievalResult.chunk_id,
                  RetrievalResult.doc_id, RetrievalResult.score)
           .where(RetrievalResult.run_id == run_id, is_covered("retrieval_results"))
           .order_by(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank, RetrievalResult.id))
    compact = (select(RetrievalRanking.strategy, RetrievalRanking.query_id, RetrievalRanking.chunk_ids,
                      RetrievalRanking.doc_ids, RetrievalRanking.scores)
               .where(RetrievalRanking.run_id == run_id, is_covered("retrieval_rankings"))
               .order_by(RetrievalRanking.strategy, RetrievalRanking.query_id, RetrievalRanking.id))
    with Session(engine) as session:
        hits = [RetrievalRow(*row) for row in session.execute(old)]
        rankings = session.execute(compact).all()
    if not rankings:
        return hits
    expanded = [hit for ranking in rankings for hit in expand(*ranking)]
    if not hits:
        return expanded
    # ragqual writes a run in one layout; rows of both (written by hand) are merged by the same key
    return sorted(hits + expanded, key=lambda h: (h.strategy, h.query_id, h.rank))


def retrieval_scores(engine: Engine, run_id: int) -> list[RankedScores]:
    """Every stored ranking of the run as its doc ids and scores in rank order, by strategy and
    question; the same hits as `retrieval_hits` (a ranking of either layout, or of both merged by
    rank), one entry per ranking instead of one row per hit."""
    old = (select(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank,
                  RetrievalResult.doc_id, RetrievalResult.score)
           .where(RetrievalResult.run_id == run_id, is_covered("retrieval_results"))
           .order_by(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank, RetrievalResult.id))
    compact = (select(RetrievalRanking.strategy, RetrievalRanking.query_id, RetrievalRanking.doc_ids,
                      RetrievalRanking.scores)
               .where(RetrievalRanking.run_id == run_id, is_covered("retrieval_rankings"))
               .order_by(RetrievalRanking.strategy, RetrievalRanking.query_id, RetrievalRanking.id))
    with Session(engine) as session:
        old_rows = session.execute(old).all()
        rankings = [RankedScores(strategy, query_id, decode(doc_ids), decode(scores))
                    for strategy, query_id, doc_ids, scores in session.execute(compact)]
    if not old_rows:
        return rankings
    ranked: dict[tuple[str, str], list[tuple[int, str, float]]] = {}
    for strategy, query_id, rank, doc_id, score in old_rows:
        ranked.setdefault((strategy, query_id), []).append((rank, doc_id, score))
    for strategy, query_id, doc_ids, scores in rankings:
        ranked.setdefault((strategy, query_id), []).extend(zip(range(1, len(doc_ids) + 1), doc_ids, scores))
    if not rankings:  # the database's order, as retrieval_hits keeps it
        return [_columns(key, hits) for key, hits in ranked.items()]
    # ragqual writes a run in one layout; rows of both (written by hand) are merged by the same key
    return [_columns(key, sorted(hits, key=lambda hit: hit[0])) for key, hits in sorted(ranked.items())]


def _columns(key: tuple[str, str], hits: list[tuple[int, str, float]]) -> RankedScores:
    return RankedScores(*key, [doc_id for _, doc_id, _ in hits], [score for _, _, score in hits])
