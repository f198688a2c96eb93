"""A run's per-variant summary (`ragqual run`, `ragqual rescore`): as a table, and as JSON."""

from __future__ import annotations

from typing import Any

import click
import pandas as pd

from ragqual.cli.output import emit_frame
from ragqual.engine.aggregate import RunSummary


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def summary_frame(summary: RunSummary) -> pd.DataFrame:
    rows = []
    for v in summary.variants:
        a = v.aggregate
        rows.append({
            "variant": v.variant, "trials": a.trials, "mean_score": f"{a.mean_score:.3f}",
            "pass_pct": f"{100 * a.pass_rate:.1f}", "p50_ms": _fmt(a.latency_p50_ms, "{:.1f}"),
            "p95_ms": _fmt(a.latency_p95_ms, "{:.1f}"), "cost": _fmt(a.total_cost, "{:.4f}"),
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
             "latency_p95_ms": v.aggregate.latency_p95_ms, "cost": v.aggregate.total_cost,
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
