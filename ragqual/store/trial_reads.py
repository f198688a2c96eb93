"""Read queries over trials and their scorings, for aggregates, rescoring and audits.

Only rows a seal covers are read (ragqual.store.sealed_rows).

Functions take an Engine and return plain dataclasses, never ORM rows. JSON columns come back
decoded; a column that holds plain text (the store writes strings as they are) comes back as text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

from ragqual.errors import InputError
from ragqual.store import texts
from ragqual.store.cost_reads import trial_costs
from ragqual.store.records import AssertionRow, ScoreRow
from ragqual.store.score_choice import newest_score_join
from ragqual.store.sealed_rows import covered, is_covered
from ragqual.store.models import (
    AssertionDef,
    AssertionResult,
    CaseDef,
    MetricValue,
    RunEvent,
    SystemPrompt,
    Trial,
    TrialScore,
    VariantConfig,
)


def _load(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text


@dataclass(frozen=True)
class StoredTrial:
    """A trial as rescoring needs it: which case, what came back, what went wrong."""

    trial_id: int
    case_pk: int
    case_id: str
    slug: str
    case_definition: dict[str, Any]
    variant: str
    mode: str
    repeat_index: int
    raw_output: Any
    context: str | None
    error: str | None


def run_trials(engine: Engine, run_id: int) -> list[StoredTrial]:
    query = (
        select(Trial.id, Trial.case_pk, CaseDef.case_id, CaseDef.slug, CaseDef.definition,
               VariantConfig.name, Trial.mode, Trial.repeat_index, texts.resolved("raw_output"),
               texts.resolved("context"),
               Trial.error)
        .join(CaseDef, CaseDef.id == Trial.case_pk)
        .join(VariantConfig, VariantConfig.id == Trial.variant_id)
        .where(Trial.run_id == run_id, is_covered("trials"))
        .order_by(Trial.id)
    )
    with Session(engine) as session:
        rows = session.execute(query).all()
    return [
        StoredTrial(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], r[7], _load(r[8]), r[9], r[10])
        for r in rows
    ]


@dataclass(frozen=True)
class TrialFigureRow:
    """One trial with the score row a report shows for it (None when it has none for that scorer)."""

    trial_id: int
    variant: str
    case_id: str
    slug: str
    mode: str
    repeat_index: int
    score: float | None
    perfect: bool | None
    scorer_version: int | None
    cost: float | None
    latency_ms: float | None
    cache_hit: bool
    error: str | None
    currency: str | None = None  # of `cost`; None for a trial from before cost rows (migration 0011)


_FIGURES_SQL = f"""
SELECT t.id, v.name, c.case_id, c.slug, t.mode, t.repeat_index, t.cost, t.latency_ms, t.cache_hit, t.error,
       s.score, s.perfect, s.scorer_version
