"""Drop the index a wider one already serves: `ix_metric_values_run_metric`.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02

`ix_metric_values_run_metric` (run_id, metric) is a strict prefix of
`ix_metric_values_run_metric_version` (run_id, metric, scorer_version, group_key, value, added by
0003): every lookup the first serves, the second serves the same way. SQLite's EXPLAIN QUERY PLAN
of every statement the read commands send (report, compare, history, audit, verify, whatif,
export, rescore; tests/store/test_redundant_indexes.py) is the same with the wider index in its
place, with no extra sort. The quick-start eval kept 389 KB of pages for it (about 250 bytes per
trial); the wider index stays, and no row changes.

Other prefix indexes stay: `ix_trials_run_id`, `ix_assertion_results_trial_id`,
`ix_trial_scores_trial_id` and `ix_run_events_run_id` end in the row id, which their wider
siblings do not, and reads that order by id would sort again without them.

Downgrade creates the index again (no history row depends on it).
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

DROPPED = (("ix_metric_values_run_metric", "metric_values", ["run_id", "metric"]),)


def upgrade() -> None:
    for name, table, _ in DROPPED:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, columns in DROPPED:
        op.create_index(name, table, columns)
