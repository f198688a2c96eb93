"""Reading trial costs (migration 0011): each trial's newest cost row, or its row under a pinned
pricing snapshot, falling back to `trials.cost` for trials written before costs had rows.

Only rows a seal covers are read (ragqual.store.sealed_rows).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, inspect, select
from sqlalchemy.orm import Session

from ragqual.errors import InputError
from ragqual.store.models import PricingSnapshot, Trial, TrialCost, VariantConfig
from ragqual.store.sealed_rows import is_covered

HASH_PREFIX_MIN = 6


@dataclass(frozen=True)
class PricingInput:
    """What pricing one trial needs: its model URI and token counts."""

    trial_id: int
    uri: str
    prompt_tokens: int | None
    completion_tokens: int | None
    newest_snapshot_id: int | None  # the snapshot of its newest cost row, None when it has none


@dataclass(frozen=True)
class CostValue:
    cost: float | None
    currency: str | None
    snapshot_id: int | None  # None: read from trials.cost (a trial from before migration 0011)


@dataclass(frozen=True)
class SnapshotInfo:
    id: int
    sha256: str
    created_at: datetime
    body: dict[str, Any]


@dataclass(frozen=True)
class CostHistoryRow:
    """One price a trial has had, oldest first."""

    row_id: int
    snapshot_id: int
    snapshot_sha256: str
    cost: float | None
    currency: str | None
    created_at: datetime


def has_cost_tables(engine: Engine) -> bool:
    return inspect(engine).has_table("trial_costs")


def variant_uri(config_json: str, provider: str, model: str) -> str:
    """The model URI a variant was asked for (its stored config), else provider:model."""
    try:
        uri = json.loads(config_json).get("uri")
    except (json.JSONDecodeError, AttributeError):
        uri = None
    return uri if isinstance(uri, str) and uri else f"{provider}:{model}"


def _newest_rows(session: Session, run_id: int, snapshot_id: int | None) -> dict[int, tuple[float | None, str | None, int]]:
    """trial id -> (cost, currency, snapshot id) of its newest covered cost row (under `snapshot_id`)."""
    query = (select(TrialCost.trial_id, TrialCost.cost, TrialCost.currency, TrialCost.snapshot_id)
             .join(Trial, Trial.id == TrialCost.trial_id)
             .where(Trial.run_id == run_id, is_covered("trial_costs")).order_by(TrialCost.id))
    if snapshot_id is not None:
        query = query.where(TrialCost.snapshot_id == snapshot_id)
    return {trial_id: (cost, currency, snap) for trial_id, cost, currency, snap in session.execute(query)}


def pricing_inputs(engine: Engine, run_id: int) -> list[PricingInput]:
    """Every covered trial of a run with its model URI, tokens and newest snapshot."""
    query = (select(Trial.id, VariantConfig.config, VariantConfig.provider, VariantConfig.model,
                    Trial.prompt_tokens, Trial.completion_tokens)
             .join(VariantConfig, VariantConfig.id == Trial.variant_id)
             .where(Trial.run_id == run_id, is_covered("trials")).order_by(Trial.id))
    with Session(engine) as session:
        rows = session.execute(query).all()
        newest = _newest_rows(session, run_id, None) if has_cost_tables(engine) else {}
    return [PricingInput(r[0], variant_uri(r[1], r[2], r[3]), r[4], r[5], newest.get(r[0], (None, None, None))[2])
            for r in rows]


def trial_costs(engine: Engine, run_id: int, snapshot_id: int | None = None,
                legacy: Mapping[int, float | None] | None = None) -> dict[int, CostValue]:
    """trial id -> its cost: the newest row (or the row under `snapshot_id`); a trial without a
    cost row reads `trials.cost` when no snapshot is pinned, and is unpriced when one is.
    `legacy`, when the caller has read them already: every covered trial's `trials.cost`."""
    with Session(engine) as session:
        if legacy is None:
            legacy = dict(session.execute(
                select(Trial.id, Trial.cost).where(Trial.run_id == run_id, is_covered("trials"))).all())
        costed = _newest_rows(session, run_id, snapshot_id) if has_cost_tables(engine) else {}
    out = {}
    for trial_id, legacy_cost in legacy.items():
        if trial_id in costed:
            out[trial_id] = CostValue(*costed[trial_id])
        else:
            out[trial_id] = CostValue(legacy_cost if snapshot_id is None else None, None, None)
    return out


def snapshot(engine: Engine, snapshot_id: int) -> SnapshotInfo:
    with Session(engine) as session:
        row = session.get(PricingSnapshot, snapshot_id)
        if row is None:
            raise InputError(f"no pricing snapshot with id {snapshot_id}")
        return SnapshotInfo(row.id, row.sha256, row.created_at, json.loads(row.body))


def resolve_snapshot(engine: Engine, ref: str) -> int:
    """A snapshot id from its id or (a prefix of at least 6 characters of) its sha256."""
    ref = ref.strip()
    if not has_cost_tables(engine):
        raise InputError("this history has no pricing snapshots (its schema is older than migration 0011)")
    with Session(engine) as session:
        if ref.isdigit() and len(ref) < HASH_PREFIX_MIN:
            found = session.execute(select(PricingSnapshot.id).where(PricingSnapshot.id == int(ref))).scalars().all()
        elif len(ref) >= HASH_PREFIX_MIN and all(c in "0123456789abcdef" for c in ref.lower()):
            found = session.execute(select(PricingSnapshot.id).where(
                PricingSnapshot.sha256.startswith(ref.lower()))).scalars().all()
            if not found and ref.isdigit():
                found = session.execute(select(PricingSnapshot.id).where(PricingSnapshot.id == int(ref))).scalars().all()
        else:
            found = []
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise InputError(f"--pricing-snapshot {ref}: {what} pricing snapshot(s) match (give an id or a longer "
                         "sha256 prefix; `ragqual audit TRIAL_ID` lists a trial's snapshots)")
    return int(found[0])


def run_snapshots(engine: Engine, run_id: int) -> list[tuple[int, str, int]]:
    """(snapshot id, sha256, trials priced) of every snapshot a run's trials have rows under."""
    if not has_cost_tables(engine):
        return []
    query = (select(PricingSnapshot.id, PricingSnapshot.sha256, func.count(func.distinct(TrialCost.trial_id)))
             .join(TrialCost, TrialCost.snapshot_id == PricingSnapshot.id)
             .join(Trial, Trial.id == TrialCost.trial_id)
             .where(Trial.run_id == run_id, is_covered("trial_costs"))
             .group_by(PricingSnapshot.id, PricingSnapshot.sha256).order_by(PricingSnapshot.id))
    with Session(engine) as session:
        return [(int(i), str(s), int(n)) for i, s, n in session.execute(query)]


def cost_history(engine: Engine, trial_id: int) -> list[CostHistoryRow]:
    """Every cost row of a trial, oldest first."""
    if not has_cost_tables(engine):
        return []
    query = (select(TrialCost.id, TrialCost.snapshot_id, PricingSnapshot.sha256, TrialCost.cost,
                    TrialCost.currency, TrialCost.created_at)
             .join(PricingSnapshot, PricingSnapshot.id == TrialCost.snapshot_id)
             .where(TrialCost.trial_id == trial_id, is_covered("trial_costs")).order_by(TrialCost.id))
    with Session(engine) as session:
        return [CostHistoryRow(*r) for r in session.execute(query)]
