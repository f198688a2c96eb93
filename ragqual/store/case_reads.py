"""Read-only: what the history knows about questions (golden id, tags, relevant documents), and
one question's values across every run.

A generation trial's case is stored under a content-derived case id with the golden id as its
slug; a retrieval run's metric rows use the golden id itself. Both resolve here to `CaseInfo`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, text

from ragqual.core.scoring import SCORER_NAME
from ragqual.store.sealed_rows import covered


SEALED_CASE = covered("cases", "cases.id")


@dataclass(frozen=True)
class CaseInfo:
    case_id: str
    golden_id: str
    tags: tuple[str, ...]
    relevant_doc_ids: tuple[str, ...]
    critical: bool = False  # the golden is marked `"critical": true`


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _info(case_id: str, slug: str | None, definition: str | None) -> CaseInfo:
    try:
        data = json.loads(definition or "{}")
    except json.JSONDecodeError:
        data = {}
    data = data if isinstance(data, dict) else {}
    given: dict[str, Any] = data["input"] if isinstance(data.get("input"), dict) else data  # trial case, or golden itself
    return CaseInfo(case_id, str(slug or case_id), _strings(data.get("tags") or given.get("tags")),
                    _strings(given.get("relevantDocIds")), given.get("critical") is True)


def case_infos(engine: Engine, case_ids: Sequence[str]) -> dict[str, CaseInfo]:
    """case id -> its newest stored definition's golden id, tags and relevant documents."""
    if not case_ids:
        return {}
    query = text(f"SELECT case_id, slug, definition FROM cases WHERE case_id IN :ids AND {SEALED_CASE} "
                 "ORDER BY id").bindparams(
        bindparam("ids", expanding=True))
    with engine.connect() as conn:
        rows = conn.execute(query, {"ids": sorted(set(case_ids))}).all()
    return {row[0]: _info(row[0], row[1], row[2]) for row in rows}  # later rows win


CASE_TRIALS_SQL = f"""
SELECT r.id AS run_id, r.kind, r.started_at, r.git_sha, v.name AS variant, t.mode, t.repeat_index,
       s.score, s.perfect
FROM trials t
JOIN runs r ON r.id = t.run_id
JOIN cases c ON c.id = t.case_pk
JOIN variant_configs v ON v.id = t.variant_id
LEFT JOIN trial_scores s ON s.id = (
    SELECT s2.id FROM trial_scores s2 WHERE s2.trial_id = t.id AND s2.scorer_name = :scorer_name
      AND {covered('trial_scores', 's2.id')}
    ORDER BY s2.scorer_version DESC, s2.id DESC LIMIT 1)
WHERE (c.slug = :golden OR c.case_id = :golden) AND {covered('trials', 't.id')}
ORDER BY r.id, t.id
"""

CASE_METRICS_SQL = f"""
SELECT r.id AS run_id, r.kind, r.started_at, r.git_sha, m.group_key, m.metric, m.value, m.scorer_version
FROM metric_values m
JOIN runs r ON r.id = m.run_id
WHERE m.trial_id IS NULL AND m.case_id = :golden AND {covered('metric_values', 'm.id')}
ORDER BY r.id, m.id
"""


def case_trial_rows(engine: Engine, golden_id: str, scorer_name: str = SCORER_NAME) -> list[dict[str, Any]]:
    """Every trial of the question in any run, with its newest score of `scorer_name`."""
    with engine.connect() as conn:
        result = conn.execute(text(CASE_TRIALS_SQL), {"golden": golden_id, "scorer_name": scorer_name})
        return [dict(row._mapping) for row in result]


def case_metric_rows(engine: Engine, golden_id: str) -> list[dict[str, Any]]:
    """Every per-question metric row without a trial (retrieval runs) of the question."""
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(text(CASE_METRICS_SQL), {"golden": golden_id})]


def case_definitions(engine: Engine, case_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """case id -> its newest stored definition (the golden itself for retrieval cases)."""
    if not case_ids:
        return {}
    query = text(f"SELECT case_id, definition FROM cases WHERE case_id IN :ids AND {SEALED_CASE} "
                 "ORDER BY id").bindparams(
        bindparam("ids", expanding=True))
    with engine.connect() as conn:
        rows = conn.execute(query, {"ids": sorted(set(case_ids))}).all()
    out: dict[str, dict[str, Any]] = {}
    for case_id, definition in rows:  # later rows win
        try:
            data = json.loads(definition or "{}")
        except json.JSONDecodeError:
            data = {}
        out[case_id] = data if isinstance(data, dict) else {}
    return out
