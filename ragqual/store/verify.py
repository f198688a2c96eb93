"""`ragqual verify`: recompute every seal and every sealed row, and say what no longer matches.

Findings name the table, the row id and what happened to it:

  edited     the row is there but its content is not what was sealed
  deleted    a sealed row is gone
  re-ordered the row now holds what was sealed under another id of the same table
  inserted   a row written after sealing began that no seal covers (written outside ragqual);
             `verify RUN` looks for them among the rows of those runs too
  seal       a seal whose digest or links no longer add up (seals edited, removed or re-ordered),
             or a `seal_spans` row that is not what the seals say (readers trust the spans)
  run        a run's end event records a seal head that its seals do not lead to
  summary    a run's current summary row (migration 0013) differs from what its rows give when
             computed again (ragqual.store.run_summaries): `history` would show the summary
  schema     a table, column, index, trigger, view (or on PostgreSQL a function, constraint, ...)
             missing, extra or different from what the migrations at head create
             (ragqual.store.schema_check)
  unchecked  a table that cannot be read any more (see its schema findings): its rows are skipped

Rows written before migration 0004 (up to the genesis seal's watermark) are unsealed: their runs
are reported as such, never as tampered.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine, bindparam, inspect, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from ragqual.core.published_head import PublishedHead
from ragqual.errors import StorageFault
from ragqual.store import run_summaries, schema_check, sealed_rows, sealing
from ragqual.store.models import HISTORY_TABLES, Run, RunEvent, SEALED_TABLES, Seal

RUN_COLUMN_TABLES = ("run_events", "trials", "metric_values", "retrieval_results", "retrieval_rankings",
                     "judgements")


@dataclass(frozen=True)
class Finding:
    kind: str  # edited | deleted | re-ordered | inserted | seal | run | summary | schema | unchecked
    table: str
    row_id: int | None
    detail: str

    def __str__(self) -> str:
        where = f"{self.table} row {self.row_id}" if self.row_id is not None else self.table
        return f"{where}: {self.kind}: {self.detail}"


@dataclass
class Verdict:
    findings: list[Finding] = field(default_factory=list)
    seals: int = 0
    rows_checked: int = 0
    sealed_runs: list[int] = field(default_factory=list)
    unsealed_runs: list[int] = field(default_factory=list)
    head: str | None = None
    expected_at: int | None = None  # the seal id whose digest --expect named

    @property
    def intact(self) -> bool:
        return not self.findings


@dataclass
class _Sealed:
    """Per table: id -> [(digest, seal id)] from every seal that names the row."""

    rows: dict[str, dict[int, list[tuple[str, int]]]] = field(default_factory=lambda: defaultdict(dict))
    watermark: dict[str, int] = field(default_factory=dict)


def _check_chain(seals: Sequence[Seal], verdict: Verdict) -> None:
    prev = sealing.GENESIS_PREV
    run_heads: dict[int, str] = {}
    for s in seals:
        if s.prev_digest != prev:
            verdict.findings.append(Finding("seal", "seals", s.id, "does not follow the seal before it "
                                                                   "(seals removed, inserted or re-ordered)"))
        expected_run_prev = run_heads.get(s.run_id) if s.run_id is not None else None
        if s.run_id is not None and s.run_prev_digest != expected_run_prev:
            verdict.findings.append(Finding("seal", "seals", s.id, f"breaks the chain of run {s.run_id}"))
        if sealing.seal_digest(s.prev_digest, s.run_prev_digest, s.run_id, s.rows) != s.digest:
            verdict.findings.append(Finding("seal", "seals", s.id, "its digest does not match its content (edited)"))
        prev = s.digest
        if s.run_id is not None:
            run_heads[s.run_id] = s.digest
    verdict.head = prev if seals else None


def _collect(seals: Sequence[Seal], run_ids: set[int] | None, verdict: Verdict) -> _Sealed:
    sealed = _Sealed()
    for s in seals:
        try:
            body = json.loads(s.rows)
        except ValueError:
            verdict.findings.append(Finding("seal", "seals", s.id, "its row list is not readable"))
            continue
        if s.kind in ("genesis", "watermark"):  # rows up to these ids predate their table's sealing
            for t, v in body.get("watermark", {}).items():
                sealed.watermark[t] = max(sealed.watermark.get(t, 0), int(v))
            continue
        if run_ids is not None and s.run_id is not None and s.run_id not in run_ids:
            continue
        for table, part in body.items():
            ids = sealing.expand(part["ids"])
            digests = part["digests"]
            width = sealing.ROW_DIGEST_CHARS
            for n, row_id in enumerate(ids):
                sealed.rows[table].setdefault(row_id, []).append((digests[n * width:(n + 1) * width], s.id))
    return sealed


def _current(engine: Engine, table: str) -> dict[int, str]:
    """Every row's digest, read the way the seals were computed (sealing.read_rows)."""
    conn = engine.raw_connection()
    try:
        cursor = conn.cursor()
        return dict(sealing.read_rows(cursor, engine.dialect.name, table))
    finally:
        conn.close()


