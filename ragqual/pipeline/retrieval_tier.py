"""The retrieval tier: run every golden through the retriever and measure it.

Quality numbers here are a pure function of the corpus, goldens, embedder and
configuration, so two runs give identical quality sections; wall-clock
timings are kept apart in `timings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragqual.core import metrics as m
from ragqual.core.goldens import Golden
from ragqual.core.metric_names import DEEP_K
from ragqual.core.scoring import percentile
from ragqual.pipeline.retrieval import Retrieval, RetrievalConfig, Retriever

CUTOFFS = (1, 3, 5, 10)


@dataclass(frozen=True)
class QueryResult:
    golden: Golden
    retrieval: Retrieval
    metrics: dict[str, float]

    @property
    def ranked_docs(self) -> list[str]:
        return m.collapse_to_documents(self.retrieval.ranking.doc_ids)


@dataclass
class TierResult:
    config: RetrievalConfig
    queries: list[QueryResult] = field(default_factory=list)


def query_metrics(golden: Golden, retrieval: Retrieval, context_k: int, config_depth: int = 0) -> dict[str, float]:
    """Every per-question number. Refusal questions get only the non-empty-context flag.

    With `config_depth` (the candidate list's length, --candidate-k) of DEEP_K or more, recall@100,
    full-depth MAP and nDCG are added: the numbers published for standard collections.
    """
    if golden.expect_refusal:
        return {"nonEmptyRefusal": 1.0 if retrieval.context else 0.0,
                "contextChars": float(len(retrieval.context_text()))}
    judgements = dict(golden.grades)
    chunk_docs = retrieval.ranking.doc_ids
    docs = m.collapse_to_documents(chunk_docs)
    out: dict[str, float] = {}
    for k in CUTOFFS:
        out[f"recall@{k}"] = m.recall_at_k(docs, judgements, k)
        out[f"hit@{k}"] = m.hit_rate_at_k(docs, judgements, k)
    out["mrr"] = m.reciprocal_rank(docs, judgements)
    out["ndcg@5"] = m.ndcg_at_k(docs[:5], judgements, 5)  # the same number; only the top k are labelled
    out["ndcg@10"] = m.ndcg_at_k(docs[:10], judgements, 10)
    out["map@10"] = m.average_precision(docs, judgements, 10)
    out["rprec"] = m.r_precision(docs, judgements)
    if config_depth >= DEEP_K:  # a deep run (a standard collection): trec_eval's full-depth measures too
        out[f"recall@{DEEP_K}"] = m.recall_at_k(docs, judgements, DEEP_K)
        out["map"] = m.average_precision(docs, judgements)
        out["ndcg"] = m.ndcg_at_k(docs, judgements)
    relevant = set(golden.relevant_doc_ids)
    out["precision@5"] = m.chunk_precision_at_k(chunk_docs, relevant, 5)
    out[f"contextPrecision@{context_k}"] = m.chunk_precision_at_k([r.doc_id for r in retrieval.context], relevant, context_k)
    out["contextRecall"] = m.recall_at_k(m.collapse_to_documents([r.doc_id for r in retrieval.context]), judgements, context_k)
    out["contextChars"] = float(len(retrieval.context_text()))
    return out


def run_tier(retriever: Retriever, goldens: Sequence[Golden], config: RetrievalConfig) -> TierResult:
    result = TierResult(config)
    for golden in goldens:
        retrieval = retriever.retrieve(golden.query, config)
        result.queries.append(QueryResult(golden, retrieval, query_metrics(golden, retrieval, config.context_k, config.candidate_k)))
    return result


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(queries: Sequence[QueryResult]) -> dict[str, float | None]:
    """The mean of each metric over the questions that have it (summed in question order), by name."""
    values: dict[str, list[float]] = {}
    for q in queries:  # one pass: each metric's values in question order
        for name, value in q.metrics.items():
            values.setdefault(name, []).append(value)
    out = {name: _mean(values[name]) for name in sorted(values)}
    out["questions"] = len(queries)
    return out


def by_tag(queries: Sequence[QueryResult]) -> dict[str, dict[str, float | None]]:
    """`aggregate` per tag, each over its questions in order; the questions are grouped in one pass."""
    tagged: dict[str, list[QueryResult]] = {}
    for q in queries:
        for t in dict.fromkeys(q.golden.tags):  # a tag given twice counts its question once
            tagged.setdefault(t, []).append(q)
    return {t: aggregate(tagged[t]) for t in sorted(tagged)}


def score_distributions(queries: Sequence[QueryResult]) -> dict[str, dict[str, float | None]]:
    """Dense similarity of relevant vs non-relevant candidates (the threshold's evidence)."""
    relevant: list[float] = []
    other: list[float] = []
    refusal: list[float] = []
    for q in queries:  # the top 5 read from the ranking's columns (no row objects)
        ranking = q.retrieval.ranking
        similarities = ranking.similarities[:5]
        if q.golden.expect_refusal:
            refusal.extend(similarities)
            continue
        relevant_ids = q.golden.relevant_doc_ids
        for doc_id, similarity in zip(ranking.doc_ids[:5], similarities):
            (relevant if doc_id in relevant_ids else other).append(similarity)
    return {"relevant": _summary(relevant), "nonRelevant": _summary(other), "refusalTop5": _summary(refusal)}


def _summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0.0, "min": None, "p50": None, "mean": None, "max": None}
    return {"n": float(len(values)), "min": min(values), "p50": percentile(values, 50),
            "mean": sum(values) / len(values), "max": max(values)}


def misses(queries: Sequence[QueryResult], k: int = 5) -> list[dict[str, Any]]:
    """Answerable questions whose relevant documents are not all in the top k, with what came instead."""
    out = []
    for q in queries:
        if q.golden.expect_refusal or q.metrics.get(f"recall@{k}", 1.0) >= 1.0:
            continue
        out.append({"id": q.golden.id, "query": q.golden.query, "expected": list(q.golden.relevant_doc_ids),
                    "retrieved": q.ranked_docs[:k]})
    return out


def quality_section(result: TierResult) -> dict[str, Any]:
    """The deterministic part of the report: byte-identical for identical inputs."""
    return {
        "config": result.config.as_dict(),
        "overall": aggregate(result.queries),
        "byTag": by_tag(result.queries),
        "scoreDistributions": score_distributions(result.queries),
        "misses": misses(result.queries),
        "perQuestion": [
            {"id": q.golden.id, "tags": list(q.golden.tags), "metrics": dict(sorted(q.metrics.items())),
             "retrieved": _top_pairs(q.retrieval, 10)}
            for q in result.queries
        ],
    }


def _top_pairs(retrieval: Retrieval, n: int) -> list[list[Any]]:
    """[chunk id, similarity] of the top `n` candidates (`retrieval.top(n)`'s), from the ranking's columns."""
    ranking = retrieval.ranking
    return list(map(list, zip(ranking.chunk_ids[:n], ranking.similarities[:n])))


def timing_section(result: TierResult) -> dict[str, Any]:
    latencies = [q.retrieval.latency_ms for q in result.queries]
    if not latencies:
        return {"queries": 0}
    return {"queries": len(latencies), "latencyP50Ms": percentile(latencies, 50),
            "latencyP95Ms": percentile(latencies, 95)}  # full precision; rounded at display
