"""Read queries over the history, returned as pandas DataFrames or plain values.

The SQL is written for SQLite and PostgreSQL alike. Two choices shape every report:

* A trial's score is its newest row of the asked scorer: the highest `scorer_version`, then the
  newest row. With a version given, the newest row of exactly that version.
* A run's metric rows are, per trial and metric (per question, strategy and metric for rows
  without a trial), the row of the newest `scorer_version`, then the newest row: a rescoring
  appends rows and they replace the older ones in every report. With a version given, the newest
  one not above it (metrics as they stood when that scorer version was current).
* Case ids are read through `case_aliases` (migration 0005), so a golden has one id in old and
  new runs alike.
* Only rows a seal covers are read (ragqual.store.sealed_rows): a row appended outside ragqual
  cannot become a trial's newest score; `unsealed_counts` says how many were left out.
"""

from __future__ import annotations

import json
from operator import countOf, itemgetter
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from sqlalchemy import Connection, Engine, bindparam, text

from ragqual.core.scoring import SCORER_NAME
from ragqual.errors import InputError
from ragqual.store.records import run_status
from ragqual.store.score_choice import newest_score_join
from ragqual.store.sealed_rows import covered

if TYPE_CHECKING:  # pandas loads where a frame is built: appending a run needs only the rows
    import pandas as pd

RUNS_SQL = """
SELECT s.run_id, s.kind, s.subject, s.started_at, s.ended_at, s.status, s.git_sha, s.git_dirty,
       s.corpus_fingerprint, s.dataset_hash
FROM v_run_status s
{where}
ORDER BY s.run_id DESC
{limit}
"""


def runs_frame(engine: Engine, kind: str | None = None, limit: int | None = None) -> pd.DataFrame:
    """The runs, oldest first; with `limit`, only the newest `limit` of them."""
    import pandas as pd

    where = "WHERE s.kind = :kind" if kind else ""
    params: dict[str, Any] = {"kind": kind} if kind else {}
    if limit:
        params["limit"] = int(limit)
    sql = RUNS_SQL.format(where=where, limit="LIMIT :limit" if limit else "")
    with engine.connect() as conn:
        frame = pd.read_sql_query(text(sql), conn, params=params)
    if "status" in frame:
        frame["status"] = frame["status"].map(run_status)
    return frame.iloc[::-1].reset_index(drop=True)


ALIAS_COVERED = covered("case_aliases", "a.id")

TRIALS_SQL = f"""
SELECT t.id AS trial_id, t.case_pk, COALESCE(a.case_id, c.case_id) AS case_id, c.slug, v.name AS variant, v.model, t.mode,
       t.repeat_index, t.error, t.prompt_tokens, t.completion_tokens, t.latency_ms, t.cost,
       t.cache_hit, s.score, s.perfect, s.scorer_version
FROM trials t
JOIN cases c ON c.id = t.case_pk
LEFT JOIN case_aliases a ON a.subject = c.subject AND a.alias = c.case_id AND {ALIAS_COVERED}
JOIN variant_configs v ON v.id = t.variant_id
{{score_join}}
WHERE t.run_id = :run_id AND {covered('trials', 't.id')}
ORDER BY t.id
"""


TRIAL_COLUMNS = ["trial_id", "case_pk", "case_id", "slug", "variant", "model", "mode", "repeat_index", "error",
                 "prompt_tokens", "completion_tokens", "latency_ms", "cost", "cache_hit", "score", "perfect",
                 "scorer_version"]
Row = tuple[Any, ...]  # one result row, columns as TRIAL_COLUMNS / METRIC_COLUMNS name them

METRIC_COLUMNS = ["trial_id", "case_id", "group_key", "metric", "value", "scorer_version"]


def trial_rows(
    engine: Engine, run_id: int, scorer_name: str = SCORER_NAME, scorer_version: int | None = None
) -> list[Row]:
    """One tuple per trial of the run (TRIAL_COLUMNS) with its chosen score (None when it has none)."""
    params: dict[str, object] = {"run_id": run_id, "scorer_name": scorer_name}
    if scorer_version is not None:
        params["scorer_version"] = scorer_version
    sql = TRIALS_SQL.format(score_join=newest_score_join(scorer_version))
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(sql), params).all()]


