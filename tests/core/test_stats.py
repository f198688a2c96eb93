import itertools
import math
import random

import numpy as np
import pytest

from ragqual.core.stats import (
    BootstrapCI,
    paired_bootstrap_ci,
    paired_differences,
    paired_randomization_test,
    win_tie_loss,
)
from ragqual.errors import InputError


def rng(seed=7):
    return np.random.default_rng(seed)


# --- randomization test ----------------------------------------------------------------------

# Differences new - base = 0.4, 0.3, -0.2, 0.1; observed |sum| = 0.6.
# Flipping a subset S of magnitudes {0.4, 0.3, 0.2, 0.1} from all-positive (sum 1.0) gives
# 1.0 - 2 m(S). |1.0 - 2 m(S)| >= 0.6 needs m(S) <= 0.2 or m(S) >= 0.8:
#   m <= 0.2: {}, {0.1}, {0.2};  m >= 0.8: {0.4,0.3,0.2,0.1}, {0.4,0.3,0.2}, {0.4,0.3,0.1}.
# 6 of the 16 sign patterns -> p = 6/16.
BASE4 = [0.5, 0.5, 0.5, 0.5]
NEW4 = [0.9, 0.8, 0.3, 0.6]


def test_exact_sign_flip_p_value_by_hand():
    assert paired_randomization_test(BASE4, NEW4, rng()) == pytest.approx(6 / 16)


def test_exact_p_value_is_symmetric_in_direction():
    assert paired_randomization_test(NEW4, BASE4, rng()) == pytest.approx(6 / 16)


def test_most_extreme_pattern_gives_two_of_sixteen():
    # Every difference positive with distinct sizes: only all-plus and all-minus reach |sum| = 1.0.
    assert paired_randomization_test([0, 0, 0, 0], [0.1, 0.2, 0.3, 0.4], rng()) == pytest.approx(2 / 16)


def test_identical_runs_give_p_one():
    scores = [0.2, 0.9, 1.0, 0.0, 0.5]
    assert paired_randomization_test(scores, scores, rng()) == 1.0


def brute_force_p(diffs):
    observed = abs(sum(diffs))
    hits = sum(
        1
        for signs in itertools.product((1, -1), repeat=len(diffs))
        if abs(sum(s * d for s, d in zip(signs, diffs))) >= observed - 1e-9
    )
    return hits / 2 ** len(diffs)


def test_random_flips_approximate_the_exact_p_value():
    generator = np.random.default_rng(11)
    base = generator.integers(0, 5, size=13) / 4
    new = generator.integers(0, 5, size=13) / 4
    exact = brute_force_p(list(new - base))
    approx = paired_randomization_test(base, new, rng(1), n_permutations=20_000, exact_max_n=0)
    # Monte Carlo standard error is at most 0.5 / sqrt(20000) ~ 0.0035.
    assert approx == pytest.approx(exact, abs=0.02)
    assert paired_randomization_test(base, new, rng(), exact_max_n=13) == pytest.approx(exact)


def test_random_flips_use_the_plus_one_correction():
    # 30 equal positive differences: only 2 of 2**30 patterns reach the observed sum, so with
    # 999 random patterns the count is 0 and the p-value is exactly 1 / 1000, never 0.
    p = paired_randomization_test([0.0] * 30, [1.0] * 30, rng(), n_permutations=999)
    assert p == pytest.approx(1 / 1000)


def test_randomization_is_reproducible_with_the_same_seed():
    base = np.linspace(0, 1, 40)
    new = base + np.sin(np.arange(40)) * 0.1
    first = paired_randomization_test(base, new, rng(5), n_permutations=2000)
    second = paired_randomization_test(base, new, rng(5), n_permutations=2000)
    assert first == second


def test_randomization_rejects_bad_parameters():
    with pytest.raises(InputError):
        paired_randomization_test([1.0], [1.0], rng(), n_permutations=0)
    with pytest.raises(InputError):
        paired_randomization_test([1.0], [1.0], rng(), exact_max_n=40)


# --- bootstrap -------------------------------------------------------------------------------


def test_bootstrap_of_constant_difference_is_a_point():
    ci = paired_bootstrap_ci([0.1, 0.5, 0.7], [0.3, 0.7, 0.9], rng(), n_resamples=500)
    assert isinstance(ci, BootstrapCI)
    assert ci == pytest.approx((0.2, 0.2, 0.2))


def test_bootstrap_two_questions_by_hand():
    # Differences 0 and 1. A resample mean is 0 (p 1/4), 0.5 (p 1/2) or 1 (p 1/4), so the
    # 2.5% and 97.5% quantiles of 10,000 resample means are 0 and 1.
    mean_diff, lo, hi = paired_bootstrap_ci([0.0, 0.0], [0.0, 1.0], rng())
    assert (mean_diff, lo, hi) == (0.5, 0.0, 1.0)


