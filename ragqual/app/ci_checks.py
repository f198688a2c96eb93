"""What CI output needs from a run or a comparison beyond the tables: a run's JUnit test cases
(one per question x variant/mode, or per question x strategy), the causes of failing trials, and
whether a baseline is stale against the checkout's HEAD."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from sqlalchemy import Engine

from ragqual.adapters.git_history import ancestry
from ragqual.app.failures import cause, not_passed
from ragqual.core.junit import JUnitCase
from ragqual.core.metric_names import FLIP_METRICS
from ragqual.core.scoring import is_unstable
from ragqual.core.staleness import StaleAfter, staleness_warning
from ragqual.store.failure_reads import FailureTrial, run_failure_trials
from ragqual.store.records import RunInfo
from ragqual.store.summaries import Summary, summarise_run


def baseline_staleness(base: Summary, limit: StaleAfter, cwd: Path) -> str | None:
    """The staleness warning for BASE measured at its recorded git sha, against HEAD at `cwd`."""
    sha = base.header.get("git_sha")
    return staleness_warning(sha, ancestry(sha, cwd), limit)


def _why(trial: FailureTrial) -> str:
    checks = [f"{c.name}: {c.detail}" if c.detail else c.name for c in trial.checks if not c.passed]
    return "; ".join(checks) or ("not scored" if trial.perfect is None else "-")


def failure_causes(engine: Engine, run_id: int) -> dict[str, str]:
    """case id -> the measured causes of its failing trials in the run (`app.failures.cause`)."""
    found: dict[str, list[str]] = defaultdict(list)
    for trial in run_failure_trials(engine, run_id):
        if not_passed(trial) and cause(trial) not in found[trial.case_id]:
            found[trial.case_id].append(cause(trial))
    return {case: ", ".join(causes) for case, causes in found.items() if causes}


def _slot_case(run_id: int, key: tuple[str, str, str], trials: list[FailureTrial]) -> JUnitCase:
    variant, mode, _ = key
    classname, name = f"ragqual.run{run_id}.{variant}/{mode}", trials[0].slug or trials[0].case_id
    errors = [t for t in trials if t.error is not None]
    if errors:
        return JUnitCase(classname, name, "error", f"trial error in {len(errors)} of {len(trials)} repeat(s)",
                         errors[0].error or "", "TrialError")
    passed = [not not_passed(t) for t in trials]
    if all(passed):
        return JUnitCase(classname, name)
    if is_unstable(passed):
        return JUnitCase(classname, name, "skipped",
                         f"unstable: passed {sum(passed)} of {len(passed)} repeats (left out of the gate)")
    first = trials[0]
    why = _why(first)
    detail = f"cause: {cause(first)}\nfailed: {why}\nanswer: {first.error or first.answer}"
    return JUnitCase(classname, name, "failure", f"failed in all {len(trials)} repeat(s): {why}", detail,
                     "AssertionFailed")


def _retrieval_cases(summary: Summary, run_id: int) -> list[JUnitCase]:
    out = []
    for label, group in sorted(summary.groups.items()):
        for question, values in sorted(group.questions.items()):
            metric = next((m for m in FLIP_METRICS if m in values), None)
            classname = f"ragqual.run{run_id}.{label}"
            if metric is not None and values[metric] < 1.0:
                out.append(JUnitCase(classname, question, "failure", f"{metric} = {values[metric]:g}: no relevant "
                                     "document retrieved in the top 5", "cause: missed document", "RetrievalMiss"))
            else:
                out.append(JUnitCase(classname, question))
    return out


def run_junit_cases(engine: Engine, info: RunInfo) -> list[JUnitCase]:
    """One case per question x variant/mode of a run's trials (failure, error, unstable = skipped);
    a retrieval run: one per question x strategy, failed when it hit nothing in the top 5."""
    trials = run_failure_trials(engine, info.id)
    if not trials:
        return _retrieval_cases(summarise_run(engine, info), info.id)
    slots: dict[tuple[str, str, str], list[FailureTrial]] = defaultdict(list)
    for trial in trials:
        slots[(trial.variant, trial.mode, trial.case_id)].append(trial)
    return [_slot_case(info.id, key, slots[key]) for key in sorted(slots)]
