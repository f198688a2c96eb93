"""The sweep: quality per configuration on the selection split, the held-out split for reporting,
the adoption rule's verdict, the paired gate against the first configuration, and the JSON report
(no printing here).

Two axes. The retrieval grid (strategies x candidate-k x context-k) runs on one index. The index
axes (chunk tokens x overlap tokens x embedder) each need their own index: every index
configuration is ingested once into its own collection, `<collection>-sweep-<key>`, where the key
is a digest of the chunking and the embedder URI, so configurations never overwrite each other nor
the project's own eval points. Such a collection is *cached*: a later sweep finds it current (the
same corpus fingerprint) and ingests nothing. Each index configuration's retrieval is its own
finished run of kind `sweep` in the history, recorded with a digest of everything its numbers
depend on (corpus fingerprint, goldens with their splits, retrieval grid, ranking code, ragqual
version); a sweep stopped part-way and run again reads the configurations already finished back
from the history, opening neither the embedder nor Qdrant for them (*resumable*). `rerun=True`
evaluates every configuration again (the caches still apply).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragqual import __version__
from ragqual.app.comparison import Comparison, Options, compare, setting_differences
from ragqual.app.context import AppContext
from ragqual.app.corpus import CorpusContext, CorpusOptions, ensure_ingested, load_corpus_context
from ragqual.app.gates import gated_summary
from ragqual.app.retrieval_run import build_retriever, run_retrieval
from ragqual.core.adoption import Verdict, decide
from ragqual.core.goldens import Golden, goldens_hash
from ragqual.core.hashing import hash_value
from ragqual.core.splits import SPLIT_METHODS, assign_hash_splits, split_counts
from ragqual.core.verdicts import EQUIVALENT, IMPROVEMENT, INCONCLUSIVE, REGRESSION
from ragqual.core.runlabel import RunLabel, run_label
from ragqual.errors import InputError
from ragqual.pipeline.report import render_json
from ragqual.pipeline.retrieval import STRATEGIES, RetrievalConfig, ranking_code
from ragqual.pipeline.retrieval_tier import TierResult, timing_section
from ragqual.store.runstore import RunStore
from ragqual.store.summaries import GroupSummary, Summary

CAVEAT = ("The grid maximum is not a recommendation: choosing on the questions you report is how a benchmark "
          "becomes a lookup table. Candidates are judged by the adoption rule on the validation split, and the "
          "test split is reported for the one it picks.")

KIND = "sweep"
DEFAULT_STRATEGIES = STRATEGIES
DEFAULT_CANDIDATE_KS = (5, 10, 20, 40)
DEFAULT_CONTEXT_KS = (3, 5, 8)
GATE_GROUP = "retrieval"


@dataclass(frozen=True)
class SweepOptions:
    """None for a retrieval axis means its default: the whole default grid, or only the baseline's
    value when the index axes are swept (every index times the whole grid is rarely wanted)."""

    strategies: tuple[str, ...] | None = None
    candidate_ks: tuple[int, ...] | None = None
    context_ks: tuple[int, ...] | None = None
    split: str = "validation"
    baseline: str = "hybrid/c20/k5"
    chunk_tokens: tuple[int, ...] = ()
    overlap_tokens: tuple[int, ...] = ()
    embedders: tuple[str, ...] = ()
    split_by: str | None = None
    split_seed: int = 0
    rerun: bool = False
    gate: Options = Options()
    name: str | None = None  # each recorded run's name and tags (`--name`, `--tag key=value`)
    run_tags: tuple[str, ...] = ()

    @property
    def sweeps_indexes(self) -> bool:
        return bool(self.chunk_tokens or self.overlap_tokens or self.embedders)


@dataclass(frozen=True)
class IndexConfig:
    chunk_tokens: int
    overlap_tokens: int
    embedder: str

    @property
    def name(self) -> str:
        return f"chunk{self.chunk_tokens}/overlap{self.overlap_tokens}/{self.embedder}"


@dataclass
class IndexResult:
    """One index configuration's retrieval run: fresh, or read back from the history."""

    index: IndexConfig | None  # None: the project's own index (the retrieval grid only)
    run_id: int
    reused: bool
    summary: Summary
    figures: dict[str, Any]


