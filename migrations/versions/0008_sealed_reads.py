"""Readers use only sealed rows: `seal_spans`, and views that leave unsealed rows out.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02

The append-only triggers refuse UPDATE and DELETE but allow INSERT, and readers take a trial's
newest score: one plain INSERT per trial made any report perfect, and only a full `ragqual verify`
noticed. From this revision a row counts only when a seal covers it (ragqual.store.sealed_rows):

* `seal_spans`: per seal, one row per table and id range it covers ([first_id, last_id]), filled
  here from every seal so far and appended by the run store with every new seal. A genesis or
  watermark seal spans the rows written before sealing covered their table, so old runs read as
  before. History like every other table: UPDATE and DELETE refused; `ragqual verify` recomputes
  every span from the seals, so a forged span is found.
* The views read only covered rows: `v_run_status` (runs and their events), `v_trials` (trials,
  their newest covered score, case aliases), `v_case_metrics` and `v_metric_means` (the newest
  covered metric row), `v_retrieval_hits` (both ranking layouts). Columns are unchanged.

Cannot be downgraded: the spans are history, and the old views would show forged rows again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragqual.store.guards import guard_statements
from ragqual.store.sealed_rows import chain_spans, covered

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TABLE = "seal_spans"
CANONICAL = "COALESCE(a.case_id, c.case_id)"

V_RUN_STATUS = f"""
CREATE VIEW v_run_status AS
SELECT r.id AS run_id, r.kind, r.subject, r.started_at, r.git_sha, r.git_dirty,
       r.corpus_fingerprint, r.dataset_hash, r.ragqual_version,
       e.event AS status,
       CASE WHEN e.event IN ('finished', 'interrupted', 'failed') THEN e.at END AS ended_at
FROM runs r
LEFT JOIN run_events e ON e.id = (
    SELECT e2.id FROM run_events e2 WHERE e2.run_id = r.id AND {covered('run_events', 'e2.id')}
    ORDER BY e2.id DESC LIMIT 1)
WHERE {covered('runs', 'r.id')}
"""

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
LEFT JOIN case_aliases a ON a.subject = c.subject AND a.alias = c.case_id AND {covered('case_aliases', 'a.id')}
JOIN variant_configs v ON v.id = t.variant_id
LEFT JOIN trial_scores s ON s.id = (
    SELECT s2.id FROM trial_scores s2 WHERE s2.trial_id = t.id AND {covered('trial_scores', 's2.id')}
    ORDER BY s2.scorer_version DESC, s2.id DESC LIMIT 1)
WHERE {covered('trials', 't.id')}
"""

# A covered metric row is current when no covered row of the same trial and metric is newer.
CURRENT = f"""{covered('metric_values', 'm.id')} AND (m.trial_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM metric_values n
    WHERE n.trial_id = m.trial_id AND n.metric = m.metric
      AND (n.scorer_version > m.scorer_version OR (n.scorer_version = m.scorer_version AND n.id > m.id))
      AND {covered('metric_values', 'n.id')}))"""

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
    AND {covered('case_aliases', 'a.id')}
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

OLD_ROWS = f"""
SELECT r.run_id, r.strategy, r.query_id, r.rank, r.chunk_id, r.doc_id, r.score,
       'retrieval_results' AS stored_in, r.id AS row_id
FROM retrieval_results r
WHERE {covered('retrieval_results', 'r.id')}
"""

SQLITE_HITS = f"""
CREATE VIEW v_retrieval_hits AS {OLD_ROWS}
UNION ALL
SELECT k.run_id, k.strategy, k.query_id, c.key + 1 AS rank, c.value AS chunk_id,
       json_extract(k.doc_ids, '$[' || c.key || ']') AS doc_id,
       json_extract(k.scores, '$[' || c.key || ']') AS score,
       'retrieval_rankings' AS stored_in, k.id AS row_id
FROM retrieval_rankings k, json_each(k.chunk_ids) c
WHERE {covered('retrieval_rankings', 'k.id')}
"""

POSTGRES_HITS = f"""
CREATE VIEW v_retrieval_hits AS {OLD_ROWS}
UNION ALL
SELECT k.run_id, k.strategy, k.query_id, CAST(e.n AS INTEGER) AS rank, e.chunk_id, e.doc_id,
       CAST(e.score AS DOUBLE PRECISION) AS score, 'retrieval_rankings' AS stored_in, k.id AS row_id
FROM retrieval_rankings k
CROSS JOIN LATERAL ROWS FROM (jsonb_array_elements_text(CAST(k.chunk_ids AS jsonb)),
                              jsonb_array_elements_text(CAST(k.doc_ids AS jsonb)),
                              jsonb_array_elements_text(CAST(k.scores AS jsonb)))
    WITH ORDINALITY AS e(chunk_id, doc_id, score, n)
WHERE {covered('retrieval_rankings', 'k.id')}
"""

VIEWS = ("v_run_status", "v_trials", "v_case_metrics", "v_metric_means", "v_retrieval_hits")


def _create_table() -> sa.Table:
    table = op.create_table(
        TABLE,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("seal_id", sa.Integer, sa.ForeignKey("seals.id"), nullable=False),
        sa.Column("table_name", sa.String(64), nullable=False),
        sa.Column("first_id", sa.Integer, nullable=False),
        sa.Column("last_id", sa.Integer, nullable=False),
    )
    op.create_index("ix_seal_spans_lookup", TABLE, ["table_name", "first_id", "last_id"])
    return table


def _fill(table: sa.Table) -> None:
    """The spans of every seal so far, in chain order (the rule of ragqual.store.sealed_rows)."""
    seals = sa.table("seals", sa.column("id", sa.Integer), sa.column("kind", sa.String), sa.column("rows", sa.Text))
    rows = op.get_bind().execute(sa.select(seals.c.id, seals.c.kind, seals.c.rows).order_by(seals.c.id)).all()
    spans = chain_spans((int(i), str(k), str(r)) for i, k, r in rows)
    if spans:
        op.bulk_insert(table, [{"seal_id": s, "table_name": t, "first_id": f, "last_id": last}
                               for s, t, f, last in spans])


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    table = _create_table()
    _fill(table)
    for statement in guard_statements(dialect, TABLE):
        op.execute(statement)
    for view in VIEWS:
        op.execute(f"DROP VIEW {view}")
    for view in (V_RUN_STATUS, V_TRIALS, V_CASE_METRICS, V_METRIC_MEANS,
                 SQLITE_HITS if dialect == "sqlite" else POSTGRES_HITS):
        op.execute(view)


def downgrade() -> None:
    raise NotImplementedError(
        "0008 cannot be downgraded: seal_spans is append-only history and the old views would count rows "
        "written outside ragqual again. Copy the database instead."
    )
