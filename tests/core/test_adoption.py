from dataclasses import replace

import pytest

from ragqual.core.adoption import PRIORITY, SLACK, decide
from ragqual.errors import InputError


def metrics(recall5, ndcg10, mrr, map10, **extra):
    return {"recall@5": recall5, "ndcg@10": ndcg10, "mrr": mrr, "map@10": map10, **extra}


# The retrieval table from the adoption-rule change: dense is the baseline.
DENSE = metrics(1.0000, 0.9437, 0.9278, 0.9222, **{"recall@1": 0.8333})
SPARSE = metrics(0.8667, 0.8184, 0.8056, 0.8000, **{"recall@1": 0.7333})
HYBRID = metrics(1.0000, 0.9561, 0.9444, 0.9389, **{"recall@1": 0.8667})


def test_priority_order():
    assert PRIORITY == ("recall@5", "ndcg@10", "mrr", "map@10")


def test_seed_table_saturated_recall_lets_ndcg_decide_and_hybrid_clears():
    verdict = decide(DENSE, {"sparse": SPARSE, "hybrid": HYBRID})
    assert verdict.saturated == ("recall@5",)
    assert verdict.deciding_metric == "ndcg@10"
    assert verdict.best == "hybrid"
    hybrid = verdict.outcomes["hybrid"]
    assert hybrid.cleared
    assert hybrid.gain == pytest.approx(0.9561 - 0.9437)
    assert hybrid.regressions == {}
    sparse = verdict.outcomes["sparse"]
    assert not sparse.cleared
    assert "regresses recall@5 by 0.1333" in sparse.reason
    assert set(sparse.regressions) == set(PRIORITY)
    assert "does not improve" not in sparse.reason  # the regression already says it
    assert "recall@5" in verdict.sentence and "ndcg@10" in verdict.sentence
    assert "hybrid clears" in verdict.sentence
    assert "never changes a default" in verdict.sentence


def test_saturation_detects_every_metric_at_maximum_within_slack():
    base = metrics(1.0, 0.9999999999999999, 0.8, 1.0)
    verdict = decide(base, {})
    assert verdict.saturated == ("recall@5", "ndcg@10", "map@10")
    assert verdict.deciding_metric == "mrr"


def test_first_metric_with_headroom_decides_even_if_a_later_one_gains_more():
    base = metrics(0.8, 0.7, 0.6, 0.5)
    small_recall_gain = metrics(0.81, 0.7, 0.6, 0.5)
    big_mrr_gain = metrics(0.8, 0.7, 0.9, 0.9)
    verdict = decide(base, {"a": small_recall_gain, "b": big_mrr_gain})
    assert verdict.deciding_metric == "recall@5"
    assert verdict.outcomes["a"].cleared
    assert not verdict.outcomes["b"].cleared
    assert "does not improve recall@5" in verdict.outcomes["b"].reason
    assert verdict.best == "a"


def test_a_trade_that_regresses_another_metric_is_refused():
    base = metrics(0.8, 0.7, 0.6, 0.5)
    trade = metrics(0.9, 0.7, 0.5877, 0.5)
    outcome = decide(base, {"trade": trade}).outcomes["trade"]
    assert not outcome.cleared
    assert outcome.gain == pytest.approx(0.1)
    assert outcome.reason == "regresses mrr by 0.0123"
    assert outcome.regressions == {"mrr": pytest.approx(0.0123)}


def test_regressing_a_saturated_metric_is_also_refused():
    base = metrics(1.0, 0.7, 0.6, 0.5)
    drops_recall = metrics(0.95, 0.8, 0.6, 0.5)
    outcome = decide(base, {"c": drops_recall}).outcomes["c"]
    assert not outcome.cleared
    assert "regresses recall@5 by 0.0500" in outcome.reason


def test_float_noise_is_neither_a_gain_nor_a_regression():
    base = metrics(0.8, 0.7, 0.6, 0.5)
    noisy_gain = metrics(0.8 + 1e-12, 0.7, 0.6, 0.5)
    noisy_drop_elsewhere = metrics(0.85, 0.7 - 1e-12, 0.6, 0.5)
    verdict = decide(base, {"noise": noisy_gain, "real": noisy_drop_elsewhere})
    assert not verdict.outcomes["noise"].cleared
    assert verdict.outcomes["real"].cleared
    assert verdict.outcomes["real"].regressions == {}


