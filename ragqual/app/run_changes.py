"""What changed since the previous run of the same kind: each run's label (name, tags) and the
settings that differ from its predecessor's (ragqual.core.paramdiff.setting_changes, the rule
`compare` uses for its two runs), for `history` and `report`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from ragqual.core import paramdiff
from ragqual.core.display import MISSING
from ragqual.core.runlabel import RunLabel
from ragqual.store.run_params import previous_of_kind, stored_params

NOTHING = "(none)"  # a predecessor with the same settings


@dataclass(frozen=True)
class RunChanges:
    """One run's label, its predecessor (None: the first run of its kind) and what differs."""

    run_id: int
    label: RunLabel
    previous: int | None
    changes: list[tuple[str, Any, Any]]

    def lines(self) -> list[str]:
        """Every change in full, `key: old -> new`."""
        return paramdiff.describe(self.changes, limit=10_000)

    def summary(self) -> str:
        """The changes on one short line (`-` for the first run of its kind)."""
        if self.previous is None:
            return MISSING
        return paramdiff.summary(self.changes) or NOTHING

    def frame(self) -> pd.DataFrame:
        """One row per setting that differs: its value in the previous run and in this one."""
        rows = [(key, _cell(old), _cell(new)) for key, old, new in self.changes]
        return pd.DataFrame(rows, columns=["setting", "previous run", "this run"])


def changes_since_previous(engine: Engine, run_ids: Sequence[int]) -> dict[int, RunChanges]:
    """run id -> its RunChanges, for every run of `run_ids` that exists."""
    previous = previous_of_kind(engine, run_ids)
    stored = stored_params(engine, [*previous, *(p for p in previous.values() if p is not None)])
    out = {}
    for run_id, before in previous.items():
        now = stored[run_id]
        if before is None or before not in stored:
            out[run_id] = RunChanges(run_id, now.label, None, [])
            continue
        was = stored[before]
        diff = paramdiff.setting_changes(was.params, was.corpus_fingerprint, now.params, now.corpus_fingerprint)
        out[run_id] = RunChanges(run_id, now.label, before, diff)
    return out


def _cell(value: Any) -> str:
    return MISSING if value is None else str(value)
