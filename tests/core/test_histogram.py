"""Equal-width histograms counted per label: hand-computed bins and the edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from ragqual.core.histogram import Bar, bin_edges, histogram

KINDS = ("relevant", "non-relevant")


def test_values_fall_in_equal_width_bins_counted_per_label():
    bars = histogram([0.0, 0.1, 0.5, 0.74, 0.75, 1.0], ["relevant", "non-relevant", "relevant", "relevant",
                                                        "non-relevant", "non-relevant"], KINDS, bins=4)
    assert bars == [Bar("relevant", 0.0, 0.25, 1), Bar("relevant", 0.5, 0.75, 2),
                    Bar("non-relevant", 0.0, 0.25, 1), Bar("non-relevant", 0.75, 1.0, 2)]


def test_the_maximum_lands_in_the_last_bin_and_the_minimum_in_the_first():
    bars = histogram([2.0, 3.0, 7.0], ["relevant"] * 3, KINDS, bins=5)
    assert bars == [Bar("relevant", 2.0, 3.0, 1), Bar("relevant", 3.0, 4.0, 1), Bar("relevant", 6.0, 7.0, 1)]


def test_negative_scores_are_binned_on_their_own_range():
    bars = histogram([-3.0, -1.0, -2.5], ["non-relevant"] * 3, KINDS, bins=2)
    assert bars == [Bar("non-relevant", -3.0, -2.0, 2), Bar("non-relevant", -2.0, -1.0, 1)]


def test_equal_scores_make_one_bar_in_the_range_numpy_gives_them():
    bars = histogram([0.7, 0.7, 0.7], ["relevant", "relevant", "non-relevant"], KINDS, bins=40)
    assert [(b.label, b.frequency) for b in bars] == [("relevant", 2), ("non-relevant", 1)]
    assert bars[0].start == bars[1].start and bars[0].start <= 0.7 < bars[0].end
    assert bin_edges([0.7], 40)[[0, -1]].tolist() == pytest.approx([0.2, 1.2])


def test_a_single_hit_is_one_bar_holding_it():
    [bar] = histogram([5.25], ["relevant"], KINDS, bins=40)
    assert bar.frequency == 1 and bar.start <= 5.25 < bar.end


def test_no_scores_no_bars_and_no_edges():
    assert histogram([], [], KINDS) == []
    assert bin_edges([]).size == 0


def test_counts_sum_to_the_values_per_label_and_edges_match_numpy():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.normal(0.6, 0.2, 5000), rng.uniform(-1, 30, 3000)])
    labels = [KINDS[n % 2] for n in range(len(values))]
    bars = histogram(values, labels, KINDS, bins=40)
    assert len(bars) <= 2 * 40
    for kind in KINDS:
        mine = [b for b in bars if b.label == kind]
        assert sum(b.frequency for b in mine) == labels.count(kind)
        expected, edges = np.histogram(values[[lab == kind for lab in labels]], bins=bin_edges(values, 40))
        assert {(b.start, b.frequency) for b in mine} == {(float(e), int(c)) for e, c in zip(edges, expected) if c}


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="2 values but 1 labels"):
        histogram([1.0, 2.0], ["relevant"], KINDS)
    with pytest.raises(ValueError, match="not in the order given: other"):
        histogram([1.0], ["other"], KINDS)
    with pytest.raises(ValueError, match="finite"):
        histogram([1.0, float("nan")], ["relevant"] * 2, KINDS)
    with pytest.raises(ValueError, match="at least one bin"):
        histogram([1.0], ["relevant"], KINDS, bins=0)
