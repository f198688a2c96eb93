"""Hand-computed checks of each IR kernel, of evaluate's trec_eval semantics and of the
TREC text formats. Every expected number is worked out in the comment next to it."""

from __future__ import annotations

import math

import pytest

from ragqual.core import metrics
from ragqual.core.metrics import (
    average_precision,
    bpref,
    chunk_precision_at_k,
    collapse_to_documents,
    evaluate,
    evaluate_reference,
    hit_rate_at_k,
    mean_scores,
    ndcg_at_k,
    parse_measure,
    precision_at_k,
    r_precision,
    rank_documents,
    recall_at_k,
    reciprocal_rank,
)
from ragqual.core.trec import (
    expand_measures,
    format_qrels,
    format_run,
    format_trec_eval,
    parse_qrels,
    parse_run,
    parse_run_tag,
)
from ragqual.errors import InputError, ValidationFailed

# The running example. Relevant at level 1: d1, d3, d6 (R = 3); judged non-relevant: d5, d7;
# d2 and d4 are not in the judgements. d6 is relevant but never retrieved.
JUDGED = {"d1": 1, "d3": 2, "d5": 0, "d6": 1, "d7": 0}
RANKED = ["d1", "d2", "d3", "d4", "d5"]


# --- ranking -----------------------------------------------------------------------------


def test_rank_by_score_then_doc_id_descending():
    # b has the top score; a, c and B tie at 1.0 and go by descending byte order: c > a > B
    assert rank_documents({"a": 1.0, "b": 2.0, "c": 1.0, "B": 1.0}) == ["b", "c", "a", "B"]


def test_tie_order_is_by_bytes_not_numbers_or_locale():
    # '9' > '1' byte-wise, so doc9 outranks doc10; 'é' is 0xC3 0xA9 in UTF-8, above 'z' (0x7A)
    assert rank_documents({"doc10": 0.5, "doc9": 0.5}) == ["doc9", "doc10"]
    assert rank_documents({"z": 0.0, "\u00e9": 0.0}) == ["\u00e9", "z"]


def test_nan_scores_are_refused():
    with pytest.raises(InputError):
        rank_documents({"a": float("nan")})
    with pytest.raises(InputError):
        evaluate({"q": {"a": 1}}, {"q": {"a": float("nan")}}, ["map"])


# --- kernels -----------------------------------------------------------------------------


def test_precision_pads_short_rankings_with_misses():
    assert precision_at_k(RANKED, JUDGED, 1) == 1.0  # d1
    assert precision_at_k(RANKED, JUDGED, 3) == pytest.approx(2 / 3)  # d1, d3
    assert precision_at_k(RANKED, JUDGED, 10) == pytest.approx(2 / 10)  # 5 retrieved, 10 slots


def test_recall_counts_unretrieved_relevant_documents():
    assert recall_at_k(RANKED, JUDGED, 1) == pytest.approx(1 / 3)  # d1 of {d1, d3, d6}
    assert recall_at_k(RANKED, JUDGED, 5) == pytest.approx(2 / 3)  # d6 never retrieved


def test_hit_rate():
    assert hit_rate_at_k(["d2", "d3"], JUDGED, 1) == 0.0  # d2 is unjudged
    assert hit_rate_at_k(["d2", "d3"], JUDGED, 2) == 1.0


def test_reciprocal_rank():
    assert reciprocal_rank(RANKED, JUDGED) == 1.0
    assert reciprocal_rank(["d2", "d5", "d3"], JUDGED) == pytest.approx(1 / 3)
    assert reciprocal_rank(["d2", "d5"], JUDGED) == 0.0


def test_average_precision_divides_by_all_relevant():
    # hits at rank 1 (P=1/1) and rank 3 (P=2/3); R = 3 -> (1 + 2/3) / 3 = 5/9
    assert average_precision(RANKED, JUDGED) == pytest.approx(5 / 9)
    # cut at 1: only the hit at rank 1 -> 1 / 3
    assert average_precision(RANKED, JUDGED, 1) == pytest.approx(1 / 3)