def test_gain_just_beyond_the_slack_clears():
    base = metrics(0.5, 0.5, 0.5, 0.5)
    verdict = decide(base, {"tiny": metrics(0.5 + 10 * SLACK, 0.5, 0.5, 0.5)})
    assert verdict.outcomes["tiny"].cleared


def test_baseline_against_itself_does_not_clear():
    verdict = decide(DENSE, {"dense": dict(DENSE)})
    outcome = verdict.outcomes["dense"]
    assert not outcome.cleared
    assert outcome.gain == 0.0
    assert "does not improve ndcg@10" in outcome.reason
    assert verdict.best is None
    assert "No candidate clears" in verdict.sentence


def test_all_saturated_has_no_deciding_metric_and_nothing_clears():
    perfect = metrics(1.0, 1.0, 1.0, 1.0)
    verdict = decide(perfect, {"same": dict(perfect), "worse": metrics(1.0, 0.9, 1.0, 1.0)})
    assert verdict.saturated == PRIORITY
    assert verdict.deciding_metric is None
    assert verdict.best is None
    assert not any(o.cleared for o in verdict.outcomes.values())
    assert verdict.outcomes["same"].gain is None
    assert "regresses ndcg@10 by 0.1000" in verdict.outcomes["worse"].reason
    assert "Every priority metric is saturated" in verdict.sentence
    assert "never changes a default" in verdict.sentence


def test_best_candidate_has_the_largest_gain_on_the_deciding_metric():
    base = metrics(0.6, 0.5, 0.5, 0.5)
    verdict = decide(
        base,
        {
            "small": metrics(0.65, 0.5, 0.5, 0.5),
            "large": metrics(0.75, 0.5, 0.5, 0.5),
            "larger_but_regresses": metrics(0.9, 0.49, 0.5, 0.5),
            "medium": metrics(0.7, 0.6, 0.6, 0.6),
        },
    )
    assert [n for n, o in verdict.outcomes.items() if o.cleared] == ["small", "large", "medium"]
    assert verdict.best == "large"
    assert "large clears" in verdict.sentence
    assert "also clearing: small, medium" in verdict.sentence


def test_tie_on_gain_goes_to_the_first_listed():
    base = metrics(0.6, 0.5, 0.5, 0.5)
    verdict = decide(base, {"first": metrics(0.7, 0.5, 0.5, 0.5), "second": metrics(0.7, 0.6, 0.5, 0.5)})
    assert verdict.best == "first"


def test_missing_or_non_finite_metrics_are_input_errors():
    with pytest.raises(InputError, match="map@10"):
        decide({"recall@5": 1.0, "ndcg@10": 1.0, "mrr": 1.0}, {})
    with pytest.raises(InputError, match="'hybrid'"):
        decide(DENSE, {"hybrid": {"recall@5": 1.0}})
    with pytest.raises(InputError):
        decide(metrics(float("nan"), 0.5, 0.5, 0.5), {})
    with pytest.raises(InputError):
        decide(DENSE, {}, priority=())


def test_with_evidence_says_when_the_rule_clears_on_point_estimates_only():
    from ragqual.core.adoption import PairedEvidence, with_evidence

    rule = decide(DENSE, {"sparse": SPARSE, "hybrid": HYBRID})
    weak = PairedEvidence("randomization", 155, 0.0124, -0.004, 0.029, 0.127, 0.021, "inconclusive")
    said = with_evidence(rule, {"hybrid": weak, "sparse": replace(weak, delta=-0.125, verdict="regression")})
    assert said.best == "hybrid" and said.outcomes["hybrid"].cleared  # the rule itself is unchanged
    assert ("hybrid clears the rule on point estimates only: the paired test of ndcg@10 is inconclusive "
            "(p = 0.1270, interval [-0.004, +0.029]); the gain is below the minimum detectable effect (0.021)"
            ) in said.sentence
    assert said.sentence.endswith("a separate, deliberate change.")
    assert "95% interval [-0.004, +0.029], p = 0.1270, MDE 0.021: inconclusive" in said.outcomes["hybrid"].reason
    assert "point estimates" not in said.outcomes["sparse"].reason  # sparse does not clear
    strong = with_evidence(rule, {"hybrid": replace(weak, p_value=0.001, ci_low=0.005, verdict="improvement")})
    assert "The paired test agrees for hybrid" in strong.sentence and "point estimates only" not in strong.sentence
