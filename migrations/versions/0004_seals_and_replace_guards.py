"""Close the REPLACE/UPSERT hole, guard alembic_version, and start the seal chain.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

* SQLite: BEFORE INSERT triggers on every history table refuse a row whose primary key or a
  unique key already exists, so REPLACE / INSERT OR REPLACE / UPSERT can no longer delete a
  row behind the DELETE trigger's back (ragqual.store.guards says what each dialect gets).
* alembic_version: one row, moved forward only, never deleted or truncated.
* `seals`: the tamper-evidence chain (ragqual.store.sealing). Its first row, the genesis seal,
  records the highest id of every history table at upgrade time: rows up to it were written
  before sealing existed and `ragqual verify` reports their runs as unsealed, not tampered.
  Every row is kept; nothing existing is rewritten.

Cannot be downgraded: that would drop the tamper evidence.
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import alembic_version_guards, guard_statements, insert_guards

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The history tables as of 0003, with their unique keys (declared here, never read from the models).
TABLES: dict[str, tuple[tuple[str, ...], ...]] = {
    "runs": (), "run_events": (), "system_prompts": (("sha256",),), "variant_configs": (("sha256",),),
    "cases": (("subject", "case_id", "sha256"),), "assertion_defs": (("assertion_id", "version", "sha256"),),
    "corpus_snapshots": (("fingerprint",),), "trials": (("run_id", "case_pk", "variant_id", "mode", "repeat_index"),),
    "assertion_results": (), "trial_scores": (), "metric_values": (), "retrieval_results": (),
}
GENESIS_PREV = "0" * 64


def _create_seals() -> sa.Table:
    op.create_table(
        "seals",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id")),
        sa.Column("prev_digest", sa.String(64), nullable=False),
        sa.Column("run_prev_digest", sa.String(64)),
        sa.Column("rows", sa.Text, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
    )
    op.create_index("ix_seals_run", "seals", ["run_id", "id"])
    return sa.table(
        "seals", sa.column("kind"), sa.column("run_id"), sa.column("prev_digest"),
        sa.column("run_prev_digest"), sa.column("rows"), sa.column("digest"),
    )


def _genesis(seals: sa.Table) -> None:
    """The first seal: each table's highest id now. Same digest rule as ragqual.store.sealing."""
    bind = op.get_bind()
    marks = {t: bind.execute(sa.text(f"SELECT COALESCE(MAX(id), 0) FROM {t}")).scalar_one() for t in TABLES}
    rows = json.dumps({"watermark": marks}, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256("\n".join([GENESIS_PREV, "", "", rows]).encode()).hexdigest()
    op.bulk_insert(seals, [{"kind": "genesis", "run_id": None, "prev_digest": GENESIS_PREV,
                            "run_prev_digest": None, "rows": rows, "digest": digest}])


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    seals = _create_seals()
    for table, unique_keys in TABLES.items():
        for statement in insert_guards(dialect, table, unique_keys):
            op.execute(statement)
    for statement in guard_statements(dialect, "seals") + alembic_version_guards(dialect):
        op.execute(statement)
    _genesis(seals)


def downgrade() -> None:
    raise NotImplementedError("0004 cannot be downgraded: it would drop the tamper evidence. Copy the database instead.")
