"""The vectorised batch path (`evaluate`) against the per-query kernels (`evaluate_reference`) on
seeded random inputs, float by float to the last bit.

The inputs aim at what the batch path does differently: rows sorted one by one with padding
after short rankings (so -inf scores tie with the padding), tied runs put in doc id order pairwise
(runs of two) or by one ranking of every name (long runs), judged non-relevant documents merged
with unjudged ones unless bpref is asked, MAP summed over the relevant cells only, and queries
grouped into blocks when the padded matrix would be too large.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ragqual.core import metrics
from ragqual.core.metrics import evaluate, evaluate_reference

WITH_BPREF = ["map", "map_cut_3", "P_1", "P_5", "recall_2", "recall_50", "success_1", "success_10", "recip_rank",
              "ndcg", "ndcg_cut_1", "ndcg_cut_5", "ndcg_cut_200", "Rprec", "bpref", "num_q", "num_ret", "num_rel",
              "num_rel_ret"]
WITHOUT_BPREF = [m for m in WITH_BPREF if m != "bpref"]
BENCH_MEASURES = ["map", "ndcg_cut_10", "recip_rank", "recall_10"]

# few distinct scores, so many ties; signed zeros and infinities among them
SCORES = np.array([0.0, -0.0, 0.5, 1.0, 1.0 + 2**-52, 2.5, -3.0, 1e300, -1e300, np.inf, -np.inf])
NAMES = ["a", "b", "B", "c", "d1", "d10", "d9", "\u00e9", "\u00e9a", "z", "zz", "0", "~", "a b", "\U0001f600"]


def bits(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, str]]:
    """Every value as its IEEE-754 bytes: -0.0 and 0.0 differ, as any last bit does."""
    return {q: {m: struct.pack("<d", v).hex() for m, v in row.items()} for q, row in scores.items()}


def random_case(rng: np.random.Generator, topics: int, max_docs: int) -> tuple[dict, dict]:
    """qrels and run over `topics` query ids: some queries only in one of them, some rankings
    empty, lengths from 0 to `max_docs`, graded labels from -1 (pooled, unjudged) to 4."""
    pool = [*NAMES, *(f"doc{i}" for i in range(3 * max_docs))]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for t in range(topics):
        qid = f"q{t}"
        if rng.random() < 0.85:
            judged = rng.choice(len(pool), size=int(rng.integers(0, max_docs + 1)), replace=False)
            qrels[qid] = {pool[i]: int(rng.integers(-1, 5)) for i in judged}
        if rng.random() < 0.85:
            retrieved = rng.choice(len(pool), size=int(rng.integers(0, max_docs + 1)), replace=False)
            ties = rng.random() < 0.5  # half the queries draw from the few tie-prone scores
            run[qid] = {pool[i]: float(rng.choice(SCORES)) if ties else float(np.round(rng.normal(), 1))
                        for i in retrieved}
    return qrels, run


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("measures", [WITH_BPREF, WITHOUT_BPREF, BENCH_MEASURES], ids=["bpref", "no-bpref", "bench"])
def test_batch_path_matches_the_per_query_kernels_bit_for_bit(seed, measures):
    rng = np.random.default_rng(seed)
    qrels, run = random_case(rng, topics=40, max_docs=int(rng.choice([3, 12, 60])))
    for level in (0, 1, 2, 3):
        for max_docs in (None, 1, 7):
            for complete in (False, True):
                options = {"relevance_level": level, "max_docs": max_docs, "complete": complete}
                assert bits(evaluate(qrels, run, measures, **options)) == \
                    bits(evaluate_reference(qrels, run, measures, **options)), options


@pytest.mark.parametrize("measures", [WITH_BPREF, WITHOUT_BPREF], ids=["bpref", "no-bpref"])
def test_long_runs_of_ties_and_minus_infinity_against_padding(measures):
    rng = np.random.default_rng(7)
    names = [f"d{i}" for i in range(300)]
    qrels = {"all-tied": {n: int(rng.integers(-1, 3)) for n in names[::2]},
             "minus-inf": {n: int(rng.integers(0, 3)) for n in names[:40]},
             "short": {"d1": 2, "d2": 1}}
    run = {"all-tied": dict.fromkeys(names, 1.0),  # one run of 300: ranked by one sort of the names
           "minus-inf": {n: (-np.inf if i % 3 else 0.5) for i, n in enumerate(names[:50])},
           "short": {"d2": -np.inf, "d1": -np.inf}}  # padded to the block's width, +inf after negation
    for level in (1, 2):
        assert bits(evaluate(qrels, run, measures, relevance_level=level)) == \
            bits(evaluate_reference(qrels, run, measures, relevance_level=level))


@pytest.mark.parametrize("seed", range(4))
def test_blocks_of_uneven_lengths_give_the_same_bits(seed, monkeypatch):
    # a small cell budget splits the queries into several padded blocks, grouped by length
    rng = np.random.default_rng(100 + seed)
    qrels, run = random_case(rng, topics=60, max_docs=80)
    whole = bits(evaluate(qrels, run, WITH_BPREF))
    monkeypatch.setattr(metrics, "_CELL_BUDGET", 500)
    assert bits(evaluate(qrels, run, WITH_BPREF)) == whole == bits(evaluate_reference(qrels, run, WITH_BPREF))


def test_the_benchmark_shape_matches_on_a_slice():
    # the benchmark's data (pools, 30% judged 0-2, scores rounded to 3 decimals) on 300 topics
    rng = np.random.default_rng(20240601)
    pool = np.array([f"d{i}" for i in range(200)])
    qrels, run = {}, {}
    for t in range(300):
        judged = rng.choice(pool, size=60, replace=False)
        qrels[f"q{t}"] = dict(zip(judged.tolist(), rng.choice([0, 0, 1, 2], size=60).tolist()))
        retrieved = rng.choice(pool, size=100, replace=False)
        run[f"q{t}"] = dict(zip(retrieved.tolist(), np.round(rng.random(100), 3).tolist()))
    for measures in (BENCH_MEASURES, WITH_BPREF):
        assert bits(evaluate(qrels, run, measures)) == bits(evaluate_reference(qrels, run, measures))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("measures", [WITH_BPREF, BENCH_MEASURES], ids=["bpref", "bench"])
def test_labels_read_as_bytes_match_the_per_query_kernels(seed, measures):
    # every label 0..127, so labels are read through a bytearray (the -1 of the other cases sends
    # them to np.fromiter); rankings up to 90 long with scores rounded to two decimals, so tied
    # documents sit in both halves of a ranking and their names are read from either end
    rng = np.random.default_rng(300 + seed)
    pool = [*NAMES, *(f"doc{i}" for i in range(150))]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for t in range(30):
        qid = f"q{t}"
        if rng.random() < 0.9:
            judged = rng.choice(len(pool), size=int(rng.integers(0, 60)), replace=False)
            qrels[qid] = {pool[i]: int(rng.choice([0, 0, 1, 2, 3, 127])) for i in judged}
        if rng.random() < 0.9:
            retrieved = rng.choice(len(pool), size=int(rng.integers(0, 91)), replace=False)
            run[qid] = {pool[i]: float(np.round(rng.random() / 4, 2)) for i in retrieved}
    assert metrics._label_arrays([{"d": 127}], [{"d": 0.5, "e": 0.1}], 1, 2)[1].dtype == np.int8
    for level in (0, 1, 2, 127):
        for complete in (False, True):
            options = {"relevance_level": level, "complete": complete}
            assert bits(evaluate(qrels, run, measures, **options)) == \
                bits(evaluate_reference(qrels, run, measures, **options)), options
