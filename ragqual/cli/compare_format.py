"""How `ragqual compare` shows a comparison: text / CSV / Markdown tables, the JSON objects, a PR
comment, an HTML page (CI formats: `ragqual.cli.ci_format`)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, fields
from typing import Any

import click
import pandas as pd

from ragqual.app.comparison import Comparison, MetricComparison, source_label as who
from ragqual.cli.output import emit_document, emit_page, markdown_table
from ragqual.core.critical import critical_verdict
from ragqual.core.display import fmt_delta, fmt_rate, fmt_value
from ragqual.core.stats import too_few_to_detect
from ragqual.core.verdicts import EQUIVALENT, IMPROVEMENT, INCONCLUSIVE, REGRESSION
from ragqual.store.sealed_rows import unsealed_warning
from ragqual.store.summaries import Summary

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
    return {"source": summary.source, "run_id": summary.run_id, "name": summary.header.get("name"),
            "tags": summary.header.get("tags") or {}, "kind": summary.kind, "tier": summary.tier,
            "corpus_fingerprint": summary.corpus_fingerprint, "git_sha": summary.header.get("git_sha"),
            "unsealed_rows": summary.header.get("unsealed_rows") or {}}


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    opts, critical = comparison.options, comparison.critical
    header = {
        "base": _side(comparison.base), "new": _side(comparison.new), "gate": opts.gate,
        "tolerance": opts.tolerance, "alpha": opts.alpha, "power": opts.power, "seed": opts.seed,
        "resamples": opts.resamples, "cluster": opts.cluster, "unstable_excluded": comparison.unstable_by_group(),
        "regressions": [f"{r.group} {r.metric}" for r in comparison.regressions], "passed": not comparison.gate_failed,
        "verdict": critical_verdict(critical, verdict_line(comparison)), **comparison.history,
        "critical_regressions": [asdict(c) for c in critical],
    }
    return {
        "header": header, "metrics": [row_object(r) for r in comparison.rows],
        "tags": [row_object(r) for r in comparison.tag_rows], "flips": [asdict(f) for f in comparison.flips],
        "unstable": [asdict(u) for u in comparison.unstable], "notes": comparison.notes,
        "differences": comparison.differences, "costs": comparison.cost_records(),
    }


# -- the verdict line ------------------------------------------------------------------------------

def _names(rows: list[MetricComparison]) -> str:
    return ", ".join(f"{r.group} {r.metric} ({fmt_delta(r.delta)})" for r in rows)


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
        units = row.clusters or row.n
        why = ("too few questions or clusters for any change to be significant" if too_few_to_detect(units)
               else "the paired differences have no spread")
        return f"of unknown size ({row.metric}, n={row.n}: no MDE, {why})"
    return f">= {fmt_rate(row.mde)} ({row.metric}, n={row.n})"


# -- tables ----------------------------------------------------------------------------------------

def metrics_frame(rows: list[MetricComparison], with_tag: bool = False) -> pd.DataFrame:
    columns = (("tag",) if with_tag else ()) + TABLE_COLUMNS
    frame = pd.DataFrame([asdict(r) for r in rows], columns=[f.name for f in fields(MetricComparison)])
    frame = frame[list(columns) + ["regressed"]]
    frame = frame.assign(gate=frame.pop("regressed").map(lambda r: "FAIL" if r else "ok"))
    for column in ("b", "c"):
        frame[column] = frame[column].map(lambda v: fmt_value(v, "n"))
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
        return f"{who(summary)} (git {summary.header.get('git_sha') or '-'}, tier {summary.tier})"

    opts = comparison.options
    counts = {label: len(ids) for label, ids in comparison.unstable_by_group().items()}
    return {"base": side(comparison.base), "new": side(comparison.new),
            "corpus": comparison.base.corpus_fingerprint or "-", "gate": opts.gate, "tolerance": opts.tolerance,
            "alpha": opts.alpha, "power": opts.power, "seed": opts.seed, "resamples": opts.resamples,
            "cluster": opts.cluster or "none",
            "unstable_excluded": ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none", **comparison.history,
            **_unsealed_lines(comparison)}


def _unsealed_lines(comparison: Comparison) -> dict[str, str]:
    """A header line per side whose run holds rows no seal covers (left out of the comparison)."""
    out = {}
    for name, summary in (("base", comparison.base), ("new", comparison.new)):
        counts = summary.header.get("unsealed_rows")
        if counts and summary.run_id is not None:
            out[f"unsealed_{name}"] = unsealed_warning(int(summary.run_id), counts)
    return out


def _sections(comparison: Comparison) -> list[tuple[str, pd.DataFrame]]:
    sections = [("metrics", metrics_frame(comparison.rows))]
    if comparison.differences:
        sections.append(("settings that differ (BASE -> NEW)", pd.DataFrame({"setting": comparison.differences})))
    if comparison.options.by_tag:
        sections.append(("by tag (exploratory, Benjamini-Hochberg; decides nothing)",
                         metrics_frame(comparison.tag_rows, with_tag=True)))
    sections += [("flips", flips_frame(comparison)), ("flips by tag", flips_by_tag_frame(comparison)),
                 ("unstable", unstable_frame(comparison))]
    return sections + comparison.extra_sections()


def markdown_comment(comparison: Comparison) -> str:
    """A pull-request comment: the verdict line, the metrics table, the flips."""
    title = f"ragqual compare: {who(comparison.base)} -> {who(comparison.new)}"
    parts = [f"### {title}", "", f"**{verdict_line(comparison)}**", ""]
    opts = comparison.options
    parts.append(f"gate `{opts.gate}`, tolerance {opts.tolerance}, alpha {opts.alpha} (Holm over "
                 f"{len(comparison.rows)} tests), power {opts.power}, seed {opts.seed}, {opts.resamples} resamples"
                 + (f", clustered by {opts.cluster}" if opts.cluster else ""))
    parts += [f"{key}: {value}" for key, value in comparison.history.items()]
    for name, frame in _sections(comparison):
        parts += ["", f"#### {name}", "", markdown_table(frame) if not frame.empty else "(none)"]
    parts += ["", *(f"> {n}" for n in comparison.notes)] if comparison.notes else []
    return "\n".join(parts)


def emit_comparison(comparison: Comparison, fmt: str, output: str | None = None) -> None:
    if fmt == "html":
        from ragqual.reports.compare import compare_page
        emit_page(compare_page(comparison, verdict_line(comparison), _sections(comparison),
                               _text_header(comparison)), output)
    elif fmt == "json":
        click.echo(json.dumps(comparison_json(comparison), indent=2))
    elif fmt == "markdown":
        click.echo(markdown_comment(comparison))
    else:
        title = f"compare: BASE {who(comparison.base)} -> NEW {who(comparison.new)}"
        notes = comparison.notes + ([] if fmt == "csv" else [verdict_line(comparison)])
        emit_document(title, _text_header(comparison), _sections(comparison), fmt, notes)
