"""Prices: a snapshot of the price list every run priced its trials with, and each trial's cost rows.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02

* `pricing_snapshots`: one row per distinct price list (canonical JSON in `body`, its sha256
  unique), interned like `system_prompts`: runs priced with the same list share the row.
* `trial_costs`: one row per (trial, pricing): the trial's cost under a snapshot (NULL when the
  list does not price its model or its tokens were not counted), the currency and when it was
  computed. A run appends one row per trial under the list in force; `ragqual reprice` appends
  more under another snapshot. Reports read each trial's newest row (or the rows of a pinned
  snapshot) and fall back to `trials.cost` for trials written before this revision, which stays
  as it was.

Both are history: UPDATE / DELETE (and TRUNCATE) refused, on SQLite an INSERT over an existing
key refused; their rows are sealed (ragqual.store.models.SEALED_TABLES) and `ragqual verify`
checks them.

Cannot be downgraded: the costs and snapshots are history.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "pricing_snapshots",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "trial_costs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("trial_id", sa.Integer, sa.ForeignKey("trials.id"), nullable=False),
        sa.Column("snapshot_id", sa.Integer, sa.ForeignKey("pricing_snapshots.id"), nullable=False),
        sa.Column("cost", sa.Float),
        sa.Column("currency", sa.String(3)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_trial_costs_trial", "trial_costs", ["trial_id", "id"])
    for statement in guard_statements(dialect, "pricing_snapshots", [("sha256",)]):
        op.execute(statement)
    for statement in guard_statements(dialect, "trial_costs"):
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError(
        "0011 cannot be downgraded: pricing_snapshots and trial_costs are append-only history holding "
        "every price a trial has had. Copy the database instead."
    )
