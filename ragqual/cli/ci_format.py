"""`compare` and `report` for CI: JUnit XML, the pull-request comment (`--format github`) and the
failures-only views (`--failures-only`, and the failing trials `report --failures` lists)."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from ragqual.app.comparison import Comparison, MetricComparison
from ragqual.app.failures import failure_rows
from ragqual.app.history_reads import history_head
from ragqual.app.comparison import source_label as who
from ragqual.cli.compare_format import _detectable, flips_frame, metrics_frame
from ragqual.cli.compare_format import verdict_line as metric_verdict
from ragqual.cli.output import markdown_table
from ragqual.core.critical import critical_verdict
from ragqual.core.display import fmt_delta, fmt_rate
from ragqual.core.junit import JUnitCase, junit_xml
from ragqual.core.verdicts import EQUIVALENT, IMPROVEMENT, INCONCLUSIVE, REGRESSION
from ragqual.store.records import RunInfo
from ragqual.store.summaries import run_header

def verdict_line(comparison: Comparison) -> str:
    """The gate's verdict, led by the critical goldens that regressed."""
    return critical_verdict(comparison.critical, metric_verdict(comparison))


GITHUB_MARKER = "<!-- ragqual-compare -->"  # lets a workflow find and update its own comment


# -- JUnit ----------------------------------------------------------------------------------------

def _metric_case(row: MetricComparison, comparison: Comparison) -> JUnitCase:
    classname, name = f"ragqual.compare.{row.group}", row.metric
    figures = (f"{row.metric}: base {row.base_mean:.4g} -> new {row.new_mean:.4g} (delta {fmt_delta(row.delta)}, "
               f"{1 - comparison.options.alpha:.0%} CI [{row.ci_low:.4g}, {row.ci_high:.4g}]), {row.test} "
               f"p={row.p_value:.4g}, Holm p={row.p_adjusted:.4g}, n={row.n}, MDE "
               f"{'-' if row.mde is None else fmt_rate(row.mde)}")
    if row.regressed:
        why = (f"got worse by more than {comparison.options.tolerance} with Holm-adjusted p < "
               f"{comparison.options.alpha}" if comparison.options.gate == "stats"
               else f"moved the wrong way by more than the tolerance {comparison.options.tolerance}")
        return JUnitCase(classname, name, "failure", f"regression: {row.metric} {why}", figures, "Regression")
    if row.verdict == INCONCLUSIVE:
        return JUnitCase(classname, name, "skipped",
                         f"inconclusive (underpowered): this comparison can only see changes {_detectable(row)}; "
                         + figures)
    return JUnitCase(classname, name, detail=figures)


def comparison_junit(comparison: Comparison) -> str:
    """One test case per metric of the gate, one per critical golden that regressed."""
    cases = [_metric_case(r, comparison) for r in comparison.rows]
    cases += [JUnitCase(f"ragqual.compare.{c.group}", f"critical golden {c.golden_id}", "failure", c.text(),
                        "a golden marked \"critical\": true regressed; this fails the gate whatever the statistics",
                        "CriticalGoldenRegression") for c in comparison.critical]
    properties = {"base": who(comparison.base), "new": who(comparison.new), "gate": comparison.options.gate,
                  "verdict": verdict_line(comparison)}
    return junit_xml(f"ragqual compare {comparison.base.source} -> {comparison.new.source}", cases, properties)


# -- the pull-request comment ---------------------------------------------------------------------

