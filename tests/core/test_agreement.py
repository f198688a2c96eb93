import itertools
import math
import random

import numpy as np
import pytest

from ragqual.core.agreement import (agreement, between_labellers, cohen_kappa, rank_auc, self_consistency,
                                    swap_consistency)
from ragqual.errors import InputError

# --- Cohen's kappa: hand-computed cases ---------------------------------------------------------

# 10 trials. human: 6 yes, 4 no. judge: 5 yes, 5 no.
# pairs (h, j): (1,1) x4, (1,0) x2, (0,1) x1, (0,0) x3  -> tn=3 fp=1 fn=2 tp=4
# p_o = 7/10; p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
HUMAN10 = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
JUDGE10 = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]


def test_kappa_confusion_and_rates_of_a_hand_computed_case():
    a = cohen_kappa(HUMAN10, JUDGE10)
    assert a.confusion == ((3, 1), (2, 4))
    assert a.n == 10
    assert a.accuracy == pytest.approx(0.7)
    assert a.human_rate == pytest.approx(0.6)
    assert a.judge_rate == pytest.approx(0.5)
    assert a.kappa == pytest.approx(0.4)
    assert a.kappa_reason is None
    assert a.disagreements == (4, 5, 6)


def test_perfect_agreement_is_kappa_one_and_perfect_inversion_is_minus_one():
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]).kappa == pytest.approx(1.0)
    # p_o = 0, p_e = 0.5*0.5*2 = 0.5 -> kappa = -1
    inverted = cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1])
    assert inverted.kappa == pytest.approx(-1.0)
    assert inverted.disagreements == (0, 1, 2, 3)


def test_kappa_at_chance_level_is_zero():
    # human 50 % yes, judge independent 50 % yes: every cell 1 -> p_o = 0.5 = p_e
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 1, 0]).kappa == pytest.approx(0.0)


def _hand_kappa(h, j):
    """Textbook formula from the 2x2 cell counts (no shared code with the module)."""
    n = len(h)
    a = sum(1 for x, y in zip(h, j) if x == 1 and y == 1)
    b = sum(1 for x, y in zip(h, j) if x == 1 and y == 0)
    c = sum(1 for x, y in zip(h, j) if x == 0 and y == 1)
    d = n - a - b - c
    po = (a + d) / n
    pe = ((a + b) * (a + c) + (c + d) * (b + d)) / n**2
    return (po - pe) / (1 - pe), ((d, c), (b, a))


@pytest.mark.parametrize("seed", range(20))
def test_kappa_matches_the_textbook_cell_formula_on_random_labels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    h = rng.integers(0, 2, n).tolist()
    j = [x if rng.random() < 0.7 else 1 - x for x in h]
    if len(set(h)) < 2 or len(set(j)) < 2:
        pytest.skip("degenerate draw")
    kappa, confusion = _hand_kappa(h, j)
    got = cohen_kappa(h, j)
    assert got.kappa == pytest.approx(kappa, rel=1e-12)
    assert got.confusion == confusion
    assert len(got.disagreements) == sum(x != y for x, y in zip(h, j))


# --- degenerate cases: no NaN, a reason --------------------------------------------------------

@pytest.mark.parametrize("human, judge, who", [
    ([1, 1, 1], [1, 1, 1], "human labels are 'yes'"),
    ([0, 0, 0], [0, 1, 0], "human labels are 'no'"),
    ([1, 0, 1], [1, 1, 1], "judge verdicts are 'yes'"),
])
def test_a_rater_with_one_class_gives_no_kappa_but_a_reason(human, judge, who):
    a = cohen_kappa(human, judge)
    assert a.kappa is None
    assert who in a.kappa_reason and "undefined" in a.kappa_reason
    assert a.accuracy is not None and not math.isnan(a.accuracy)


def test_no_pairs_at_all_gives_nones_not_a_crash():
    a = cohen_kappa([], [])
    assert (a.kappa, a.accuracy, a.human_rate, a.judge_rate, a.n) == (None, None, None, None, 0)
    assert a.kappa_reason


