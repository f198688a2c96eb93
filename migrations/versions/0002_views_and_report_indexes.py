"""Read-only views for people who open the database with sqlite3, and report indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

V_RUN_STATUS = """
CREATE VIEW v_run_status AS
SELECT r.id AS run_id, r.kind, r.subject, r.started_at, r.git_sha, r.git_dirty,
       r.corpus_fingerprint, r.dataset_hash, r.ragqual_version,
       e.event AS status,
       CASE WHEN e.event IN ('finished', 'interrupted', 'failed') THEN e.at END AS ended_at
FROM runs r
LEFT JOIN run_events e ON e.id = (
    SELECT e2.id FROM run_events e2 WHERE e2.run_id = r.id ORDER BY e2.id DESC LIMIT 1)
"""

V_TRIALS = """
CREATE VIEW v_trials AS
SELECT t.id AS trial_id, t.run_id, r.kind AS run_kind, r.subject, r.started_at AS run_started_at,
       r.git_sha, r.git_dirty, r.corpus_fingerprint, r.dataset_hash,
       c.case_id, c.slug, v.name AS variant, v.provider, v.model,
       t.mode, t.repeat_index, t.error,
       s.scorer_name, s.scorer_version, s.score, s.perfect,
       t.prompt_tokens, t.completion_tokens, t.latency_ms, t.cost, t.cache_key, t.cache_hit,
       t.created_at
FROM trials t
JOIN runs r ON r.id = t.run_id
JOIN cases c ON c.id = t.case_pk
JOIN variant_configs v ON v.id = t.variant_id
LEFT JOIN trial_scores s ON s.id = (
    SELECT s2.id FROM trial_scores s2 WHERE s2.trial_id = t.id
    ORDER BY s2.scorer_version DESC, s2.id DESC LIMIT 1)
"""

V_METRIC_MEANS = """
CREATE VIEW v_metric_means AS
SELECT run_id, group_key, metric, AVG(value) AS mean, COUNT(value) AS n
FROM metric_values
GROUP BY run_id, group_key, metric
"""

INDEXES = (
    ("ix_trial_scores_trial_version", "trial_scores", ["trial_id", "scorer_version", "id"]),
    ("ix_assertion_results_trial_batch", "assertion_results", ["trial_id", "batch"]),
    ("ix_run_events_run", "run_events", ["run_id", "id"]),
    ("ix_trials_run_mode", "trials", ["run_id", "mode"]),
    ("ix_runs_kind_started", "runs", ["kind", "started_at"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns)
    for view in (V_RUN_STATUS, V_TRIALS, V_METRIC_MEANS):
        op.execute(view)


def downgrade() -> None:
    for view in ("v_metric_means", "v_trials", "v_run_status"):
        op.execute(f"DROP VIEW {view}")
    for name, table, _ in INDEXES:
        op.drop_index(name, table_name=table)
