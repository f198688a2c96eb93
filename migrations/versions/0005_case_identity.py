"""One case identity per golden: an alias table for the old generation-tier ids, and views that
join both tiers through it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

Before this revision the retrieval tier stored a golden's metrics under the golden's own id
(`water-boil-altitude-01`) and the generation tier stored its cases under a UUID derived from it
(uuid5 of the golden id), so one question had two ids. From now on both tiers use the golden id.
History is never rewritten: the old UUID rows stay as they are and `case_aliases` maps each old
id to the golden id (the RAG subject's cases carry the golden id as their slug). The views read
every case id through the alias, so old and new rows join on one id:

* v_trials        one row per trial, its case id the golden id (`stored_case_id` is the raw one);
* v_case_metrics  every current metric row (for a rescored trial only its newest version and
                  row) with the canonical case id, the run kind and, for a trial, its variant, mode
                  and repeat: a golden's retrieval metrics and generation metrics side by side;
* v_metric_means  the means of the current rows.

`case_aliases` is history like every other table: UPDATE and DELETE are refused.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements
from ragqual.store.sealing import append_watermark

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TABLE = "case_aliases"

# The namespace the RAG subject derived its case ids from before this revision (copied here, not
# imported: a migration keeps meaning what it meant when it was written).
RAG_NAMESPACE = uuid.UUID("b3f0e0c4-5d1a-4f8e-9a0b-6c2d7e8f9a10")
NOTE = "the golden id replaces the uuid5 case id of the generation tier (migration 0005)"

CANONICAL = "COALESCE(a.case_id, c.case_id)"

V_TRIALS = f"""
CREATE VIEW v_trials AS
SELECT t.id AS trial_id, t.run_id, r.kind AS run_kind, r.subject, r.started_at AS run_started_at,
       r.git_sha, r.git_dirty, r.corpus_fingerprint, r.dataset_hash,
       {CANONICAL} AS case_id, c.slug, v.name AS variant, v.provider, v.model,
       t.mode, t.repeat_index, t.error,
       s.scorer_name, s.scorer_version, s.score, s.perfect,
       t.prompt_tokens, t.completion_tokens, t.latency_ms, t.cost, t.cache_key, t.cache_hit,
       t.created_at, c.case_id AS stored_case_id
FROM trials t
JOIN runs r ON r.id = t.run_id
JOIN cases c ON c.id = t.case_pk
LEFT JOIN case_aliases a ON a.subject = c.subject AND a.alias = c.case_id
JOIN variant_configs v ON v.id = t.variant_id
LEFT JOIN trial_scores s ON s.id = (
    SELECT s2.id FROM trial_scores s2 WHERE s2.trial_id = t.id
    ORDER BY s2.scorer_version DESC, s2.id DESC LIMIT 1)
"""

# A trial's metric row is current when no row of the same trial and metric is newer (a higher
# scorer version, or the same version appended later by a rescore). Retrieval rows have no trial.
CURRENT = """(m.trial_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM metric_values n
    WHERE n.trial_id = m.trial_id AND n.metric = m.metric
      AND (n.scorer_version > m.scorer_version OR (n.scorer_version = m.scorer_version AND n.id > m.id))))"""

V_CASE_METRICS = f"""
CREATE VIEW v_case_metrics AS
SELECT m.id AS metric_row_id, m.run_id, r.kind AS run_kind, r.started_at AS run_started_at,
       r.git_sha, r.corpus_fingerprint,
       COALESCE(a.case_id, m.case_id) AS case_id, m.case_id AS stored_case_id,
       m.group_key, m.metric, m.value, m.scorer_version, m.trial_id,
       v.name AS variant, t.mode, t.repeat_index
FROM metric_values m
JOIN runs r ON r.id = m.run_id
LEFT JOIN case_aliases a ON a.subject = COALESCE(r.subject, 'rag') AND a.alias = m.case_id
LEFT JOIN trials t ON t.id = m.trial_id
LEFT JOIN variant_configs v ON v.id = t.variant_id
WHERE {CURRENT}
"""

V_METRIC_MEANS = f"""
CREATE VIEW v_metric_means AS
SELECT m.run_id, m.group_key, m.metric, AVG(m.value) AS mean, COUNT(m.value) AS n
FROM metric_values m
WHERE {CURRENT}
GROUP BY m.run_id, m.group_key, m.metric
"""


def _fill_aliases(table: sa.Table) -> None:
    """An alias for every stored RAG case whose id is exactly uuid5(namespace, golden id)."""
    cases = sa.table("cases", sa.column("subject", sa.String), sa.column("case_id", sa.String),
                     sa.column("slug", sa.String))
    query = sa.select(cases.c.case_id, cases.c.slug).where(cases.c.subject == "rag").distinct()
    rows = op.get_bind().execute(query).all()
    aliases = sorted({(case_id, slug) for case_id, slug in rows
                      if case_id == str(uuid.uuid5(RAG_NAMESPACE, slug))})
    if aliases:
        op.bulk_insert(table, [{"subject": "rag", "alias": a, "case_id": s, "note": NOTE} for a, s in aliases])


def _create_table() -> sa.Table:
    return op.create_table(
        TABLE,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("subject", sa.String(128), nullable=False),
        sa.Column("alias", sa.String(128), nullable=False),
        sa.Column("case_id", sa.String(128), nullable=False, index=True),
        sa.Column("note", sa.Text, nullable=False),
        sa.UniqueConstraint("subject", "alias", name="uq_case_aliases_alias"),
    )


def upgrade() -> None:
    table = _create_table()
    _fill_aliases(table)
    # the append-only guards every history table has since 0004 (REPLACE / UPSERT refused too),
    # and the backfilled aliases marked as written before sealing covered them
    for statement in guard_statements(op.get_bind().dialect.name, TABLE, [("subject", "alias")]):
        op.execute(statement)
    append_watermark(op.get_bind(), [TABLE])
    for view in ("v_metric_means", "v_trials"):
        op.execute(f"DROP VIEW {view}")
    for view in (V_TRIALS, V_CASE_METRICS, V_METRIC_MEANS):
        op.execute(view)


def downgrade() -> None:
    raise NotImplementedError(
        "0005 cannot be downgraded: case_aliases is append-only history and old views would "
        "split each golden in two again. Copy the database instead."
    )
