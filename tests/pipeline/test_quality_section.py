"""The retrieval tier's quality section: tags grouped in one pass, the top candidates read from the
ranking's columns. The same section as the row-by-row formulation, on inputs built to differ
(a tag given twice, refusal questions, a metric only some questions have, rankings shorter
than the cut-offs), and no `Ranked` row is built for it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ragqual.core.goldens import Golden
from ragqual.core.scoring import percentile
from ragqual.pipeline import retrieval_tier as tier
from ragqual.pipeline.retrieval import Ranking, Retrieval, RetrievalConfig


def _results() -> tier.TierResult:
    rng = random.Random(3)
    queries = []
    for n in range(40):
        refusal = n % 7 == 0
        depth = rng.choice([0, 2, 5, 8, 12])
        chunks = tuple(f"c{rng.randrange(30)}#{i}" for i in range(depth))
        docs = tuple(c.split("#")[0].replace("c", "d") for c in chunks)
        sims = tuple(rng.choice([rng.random(), -0.0, 0.0, 1.0]) for _ in range(depth))
        ranking = Ranking(chunks, docs, tuple(rng.random() for _ in range(depth)), sims, ("src",) * depth)
        tags = rng.sample(["a", "b", "c", "d"], rng.randint(0, 3))
        if n % 5 == 0:
            tags = [*tags, "dup", "dup"]  # a tag given twice
        golden = Golden(f"q{n}", f"question {n}", (), () if refusal else (f"d{rng.randrange(30)}", "d3"),
                        (), (), refusal, tuple(tags))
        metrics = ({"nonEmptyRefusal": 1.0, "contextChars": 3.0} if refusal else
                   {"recall@5": rng.random(), "mrr": rng.random(), "contextChars": float(n)})
        if n % 3 == 0 and not refusal:
            metrics["rprec"] = 0.1 * n  # a metric only some questions have
        queries.append(tier.QueryResult(golden, Retrieval(f"question {n}", ranking, ()), metrics))
    return tier.TierResult(RetrievalConfig(strategy="hybrid"), queries)


def _row_by_row(result: tier.TierResult) -> dict[str, Any]:
    """The section as it was computed before: row objects from `top`, one scan per tag and metric."""
    queries = result.queries

    def aggregate(qs: list[tier.QueryResult]) -> dict[str, float | None]:
        names = sorted({k for q in qs for k in q.metrics})
        out: dict[str, float | None] = {
            name: (lambda v: sum(v) / len(v) if v else None)([q.metrics[name] for q in qs if name in q.metrics])
            for name in names}
        out["questions"] = len(qs)
        return out

    def summary(values: list[float]) -> dict[str, float | None]:
        if not values:
            return {"n": 0.0, "min": None, "p50": None, "mean": None, "max": None}
        return {"n": float(len(values)), "min": min(values), "p50": percentile(values, 50),
                "mean": sum(values) / len(values), "max": max(values)}

    relevant: list[float] = []
    other: list[float] = []
    refusal: list[float] = []
    for q in queries:
        for r in q.retrieval.top(5):
            if q.golden.expect_refusal:
                refusal.append(r.similarity)
            elif r.doc_id in q.golden.relevant_doc_ids:
                relevant.append(r.similarity)
            else:
                other.append(r.similarity)
    tags = sorted({t for q in queries for t in q.golden.tags})
    return {
        "config": result.config.as_dict(),
        "overall": aggregate(queries),
        "byTag": {t: aggregate([q for q in queries if t in q.golden.tags]) for t in tags},
        "scoreDistributions": {"relevant": summary(relevant), "nonRelevant": summary(other),
                               "refusalTop5": summary(refusal)},
        "misses": tier.misses(queries),
        "perQuestion": [
            {"id": q.golden.id, "tags": list(q.golden.tags), "metrics": dict(sorted(q.metrics.items())),
             "retrieved": [[r.chunk_id, r.similarity] for r in q.retrieval.top(10)]}
            for q in queries
        ],
    }


def _exact(value: Any) -> Any:
    """The value with every float as its repr (so -0.0 and 0.0, NaN and NaN compare as written)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return [(k, _exact(v)) for k, v in value.items()]  # key order too
    if isinstance(value, (list, tuple)):
        return [_exact(v) for v in value]
    return value


def test_same_section_as_row_by_row() -> None:
    result = _results()
    assert _exact(tier.quality_section(result)) == _exact(_row_by_row(result))


def test_no_ranked_rows_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The section reads the ranking's columns: no `Ranking.rows` call (fails on the row-by-row code)."""
    result = _results()

    def refused(self: Ranking, limit: int | None = None) -> tuple[Any, ...]:
        raise AssertionError("Ranking.rows called")

    monkeypatch.setattr(Ranking, "rows", refused)
    tier.quality_section(result)
