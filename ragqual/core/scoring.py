"""The weighted assertion scorer and the aggregates built on its scores.

One trial's score is the weighted share of its assertions that passed:

    score = sum(w_i * passed_i) / sum(w_i)

Weights are clamped at 0. A weight of 0 marks an informational assertion: it is stored and shown
but sits outside the denominator, so it can never move the score. A trial with no weight-bearing
assertion scores 1.0 and counts as perfect. Categories are for display only; the per-category
breakdown applies the same formula to each category's subset.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragqual.errors import InputError

SCORER_NAME = "weighted-assertions"
SCORER_VERSION = 1


@dataclass(frozen=True)
class Outcome:
    """The result of one assertion on one trial; an errored assertion counts as failed."""

    assertion_id: str
    version: int
    category: str
    weight: float
    passed: bool
    error: str | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.weight):
            raise InputError(
                f"assertion {self.assertion_id}: weight must be finite, got {self.weight!r}"
            )

    @property
    def effective_weight(self) -> float:
        return max(0.0, float(self.weight))

    @property
    def counts_as_passed(self) -> bool:
        return self.passed and self.error is None


@dataclass(frozen=True)
class ScoreResult:
    """One trial's score, whether it is perfect, and the same formula per category."""

    score: float
    perfect: bool
    per_category: dict[str, float]


def _weighted_fraction(weighed: Sequence[tuple[float, bool]]) -> float:
    """The formula over (effective weight, counts as passed) pairs."""
    total = sum([w for w, _ in weighed])
    if total == 0:
        return 1.0
    return sum([w for w, passed in weighed if passed]) / total


def score(outcomes: Iterable[Outcome]) -> ScoreResult:
    """Score one trial from its assertion outcomes (categories in order of first appearance).

    Each outcome's effective weight and pass are read once, then summed per category."""
    weighed = [(o.category, o.effective_weight, o.counts_as_passed) for o in outcomes]
    by_category: dict[str, list[tuple[float, bool]]] = {}
    for category, weight, passed in weighed:
        by_category.setdefault(category, []).append((weight, passed))
    return ScoreResult(
        score=_weighted_fraction([(w, passed) for _, w, passed in weighed]),
        perfect=all(passed for _, w, passed in weighed if w > 0),
        per_category={name: _weighted_fraction(group) for name, group in by_category.items()},
    )


def _finite(values: Iterable[float], what: str) -> list[float]:
    items = [float(v) for v in values]
    if not items:
        raise InputError(f"{what}: no values")
    if not all(math.isfinite(v) for v in items):
        raise InputError(f"{what}: values must be finite numbers")
    return items


def case_aggregate(scores: Sequence[float]) -> tuple[float, float]:
    """(mean, population variance) of one case's trial scores.

    Population variance (divide by n, not n - 1): the trials are the whole set being described,
    and a single trial then has variance 0 rather than an undefined value.
    """
    items = _finite(scores, "case scores")
    mean = sum(items) / len(items)
    return mean, sum((v - mean) ** 2 for v in items) / len(items)


def pass_rate(perfect_flags: Sequence[bool]) -> float:
    """Share of trials in which every weight-bearing assertion passed."""
    if not perfect_flags:
        raise InputError("pass rate: no trials")
    return sum(1 for flag in perfect_flags if flag) / len(perfect_flags)


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0 <= p <= 100) with linear interpolation between order statistics.

    The rank is h = (n - 1) * p / 100 over the sorted values and the result interpolates between
    the values at floor(h) and ceil(h); this is numpy's default ("linear", Hyndman-Fan type 7).
    """
    if not 0 <= p <= 100:
        raise InputError(f"percentile must be between 0 and 100, got {p!r}")
    ordered = sorted(_finite(values, "percentile"))
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


def is_unstable(pass_flags: Sequence[bool]) -> bool:
    """True when the same question both passed and failed across its repeats."""
    return len(set(bool(flag) for flag in pass_flags)) > 1


@dataclass(frozen=True)
class TrialFigures:
    """What a variant aggregate needs from one trial; None means not recorded or unknown."""

    score: float
    perfect: bool
    cost: float | None = None
    latency_ms: float | None = None


@dataclass(frozen=True)
class VariantAggregate:
    """Per-variant summary; cost and latency are None when no trial recorded them."""

    trials: int
    mean_score: float
    pass_rate: float
    total_cost: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None


def variant_aggregate(trials: Sequence[TrialFigures]) -> VariantAggregate:
    """Mean score, pass rate, total known cost and latency p50/p95 over one variant's trials."""
    if not trials:
        raise InputError("variant aggregate: no trials")
    mean, _ = case_aggregate([t.score for t in trials])
    costs = [t.cost for t in trials if t.cost is not None]
    latencies = [t.latency_ms for t in trials if t.latency_ms is not None]
    return VariantAggregate(
        trials=len(trials),
        mean_score=mean,
        pass_rate=pass_rate([t.perfect for t in trials]),
        total_cost=sum(costs) if costs else None,
        latency_p50_ms=percentile(latencies, 50) if latencies else None,
        latency_p95_ms=percentile(latencies, 95) if latencies else None,
    )