def test_non_binary_verdicts_and_length_mismatch_are_refused():
    with pytest.raises(InputError, match="0 \\(no\\) or 1"):
        cohen_kappa([1, 2], [1, 0])
    with pytest.raises(InputError, match="3 human labels but 2"):
        cohen_kappa([1, 0, 1], [1, 0])


# --- verdict words: unsure and judge errors ----------------------------------------------------

def test_unsure_labels_and_judge_errors_are_excluded_counted_and_positions_kept():
    human = ["yes", "unsure", "no", "yes", "no", "unsure", "yes"]
    judge = ["yes", "no", None, "no", "no", None, "yes"]
    a = agreement(human, judge)
    assert a.unsure == 2  # positions 1 and 5 (5 also has a judge error: counted once, as unsure)
    assert a.judge_missing == 1  # position 2
    assert a.n == 4
    assert a.confusion == ((1, 0), (1, 2))
    assert a.disagreements == (3,)  # index into the lists as given
    # p_o = 3/4; human 3/4 yes, judge 2/4 yes; p_e = 0.75*0.5 + 0.25*0.5 = 0.5 -> kappa 0.5
    assert a.kappa == pytest.approx(0.5)


def test_unknown_verdict_words_are_refused():
    with pytest.raises(InputError, match="'maybe'"):
        agreement(["maybe"], ["yes"])
    with pytest.raises(InputError, match="'unsure'"):
        agreement(["yes"], ["unsure"])


# --- self-consistency --------------------------------------------------------------------------

def test_self_consistency_unanimity_and_mean_pairwise_by_hand():
    samples = [
        [1, 1, 1],     # unanimous, 3/3 pairs agree
        [1, 0, 1],     # 1 of 3 pairs agree
        [0, 0, None],  # unanimous over its 2 usable samples, 1/1
        [1, None],     # one usable sample: excluded
    ]
    c = self_consistency(samples)
    assert c.n == 3 and c.excluded == 1
    assert c.share == pytest.approx(2 / 3)
    assert c.mean_pairwise == pytest.approx((1 + 1 / 3 + 1) / 3)


def test_self_consistency_pairwise_matches_brute_force_on_random_samples():
    rng = np.random.default_rng(3)
    samples = rng.integers(0, 2, (50, 5)).tolist()
    expected = np.mean([np.mean([a == b for a, b in itertools.combinations(s, 2)]) for s in samples])
    assert self_consistency(samples).mean_pairwise == pytest.approx(expected)


def test_self_consistency_without_usable_items_is_none():
    c = self_consistency([[1], [None, None]])
    assert (c.share, c.n, c.excluded, c.mean_pairwise) == (None, 0, 2, None)


# --- swap (position) consistency --------------------------------------------------------------

def test_swap_consistency_and_position_bias_by_hand():
    forward = ["a", "a", "b", "tie", None]
    backward = ["a", "b", "b", "tie", "a"]
    c = swap_consistency(forward, backward)
    assert c.n == 4 and c.excluded == 1
    assert c.share == pytest.approx(3 / 4)
    # decisive verdicts: forward a, a, b; backward a, b, b -> 6. First position: forward "a"
    # (x2) and backward "b" (x2) -> 4 of 6.
    assert c.first_position_rate == pytest.approx(4 / 6)


def test_a_judge_that_always_picks_the_first_answer_is_never_swap_consistent():
    c = swap_consistency(["a"] * 5, ["b"] * 5)
    assert c.share == 0.0
    assert c.first_position_rate == 1.0


def test_swap_consistency_refuses_bad_input():
    with pytest.raises(InputError, match="a, b or tie"):
        swap_consistency(["first"], ["a"])
    with pytest.raises(InputError, match="2 verdicts in one order but 1"):
        swap_consistency(["a", "b"], ["a"])


def test_as_dict_is_json_ready():
    import json

    payload = cohen_kappa(HUMAN10, JUDGE10).as_dict()
    assert json.loads(json.dumps(payload)) == {
        "kappa": pytest.approx(0.4), "kappa_reason": None, "n": 10, "accuracy": pytest.approx(0.7),
        "human_rate": pytest.approx(0.6), "judge_rate": pytest.approx(0.5), "confusion": [[3, 1], [2, 4]],
        "disagreements": [4, 5, 6], "unsure": 0, "judge_missing": 0}


