"""Shared sign patterns (`stats.SignPatterns`): the same numbers kept, dropped or drawn per test."""

from __future__ import annotations

import numpy as np
import pytest

from ragqual.core import stats


def _streams(seed: int):
    return lambda stream, width: np.random.default_rng([seed, len(stream), width])


def _by_hand(rng: np.random.Generator, values: np.ndarray, sizes: np.ndarray, count: int):
    block = max(1, 1_000_000 // values.size)
    signs = np.concatenate([stats.flip_signs(rng, min(block, count - s), values.size) for s in range(0, count, block)])
    return signs @ values, signs @ sizes


@pytest.mark.parametrize("width", [13, 185, 400])
def test_one_generator_draws_the_blocks_a_single_test_always_drew(width):
    values = np.random.default_rng(width).normal(size=width)
    sizes = np.arange(1, width + 1, dtype=float)
    got = stats.SignPatterns.from_generator(np.random.default_rng(5)).sums("", values, sizes, 12_345)
    want = _by_hand(np.random.default_rng(5), values, sizes, 12_345)
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-9)


def test_patterns_kept_dropped_or_evicted_give_the_same_sums():
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(size=50), rng.normal(size=50), rng.normal(size=70)
    ones50, ones70 = np.ones(50), np.ones(70)
    kept = stats.SignPatterns(_streams(4))
    dropped = stats.SignPatterns(_streams(4), keep_cells=0)
    tight = stats.SignPatterns(_streams(4), keep_cells=50 * 3_000)  # holds one stream at a time
    for patterns in (kept, dropped, tight):
        first = patterns.sums("g", a, ones50, 3_000)
        other = patterns.sums("h", c, ones70, 3_000)
        again = patterns.sums("g", b, ones50, 3_000)
        results = [first, other, again]
        if patterns is kept:
            reference = results
        else:
            for got, want in zip(results, reference, strict=True):
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # The two metrics of stream "g" saw the same patterns: their unit sums are one array.
    assert np.array_equal(reference[0][1], reference[2][1])


def test_a_stream_width_has_its_own_patterns_whatever_ran_before():
    values = np.random.default_rng(2).normal(size=30)
    alone = stats.SignPatterns(_streams(9)).sums("g", values, np.ones(30), 2_000)
    after_others = stats.SignPatterns(_streams(9))
    after_others.sums("x", np.ones(31), np.ones(31), 2_000)
    after_others.sums("g", np.ones(29), np.ones(29), 2_000)
    later = after_others.sums("g", values, np.ones(30), 2_000)
    assert np.array_equal(alone[0], later[0])
    other_stream = stats.SignPatterns(_streams(9)).sums("gg", values, np.ones(30), 2_000)
    assert not np.array_equal(alone[0], other_stream[0])


def test_the_interval_on_shared_patterns_equals_the_interval_on_their_generator():
    rng = np.random.default_rng(3)
    base, new = rng.random(60), rng.random(60)
    shared = stats.SignPatterns(_streams(6))
    stats.randomization_interval(rng.random(60), rng.random(60), shared, n_permutations=999, stream="s")
    via_shared = stats.randomization_interval(base, new, shared, n_permutations=999, stream="s")
    via_rng = stats.randomization_interval(base, new, _streams(6)("s", 60), n_permutations=999)
    assert via_shared == via_rng
