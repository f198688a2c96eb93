"""Aggregates of a stored run: per case (mean, variance, stability) and per variant.

The numbers come from the stored rows, so a report of an old run, or of a rescoring, uses
exactly what the history holds. By default each trial contributes its newest score of the
weighted-assertions scorer; any scorer name and version can be asked for instead. The formulas
live in `ragqual.core.scoring`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from ragqual.core import scoring
from ragqual.core.pricing import TrialCost, VariantCost, variant_costs
from ragqual.core.scoring import TrialFigures, VariantAggregate
from ragqual.store.trial_reads import TrialFigureRow, run_figures


@dataclass(frozen=True)
class CaseSummary:
    variant: str
    case_id: str
    slug: str
    mode: str
    trials: int
    mean: float
    variance: float
    unstable: bool  # passed in some repeats and failed in others


@dataclass(frozen=True)
class VariantSummary:
    variant: str
    aggregate: VariantAggregate
    cache_hits: int
    errors: int
    cost: VariantCost | None = None  # cost per variant and per passing answer, with its currency


@dataclass(frozen=True)
class RunSummary:
    run_id: int
    scorer_name: str
    scorer_version: int | None  # the version asked for; None = newest per trial
    variants: tuple[VariantSummary, ...]
    cases: tuple[CaseSummary, ...]
    unscored: int  # trials without a score row for this scorer

    @property
    def unstable(self) -> list[CaseSummary]:
        return [c for c in self.cases if c.unstable]


def _scored(rows: Sequence[TrialFigureRow]) -> list[TrialFigureRow]:
    return [r for r in rows if r.score is not None]


def case_summaries(rows: Sequence[TrialFigureRow]) -> list[CaseSummary]:
    groups: dict[tuple[str, str, str], list[TrialFigureRow]] = {}
    for row in _scored(rows):
        groups.setdefault((row.variant, row.case_id, row.mode), []).append(row)
    out = []
    for (variant, case_id, mode), items in groups.items():
        mean, variance = scoring.case_aggregate([r.score for r in items])  # type: ignore[misc]
        out.append(CaseSummary(variant, case_id, items[0].slug, mode, len(items), mean, variance,
                               scoring.is_unstable([bool(r.perfect) for r in items])))
    return out


def variant_summaries(rows: Sequence[TrialFigureRow]) -> list[VariantSummary]:
    groups: dict[str, list[TrialFigureRow]] = {}
    for row in rows:
        groups.setdefault(row.variant, []).append(row)
    out = []
    for variant, items in groups.items():
        scored = _scored(items)
        if not scored:
            continue
        figures = [TrialFigures(r.score, bool(r.perfect), r.cost, r.latency_ms) for r in scored]  # type: ignore[arg-type]
        costs = variant_costs(TrialCost(variant, bool(r.perfect), r.cost, r.currency) for r in scored)
        out.append(VariantSummary(
            variant, scoring.variant_aggregate(figures),
            cache_hits=sum(1 for r in items if r.cache_hit),
            errors=sum(1 for r in items if r.error is not None),
            cost=costs[0],
        ))
    return out


def summarise_run(
    engine: Engine, run_id: int, scorer_name: str = scoring.SCORER_NAME, scorer_version: int | None = None,
    pricing_snapshot: int | None = None,
) -> RunSummary:
    rows = run_figures(engine, run_id, scorer_name, scorer_version, pricing_snapshot)
    return RunSummary(
        run_id=run_id, scorer_name=scorer_name, scorer_version=scorer_version,
        variants=tuple(variant_summaries(rows)), cases=tuple(case_summaries(rows)),
        unscored=sum(1 for r in rows if r.score is None),
    )
