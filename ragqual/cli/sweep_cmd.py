"""`ragqual sweep`: the retrieval grid and the index axes (chunking, embedder), quality next to its
costs; selects on validation, reports test, gates every configuration against the first."""

from __future__ import annotations

import json

import click

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions
from ragqual.app.history_reads import history_head
from ragqual.app.sweep_run import CAVEAT, SweepOptions, SweepOutcome, report_stem, sweep
from ragqual.cli.compare_format import metrics_frame, verdict_line
from ragqual.cli.corpus_options import corpus_options_except
from ragqual.cli.label_options import name_option, run_tag_option, run_tags_only
from ragqual.cli.output import markdown_table
from ragqual.core.display import fmt_ms, fmt_value
from ragqual.core.metric_names import SWEEP_COLUMNS as COLUMNS
from ragqual.core.splits import SPLIT_METHODS
from ragqual.errors import InputError
from ragqual.pipeline.retrieval import STRATEGIES


def _ints(text: str | None, minimum: int = 1) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < minimum:
        raise InputError(f"expected integers of at least {minimum}, got {text!r}")
    return tuple(values)


def _names(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(v.strip() for v in text.split(",") if v.strip()) or None


@click.command("sweep")
@corpus_options_except("embedder", "chunk_tokens", "overlap_tokens")
@click.option("--strategies", default=None, help=f"Comma-separated strategies [default: {','.join(STRATEGIES)}; "
              "the baseline's alone when the index axes are swept].")
@click.option("--candidate-k", "candidate_ks", default=None, help="Comma-separated candidate depths [default: 5,10,20,40; "
              "the baseline's alone when the index axes are swept].")
@click.option("--context-k", "context_ks", default=None, help="Comma-separated context sizes [default: 3,5,8; "
              "the baseline's alone when the index axes are swept].")
@click.option("--chunk-tokens", "chunk_tokens", metavar="N,N", help="Chunk sizes to sweep (estimated tokens), each "
              "ingested into its own collection [default: the project's].")
@click.option("--overlap-tokens", "overlap_tokens", metavar="N,N", help="Overlaps to sweep [default: the project's].")
@click.option("--embedder", "embedders", metavar="URI,URI", help="Embedders to sweep: minilm, ollama:<model> "
              "[default: the project's].")
@click.option("--split", type=click.Choice(["validation", "test"]), default="validation", show_default=True,
              help="Split the selection is made on; the other one is reported for the selected configuration.")
@click.option("--split-by", type=click.Choice(SPLIT_METHODS), default=None,
              help="Goldens without a `split`: assign one by a hash of the question id (ignored when every "
                   "question carries a split).")
@click.option("--split-seed", type=int, default=0, show_default=True, help="The seed of --split-by hash.")
@click.option("--baseline", default="hybrid/c20/k5", show_default=True,
              help="The retrieval configuration candidates must beat; with the index axes, on the first index configuration.")
@click.option("--rerun", is_flag=True, help="Evaluate every configuration again instead of reusing finished runs of the same plan.")
@name_option
@run_tag_option
@click.pass_obj
def sweep_cmd(app: AppContext, corpus_opts: CorpusOptions, strategies, candidate_ks, context_ks, chunk_tokens,
              overlap_tokens, embedders, split, split_by, split_seed, baseline, rerun, name, run_tags) -> None:
    """Run the retrieval grid, and the chunking and embedder axes each in its own index; record quality
    next to latency p95, index size, ingest time and context size, gated against the first configuration."""
    options = SweepOptions(strategies=_names(strategies), candidate_ks=_ints(candidate_ks),
                           context_ks=_ints(context_ks), split=split, baseline=baseline,
                           chunk_tokens=_ints(chunk_tokens) or (), overlap_tokens=_ints(overlap_tokens, 0) or (),
                           embedders=_names(embedders) or (), split_by=split_by, split_seed=split_seed, rerun=rerun,
                           name=name, run_tags=run_tags_only(run_tags))
    outcome = sweep(app, corpus_opts, options)
    markdown = render_markdown(outcome)
    out = app.settings.results_dir / "reports"
    head = "".join(f"\n{key}: {value}\n" for key, value in history_head(app.history()).items())
    (out / f"{report_stem(outcome.run_ids)}.md").write_text(markdown + head, encoding="utf-8")
    click.echo(json.dumps(outcome.document, indent=2, sort_keys=True) if app.as_json else markdown)


def _ingest(row: dict) -> str:
    return "cached" if row.get("ingestMs") is None else fmt_ms(row["ingestMs"])


def render_markdown(outcome: SweepOutcome) -> str:
    split, other, rows, first = outcome.split, outcome.other_split, outcome.rows, outcome.first
    head = ["config", *[f"{c} ({split})" for c in COLUMNS], "latency p95 ms", "index chunks", "index bytes",
            "ingest ms", "embedded", f"gate vs first ({split})"]
    lines = ["# ragqual retrieval sweep", "", CAVEAT, "", outcome.splits_note, "",
             "| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for name, r in rows.items():
        cells = [name, *(fmt_value(r["selection"].get(c), c) for c in COLUMNS), fmt_ms(r["latencyP95Ms"]),
                 fmt_value(r.get("chunks"), "chunks"), fmt_value(r.get("indexVectorBytes"), "indexVectorBytes"),
                 _ingest(r), fmt_value(r.get("embeddedTexts"), "embeddedTexts"), r.get("gate", "first")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *_runs(outcome), "", f"adoption rule on {split} against {first}: {outcome.verdict.sentence}", ""]
    picked = outcome.verdict.best or first
    lines.append(f"{other} split for {picked}: "
                 + ", ".join(f"{c} {fmt_value(rows[picked]['reported'].get(c), c)}" for c in COLUMNS))
    if outcome.held_out is not None:
        differs = outcome.document["quality"]["heldOutGate"]["differs"]
        lines += ["", f"paired gate on {other}, {picked} against {first}: {verdict_line(outcome.held_out)}",
                  "", "settings that differ: " + ("; ".join(differs) or "none"), "",
                  markdown_table(metrics_frame(outcome.held_out.rows))]
    return "\n".join(lines) + "\n"


def _runs(outcome: SweepOutcome) -> list[str]:
    """Where each index configuration's numbers come from."""
    out = []
    for result in outcome.indexes:
        name = "the project's index" if result.index is None else result.index.name
        source = f"run {result.run_id}" + (" (finished earlier on the same index, goldens and grid: read from the history)"
                                           if result.reused else "")
        out.append(f"- {name}: {source}, collection {result.figures.get('collection')}")
    return out
