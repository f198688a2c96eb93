"""The failure report (`ragqual report RUN --failures`) and the measured causes behind the
decomposition's verdict, read from a stored run (no model call)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from ragqual.core import textmatch
from ragqual.core.diagnosis import (CauseCount, Evidence, cause_of, count_causes, document_recall, evidence_from,
                                    fact_coverage)
from ragqual.store.failure_reads import FailureTrial, decomposition_trials, run_failure_trials

NO_CONTEXT = "no-context"  # noretrieval mode: the model was given nothing by design


matches = textmatch.found  # a golden's regex against a text; running out of time is no match


def evidence(trial: FailureTrial) -> Evidence:
    return evidence_from(trial.case_input, trial.raw_output, trial.context, trial.answer)


def failed(trial: FailureTrial) -> bool:
    """Incorrect by the newest correctness metric (a failed model call counts as failed)."""
    return trial.error is not None or trial.correctness is None or trial.correctness < 1


def not_passed(trial: FailureTrial) -> bool:
    """A weight-bearing assertion failed in the newest scoring (or the trial failed)."""
    return trial.error is not None or trial.perfect is not True


def is_golden(trial: FailureTrial) -> bool:
    """The case is a RAG golden (the causes are measured for goldens only)."""
    return "relevantDocIds" in trial.case_input or "expectRefusal" in trial.case_input


def cause(trial: FailureTrial) -> str:
    if trial.error is not None:
        return "trial-error"
    if not is_golden(trial):
        return "-"
    e = evidence(trial)
    if trial.mode == "noretrieval" and not e.expect_refusal:
        return NO_CONTEXT
    return cause_of(e, matches)


@dataclass(frozen=True)
class FailureRow:
    variant: str
    mode: str
    case_id: str
    repeat: int
    cause: str
    failed_checks: str
    doc_recall: float | None
    fact_coverage: float | None
    answer: str


def failure_rows(engine: Engine, run_id: int, limit_answer: int = 160) -> list[FailureRow]:
    """One row per failing trial: which assertion failed and why, and the measured cause."""
    rows = []
    for t in run_failure_trials(engine, run_id):
        if not not_passed(t):
            continue
        e = evidence(t)
        checks = "; ".join(f"{c.name}: {c.detail}" if c.detail else c.name for c in t.checks if not c.passed)
        answer = t.error or t.answer
        rows.append(FailureRow(
            t.variant, t.mode, t.case_id, t.repeat_index, cause(t), checks or "-",
            document_recall(e) if t.mode != "noretrieval" and is_golden(t) else None,
            fact_coverage(e, matches) if t.mode != "noretrieval" and is_golden(t) else None,
            answer if len(answer) <= limit_answer else answer[: limit_answer - 3] + "...",
        ))
    return rows


def gap_causes(trials: Sequence[FailureTrial]) -> dict[str, CauseCount]:
    """Per variant: the causes of e2e failures on questions its oracle answered (every repeat)."""
    oracle_ok: dict[tuple[str, str], bool] = {}
    for t in trials:
        if t.mode == "oracle":
            key = (t.variant, t.case_id)
            oracle_ok[key] = oracle_ok.get(key, True) and not failed(t)
    has_oracle = {t.variant for t in trials if t.mode == "oracle"}
    causes: dict[str, list[str]] = {}
    questions: dict[str, list[str]] = {}
    for t in trials:
        if t.mode != "e2e" or t.variant not in has_oracle or not failed(t):
            continue
        if oracle_ok.get((t.variant, t.case_id)):
            causes.setdefault(t.variant, []).append(cause(t))
            questions.setdefault(t.variant, []).append(t.case_id)
    return {v: count_causes(causes.get(v, []), questions.get(v, [])) for v in has_oracle}


def run_gap_causes(engine: Engine, run_id: int) -> dict[str, CauseCount]:
    return gap_causes(run_failure_trials(engine, run_id))


def run_gap_causes_and_trials(engine: Engine, run_id: int) -> tuple[dict[str, CauseCount], list[FailureTrial]]:
    """`run_gap_causes`, with the trials it read (for the measured advice, read once for both):
    what the two read of them alone (`decomposition_trials`: no assertion outcome, no
    noretrieval trial, an oracle trial's outcome without its texts)."""
    trials = decomposition_trials(engine, run_id)
    return gap_causes(trials), trials