FROM trials t
JOIN cases c ON c.id = t.case_pk
JOIN variant_configs v ON v.id = t.variant_id
{{score_join}}
WHERE t.run_id = :run_id AND {covered('trials', 't.id')}
ORDER BY t.id"""


def run_figures(
    engine: Engine, run_id: int, scorer_name: str, scorer_version: int | None = None,
    pricing_snapshot: int | None = None,
) -> list[TrialFigureRow]:
    """Each trial of a run with the score row that counts (ragqual.store.score_choice) and its
    cost: the newest cost row, or the row under `pricing_snapshot` (ragqual.store.cost_reads)."""
    params: dict[str, object] = {"run_id": run_id, "scorer_name": scorer_name}
    if scorer_version is not None:
        params["scorer_version"] = scorer_version
    with engine.connect() as conn:
        rows = conn.execute(text(_FIGURES_SQL.format(score_join=newest_score_join(scorer_version))), params).all()
    costs = trial_costs(engine, run_id, pricing_snapshot)
    out = []
    for tid, variant, case_id, slug, mode, repeat, trial_cost, latency, cache_hit, error, score, perfect, version \
            in rows:
        cost = costs.get(tid)
        out.append(TrialFigureRow(tid, variant, case_id, slug, mode, repeat, score,
                                  None if perfect is None else bool(perfect), version,
                                  cost.cost if cost else trial_cost, latency, bool(cache_hit), error,
                                  cost.currency if cost else None))
    return out


@dataclass(frozen=True)
class TrialDetail:
    """Every stored column of one trial, with its case, variant and system prompt as they were."""

    trial_id: int
    run_id: int
    mode: str
    repeat_index: int
    created_at: datetime
    case_id: str
    slug: str
    case_sha256: str
    case_definition: dict[str, Any]
    variant_name: str
    provider: str
    model: str
    variant_config: dict[str, Any]
    system_prompt_sha256: str | None
    system_prompt: str | None
    rendered_prompt: Any
    context: str | None
    raw_output: Any
    parsed_output: Any
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float | None
    load_ms: float | None
    cost: float | None
    cache_key: str | None
    cache_hit: bool


def trial_detail(engine: Engine, trial_id: int) -> TrialDetail:
    with Session(engine) as session:
        trial = session.get(Trial, trial_id)
        if trial is None:
            raise InputError(f"no trial with id {trial_id}")
        case = session.get(CaseDef, trial.case_pk)
        variant = session.get(VariantConfig, trial.variant_id)
        assert case is not None and variant is not None, "foreign keys guarantee both rows"
        prompt = session.get(SystemPrompt, trial.system_prompt_id) if trial.system_prompt_id else None
        body = texts.trial_texts(session, trial)
        return TrialDetail(
            trial_id=trial.id, run_id=trial.run_id, mode=trial.mode, repeat_index=trial.repeat_index,
            created_at=trial.created_at, case_id=case.case_id, slug=case.slug, case_sha256=case.sha256,
            case_definition=json.loads(case.definition), variant_name=variant.name,
            provider=variant.provider, model=variant.model, variant_config=json.loads(variant.config),
            system_prompt_sha256=prompt.sha256 if prompt else None,
            system_prompt=prompt.text if prompt else None,
            rendered_prompt=_load(body["rendered_prompt"]), context=body["context"],
            raw_output=_load(body["raw_output"]), parsed_output=_load(body["parsed_output"]),
            error=trial.error, prompt_tokens=trial.prompt_tokens,
            completion_tokens=trial.completion_tokens, latency_ms=trial.latency_ms,
            load_ms=trial.load_ms, cost=trial.cost, cache_key=trial.cache_key,
            cache_hit=bool(trial.cache_hit),
        )


# The rows a scoring is made of are the ones the store appends.
AssertionResultRow = AssertionRow
ScoreEntry = ScoreRow


@dataclass(frozen=True)
class Scoring:
    """One scoring of a trial (the first one, or a later rescore): its scores and assertion rows."""

    batch: str
    created_at: datetime
    scores: tuple[ScoreEntry, ...]
    assertions: tuple[AssertionResultRow, ...]


def scoring_history(engine: Engine, trial_id: int) -> list[Scoring]:
    """Every scoring a trial has had, oldest first."""
    return _scorings(engine, TrialScore.trial_id == trial_id, AssertionResult.trial_id == trial_id).get(trial_id, [])


def run_scorings(engine: Engine, run_id: int) -> dict[int, list[Scoring]]:
    """trial id -> every scoring it has had, oldest first, for every trial of a run (one query each)."""
    trials = select(Trial.id).where(Trial.run_id == run_id)
    return _scorings(engine, TrialScore.trial_id.in_(trials), AssertionResult.trial_id.in_(trials))


def _scorings(engine: Engine, score_filter: Any, result_filter: Any) -> dict[int, list[Scoring]]:
    with Session(engine) as session:
        scores = session.execute(select(TrialScore).where(score_filter, is_covered("trial_scores"))
                                 .order_by(TrialScore.id)).scalars().all()
        results = session.execute(select(AssertionResult).where(result_filter, is_covered("assertion_results"))
                                  .order_by(AssertionResult.id)).scalars().all()
        order: dict[tuple[int, str], tuple[int, datetime]] = {}
        by_batch_scores: dict[tuple[int, str], list[ScoreEntry]] = {}
        by_batch_results: dict[tuple[int, str], list[AssertionResultRow]] = {}
        for s in scores:
            key = (s.trial_id, s.batch)
            order.setdefault(key, (s.id, s.created_at))
            by_batch_scores.setdefault(key, []).append(ScoreEntry(
                s.scorer_name, s.scorer_version, s.score, bool(s.perfect), json.loads(s.per_category)))
        for a in results:
            key = (a.trial_id, a.batch)
            order.setdefault(key, (10**12 + a.id, a.created_at))
            by_batch_results.setdefault(key, []).append(AssertionResultRow(
                a.assertion_id, a.assertion_version, a.category, a.weight, bool(a.passed), a.detail))
    out: dict[int, list[Scoring]] = {}
    for key in sorted(order, key=lambda k: (k[0], order[k][1], order[k][0])):
        out.setdefault(key[0], []).append(Scoring(
            key[1], order[key][1], tuple(by_batch_scores.get(key, ())), tuple(by_batch_results.get(key, ()))))
    return out


def run_answers(engine: Engine, run_id: int) -> dict[int, Any]:
    """trial id -> its parsed output (the answer as scored), decoded like every JSON column."""
    query = select(Trial.id, texts.resolved("parsed_output")).where(Trial.run_id == run_id, is_covered("trials"))
    with Session(engine) as session:
        return {r[0]: _load(r[1]) for r in session.execute(query).all()}


@dataclass(frozen=True)
class AssertionDefRow:
    assertion_id: str
    version: int
    sha256: str
    category: str
    weight: float
    name: str
    definition: dict[str, Any]


def assertion_defs(engine: Engine, assertion_ids: list[str]) -> list[AssertionDefRow]:
    """Every stored version of these assertions, in the order they were first recorded."""
    if not assertion_ids:
        return []
    # plain columns, not ORM objects: a run reads every assertion of its cases here
    query = (select(AssertionDef.assertion_id, AssertionDef.version, AssertionDef.sha256, AssertionDef.category,
                    AssertionDef.weight, AssertionDef.name, AssertionDef.definition)
             .where(AssertionDef.assertion_id.in_(assertion_ids)).order_by(AssertionDef.id))
    with engine.connect() as connection:
        return [AssertionDefRow(*row[:6], json.loads(row[6])) for row in connection.execute(query)]


@dataclass(frozen=True)
class EventRow:
    event: str
    at: datetime
    detail: str | None


def run_events(engine: Engine, run_id: int) -> list[EventRow]:
    query = (select(RunEvent.event, RunEvent.at, RunEvent.detail)
             .where(RunEvent.run_id == run_id, is_covered("run_events")).order_by(RunEvent.id))
    with Session(engine) as session:
        return [EventRow(*row) for row in session.execute(query)]


@dataclass(frozen=True)
class MetricRow:
    metric: str
    value: float | None
    group_key: str
    scorer_version: int


def trial_metrics(engine: Engine, trial_id: int) -> list[MetricRow]:
    query = (select(MetricValue.metric, MetricValue.value, MetricValue.group_key, MetricValue.scorer_version)
             .where(MetricValue.trial_id == trial_id, is_covered("metric_values")).order_by(MetricValue.id))
    with Session(engine) as session:
        return [MetricRow(*row) for row in session.execute(query)]
