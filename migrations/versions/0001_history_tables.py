"""History tables and the triggers that make them append-only.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Tables are declared inline (never imported from the live models) so this file
keeps meaning what it meant when it was written.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)

TABLES = (
    "runs", "run_events", "system_prompts", "variant_configs", "cases", "assertion_defs",
    "corpus_snapshots", "trials", "assertion_results", "trial_scores", "metric_values",
    "retrieval_results",
)


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer, primary_key=True)


def _create_tables() -> None:
    op.create_table(
        "runs", _id(),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(128)),
        sa.Column("started_at", TZ, nullable=False),
        sa.Column("argv", sa.Text, nullable=False),
        sa.Column("params", sa.Text, nullable=False),
        sa.Column("git_sha", sa.String(64)),
        sa.Column("git_dirty", sa.Boolean),
        sa.Column("ragqual_version", sa.String(32), nullable=False),
        sa.Column("python_version", sa.String(32), nullable=False),
        sa.Column("corpus_fingerprint", sa.String(64), index=True),
        sa.Column("dataset_hash", sa.String(64)),
        sa.Column("prompt_hashes", sa.Text, nullable=False),
        sa.Column("provenance", sa.Text, nullable=False),
    )
    op.create_table(
        "run_events", _id(),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False, index=True),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("at", TZ, nullable=False),
        sa.Column("detail", sa.Text),
    )
    op.create_table(
        "system_prompts", _id(),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_table(
        "variant_configs", _id(),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("model", sa.String(512), nullable=False),
        sa.Column("config", sa.Text, nullable=False),
    )
    op.create_table(
        "cases", _id(),
        sa.Column("subject", sa.String(128), nullable=False),
        sa.Column("case_id", sa.String(128), nullable=False, index=True),
        sa.Column("slug", sa.String(256), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("definition", sa.Text, nullable=False),
        sa.UniqueConstraint("subject", "case_id", "sha256", name="uq_cases_version"),
    )
    op.create_table(
        "assertion_defs", _id(),
        sa.Column("assertion_id", sa.String(128), nullable=False, index=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("category", sa.String(128), nullable=False),
        sa.Column("weight", sa.Float, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("definition", sa.Text, nullable=False),
        sa.UniqueConstraint("assertion_id", "version", "sha256", name="uq_assertion_defs_version"),
    )
    op.create_table(
        "corpus_snapshots", _id(),
        sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
        sa.Column("documents", sa.Text, nullable=False),
        sa.Column("chunk_config", sa.Text, nullable=False),
        sa.Column("embedder_id", sa.String(256), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "trials", _id(),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False, index=True),
        sa.Column("case_pk", sa.Integer, sa.ForeignKey("cases.id"), nullable=False, index=True),
        sa.Column("variant_id", sa.Integer, sa.ForeignKey("variant_configs.id"), nullable=False),
        sa.Column("system_prompt_id", sa.Integer, sa.ForeignKey("system_prompts.id")),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("repeat_index", sa.Integer, nullable=False),
        sa.Column("rendered_prompt", sa.Text),
        sa.Column("context", sa.Text),
        sa.Column("raw_output", sa.Text),
        sa.Column("parsed_output", sa.Text),
        sa.Column("error", sa.Text),
        sa.Column("prompt_tokens", sa.Integer),
        sa.Column("completion_tokens", sa.Integer),
        sa.Column("latency_ms", sa.Float),
        sa.Column("load_ms", sa.Float),
        sa.Column("cost", sa.Float),
        sa.Column("cache_key", sa.String(64)),
        sa.Column("cache_hit", sa.Boolean, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("run_id", "case_pk", "variant_id", "mode", "repeat_index", name="uq_trials_slot"),
    )
    op.create_table(
        "assertion_results", _id(),
        sa.Column("trial_id", sa.Integer, sa.ForeignKey("trials.id"), nullable=False, index=True),
        sa.Column("batch", sa.String(36), nullable=False),
        sa.Column("assertion_id", sa.String(128), nullable=False),
        sa.Column("assertion_version", sa.Integer, nullable=False),
        sa.Column("category", sa.String(128), nullable=False),
        sa.Column("weight", sa.Float, nullable=False),
        sa.Column("passed", sa.Boolean, nullable=False),
        sa.Column("detail", sa.Text),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "trial_scores", _id(),
        sa.Column("trial_id", sa.Integer, sa.ForeignKey("trials.id"), nullable=False, index=True),
        sa.Column("batch", sa.String(36), nullable=False),
        sa.Column("scorer_name", sa.String(128), nullable=False),
        sa.Column("scorer_version", sa.Integer, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("perfect", sa.Boolean, nullable=False),
        sa.Column("per_category", sa.Text, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "metric_values", _id(),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("trial_id", sa.Integer, sa.ForeignKey("trials.id"), index=True),
        sa.Column("case_id", sa.String(128), nullable=False),
        sa.Column("group_key", sa.String(64), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("value", sa.Float),
        sa.Column("scorer_version", sa.Integer, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_metric_values_run_metric", "metric_values", ["run_id", "metric"])
    op.create_table(
        "retrieval_results", _id(),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("strategy", sa.String(64), nullable=False),
        sa.Column("query_id", sa.String(128), nullable=False),
        sa.Column("rank", sa.Integer, nullable=False),
        sa.Column("chunk_id", sa.String(256), nullable=False),
        sa.Column("doc_id", sa.String(256), nullable=False),
        sa.Column("score", sa.Float, nullable=False),
    )
    op.create_index("ix_retrieval_results_run_query", "retrieval_results", ["run_id", "query_id"])


def _sqlite_guards(table: str) -> list[str]:
    return [
        f"CREATE TRIGGER {table}_append_only_update BEFORE UPDATE ON {table} "
        f"BEGIN SELECT RAISE(ABORT, '{table} is append-only history: UPDATE refused'); END",
        f"CREATE TRIGGER {table}_append_only_delete BEFORE DELETE ON {table} "
        f"BEGIN SELECT RAISE(ABORT, '{table} is append-only history: DELETE refused'); END",
    ]


PG_FUNCTION = """
CREATE OR REPLACE FUNCTION ragqual_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only history: % refused', TG_TABLE_NAME, TG_OP;
END
$$
"""


def _postgres_guards(table: str) -> list[str]:
    return [
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION ragqual_refuse_change()",
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION ragqual_refuse_change()",
    ]


def upgrade() -> None:
    _create_tables()
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(PG_FUNCTION)
        guards = _postgres_guards
    elif dialect == "sqlite":
        guards = _sqlite_guards
    else:
        raise NotImplementedError(f"append-only triggers are written for sqlite and postgresql, not {dialect}")
    for table in TABLES:
        for statement in guards(table):
            op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError(
        "0001 cannot be downgraded: it would drop the append-only history. Copy the database instead."
    )
