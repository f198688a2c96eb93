"""Rescoring a stored run: new assertion, score and metric rows from the stored raw outputs, no
model call. It runs the trial loop's own scoring (`scorers.score_trial`), so the metrics move with
the assertions: a golden whose expectations changed scores differently in `report` afterwards.

Each trial's output is rebuilt with `subject.parse(raw)` and checked against the subject's
current assertions, or against the ones given for its case in an overrides file:

    {"<case uuid>": [{"id": "<assertion uuid>", "version": 2, "name": "...", "category": "...",
                      "weight": 1.0, "check": {"kind": "regex_includes", "pattern": "..."}}, ...]}

The new rows are appended beside the old ones (a new batch); nothing is updated or deleted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragqual.engine.assertions import Assertion, Predicate, assertion_from_spec
from ragqual.engine.cases import Case
from ragqual.engine.scorers import Scored, Scorer, default_scorers, score_trial
from ragqual.engine.subject import Subject, reply_text
from ragqual.errors import InputError, Issue, ValidationFailed
from ragqual.store.runstore import RunStore
from ragqual.store.trial_reads import StoredTrial, run_figures, run_trials

Overrides = Mapping[str, Sequence[Assertion]]


@dataclass(frozen=True)
class RescoreSummary:
    run_id: int
    scorers: tuple[tuple[str, int], ...]
    trials: int
    rescored: int
    changed: int  # trials whose first scorer's score differs from its newest earlier score
    mean_before: float | None
    mean_after: float | None
    skipped: tuple[str, ...]  # one line per trial that could not be rescored, and why
    unmatched_overrides: tuple[str, ...]  # case ids in the overrides file that the run lacks


class StoredSubject(Subject):
    """A run's subject rebuilt from the history alone, for subjects that are not installed here
    or need arguments to build (the RAG subject needs its corpus): it has no current cases, so
    every trial is checked against its stored case definition, and its raw responses are read
    as chat replies."""

    def __init__(self, name: str):
        self.name = name

    def cases(self) -> list[Case]:
        return []

    def parse(self, raw: Any) -> Any:
        return reply_text(raw)


def predicate_registry(cases: Sequence[Case]) -> dict[str, Callable[..., Any]]:
    """code sha256 -> function, for every Python predicate the subject's current cases use."""
    return {a.check.code_sha256: a.check.fn for c in cases for a in c.assertions if isinstance(a.check, Predicate)}


def load_assertion_overrides(
    path: str | Path, predicates: Mapping[str, Callable[..., Any]] | None = None
) -> dict[str, tuple[Assertion, ...]]:
    """Read an overrides file; every bad entry is reported at once with the file name."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise InputError(f"{where}: cannot read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected an object mapping case ids to lists of assertion specs")
    issues: list[Issue] = []
    out: dict[str, tuple[Assertion, ...]] = {}
    for case_id, specs in data.items():
        if not isinstance(specs, list):
            issues.append(Issue(where, None, f"case {case_id}: expected a list of assertion specs"))
            continue
        built = []
        for i, spec in enumerate(specs):
            try:
                built.append(assertion_from_spec(spec, predicates))
            except (InputError, TypeError, AttributeError) as exc:
                issues.append(Issue(where, None, f"case {case_id}, assertion {i}: {exc}"))
        out[case_id] = tuple(built)
    if issues:
        raise ValidationFailed(issues)
    return out


def _case_and_assertions(
    trial: StoredTrial, current: Mapping[str, Case], overrides: Overrides | None,
    predicates: Mapping[str, Callable[..., Any]], aliases: Mapping[str, str],
) -> tuple[Case, Sequence[Assertion]]:
    case_id = trial.case_id if trial.case_id in current else aliases.get(trial.case_id, trial.case_id)
    case = current.get(case_id) or Case.from_definition(trial.case_definition, with_assertions=False)
    if overrides is not None and (trial.case_id in overrides or case_id in overrides):
        return case, overrides.get(trial.case_id) or overrides[case_id]
    if case_id in current:
        return case, case.assertions
    stored = Case.from_definition(trial.case_definition, predicates)  # the subject dropped this case
    return stored, stored.assertions


def _newest(engine: Any, run_id: int, scorer_name: str) -> dict[int, float]:
    return {r.trial_id: r.score for r in run_figures(engine, run_id, scorer_name) if r.score is not None}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rescore(
    store: RunStore,
    run_id: int,
    subject: Subject,
    assertions_override: Overrides | None = None,
    scorers: Sequence[Scorer] | None = None,
) -> RescoreSummary:
    """Append a new scoring to every trial of a run; calls no model."""
    store.get_run(run_id)  # an unknown run id is an InputError naming `ragqual history`
    scorers = list(scorers) if scorers is not None else default_scorers()
    current_cases = subject.cases()
    current = {c.id: c for c in current_cases}
    predicates = predicate_registry(current_cases)
    trials = run_trials(store.engine, run_id)
    aliases = store.case_aliases()
    before = _newest(store.engine, run_id, scorers[0].name)
    after: dict[int, float] = {}
    skipped: list[str] = []
    recorded: set[tuple[str, int, str]] = set()
    for trial in trials:
        try:
            case, assertions = _case_and_assertions(trial, current, assertions_override, predicates, aliases)
        except InputError as exc:
            skipped.append(f"trial {trial.trial_id} ({trial.slug}): {exc}")
            continue
        _record_defs(store, assertions, recorded)
        scored = _score_trial(subject, trial, case, assertions, scorers)
        store.append_rescoring(run_id, trial.trial_id, case.id, trial.mode, scored.assertions, scored.scores,
                               scored.metrics, scored.metrics_version)
        after[trial.trial_id] = scored.scores[0].score
    in_run = {t.case_id for t in trials} | {aliases.get(t.case_id, t.case_id) for t in trials}
    unmatched = sorted(set(assertions_override or {}) - in_run)
    changed = sum(1 for t, s in after.items() if t in before and before[t] != s)
    return RescoreSummary(
        run_id=run_id, scorers=tuple((s.name, s.version) for s in scorers), trials=len(trials),
        rescored=len(after), changed=changed,
        mean_before=_mean([before[t] for t in after if t in before]), mean_after=_mean(list(after.values())),
        skipped=tuple(skipped), unmatched_overrides=tuple(unmatched),
    )


def _record_defs(store: RunStore, assertions: Sequence[Assertion], recorded: set[tuple[str, int, str]]) -> None:
    """Store the definitions a rescoring used, so that an audit can show what each version meant."""
    for a in assertions:
        key = (a.id, a.version, json.dumps(a.spec(), sort_keys=True))
        if key not in recorded:
            store.record_assertion_def(a.id, a.version, a.category, float(a.weight), a.name, a.spec())
            recorded.add(key)


def _score_trial(subject: Subject, trial: StoredTrial, case: Case, assertions: Sequence[Assertion],
                 scorers: Sequence[Scorer]) -> Scored:
    """The trial loop's own scoring (`score_trial`) over the stored output: assertions, scores, metrics."""
    error, output = trial.error, None
    if error is None:
        try:
            output = subject.parse(trial.raw_output)
        except Exception as exc:  # noqa: BLE001 - one unreadable raw response must not stop a rescore
            error = f"parse failed: {type(exc).__name__}: {exc}"
    return score_trial(subject, case, assertions, scorers, mode=trial.mode, output=output,
                       context=trial.context, error=error, raw=trial.raw_output)
