import numpy as np
import pytest

from ragqual.core.scoring import (
    SCORER_NAME,
    SCORER_VERSION,
    Outcome,
    TrialFigures,
    case_aggregate,
    is_unstable,
    pass_rate,
    percentile,
    score,
    variant_aggregate,
)
from ragqual.errors import InputError


def out(weight, passed, category="ROLE", error=None, aid="a"):
    return Outcome(
        assertion_id=aid, version=1, category=category, weight=weight, passed=passed, error=error
    )


def test_scorer_identity():
    assert SCORER_NAME == "weighted-assertions"
    assert SCORER_VERSION == 1


def test_default_weights_give_passed_over_total():
    result = score([out(1, True), out(1, False), out(1, True), out(1, True)])
    assert result.score == pytest.approx(3 / 4)
    assert not result.perfect


def test_weights_are_relative_importance():
    # (5*1 + 1*0 + 2*1) / (5 + 1 + 2) = 7/8
    result = score([out(5, True), out(1, False), out(2, True)])
    assert result.score == pytest.approx(7 / 8)


def test_empty_assertions_score_one_and_are_perfect():
    result = score([])
    assert result.score == 1.0
    assert result.perfect
    assert result.per_category == {}


def test_all_zero_weights_score_one_and_are_perfect_even_if_they_fail():
    result = score([out(0, False), out(0, False, category="INFO")])
    assert result.score == 1.0
    assert result.perfect
    assert result.per_category == {"ROLE": 1.0, "INFO": 1.0}


def test_zero_weight_is_informational_and_outside_the_denominator():
    with_info = score([out(1, True), out(1, False), out(0, False)])
    without_info = score([out(1, True), out(1, False)])
    assert with_info.score == pytest.approx(0.5) == without_info.score
    assert score([out(1, True), out(0, False)]).perfect


def test_negative_weight_is_clamped_to_zero():
    result = score([out(2, True), out(-3, False)])
    assert result.score == 1.0
    assert result.perfect


def test_errored_assertion_counts_as_failed_even_if_marked_passed():
    result = score([out(1, True), out(1, True, error="regex timed out")])
    assert result.score == pytest.approx(0.5)
    assert not result.perfect


def test_perfect_requires_every_weight_bearing_assertion_to_pass():
    assert score([out(3, True), out(0.1, True)]).perfect
    assert not score([out(3, True), out(0.1, False)]).perfect


def test_per_category_uses_the_same_formula_on_each_subset():
    result = score([
        out(2, True, "ROLE"),
        out(1, False, "ROLE"),
        out(4, False, "LOCATION"),
        out(1, True, "LOCATION"),
        out(0, False, "NOTE"),
    ])
    assert result.per_category == pytest.approx({"ROLE": 2 / 3, "LOCATION": 1 / 5, "NOTE": 1.0})
    # Overall: (2 + 1) / (2 + 1 + 4 + 1) = 3/8, categories do not weigh in.
    assert result.score == pytest.approx(3 / 8)
    assert list(result.per_category) == ["ROLE", "LOCATION", "NOTE"]


def test_non_finite_weight_is_rejected():
    with pytest.raises(InputError):
        out(float("nan"), True)
    with pytest.raises(InputError):
        out(float("inf"), True)


def test_case_aggregate_mean_and_population_variance():
    # mean 0.5; squared deviations 0.25, 0, 0.25, 0 -> population variance 0.5/4
    mean, variance = case_aggregate([0.0, 0.5, 1.0, 0.5])
    assert mean == pytest.approx(0.5)
    assert variance == pytest.approx(0.125)


def test_case_aggregate_single_trial_has_zero_variance():
    assert case_aggregate([0.7]) == (pytest.approx(0.7), 0.0)


def test_case_aggregate_rejects_empty():
    with pytest.raises(InputError):
        case_aggregate([])


def test_pass_rate():
    assert pass_rate([True, False, True, True]) == 0.75
    assert pass_rate([False]) == 0.0
    with pytest.raises(InputError):
        pass_rate([])


def test_percentile_linear_interpolation_by_hand():
    values = [40, 10, 30, 20]  # sorted 10, 20, 30, 40
    assert percentile(values, 0) == 10
    assert percentile(values, 100) == 40
    # p50: rank 1.5 -> halfway between 20 and 30
    assert percentile(values, 50) == pytest.approx(25)
    # p95: rank 2.85 -> 30 + 0.85 * 10
    assert percentile(values, 95) == pytest.approx(38.5)
    assert percentile([7.0], 95) == 7.0


def test_percentile_agrees_with_numpy_linear():
    values = np.random.default_rng(3).exponential(20.0, size=37).tolist()
    for p in (0, 5, 50, 95, 99, 100):
        assert percentile(values, p) == pytest.approx(float(np.percentile(values, p)))


@pytest.mark.parametrize("p", [-1, 100.5])
def test_percentile_rejects_out_of_range(p):
    with pytest.raises(InputError):
        percentile([1.0, 2.0], p)


def test_percentile_rejects_empty():
    with pytest.raises(InputError):
        percentile([], 50)


def test_variant_aggregate_by_hand():
    trials = [
        TrialFigures(score=1.0, perfect=True, cost=0.25, latency_ms=100),
        TrialFigures(score=0.5, perfect=False, cost=0.5, latency_ms=300),
        TrialFigures(score=0.75, perfect=False, cost=None, latency_ms=200),
        TrialFigures(score=1.0, perfect=True, cost=0.25, latency_ms=None),
    ]
    agg = variant_aggregate(trials)
    assert agg.trials == 4
    assert agg.mean_score == pytest.approx(3.25 / 4)
    assert agg.pass_rate == 0.5
    assert agg.total_cost == pytest.approx(1.0)
    # latencies 100, 200, 300: p50 = 200, p95 rank 1.9 -> 200 + 0.9 * 100
    assert agg.latency_p50_ms == pytest.approx(200)
    assert agg.latency_p95_ms == pytest.approx(290)


def test_variant_aggregate_without_cost_or_latency_reports_none():
    agg = variant_aggregate([TrialFigures(score=0.0, perfect=False)])
    assert agg.total_cost is None
    assert agg.latency_p50_ms is None and agg.latency_p95_ms is None
    assert agg.pass_rate == 0.0


def test_variant_aggregate_rejects_no_trials():
    with pytest.raises(InputError):
        variant_aggregate([])


@pytest.mark.parametrize(
    ("flags", "unstable"),
    [
        ([True, True, True], False),
        ([False, False], False),
        ([True, False, True], True),
        ([False, True], True),
        ([True], False),
        ([], False),
    ],
)
def test_is_unstable(flags, unstable):
    assert is_unstable(flags) is unstable
