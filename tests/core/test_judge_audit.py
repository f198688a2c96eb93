"""The audit payload of one criterion, on hand-computed cases."""

import pytest

from ragqual.core.judge_audit import audit_payload, majority


def test_majority_of_labellers():
    assert [majority(v) for v in (["yes"], ["yes", "no"], ["no", "no", "yes"], ["unsure"])] == \
        ["yes", "unsure", "no", "unsure"]


def test_kappa_confusion_disagreements_and_intervals():
    human = {1: ["yes"], 2: ["yes"], 3: ["no"], 4: ["no"], 5: ["unsure"]}
    judge = {1: [(0.9, "yes")], 2: [(0.2, "no")], 3: [(0.1, "no")], 4: [(0.3, "no")], 5: [(0.8, "yes")],
             6: [(0.7, "yes")], 7: [(None, None)], 8: [(0.6, "yes")]}
    body = audit_payload(human, judge)
    # trials 1-4: human yes,yes,no,no; judge yes,no,no,no -> accuracy 3/4, rates 1/2 and 1/4,
    # expected agreement 1/2*1/4 + 1/2*3/4 = 1/2, kappa (3/4 - 1/2) / (1/2) = 1/2
    assert body["n"] == 4 and body["accuracy"] == 0.75 and body["kappa"] == pytest.approx(0.5)
    assert (body["human_rate"], body["judge_rate"]) == (0.5, 0.25) and body["unsure"] == 1
    assert body["disagreements"] == [2]
    assert body["labels_only"]["estimate"] == 0.5 and body["judge_only"]["N"] == 7
    assert body["ppi"]["n"] == 4 and body["ppi"]["N"] == 2  # trials 6 and 8: judged, not labelled
    # AUC over the labelled yes (0.9, 0.2) against no (0.1, 0.3): 0.9 beats both, 0.2 beats 0.1 -> 3/4
    assert body["auc"] == pytest.approx(0.75)


def test_too_few_labels_gives_a_note_not_a_crash():
    body = audit_payload({1: ["yes"]}, {1: [(0.9, "yes")], 2: [(0.4, "no"), (0.6, "yes")]})
    assert "note" in body["labels_only"] and body["self_consistency"]["n"] == 1
    assert body["auc"] is None  # one class only: no ranking to measure