@dataclass
class SweepOutcome:
    run_ids: list[int]
    rows: dict[str, dict[str, Any]]
    verdict: Verdict
    split: str
    other_split: str
    document: dict[str, Any]
    first: str = ""
    gates: dict[str, Comparison] = field(default_factory=dict)  # on the selection split, each against the first
    held_out: Comparison | None = None  # the picked configuration against the first, on the reported split
    splits_note: str = ""
    indexes: list[IndexResult] = field(default_factory=list)


# -- the plan ----------------------------------------------------------------------------------------

def config_name(cfg: RetrievalConfig) -> str:
    return f"{cfg.strategy}/c{cfg.candidate_k}/k{cfg.context_k}"


_NAME = re.compile(r"^([a-z]+)/c([0-9]+)/k([0-9]+)$")


def parse_config_name(name: str) -> RetrievalConfig:
    """`hybrid/c20/k5` back into its configuration."""
    found = _NAME.match(name)
    if found is None or found.group(1) not in STRATEGIES:
        raise InputError(f"--baseline {name!r} is not a configuration name like hybrid/c20/k5 "
                         f"(strategy one of {', '.join(STRATEGIES)})")
    return RetrievalConfig(strategy=found.group(1), candidate_k=int(found.group(2)), context_k=int(found.group(3)))


def grid(options: SweepOptions) -> dict[str, RetrievalConfig]:
    narrow = parse_config_name(options.baseline) if options.sweeps_indexes else None
    strategies = options.strategies or ((narrow.strategy,) if narrow else DEFAULT_STRATEGIES)
    candidate_ks = options.candidate_ks or ((narrow.candidate_k,) if narrow else DEFAULT_CANDIDATE_KS)
    context_ks = options.context_ks or ((narrow.context_k,) if narrow else DEFAULT_CONTEXT_KS)
    bad = sorted(set(strategies) - set(STRATEGIES))
    if bad:
        raise InputError(f"unknown strategies {', '.join(bad)}: use {', '.join(STRATEGIES)}")
    configs = [RetrievalConfig(strategy=s, candidate_k=c, context_k=k)
               for s, c, k in itertools.product(strategies, candidate_ks, context_ks)]
    return {config_name(c): c for c in configs}


def index_configs(options: SweepOptions, corpus: CorpusContext) -> list[IndexConfig]:
    """Chunk tokens x overlap tokens x embedders in the order given (a missing axis: the project's
    setting); every chunking is checked before anything is ingested."""
    chunking = corpus.chunk_config
    out = [IndexConfig(c, o, e) for c, o, e in itertools.product(
        dict.fromkeys(options.chunk_tokens or (chunking.chunk_tokens,)),
        dict.fromkeys(options.overlap_tokens or (chunking.overlap_tokens,)),
        dict.fromkeys(options.embedders or (corpus.embedder_uri,)))]
    for index in out:
        _chunking(corpus, index)  # raises on an impossible chunking, naming it
    return out


def _chunking(corpus: CorpusContext, index: IndexConfig) -> Any:
    try:
        return dataclasses.replace(corpus.chunk_config, chunk_tokens=index.chunk_tokens,
                                   overlap_tokens=index.overlap_tokens)
    except InputError as exc:
        raise InputError(f"sweep configuration {index.name}: {exc}") from None


def scoped_collection(collection: str, chunking: Mapping[str, Any], embedder: str) -> str:
    """The collection an index configuration is ingested into: the project's name, `-sweep-` and a
    digest of the chunking and the embedder URI (stable, so a later sweep finds it)."""
    return f"{collection}-sweep-{hash_value({'chunking': dict(chunking), 'embedder': embedder})[:10]}"


