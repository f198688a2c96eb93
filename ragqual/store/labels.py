"""Human labels in the history (table `labels`, migration 0009): append them, read the current ones.

A label row is one verdict (yes | no | unsure) one labeller gave one trial on one criterion
(ragqual.core.label_queue). Rows are never changed: a correction is a newer row for the same
(trial, criterion, labeller), and the current label is the newest of them — the one appended
last (the highest id) among the rows a seal covers (ragqual.store.sealed_rows). A row that no seal
covers, such as one inserted with plain SQL, is never read.

Labels are sealed with the run they label, in the transaction that appends them, the way a
rescoring of an old run is (RunStore._write), so `ragqual verify` and `verify RUN` check them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, insert, select
from sqlalchemy.orm import Session

from ragqual.core.label_queue import check_criterion, check_verdict
from ragqual.errors import InputError
from ragqual.store.models import Label, Trial
from ragqual.store.runstore import RunStore, table_of
from ragqual.store.sealed_rows import is_covered

MAX_NOTE = 4000
MAX_LABELLER = 128


@dataclass(frozen=True)
class LabelRow:
    """One label row as stored (`id` None before it is appended)."""

    run_id: int
    trial_id: int
    criterion: str
    verdict: str
    labeller: str
    labelled_at: datetime
    source: str
    note: str | None = None
    sample_seed: int | None = None
    sample_size: int | None = None
    id: int | None = None


def _checked(row: LabelRow) -> dict[str, object]:
    check_criterion(row.criterion)
    check_verdict(row.verdict)
    labeller = row.labeller.strip()
    if not labeller or len(labeller) > MAX_LABELLER:
        raise InputError(f"a labeller is a name of 1 to {MAX_LABELLER} characters, not {row.labeller!r}")
    if row.note is not None and len(row.note) > MAX_NOTE:
        raise InputError(f"a note holds at most {MAX_NOTE} characters (trial {row.trial_id} has {len(row.note)})")
    at = row.labelled_at if row.labelled_at.tzinfo else row.labelled_at.replace(tzinfo=UTC)
    return {"run_id": row.run_id, "trial_id": row.trial_id, "criterion": row.criterion, "verdict": row.verdict,
            "note": row.note or None, "labeller": labeller, "labelled_at": at.astimezone(UTC), "source": row.source,
            "sample_seed": row.sample_seed, "sample_size": row.sample_size}


def append_labels(store: RunStore, rows: Sequence[LabelRow]) -> list[int]:
    """Append the rows in one transaction, sealed with their run: all or nothing. A row whose
    trial is not a trial of its run is refused (InputError), and nothing is written."""
    if not rows:
        return []
    payload = [_checked(r) for r in rows]
    runs = {r.run_id for r in rows}

    def work(session: Session) -> list[int]:
        wanted = {r.trial_id for r in rows}
        found = session.execute(select(Trial.id, Trial.run_id).where(Trial.id.in_(wanted))).all()
        owner = {int(t): int(r) for t, r in found}
        for r in rows:
            if owner.get(r.trial_id) != r.run_id:
                raise InputError(f"trial {r.trial_id} is not a trial of run {r.run_id}: nothing was written")
        statement = insert(table_of(Label)).returning(Label.id, sort_by_parameter_order=True)
        ids = session.execute(statement, payload).scalars().all()
        return [int(i) for i in ids]

    return store._write(work, next(iter(runs)) if len(runs) == 1 else None)


def _row(label: Label) -> LabelRow:
    at = label.labelled_at if label.labelled_at.tzinfo else label.labelled_at.replace(tzinfo=UTC)
    return LabelRow(label.run_id, label.trial_id, label.criterion, label.verdict, label.labeller, at,
                    label.source, label.note, label.sample_seed, label.sample_size, label.id)


def label_history(engine: Engine, run_id: int, criterion: str | None = None) -> list[LabelRow]:
    """Every covered label row of the run, oldest first (corrections included)."""
    query = select(Label).where(Label.run_id == run_id, is_covered("labels")).order_by(Label.id)
    if criterion is not None:
        query = query.where(Label.criterion == check_criterion(criterion))
    with Session(engine) as session:
        return [_row(label) for label in session.execute(query).scalars()]


def current_labels(engine: Engine, run_id: int, criterion: str | None = None) -> list[LabelRow]:
    """The newest covered row per (trial, criterion, labeller), by trial, criterion and labeller."""
    newest: dict[tuple[int, str, str], LabelRow] = {}
    for row in label_history(engine, run_id, criterion):
        newest[(row.trial_id, row.criterion, row.labeller)] = row
    return [newest[k] for k in sorted(newest)]


def labeller_progress(engine: Engine, run_id: int, labeller: str) -> tuple[dict[int, dict[str, str]], dict[int, str]]:
    """What `labeller` has given the run's trials so far: trial -> {criterion: verdict}, and
    trial -> their newest note (for the review queue to resume and show)."""
    verdicts: dict[int, dict[str, str]] = {}
    notes: dict[int, str] = {}
    for row in label_history(engine, run_id):
        if row.labeller != labeller:
            continue
        verdicts.setdefault(row.trial_id, {})[row.criterion] = row.verdict
        if row.note:
            notes[row.trial_id] = row.note
    return verdicts, notes