def test_ndcg_uses_raw_labels_and_the_known_relevant_set():
    # DCG: d1 gain 1 / log2(2) + d3 gain 2 / log2(4) = 1 + 1 = 2
    # ideal: labels 2, 1, 1 -> 2/1 + 1/log2(3) + 1/log2(4) = 2.5 + 0.6309...
    ideal = 2 + 1 / math.log2(3) + 0.5
    assert ndcg_at_k(RANKED, JUDGED) == pytest.approx(2 / ideal)
    # at 2: DCG = 1 (d1), ideal = 2 + 1/log2(3)
    assert ndcg_at_k(RANKED, JUDGED, 2) == pytest.approx(1 / (2 + 1 / math.log2(3)))
    assert ndcg_at_k(["d3", "d1", "d6"], JUDGED) == pytest.approx(1.0)


def test_r_precision():
    # R = 3, top 3 = d1, d2, d3 -> 2 relevant -> 2/3
    assert r_precision(RANKED, JUDGED) == pytest.approx(2 / 3)


def test_bpref_counts_judged_nonrelevant_ranked_above():
    # no judged non-relevant above d1 or d3 -> (1 + 1) / 3
    assert bpref(RANKED, JUDGED) == pytest.approx(2 / 3)
    # d5 above d1: 1 - 1/min(2, 3) = 1/2; d5 and d7 above d3: 1 - 2/2 = 0 -> 0.5 / 3
    assert bpref(["d5", "d1", "d7", "d3"], JUDGED) == pytest.approx(1 / 6)


def test_relevance_level_two():
    # only d3 (label 2) is relevant; it sits at rank 3
    assert precision_at_k(RANKED, JUDGED, 3, relevance_level=2) == pytest.approx(1 / 3)
    assert average_precision(RANKED, JUDGED, relevance_level=2) == pytest.approx(1 / 3)
    # judged non-relevant are now d1, d5, d6, d7; d1 is above d3 -> 1 - min(1,1)/min(4,1) = 0
    assert bpref(RANKED, JUDGED, relevance_level=2) == 0.0
    # nDCG keeps raw gains whatever the level, as trec_eval does
    plain = evaluate({"q": JUDGED}, {"q": {"d1": 3.0, "d3": 2.0}}, ["ndcg"])
    level2 = evaluate({"q": JUDGED}, {"q": {"d1": 3.0, "d3": 2.0}}, ["ndcg"], relevance_level=2)
    assert plain == level2


def test_negative_labels_are_pooled_but_unjudged():
    judged = {"a": -1, "b": 1, "c": 0}
    ranked = ["a", "c", "b"]
    assert precision_at_k(ranked, judged, 3) == pytest.approx(1 / 3)
    # a is skipped; c is judged non-relevant above b: 1 - min(1,1)/min(1,1) = 0
    assert bpref(ranked, judged) == 0.0
    # b (gain 1) at rank 3: 1/log2(4) = 0.5 over an ideal of 1
    assert ndcg_at_k(ranked, judged) == pytest.approx(0.5)


def test_a_topic_without_relevant_documents_scores_zero_everywhere():
    judged = {"x": 0, "y": 0}
    ranked = ["x", "y"]
    for kernel in (reciprocal_rank, average_precision, ndcg_at_k, r_precision, bpref):
        assert kernel(ranked, judged) == 0.0
    assert recall_at_k(ranked, judged, 2) == 0.0


def test_cutoffs_below_one_are_refused():
    with pytest.raises(InputError):
        precision_at_k(RANKED, JUDGED, 0)


# --- chunks and documents ----------------------------------------------------------------


def test_collapse_keeps_the_rank_of_the_first_chunk():
    assert collapse_to_documents(["A", "A", "B", "A", "C", "B"]) == ["A", "B", "C"]