def scoped_context(corpus: CorpusContext, index: IndexConfig) -> CorpusContext:
    """A closed copy of `corpus` reading and writing only the configuration's own collection."""
    chunking = _chunking(corpus, index)
    return dataclasses.replace(corpus, chunk_config=chunking, embedder_uri=index.embedder,
                               collection=scoped_collection(corpus.collection, chunking.as_dict(), index.embedder),
                               _open={})


# -- splits ------------------------------------------------------------------------------------------

def sweep_goldens(goldens: Sequence[Golden], split_by: str | None, seed: int) -> tuple[list[Golden], str]:
    """The goldens with the splits the sweep uses, and the sentence the report states about them.
    `--split-by hash` splits goldens that carry no split; when every golden carries one it is
    ignored (and said so); a set split only in part is refused (core.splits)."""
    if split_by is None:
        return list(goldens), "splits: the goldens' own `split` field"
    if split_by not in SPLIT_METHODS:
        raise InputError(f"--split-by must be one of {', '.join(SPLIT_METHODS)}, got {split_by!r}")
    carried, _ = split_counts(goldens)
    if carried == len(goldens):
        return list(goldens), ("splits: the goldens' own `split` field (--split-by hash ignored: every question "
                               "carries a split)")
    split = assign_hash_splits(goldens, seed)
    validation = sum(g.split == "validation" for g in split)
    return split, (f"splits: by hash of the question id with seed {seed} (the goldens carry none): "
                   f"{validation} validation, {len(split) - validation} test")


# -- one index configuration ---------------------------------------------------------------------------

def entry_key(corpus: CorpusContext, goldens: Sequence[Golden], configs: Mapping[str, RetrievalConfig]) -> str:
    """Everything a configuration's numbers depend on: a finished run with this key is reused."""
    return hash_value({"fingerprint": corpus.fingerprint, "goldens": goldens_hash(goldens),
                       "configs": {n: c.as_dict() for n, c in configs.items()}, "ranking_code": ranking_code(),
                       "ragqual": __version__})


def finished_run(store: RunStore, entry: str, label: RunLabel = RunLabel()) -> int | None:
    """The newest finished sweep run recorded with `entry` and labelled `label` (name and tags), if
    any: a sweep given another name or other tags records runs of its own, so every run it lists
    carries the label it was given."""
    for run_id in store.run_ids(KIND):
        info = store.get_run(run_id)
        if (info.status == "finished" and (info.params.get("sweep") or {}).get("entry") == entry
                and info.label == label):
            return run_id
    return None


def evaluate_index(app: AppContext, corpus: CorpusContext, index: IndexConfig | None, goldens: Sequence[Golden],
                   configs: dict[str, RetrievalConfig], rerun: bool, label: RunLabel = RunLabel()) -> IndexResult:
    """One index configuration's run: read back when finished before with the same entry key and
    label, otherwise ingested when needed (into its own collection) and evaluated as a new run
    carrying `label` (name, tags) in its params."""
    store = app.store()
    entry = entry_key(corpus, goldens, configs)
    done = None if rerun else finished_run(store, entry, label)
    if done is not None:
        info = store.get_run(done)
        return IndexResult(index, done, True, gated_summary(store, done), dict(info.params["sweep"]["figures"]))
    with corpus:
        report = ensure_ingested(corpus)
        retriever = build_retriever(corpus)
        figures: dict[str, Any] = {
            "collection": corpus.collection, "fingerprint": corpus.fingerprint, "embedder": corpus.embedder_id,
            "chunking": corpus.chunk_config.as_dict(), "chunks": len(retriever.chunks),
            "indexVectorBytes": len(retriever.chunks) * corpus.raw_embedder.dim * 4,
            "ingestMs": None if report is None else report.seconds * 1000.0,
            "embeddedTexts": getattr(corpus.embedder, "misses", None),
        }

        def recorded(results: dict[str, TierResult]) -> dict[str, Any]:
            figures["latencyP95Ms"] = {n: timing_section(r).get("latencyP95Ms") for n, r in results.items()}
            return {"sweep": {"entry": entry, "index": None if index is None else dataclasses.asdict(index),
                              "figures": figures}}

        outcome = run_retrieval(app, corpus, goldens, configs, kind=KIND, retriever=retriever, label=label,
                                extra_params=recorded)
    return IndexResult(index, outcome.run_id, False, gated_summary(store, outcome.run_id), figures)


