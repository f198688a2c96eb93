"""A run's per-variant summary (`ragqual run`, `ragqual rescore`): as a table, and as JSON."""

from __future__ import annotations

from typing import Any

import click
import pandas as pd

from ragqual.cli.output import emit_frame
from ragqual.core.display import MISSING, fmt_ms, fmt_rate, fmt_value
from ragqual.core.pricing import VariantCost
from ragqual.engine.aggregate import RunSummary


def cost_cells(cost: VariantCost | None) -> dict[str, str]:
    """A variant's cost, cost per passing answer and currency as a person reads them (`-`: unpriced)."""
    if cost is None:
        return {"cost": MISSING, "cost_per_pass": MISSING, "currency": MISSING}
    return {"cost": fmt_value(cost.total, "cost"), "cost_per_pass": fmt_value(cost.per_pass, "cost"),
            "currency": cost.currency or MISSING}


def cost_values(cost: VariantCost | None) -> dict[str, Any]:
    """The same, raw, for JSON."""
    if cost is None:
        return {"cost": None, "cost_per_pass": None, "currency": None}
    return {"cost": cost.total, "cost_per_pass": cost.per_pass, "currency": cost.currency}


def summary_frame(summary: RunSummary) -> pd.DataFrame:
    """One row per variant, each cell in its quantity's unit (`ragqual.core.display`)."""
    rows = []
    for v in summary.variants:
        a = v.aggregate
        rows.append({
            "variant": v.variant, "trials": a.trials, "mean_score": fmt_rate(a.mean_score),
            "pass_rate": fmt_rate(a.pass_rate), "p50_ms": fmt_ms(a.latency_p50_ms),
            "p95_ms": fmt_ms(a.latency_p95_ms), **cost_cells(v.cost),
            "cache_hits": v.cache_hits, "errors": v.errors,
        })
    return pd.DataFrame(rows)


def summary_dict(summary: RunSummary) -> dict[str, Any]:
    return {
        "run_id": summary.run_id,
        "scorer": {"name": summary.scorer_name, "version": summary.scorer_version},
        "variants": [
            {"variant": v.variant, "trials": v.aggregate.trials, "mean_score": v.aggregate.mean_score,
             "pass_rate": v.aggregate.pass_rate, "latency_p50_ms": v.aggregate.latency_p50_ms,
             "latency_p95_ms": v.aggregate.latency_p95_ms, **cost_values(v.cost),
             "cache_hits": v.cache_hits, "errors": v.errors}
            for v in summary.variants
        ],
        "unstable": [{"variant": c.variant, "slug": c.slug, "mode": c.mode} for c in summary.unstable],
    }


def print_summary(summary: RunSummary) -> None:
    if summary.variants:
        emit_frame(summary_frame(summary), "table")
    if summary.unstable:
        click.echo("unstable (pass/fail flips across repeats): " + ", ".join(
            f"{c.slug}{'/' + c.mode if c.mode else ''} [{c.variant}]" for c in summary.unstable))
