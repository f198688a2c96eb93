"""Judge verdicts and agreement audits: `judgements` and `judge_audits`.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02

A `ragqual judge` invocation is a run of kind `judge` in `runs` (argv, params, provenance like
every run). Its verdicts are `judgements` rows: one per (judged trial, criterion, sample), stored
as `judge:<criterion>` with the score in [0, 1] (P(yes) from token probabilities, or 1/0 from a
constrained yes/no), the verdict, the method, the rubric's version and sha256 (its text interned
in `system_prompts`), the judge model URI and digest, the sample index, the response-cache key
and whether it was a hit, the raw reply, and the error when the reply could not be read (score
and verdict NULL then: an unreadable reply is never a 0).

`judge_audits` keeps each agreement audit of a judge against human labels (payload JSON: kappa,
base rates, confusion matrix, accuracy, disagreements, self/swap consistency, intervals), keyed on
the rubric hash and the judge digest.

Both are history: UPDATE / DELETE / TRUNCATE refused (and on SQLite an INSERT over an existing
id), sealed (ragqual.store.models.SEALED_TABLES) and checked by `ragqual verify`.

Cannot be downgraded: the verdicts and audits are history.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "judgements",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("target_run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("trial_id", sa.Integer, sa.ForeignKey("trials.id"), nullable=False),
        sa.Column("criterion", sa.String(64), nullable=False),
        sa.Column("score", sa.Float, nullable=True),
        sa.Column("verdict", sa.String(8), nullable=True),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("rubric_version", sa.Integer, nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("judge_model", sa.String(512), nullable=False),
        sa.Column("judge_digest", sa.String(128), nullable=True),
        sa.Column("sample_index", sa.Integer, nullable=False),
        sa.Column("cache_key", sa.String(64), nullable=True),
        sa.Column("cache_hit", sa.Boolean, nullable=False),
        sa.Column("raw", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_judgements_target", "judgements", ["target_run_id", "criterion"])
    op.create_table(
        "judge_audits",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("criterion", sa.String(64), nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("judge_model", sa.String(512), nullable=False),
        sa.Column("judge_digest", sa.String(128), nullable=True),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_judge_audits_run", "judge_audits", ["run_id", "criterion"])
    for table in ("judgements", "judge_audits"):
        for statement in guard_statements(dialect, table):
            op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError(
        "0010 cannot be downgraded: judgements and judge_audits are append-only history. Copy the database instead."
    )
