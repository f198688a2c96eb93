"""Human labels: one row per verdict a person gave a trial on one criterion.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02

`ragqual label RUN` (a review queue in the terminal) and `ragqual labels import` append rows to
`labels`: which trial of which run, the criterion (faithfulness | completeness | relevance), the
verdict (yes | no | unsure), an optional note, who labelled it and when, where the row came from
(`tui` or `import:<sha256 prefix of the file>`) and, for a random sample, its seed and size.
A correction is a newer row for the same (trial, criterion, labeller); readers take the newest
(the highest id among the rows a seal covers: ragqual.store.labels).

* `labels` is history like every other table: UPDATE / DELETE (and TRUNCATE) refused, and on
  SQLite an INSERT over an existing id refused; its rows are sealed with the run they label and
  `ragqual verify` checks them (the table is in ragqual.store.models.SEALED_TABLES).
* `v_labels`: every covered row with the trial's case id, variant, mode and repeat, and
  `is_current` = 1 on the newest row of its (trial, criterion, labeller), for plain sqlite3 / psql.

Cannot be downgraded: the labels are history.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements
from ragqual.store.sealed_rows import covered

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TABLE = "labels"

V_LABELS = f"""
CREATE VIEW v_labels AS
SELECT l.id AS label_id, l.run_id, l.trial_id, c.case_id, v.name AS variant, t.mode, t.repeat_index,
       l.criterion, l.verdict, l.note, l.labeller, l.labelled_at, l.source, l.sample_seed, l.sample_size,
       CASE WHEN NOT EXISTS (
           SELECT 1 FROM labels n
           WHERE n.trial_id = l.trial_id AND n.criterion = l.criterion AND n.labeller = l.labeller
             AND n.id > l.id AND {covered('labels', 'n.id')})
       THEN 1 ELSE 0 END AS is_current
FROM labels l
JOIN trials t ON t.id = l.trial_id
JOIN cases c ON c.id = t.case_pk
JOIN variant_configs v ON v.id = t.variant_id
WHERE {covered('labels', 'l.id')}
"""


def _create_table() -> None:
    op.create_table(
        TABLE,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("trial_id", sa.Integer, sa.ForeignKey("trials.id"), nullable=False),
        sa.Column("criterion", sa.String(32), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("note", sa.Text),
        sa.Column("labeller", sa.String(128), nullable=False),
        sa.Column("labelled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("source", sa.String(80), nullable=False),
        sa.Column("sample_seed", sa.BigInteger),
        sa.Column("sample_size", sa.Integer),
    )
    op.create_index("ix_labels_run_trial", TABLE, ["run_id", "trial_id", "criterion", "labeller", "id"])


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    _create_table()
    for statement in guard_statements(dialect, TABLE):
        op.execute(statement)
    op.execute(V_LABELS)


def downgrade() -> None:
    raise NotImplementedError(
        "0009 cannot be downgraded: labels is append-only history holding every human label. "
        "Copy the database instead."
    )
