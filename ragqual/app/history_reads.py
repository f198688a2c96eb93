"""What the read-only commands (audit, export, verify, report, rescore, baseline, db, sql) read or
write in the history, each behind one call that opens it: the CLI formats what comes back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ragqual.app.context import AppContext
from ragqual.app.gates import gated_summary
from ragqual.core.pricing import price_list_from_canonical
from ragqual.core.published_head import HEAD_KEY, PublishedHead, find_head
from ragqual.core.scoring import SCORER_NAME
from ragqual.errors import InputError
from ragqual.store import db, trial_reads
from ragqual.store.cost_reads import cost_history, snapshot, variant_uri
from ragqual.store.records import RunInfo
from ragqual.store.summaries import Summary, write_baseline
from ragqual.store.trial_reads import AssertionDefRow, Scoring, TrialDetail


def run_summary(app: AppContext, run_id: int, scorer_name: str = SCORER_NAME, scorer_version: int | None = None,
                allow_incomplete: bool = False) -> Summary:
    """A stored run's summary for a gate (an unfinished run refused unless allowed)."""
    return gated_summary(app.store(auto_create=False), run_id, scorer_name, scorer_version, allow_incomplete)


def run_info(app: AppContext, run_id: int | None, last: bool = False) -> RunInfo:
    """RUN_ID's row, or the newest run's with `last`."""
    store = app.store(auto_create=False)
    if run_id is not None and last:
        raise InputError("give either a RUN_ID or --last, not both")
    if run_id is None and not last:
        raise InputError("give a RUN_ID or --last (`ragqual history` lists the runs)")
    return store.get_run(store.last_run_id() if last else run_id)


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _used_defs(engine: Any, detail: TrialDetail, history: list[Scoring]) -> list[AssertionDefRow]:
    """Every stored definition of the assertion versions this trial was scored with."""
    used = {(a.assertion_id, a.version) for s in history for a in s.assertions}
    used |= {(a["id"], a["version"]) for a in detail.case_definition.get("assertions", [])}
    rows = trial_reads.assertion_defs(engine, sorted({aid for aid, _ in used}))
    return [r for r in rows if (r.assertion_id, r.version) in used]


def audit_dict(engine: Any, run: RunInfo, trial_id: int) -> dict[str, Any]:
    """Everything stored about one trial: its run and events, case, assertion versions, scorings, metrics."""
    detail = trial_reads.trial_detail(engine, trial_id)
    history = trial_reads.scoring_history(engine, trial_id)
    return {
        "trial": {k: _iso(v) for k, v in asdict(detail).items()},
        "run": {k: _iso(v) for k, v in asdict(run).items()},
        "run_events": [{"event": e.event, "at": _iso(e.at), "detail": e.detail}
                       for e in trial_reads.run_events(engine, run.id)],
        "assertion_defs": [asdict(d) for d in _used_defs(engine, detail, history)],
        "scorings": [{**asdict(s), "created_at": _iso(s.created_at)} for s in history],
        "metrics": [asdict(m) for m in trial_reads.trial_metrics(engine, trial_id)],
    }


def trial_audit(app: AppContext, trial_id: int) -> dict[str, Any]:
    engine = app.history()
    detail = trial_reads.trial_detail(engine, trial_id)
    data = audit_dict(engine, app.store(auto_create=False).get_run(detail.run_id), trial_id)
    return {**data, "prices": price_history(engine, trial_id, variant_uri(json.dumps(detail.variant_config),
                                                                          detail.provider, detail.model))}


def price_history(engine: Engine, trial_id: int, uri: str) -> list[dict[str, Any]]:
    """Every price a trial has had, oldest first: the cost row, its snapshot and the entry that priced it."""
    out = []
    for row in cost_history(engine, trial_id):
        entry = price_list_from_canonical(snapshot(engine, row.snapshot_id).body).price_for(uri)
        out.append({**asdict(row), "match": entry.match if entry else None,
                    "input": entry.input if entry else None, "output": entry.output if entry else None,
                    "price_date": entry.date if entry else None})
    return out


@dataclass
class Promotion:
    path: Path
    summary: Summary
    info: RunInfo


