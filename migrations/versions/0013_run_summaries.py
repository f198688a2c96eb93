"""Run summaries: what `history` shows of a run, appended and sealed when the run finishes.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

`history --limit 0` averaged every score and metric row of every run on each call (a million
trials and three million metric rows on a large history). From this revision:

* `run_summaries` (id, run_id, seal_id, scorer_name, body, created_at): one row per finished
  run, appended in the transaction of its `finished` event and sealed with it. `body` is JSON:
  the rows of the two aggregates `history` runs (ragqual.store.queries `score_mean_rows` for
  `scorer_name`, `metric_mean_rows` of every metric), `seal_id` the run's newest seal when it
  was computed (NULL when the run had none: rows under a watermark). Readers use a summary only
  while it is current (ragqual.store.run_summaries) and read the rows otherwise; `ragqual
  verify` recomputes every current summary.

History: UPDATE / DELETE (and TRUNCATE) refused, on SQLite an INSERT over an existing id
refused; its rows are sealed (ragqual.store.models.SEALED_TABLES). Runs finished before this
revision have no summary and are read from their rows, as before.

Cannot be downgraded: the summaries are history.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "run_summaries",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("seal_id", sa.Integer, sa.ForeignKey("seals.id")),
        sa.Column("scorer_name", sa.String(128), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_run_summaries_run", "run_summaries", ["run_id", "id"])
    for statement in guard_statements(dialect, "run_summaries"):
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError(
        "0013 cannot be downgraded: `run_summaries` is append-only history. Copy the database instead."
    )
