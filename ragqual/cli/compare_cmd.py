"""`ragqual compare BASE NEW`: the regression gate. Parses flags and formats; the comparison
itself (pairing, tests, Holm, verdicts, flips) is `ragqual.app.comparison`.

Output: the metrics table (one row per metric x group), the exploratory per-tag table with
`--by-tag`, the questions that flipped pass <-> fail, and the unstable questions. Exit 1 only when
the chosen gate finds a regression: `--gate stats` (the default) on a `regression` verdict,
`--gate tolerance` when a metric moved the wrong way by more than the tolerance, and with either
gate when a golden marked `"critical": true` regressed (`ragqual.core.critical`). For CI:
`--format junit` / `--format github` (`-o FILE`) and `--failures-only` (`ragqual.cli.ci_format`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import click
import pandas as pd

from pathlib import Path

from ragqual.app.ci_checks import baseline_staleness, failure_causes
from ragqual.app.comparison import (
    CLUSTERINGS,
    DEFAULT_POWER,
    DEFAULT_RESAMPLES,
    DEFAULT_TOLERANCE,
    GATES,
    Comparison,
    Options,
    compare_sources,
)
from ragqual.app.comparison import source_label as who
from ragqual.app.context import AppContext
from ragqual.app.pricing import compare_costs, snapshot_ref, summary_variant_costs
from ragqual.cli.ci_format import comparison_junit, failures_only_sections, github_comment
from ragqual.cli.compare_format import emit_comparison, verdict_line
from ragqual.cli.output import (check_output, emit_document, emit_page, format_option, output_format, output_option,
                                pricing_snapshot_option, warn_unsealed)
from ragqual.core.critical import critical_verdict
from ragqual.core.staleness import DEFAULT_STALE_AFTER, StaleAfter, parse_stale_after
from ragqual.core.metric_names import gated_names
from ragqual.core.scoring import SCORER_NAME
from ragqual.core.verdicts import DEFAULT_ALPHA
from ragqual.errors import GateFailed, InputError


def with_costs(app: AppContext, comparison: Comparison, scorer_name: str, scorer_version: int | None,
               pricing_snapshot: str | None) -> Comparison:
    """The comparison with both runs' cost per variant (when both sides are runs of the history),
    from the trials each side's summary already read (a run read again cost ~0.2 s at 5k trials)."""
    sides = [s for s in (comparison.base, comparison.new) if s.run_id is not None and s.source.startswith("run ")]
    if len(sides) != 2:
        return comparison
    engine = app.history()
    snap = snapshot_ref(engine, pricing_snapshot)
    base, new = (summary_variant_costs(engine, s, scorer_name, scorer_version, snap) for s in sides)
    return replace(comparison, costs=compare_costs(base, new))


@click.command("compare", epilog="BASE and NEW take `RUN_ID`, `RUN_ID:GROUP`, `FILE` or `FILE:GROUP`; when both "
               "name a group, those two groups are compared with each other (e.g. 12:dense 12:hybrid).")
@click.argument("base")
@click.argument("new")
@click.option("--gate", type=click.Choice(GATES), default="stats", show_default=True,
              help="stats: exit 1 on a `regression` verdict (worse by more than the tolerance, Holm-adjusted "
                   "p < alpha). tolerance: exit 1 when a mean moves the wrong way by more than the tolerance.")
@click.option("--tolerance", type=float, default=DEFAULT_TOLERANCE, show_default=True,
              help="Smallest change that matters (absolute, in the metric's units).")
@click.option("--alpha", type=float, default=DEFAULT_ALPHA, show_default=True,
              help="Significance level of the gate family (Holm) and the intervals' 1 - alpha.")
@click.option("--power", type=float, default=DEFAULT_POWER, show_default=True,
              help="Power of the minimum detectable effect.")
@click.option("--cluster", type=click.Choice(CLUSTERINGS),
              help="doc: questions sharing a relevant document are resampled and sign-flipped together.")
@click.option("--by-tag", is_flag=True, help="Add the exploratory per-tag table (Benjamini-Hochberg).")
@click.option("--metric", "metrics", multiple=True, metavar="M",
              help="Compare only this metric (repeatable). Default: every metric of a variant/mode group and "
                   f"the headline metrics of a strategy group ({', '.join(gated_names())}).")
@click.option("--all-metrics", "every_metric", is_flag=True,
              help="Compare every metric both sides hold (sizes excepted).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the randomization tests (and so of their intervals).")
@click.option("--resamples", type=click.IntRange(min=1), default=DEFAULT_RESAMPLES, show_default=True,
              help="Random sign flips per randomization test (its interval uses the same ones).")
@click.option("--scorer", "scorer_name", default=SCORER_NAME, show_default=True,
              help="Scorer behind `score` and `pass` of a run.")
@click.option("--scorer-version", type=int, help="Scorer version for runs (default: each trial's newest).")
@click.option("--allow-incomplete", is_flag=True, help="Compare a run whose last event is not `finished` "
              "(every row then names it).")
@click.option("--across-configs", is_flag=True,
              help="Pair two runs of the same goldens although corpus, chunking, embedder or strategy differ, "
                   "and print what differs (baseline files keep the fingerprint rule).")
