import pytest

from ragqual.engine import loop
from ragqual.engine.aggregate import case_summaries, summarise_run, variant_summaries
from ragqual.engine.services import services_for
from ragqual.engine.subject import Variant
from ragqual.store.trial_reads import TrialFigureRow
from tests.engine.support import ToySubject, echo_case


def row(trial_id, variant, case, score, perfect, *, repeat=0, latency=None, cost=None, hit=False, error=None):
    return TrialFigureRow(trial_id, variant, case, case, "", repeat, score, perfect,
                          None if score is None else 1, cost, latency, hit, error)


ROWS = [
    row(1, "a", "c1", 1.0, True, repeat=0, latency=10.0, cost=0.5, hit=True),
    row(2, "a", "c1", 0.5, False, repeat=1, latency=20.0, cost=0.25),
    row(3, "a", "c2", 0.0, False, repeat=0, latency=30.0, error="timeout"),
    row(4, "a", "c2", 0.0, False, repeat=1, latency=40.0),
    row(5, "b", "c1", 1.0, True, latency=None),
    row(6, "b", "c2", None, None),  # no score row for this scorer: left out of the numbers
]


def test_case_summaries_mean_variance_and_instability():
    got = {(c.variant, c.case_id): c for c in case_summaries(ROWS)}
    assert set(got) == {("a", "c1"), ("a", "c2"), ("b", "c1")}
    c1 = got[("a", "c1")]
    assert (c1.trials, c1.mean, c1.variance, c1.unstable) == (2, 0.75, pytest.approx(0.0625), True)
    c2 = got[("a", "c2")]
    assert (c2.mean, c2.variance, c2.unstable) == (0.0, 0.0, False)


def test_variant_summaries():
    got = {v.variant: v for v in variant_summaries(ROWS)}
    a = got["a"]
    assert a.aggregate.trials == 4
    assert a.aggregate.mean_score == pytest.approx(1.5 / 4)
    assert a.aggregate.pass_rate == pytest.approx(0.25)
    assert a.aggregate.total_cost == pytest.approx(0.75)
    assert a.aggregate.latency_p50_ms == pytest.approx(25.0)
    assert a.aggregate.latency_p95_ms == pytest.approx(38.5)  # 30 + 0.85 * 10
    assert (a.cache_hits, a.errors) == (1, 1)
    b = got["b"]
    assert (b.aggregate.trials, b.aggregate.latency_p50_ms, b.aggregate.total_cost) == (1, None, None)


def test_summarise_a_stored_run(store, cache):
    subject = ToySubject([echo_case("good", "x"), echo_case("bad", "y", expected="z")])
    outcome = loop.run(subject, [Variant("m1", "mock"), Variant("m2", "mock", {"temperature": 1})],
                       subject.cases(), store=store, services=services_for(subject, cache), repeats=2, argv=["t"])
    summary = summarise_run(store.engine, outcome.run_id)
    assert [v.variant for v in summary.variants] == ["m1", "m2"]
    for v in summary.variants:
        assert v.aggregate.trials == 4
        assert v.aggregate.mean_score == pytest.approx((1.0 + 0.5) / 2)
        assert v.aggregate.pass_rate == 0.5
        assert v.aggregate.total_cost == 0.0
    assert summary.unstable == [] and summary.unscored == 0
    assert {(c.slug, c.mean) for c in summary.cases} == {("good", 1.0), ("bad", 0.5)}
