"""Covering indexes for the history and comparison reads.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29

`ragqual history` averages every trial's newest score and every metric row of the runs it
lists. With these two indexes both reads are answered from the index alone, without visiting
the (wide) table rows:

* trial_scores (trial_id, scorer_name, scorer_version, id, score, perfect): a trial's newest
  row of one scorer and its score;
* metric_values (run_id, metric, scorer_version, group_key, value): one run's metric rows in
  the order the per-group means are computed in.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

INDEXES = (
    ("ix_trial_scores_trial_scorer", "trial_scores",
     ["trial_id", "scorer_name", "scorer_version", "id", "score", "perfect"]),
    ("ix_metric_values_run_metric_version", "metric_values",
     ["run_id", "metric", "scorer_version", "group_key", "value"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _ in INDEXES:
        op.drop_index(name, table_name=table)
