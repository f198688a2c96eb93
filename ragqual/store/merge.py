"""Appending the runs of one history to another (`ragqual merge A.db B.db --into C.db`).

Definitions (system prompts, variants, cases, assertion definitions, corpus and price snapshots,
case aliases) are interned by their content keys, so a case both sources ran is one row in the
target. Every run is copied with everything that belongs to it (events, trials, assertion and
score rows, metric values, retrieval rows, labels, costs, judgements, judge audits), its ids
remapped, in one transaction of the target's run store: the target seals the copied rows in its
own chain, as if they had been appended there. Ids written inside JSON (a judge run's target run in
its params, the judge run and trials an audit names in its payload: `JSON_REFS`) are remapped too;
audits are copied last, once every run they may name is.

What keeps a source verifiable: each copied run gets a `merged` event, second after its
`started`, whose detail records the source's file name, the digest that names the source
history (the seal that started its first run), the source's head digest and seal count at merge time,
and the run's id and head digest in the source. `ragqual --db A.db verify --expect HEAD` then
still proves the source; the copy in the target is proved by the target's own chain.

Merging the same source again is idempotent: a run already merged with the same head is
skipped; a run that changed in the source since (more trials, a rescore) is refused, naming it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Table, func, insert, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from ragqual.errors import InputError
from ragqual.store import sealing
from ragqual.store.models import Base
from ragqual.store.runstore import END_EVENTS, RunStore, bulk_insert

MERGED_EVENT = "merged"

# Definition tables and the columns that name a row's content (its unique key).
DEFINITIONS: dict[str, tuple[str, ...]] = {
    "system_prompts": ("sha256",),
    "variant_configs": ("sha256",),
    "cases": ("subject", "case_id", "sha256"),
    "assertion_defs": ("assertion_id", "version", "sha256"),
    "corpus_snapshots": ("fingerprint",),
    "pricing_snapshots": ("sha256",),
    "case_aliases": ("subject", "alias"),
    "texts": ("sha256",),  # trials name their long texts by sha256 (migration 0012): no id to remap
}
TRIAL_ROWS = ("assertion_results", "trial_scores", "trial_costs")  # owned through trial_id
RUN_ROWS = ("metric_values", "retrieval_results", "retrieval_rankings", "labels", "judgements")
LATE_ROWS = ("judge_audits",)  # sealed with no run, copied once every run is: they name later runs
# Foreign keys to remap: column -> the table whose id it names.
REFS: dict[str, dict[str, str]] = {
    "run_events": {"run_id": "runs"},
    "trials": {"run_id": "runs", "case_pk": "cases", "variant_id": "variant_configs",
               "system_prompt_id": "system_prompts"},
    "assertion_results": {"trial_id": "trials"},
    "trial_scores": {"trial_id": "trials"},
    "trial_costs": {"trial_id": "trials", "snapshot_id": "pricing_snapshots"},
    "metric_values": {"run_id": "runs", "trial_id": "trials"},
    "retrieval_results": {"run_id": "runs"},
    "retrieval_rankings": {"run_id": "runs"},
    "labels": {"run_id": "runs", "trial_id": "trials"},
    "judgements": {"run_id": "runs", "target_run_id": "runs", "trial_id": "trials"},
    "judge_audits": {"run_id": "runs"},
}
# Ids written inside JSON columns: column -> path of keys -> the table whose id(s) it names (an
# int or a list of ints). A judge run names its target (and pairwise other) run in its params; an
# audit names the judge run and trials of the audited run in its payload.
_RUN_PARAMS = {"target_run": "runs", "pairwise": "runs"}
JSON_REFS: dict[str, dict[str, dict[tuple[str, ...], str]]] = {
    "runs": {"params": {(k,): t for k, t in _RUN_PARAMS.items()},
             "provenance": {("params", k): t for k, t in _RUN_PARAMS.items()}},
    "judge_audits": {"payload": {("judge_run",): "runs", ("disagreements",): "trials",
                                 ("labelled_unjudged",): "trials"}},
}
Rows = list[dict[str, Any]]
IdMap = dict[str, dict[int, int]]


@dataclass(frozen=True)
class SourceHistory:
    """What names a source and its state when merged."""

    name: str  # the file name, for people
    history: str | None  # digest of the seal that started its first run: names the history whatever its file
    # (its very first seal does not: a fresh history's first transaction interns the same definitions)
    head: str | None  # its head digest (what `verify --expect` checks)
    seals: int
    run_heads: dict[int, str | None]  # run id -> the run's head digest in the source
    run_rows: dict[int, dict[str, int]]  # run id -> its rows per table (a rescore moves no run head)


@dataclass(frozen=True)
class MergedRun:
    source_run: int
    run_id: int  # in the target
    copied: bool  # False: merged before with the same head, skipped


def _table(name: str) -> Table:
    return Base.metadata.tables[name]


def describe_source(engine: Engine, name: str) -> SourceHistory:
    """The source's identity, head and each run's head, read as they are now."""
    with engine.connect() as conn:
        head = conn.execute(text("SELECT digest FROM seals ORDER BY id DESC LIMIT 1")).scalar_one_or_none()
        seals = int(conn.execute(text("SELECT COUNT(*) FROM seals")).scalar_one())
        history = conn.execute(text("SELECT digest FROM seals WHERE run_id IS NOT NULL ORDER BY id LIMIT 1")
                               ).scalar_one_or_none()
        runs = list(conn.execute(text("SELECT id FROM runs ORDER BY id")).scalars())
        heads = {int(r): sealing.head(conn, int(r)) for r in runs}
        rows = {int(r): _run_rows(conn, int(r)) for r in runs}
    return SourceHistory(name, history, head, seals, heads, rows)


def _run_rows(conn: Connection, run: int) -> dict[str, int]:
    """How many rows of each table belong to the run."""
    def counted(table: str, where: Callable[[Table], Any]) -> int:
        t = _table(table)
        return int(conn.execute(select(func.count()).select_from(t).where(where(t))).scalar_one())

    trials = select(_table("trials").c.id).where(_table("trials").c.run_id == run)
    owned = ("run_events", "trials", *RUN_ROWS, *LATE_ROWS)
    found = {t: counted(t, lambda x: x.c.run_id == run) for t in owned}
    found.update({t: counted(t, lambda x: x.c.trial_id.in_(trials)) for t in TRIAL_ROWS})
    return found


def copy_sqlite(path: str, dest: str) -> None:
    """A consistent copy of a SQLite history (its WAL included), read-only on the original."""
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    dst = sqlite3.connect(dest)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def raw_head(engine: Engine) -> tuple[str | None, int]:
    """The head digest and seal count as the database holds them (None, 0 before sealing existed)."""
    with engine.connect() as conn:
        try:
            head = conn.execute(text("SELECT digest FROM seals ORDER BY id DESC LIMIT 1")).scalar_one_or_none()
            return head, int(conn.execute(text("SELECT COUNT(*) FROM seals")).scalar_one())
        except DBAPIError:  # no seals table: a history from before migration 0004
            return None, 0


Merged = dict[tuple[str, int], tuple[int, str | None, dict[str, int] | None]]


def merged_before(engine: Engine) -> Merged:
    """(source history, source run) -> (run id here, the run's head and rows in the source when merged)."""
    found: Merged = {}
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT run_id, detail FROM run_events WHERE event = :e ORDER BY id"),
                            {"e": MERGED_EVENT}).all()
    for run_id, detail in rows:
        body = json.loads(detail or "{}")
        if body.get("source_history") is not None:
            found[(body["source_history"], int(body["source_run"]))] = (
                int(run_id), body.get("source_run_head"), body.get("source_run_rows"))
    return found