# -- the whole sweep -----------------------------------------------------------------------------------

def sweep(app: AppContext, corpus_opts: CorpusOptions, options: SweepOptions) -> SweepOutcome:
    """Every index configuration (or the project's index) times the retrieval grid, judged on the
    selection split against the first configuration; the other split reported. Every run it records
    carries the options' name and tags."""
    label = run_label(options.name, options.run_tags)
    configs = grid(options)
    if config_name(parse_config_name(options.baseline)) not in configs:
        raise InputError(f"baseline {options.baseline!r} is not in the grid: choose one of {', '.join(configs)}")
    split, other = options.split, ("test" if options.split == "validation" else "validation")
    with load_corpus_context(app, corpus_opts) as corpus:
        # the glossary's digest in each configuration: an edited glossary never reuses a finished run
        configs = {name: config.with_glossary(corpus.glossary) for name, config in configs.items()}
        goldens, note = sweep_goldens(corpus.goldens, options.split_by, options.split_seed)
        chosen, held_out = [g for g in goldens if g.split == split], [g for g in goldens if g.split == other]
        if not chosen or not held_out:
            raise InputError(f"the sweep needs goldens in both splits (validation and test); found {len(chosen)} / "
                             f"{len(held_out)}: give each question a `split`, or pass --split-by hash")
        chosen_set = chosen + held_out
        plan: list[tuple[IndexConfig | None, CorpusContext]]
        if options.sweeps_indexes:
            plan = [(i, scoped_context(corpus, i)) for i in index_configs(options, corpus)]
        else:
            plan = [(None, corpus)]
        results = [evaluate_index(app, ctx, index, chosen_set, configs, options.rerun, label) for index, ctx in plan]
    return _judge(app, results, configs, options, {g.id for g in chosen}, split, other, note, label)


def row_name(index: IndexConfig | None, retrieval: str) -> str:
    return retrieval if index is None else f"{index.name}/{retrieval}"


def _means(questions: Mapping[str, Mapping[str, float]]) -> dict[str, float | None]:
    names = sorted({m for values in questions.values() for m in values})
    out: dict[str, float | None] = {}
    for name in names:
        values = [v[name] for v in questions.values() if name in v]
        out[name] = math.fsum(values) / len(values) if values else None
    out["questions"] = len(questions)
    return out


def _part(group: GroupSummary, ids: set[str], inside: bool) -> dict[str, dict[str, float]]:
    return {q: v for q, v in group.questions.items() if (q in ids) == inside}


def _judge(app: AppContext, results: list[IndexResult], configs: Mapping[str, RetrievalConfig],
           options: SweepOptions, selection_ids: set[str], split: str, other: str, note: str,
           label: RunLabel = RunLabel()) -> SweepOutcome:
    rows: dict[str, dict[str, Any]] = {}
    parts: dict[str, tuple[Summary, Summary]] = {}
    for result in results:
        for retrieval in configs:
            name = row_name(result.index, retrieval)
            group = result.summary.groups.get(retrieval, GroupSummary(retrieval, {}))
            sel, rep = _part(group, selection_ids, True), _part(group, selection_ids, False)
            parts[name] = (_side(result, name, configs[retrieval], split, sel),
                           _side(result, name, configs[retrieval], other, rep))
            rows[name] = {"index": None if result.index is None else result.index.name, "retrieval": retrieval,
                          "runId": result.run_id, "reused": result.reused,
                          "selection": _means(sel), "reported": _means(rep),
                          "latencyP95Ms": (result.figures.get("latencyP95Ms") or {}).get(retrieval),
                          **{k: result.figures.get(k) for k in ("chunks", "indexVectorBytes", "ingestMs",
                                                                 "embeddedTexts", "collection")}}
    first = row_name(results[0].index, config_name(parse_config_name(options.baseline)))
    rows = {first: rows[first], **{n: r for n, r in rows.items() if n != first}}  # the first configuration on top
    gates = {name: paired_gate(parts[first][0], parts[name][0], options.gate) for name in rows if name != first}
    for name, comparison in gates.items():
        rows[name]["gate"] = overall_verdict(comparison)
    verdict = decide(rows[first]["selection"], {n: r["selection"] for n, r in rows.items() if n != first})
    picked = verdict.best or first
    held = paired_gate(parts[first][1], parts[picked][1], options.gate) if picked != first else None
    document = _document(rows, first, split, other, verdict, gates, held, note, results, label)
    out = app.settings.results_dir / "reports"
    out.mkdir(parents=True, exist_ok=True)
    run_ids = [r.run_id for r in results]
    (out / f"{report_stem(run_ids)}.json").write_text(render_json(document), encoding="utf-8")
    return SweepOutcome(run_ids, rows, verdict, split, other, document, first, gates, held, note, results)


