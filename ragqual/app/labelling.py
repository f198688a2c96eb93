"""Human labels of a stored run: the review queue's content, and label files in and out.

`ragqual label RUN` opens a `ReviewQueue`: the run's trials as a person reviews them (question,
context with the golden's relevant documents marked, answer, the deterministic verdicts), the
queue's state (ragqual.core.label_queue) and `save`, which appends the rows a key press asks for.
`ragqual labels import` / `export` read and write label files (ragqual.core.label_files);
`ragqual labels agree` measures how far two labellers of the same trials agree.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ragqual.app.context import AppContext
from ragqual.app.failures import not_passed
from ragqual.core import label_files
from ragqual.core.agreement import LabellerAgreement, between_labellers
from ragqual.core.hashing import sha256_hex
from ragqual.core.label_queue import LabelDraft, LabelSession, fully_labelled, plan_queue
from ragqual.errors import InputError
from ragqual.store.failure_reads import FailureTrial, run_failure_trials
from ragqual.store.labels import LabelRow, append_labels, current_labels, label_history, labeller_progress
from ragqual.store.runstore import utcnow

TUI_SOURCE = "tui"
SOURCE_DIGEST_CHARS = 12


def default_labeller(explicit: str | None) -> str:
    """`--labeller`, else $USER, else the login name; InputError when none is known."""
    for name in (explicit, os.environ.get("USER"), os.environ.get("USERNAME")):
        if name and name.strip():
            return name.strip()
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        raise InputError("who is labelling? give --labeller NAME (USER is not set)") from None


@dataclass(frozen=True)
class Check:
    name: str
    category: str
    weight: float
    passed: bool


@dataclass(frozen=True)
class ReviewItem:
    """One trial as a person reviews it."""

    trial_id: int
    case_id: str
    variant: str
    mode: str
    repeat: int
    question: str
    answer: str
    context: str
    chunks: tuple[tuple[str, bool], ...]  # (chunk or document id, a relevant document of the golden)
    relevant: tuple[str, ...]
    error: str | None
    passed: bool | None
    correctness: float | None
    checks: tuple[Check, ...]
    turns: tuple[tuple[str, str], ...] = ()  # (role, text) of a multi-turn golden's earlier turns


def _doc_of(chunk_id: str) -> str:
    return chunk_id.split("#", 1)[0]


def _turns(case_input: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The conversation before the question (a multi-turn golden's `turns`): without it a question
    such as "How often should I replace it?" cannot be judged."""
    turns = case_input.get("turns")
    if not isinstance(turns, list):
        return ()
    return tuple((str(t.get("role", "?")), str(t.get("content", ""))) for t in turns if isinstance(t, dict))


def review_item(t: FailureTrial) -> ReviewItem:
    relevant = tuple(str(d) for d in t.case_input.get("relevantDocIds") or ())
    injected = t.raw_output.get("injected") if isinstance(t.raw_output, dict) else None
    chunks = tuple((str(c), _doc_of(str(c)) in relevant) for c in injected or ())
    question = t.case_input.get("query")
    return ReviewItem(
        t.trial_id, t.case_id, t.variant, t.mode, t.repeat_index,
        question if isinstance(question, str) else str(t.case_input or t.slug), t.answer, t.context, chunks,
        relevant, t.error, False if t.error is not None else t.perfect, t.correctness,
        tuple(Check(c.name, c.category, c.weight, c.passed) for c in t.checks), _turns(t.case_input),
    )


@dataclass
class ReviewQueue:
    """What the review app shows and edits: the items, the session, and how rows are saved."""

    run_id: int
    labeller: str
    items: dict[int, ReviewItem]
    session: LabelSession
    save: Callable[[Sequence[LabelDraft]], list[int]]
    run_trials: int
    already_done: int
    sample_seed: int | None = None
    sample_size: int | None = None
    saved: list[int] = field(default_factory=list)

    def press(self, key: str) -> list[int]:
        """Apply a key and append the rows it asks for; their ids."""
        return self.record(self.session.press(key))

    def note(self, text: str) -> list[int]:
        return self.record(self.session.note(text))

    def record(self, drafts: Sequence[LabelDraft]) -> list[int]:
        ids = self.save(drafts) if drafts else []
        self.saved += ids
        return ids


