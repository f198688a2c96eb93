"""Evaluating a trial's assertions and turning the outcomes into versioned score rows.

Scorers are plural: each has a name and a version that every score row carries, so a rescoring
with a new scorer (or a new version of one) sits beside the old rows instead of replacing them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ragqual.core import scoring
from ragqual.core.scoring import Outcome, ScoreResult
from ragqual.engine.assertions import Assertion, TrialContext
from ragqual.errors import InputError
from ragqual.store.records import AssertionRow, ScoreRow

if TYPE_CHECKING:
    from ragqual.engine.cases import Case
    from ragqual.engine.subject import Subject, Variant

_MAX_DETAIL = 500


@dataclass(frozen=True)
class Evaluated:
    """One assertion's outcome on one trial, with the detail shown in audits."""

    outcome: Outcome
    detail: str | None

    def row(self) -> AssertionRow:
        o = self.outcome
        return AssertionRow(o.assertion_id, o.version, o.category, float(o.weight),
                            o.counts_as_passed, self.detail)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


def evaluate(assertion: Assertion, output: Any, ctx: TrialContext) -> Evaluated:
    """Run one check; anything it raises (a regex timeout included) is an error on it alone."""
    try:
        passed, detail = assertion.check.evaluate(output, ctx)
        error = None
    except Exception as exc:  # noqa: BLE001 - a broken check must not stop the run
        passed, error = False, f"{type(exc).__name__}: {exc}"
        detail = f"error: {error}"
    outcome = Outcome(assertion.id, assertion.version, assertion.category, float(assertion.weight),
                      bool(passed), error)
    return Evaluated(outcome, None if detail is None else _clip(str(detail)))


def evaluate_all(assertions: Iterable[Assertion], output: Any, ctx: TrialContext) -> list[Evaluated]:
    return [evaluate(a, output, ctx) for a in assertions]


def not_evaluated(assertions: Iterable[Assertion], reason: str) -> list[Evaluated]:
    """Every assertion failed with an error: the trial produced no output to check."""
    note = _clip(f"not evaluated: {reason}")
    return [
        Evaluated(Outcome(a.id, a.version, a.category, float(a.weight), False, note), note)
        for a in assertions
    ]


class Scorer(Protocol):
    name: str
    version: int

    def score(self, outcomes: Sequence[Outcome], *, trial_error: str | None) -> ScoreResult: ...


class WeightedAssertionsScorer:
    """Σ(wᵢ·passedᵢ)/Σwᵢ from `ragqual.core.scoring`; a trial that errored scores 0.

    The error rule matters when a case has no weight-bearing assertion: the formula alone would
    give such a trial 1.0 even though the model never answered.
    """

    name = scoring.SCORER_NAME
    version = scoring.SCORER_VERSION

    def score(self, outcomes: Sequence[Outcome], *, trial_error: str | None) -> ScoreResult:
        if trial_error is not None:
            categories = dict.fromkeys(o.category for o in outcomes)
            return ScoreResult(0.0, False, {c: 0.0 for c in categories})
        return scoring.score(outcomes)


SCORERS: dict[str, type] = {WeightedAssertionsScorer.name: WeightedAssertionsScorer}


def default_scorers() -> list[Scorer]:
    return [WeightedAssertionsScorer()]


def get_scorer(name: str) -> Scorer:
    """A scorer by name; an unknown name lists the valid ones."""
    if name not in SCORERS:
        raise InputError(f"unknown scorer {name!r}: valid scorers are {', '.join(sorted(SCORERS))}")
    return SCORERS[name]()


def score_rows(
    scorers: Sequence[Scorer], evaluated: Sequence[Evaluated], trial_error: str | None
) -> tuple[ScoreRow, ...]:
    outcomes = [e.outcome for e in evaluated]
    rows = []
    for scorer in scorers:
        result = scorer.score(outcomes, trial_error=trial_error)
        rows.append(ScoreRow(scorer.name, scorer.version, result.score, result.perfect, result.per_category))
    return tuple(rows)


@dataclass(frozen=True)
class Scored:
    """Everything one scoring of one trial appends: assertion rows, score rows, metric rows."""

    assertions: tuple[AssertionRow, ...]
    scores: tuple[ScoreRow, ...]
    metrics: dict[str, float | None]
    metrics_version: int


def score_trial(
    subject: Subject, case: Case, assertions: Sequence[Assertion], scorers: Sequence[Scorer], *,
    mode: str, output: Any, context: str | None, error: str | None, variant: Variant | None = None,
    raw: Any = None,
) -> Scored:
    """The one scoring path, shared by the trial loop and `rescore`: assertions first, then the
    versioned scorers over their outcomes, then the subject's metrics from the outcomes, the
    output, the raw response and the context. A trial that failed has no output: every assertion
    fails as not evaluated and it has no metric rows (reports count it as 0)."""
    if error is not None:
        evaluated = not_evaluated(assertions, f"the trial failed: {error}")
        metrics: dict[str, float | None] = {}
    else:
        ctx = TrialContext(case=case, mode=mode, context=context, variant=variant)
        evaluated = evaluate_all(assertions, output, ctx)
        metrics = dict(subject.derive_metrics(case, mode, output, context, [e.outcome for e in evaluated], raw=raw))
    return Scored(tuple(e.row() for e in evaluated), score_rows(scorers, evaluated, error), metrics,
                  subject.metrics_version)