def trial_frame(
    engine: Engine, run_id: int, scorer_name: str = SCORER_NAME, scorer_version: int | None = None
) -> pd.DataFrame:
    """`trial_rows` as a DataFrame: NaN for a missing score, booleans as booleans."""
    import pandas as pd

    frame = pd.DataFrame(trial_rows(engine, run_id, scorer_name, scorer_version), columns=TRIAL_COLUMNS)
    for column in ("score", "latency_ms", "cost"):
        frame[column] = pd.to_numeric(frame[column]).astype(float)
    frame["cache_hit"] = frame["cache_hit"].astype(bool)
    frame["perfect"] = frame["perfect"].map(lambda v: None if v is None or pd.isna(v) else bool(v))
    return frame


def metric_rows(engine: Engine, run_id: int, scorer_version: int | None = None) -> list[Row]:
    """The run's current metric rows (METRIC_COLUMNS) of the chosen scorer version (module doc)."""
    only = "AND m.scorer_version <= :scorer_version" if scorer_version is not None else ""
    sql = f"""
        SELECT m.trial_id, COALESCE(a.case_id, m.case_id), m.group_key, m.metric, m.value, m.scorer_version
        FROM metric_values m
        JOIN runs r ON r.id = m.run_id
        LEFT JOIN case_aliases a ON a.subject = COALESCE(r.subject, 'rag') AND a.alias = m.case_id AND {ALIAS_COVERED}
        WHERE m.run_id = :run_id {only} AND {covered('metric_values', 'm.id')} ORDER BY m.id"""
    params: dict[str, object] = {"run_id": run_id}
    if scorer_version is not None:
        params["scorer_version"] = scorer_version
    with engine.connect() as conn:
        rows = [tuple(row) for row in conn.execute(text(sql), params).all()]
    return newest_metric_rows(rows)


def newest_metric_rows(rows: Sequence[Row]) -> list[Row]:
    """Of rows in id order, per key the one of the highest version, the later row on a tie.

    The key is (trial, metric) for a trial's rows, (question, group, metric) for the others."""
    if _distinct_trial_keys(rows):  # a run never rescored: nothing to choose
        return list(rows)
    chosen: dict[tuple[Any, ...], Row] = {}
    for row in rows:
        trial_id, case_id, group_key, metric, _, version = row
        key = (trial_id, metric) if trial_id is not None else (None, case_id, group_key, metric)
        held = chosen.get(key)
        if held is None or version >= held[5]:
            chosen[key] = row
    kept = {id(r) for r in chosen.values()}
    return [row for row in rows if id(row) in kept]


_TRIAL, _TRIAL_METRIC = itemgetter(0), itemgetter(0, 3)


def _distinct_trial_keys(rows: Sequence[Row]) -> bool:
    """Every row belongs to a trial and no two share (trial, metric): checked in C, several
    times cheaper than choosing among rows that have no rival."""
    return len(set(map(_TRIAL_METRIC, rows))) == len(rows) and countOf(map(_TRIAL, rows), None) == 0


def metric_frame(engine: Engine, run_id: int, scorer_version: int | None = None) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(metric_rows(engine, run_id, scorer_version), columns=METRIC_COLUMNS)
    frame["value"] = pd.to_numeric(frame["value"]).astype(float)
    return frame


def _tags_of(definition: str) -> tuple[str, ...]:
    try:
        data = json.loads(definition)
    except (json.JSONDecodeError, TypeError):
        return ()
    tags = data.get("tags") if isinstance(data, dict) else None
    return tuple(str(t) for t in tags) if isinstance(tags, list) else ()


def case_tags_by_pk(engine: Engine, case_pks: Sequence[int]) -> dict[int, tuple[str, ...]]:
    """cases.id -> the `tags` of that stored case definition (empty when it has none)."""
    if not case_pks:
        return {}
    query = text(f"SELECT id, definition FROM cases WHERE id IN :pks AND {covered('cases', 'cases.id')}").bindparams(
        bindparam("pks", expanding=True)
    )
    with engine.connect() as conn:
        rows = conn.execute(query, {"pks": sorted({int(p) for p in case_pks})}).all()
    return {row[0]: _tags_of(row[1]) for row in rows}


def case_tags_by_id(engine: Engine, case_ids: Sequence[str], subject: str | None) -> dict[str, tuple[str, ...]]:
    """case id -> tags of its newest stored definition (of `subject` when given).

    Retrieval runs hold no trials, so their questions are tied to case rows by id alone; the
    newest definition recorded under that id is the one taken.
    """
    if not case_ids:
        return {}
    where = "AND subject = :subject" if subject else ""
    query = text(
        f"SELECT case_id, definition FROM cases WHERE case_id IN :ids {where} AND {covered('cases', 'cases.id')} "
        "ORDER BY id"
    ).bindparams(bindparam("ids", expanding=True))
    params: dict[str, object] = {"ids": sorted(set(case_ids))}
    if subject:
        params["subject"] = subject
    with engine.connect() as conn:
        rows = conn.execute(query, params).all()
    return {case_id: _tags_of(definition) for case_id, definition in rows}  # later rows win