def label_rows(drafts: Sequence[LabelDraft], run_id: int, labeller: str, at: datetime, *,
               sample_seed: int | None = None, sample_size: int | None = None) -> list[LabelRow]:
    """The rows a review session appends for its drafts."""
    return [LabelRow(run_id, d.trial_id, d.criterion, d.verdict, labeller, at, TUI_SOURCE, d.note,
                     sample_seed, sample_size) for d in drafts]


def open_queue(app: AppContext, run_id: int, labeller: str | None = None, *, sample: int | None = None,
               seed: int = 0, failures: bool = False, clock: Callable[[], datetime] = utcnow) -> ReviewQueue:
    """The review queue of a run for a labeller, resumed where they stopped."""
    store = app.store(auto_create=False)
    store.get_run(run_id)  # InputError when there is no such run
    who = default_labeller(labeller)
    trials = run_failure_trials(store.engine, run_id)
    if not trials:
        raise InputError(f"run {run_id} has no trials to label (a retrieval run has none: label a generation run)")
    verdicts, notes = labeller_progress(store.engine, run_id, who)
    done = fully_labelled(verdicts)
    failing = {t.trial_id for t in trials if not_passed(t)} if failures else None
    order = plan_queue(_walked(trials, sample is not None and not failures), failing=failing, sample_size=sample,
                       seed=seed, done=done)
    seed_kept = seed if sample is not None else None

    def save(drafts: Sequence[LabelDraft]) -> list[int]:
        return append_labels(store, label_rows(drafts, run_id, who, clock(), sample_seed=seed_kept, sample_size=sample))

    session = LabelSession(order, {t: dict(v) for t, v in verdicts.items()}, dict(notes))
    items = {t.trial_id: review_item(t) for t in trials}
    return ReviewQueue(run_id, who, items, session, save, len(trials), len(done & set(items)), seed_kept, sample)


def _walked(trials: Sequence[FailureTrial], answered_only: bool) -> list[int]:
    """The trials a queue may walk. A sample is drawn from the answered ones only (no trial
    error), the population a judge scores (`ragqual judge` leaves errors out): an interval that
    combines the labels with the judge's scores needs the labels drawn from that population,
    and a trial with no answer has nothing to label."""
    return [t.trial_id for t in trials if not (answered_only and t.error is not None)]


# -- files --------------------------------------------------------------------------------------

def _models_of(trial: FailureTrial) -> set[str]:
    """The names a label file may give a trial's model: its variant, and for an answer replayed from
    an `answers:` file the model that file says produced it (labels made beside the production
    system name that one)."""
    raw = trial.raw_output if isinstance(trial.raw_output, dict) else {}
    produced = raw.get("model") if raw.get("source") == "answers" else None
    return {trial.variant} | ({produced} if isinstance(produced, str) and produced else set())


def _resolve(trials: Sequence[FailureTrial], line: label_files.LabelLine, name: str) -> int:
    """The trial a file line names, or InputError naming the file and line."""
    if line.trial_id is not None:
        found = [t for t in trials if t.trial_id == line.trial_id]
        if not found:
            raise InputError(f"{name}:{line.line}: trial {line.trial_id} is not a trial of this run")
        if line.case_id is not None and found[0].case_id != line.case_id:
            raise InputError(f"{name}:{line.line}: trial {line.trial_id} is case {found[0].case_id}, "
                             f"not {line.case_id}")
        return line.trial_id
    found = [t for t in trials if t.case_id == line.case_id and t.mode == line.mode and t.repeat_index == line.repeat
             and (line.model is None or line.model in _models_of(t))]
    if len(found) == 1:
        return found[0].trial_id
    where = f"case {line.case_id}, mode {line.mode}, repeat {line.repeat}"
    if not found:
        raise InputError(f"{name}:{line.line}: the run has no trial for {where}"
                         + (f", model {line.model}" if line.model else ""))
    models = ", ".join(sorted({t.variant for t in found}))
    raise InputError(f"{name}:{line.line}: the run has a trial for {where} per model ({models}): name one with `model`")


