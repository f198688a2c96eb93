"""The metric-name registry: lookups, direction, display order, tiers (pure, no I/O).

The expected values are written out by hand here, independently of the registry's own tables."""

import pytest

from ragqual.core import metric_names as mn
from ragqual.core.metric_names import Direction, Tier
from ragqual.core.trec import expand_measures


@pytest.mark.parametrize("name, registered_as", [
    ("recall@5", "recall@5"),  # a concrete entry wins over its family
    ("recall@100", "recall@{k}"),
    ("hit@7", "hit@{k}"),
    ("contextPrecision@3", "contextPrecision@{k}"),
    ("contextPrecision@12", "contextPrecision@{k}"),
    ("P_5", "P_{k}"),
    ("ndcg_cut_10", "ndcg_cut_{k}"),
    ("recip_rank", "recip_rank"),
    ("map", "map"),
    ("score", "score"),
])
def test_lookup_finds_concrete_names_and_families(name, registered_as):
    metric = mn.lookup(name)
    assert metric is not None and metric.name == registered_as


@pytest.mark.parametrize("name", ["recall@0", "recall@", "recall@k", "recall@five", "P5", "ndcg_cut_",
                                  "Recall@5", "label_correct", ""])
def test_lookup_refuses_what_is_not_a_registered_name(name):
    assert mn.lookup(name) is None and not mn.is_registered(name)


def test_lower_is_better_exactly_for_leaks_refusal_hits_and_sizes():
    lower = {m.name for m in mn.METRICS if m.direction is Direction.LOWER}
    assert lower == {"leakage", "thinkTagLeak", "nonEmptyRefusal", "contextChars"}
    assert mn.lower_is_better("thinkTagLeak") and mn.direction("contextChars") is Direction.LOWER
    assert mn.direction("mrr") is Direction.HIGHER and mn.direction("recall@100") is Direction.HIGHER


def test_an_unregistered_name_reads_as_higher_is_better():
    # a subject's own metric (the sentiment subject's label_correct) is a quality
    assert mn.direction("label_correct") is Direction.HIGHER and not mn.lower_is_better("label_correct")


def test_binary_and_informational_flags():
    assert all(mn.is_binary(n) for n in ("pass", "correctness", "refusalCorrectness", "leakage", "thinkTagLeak",
                                         "nonEmptyRefusal", "hit@5", "hit@7", "success_10"))
    assert not any(mn.is_binary(n) for n in ("score", "groundedness", "recall@5", "mrr", "label_correct"))
    assert mn.is_informational("contextChars") and mn.is_informational("num_rel_ret")
    assert not mn.is_informational("mrr") and not mn.is_informational("nonEmptyRefusal")


def test_the_default_gate_of_strategy_groups():
    assert mn.gated_names() == ("recall@1", "recall@5", "hit@5", "mrr", "ndcg@10", "map@10", "precision@5",
                                "contextRecall", "nonEmptyRefusal")
    assert not mn.is_gated("recall@3") and not mn.is_gated("contextChars") and not mn.is_gated("score")


def test_display_order_listed_then_by_name_then_sizes_last():
    names = ["zeta", "contextChars", "nonEmptyRefusal", "recall@100", "map", "pass", "contextPrecision@5",
             "hit@5", "score", "mrr", "recall@1", "correctness", "contextPrecision@3", "ndcg@10", "ndcg@10"]
    assert mn.display_order(names) == [
        "recall@1", "hit@5", "mrr", "ndcg@10", "score", "pass", "correctness",
        "contextPrecision@3", "contextPrecision@5",
        "map", "recall@100", "zeta",
        "contextChars", "nonEmptyRefusal",
    ]


def test_display_order_of_every_concrete_retrieval_and_generation_name():
    given = ["thinkTagLeak", "groundedness", "leakage", "refusalCorrectness", "correctness", "pass", "score",
             "contextRecall", "precision@5", "rprec", "map@10", "ndcg@10", "ndcg@5", "mrr", "hit@10", "hit@5",
             "hit@3", "hit@1", "recall@10", "recall@5", "recall@3", "recall@1"]
    assert mn.display_order(given) == list(reversed(given))


def test_tiers():
    assert {m.name for m in mn.metrics_for(Tier.ENGINE)} == {"score", "pass"}
    assert {m.name for m in mn.metrics_for(Tier.GENERATION)} == {
        "correctness", "refusalCorrectness", "leakage", "groundedness", "factCoverage", "readerCeiling", "thinkTagLeak"}
    assert mn.tier("contextChars") is Tier.RETRIEVAL and mn.tier("ndcg_cut_5") is Tier.RETRIEVAL
    assert mn.tier("label_correct") is None


def test_names_are_unique_and_families_carry_a_cutoff():
    names = [m.name for m in mn.METRICS]
    assert len(names) == len(set(names))
    assert all(m.is_family == ("{k}" in m.name) for m in mn.METRICS)


@pytest.mark.parametrize("screen", [
    mn.RETRIEVAL_HEADLINE, mn.DEEP_HEADLINE, mn.ADOPTION_PRIORITY, mn.SWEEP_COLUMNS, mn.EVAL_SUMMARY,
    mn.CASE_METRICS, mn.FLIP_METRICS, mn.PAGE_QUESTION_METRICS, *mn.HISTORY_HEADLINES.values(),
])
def test_every_screen_shows_registered_names_only(screen):
    assert [n for n in screen if not mn.is_registered(n)] == []


def test_the_screens_hold_their_documented_columns():
    assert mn.RETRIEVAL_HEADLINE == ("recall@1", "recall@5", "contextRecall", "hit@5", "mrr", "ndcg@10", "map@10",
                                     "precision@5", "nonEmptyRefusal")
    assert mn.DEEP_HEADLINE == ("map", "ndcg@10", "ndcg", "recall@5", "recall@10", "recall@100", "mrr",
                                "precision@5")
    assert mn.HISTORY_HEADLINES["retrieval"] == ("recall@5", "contextRecall", "ndcg@10", "mrr")
    assert mn.HISTORY_HEADLINES["generation"] == ("score", "pass", "correctness", "contextRecall")


def test_every_trec_eval_measure_ragqual_computes_is_registered():
    measures = expand_measures(["all_trec"])
    assert "P_5" in measures and "ndcg_cut_1000" in measures
    assert [m for m in measures if not mn.is_registered(m)] == []