def _bullets(comparison: Comparison) -> list[str]:
    by = {v: [r for r in comparison.rows if r.verdict == v] for v in (REGRESSION, IMPROVEMENT, EQUIVALENT,
                                                                      INCONCLUSIVE)}
    lines = [f"- **critical golden** `{c.golden_id}` regressed ({c.group}: {c.metric} "
             f"{c.base_value:.3g} -> {c.new_value:.3g})" for c in comparison.critical]
    gate = comparison.regressions if comparison.options.gate == "tolerance" else by[REGRESSION]
    lines += [f"- :x: regression: `{r.group}` {r.metric} {fmt_delta(r.delta)}" for r in gate]
    lines += [f"- :white_check_mark: improvement: `{r.group}` {r.metric} {fmt_delta(r.delta)}"
              for r in by[IMPROVEMENT]]
    lines += [f"- inconclusive: `{r.group}` {r.metric} {fmt_delta(r.delta)}, can only see changes {_detectable(r)}"
              for r in by[INCONCLUSIVE]]
    if by[EQUIVALENT]:
        lines.append(f"- equivalent within +-{comparison.options.tolerance}: {len(by[EQUIVALENT])} metric(s)")
    return lines


def github_comment(comparison: Comparison, stale: str | None, causes: dict[str, str] | None = None) -> str:
    """The verdict first, then the staleness warning, the flipped failures, the settings that
    differ, and the whole table folded in <details>."""
    passed = not comparison.gate_failed
    parts = [GITHUB_MARKER, f"### {'✅' if passed else '❌'} ragqual: {who(comparison.base)} → {who(comparison.new)}",
             "", f"**{verdict_line(comparison)}**", "", *_bullets(comparison)]
    if stale:
        parts += ["", "> [!WARNING]", f"> Stale baseline: {stale}"]
    flipped = [f for f in comparison.flips if f.direction == "pass->fail"]
    if flipped:
        parts += ["", f"#### Failures that flipped ({len(flipped)} pass → fail)", ""]
        parts += [f"- `{f.golden_id}` ({f.group})" + (f": {causes[f.question]}" if causes and f.question in causes
                                                      else "") for f in flipped]
    if comparison.differences:
        parts += ["", "#### Settings that differ (BASE → NEW)", "", *(f"- `{d}`" for d in comparison.differences)]
    opts = comparison.options
    parts += ["", f"<details><summary>All {len(comparison.rows)} metric(s): gate {opts.gate}, tolerance "
              f"{opts.tolerance}, alpha {opts.alpha} (Holm), power {opts.power}</summary>", "",
              markdown_table(metrics_frame(comparison.rows)) if comparison.rows else "(none)", ""]
    others = flips_frame(replace(comparison, flips=[f for f in comparison.flips if f.direction != "pass->fail"]))
    if not others.empty:
        parts += ["fail → pass:", "", markdown_table(others), ""]
    parts += [*(f"> {n}" for n in comparison.notes), "</details>"]
    return "\n".join(parts) + "\n"


# -- failures only --------------------------------------------------------------------------------

def failures_only_sections(comparison: Comparison, causes: dict[str, str] | None) -> list[tuple[str, pd.DataFrame]]:
    """Only what regressed: the gate's failing metrics, critical goldens, questions that flipped to fail."""
    sections = [("regressions", metrics_frame(comparison.regressions))]
    if comparison.critical:
        sections.append(("critical goldens that regressed", pd.DataFrame(
            [{"group": c.group, "golden": c.golden_id, "metric": c.metric, "base": c.base_value, "new": c.new_value}
             for c in comparison.critical])))
    flips = [{"group": f.group, "question": f.golden_id, "cause": (causes or {}).get(f.question, "-")}
             for f in comparison.flips if f.direction == "pass->fail"]
    sections.append(("pass -> fail", pd.DataFrame(flips, columns=["group", "question", "cause"])))
    return sections


def failures_document(engine: Engine, info: RunInfo) -> tuple[str, dict[str, Any], list[tuple[str, pd.DataFrame]]]:
    rows = failure_rows(engine, info.id)
    frame = pd.DataFrame([asdict(r) for r in rows],
                         columns=["variant", "mode", "case_id", "repeat", "cause", "failed_checks", "doc_recall",
                                  "fact_coverage", "answer"])
    header = {**run_header(info), **history_head(engine), "failing_trials": len(rows),
              "causes": {str(k): int(v) for k, v in frame["cause"].value_counts().items()}}
    header.pop("params", None)
    return f"Failures of run {info.id}", header, [("failures", frame)]
