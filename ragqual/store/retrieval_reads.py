"""Read-only: the ranked hits a retrieval run stored, as `RetrievalRow`s."""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from ragqual.store.models import RetrievalResult
from ragqual.store.records import RetrievalRow


def retrieval_hits(engine: Engine, run_id: int) -> list[RetrievalRow]:
    """Every stored hit of the run, by strategy, question and rank."""
    query = (select(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank, RetrievalResult.chunk_id,
                    RetrievalResult.doc_id, RetrievalResult.score)
             .where(RetrievalResult.run_id == run_id)
             .order_by(RetrievalResult.strategy, RetrievalResult.query_id, RetrievalResult.rank, RetrievalResult.id))
    with Session(engine) as session:
        return [RetrievalRow(*row) for row in session.execute(query).all()]
