"""The exact McNemar test at every size: scipy's binomtest and exact integer arithmetic agree with it
for every number of discordant questions up to 5,000, and far beyond it stays finite and fast."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sp

from ragqual.core.stats import binomial_half_lower_tail, binomial_half_pmf, mcnemar_exact, mcnemar_min_discordant
from ragqual.errors import InputError

# Where in the lower half the smaller count sits: the far tail, the edge of significance, the centre.
POSITIONS = (0.0, 0.05, 0.3, 0.6, 0.85, 0.93, 0.97, 0.99, 1.0)


def smaller_counts(n: int) -> list[int]:
    """A spread of min(b, c) for n discordant questions, plus the values beside the centre."""
    centre = n // 2
    spread = max(1, round(math.sqrt(n) / 2))  # one standard deviation of the count
    ks = {round(f * centre) for f in POSITIONS} | {centre - spread, centre - 3 * spread, centre - 1, 1}
    return sorted(k for k in ks if 0 <= k <= centre)


def exact_p(k: int, n: int) -> float:
    """2 * P(X <= k) for X ~ Binomial(n, 1/2), capped at 1: integers, one correctly rounded division."""
    if 2 * k == n:
        return 1.0
    total, term = 0, 1  # term = C(n, j)
    for j in range(k + 1):
        total += term
        term = term * (n - j) // (j + 1)
    return float(min(Fraction(1), Fraction(2 * total, 2**n)))


# scipy's binomial tail underflows to 0 well above the smallest double (2 * cdf(28, 1100, 1/2) is
# 0.0 there, 5.0566e-276 exactly): below this, scipy is held only to "about 0".
SCIPY_FLOOR = 1e-250


def close(ours: float, reference: float, rel: float, floor: float = SCIPY_FLOOR) -> bool:
    return ours == pytest.approx(reference, rel=rel, abs=floor)


def test_the_issue_case_no_longer_overflows_and_matches_scipy():
    assert mcnemar_exact(600, 500) == pytest.approx(sp.binomtest(500, 1100, 0.5).pvalue, rel=1e-12)
    assert mcnemar_exact(600, 500) == pytest.approx(0.0028195, abs=5e-7)
    assert mcnemar_exact(500, 600) == mcnemar_exact(600, 500)


@pytest.mark.parametrize("n", [1023, 1024, 1025, 1100])
def test_the_sizes_where_two_to_the_n_overflowed(n):
    for k in smaller_counts(n):
        assert close(mcnemar_exact(k, n - k), sp.binomtest(k, n, 0.5).pvalue, rel=1e-12), (k, n)


def test_every_discordant_count_up_to_5000_equals_scipy_binomtest():
    """Every n = b + c from 1 to 5,000, each at one smaller count; the count's place in the lower
    half cycles with n, so the far tail, the edge of significance and the centre all come up."""
    worst = 0.0
    for n in range(1, 5001):
        ks = smaller_counts(n)
        k = ks[n % len(ks)]
        reference = sp.binomtest(k, n, 0.5).pvalue
        ours = mcnemar_exact(k, n - k)
        assert close(ours, reference, rel=1e-12), (k, n, ours, reference)
        if reference > SCIPY_FLOOR:
            worst = max(worst, abs(ours - reference) / reference)
    assert worst < 1e-12


def test_a_grid_of_every_size_up_to_5000_equals_scipys_binomial_tail():
    """The same for several counts at each n, against scipy's binomial distribution (what binomtest
    sums at p = 1/2): the whole grid at once."""
    ns = np.arange(1, 5001)
    for f in POSITIONS:
        ks = np.floor(f * (ns // 2)).astype(int)
        reference = np.minimum(1.0, 2 * sp.binom.cdf(ks, ns, 0.5))
        reference[2 * ks == ns] = 1.0
        ours = np.array([mcnemar_exact(int(k), int(n - k)) for k, n in zip(ks, ns, strict=True)])
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=SCIPY_FLOOR)


@pytest.mark.parametrize("n", [1, 2, 7, 40, 341, 1024, 1100, 2047, 3001, 5000])
def test_equals_exact_integer_arithmetic(n):
    for k in smaller_counts(n):
        assert close(mcnemar_exact(k, n - k), exact_p(k, n), rel=1e-13, floor=1e-300), (k, n)


def test_the_pmf_equals_exact_integer_arithmetic_near_the_centre_of_a_large_n():
    n = 20_001
    for k in (10_000, 9_900, 9_500, 8_000):
        exact = float(Fraction(math.comb(n, k), 2**n))
        assert binomial_half_pmf(k, n) == pytest.approx(exact, rel=1e-13)


def test_small_cases_stay_exact_to_the_last_bit():
    assert mcnemar_exact(5, 0) == 1 / 16
    assert mcnemar_exact(6, 0) == 2 / 64
    assert mcnemar_exact(0, 1074) == 2.0**-1073  # 2 * the smallest subnormal
    assert mcnemar_exact(0, 1075) == 0.0  # 2**-1075 rounds to 0 (half-way, to even)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_min_discordant(0.05) == 6


def test_far_beyond_the_test_grid_it_stays_finite_and_fast():
    started = time.perf_counter()
    p = mcnemar_exact(1_000_000, 1_003_000)
    assert time.perf_counter() - started < 2.0
    assert p == pytest.approx(sp.binomtest(1_000_000, 2_003_000, 0.5).pvalue, rel=1e-10)
    assert mcnemar_exact(10_000_000, 10_000_001) == 1.0
    assert 0.0 <= mcnemar_exact(0, 10**9) <= mcnemar_exact(1, 10**9) < 1e-300


def test_bad_arguments_are_input_errors():
    with pytest.raises(InputError):
        mcnemar_exact(-1, 3)
    with pytest.raises(InputError):
        binomial_half_lower_tail(6, 10)