@dataclass(frozen=True)
class ImportResult:
    rows: int
    trials: int
    source: str
    ids: list[int]


def import_labels(app: AppContext, path: Path, run_id: int, labeller: str | None = None,
                  fmt: str | None = None, clock: Callable[[], datetime] = utcnow) -> ImportResult:
    """Append every label of the file to the run, all or nothing."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"{path}: cannot read the label file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    lines = label_files.parse(str(path), text, label_files.format_of(path.name, fmt))
    store = app.store(auto_create=False)
    store.get_run(run_id)
    trials = run_failure_trials(store.engine, run_id)
    source = f"import:{sha256_hex(data)[:SOURCE_DIGEST_CHARS]}"
    now = clock()
    fallback = None if all(line.labeller for line in lines) else default_labeller(labeller)
    rows = [LabelRow(run_id, _resolve(trials, line, str(path)), line.criterion, line.verdict,
                     line.labeller or str(fallback), line.labelled_at or now, source, line.note,
                     line.sample_seed, line.sample_size) for line in lines]
    ids = append_labels(store, rows)
    return ImportResult(len(ids), len({r.trial_id for r in rows}), source, ids)


def export_rows(engine: Engine, run_id: int, every_row: bool = False) -> list[dict[str, Any]]:
    """The run's current labels (every row with `every_row`) as label file fields."""
    trials = {t.trial_id: t for t in run_failure_trials(engine, run_id)}
    rows = label_history(engine, run_id) if every_row else current_labels(engine, run_id)
    out = []
    for r in rows:
        t = trials.get(r.trial_id)
        out.append({"trial_id": r.trial_id, "case_id": t.case_id if t else None, "mode": t.mode if t else None,
                    "repeat": t.repeat_index if t else None, "model": t.variant if t else None,
                    "criterion": r.criterion, "verdict": r.verdict, "note": r.note, "labeller": r.labeller,
                    "labelled_at": r.labelled_at, "sample_seed": r.sample_seed, "sample_size": r.sample_size})
    return out


def export_labels(app: AppContext, run_id: int, fmt: str = "csv", every_row: bool = False) -> tuple[str, int]:
    """(the label file's text, how many labels it holds)."""
    store = app.store(auto_create=False)
    store.get_run(run_id)
    rows = export_rows(store.engine, run_id, every_row)
    return label_files.render(rows, label_files.format_of("", fmt)), len(rows)


def labeller_agreement(app: AppContext, run_id: int) -> list[tuple[str, LabellerAgreement]]:
    """(criterion, agreement) for every criterion and every pair of labellers who labelled some of
    the same trials of RUN, from their current labels; refused when no two labellers overlap."""
    store = app.store(auto_create=False)
    store.get_run(run_id)
    given: dict[str, dict[str, dict[int, str]]] = {}
    for row in current_labels(store.engine, run_id):
        given.setdefault(row.criterion, {}).setdefault(row.labeller, {})[row.trial_id] = row.verdict
    out = []
    for criterion in sorted(given):
        for first, second in combinations(sorted(given[criterion]), 2):
            a, b = given[criterion][first], given[criterion][second]
            if set(a) & set(b):
                out.append((criterion, between_labellers(first, second, a, b)))
    if not out:
        raise InputError(f"run {run_id} has no trial labelled by two labellers: agreement needs a second pass "
                         f"(`ragqual label {run_id} --labeller NAME`)")
    return out