def report_stem(run_ids: Sequence[int]) -> str:
    return "sweep-run" + "-".join(str(i) for i in dict.fromkeys(run_ids))


def _side(result: IndexResult, name: str, config: RetrievalConfig, split: str,
          questions: dict[str, dict[str, float]]) -> Summary:
    """One configuration's questions of one split as a summary `compare` reads; its settings are
    the index's chunking and embedder and the retrieval configuration (what the diff names)."""
    settings = {"chunking": result.figures.get("chunking"), "embedder": result.figures.get("embedder"),
                "retrieval": config.as_dict()}
    header = {"dataset_hash": result.summary.header.get("dataset_hash"), "params": settings}
    return Summary(f"run {result.run_id} {name} ({split})", KIND, KIND, result.figures.get("fingerprint"),
                   header, {GATE_GROUP: GroupSummary(GATE_GROUP, questions)}, result.run_id)


def paired_gate(base: Summary, new: Summary, options: Options) -> Comparison:
    """`compare --across-configs` between two configurations of one sweep: the same goldens, paired
    by question, over indexes whose chunking or embedder (and so corpus fingerprint) may differ."""
    return compare(base, new, dataclasses.replace(options, across_configs=True))


def overall_verdict(comparison: Comparison) -> str:
    """The comparison in one word, in the gate's order: any regression, else any improvement, else
    equivalent when every metric is, else inconclusive."""
    said = {r.verdict for r in comparison.rows}
    for word in (REGRESSION, IMPROVEMENT):
        if word in said:
            return word
    return EQUIVALENT if said == {EQUIVALENT} else INCONCLUSIVE


def _gate_dict(comparison: Comparison) -> dict[str, Any]:
    return {"verdict": overall_verdict(comparison), "base": comparison.base.source, "new": comparison.new.source,
            "differs": setting_differences(comparison.base, comparison.new),
            "metrics": [dataclasses.asdict(r) for r in comparison.rows], "notes": list(comparison.notes)}


def _document(rows: dict[str, dict[str, Any]], first: str, split: str, other: str, verdict: Verdict,
              gates: Mapping[str, Comparison], held: Comparison | None, note: str,
              results: Sequence[IndexResult], label: RunLabel = RunLabel()) -> dict[str, Any]:
    return {
        "quality": {"grid": rows, "baseline": first, "selectionSplit": split, "reportedSplit": other, "splits": note,
                    "verdict": {"deciding": verdict.deciding_metric, "saturated": list(verdict.saturated),
                                "best": verdict.best, "sentence": verdict.sentence},
                    "gates": {name: _gate_dict(c) for name, c in gates.items()},
                    "heldOutGate": None if held is None else _gate_dict(held), "caveat": CAVEAT},
        "indexes": [{"index": None if r.index is None else r.index.name, "run_id": r.run_id, "reused": r.reused,
                     **r.figures} for r in results],
        "timings": {}, "run": {"run_ids": [r.run_id for r in results], **label.as_params()},
    }
