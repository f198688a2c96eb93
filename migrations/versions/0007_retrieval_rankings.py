"""Rankings stored compactly: one row per (run, strategy, question) instead of one per rank.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

A standard collection's retrieval run ranks 1000 candidates per question and strategy: Vaswani's
93 questions x 3 strategies made 279,000 `retrieval_results` rows, each appended, sealed and
verified one by one. From this revision on a run appends one `retrieval_rankings` row per
(strategy, question): `chunk_ids`, `doc_ids` and `scores` are JSON arrays in rank order (rank =
position + 1, `depth` their length), 279 rows for the same run.

* `retrieval_rankings` is history like every other table: UPDATE / DELETE (and TRUNCATE) refused,
  and on SQLite an INSERT over an existing id or (run_id, strategy, query_id) refused; its rows are
  sealed and `ragqual verify` checks them (the table is in ragqual.store.models.SEALED_TABLES).
* `retrieval_results` stays as it is: runs written before this revision keep their rows, nothing
  is rewritten or copied; new runs no longer write it.
* `v_retrieval_hits` shows both as one row per ranked chunk (run_id, strategy, query_id, rank,
  chunk_id, doc_id, score, and `stored_in` / `row_id`: the table and row that hold it), expanded
  with SQLite's json_each / PostgreSQL's jsonb_array_elements_text WITH ORDINALITY, so
  `SELECT * FROM v_retrieval_hits WHERE run_id = 7` reads as `retrieval_results` did.

Cannot be downgraded: the rankings of every run since would be lost.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TABLE = "retrieval_rankings"
UNIQUE_KEY = ("run_id", "strategy", "query_id")

OLD_ROWS = """
SELECT r.run_id, r.strategy, r.query_id, r.rank, r.chunk_id, r.doc_id, r.score,
       'retrieval_results' AS stored_in, r.id AS row_id
FROM retrieval_results r
"""

SQLITE_VIEW = f"""
CREATE VIEW v_retrieval_hits AS {OLD_ROWS}
UNION ALL
SELECT k.run_id, k.strategy, k.query_id, c.key + 1 AS rank, c.value AS chunk_id,
       json_extract(k.doc_ids, '$[' || c.key || ']') AS doc_id,
       json_extract(k.scores, '$[' || c.key || ']') AS score,
       'retrieval_rankings' AS stored_in, k.id AS row_id
FROM retrieval_rankings k, json_each(k.chunk_ids) c
"""

POSTGRES_VIEW = f"""
CREATE VIEW v_retrieval_hits AS {OLD_ROWS}
UNION ALL
SELECT k.run_id, k.strategy, k.query_id, CAST(e.n AS INTEGER) AS rank, e.chunk_id, e.doc_id,
       CAST(e.score AS DOUBLE PRECISION) AS score, 'retrieval_rankings' AS stored_in, k.id AS row_id
FROM retrieval_rankings k
CROSS JOIN LATERAL ROWS FROM (jsonb_array_elements_text(CAST(k.chunk_ids AS jsonb)),
                              jsonb_array_elements_text(CAST(k.doc_ids AS jsonb)),
                              jsonb_array_elements_text(CAST(k.scores AS jsonb)))
    WITH ORDINALITY AS e(chunk_id, doc_id, score, n)
"""


def _create_table() -> None:
    op.create_table(
        TABLE,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("strategy", sa.String(64), nullable=False),
        sa.Column("query_id", sa.String(128), nullable=False),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("chunk_ids", sa.Text, nullable=False),
        sa.Column("doc_ids", sa.Text, nullable=False),
        sa.Column("scores", sa.Text, nullable=False),
        sa.UniqueConstraint(*UNIQUE_KEY, name="uq_retrieval_rankings_query"),
    )


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    _create_table()
    for statement in guard_statements(dialect, TABLE, [UNIQUE_KEY]):
        op.execute(statement)
    op.execute(SQLITE_VIEW if dialect == "sqlite" else POSTGRES_VIEW)


def downgrade() -> None:
    raise NotImplementedError(
        "0007 cannot be downgraded: retrieval_rankings is append-only history holding every retrieval "
        "run's rankings since this revision. Copy the database instead."
    )