def promote_run(app: AppContext, run_id: int, directory: Path | None, tier: str | None, scorer_name: str,
                scorer_version: int | None, allow_incomplete: bool) -> Promotion:
    """Write RUN_ID's summary as a baseline file (atomically)."""
    summary = run_summary(app, run_id, scorer_name, scorer_version, allow_incomplete)
    info = app.store(auto_create=False).get_run(run_id)
    if not summary.groups:
        raise InputError(f"run {run_id} has no scored trials or metric rows to promote")
    summary = replace(summary, header={**summary.header, **history_head(app.history())})
    path = write_baseline(summary, directory or app.settings.results_dir / "baselines", tier)
    return Promotion(path, summary, info)


def export_frames(app: AppContext, run_id: int) -> dict[str, Any]:
    """RUN_ID's trials and metric values as frames (an unknown id names `ragqual history`)."""
    from ragqual.store.queries import export_metrics, export_trials

    store = app.store(auto_create=False)
    store.get_run(run_id)
    return {"trials": export_trials(store.engine, run_id), "metric_values": export_metrics(store.engine, run_id)}


def unsealed_rows(app: AppContext, run_ids: list[int]) -> dict[int, dict[str, int]]:
    """run id -> {table: rows no seal covers}, for the runs that have any (readers left them out)."""
    from ragqual.store.sealed_rows import unsealed_counts

    return unsealed_counts(app.history(), run_ids)


def read_published_head(path: Path) -> PublishedHead:
    """The history head a report, page or baseline file recorded (`--expect-from FILE`)."""
    try:
        document = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    head = find_head(document)
    if head is None:
        raise InputError(f"{path} records no history head (`{HEAD_KEY}`): it is not a ragqual report, page or "
                         "baseline file, or was written before ragqual published heads")
    return head


def verify_history(app: AppContext, run_ids: list[int], expect: str | None,
                   expect_from: Path | None = None) -> Any:  # -> store.verify.Verdict
    """`ragqual verify`: the seals, the schema, and a head kept elsewhere (a digest or a file's)."""
    from ragqual.store.verify import verify

    if expect is not None and expect_from is not None:
        raise InputError("give either --expect DIGEST or --expect-from FILE, not both")
    expected: str | PublishedHead | None = read_published_head(expect_from) if expect_from else expect
    return verify(app.history(), run_ids or None, expected)


def history_head(engine: Any) -> dict[str, str]:
    """`{"history_head": ...}` for a report's, page's or baseline's header (empty before any seal)."""
    from ragqual.store.sealing import published_head

    with engine.connect() as conn:
        head = published_head(conn)
    return {HEAD_KEY: head.text()} if head else {}


def summarise_finished_runs(app: AppContext) -> tuple[list[int], int]:
    """Append a summary row for each finished run that has no current one (runs finished before
    migration 0013, or made stale by a rescore or a reprice), each in its own sealed transaction,
    so `history` reads them from the summaries again. (run ids summarised, runs already current)."""
    from ragqual.store import run_summaries

    store = app.store(auto_create=False)
    with store.engine.connect() as conn:
        missing, current = run_summaries.finished_without_summary(conn)
    for run_id in missing:
        store.append_summary(run_id)
    return missing, current


def upgrade_schema(app: AppContext, revision: str) -> tuple[str | None, str | None]:
    """Upgrade (or create) the database; its revision before and after."""
    engine = db.make_engine(app.db_url)
    try:
        before = db.current_revision(engine)
        db.upgrade(engine, revision)
        return before, db.current_revision(engine)
    finally:
        engine.dispose()


@dataclass
class SchemaState:
    current: str | None
    head: str
    missing_guards: list[str]
    absent: str | None = None  # why there is no database, when there is none


def schema_state(app: AppContext) -> SchemaState:
    """The database's revision beside this ragqual's, and any append-only trigger that is gone.
    A malformed URL is refused (app.db_url parses it); a missing SQLite file is reported as absent."""
    url = app.db_url
    try:
        db.require_existing(url)
    except InputError as exc:
        return SchemaState(None, db.head_revision(), [], str(exc))
    engine = db.make_engine(url)
    try:
        current, head = db.current_revision(engine), db.head_revision()
        return SchemaState(current, head, db.missing_guards(engine) if current == head else [])
    finally:
        engine.dispose()


@contextmanager
def sql_query(app: AppContext, query: str, *, timeout: float, limit: int, max_bytes: int) -> Iterator[Any]:
    """A read-only query over the history, streamed (store.sql_console)."""
    from ragqual.store.sql_console import open_query

    with open_query(app.read_only_db_url(), query, timeout=timeout, limit=limit, max_bytes=max_bytes) as stream:
        yield stream
