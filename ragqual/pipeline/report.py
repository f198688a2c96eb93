"""Retrieval reports as JSON and Markdown.

The quality section depends only on the inputs and is written with sorted keys
and fixed rounding, so two runs give byte-identical quality sections; the run
header and timings follow in their own sections.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragqual.core.display import fmt_value
from ragqual.core.metric_names import DEEP_HEADLINE
from ragqual.core.metric_names import RETRIEVAL_HEADLINE as HEADLINE

QUALITY_HEADING = "## Quality"
RUN_HEADING = "## Run"


def fmt(value: Any, name: str = "") -> str:
    """A value in the unit of the quantity `name` (`ragqual.core.display`), `-` when missing."""
    return fmt_value(value, name)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], first: str) -> str:
    head = "| " + " | ".join([first, *columns]) + " |"
    rule = "|" + "|".join(["---"] * (len(columns) + 1)) + "|"
    body = ["| " + " | ".join([str(r["_name"]), *(fmt(r.get(c), c) for c in columns)]) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def metric_table(named: Mapping[str, Mapping[str, Any]], columns: Sequence[str] = HEADLINE, first: str = "tag") -> str:
    rows = [{"_name": name, **values} for name, values in named.items()]
    return table(rows, [*columns, "questions"], first)


def headline_for(overalls: Iterable[Mapping[str, Any]]) -> Sequence[str]:
    """The deep columns (full MAP, nDCG, recall@100) when a run measured them, else HEADLINE."""
    return DEEP_HEADLINE if any("map" in o for o in overalls) else HEADLINE


def quality_markdown(strategies: Mapping[str, Mapping[str, Any]]) -> str:
    parts = [QUALITY_HEADING, ""]
    overall = {name: q["overall"] for name, q in strategies.items()}
    columns = headline_for(overall.values())
    parts += ["### Overall by strategy", "", metric_table(overall, columns, first="strategy"), ""]
    for name, quality in strategies.items():
        parts += [f"### {name}: per tag", "", f"config: `{json.dumps(quality['config'], sort_keys=True)}`", ""]
        if quality["byTag"]:
            parts += [metric_table(quality["byTag"], columns), ""]
        dist = quality["scoreDistributions"]
        parts += [f"similarity (dense cosine) of top-5 candidates: relevant p50 {fmt(dist['relevant']['p50'])}, "
                  f"non-relevant p50 {fmt(dist['nonRelevant']['p50'])}, refusal questions p50 {fmt(dist['refusalTop5']['p50'])}", ""]
        if quality["misses"]:
            parts += [f"misses at 5: {len(quality['misses'])} ({', '.join(x['id'] for x in quality['misses'])})", ""]
        short = context_short(quality)
        if short:
            parts += [f"context recall below 1 (a relevant document missing from the {quality['config']['context_k']} "
                      f"injected chunks): {len(short)} ({', '.join(short)})", ""]
    return "\n".join(parts)


def context_short(quality: Mapping[str, Any]) -> list[str]:
    """The questions whose injected context lacks a relevant document: what reached the model,
    which recall@k over the candidate list can hide (one long document filling the context)."""
    return [q["id"] for q in quality.get("perQuestion", ())
            if q["metrics"].get("contextRecall") is not None and q["metrics"]["contextRecall"] < 1]


def render_markdown(report: Mapping[str, Any]) -> str:
    run = report["run"]
    lines = ["# ragqual retrieval report", "", quality_markdown(report["quality"]), RUN_HEADING, ""]
    lines += [f"- {k}: {fmt(v, k)}" for k, v in sorted(run.items())]
    lines += ["", "## Timings", ""]
    for name, t in report["timings"].items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {fmt(v, k)}" for k, v in sorted(t.items())))
    return "\n".join(lines) + "\n"


def render_json(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_report(report: Mapping[str, Any], directory: Path, stem: str) -> tuple[Path, Path]:
    """Write <stem>.json and <stem>.md atomically (temp file then rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = (directory / f"{stem}.json", directory / f"{stem}.md")
    for path, text in zip(paths, (render_json(report), render_markdown(report)), strict=True):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return paths


def quality_text(markdown: str) -> str:
    """The deterministic slice of a Markdown report (for comparisons and tests)."""
    start = markdown.index(QUALITY_HEADING)
    return markdown[start: markdown.index(RUN_HEADING, start)]
