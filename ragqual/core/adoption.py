"""The adoption rule: does a candidate retrieval configuration beat the baseline?

A metric whose baseline value is already at its maximum has no headroom: nothing can improve it,
so letting it decide would make the rule unsatisfiable. Such a metric is reported as saturated
and skipped. The deciding metric is the first in `PRIORITY` with headroom. A candidate clears
when it improves the deciding metric by more than the float slack and regresses none of the
priority metrics (saturated ones included) by more than the slack.

The rule only produces a verdict. Moving a shipped default is a separate, deliberate change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragqual.core.metric_names import ADOPTION_PRIORITY
from ragqual.errors import InputError

PRIORITY: tuple[str, ...] = ADOPTION_PRIORITY
SLACK = 1e-9
METRIC_MAXIMUM = 1.0

_NEVER_CHANGES_DEFAULT = (
    "The rule reports a verdict only and never changes a default; adopting a candidate is a "
    "separate, deliberate change."
)


@dataclass(frozen=True)
class CandidateOutcome:
    """One candidate's result; `gain` is its change on the deciding metric (None if none decides)."""

    name: str
    cleared: bool
    gain: float | None
    regressions: dict[str, float] = field(default_factory=dict)
    reason: str = ""


@dataclass(frozen=True)
class Verdict:
    saturated: tuple[str, ...]
    deciding_metric: str | None
    outcomes: dict[str, CandidateOutcome]
    best: str | None
    sentence: str


def decide(
    baseline: Mapping[str, float],
    candidates: Mapping[str, Mapping[str, float]],
    priority: Sequence[str] = PRIORITY,
    slack: float = SLACK,
    maximum: float = METRIC_MAXIMUM,
) -> Verdict:
    """Apply the adoption rule to each candidate against `baseline` (extra metrics are ignored)."""
    if not priority:
        raise InputError("the adoption rule needs at least one priority metric")
    if not (slack >= 0 and math.isfinite(slack)):
        raise InputError(f"slack must be a non-negative number, got {slack!r}")
    _check_metrics("baseline", baseline, priority)
    for name, metrics in candidates.items():
        _check_metrics(f"candidate {name!r}", metrics, priority)
    saturated = tuple(m for m in priority if baseline[m] >= maximum - slack)
    deciding = next((m for m in priority if m not in saturated), None)
    outcomes = {
        name: _judge(name, baseline, metrics, priority, deciding, slack)
        for name, metrics in candidates.items()
    }
    best = _best(outcomes)
    return Verdict(saturated, deciding, outcomes, best, _sentence(saturated, deciding, outcomes, best))


def _check_metrics(label: str, metrics: Mapping[str, float], priority: Sequence[str]) -> None:
    missing = [m for m in priority if m not in metrics]
    if missing:
        raise InputError(f"{label} lacks metric(s) {', '.join(missing)}")
    bad = [m for m in priority if not math.isfinite(float(metrics[m]))]
    if bad:
        raise InputError(f"{label} has non-finite value(s) for {', '.join(bad)}")


def _judge(
    name: str,
    baseline: Mapping[str, float],
    metrics: Mapping[str, float],
    priority: Sequence[str],
    deciding: str | None,
    slack: float,
) -> CandidateOutcome:
    regressions = {m: baseline[m] - metrics[m] for m in priority if baseline[m] - metrics[m] > slack}
    problems = [f"regresses {m} by {drop:.4f}" for m, drop in regressions.items()]
    if deciding is None:
        problems.append("no priority metric has headroom, so nothing can improve")
        return CandidateOutcome(name, False, None, regressions, "; ".join(problems))
    gain = metrics[deciding] - baseline[deciding]
    if gain <= slack and deciding not in regressions:
        problems.append(f"does not improve {deciding} ({gain:+.4f})")
    if problems:
        return CandidateOutcome(name, False, gain, regressions, "; ".join(problems))
    reason = f"improves {deciding} by {gain:.4f}, regresses none"
    return CandidateOutcome(name, True, gain, regressions, reason)


def _best(outcomes: Mapping[str, CandidateOutcome]) -> str | None:
    """The clearing candidate with the largest gain; the first listed wins a tie."""
    best: CandidateOutcome | None = None
    for outcome in outcomes.values():
        if outcome.cleared and (best is None or (outcome.gain or 0.0) > (best.gain or 0.0)):
            best = outcome
    return best.name if best else None


def _sentence(
    saturated: tuple[str, ...],
    deciding: str | None,
    outcomes: Mapping[str, CandidateOutcome],
    best: str | None,
) -> str:
    parts = []
    if deciding is None:
        parts.append("Every priority metric is saturated at the baseline, so no metric can decide "
                     "and no candidate can clear.")
    else:
        if saturated:
            parts.append(f"Saturated at the baseline (no headroom): {', '.join(saturated)}.")
        parts.append(f"Deciding metric: {deciding}.")
        parts.append(_result_clause(deciding, outcomes, best))
    parts.append(_NEVER_CHANGES_DEFAULT)
    return " ".join(parts)


def _result_clause(deciding: str, outcomes: Mapping[str, CandidateOutcome], best: str | None) -> str:
    if best is None:
        return "No candidate clears the adoption rule."
    others = [name for name, o in outcomes.items() if o.cleared and name != best]
    clause = f"{best} clears the adoption rule ({outcomes[best].gain:+.4f} {deciding}, no regression)"
    if others:
        clause += f"; also clearing: {', '.join(others)}"
    return clause + "."
