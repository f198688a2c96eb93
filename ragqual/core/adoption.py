"""The adoption rule: does a candidate retrieval configuration beat the baseline?

A metric whose baseline value is already at its maximum has no headroom: nothing can improve it,
so letting it decide would make the rule unsatisfiable. Such a metric is reported as saturated
and skipped. The deciding metric is the first in `PRIORITY` with headroom. A candidate clears
when it improves the deciding metric by more than the float slack and regresses none of the
priority metrics (saturated ones included) by more than the slack.

The rule compares point estimates (group means). Beside it stands the paired test of the deciding
metric over the same questions (`with_evidence`): its interval, p-value and minimum detectable
effect. When the rule clears a candidate on point estimates but the test does not call the gain an
improvement, the verdict says so in as many words.

The rule only produces a verdict. Moving a shipped default is a separate, deliberate change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ragqual.core.display import fmt_delta, fmt_rate, fmt_value
from ragqual.core.metric_names import ADOPTION_PRIORITY
from ragqual.core.verdicts import IMPROVEMENT
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


@dataclass(frozen=True)
class PairedEvidence:
    """The paired test of one candidate's deciding metric against the baseline, question by question
    (as `ragqual compare` computes it): the mean paired difference, the interval inverted from the
    test, its p-value, the minimum detectable effect (None when there is none to state) and the
    comparison's verdict (`ragqual.core.verdicts`)."""

    test: str
    n: int
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    mde: float | None
    verdict: str


def with_evidence(verdict: Verdict, evidence: Mapping[str, PairedEvidence], confidence: float = 0.95) -> Verdict:
    """The verdict with each candidate's paired test beside the rule: every reason gains the test's
    figures, and the sentence says when the best candidate clears on point estimates only."""
    metric = verdict.deciding_metric
    if metric is None:
        return verdict
    outcomes = {
        name: replace(o, reason=f"{o.reason}; {evidence_text(metric, evidence[name], confidence)}")
        if name in evidence else o
        for name, o in verdict.outcomes.items()
    }
    notes = [point_estimate_warning(name, metric, evidence[name])
             for name, o in outcomes.items() if o.cleared and name in evidence]
    extra = " ".join(n for n in notes if n)
    sentence = verdict.sentence
    if extra:
        sentence = sentence.replace(_NEVER_CHANGES_DEFAULT, f"{extra} {_NEVER_CHANGES_DEFAULT}")
    return replace(verdict, outcomes=outcomes, sentence=sentence)


def evidence_text(metric: str, e: PairedEvidence, confidence: float = 0.95) -> str:
    """`paired randomization test over 155 questions: ndcg@10 +0.032, 95% interval [-0.008, 0.071],
    p = 0.1190, MDE 0.045: inconclusive`."""
    mde = fmt_rate(e.mde) if e.mde is not None else "-"
    return (f"paired {e.test} test over {e.n} questions: {metric} {fmt_delta(e.delta)}, "
            f"{round(confidence * 100):d}% interval [{fmt_delta(e.ci_low)}, {fmt_delta(e.ci_high)}], "
            f"p = {fmt_value(e.p_value, 'p')}, MDE {mde}: {e.verdict}")


def point_estimate_warning(name: str, metric: str, e: PairedEvidence) -> str:
    """For a candidate the rule clears: '' when the paired test calls the gain an improvement, else
    the sentence that the rule cleared on point estimates only."""
    if e.verdict == IMPROVEMENT:
        return f"The paired test agrees for {name}: the {metric} gain is significant (p = {fmt_value(e.p_value, 'p')})."
    below = (f"; the gain is below the minimum detectable effect ({fmt_rate(e.mde)})"
             if e.mde is not None and abs(e.delta) < e.mde else "")
    return (f"{name} clears the rule on point estimates only: the paired test of {metric} is {e.verdict} "
            f"(p = {fmt_value(e.p_value, 'p')}, interval [{fmt_delta(e.ci_low)}, {fmt_delta(e.ci_high)}]){below}, "
            "so the data do not show that the gain is real.")