def plan_merge(source: SourceHistory, before: Merged) -> list[MergedRun]:
    """Which runs to copy and which are there already; InputError for a run that changed since it was merged."""
    plan = []
    for run, run_head in source.run_heads.items():
        done = before.get((source.history or "", run))
        if done is None:
            plan.append(MergedRun(run, 0, True))
        elif done[1] == run_head and done[2] == source.run_rows.get(run):
            plan.append(MergedRun(run, done[0], False))
        else:
            raise InputError(f"run {run} of {source.name} changed since it was merged as run {done[0]} (rows "
                             "appended to it since: events, a rescore, labels or costs): merging it again would "
                             "hold two copies; nothing was written")
    return plan


def _read(conn: Connection, table: str, where: Any = None) -> Rows:
    t = _table(table)
    query = select(t).order_by(t.c.id)
    if where is not None:
        query = query.where(where(t))
    return [dict(row._mapping) for row in conn.execute(query)]


def _append(session: Session, table: str, rows: Rows, ids: IdMap) -> None:
    """Insert `rows` (source ids remapped) in source id order; record old id -> new id."""
    if not rows:
        return
    t = _table(table)
    refs = REFS.get(table, {})
    payload = []
    for row in rows:
        new = {k: v for k, v in row.items() if k != "id"}
        for column, target in refs.items():
            if new.get(column) is not None:
                new[column] = _mapped(ids, target, new[column], table, column)
        for column, paths in JSON_REFS.get(table, {}).items():
            if new.get(column) is not None:
                new[column] = _remapped_json(new[column], paths, ids, table, column)
        payload.append(new)
    conn = session.connection()
    before = conn.execute(select(t.c.id).order_by(t.c.id.desc()).limit(1)).scalar_one_or_none() or 0
    bulk_insert(session, t, payload)
    new_ids = list(conn.execute(select(t.c.id).where(t.c.id > before).order_by(t.c.id)).scalars())
    ids.setdefault(table, {}).update(zip((r["id"] for r in rows), new_ids, strict=True))