def test_rank_auc_of_a_hand_counted_case():
    # yes 0.9, 0.6, 0.4 against no 0.6, 0.3: 0.9 beats both (2), 0.6 ties one and beats one (1.5), 0.4 beats one (1)
    assert rank_auc([1, 1, 1, 0, 0], [0.9, 0.6, 0.4, 0.6, 0.3]) == pytest.approx(4.5 / 6)


def test_rank_auc_is_one_for_a_perfect_ranking_zero_for_an_inverted_one_and_a_half_for_all_ties():
    assert rank_auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0
    assert rank_auc([1, 1, 0, 0], [0.1, 0.2, 0.3, 0.4]) == 0.0
    assert rank_auc([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.5]) == 0.5


@pytest.mark.parametrize("seed", range(20))
def test_rank_auc_is_the_mann_whitney_u_over_the_pairs(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(seed)
    n = rng.randint(2, 60)
    human = [rng.randint(0, 1) for _ in range(n)]
    human[0], human[1] = 0, 1
    scores = [round(rng.random(), 1) for _ in range(n)]  # rounded, so ties occur
    yes = [s for h, s in zip(human, scores) if h]
    no = [s for h, s in zip(human, scores) if not h]
    u = stats.mannwhitneyu(yes, no, alternative="two-sided").statistic
    assert rank_auc(human, scores) == pytest.approx(u / (len(yes) * len(no)), abs=1e-12)


def test_rank_auc_without_both_classes_is_none_and_bad_input_is_refused():
    assert rank_auc([1, 1], [0.2, 0.9]) is None
    assert rank_auc([], []) is None
    with pytest.raises(InputError):
        rank_auc([1, 2], [0.1, 0.2])
    with pytest.raises(InputError):
        rank_auc([1, 0], [0.1])


# --- two labellers ------------------------------------------------------------------------------


def test_two_labellers_on_their_shared_trials_by_hand():
    # shared trials 1-12; 11 and 12 unsure by one of them; 13 only a's, 20 only b's.
    # on 1-10 the pairs are HUMAN10 x JUDGE10 (kappa 0.4, disagreeing on the 5th, 6th, 7th).
    a = {t: "yes" if h else "no" for t, h in zip(range(1, 11), HUMAN10)} | {11: "unsure", 12: "yes", 13: "no"}
    b = {t: "yes" if j else "no" for t, j in zip(range(1, 11), JUDGE10)} | {11: "no", 12: "unsure", 20: "yes"}
    found = between_labellers("ann", "bob", a, b)
    assert (found.first, found.second) == ("ann", "bob")
    assert found.agreement.n == 10 and found.agreement.kappa == pytest.approx(0.4)
    assert found.agreement.confusion == ((3, 1), (2, 4))
    assert found.disagreements == (5, 6, 7) and found.unsure == (11, 12) and found.agreement.unsure == 2
    swapped = between_labellers("bob", "ann", b, a)
    assert swapped.agreement.kappa == pytest.approx(0.4) and swapped.agreement.confusion == ((3, 2), (1, 4))
    assert found.as_dict()["disagreements"] == [5, 6, 7] and found.as_dict()["first"] == "ann"


def test_two_labellers_with_nothing_in_common_or_a_bad_word():
    none = between_labellers("ann", "bob", {1: "yes"}, {2: "no"})
    assert none.agreement.n == 0 and none.agreement.kappa is None and none.disagreements == ()
    assert none.agreement.kappa_reason == "no trial carries both ann's labels and bob's labels (yes or no)"
    one_class = between_labellers("ann", "bob", {1: "yes", 2: "yes"}, {1: "yes", 2: "no"})
    assert one_class.agreement.kappa is None and one_class.agreement.kappa_reason.startswith("all ann's labels are 'yes'")
    with pytest.raises(InputError):
        between_labellers("ann", "bob", {1: "maybe"}, {1: "yes"})
