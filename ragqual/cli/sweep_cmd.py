"""`ragqual sweep`: the retrieval grid, quality next to its costs; selects on validation, reports test."""

from __future__ import annotations

import itertools
import json
from typing import Any

import click

from ragqual.cli.context import AppContext
from ragqual.cli.corpus_options import corpus_options, load_corpus_context
from ragqual.cli.retrieval_cmd import build_retriever, run_retrieval
from ragqual.core.adoption import decide
from ragqual.core.display import fmt_ms, fmt_value
from ragqual.core.goldens import select
from ragqual.errors import InputError
from ragqual.pipeline.report import render_json
from ragqual.pipeline.retrieval import STRATEGIES, RetrievalConfig
from ragqual.pipeline.retrieval_tier import aggregate, timing_section

COLUMNS = ("recall@1", "recall@5", "mrr", "ndcg@10", "map@10", "precision@5", "contextChars")
CAVEAT = ("The grid maximum is not a recommendation: choosing on the questions you report is how a benchmark "
          "becomes a lookup table. Candidates are judged by the adoption rule on the validation split, and the "
          "test split is reported for the one it picks.")


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise InputError(f"expected positive integers, got {text!r}")
    return values


def _name(cfg: RetrievalConfig) -> str:
    return f"{cfg.strategy}/c{cfg.candidate_k}/k{cfg.context_k}"


@click.command("sweep")
@corpus_options
@click.option("--strategies", default=",".join(STRATEGIES), show_default=True, help="Comma-separated strategies.")
@click.option("--candidate-k", "candidate_ks", default="5,10,20,40", show_default=True)
@click.option("--context-k", "context_ks", default="3,5,8", show_default=True)
@click.option("--split", type=click.Choice(["validation", "test"]), default="validation", show_default=True,
              help="Split the selection is made on; the other one is reported for the selected configuration.")
@click.option("--baseline", default="hybrid/c20/k5", show_default=True, help="The configuration candidates must beat.")
@click.pass_obj
def sweep_cmd(app: AppContext, corpus_opts, strategies, candidate_ks, context_ks, split, baseline) -> None:
    """Run the retrieval grid and record quality next to latency p95, index size and context size."""
    names = [s.strip() for s in strategies.split(",") if s.strip()]
    bad = sorted(set(names) - set(STRATEGIES))
    if bad:
        raise InputError(f"unknown strategies {', '.join(bad)}: use {', '.join(STRATEGIES)}")
    grid = [RetrievalConfig(strategy=s, candidate_k=c, context_k=k)
            for s, c, k in itertools.product(names, _ints(candidate_ks), _ints(context_ks))]
    configs = {_name(c): c for c in grid}
    with load_corpus_context(app, corpus_opts) as corpus:
        chosen = select(corpus.goldens, split=split)
        other_split = "test" if split == "validation" else "validation"
        held_out = select(corpus.goldens, split=other_split)
        if not chosen or not held_out:
            raise InputError(f"the sweep needs goldens in both splits (validation and test); found {len(chosen)} / {len(held_out)}")
        retriever = build_retriever(corpus)
        outcome = run_retrieval(app, corpus, chosen + held_out, configs, kind="sweep", retriever=retriever)
        index_bytes = len(corpus.chunks) * corpus.raw_embedder.dim * 4
    ids = {g.id for g in chosen}
    rows: dict[str, dict[str, Any]] = {}
    for name, result in outcome.results.items():
        sel = aggregate([q for q in result.queries if q.golden.id in ids])
        rep = aggregate([q for q in result.queries if q.golden.id not in ids])
        rows[name] = {"selection": sel, "reported": rep, "latencyP95Ms": timing_section(result).get("latencyP95Ms"),
                      "indexVectorBytes": index_bytes, }
    if baseline not in rows:
        raise InputError(f"baseline {baseline!r} is not in the grid: choose one of {', '.join(rows)}")
    verdict = decide(rows[baseline]["selection"], {n: r["selection"] for n, r in rows.items() if n != baseline})
    document = {"quality": {"grid": rows, "baseline": baseline, "selectionSplit": split, "reportedSplit": other_split,
                            "verdict": {"deciding": verdict.deciding_metric, "saturated": list(verdict.saturated),
                                        "best": verdict.best, "sentence": verdict.sentence}, "caveat": CAVEAT},
                "timings": {}, "run": {"run_id": outcome.run_id}}
    markdown = _markdown(rows, baseline, verdict, split, other_split)
    out = app.settings.results_dir / "reports"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"sweep-run{outcome.run_id}.json").write_text(render_json(document), encoding="utf-8")
    (out / f"sweep-run{outcome.run_id}.md").write_text(markdown, encoding="utf-8")
    click.echo(json.dumps(document, indent=2, sort_keys=True) if app.as_json else markdown)


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

