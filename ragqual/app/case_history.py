"""One question across every run: for trial runs its pass share and mean score per variant/mode
(over its repeats, with its stability), for retrieval runs its metric values per strategy; each
row with the run's git sha."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from ragqual.core.metric_names import CASE_METRICS
from ragqual.core.scoring import SCORER_NAME, is_unstable
from ragqual.errors import InputError
from ragqual.store.case_reads import case_metric_rows, case_trial_rows
from ragqual.store.summaries import group_label

COLUMNS = ["run_id", "kind", "started_at", "git_sha", "group", "trials", "pass", "score", "unstable"]


def case_history(engine: Engine, golden_id: str, metrics: Sequence[str] = (),
                 scorer_name: str = SCORER_NAME) -> pd.DataFrame:
    """A row per run and group holding the question, oldest run first; InputError if none does."""
    wanted = list(metrics) or list(CASE_METRICS)
    rows = _trial_rows(case_trial_rows(engine, golden_id, scorer_name)) + _metric_rows(
        case_metric_rows(engine, golden_id), wanted)
    if not rows:
        raise InputError(f"no run in the history holds question {golden_id!r} (a golden id, e.g. from "
                         "`ragqual report --last`)")
    frame = pd.DataFrame(rows)
    for column in [*COLUMNS, *wanted]:
        if column not in frame.columns:
            frame[column] = None
    frame["trials"] = frame["trials"].astype("Int64")
    return frame[[*COLUMNS, *wanted]].sort_values(["run_id", "group"], kind="stable").reset_index(drop=True)


def _trial_rows(trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for t in trials:
        if t["score"] is not None:
            groups.setdefault((t["run_id"], group_label(t["variant"], t["mode"])), []).append(t)
    out = []
    for (run_id, label), items in groups.items():
        flags = [bool(t["perfect"]) for t in items]
        first = items[0]
        out.append({"run_id": run_id, "kind": first["kind"], "started_at": first["started_at"],
                    "git_sha": first["git_sha"], "group": label, "trials": len(items),
                    "pass": sum(flags) / len(flags), "score": sum(float(t["score"]) for t in items) / len(items),
                    "unstable": is_unstable(flags)})
    return out


def _metric_rows(rows: list[dict[str, Any]], wanted: list[str]) -> list[dict[str, Any]]:
    newest: dict[tuple[int, str], int] = {}
    for r in rows:
        key = (r["run_id"], r["metric"])
        newest[key] = max(newest.get(key, r["scorer_version"]), r["scorer_version"])
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for r in rows:
        if r["metric"] not in wanted or r["scorer_version"] != newest[(r["run_id"], r["metric"])]:
            continue
        row = out.setdefault((r["run_id"], r["group_key"]), {
            "run_id": r["run_id"], "kind": r["kind"], "started_at": r["started_at"], "git_sha": r["git_sha"],
            "group": r["group_key"]})
        row[r["metric"]] = float(r["value"]) if r["value"] is not None else None
    return list(out.values())