def _check_rows(engine: Engine, sealed: _Sealed, run_ids: set[int] | None, verdict: Verdict,
                tables: Sequence[str]) -> None:
    for table in tables:
        current = _current(engine, table)
        expected = sealed.rows.get(table, {})
        by_digest = defaultdict(list)
        for row_id, entries in expected.items():
            for digest, _ in entries:
                by_digest[digest].append(row_id)
        for row_id, entries in sorted(expected.items()):
            verdict.rows_checked += 1
            now = current.get(row_id)
            for digest, seal_id in entries:
                if now is None:
                    verdict.findings.append(Finding("deleted", table, row_id, f"sealed by seal {seal_id}, now missing"))
                elif now != digest:
                    moved = [i for i in by_digest.get(now, []) if i != row_id]
                    if moved:
                        verdict.findings.append(Finding("re-ordered", table, row_id,
                                                        f"holds what seal {seal_id} recorded for row {moved[0]}"))
                    else:
                        verdict.findings.append(Finding("edited", table, row_id,
                                                        f"content differs from what seal {seal_id} recorded"))
        if run_ids is None:
            floor = sealed.watermark.get(table, 0)
            for row_id in sorted(set(current) - set(expected)):
                if row_id > floor:
                    verdict.findings.append(Finding("inserted", table, row_id, "no seal covers this row "
                                                                              "(written outside ragqual)"))


def _check_runs(engine: Engine, seals: Sequence[Seal], sealed: _Sealed, run_ids: set[int] | None,
                verdict: Verdict) -> None:
    floor = sealed.watermark.get("runs", 0)
    with engine.connect() as conn:
        runs = conn.execute(select(Run.id).order_by(Run.id)).scalars().all()
        ends = conn.execute(select(RunEvent.id, RunEvent.run_id, RunEvent.detail)
                            .where(RunEvent.event.in_(("finished", "interrupted", "failed")),
                                   RunEvent.id > sealed.watermark.get("run_events", 0))).all()
    for run_id in runs:
        if run_ids is None or run_id in run_ids:
            (verdict.unsealed_runs if run_id <= floor else verdict.sealed_runs).append(run_id)
    event_seal = {row_id: seal_id for row_id, entries in sealed.rows.get("run_events", {}).items()
                  for _, seal_id in entries}
    digests = {s.id: s for s in seals}
    for event_id, run_id, detail in ends:
        if run_ids is not None and run_id not in run_ids:
            continue
        try:
            recorded = json.loads(detail).get("seal_head") if detail else None
        except (ValueError, AttributeError):
            recorded = None
        seal_id = event_seal.get(event_id)
        if recorded is None or seal_id is None:
            continue
        actual = digests[seal_id].run_prev_digest
        if recorded != actual:
            verdict.findings.append(Finding("run", "run_events", event_id,
                                            f"run {run_id}'s end event records seal head {recorded[:12]}…, "
                                            f"its seals lead to {(actual or 'none')[:12]}…"))


def _check_spans(engine: Engine, seals: Sequence[Seal], verdict: Verdict) -> list[tuple[int, str, int, int]]:
    """`seal_spans` against the spans the seals name (readers count what the spans cover)."""
    expected = sealed_rows.chain_spans((s.id, s.kind, s.rows) for s in seals)
    missing = Counter(expected)
    with engine.connect() as conn:
        if not inspect(conn).has_table(sealed_rows.SPANS_TABLE):
            verdict.findings.append(Finding("seal", sealed_rows.SPANS_TABLE, None, "the table is missing (dropped)"))
            return expected
        stored = conn.execute(text("SELECT id, seal_id, table_name, first_id, last_id FROM seal_spans ORDER BY id")).all()
    for row_id, seal_id, table, first, last in stored:
        key = (int(seal_id), str(table), int(first), int(last))
        if missing[key] > 0:
            missing[key] -= 1
        else:
            verdict.findings.append(Finding("seal", "seal_spans", row_id, f"covers {table} rows {first}-{last}, which "
                                            f"seal {seal_id} does not name (readers would count them)"))
    for (seal_id, table, first, last), n in sorted(missing.items()):
        if n > 0:
            verdict.findings.append(Finding("seal", "seal_spans", None, f"seal {seal_id}'s span of {table} rows "
                                            f"{first}-{last} is missing (readers leave those rows out)"))
    return expected