SCORE_MEANS_SQL = f"""
SELECT t.run_id, t.mode AS group_key, AVG(s.score) AS score,
       AVG(CASE WHEN s.perfect THEN 1.0 ELSE 0.0 END) AS pass, COUNT(*) AS trials
FROM trials t
JOIN trial_scores s ON s.trial_id = t.id AND s.scorer_name = :scorer_name {{only_s}}
WHERE t.run_id IN :run_ids AND {covered('trials', 't.id')} AND {covered('trial_scores', 's.id')}
  AND NOT EXISTS (
    SELECT 1 FROM trial_scores n
    WHERE n.trial_id = s.trial_id AND n.scorer_name = s.scorer_name {{only_n}}
      AND (n.scorer_version > s.scorer_version OR (n.scorer_version = s.scorer_version AND n.id > s.id))
      AND {covered('trial_scores', 'n.id')})
GROUP BY t.run_id, t.mode
"""


SCORE_MEAN_COLUMNS = ["run_id", "group_key", "score", "pass", "trials"]


def score_mean_rows(conn: Connection, run_ids: Sequence[int], scorer_name: str = SCORER_NAME,
                    scorer_version: int | None = None) -> list[Row]:
    """`score_means`' rows (SCORE_MEAN_COLUMNS), read on an open connection (a writer's
    transaction computes a run's summary with it: ragqual.store.run_summaries)."""
    if not run_ids:
        return []
    pinned = scorer_version is not None
    sql = SCORE_MEANS_SQL.format(only_s="AND s.scorer_version = :scorer_version" if pinned else "",
                                 only_n="AND n.scorer_version = :scorer_version" if pinned else "")
    query = text(sql).bindparams(bindparam("run_ids", expanding=True))
    params: dict[str, object] = {"run_ids": list(run_ids), "scorer_name": scorer_name}
    if pinned:
        params["scorer_version"] = scorer_version
    return [tuple(row) for row in conn.execute(query, params).all()]


def score_means_frame(rows: Sequence[Row]) -> pd.DataFrame:
    """`score_mean_rows` (from SQL, from summaries or both) as `score_means` returns them, in
    (run, mode) order whatever order they came in."""
    import pandas as pd

    ordered = sorted(rows, key=lambda r: (r[0], r[1]))
    return pd.DataFrame(ordered, columns=SCORE_MEAN_COLUMNS).astype({"score": float, "pass": float})  # PostgreSQL: numeric


def score_means(engine: Engine, run_ids: Sequence[int], scorer_name: str = SCORER_NAME,
                scorer_version: int | None = None) -> pd.DataFrame:
    """Per run and mode: mean score, pass rate and scored trials (newest score per trial, of
    exactly `scorer_version` when given).

    Both the trial and the score side are read from covering indexes (migration 0003).
    """
    import pandas as pd

    if not run_ids:
        return pd.DataFrame(columns=SCORE_MEAN_COLUMNS)
    with engine.connect() as conn:
        return score_means_frame(score_mean_rows(conn, run_ids, scorer_name, scorer_version))


def current_metric_row(pinned: bool) -> str:
    """SQL: `m` is a sealed row and its trial's newest sealed row of that metric (retrieval rows
    have no trial: every sealed one)."""
    only = "AND n.scorer_version <= :scorer_version" if pinned else ""
    return f"""({covered('metric_values', 'm.id')} AND (m.trial_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM metric_values n
    WHERE n.trial_id = m.trial_id AND n.metric = m.metric {only}
      AND (n.scorer_version > m.scorer_version OR (n.scorer_version = m.scorer_version AND n.id > m.id))
      AND {covered('metric_values', 'n.id')})))"""


# One pass over the covering index (run_id, metric, scorer_version, group_key, value), in its
# order; the newest version per run and metric is kept afterwards.
METRIC_MEANS_SQL = """
SELECT m.run_id, m.metric, m.scorer_version, m.group_key, AVG(m.value) AS mean, COUNT(m.value) AS n
FROM metric_values m
WHERE m.run_id IN :run_ids {metrics} {only}
  AND {current}
GROUP BY m.run_id, m.metric, m.scorer_version, m.group_key
"""

