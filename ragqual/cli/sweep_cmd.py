"""`ragqual sweep`: the retrieval grid, quality next to its costs; selects on validation, reports test."""

from __future__ import annotations

import json

import click

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.app.history_reads import history_head
from ragqual.app.sweep_run import CAVEAT, SweepOptions, sweep
from ragqual.cli.corpus_options import corpus_options
from ragqual.core.display import fmt_ms, fmt_value
from ragqual.core.metric_names import SWEEP_COLUMNS as COLUMNS
from ragqual.errors import InputError
from ragqual.pipeline.retrieval import STRATEGIES


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise InputError(f"expected positive integers, got {text!r}")
    return values


@click.command("sweep")
@corpus_options
@click.option("--strategies", default=",".join(STRATEGIES), show_default=True, help="Comma-separated strategies.")
@click.option("--candidate-k", "candidate_ks", default="5,10,20,40", show_default=True)
@click.option("--context-k", "context_ks", default="3,5,8", show_default=True)
@click.option("--split", type=click.Choice(["validation", "test"]), default="validation", show_default=True,
              help="Split the selection is made on; the other one is reported for the selected configuration.")
@click.option("--baseline", default="hybrid/c20/k5", show_default=True, help="The configuration candidates must beat.")
@click.pass_obj
def sweep_cmd(app: AppContext, corpus_opts: CorpusOptions, strategies, candidate_ks, context_ks, split, baseline) -> None:
    """Run the retrieval grid and record quality next to latency p95, index size and context size."""
    options = SweepOptions(strategies=tuple(s.strip() for s in strategies.split(",") if s.strip()),
                           candidate_ks=tuple(_ints(candidate_ks)), context_ks=tuple(_ints(context_ks)), split=split,
                           baseline=baseline)
    outcome = sweep(app, corpus_opts, options)
    markdown = _markdown(outcome.rows, baseline, outcome.verdict, outcome.split, outcome.other_split)
    out = app.settings.results_dir / "reports"
    head = "".join(f"\n{key}: {value}\n" for key, value in history_head(app.history()).items())
    (out / f"sweep-run{outcome.run_id}.md").write_text(markdown + head, encoding="utf-8")
    click.echo(json.dumps(outcome.document, indent=2, sort_keys=True) if app.as_json else markdown)


def _markdown(rows, baseline, verdict, split, other) -> str:
    head = ["config", *[f"{c} ({split})" for c in COLUMNS], "latency p95 ms", "index bytes"]
    lines = ["# ragqual retrieval sweep", "", CAVEAT, "", "| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for name, r in rows.items():
        cells = [name, *(fmt_value(r["selection"].get(c), c) for c in COLUMNS), fmt_ms(r["latencyP95Ms"]),
                 fmt_value(r["indexVectorBytes"], "indexVectorBytes")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"adoption rule on {split} against {baseline}: {verdict.sentence}", ""]
    picked = verdict.best or baseline
    lines.append(f"{other} split for {picked}: " + ", ".join(f"{c} {fmt_value(rows[picked]['reported'].get(c), c)}" for c in COLUMNS))
    return "\n".join(lines) + "\n"

