"""`ragqual compare BASE NEW`: the regression gate. Parses flags and formats; the comparison
itself (pairing, tests, Holm, verdicts, flips) is `ragqual.app.comparison`.

Output: the metrics table (one row per metric x group), the exploratory per-tag table with
`--by-tag`, the questions that flipped pass <-> fail, and the unstable questions. Exit 1 only when
the chosen gate finds a regression: `--gate stats` (the default) on a `regression` verdict,
`--gate tolerance` when a metric moved the wrong way by more than the tolerance.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, fields, replace
from functools import partial
from typing import Any

import click
import pandas as pd

from ragqual.app.comparison import (
    CLUSTERINGS,
    DEFAULT_POWER,
    DEFAULT_RESAMPLES,
    DEFAULT_TOLERANCE,
    GATES,
    Comparison,
    MetricComparison,
    Options,
    check_comparable,
    compare,
    is_baseline_file,
    load_case_infos,
    load_side,
    metric_rng,
    pair_single_groups,
    parse_side,
)
from ragqual.app.gates import incomplete_sources
from ragqual.cli.context import AppContext
from ragqual.cli.output import (
    DIGITS,
    check_output,
    emit_document,
    emit_page,
    format_option,
    markdown_table,
    output_format,
    output_option,
)
from ragqual.core.scoring import SCORER_NAME
from ragqual.core.verdicts import DEFAULT_ALPHA, EQUIVALENT, IMPROVEMENT, INCONCLUSIVE, REGRESSION
from ragqual.errors import GateFailed
from ragqual.store.summaries import Summary

__all__ = ["check_comparable", "comparison_json", "compare_cmd", "metric_rng", "verdict_line"]

# The JSON object of a metric row, in this order (the contract first).
ROW_FIELDS = ("metric", "group", "n", "base_mean", "new_mean", "delta", "ci_low", "ci_high", "test", "p_value",
              "p_adjusted", "mde", "verdict", "b", "c", "better", "wins", "ties", "losses", "unstable_excluded",
              "clusters", "regressed")
TABLE_COLUMNS = ("group", "metric", "n", "base_mean", "new_mean", "delta", "ci_low", "ci_high", "test", "p_value",
                 "p_adjusted", "mde", "verdict", "b", "c")


def row_object(row: MetricComparison) -> dict[str, Any]:
    data = asdict(row)
    out = {name: data[name] for name in ROW_FIELDS}
    if row.tag is not None:
        out = {"tag": row.tag} | out
    return out


def _side(summary: Summary) -> dict[str, Any]:
    return {"source": summary.source, "run_id": summary.run_id, "kind": summary.kind, "tier": summary.tier,
            "corpus_fingerprint": summary.corpus_fingerprint, "git_sha": summary.header.get("git_sha")}


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    opts = comparison.options
    header = {
        "base": _side(comparison.base), "new": _side(comparison.new), "gate": opts.gate,
        "tolerance": opts.tolerance, "alpha": opts.alpha, "power": opts.power, "seed": opts.seed,
        "resamples": opts.resamples, "cluster": opts.cluster, "unstable_excluded": comparison.unstable_by_group(),
        "regressions": [f"{r.group} {r.metric}" for r in comparison.regressions],
        "passed": not comparison.regressions, "verdict": verdict_line(comparison),
    }
    return {
        "header": header, "metrics": [row_object(r) for r in comparison.rows],
        "tags": [row_object(r) for r in comparison.tag_rows], "flips": [asdict(f) for f in comparison.flips],
        "unstable": [asdict(u) for u in comparison.unstable], "notes": comparison.notes,
    }


# -- the verdict line ------------------------------------------------------------------------------

def _names(rows: list[MetricComparison]) -> str:
    return ", ".join(f"{r.group} {r.metric} ({r.delta:+.4f})" for r in rows)


def verdict_line(comparison: Comparison) -> str:
    opts, rows = comparison.options, comparison.rows
    if opts.gate == "tolerance":
        if comparison.regressions:
            return (f"FAIL (tolerance gate): {len(comparison.regressions)} metric(s) regressed beyond the "
                    f"tolerance {opts.tolerance}: {_names(comparison.regressions)}")
        return f"OK (tolerance gate): no metric regressed beyond the tolerance {opts.tolerance}"
    by = {v: [r for r in rows if r.verdict == v] for v in (REGRESSION, IMPROVEMENT, EQUIVALENT, INCONCLUSIVE)}
    if by[REGRESSION]:
        return (f"REGRESSION: {len(by[REGRESSION])} metric(s) got worse by more than {opts.tolerance} with "
                f"Holm-adjusted p < {opts.alpha}: {_names(by[REGRESSION])}")
    if by[IMPROVEMENT]:
        return f"IMPROVEMENT, no regression: {_names(by[IMPROVEMENT])}"
    if rows and len(by[EQUIVALENT]) == len(rows):
        return f"EQUIVALENT: every metric's interval lies within +-{opts.tolerance}"
    if not rows:
        return "NOTHING COMPARED"
    shown = by[INCONCLUSIVE][:3]
    sizes = ", ".join(_detectable(r) for r in shown)
    more = f" and {len(by[INCONCLUSIVE]) - len(shown)} more" if len(by[INCONCLUSIVE]) > len(shown) else ""
    return (f"INCONCLUSIVE, no regression shown: {len(by[INCONCLUSIVE])} metric(s) can neither be called changed "
            f"nor equivalent within +-{opts.tolerance}; this comparison can only see changes {sizes}{more}")


def _detectable(row: MetricComparison) -> str:
    if row.mde is None:
        return f"of unknown size ({row.metric}, n={row.n}: no MDE, the paired differences have no spread)"
    return f">= {row.mde:.2f} ({row.metric}, n={row.n})"


# -- tables ----------------------------------------------------------------------------------------

def metrics_frame(rows: list[MetricComparison], with_tag: bool = False) -> pd.DataFrame:
    columns = (("tag",) if with_tag else ()) + TABLE_COLUMNS
    frame = pd.DataFrame([asdict(r) for r in rows], columns=[f.name for f in fields(MetricComparison)])
    frame = frame[list(columns) + ["regressed"]]
    frame = frame.assign(gate=frame.pop("regressed").map(lambda r: "FAIL" if r else "ok"))
    for column in ("b", "c"):
        frame[column] = frame[column].map(lambda v: "" if v is None or pd.isna(v) else str(int(v)))
    if frame["mde"].isna().any():  # no MDE (no spread in the paired differences) reads `-`
        frame["mde"] = frame["mde"].map(lambda v: "-" if v is None or pd.isna(v) else f"{v:.{DIGITS}f}")
    return frame


def flips_frame(comparison: Comparison) -> pd.DataFrame:
    rows = [{"group": f.group, "flip": f.direction, "question": f.golden_id, "tags": ",".join(f.tags)}
            for f in comparison.flips]
    return pd.DataFrame(rows, columns=["group", "flip", "question", "tags"])


def flips_by_tag_frame(comparison: Comparison) -> pd.DataFrame:
    counts: Counter[tuple[str, str, str]] = Counter()
    for f in comparison.flips:
        for tag in f.tags or ("(no tag)",):
            counts[(f.group, tag, f.direction)] += 1
    keys = sorted({(g, t) for g, t, _ in counts})
    rows = [{"group": g, "tag": t, "pass->fail": counts[(g, t, "pass->fail")],
             "fail->pass": counts[(g, t, "fail->pass")]} for g, t in keys]
    return pd.DataFrame(rows, columns=["group", "tag", "pass->fail", "fail->pass"])


def unstable_frame(comparison: Comparison) -> pd.DataFrame:
    rows = [{"group": u.group, "question": u.golden_id, "unstable in": u.sides} for u in comparison.unstable]
    return pd.DataFrame(rows, columns=["group", "question", "unstable in"])


def _text_header(comparison: Comparison) -> dict[str, Any]:
    def side(summary: Summary) -> str:
        return f"{summary.source} (git {summary.header.get('git_sha') or '-'}, tier {summary.tier})"

    opts = comparison.options
    counts = {label: len(ids) for label, ids in comparison.unstable_by_group().items()}
    return {"base": side(comparison.base), "new": side(comparison.new),
            "corpus": comparison.base.corpus_fingerprint or "-", "gate": opts.gate, "tolerance": opts.tolerance,
            "alpha": opts.alpha, "power": opts.power, "seed": opts.seed, "resamples": opts.resamples,
            "cluster": opts.cluster or "none",
            "unstable_excluded": ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none"}


def _sections(comparison: Comparison) -> list[tuple[str, pd.DataFrame]]:
    sections = [("metrics", metrics_frame(comparison.rows))]
    if comparison.options.by_tag:
        sections.append(("by tag (exploratory, Benjamini-Hochberg; decides nothing)",
                         metrics_frame(comparison.tag_rows, with_tag=True)))
    sections += [("flips", flips_frame(comparison)), ("flips by tag", flips_by_tag_frame(comparison)),
                 ("unstable", unstable_frame(comparison))]
    return sections


def markdown_comment(comparison: Comparison) -> str:
    """A pull-request comment: the verdict line, the metrics table, the flips."""
    title = f"ragqual compare: {comparison.base.source} -> {comparison.new.source}"
    parts = [f"### {title}", "", f"**{verdict_line(comparison)}**", ""]
    opts = comparison.options
    parts.append(f"gate `{opts.gate}`, tolerance {opts.tolerance}, alpha {opts.alpha} (Holm over "
                 f"{len(comparison.rows)} tests), power {opts.power}, seed {opts.seed}, {opts.resamples} resamples"
                 + (f", clustered by {opts.cluster}" if opts.cluster else ""))
    for name, frame in _sections(comparison):
        parts += ["", f"#### {name}", "", markdown_table(frame) if not frame.empty else "(none)"]
    parts += ["", *(f"> {n}" for n in comparison.notes)] if comparison.notes else []
    return "\n".join(parts)


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
                   "the headline metrics of a strategy group (recall@1/5, hit@5, mrr, ndcg@10, map@10, "
                   "precision@5, contextRecall, nonEmptyRefusal).")
@click.option("--all-metrics", "every_metric", is_flag=True,
              help="Compare every metric both sides hold (sizes excepted).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and randomization tests.")
@click.option("--resamples", type=click.IntRange(min=1), default=DEFAULT_RESAMPLES, show_default=True,
              help="Bootstrap resamples and random sign flips per test.")
@click.option("--scorer", "scorer_name", default=SCORER_NAME, show_default=True,
              help="Scorer behind `score` and `pass` of a run.")
@click.option("--scorer-version", type=int, help="Scorer version for runs (default: each trial's newest).")
@click.option("--allow-incomplete", is_flag=True, help="Compare a run whose last event is not `finished` "
              "(every row then names it).")
@format_option(html=True)
@output_option()
@click.pass_obj
def compare_cmd(app: AppContext, base: str, new: str, gate: str, tolerance: float, alpha: float, power: float,
                cluster: str | None, by_tag: bool, metrics: tuple[str, ...], every_metric: bool, seed: int,
                resamples: int, scorer_name: str, scorer_version: int | None, allow_incomplete: bool,
                fmt: str, output: str | None) -> None:
    """Compare NEW with BASE (run ids or baseline files); exit 1 on a regression."""
    check_output(fmt, output)
    read_store = partial(app.store, auto_create=False)
    base_summary = load_side(base, read_store, scorer_name, scorer_version, allow_incomplete)
    new_summary = load_side(new, read_store, scorer_name, scorer_version, allow_incomplete)
    options = Options(gate, tolerance, alpha, power, metrics, every_metric, seed, resamples, cluster, by_tag)
    if parse_side(base).group and parse_side(new).group:
        base_summary, new_summary = pair_single_groups(base_summary, new_summary)
    from_history = not (is_baseline_file(base) and is_baseline_file(new))
    cases = load_case_infos(base_summary, new_summary, read_store, from_history)
    comparison = compare(base_summary, new_summary, options, cases)
    _emit(comparison, output_format(fmt, app.as_json), incomplete_sources(base_summary, new_summary), output)
    if comparison.regressions:
        raise GateFailed(verdict_line(comparison))


def mark_incomplete(comparison: Comparison, label: str) -> Comparison:
    """With --allow-incomplete, every metric row names the unfinished run(s) it was computed from."""
    if not label:
        return comparison
    return replace(
        comparison,
        rows=[replace(r, group=f"{r.group} [{label}]") for r in comparison.rows],
        tag_rows=[replace(r, group=f"{r.group} [{label}]") for r in comparison.tag_rows],
        notes=[*comparison.notes, f"{label}: compared with --allow-incomplete"],
    )


def _emit(comparison: Comparison, fmt: str, incomplete: str = "", output: str | None = None) -> None:
    comparison = mark_incomplete(comparison, incomplete)
    if fmt == "html":
        from ragqual.reports.compare import compare_page

        emit_page(compare_page(comparison, verdict_line(comparison), _sections(comparison),
                               _text_header(comparison)), output)
    elif fmt == "json":
        click.echo(json.dumps(comparison_json(comparison), indent=2))
    elif fmt == "markdown":
        click.echo(markdown_comment(comparison))
    else:
        title = f"compare: BASE {comparison.base.source} -> NEW {comparison.new.source}"
        notes = comparison.notes + ([] if fmt == "csv" else [verdict_line(comparison)])
        emit_document(title, _text_header(comparison), _sections(comparison), fmt, notes)
