"""Runs' stored parameters, read for many runs at once, and each run's predecessor: the previous
run of the same kind (and subject), which `history` and `report` diff a run's settings against."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, text

from ragqual.core.runlabel import RunLabel

PREVIOUS_SQL = """
SELECT r.id,
       (SELECT MAX(p.id) FROM runs p
        WHERE p.kind = r.kind AND COALESCE(p.subject, '') = COALESCE(r.subject, '') AND p.id < r.id)
FROM runs r
WHERE r.id IN :ids
"""

PARAMS_SQL = "SELECT id, params, corpus_fingerprint FROM runs WHERE id IN :ids"


@dataclass(frozen=True)
class StoredParams:
    """One run's parameters as stored, its corpus fingerprint and its label (name, tags)."""

    run_id: int
    params: dict[str, Any]
    corpus_fingerprint: str | None

    @property
    def label(self) -> RunLabel:
        return RunLabel.from_params(self.params)


def previous_of_kind(engine: Engine, run_ids: Sequence[int]) -> dict[int, int | None]:
    """run id -> the id of the newest earlier run of its kind and subject (None for the first)."""
    if not run_ids:
        return {}
    query = text(PREVIOUS_SQL).bindparams(bindparam("ids", expanding=True))
    with engine.connect() as conn:
        rows = conn.execute(query, {"ids": sorted({int(r) for r in run_ids})}).all()
    return {int(run_id): None if previous is None else int(previous) for run_id, previous in rows}


def stored_params(engine: Engine, run_ids: Sequence[int]) -> dict[int, StoredParams]:
    """run id -> its stored parameters (runs that do not exist are absent)."""
    if not run_ids:
        return {}
    query = text(PARAMS_SQL).bindparams(bindparam("ids", expanding=True))
    with engine.connect() as conn:
        rows = conn.execute(query, {"ids": sorted({int(r) for r in run_ids})}).all()
    return {int(run_id): StoredParams(int(run_id), _object(params), fingerprint) for run_id, params, fingerprint in rows}


def _object(value: str | None) -> dict[str, Any]:
    loaded = json.loads(value) if value else {}
    return loaded if isinstance(loaded, dict) else {}
