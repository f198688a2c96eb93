"""McNemar, Newcombe, clusters, power and multiplicity against scipy / statsmodels and by hand."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sp
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from ragqual.core.multiplicity import benjamini_hochberg, holm
from ragqual.core.stats import (
    too_few_to_detect,
    PairedCounts,
    cluster_bootstrap_ci,
    cluster_randomization_test,
    detectable_effect,
    mcnemar_exact,
    mcnemar_min_discordant,
    minimum_detectable_effect,
    newcombe_paired_interval,
    paired_bootstrap_ci,
    paired_counts,
    paired_randomization_test,
    shared_item_clusters,
    standard_error,
    wilson_interval,
)
from ragqual.errors import InputError

# --- McNemar -----------------------------------------------------------------------------------


@pytest.mark.parametrize("b, c", [(0, 0), (1, 0), (17, 10), (10, 17), (6, 0), (5, 0), (30, 12), (3, 3), (0, 40),
                                  (120, 95)])
def test_mcnemar_exact_matches_statsmodels_and_scipy(b, c):
    ours = mcnemar_exact(b, c)
    assert ours == pytest.approx(mcnemar([[0, b], [c, 0]], exact=True).pvalue, rel=1e-12, abs=1e-15)
    if b + c:
        assert ours == pytest.approx(min(1.0, sp.binomtest(b, b + c, 0.5).pvalue), rel=1e-9)


def test_mcnemar_by_hand():
    # b=5, c=0: 2 * (1/2)^5 = 1/16
    assert mcnemar_exact(5, 0) == 1 / 16
    assert mcnemar_exact(2, 2) == 1.0
    with pytest.raises(InputError):
        mcnemar_exact(-1, 2)


def test_the_fewest_discordant_questions_mcnemar_can_call_significant():
    assert mcnemar_min_discordant(0.05) == 6  # 2/32 = 0.0625 >= 0.05, 2/64 < 0.05
    assert mcnemar_min_discordant(0.01) == 8  # 2/128 = 0.0156, 2/256 < 0.01


def test_paired_counts_by_hand():
    assert paired_counts([1, 1, 0, 0, 1], [1, 0, 1, 0, 0]) == PairedCounts(a=1, b=2, c=1, d=1)
    with pytest.raises(InputError):
        paired_counts([0.5], [1.0])


# --- Wilson and Newcombe -----------------------------------------------------------------------


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (140, 171), (1, 2)])
def test_wilson_matches_statsmodels(k, n):
    assert wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)


@pytest.mark.parametrize("a, b, c, d", [(10, 5, 4, 2), (4, 2, 6, 3), (6, 3, 2, 1), (5, 5, 5, 6)])
def test_newcombe_reduces_to_the_unpaired_square_and_add_when_phi_vanishes(a, b, c, d):
    # phi's corrected numerator is 0 when 0 <= ad - bc <= n/2 (e.g. ad = bc): then the paired
    # interval is the square-and-add of the two Wilson intervals, which statsmodels offers for
    # independent samples of the same size.
    n = a + b + c + d
    assert 0 <= a * d - b * c <= n / 2
    expected = confint_proportions_2indep(a + c, n, a + b, n, method="newcomb", compare="diff")
    assert newcombe_paired_interval(PairedCounts(a, b, c, d)) == pytest.approx(expected, abs=1e-12)


def test_newcombe_positive_correlation_narrows_the_interval():
    # Strongly concordant table: phi > 0 shrinks the interval below the unpaired one.
    counts = PairedCounts(a=60, b=2, c=10, d=28)
    lo, hi = newcombe_paired_interval(counts)
    unpaired = confint_proportions_2indep(70, 100, 62, 100, method="newcomb", compare="diff")
    assert lo < 0.08 < hi and hi - lo < unpaired[1] - unpaired[0]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))
def test_newcombe_contains_the_estimate_and_mirrors(a, b, c, d):
    if a + b + c + d == 0:
        return
    counts = PairedCounts(a, b, c, d)
    lo, hi = newcombe_paired_interval(counts)
    delta = (c - b) / counts.n
    assert -1 <= lo <= delta + 1e-12 and delta - 1e-12 <= hi <= 1
    mirror = newcombe_paired_interval(PairedCounts(a, c, b, d))
    assert mirror == pytest.approx((-hi, -lo), abs=1e-12)


# --- clusters ----------------------------------------------------------------------------------


def test_questions_sharing_a_document_form_one_cluster_transitively():
    clusters = shared_item_clusters({"q1": ["a"], "q2": ["a", "b"], "q3": ["b"], "q4": ["c"], "q5": []})
    assert clusters["q1"] == clusters["q2"] == clusters["q3"]
    assert len({clusters["q1"], clusters["q4"], clusters["q5"]}) == 3
    assert clusters == {"q1": 0, "q2": 0, "q3": 0, "q4": 1, "q5": 2}


def test_singleton_clusters_give_the_plain_bootstrap_and_test():
    rng = np.random.default_rng(3)
    base, new = rng.random(30).tolist(), rng.random(30).tolist()
    singles = list(range(30))
    assert cluster_bootstrap_ci(base, new, singles, np.random.default_rng(1), 2000) == pytest.approx(
        tuple(paired_bootstrap_ci(base, new, np.random.default_rng(1), 2000)))
    assert cluster_randomization_test(base, new, singles, np.random.default_rng(1), 2000) == pytest.approx(
        paired_randomization_test(base, new, np.random.default_rng(1), 2000))
    assert standard_error(base, new, singles) == pytest.approx(standard_error(base, new) * math.sqrt(1.0),
                                                               rel=0.05)


def test_cluster_sign_flips_by_hand():
    # Two clusters with summed differences +2 and +1: 4 patterns, |sum| >= 3 twice -> p = 1/2.
    base = [0.0, 0.0, 0.0]
    new = [1.0, 1.0, 1.0]
    assert cluster_randomization_test(base, new, [0, 0, 1], np.random.default_rng(0)) == 0.5
    # Unclustered the same data is 3 equal differences: only 2 of 8 patterns reach 3 -> 1/4.
    assert paired_randomization_test(base, new, np.random.default_rng(0)) == 0.25


def test_correlated_clusters_widen_the_standard_error():
    # Every cluster moves as a block: the clustered SE exceeds the naive one.
    diffs = np.repeat([1.0, -1.0, 1.0, -1.0, 1.0, 0.0], 5)
    base = np.zeros_like(diffs).tolist()
    clusters = np.repeat(np.arange(6), 5).tolist()
    assert standard_error(base, diffs.tolist(), clusters) > 1.5 * standard_error(base, diffs.tolist())


# --- power -------------------------------------------------------------------------------------


def test_minimum_detectable_effect_by_hand():
    z = sp.norm.ppf(0.975) + sp.norm.ppf(0.8)  # 2.8016
    assert minimum_detectable_effect(0.1) == pytest.approx(z * 0.1, rel=1e-9)
    assert minimum_detectable_effect(0.1, alpha=0.01, power=0.9) == pytest.approx(
        (sp.norm.ppf(0.995) + sp.norm.ppf(0.9)) * 0.1, rel=1e-9)
    with pytest.raises(InputError):
        minimum_detectable_effect(-1.0)


def test_mde_is_the_effect_a_paired_z_test_detects_with_80_percent_power():
    # With true mean shift = MDE, the z statistic is centred at z_{.975} + z_{.8}: power 0.8.
    se = 0.03
    mde = minimum_detectable_effect(se)
    power = 1 - sp.norm.cdf(sp.norm.ppf(0.975) - mde / se) + sp.norm.cdf(-sp.norm.ppf(0.975) - mde / se)
    assert power == pytest.approx(0.8, abs=1e-3)


def test_standard_error_is_sd_over_root_n():
    base, new = [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.5, 0.5]
    assert standard_error(base, new) == pytest.approx(np.std([1, 0, 0.5, 0.5], ddof=1) / 2)


def test_paired_differences_without_spread_have_no_mde():
    # Every pair identical, every question moved by the same amount (0.1, with float noise), one
    # question, one cluster, clusters whose means all equal the overall mean: the standard error
    # is 0, and an MDE of 0 would claim any change visible. There is none to state.
    base = [0.3, 0.5, 0.2, 0.7]
    assert detectable_effect(base, base, binary=False) is None
    assert detectable_effect(base, [0.4, 0.6, 0.3, 0.8], binary=False) is None
    assert detectable_effect([0.5], [0.9], binary=False) is None
    assert detectable_effect(base, [1.0, 0.0, 0.2, 0.7], binary=False, clusters=[0, 0, 0, 0]) is None
    # clusters {+1, -1} and {0, 0}: each cluster's mean difference is the overall 0
    assert detectable_effect([0.0, 1.0, 0.5, 0.5], [1.0, 0.0, 0.5, 0.5], binary=False, clusters=[0, 0, 1, 1]) is None


def test_graded_mde_with_spread_is_the_normal_formula():
    diffs = [1.0, 0.0, 0.5, 0.5, 0.2, 0.8, 0.3, 0.1]
    base, new = [0.0] * 8, diffs
    spread = np.std(diffs, ddof=1) / math.sqrt(8)
    expected = (sp.norm.ppf(0.975) + sp.norm.ppf(0.8)) * spread
    assert detectable_effect(base, new, binary=False) == pytest.approx(expected, rel=1e-9)
    assert detectable_effect(base, new, binary=False, alpha=0.01, power=0.9) == pytest.approx(
        (sp.norm.ppf(0.995) + sp.norm.ppf(0.9)) * spread, rel=1e-9)


def test_too_few_units_for_the_sign_flip_test_have_no_mde():
    # With m units the smallest two-sided sign-flip p-value is 2 / 2**m: 0.0625 for m = 5, so at
    # alpha 0.05 no change over 5 questions (or 5 clusters) can be significant, whatever its size.
    assert [m for m in range(1, 9) if too_few_to_detect(m)] == [1, 2, 3, 4, 5]
    assert not too_few_to_detect(5, alpha=0.1) and too_few_to_detect(6, alpha=0.01)
    five, six = [0.0, 1.0, 0.5, 0.5, 0.2], [0.0, 1.0, 0.5, 0.5, 0.2, 0.8]
    assert detectable_effect([0.0] * 5, five, binary=False) is None
    assert detectable_effect([0.0] * 6, six, binary=False) is not None
    clustered = dict(binary=False, clusters=[0, 0, 1, 1, 2, 2, 3, 3])  # 8 questions, 4 clusters
    assert detectable_effect([0.0] * 8, [1.0, 0.0, 0.5, 0.5, 0.2, 0.8, 0.3, 0.1], **clustered) is None
    # a binary metric keeps its McNemar floor (6 / n), which says the same thing in its own units
    assert detectable_effect([0.0] * 5, [1.0, 0.0, 1.0, 0.0, 1.0], binary=True) == pytest.approx(6 / 5)


def test_binary_mde_is_never_below_the_fewest_flips_mcnemar_needs():
    # 40 identical pass/fail pairs: no spread, but the exact test needs 6 questions flipping one way,
    # so nothing below 6/40 can be seen (the metric moves in steps of 1/n).
    same = [1.0] * 30 + [0.0] * 10
    assert detectable_effect(same, same, binary=True) == 6 / 40
    assert detectable_effect(same, same, binary=True, alpha=0.01) == mcnemar_min_discordant(0.01) / 40
    noisy = [1.0] * 20 + [0.0] * 20
    z = sp.norm.ppf(0.975) + sp.norm.ppf(0.8)
    assert detectable_effect(same, noisy, binary=True) == pytest.approx(z * standard_error(same, noisy))


graded = st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 1.0]),
                            st.sampled_from([0.0, 0.1, 0.2, 0.4, 0.5, 1.0])), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(graded, st.booleans())
def test_an_mde_is_never_zero_and_does_not_depend_on_which_side_is_base(pairs, binary):
    base, new = [float(a > 0.3) if binary else a for a, _ in pairs], [float(b > 0.3) if binary else b for _, b in pairs]
    forward, backward = detectable_effect(base, new, binary=binary), detectable_effect(new, base, binary=binary)
    assert forward is None or forward > 1e-6
    assert (forward is None) == (backward is None) and (forward is None or forward == pytest.approx(backward))
    assert forward is not None or not binary


# --- the seeded randomization test against scipy ------------------------------------------------


def test_seeded_sign_flip_p_value_matches_scipy_exact_within_monte_carlo_error():
    rng = np.random.default_rng(17)
    base = rng.random(40)
    new = base + rng.normal(0.08, 0.3, 40)
    ours = paired_randomization_test(base, new, np.random.default_rng(5), n_permutations=20_000)
    reference = sp.permutation_test(
        (new - base,), np.mean, permutation_type="samples", n_resamples=200_000, alternative="two-sided",
        random_state=np.random.default_rng(1),
    ).pvalue
    # Monte-Carlo standard error of a p-value estimated from 20,000 draws: sqrt(p(1-p)/20000).
    assert abs(ours - reference) < 4 * math.sqrt(reference * (1 - reference) / 20_000) + 1e-3


# --- multiplicity ------------------------------------------------------------------------------

P_SETS = [[0.01, 0.04, 0.03, 0.2], [0.5], [0.001, 0.001, 0.9, 0.04, 0.0499, 0.3], [1.0, 0.0, 0.02], []]


@pytest.mark.parametrize("p", P_SETS)
def test_holm_matches_statsmodels(p):
    expected = multipletests(p, method="holm")[1].tolist() if p else []
    assert holm(p) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("p", P_SETS)
def test_benjamini_hochberg_matches_statsmodels(p):
    expected = multipletests(p, method="fdr_bh")[1].tolist() if p else []
    assert benjamini_hochberg(p) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=40, deadline=None)  # statsmodels' Holm takes ~0.1 s a call
@given(st.lists(st.floats(0, 1), min_size=1, max_size=25))
def test_adjustments_match_statsmodels_on_random_families(p):
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1].tolist(), abs=1e-12)
    assert benjamini_hochberg(p) == pytest.approx(multipletests(p, method="fdr_bh")[1].tolist(), abs=1e-12)


def test_holm_by_hand_and_refuses_bad_p_values():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, max(0.06, 1*0.04)
    assert holm([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])
    with pytest.raises(InputError):
        holm([1.5])