METRIC_MEAN_COLUMNS = ["run_id", "group_key", "metric", "mean", "n"]
METRIC_MEAN_ROW = ["run_id", "metric", "scorer_version", "group_key", "mean", "n"]  # one row of the SQL


def metric_mean_rows(conn: Connection, run_ids: Sequence[int], metrics: Sequence[str] | None,
                     scorer_version: int | None = None) -> list[Row]:
    """Per run, metric, scorer version and group: the mean and count of the current non-null
    values (METRIC_MEAN_ROW), every version still in; `metrics=None`: every metric."""
    if not run_ids or (metrics is not None and not metrics):
        return []
    pinned = scorer_version is not None
    sql = METRIC_MEANS_SQL.format(metrics="" if metrics is None else "AND m.metric IN :metrics",
                                  only="AND m.scorer_version <= :scorer_version" if pinned else "",
                                  current=current_metric_row(pinned))
    query = text(sql).bindparams(bindparam("run_ids", expanding=True))
    params: dict[str, object] = {"run_ids": list(run_ids)}
    if metrics is not None:
        query = query.bindparams(bindparam("metrics", expanding=True))
        params["metrics"] = list(metrics)
    if pinned:
        params["scorer_version"] = scorer_version
    return [tuple(row) for row in conn.execute(query, params).all()]


def metric_means_frame(rows: Sequence[Row]) -> pd.DataFrame:
    """`metric_mean_rows` (from SQL, from summaries or both) as `metric_means` returns them: the
    rows of each run and metric's newest version, in (run, metric, version, group) order."""
    import pandas as pd

    columns = METRIC_MEAN_COLUMNS
    if not rows:
        return pd.DataFrame(columns=columns)
    ordered = sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3]))
    frame = pd.DataFrame(ordered, columns=METRIC_MEAN_ROW)
    frame["mean"] = frame["mean"].astype(float)
    newest = frame.groupby(["run_id", "metric"])["scorer_version"].transform("max")
    return frame[frame["scorer_version"] == newest][columns].reset_index(drop=True)


def metric_means(engine: Engine, run_ids: Sequence[int], metrics: Sequence[str],
                 scorer_version: int | None = None) -> pd.DataFrame:
    """Per run, group and metric: the mean and count of the current non-null values (newest
    version, or the newest not above `scorer_version`)."""
    import pandas as pd

    if not run_ids or not metrics:
        return pd.DataFrame(columns=METRIC_MEAN_COLUMNS)
    with engine.connect() as conn:
        return metric_means_frame(metric_mean_rows(conn, run_ids, metrics, scorer_version))


def export_trials(engine: Engine, run_id: int) -> pd.DataFrame:
    """The run's rows of the `v_trials` view (each trial with its newest score of any scorer)."""
    import pandas as pd

    with engine.connect() as conn:
        return pd.read_sql_query(
            text("SELECT * FROM v_trials WHERE run_id = :run_id ORDER BY trial_id"), conn,
            params={"run_id": run_id},
        )


EXPORT_METRICS_SQL = f"""
SELECT m.id, m.run_id, m.trial_id, COALESCE(a.case_id, m.case_id) AS case_id, m.group_key, m.metric, m.value,
       m.scorer_version, m.created_at, m.case_id AS stored_case_id
FROM metric_values m
JOIN runs r ON r.id = m.run_id
LEFT JOIN case_aliases a ON a.subject = COALESCE(r.subject, 'rag') AND a.alias = m.case_id AND {ALIAS_COVERED}
WHERE m.run_id = :run_id AND {covered('metric_values', 'm.id')}
ORDER BY m.id
"""


def export_metrics(engine: Engine, run_id: int) -> pd.DataFrame:
    """Every sealed metric row of the run, every scorer version included; `case_id` is the case's id now
    (read through case_aliases), `stored_case_id` the one the row was written with."""
    import pandas as pd

    with engine.connect() as conn:
        return pd.read_sql_query(text(EXPORT_METRICS_SQL), conn, params={"run_id": run_id})


# -- read-only SQL for people ------------------------------------------------------------------

class QueryRefused(InputError):
    """The database refused a statement given to the read-only query runner."""


def read_only_query(url: str, sql: str) -> pd.DataFrame | None:
    """Run one statement read-only (see `sql_console`: no writes, no ATTACH, 30 s at most) and
    return all its rows; None when it returns no rows."""
    import pandas as pd

    from ragqual.store.sql_console import open_query

    with open_query(url, sql, limit=0) as stream:
        if stream.columns is None:
            return None
        return pd.DataFrame(list(stream), columns=stream.columns)
