"""What `ragqual pick` needs beyond its pure plan (`engine.pick`): the subjects, the cache hits a
plan should expect, and the run itself, through the same path as `ragqual run`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragqual.app.context import AppContext
from ragqual.app.subject_run import SubjectRunOptions, run_subject
from ragqual.engine import loop
from ragqual.engine.aggregate import RunSummary
from ragqual.engine.cases import Case, select_by_slugs
from ragqual.engine.pick import PickPlan, axis_arguments
from ragqual.engine.services import services_for
from ragqual.engine.subject import Subject
from ragqual.errors import RagqualError
from ragqual.subjects.registry import get_subject, subject_names


@dataclass(frozen=True)
class Expected:
    """Cache hits expected for a plan: `hits` of the `known` trials whose keys are known ahead."""

    hits: int
    known: int
    total: int

    def text(self) -> str:
        unknown = self.total - self.known
        tail = f" ({unknown} not known before they run)" if unknown else ""
        return f"{self.hits} of {self.total} expected cache hits{tail}"


class PickBackend:
    """The picker's view of the project: subjects by name, expected hits, and the run."""

    def __init__(self, app: AppContext):
        self.app = app
        self._subjects: dict[str, Subject] = {}

    def subject_names(self) -> list[str]:
        return subject_names()

    def subject(self, name: str) -> Subject:
        if name not in self._subjects:
            self._subjects[name] = get_subject(name, app=self.app)
        return self._subjects[name]

    def expected(self, plan: PickPlan) -> Expected:
        """Look each trial's planned cache keys up in the response cache (nothing is called)."""
        subject = self.subject(plan.subject)
        cases = select_by_slugs(subject.cases(), list(plan.cases))
        cache = self.app.response_cache()
        services = services_for(subject, cache, warm_up=False)
        variants = subject.axis_variants({k: list(v) for k, v in plan.axes.items()})
        hits = known = total = 0
        for variant in variants:
            for case in cases:
                for mode in plan.modes:
                    for repeat in range(plan.trial_count):
                        total += 1
                        keys = _planned(subject, case, variant, mode, repeat, services)
                        if keys is not None:
                            known += 1
                            hits += all(cache.holds(k) for k in keys)
        return Expected(hits, known, total)

    def run(self, plan: PickPlan, progress: loop.ProgressCallback) -> tuple[loop.RunOutcome, RunSummary]:
        """The plan as `ragqual run` would run it (its `--axis` flags, cases, modes and repeats)."""
        subject = self.subject(plan.subject)
        options = SubjectRunOptions(subject=plan.subject, trial_count=plan.trial_count, case_slugs=plan.cases,
                                    modes=plan.modes, axes=axis_arguments(plan, subject.axes))
        return run_subject(self.app, options, progress)


def _planned(subject: Subject, case: Case, variant: Any, mode: str, repeat: int, services: Any) -> list[str] | None:
    try:
        return subject.planned_keys(case, variant, mode, repeat, services)
    except RagqualError:  # a server that does not answer: the key (its digest) is not known
        return None
