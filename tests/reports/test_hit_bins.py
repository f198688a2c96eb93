"""The run page's histograms of hit scores on a run with many hits: the bins are counted in Python,
so the page holds a few records per strategy and kind however many hits the run stored."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ragqual.core.histogram import DEFAULT_BINS
from ragqual.reports.run import HIT_KINDS, hits_section
from ragqual.store.records import RankingRow
from ragqual.store.runstore import RunStore
from tests.reports.pages import chart_spec, inline_records
from tests.store.helpers import provenance

QUESTIONS, DEPTH = 20, 1000
REFUSALS = {"q18", "q19"}
# Each strategy's scores on its own scale: cosine (negative too), BM25, fused ranks.
SCALES = {"dense": (-0.2, 0.9), "bm25": (0.0, 31.5), "hybrid": (1 / 1060, 1 / 61)}


def golden(n: int) -> dict:
    query_id = f"q{n}"
    if query_id in REFUSALS:
        return {"id": query_id, "query": "?", "relevantDocIds": [], "expectRefusal": True}
    return {"id": query_id, "query": "?", "relevantDocIds": [f"d{n}-0", f"d{n}-1", f"d{n}-2"]}


@pytest.fixture(scope="module")
def many_hits(tmp_path_factory):
    """A retrieval run of 20 questions x 1000 ranked hits x 3 strategies stored through the RunStore;
    yields (engine, run id, the expected number of hits per (strategy, kind))."""
    store = RunStore.open(f"sqlite:///{tmp_path_factory.mktemp('hits') / 'many.db'}")
    store.record_cases("rag", [(f"q{n}", f"q{n}", golden(n)) for n in range(QUESTIONS)])
    run = store.start_run("retrieval", "rag", provenance())
    rng = np.random.default_rng(3)
    rankings, expected = [], Counter()
    for strategy, (low, high) in SCALES.items():
        for n in range(QUESTIONS):
            docs = [f"d{n}-{r}" for r in range(DEPTH)]
            scores = np.sort(rng.uniform(low, high, DEPTH))[::-1].tolist()
            rankings.append(RankingRow(strategy, f"q{n}", [f"{d}#0" for d in docs], docs, scores))
            relevant = 0 if f"q{n}" in REFUSALS else 3
            expected.update({(strategy, "relevant"): relevant, (strategy, "non-relevant"): DEPTH - relevant}
                            if relevant else {(strategy, "refusal question"): DEPTH})
    store.append_rankings(run, rankings)
    store.add_event(run, "finished")
    yield store.engine, run, expected
    store.engine.dispose()


def test_a_run_of_sixty_thousand_hits_gives_the_page_a_few_hundred_records(many_hits):
    engine, run, expected = many_hits
    [section] = hits_section(engine, run)
    bars = inline_records(chart_spec(section, "similarity"))
    assert len(bars) <= len(SCALES) * len(HIT_KINDS) * DEFAULT_BINS
    assert len(section) < 64 * 1024  # one record per hit would be several MB
    counted = Counter()
    for bar in bars:
        counted[(bar["strategy"], bar["kind"])] += bar["hits"]
    assert counted == expected and sum(counted.values()) == len(SCALES) * QUESTIONS * DEPTH


def test_each_strategy_is_binned_on_its_own_range(many_hits):
    engine, run, _ = many_hits
    bars = inline_records(chart_spec(hits_section(engine, run)[0], "similarity"))
    for strategy, (low, high) in SCALES.items():
        mine = [b for b in bars if b["strategy"] == strategy]
        starts = sorted({b["start"] for b in mine})
        assert low <= starts[0] < starts[1] and max(b["end"] for b in mine) <= high
        widths = [b["end"] - b["start"] for b in mine]
        assert widths == pytest.approx([(high - low) / DEFAULT_BINS] * len(widths), rel=0.05)
        assert widths == pytest.approx([widths[0]] * len(widths), rel=1e-6)  # equal widths