def _remapped_json(value: str, paths: dict[tuple[str, ...], str], ids: IdMap, owner: str, column: str) -> str:
    """The JSON text with the ids at `paths` remapped, written back in the store's key order
    (sorted keys); a text that is not a JSON object, or lacks the paths, comes back unchanged."""
    try:
        body = json.loads(value)
    except ValueError:
        return value
    changed = False
    for path, table in paths.items():
        holder = body
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or holder.get(path[-1]) is None:
            continue
        old = holder[path[-1]]
        where = f"{column}.{'.'.join(path)}"
        if isinstance(old, list):
            holder[path[-1]] = [_mapped(ids, table, int(i), owner, where) for i in old]
        else:
            holder[path[-1]] = _mapped(ids, table, int(old), owner, where)
        changed = True
    return json.dumps(body, ensure_ascii=False, sort_keys=True) if changed else value


def _mapped(ids: IdMap, table: str, old: int, owner: str, column: str) -> int:
    try:
        return ids[table][old]
    except KeyError:
        raise InputError(f"{owner}.{column} names {table} row {old}, which this merge does not copy (a judgement "
                         "of a run merged earlier or left out): merge both runs together") from None


def _intern_definitions(session: Session, source: Connection, ids: IdMap) -> None:
    conn = session.connection()
    for table, key in DEFINITIONS.items():
        t = _table(table)
        known = {tuple(row[1:]): row[0] for row in conn.execute(select(t.c.id, *(t.c[k] for k in key)))}
        missing = []
        mapping = ids.setdefault(table, {})
        for row in _read(source, table):
            found = known.get(tuple(row[k] for k in key))
            if found is None:
                missing.append(row)
            else:
                mapping[row["id"]] = found
        _append(session, table, missing, ids)