@click.option("--judge", "with_judge", is_flag=True,
              help="Add the judge section: per judged criterion, NEW - BASE as a PPI++ paired interval from the "
                   "human labels and the judge's scores (runs only; never part of the default gate).")
@click.option("--gate-judge", is_flag=True,
              help="Also fail (exit 1) when a judged criterion's PPI++ interval for NEW - BASE lies wholly below 0.")
@format_option(html=True, extra=("junit", "github"))
@output_option()
@click.option("--stale-after", default=DEFAULT_STALE_AFTER, show_default=True, metavar="N|Nd",
              help="--format github: warn when the baseline's git commit is more than N commits (or N days, "
                   "`14d`) behind HEAD; it always warns when that commit is not an ancestor of HEAD.")
@click.option("--failures-only", is_flag=True,
              help="Show only what regressed: failing metrics, critical goldens, questions that flipped to fail "
                   "(with their measured cause when NEW is a run).")
@pricing_snapshot_option
@click.pass_obj
def compare_cmd(app: AppContext, base: str, new: str, gate: str, tolerance: float, alpha: float, power: float,
                cluster: str | None, by_tag: bool, metrics: tuple[str, ...], every_metric: bool, seed: int,
                resamples: int, scorer_name: str, scorer_version: int | None, allow_incomplete: bool,
                across_configs: bool, with_judge: bool, gate_judge: bool, fmt: str, output: str | None,
                stale_after: str, failures_only: bool, pricing_snapshot: str | None) -> None:
    """Compare NEW with BASE (run ids or baseline files); exit 1 on a regression."""
    check_output(fmt, output)
    limit = parse_stale_after(stale_after)
    options = Options(gate, tolerance, alpha, power, metrics, every_metric, seed, resamples, cluster, by_tag,
                      across_configs)
    comparison = compare_sources(app, base, new, options, scorer_name, scorer_version, allow_incomplete)
    comparison = with_costs(app, comparison, scorer_name, scorer_version, pricing_snapshot)
    warn_unsealed({int(s.run_id): s.header["unsealed_rows"] for s in (comparison.base, comparison.new)
                   if s.run_id is not None and s.header.get("unsealed_rows") and s.source.startswith("run ")})
    fmt = output_format(fmt, app.as_json)
    differences = None
    if with_judge or gate_judge:
        from ragqual.app.judge_audit import judge_differences

        if not (base.isdigit() and new.isdigit()):
            raise InputError("--judge and --gate-judge compare two runs by id: the judge's verdicts live in the history")
        differences = judge_differences(app, int(base), int(new), alpha)
    if fmt in ("junit", "github") or (failures_only and fmt != "html"):  # a page always shows everything
        emit_ci(app, comparison, fmt, output, limit, failures_only)
    elif differences is not None and fmt == "json":
        from ragqual.cli.compare_format import comparison_json

        click.echo(json.dumps({**comparison_json(comparison), "judge": [{**d.__dict__, "regression": d.regression}
                                                                       for d in differences]}, indent=2))
    else:
        if differences is not None:
            comparison = replace(comparison, judge=judge_frame(differences))
        emit_comparison(comparison, fmt, output)
    if comparison.gate_failed:
        raise GateFailed(critical_verdict(comparison.critical, verdict_line(comparison)))
    if gate_judge and differences is not None and any(d.regression for d in differences):
        worse = ", ".join(d.criterion for d in differences if d.regression)
        raise GateFailed(f"judge gate: NEW is worse than BASE on {worse} (PPI++ interval below 0)")


def _causes(app: AppContext, comparison: Comparison) -> dict[str, str]:
    run_id = comparison.new.run_id
    if run_id is None or not any(f.direction == "pass->fail" for f in comparison.flips):
        return {}
    return failure_causes(app.history(), int(run_id))


def emit_ci(app: AppContext, comparison: Comparison, fmt: str, output: str | None, limit: StaleAfter,
            failures_only: bool) -> None:
    """JUnit, the pull-request comment, or only what regressed."""
    if fmt == "junit":
        text = comparison_junit(comparison)
    elif fmt == "github":
        stale = baseline_staleness(comparison.base, limit, Path.cwd())
        text = github_comment(comparison, stale, _causes(app, comparison))
    else:
        title = f"compare (failures only): BASE {who(comparison.base)} -> NEW {who(comparison.new)}"
        sections = failures_only_sections(comparison, _causes(app, comparison))
        notes = [*comparison.notes, critical_verdict(comparison.critical, verdict_line(comparison))]
        emit_document(title, {"gate": comparison.options.gate, "regressions": len(comparison.regressions),
                              "critical": len(comparison.critical)}, sections, fmt, notes)
        return
    if output is None:
        click.echo(text, nl=False)
    else:
        emit_page(text, output)



def judge_frame(differences: list[Any]) -> pd.DataFrame:
    """One row per judged criterion: pairs, labelled pairs, the judge-only difference and the PPI++
    paired difference with its interval (`-` where it cannot be computed, with the note why)."""
    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:+.3f}"

    return pd.DataFrame([{"criterion": d.criterion, "pairs": d.pairs, "labelled": d.labelled,
                          "judge only": num(d.judge_only),
                          "PPI++ difference [95% CI]": "-" if d.estimate is None else
                          f"{num(d.estimate)} [{num(d.low)}, {num(d.high)}]", "note": d.note or ""}
                         for d in differences])