def test_chunk_precision_does_not_deduplicate():
    # five chunks of wrong document W fill five of the top 6 slots: 1 / 6
    ranked = ["W", "W", "R", "W", "W", "W"]
    assert chunk_precision_at_k(ranked, {"R"}, 6) == pytest.approx(1 / 6)
    # the same ranking collapsed: W, R -> R is one of 2 documents
    assert collapse_to_documents(ranked) == ["W", "R"]


# --- evaluate ------------------------------------------------------------------------------

QRELS = {
    "q1": {"a": 1, "b": 0, "c": 1},
    "q2": {"a": 0},  # no relevant document
    "q3": {"z": 1},  # not in the run
}
RUN = {
    "q1": {"a": 0.9, "b": 0.8, "c": 0.1},  # a, b, c
    "q2": {"a": 1.0},
    "q9": {"a": 1.0},  # not in the qrels: ignored
}


@pytest.mark.parametrize("evaluator", [evaluate, evaluate_reference])
def test_only_queries_in_both_are_scored_and_empty_topics_count(evaluator):
    results = evaluator(QRELS, RUN, ["map", "P_2", "num_ret"])
    assert list(results) == ["q1", "q2"]
    # q1: hits at 1 and 3 -> (1 + 2/3) / 2 = 5/6; q2 has nothing relevant -> 0
    assert results["q1"]["map"] == pytest.approx(5 / 6)
    assert results["q2"]["map"] == 0.0
    means = mean_scores(results)
    assert means["map"] == pytest.approx(5 / 12)
    assert means["P_2"] == pytest.approx((1 / 2 + 0) / 2)
    assert means["num_ret"] == 4  # counts are summed: 3 + 1


@pytest.mark.parametrize("evaluator", [evaluate, evaluate_reference])
def test_complete_averages_over_every_qrels_query(evaluator):
    results = evaluator(QRELS, RUN, ["map", "num_rel", "num_q"], complete=True)
    assert list(results) == ["q1", "q2", "q3"]
    assert results["q3"] == {"map": 0.0, "num_rel": 1.0, "num_q": 1.0}
    means = mean_scores(results)
    assert means["map"] == pytest.approx(5 / 18)
    assert means["num_q"] == 3


@pytest.mark.parametrize("evaluator", [evaluate, evaluate_reference])
def test_max_docs_cuts_each_ranking(evaluator):
    # with 2 documents, q1 only finds a: AP = 1/2, Rprec (R=2) = 1/2, num_ret = 2
    results = evaluator(QRELS, RUN, ["map", "Rprec", "num_ret"], max_docs=2)
    assert results["q1"] == {"map": 0.5, "Rprec": 0.5, "num_ret": 2.0}


def test_a_query_with_an_empty_ranking_is_not_in_the_run():
    assert list(evaluate(QRELS, {"q1": {}, "q2": {"a": 1.0}}, ["map"])) == ["q2"]


def test_measure_names():
    assert parse_measure("ndcg_cut_10") == metrics.Measure("ndcg_cut_10", "ndcg_cut", 10)
    assert parse_measure("success_3").k == 3
    for bad in ("P_0", "P", "ndcg@10", "MAP", "recall_x"):
        with pytest.raises(InputError):
            parse_measure(bad)
    with pytest.raises(InputError):
        evaluate(QRELS, RUN, "map")  # a string, not a sequence of names


def test_bad_options_are_refused():
    with pytest.raises(InputError):
        evaluate(QRELS, RUN, ["map"], relevance_level=-1)
    with pytest.raises(InputError):
        evaluate(QRELS, RUN, ["map"], max_docs=-5)


# --- TREC formats --------------------------------------------------------------------------


def test_parse_qrels_and_run_skip_comments_and_blank_lines():
    qrels = parse_qrels("# judged by hand\n\nq1 0 a 2\nq1 0 b#1 0\n", "q.txt")
    assert qrels == {"q1": {"a": 2, "b#1": 0}}
    run = parse_run("  # header\nq1 Q0 a 1 0.5 tag extra words\nq1\tQ0\tb 2 -1e-3 tag\n", "r.txt")
    assert run == {"q1": {"a": 0.5, "b": -0.001}}


