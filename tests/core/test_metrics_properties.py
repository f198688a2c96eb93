"""Properties of the IR metrics, checked on generated rankings and judgements."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from ragqual.core import metrics
from ragqual.core.metrics import evaluate, evaluate_reference, ndcg_at_k, rank_documents, recall_at_k

DOC_IDS = st.sampled_from(["a", "b", "B", "c", "d1", "d10", "d9", "\u00e9", "z", "zz", "0"])
SCORES = st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, -3.0, 1e300])  # few values: many ties
LABELS = st.integers(min_value=-1, max_value=4)

judgements_st = st.dictionaries(DOC_IDS, LABELS, max_size=8)
scores_st = st.dictionaries(DOC_IDS, SCORES, max_size=11)
QIDS = st.sampled_from(["q1", "q2", "q10", "Q", "x"])
qrels_st = st.dictionaries(QIDS, judgements_st, max_size=5)
run_st = st.dictionaries(QIDS, scores_st, max_size=5)

MEASURES = ["map", "map_cut_3", "P_1", "P_4", "recall_2", "recall_20", "success_1", "success_5",
            "recip_rank", "ndcg", "ndcg_cut_1", "ndcg_cut_3", "ndcg_cut_50", "Rprec", "bpref",
            "num_q", "num_ret", "num_rel", "num_rel_ret"]


@given(scores_st, judgements_st, st.integers(1, 12), st.integers(0, 3))
def test_recall_never_falls_as_k_grows(scores, judgements, k, level):
    ranked = rank_documents(scores)
    shallow = recall_at_k(ranked, judgements, k, relevance_level=level)
    deeper = recall_at_k(ranked, judgements, k + 1, relevance_level=level)
    assert 0.0 <= shallow <= deeper <= 1.0


@given(scores_st, judgements_st, st.one_of(st.none(), st.integers(1, 12)))
def test_ndcg_lies_in_the_unit_interval(scores, judgements, k):
    assert 0.0 <= ndcg_at_k(rank_documents(scores), judgements, k) <= 1.0


@given(scores_st, st.randoms(use_true_random=False))
def test_insertion_order_does_not_change_the_ranking(scores, random):
    items = list(scores.items())
    random.shuffle(items)
    assert rank_documents(dict(items)) == rank_documents(scores)


@given(scores_st)
def test_ranking_is_score_descending_then_doc_id_descending(scores):
    ranked = rank_documents(scores)
    for upper, lower in pairwise(ranked):
        assert scores[upper] > scores[lower] or (scores[upper] == scores[lower] and upper > lower)


@given(qrels_st, run_st, st.randoms(use_true_random=False))
def test_shuffling_the_run_does_not_change_the_scores(qrels, run, random):
    shuffled = {}
    for qid, scores in run.items():
        items = list(scores.items())
        random.shuffle(items)
        shuffled[qid] = dict(items)
    assert evaluate(qrels, shuffled, MEASURES) == evaluate(qrels, run, MEASURES)


@settings(max_examples=300)
@given(
    qrels_st,
    run_st,
    st.integers(0, 3),
    st.one_of(st.none(), st.integers(0, 6)),
    st.booleans(),
)
def test_batch_path_equals_per_query_kernels(qrels, run, level, max_docs, complete):
    options = {"relevance_level": level, "max_docs": max_docs, "complete": complete}
    assert evaluate(qrels, run, MEASURES, **options) == evaluate_reference(qrels, run, MEASURES, **options)


@settings(max_examples=60)
@given(qrels_st, run_st, st.integers(0, 2))
def test_batch_path_split_into_small_blocks_gives_the_same_scores(qrels, run, level):
    # a tiny cell budget forces one padded matrix per group of short queries
    original = metrics._CELL_BUDGET
    metrics._CELL_BUDGET = 8
    try:
        split = evaluate(qrels, run, MEASURES, relevance_level=level)
    finally:
        metrics._CELL_BUDGET = original
    assert split == evaluate_reference(qrels, run, MEASURES, relevance_level=level)
