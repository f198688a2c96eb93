"""Read-only: the ranked hits a retrieval run stored, as `RetrievalRow`s.

Runs written since migration 0007 hold one `retrieval_rankings` row per (strategy, question);
older runs one `retrieval_results` row per rank. Both read back the same way.
"""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from ragqual.store.models import RetrievalRanking, RetrievalResult
from ragqual.store.rankings import expand
from ragqual.store.records import RetrievalRow


def retrieval_hits(engine: Engine, run_id: int) -> list[RetrievalRow]:
    """Every stored hit of the run, by strategy, question and rank (the database orders strategies
    and questions, as it did when every hit was a row)."""
    old = (select(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank, RetrievalResult.chunk_id,
                  RetrievalResult.doc_id, RetrievalResult.score)
           .where(RetrievalResult.run_id == run_id)
           .order_by(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank, RetrievalResult.id))
    compact = (select(RetrievalRanking.strategy, RetrievalRanking.query_id, RetrievalRanking.chunk_ids,
                      RetrievalRanking.doc_ids, RetrievalRanking.scores)
               .where(RetrievalRanking.run_id == run_id)
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
