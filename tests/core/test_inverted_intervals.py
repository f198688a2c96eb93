"""Intervals inverted from the test beside them: they exclude 0 exactly when p < alpha."""

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from ragqual.core.stats import (
    PairedCounts,
    clopper_pearson_interval,
    cluster_randomization_interval,
    cluster_randomization_test,
    mcnemar_exact,
    mcnemar_interval,
    newcombe_paired_interval,
    paired_randomization_test,
    randomization_interval,
)

ALPHA = 0.05


def _excludes_zero(lo: float, hi: float) -> bool:
    return lo > 0 or hi < 0


@pytest.mark.parametrize("seed", range(60))
def test_randomization_interval_excludes_zero_exactly_when_p_is_below_alpha(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    base = rng.random(n)
    new = np.clip(base + rng.normal(rng.uniform(-0.08, 0.08), rng.uniform(0.02, 0.2), n), 0, 1)
    ci = randomization_interval(base, new, np.random.default_rng(seed + 1), n_permutations=999)
    # The same generator state gives the p-value of the test itself.
    assert ci.p_value == paired_randomization_test(base, new, np.random.default_rng(seed + 1), n_permutations=999)
    assert _excludes_zero(ci.lo, ci.hi) == (ci.p_value < ALPHA)
    assert ci.lo <= ci.mean_diff <= ci.hi


def test_the_reported_case_no_longer_excludes_zero_beside_p_above_alpha():
    # Small, mostly negative graded differences: the bootstrap interval used to exclude 0 here
    # while the randomization test did not reject.
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(40):
        base = rng.random(155)
        new = base.copy()
        moved = rng.choice(155, 12, replace=False)
        new[moved] = np.clip(new[moved] + rng.normal(-0.25, 0.35, 12), 0, 1)
        inv = randomization_interval(base, new, np.random.default_rng(7), n_permutations=2000)
        if 0.05 <= inv.p_value:
            assert not _excludes_zero(inv.lo, inv.hi)
            hits += 1
    assert hits


@pytest.mark.parametrize("seed", range(30))
def test_cluster_interval_agrees_with_the_cluster_test(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(8, 50))
    base = rng.random(n)
    new = np.clip(base + rng.normal(rng.uniform(-0.1, 0.1), 0.15, n), 0, 1)
    clusters = rng.integers(0, max(2, n // 3), n)
    ci = cluster_randomization_interval(base, new, clusters, np.random.default_rng(seed), n_permutations=999)
    assert ci.p_value == cluster_randomization_test(base, new, clusters, np.random.default_rng(seed), 999)
    assert _excludes_zero(ci.lo, ci.hi) == (ci.p_value < ALPHA)
    assert ci.mean_diff == pytest.approx(float(np.mean(new - base)))


def test_exact_enumeration_interval_is_hand_checkable():
    # Differences 1, 2, 3 over three questions: p(delta) is 1/4 at best below the data, never
    # below 0.05, so no shift can be rejected and the interval is the whole line.
    ci = randomization_interval([0, 0, 0], [1, 2, 3], np.random.default_rng(0))
    assert ci.p_value == 0.25 and ci.lo == -math.inf and ci.hi == math.inf
    # Six equal positive differences: p = 2/64 < 0.05. Shifted by delta < 1 they stay one-signed
    # (rejected); any delta >= 1 ... up to the mean is accepted, so the lower end is 1 (the data).
    ci = randomization_interval([0] * 6, [1] * 6, np.random.default_rng(0))
    assert ci.p_value == pytest.approx(2 / 64)
    assert ci.lo == pytest.approx(1.0) and ci.hi == pytest.approx(1.0)


def test_randomization_interval_covers_the_true_shift_about_as_often_as_promised():
    rng = np.random.default_rng(42)
    covered = 0
    trials = 200
    for t in range(trials):
        diffs = rng.normal(0.3, 1.0, 25)
        ci = randomization_interval(np.zeros(25), diffs, np.random.default_rng(t), n_permutations=499)
        covered += ci.lo <= 0.3 <= ci.hi
    assert 0.90 <= covered / trials <= 0.99


@pytest.mark.parametrize("k,m", [(0, 5), (1, 10), (7, 20), (20, 20), (3, 3), (12, 40), (50, 120), (400, 1000)])
def test_clopper_pearson_matches_scipy(k, m):
    expected = binomtest(k, m).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson_interval(k, m) == pytest.approx((expected.low, expected.high), abs=1e-9)


def test_mcnemar_interval_hand_checked():
    # b = 0, c = 6 of n = 10: p = 2/64. pi's lower end solves pi^6 = 0.025, so the difference
    # interval starts at (6/10)(2 * 0.025**(1/6) - 1) and ends at 6/10 (every discordant one moved up).
    ci = mcnemar_interval(PairedCounts(a=2, b=0, c=6, d=2))
    assert ci.p_value == pytest.approx(2 / 64) and ci.mean_diff == pytest.approx(0.6)
    assert ci.lo == pytest.approx(0.6 * (2 * 0.025 ** (1 / 6) - 1), abs=1e-12) and ci.hi == pytest.approx(0.6)
    assert ci.lo > 0
    # b = 0, c = 5: p = 1/16 > 0.05, and the interval reaches below 0.
    ci = mcnemar_interval(PairedCounts(a=3, b=0, c=5, d=2))
    assert ci.p_value == 1 / 16 and ci.lo < 0 < ci.hi
    # No discordant question.
    assert mcnemar_interval(PairedCounts(4, 0, 0, 6)) == (0.0, 0.0, 0.0, 1.0)


def test_mcnemar_interval_against_scipy_clopper_pearson():
    ci = mcnemar_interval(PairedCounts(a=100, b=9, c=21, d=25))
    cp = binomtest(21, 30).proportion_ci(method="exact")
    assert (ci.lo, ci.hi) == pytest.approx((30 / 155 * (2 * cp.low - 1), 30 / 155 * (2 * cp.high - 1)), abs=1e-9)


@pytest.mark.parametrize("b", range(0, 25, 3))
@pytest.mark.parametrize("c", range(0, 25, 2))
def test_mcnemar_interval_excludes_zero_exactly_when_p_is_below_alpha(b, c):
    counts = PairedCounts(a=30, b=b, c=c, d=10)
    ci = mcnemar_interval(counts)
    assert ci.p_value == mcnemar_exact(b, c)
    assert _excludes_zero(ci.lo, ci.hi) == (ci.p_value < ALPHA)
    assert ci.lo <= ci.mean_diff <= ci.hi


def test_newcombe_could_exclude_zero_beside_an_inconclusive_mcnemar():
    # Why the interval changed: Newcombe's interval is not the McNemar test's.
    counts = PairedCounts(10, 1, 7, 20)
    lo, _ = newcombe_paired_interval(counts)
    assert lo > 0 and mcnemar_exact(1, 7) > ALPHA
    assert mcnemar_interval(counts).lo < 0
