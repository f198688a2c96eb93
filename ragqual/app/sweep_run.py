"""The retrieval grid as one run: quality per configuration on the selection split, the held-out
split for reporting, the adoption rule's verdict, and the JSON report (no printing here)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusOptions, load_corpus_context
from ragqual.app.retrieval_run import build_retriever, run_retrieval
from ragqual.core.adoption import Verdict, decide
from ragqual.core.goldens import select
from ragqual.core.runlabel import run_label
from ragqual.errors import InputError
from ragqual.pipeline.report import render_json
from ragqual.pipeline.retrieval import STRATEGIES, RetrievalConfig
from ragqual.pipeline.retrieval_tier import aggregate, timing_section

CAVEAT = ("The grid maximum is not a recommendation: choosing on the questions you report is how a benchmark "
          "becomes a lookup table. Candidates are judged by the adoption rule on the validation split, and the "
          "test split is reported for the one it picks.")



@dataclass(frozen=True)
class SweepOptions:
    strategies: tuple[str, ...] = STRATEGIES
    candidate_ks: tuple[int, ...] = (5, 10, 20, 40)
    context_ks: tuple[int, ...] = (3, 5, 8)
    split: str = "validation"
    baseline: str = "hybrid/c20/k5"
    name: str | None = None  # the run's name and tags (`--name`, `--tag key=value`)
    run_tags: tuple[str, ...] = ()


@dataclass
class SweepOutcome:
    run_id: int
    rows: dict[str, dict[str, Any]]
    verdict: Verdict
    split: str
    other_split: str
    document: dict[str, Any]


def config_name(cfg: RetrievalConfig) -> str:
    return f"{cfg.strategy}/c{cfg.candidate_k}/k{cfg.context_k}"


def grid(options: SweepOptions) -> dict[str, RetrievalConfig]:
    bad = sorted(set(options.strategies) - set(STRATEGIES))
    if bad:
        raise InputError(f"unknown strategies {', '.join(bad)}: use {', '.join(STRATEGIES)}")
    configs = [RetrievalConfig(strategy=s, candidate_k=c, context_k=k)
               for s, c, k in itertools.product(options.strategies, options.candidate_ks, options.context_ks)]
    return {config_name(c): c for c in configs}


def sweep(app: AppContext, corpus_opts: CorpusOptions, options: SweepOptions) -> SweepOutcome:
    """Run the grid over both splits as one run (kind `sweep`) and judge it on the selection split."""
    label = run_label(options.name, options.run_tags)
    configs = grid(options)
    split = options.split
    with load_corpus_context(app, corpus_opts) as corpus:
        chosen = select(corpus.goldens, split=split)
        other_split = "test" if split == "validation" else "validation"
        held_out = select(corpus.goldens, split=other_split)
        if not chosen or not held_out:
            raise InputError(f"the sweep needs goldens in both splits (validation and test); found {len(chosen)} / {len(held_out)}")
        retriever = build_retriever(corpus)
        outcome = run_retrieval(app, corpus, chosen + held_out, configs, kind="sweep", retriever=retriever,
                                label=label)
        index_bytes = len(corpus.chunks) * corpus.raw_embedder.dim * 4
    rows = _rows(outcome.results, {g.id for g in chosen}, index_bytes)
    baseline = options.baseline
    if baseline not in rows:
        raise InputError(f"baseline {baseline!r} is not in the grid: choose one of {', '.join(rows)}")
    verdict = decide(rows[baseline]["selection"], {n: r["selection"] for n, r in rows.items() if n != baseline})
    document = {"quality": {"grid": rows, "baseline": baseline, "selectionSplit": split, "reportedSplit": other_split,
                            "verdict": {"deciding": verdict.deciding_metric, "saturated": list(verdict.saturated),
                                        "best": verdict.best, "sentence": verdict.sentence}, "caveat": CAVEAT},
                "timings": {}, "run": {"run_id": outcome.run_id, **label.as_params()}}
    out = app.settings.results_dir / "reports"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"sweep-run{outcome.run_id}.json").write_text(render_json(document), encoding="utf-8")
    return SweepOutcome(outcome.run_id, rows, verdict, split, other_split, document)


def _rows(results: dict[str, Any], selection_ids: set[str], index_bytes: int) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for name, result in results.items():
        sel = aggregate([q for q in result.queries if q.golden.id in selection_ids])
        rep = aggregate([q for q in result.queries if q.golden.id not in selection_ids])
        rows[name] = {"selection": sel, "reported": rep, "latencyP95Ms": timing_section(result).get("latencyP95Ms"),
                      "indexVectorBytes": index_bytes}
    return rows
