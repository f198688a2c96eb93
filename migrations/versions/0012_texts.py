"""Texts stored once: a trial's long texts by content hash in `texts`, named from the trial.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02

The quick-start eval stored about 14 KB per trial, most of it the same prompt, context and
answer written again for every repeat and mode. From this revision:

* `texts` (id, sha256 unique, body): one row per distinct text, the body exactly as the trial
  column would hold it. History: UPDATE / DELETE (and TRUNCATE) refused, on SQLite an INSERT
  over an existing id or hash refused; its rows are sealed with the trial that first used them
  (ragqual.store.models.SEALED_TABLES) and `ragqual verify` checks them.
* `trials` gains `rendered_prompt_sha256`, `context_sha256`, `raw_output_sha256` and
  `parsed_output_sha256`: a new trial names a text longer than 64 characters by its hash and
  leaves the inline column NULL (ragqual.store.texts). Nullable, so every old row keeps its
  inline text and its seal digest (NULL columns are not part of a row digest).
* `v_trial_texts`: every sealed trial's four texts from either layout, one row per trial.

Cannot be downgraded: the texts are history, and trials written since name them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements
from ragqual.store.sealed_rows import covered

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

COLUMNS = ("rendered_prompt", "context", "raw_output", "parsed_output")


def _text(column: str) -> str:
    return (f"COALESCE(t.{column}, (SELECT x.body FROM texts x WHERE x.sha256 = t.{column}_sha256 "
            f"AND {covered('texts', 'x.id')})) AS {column}")


V_TRIAL_TEXTS = f"""
CREATE VIEW v_trial_texts AS
SELECT t.id AS trial_id, t.run_id, t.mode, t.repeat_index,
       {', '.join(_text(c) for c in COLUMNS)},
       CASE WHEN {' AND '.join(f't.{c}_sha256 IS NULL' for c in COLUMNS)}
            THEN 'inline' ELSE 'texts' END AS stored_in
FROM trials t
WHERE {covered('trials', 't.id')}
"""


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "texts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("body", sa.Text, nullable=False),
    )
    for column in COLUMNS:
        op.add_column("trials", sa.Column(f"{column}_sha256", sa.String(64), nullable=True))
    for statement in guard_statements(dialect, "texts", [("sha256",)]):
        op.execute(statement)
    op.execute(V_TRIAL_TEXTS)


def downgrade() -> None:
    raise NotImplementedError(
        "0012 cannot be downgraded: `texts` is append-only history and trials written since name its rows "
        "by hash. Copy the database instead."
    )