def _copy_run(session: Session, source: Connection, run: int, ids: IdMap, merged: dict[str, Any],
              clock: Callable[[], Any]) -> tuple[int, Rows]:
    """The run with all its rows but its later events, which are returned (see `_copy_event`)."""
    _append(session, "runs", _read(source, "runs", lambda t: t.c.id == run), ids)
    new_run = ids["runs"][run]
    events = _read(source, "run_events", lambda t: t.c.run_id == run)
    _append(session, "run_events", events[:1], ids)
    session.execute(insert(_table("run_events")).values(run_id=new_run, event=MERGED_EVENT, at=clock(),
                                                        detail=json.dumps(merged, sort_keys=True)))
    _append(session, "trials", _read(source, "trials", lambda t: t.c.run_id == run), ids)
    trials = select(_table("trials").c.id).where(_table("trials").c.run_id == run)
    for table in TRIAL_ROWS:
        _append(session, table, _read(source, table, lambda t: t.c.trial_id.in_(trials)), ids)
    for table in RUN_ROWS:
        _append(session, table, _read(source, table, lambda t: t.c.run_id == run), ids)
    return new_run, events[1:]


def _copy_event(session: Session, event: dict[str, Any], new_run: int, ids: IdMap) -> None:
    """One later event in its own transaction: an end event records the run's seal head here (what
    `verify` checks) and keeps the one it recorded in the source as `source_seal_head`."""
    if event["event"] in END_EVENTS:
        try:
            body = json.loads(event["detail"]) if event["detail"] else {}
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {"detail": event["detail"]}
        if "seal_head" in body:
            body["source_seal_head"] = body["seal_head"]
        body["seal_head"] = sealing.head(session, new_run)
        event = {**event, "detail": json.dumps(body, sort_keys=True)}
    _append(session, "run_events", [event], ids)


def _copy_run_sealed(target: RunStore, src: Connection, run: int, ids: IdMap,
                     merged: dict[str, Any]) -> tuple[int, Rows]:
    holder: dict[str, int] = {}

    def work(session: Session) -> tuple[int, Rows]:
        new_run, later = _copy_run(session, src, run, ids, merged, target.clock)
        holder["run"] = new_run
        return new_run, later

    return target._write(work, lambda: holder.get("run"))


def _copy_event_sealed(target: RunStore, event: dict[str, Any], new_run: int, ids: IdMap) -> None:
    """A later event; a `finished` one with the run's summary in the target, as a run that finishes
    there appends it (ragqual.store.run_summaries)."""

    def work(session: Session) -> None:
        _copy_event(session, event, new_run, ids)
        if event["event"] == "finished":
            target._summarise(session, new_run)

    target._write(work, new_run)


def merge_into(target: RunStore, source_engine: Engine, source: SourceHistory, plan: Sequence[MergedRun]) -> list[MergedRun]:
    """Copy the planned runs of `source_engine` into `target`: definitions in one sealed
    transaction, then each run in its own. Returns the plan with the target's run ids."""
    ids: IdMap = {}
    done: list[MergedRun] = []
    with source_engine.connect() as src:
        target._write(lambda session: _intern_definitions(session, src, ids))
        for item in plan:
            if not item.copied:
                ids.setdefault("runs", {})[item.source_run] = item.run_id
                done.append(item)
                continue
            merged = {"source": source.name, "source_history": source.history, "source_head": source.head,
                      "source_seals": source.seals, "source_run": item.source_run,
                      "source_run_head": source.run_heads.get(item.source_run),
                      "source_run_rows": source.run_rows.get(item.source_run)}
            new_run, later = _copy_run_sealed(target, src, item.source_run, ids, merged)
            for event in later:
                _copy_event_sealed(target, event, new_run, ids)
            done.append(MergedRun(item.source_run, new_run, True))
        copied = [item.source_run for item in plan if item.copied]
        if copied:
            target._write(lambda session: _copy_late_rows(session, src, copied, ids))
    return done


def _copy_late_rows(session: Session, source: Connection, runs: list[int], ids: IdMap) -> None:
    for table in LATE_ROWS:
        _append(session, table, _read(source, table, lambda t: t.c.run_id.in_(runs)), ids)