def test_malformed_qrels_report_every_line():
    text = "q1 0 a 1\nq1 0 b\nq1 0 c high\nq1 0 a 0\nq1 0 d 1 extra\n"
    with pytest.raises(ValidationFailed) as caught:
        parse_qrels(text, "q.txt")
    assert [(i.file, i.line) for i in caught.value.issues] == [("q.txt", n) for n in (2, 3, 4, 5)]
    assert "twice" in caught.value.issues[2].message


def test_malformed_run_report_every_line():
    text = (
        "q1 Q0 a 1 0.5 t\n"
        "q1 Q0 b 2 t\n"  # five fields
        "q1 Q0 c 3 abc t\n"
        "q1 Q0 a 4 0.1 t\n"  # a again
        "q1 Q0 e 5 nan t\n"
        "q1 Q0 f 6 1_0 t\n"  # Python's float() would take this; trec_eval would read 1
    )
    with pytest.raises(ValidationFailed) as caught:
        parse_run(text, "r.txt")
    assert [i.line for i in caught.value.issues] == [2, 3, 4, 5, 6]


def test_run_tag_is_the_last_lines():
    assert parse_run_tag("q1 Q0 a 1 1 first\nq2 Q0 a 1 1 second\n") == "second"
    assert parse_run_tag("") is None


def test_run_and_qrels_round_trip_through_text():
    run = {"q2": {"x": 0.1 + 0.2, "y": 1e-300}, "q1": {"a": 1.0, "b": 1.0, "c": 3.5}}
    text = format_run(run, "mytag")
    # q1 first; within it c (3.5), then the tie b, a by doc id descending
    assert text.splitlines()[:3] == ["q1 Q0 c 1 3.5 mytag", "q1 Q0 b 2 1.0 mytag", "q1 Q0 a 3 1.0 mytag"]
    assert parse_run(text, "r") == run
    qrels = {"q1": {"b": 0, "a": 2}}
    assert format_qrels(qrels) == "q1 0 a 2\nq1 0 b 0\n"
    assert parse_qrels(format_qrels(qrels), "q") == qrels


def test_ids_with_white_space_cannot_be_written():
    with pytest.raises(InputError):
        format_run({"q 1": {"a": 1.0}}, "t")
    with pytest.raises(InputError):
        format_qrels({"q1": {"a b": 1}})
    with pytest.raises(InputError):
        format_run({"q1": {"a": 1.0}}, "my tag")


def test_expand_measures_follows_trec_eval_m_syntax():
    assert expand_measures(["map", "P.5,10", "success", "map"]) == [
        "map", "P_5", "P_10", "success_1", "success_5", "success_10"
    ]
    assert expand_measures(["ndcg_cut"])[-1] == "ndcg_cut_1000"
    with pytest.raises(InputError):
        expand_measures(["map.5"])
    with pytest.raises(InputError):
        expand_measures(["P.0"])


def test_trec_eval_report_layout():
    results = {
        "q2": {"map": 0.25, "num_ret": 3.0, "num_q": 1.0},
        "q10": {"map": 1 / 3, "num_ret": 1.0, "num_q": 1.0},
    }
    text = format_trec_eval(results, mean_scores(results), ["num_q", "num_ret", "map"], True, run_id="R")
    # queries in byte order (q10 < q2), num_q only in the summary, names padded to 22
    assert text == (
        "num_ret               \tq10\t1\n"
        "map                   \tq10\t0.3333\n"
        "num_ret               \tq2\t3\n"
        "map                   \tq2\t0.2500\n"
        "runid                 \tall\tR\n"
        "num_q                 \tall\t2\n"
        "num_ret               \tall\t4\n"
        "map                   \tall\t0.2917\n"
    )