def _check_run_rows(engine: Engine, spans: Sequence[tuple[int, str, int, int]], run_ids: set[int],
                    verdict: Verdict, readable: set[str]) -> None:
    """Rows of these runs that no seal covers (`verify RUN`; a full verify finds them per table)."""
    by_table: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for _, table, first, last in spans:
        by_table[table].append((first, last))
    with engine.connect() as conn:
        for table, sql in sealed_rows.RUN_ROWS.items():
            if table not in readable or (table in ("trial_scores", "assertion_results", "trial_costs")
                                            and "trials" not in readable):
                continue
            ranges = sorted(by_table.get(table, []))
            starts = [first for first, _ in ranges]
            query = text(sql).bindparams(bindparam("runs", expanding=True))
            for run_id, row_id in conn.execute(query, {"runs": sorted(run_ids)}).all():
                at = bisect.bisect_right(starts, row_id) - 1
                if at < 0 or ranges[at][1] < row_id:
                    verdict.findings.append(Finding("inserted", table, row_id, f"a row of run {run_id} no seal covers "
                                                                             "(written outside ragqual)"))


def _check_summaries(engine: Engine, run_ids: set[int] | None, verdict: Verdict) -> None:
    """Every current run summary computed again from the run's rows (readers show the summary)."""
    for row_id, run_id in run_summaries.mismatches(engine, sorted(run_ids) if run_ids is not None else None):
        verdict.findings.append(Finding("summary", run_summaries.TABLE, row_id,
                                        f"run {run_id}'s summary differs from its rows computed again "
                                        "(`history` would show the summary)"))


_SCHEMA_DETAIL = {
    "missing": "missing: the migrations at head create it",
    "extra": "extra: no migration creates it",
    "different": "different from what the migrations at head create",
}


def _check_schema(engine: Engine, verdict: Verdict) -> set[str]:
    """Schema findings; the history tables that can still be read as the seals were computed."""
    try:
        differences, actual = schema_check.check_schema(engine)
    except DBAPIError as exc:
        raise StorageFault(f"cannot derive the schema the migrations create, to compare the history with it: "
                           f"{str(exc.orig).strip().splitlines()[0]}") from exc
    for d in differences:
        verdict.findings.append(Finding("schema", f"{d.kind} {d.name}", None, _SCHEMA_DETAIL[d.change]))
    readable = {t for t in HISTORY_TABLES
                if schema_check.readable(actual, t, sealing.columns(t))}
    for table in HISTORY_TABLES:
        if table not in readable:
            verdict.findings.append(Finding("unchecked", table, None, "cannot be read as it was sealed (see the "
                                            "schema findings): its rows were not checked"))
    return readable


def verify(engine: Engine, run_ids: Sequence[int] | None = None,
           expect: str | PublishedHead | None = None) -> Verdict:
    """Compare the schema with head, then recompute the chain, every sealed row and each run's
    recorded head, skipping what can no longer be read."""
    verdict = Verdict()
    wanted = set(run_ids) if run_ids else None
    readable = _check_schema(engine, verdict)
    if "seals" not in readable:
        return verdict
    with Session(engine) as session:
        seals = list(session.scalars(select(Seal).order_by(Seal.id)))
    verdict.seals = len(seals)
    if not seals or seals[0].kind != "genesis":
        verdict.findings.append(Finding("seal", "seals", seals[0].id if seals else None,
                                        "the genesis seal of migration 0004 is missing"))
    _check_chain(seals, verdict)
    sealed = _collect(seals, wanted, verdict)
    _check_rows(engine, sealed, wanted, verdict, [t for t in SEALED_TABLES if t in readable])
    if {"runs", "run_events"} <= readable:
        _check_runs(engine, seals, sealed, wanted, verdict)
    if sealed_rows.SPANS_TABLE in readable:
        spans = _check_spans(engine, seals, verdict)
        if wanted is not None:
            _check_run_rows(engine, spans, wanted, verdict, readable)
        if {run_summaries.TABLE, "trials", "trial_scores", "metric_values"} <= readable:
            _check_summaries(engine, wanted, verdict)
    if expect is not None:
        _check_expected(seals, expect, verdict)
    return verdict


def _check_expected(seals: Sequence[Seal], expect: str | PublishedHead, verdict: Verdict) -> None:
    """One rule for a head kept elsewhere (`--expect DIGEST`, `--expect-from FILE`): the chain must
    still hold that digest (a history that grew since is fine); a published head that says where it
    was must still be there, with as many seals up to it."""
    digest = (expect.digest if isinstance(expect, PublishedHead) else expect).strip().lower()
    at = next((n for n, s in enumerate(seals) if s.digest == digest), None)
    if at is None:
        verdict.findings.append(Finding("seal", "seals", None, f"the expected digest {digest} is in no seal of this "
                                        "database: seals were removed (a run deleted with its seals, the newest seals "
                                        "cut off) or the chain was rewritten, or the digest is from another database"))
        return
    seal = seals[at]
    verdict.expected_at = seal.id
    if isinstance(expect, PublishedHead) and (seal.id, at + 1) != (expect.seal_id, expect.seals):
        verdict.findings.append(Finding("seal", "seals", seal.id, f"the published head was seal {expect.seal_id} of "
                                        f"{expect.seals}; here it is seal {seal.id}, with {at + 1} seal(s) up to it"))
