"""Judge verdicts and audits in the history (tables `judgements`, `judge_audits`, migration 0010).

Rows are appended in one sealed transaction with the judge run they belong to; readers use only
rows a seal covers (ragqual.store.sealed_rows), like every other reader of the history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine, inspect, text
from sqlalchemy.orm import Session

from ragqual.store.models import JudgeAudit, Judgement
from ragqual.store.runstore import RunStore, bulk_insert, table_of
from ragqual.store.sealed_rows import covered

PREFIX = "judge:"


@dataclass(frozen=True)
class JudgementRow:
    """One verdict. `criterion` is the bare name (`faithfulness`); the table stores `judge:<name>`."""

    trial_id: int
    criterion: str
    score: float | None
    verdict: str | None
    method: str
    rubric_version: int
    rubric_sha256: str
    judge_model: str
    judge_digest: str | None
    sample_index: int
    cache_key: str | None
    cache_hit: bool
    raw: dict[str, Any]
    error: str | None = None
    run_id: int | None = None  # the judge run (filled when read)
    target_run_id: int | None = None
    id: int | None = None


@dataclass(frozen=True)
class AuditRow:
    run_id: int
    criterion: str
    rubric_sha256: str
    judge_model: str
    judge_digest: str | None
    payload: dict[str, Any]
    id: int | None = None


def append_judgements(store: RunStore, judge_run_id: int, target_run_id: int, rows: Sequence[JudgementRow]) -> None:
    """Append verdicts of judge run `judge_run_id` on trials of `target_run_id`, sealed to the judge run."""
    now = store.clock()
    payload = [{"run_id": judge_run_id, "target_run_id": target_run_id, "trial_id": r.trial_id,
                "criterion": PREFIX + r.criterion, "score": r.score, "verdict": r.verdict, "method": r.method,
                "rubric_version": r.rubric_version, "rubric_sha256": r.rubric_sha256, "judge_model": r.judge_model,
                "judge_digest": r.judge_digest, "sample_index": r.sample_index, "cache_key": r.cache_key,
                "cache_hit": bool(r.cache_hit), "raw": json.dumps(r.raw, sort_keys=True), "error": r.error,
                "created_at": now} for r in rows]
    if payload:
        store._write(lambda s: bulk_insert(s, table_of(Judgement), payload), judge_run_id)


def append_audit(store: RunStore, row: AuditRow) -> int:
    """One audit row (sealed with no run: an audit reads a run, it does not belong to one)."""
    values = {**{k: v for k, v in asdict(row).items() if k != "id"},
              "payload": json.dumps(row.payload, sort_keys=True), "created_at": store.clock()}

    def work(session: Session) -> int:
        return int(session.execute(table_of(JudgeAudit).insert().values(**values)
                                   .returning(table_of(JudgeAudit).c.id)).scalar_one())

    return store._write(work)


_COLUMNS = ("id, run_id, target_run_id, trial_id, criterion, score, verdict, method, rubric_version, "
            "rubric_sha256, judge_model, judge_digest, sample_index, cache_key, cache_hit, raw, error")


def _row(r: Any) -> JudgementRow:
    return JudgementRow(id=r.id, run_id=r.run_id, target_run_id=r.target_run_id, trial_id=r.trial_id,
                        criterion=str(r.criterion)[len(PREFIX):], score=r.score, verdict=r.verdict, method=r.method,
                        rubric_version=r.rubric_version, rubric_sha256=r.rubric_sha256, judge_model=r.judge_model,
                        judge_digest=r.judge_digest, sample_index=r.sample_index, cache_key=r.cache_key,
                        cache_hit=bool(r.cache_hit), raw=json.loads(r.raw), error=r.error)


def judge_run_rows(engine: Engine, judge_run_id: int) -> list[JudgementRow]:
    """Every covered verdict a judge run wrote, in the order written."""
    sql = text(f"SELECT {_COLUMNS} FROM judgements j WHERE j.run_id = :r AND {covered('judgements', 'j.id')} "
               "ORDER BY j.id")
    with engine.connect() as conn:
        return [_row(r) for r in conn.execute(sql, {"r": judge_run_id})]


def current_judgements(engine: Engine, target_run_id: int, criterion: str | None = None) -> list[JudgementRow]:
    """The verdicts on run `target_run_id`: for each (trial, criterion, judge model, rubric, sample)
    the newest covered row, so a rerun of the same judge supersedes, and other judges stay beside."""
    where = "j.target_run_id = :t" + (" AND j.criterion = :c" if criterion else "")
    sql = text(f"""SELECT {_COLUMNS} FROM judgements j WHERE {where} AND {covered('judgements', 'j.id')}
        AND NOT EXISTS (SELECT 1 FROM judgements n WHERE n.trial_id = j.trial_id AND n.criterion = j.criterion
            AND n.judge_model = j.judge_model AND n.rubric_sha256 = j.rubric_sha256
            AND n.sample_index = j.sample_index AND n.id > j.id AND {covered('judgements', 'n.id')})
        ORDER BY j.id""")
    params: dict[str, Any] = {"t": target_run_id}
    if criterion:
        params["c"] = PREFIX + criterion
    with engine.connect() as conn:
        return [_row(r) for r in conn.execute(sql, params)]


def audits(engine: Engine, run_id: int) -> list[AuditRow]:
    """Every covered audit of run `run_id`, oldest first."""
    sql = text(f"SELECT id, run_id, criterion, rubric_sha256, judge_model, judge_digest, payload FROM judge_audits a "
               f"WHERE a.run_id = :r AND {covered('judge_audits', 'a.id')} ORDER BY a.id")
    with engine.connect() as conn:
        return [AuditRow(id=r.id, run_id=r.run_id, criterion=r.criterion, rubric_sha256=r.rubric_sha256,
                         judge_model=r.judge_model, judge_digest=r.judge_digest, payload=json.loads(r.payload))
                for r in conn.execute(sql, {"r": run_id})]


def trial_passed(engine: Engine, run_id: int) -> dict[int, bool]:
    """Per trial of a run, whether its newest covered score is perfect (what `--trials failing` skips)."""
    sql = text("SELECT trial_id, perfect FROM v_trials WHERE run_id = :r")
    with engine.connect() as conn:
        return {int(r.trial_id): bool(r.perfect) for r in conn.execute(sql, {"r": run_id})}


def has_tables(engine: Engine) -> bool:
    """Whether the database has the judge tables (migration 0010): an older history has no verdicts."""
    return inspect(engine).has_table("judgements")
