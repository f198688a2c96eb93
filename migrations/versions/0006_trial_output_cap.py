"""The raw-output cap: each trial's original output size and whether it was cut.

Revision ID: 0006
Revises: 0003
Create Date: 2026-11-30

Two nullable columns on `trials`, added in place (op.add_column, no table rebuild, so SQLite keeps
the append-only triggers): `raw_output_bytes`, the size in bytes of the raw output as JSON before
the cap, and `output_truncated`, true when the stored raw output was cut to the cap
(RAGQUAL_MAX_OUTPUT_BYTES). Trials written before this revision hold NULL in both.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("trials", sa.Column("raw_output_bytes", sa.Integer(), nullable=True))
    op.add_column("trials", sa.Column("output_truncated", sa.Boolean(), nullable=True))


def downgrade() -> None:
    raise NotImplementedError(
        "0006 cannot be downgraded: dropping the columns rebuilds `trials` in SQLite, which would lose its "
        "append-only triggers and the recorded sizes. Copy the database instead."
    )