def test_bootstrap_matches_the_normal_approximation_for_many_questions():
    generator = np.random.default_rng(2)
    base = generator.uniform(0, 1, size=400)
    new = base + generator.normal(0.05, 0.2, size=400)
    diffs = new - base
    half_width = 1.96 * diffs.std() / math.sqrt(diffs.size)
    mean_diff, lo, hi = paired_bootstrap_ci(base, new, rng(), n_resamples=4000)
    assert mean_diff == pytest.approx(diffs.mean())
    assert lo == pytest.approx(diffs.mean() - half_width, abs=0.15 * half_width)
    assert hi == pytest.approx(diffs.mean() + half_width, abs=0.15 * half_width)


def test_bootstrap_lower_confidence_gives_a_narrower_interval():
    base = [0.0, 0.5, 1.0, 0.25, 0.75, 0.5, 0.0, 1.0]
    new = [0.5, 0.5, 1.0, 0.0, 1.0, 1.0, 0.25, 0.75]
    wide = paired_bootstrap_ci(base, new, rng(3), n_resamples=3000, confidence=0.99)
    narrow = paired_bootstrap_ci(base, new, rng(3), n_resamples=3000, confidence=0.5)
    assert wide.lo < narrow.lo <= narrow.mean_diff <= narrow.hi < wide.hi


def test_bootstrap_is_reproducible_and_seed_dependent():
    base = np.linspace(0, 1, 25)
    new = np.cos(np.arange(25)) * 0.3 + base
    assert paired_bootstrap_ci(base, new, rng(9), 1000) == paired_bootstrap_ci(base, new, rng(9), 1000)
    assert paired_bootstrap_ci(base, new, rng(9), 1000) != paired_bootstrap_ci(base, new, rng(10), 1000)


def test_bootstrap_in_blocks_for_many_questions():
    # 3000 questions x 2000 resamples exceeds one block, so several blocks are concatenated.
    base = np.zeros(3000)
    new = np.r_[np.ones(1500), np.zeros(1500)]
    mean_diff, lo, hi = paired_bootstrap_ci(base, new, rng(), n_resamples=2000)
    assert mean_diff == 0.5
    assert 0.45 < lo < 0.5 < hi < 0.55


@pytest.mark.parametrize("confidence", [0, 1, 1.5])
def test_bootstrap_rejects_bad_confidence(confidence):
    with pytest.raises(InputError):
        paired_bootstrap_ci([1.0], [1.0], rng(), confidence=confidence)


def test_bootstrap_rejects_no_resamples():
    with pytest.raises(InputError):
        paired_bootstrap_ci([1.0], [1.0], rng(), n_resamples=0)


# --- win / tie / loss and input checks -------------------------------------------------------


def test_win_tie_loss_by_hand():
    base = [0.5, 0.5, 0.5, 0.5, 1.0]
    new = [0.6, 0.5, 0.4, 0.5 + 1e-12, 0.0]
    assert win_tie_loss(base, new) == (1, 2, 2)


def test_win_tie_loss_eps_widens_ties():
    assert win_tie_loss([0.5, 0.5], [0.55, 0.45], eps=0.1) == (0, 2, 0)


def test_paired_inputs_must_align():
    with pytest.raises(InputError):
        paired_differences([1.0, 2.0], [1.0])
    with pytest.raises(InputError):
        paired_differences([], [])
    with pytest.raises(InputError):
        paired_differences([float("nan")], [1.0])
    with pytest.raises(InputError):
        win_tie_loss([1.0], [1.0], eps=-1)


# --- the sign draws ------------------------------------------------------------------------------


def _state(rng: np.random.Generator) -> tuple:
    s = rng.bit_generator.state  # a spent half's stale value (has_uint32 0) is not state
    return s["state"]["state"], s["has_uint32"], s["uinteger"] if s["has_uint32"] else None


def test_flip_signs_draws_what_choice_draws_and_leaves_the_generator_where_choice_does():
    from ragqual.core.stats import flip_signs

    shapes = random.Random(26)
    for seed in range(150):
        mine, numpys = np.random.default_rng([seed, 3]), np.random.default_rng([seed, 3])
        for _ in range(5):  # odd and even sizes, so a half is sometimes left waiting between draws
            rows, n = shapes.randint(0, 40), shapes.randint(1, 37)
            got, want = flip_signs(mine, rows, n), numpys.choice(np.array([1.0, -1.0]), size=(rows, n))
            assert got.shape == want.shape == (rows, n) and np.array_equal(got, want)
            assert _state(mine) == _state(numpys)
        assert mine.random() == numpys.random() and mine.integers(0, 9, 5).tolist() == numpys.integers(0, 9, 5).tolist()


def test_flip_signs_falls_back_to_choice_for_another_bit_generator():
    from ragqual.core.stats import flip_signs

    mine, numpys = np.random.Generator(np.random.MT19937(4)), np.random.Generator(np.random.MT19937(4))
    assert np.array_equal(flip_signs(mine, 7, 5), numpys.choice(np.array([1.0, -1.0]), size=(7, 5)))
